//! Typed kernel launchers for [cuda-driver](https://docs.rs/cuda-driver), generated from PTX,
//! and a `build.rs` helper that compiles `.cu` files with nvcc (like `cc` does for C).
//!
//! A kernel launch whose argument list is written by hand can pass a wrong type, forget an
//! argument, or hand a read-only view to a kernel that writes. nvcc mangles a C++ kernel's
//! name with its parameter types (`_Z6VecAddPKfS0_Pfi` is
//! `VecAdd(const float*, const float*, float*, int)`), so the PTX alone tells the signature.
//! This crate reads it and generates, for every `.entry`, a handle whose `launch` takes the
//! parameters as Rust types, in order: those mistakes become compile errors.
//!
//! # From a `.cu` file to a typed launch
//!
//! `Cargo.toml` (the crates are not on crates.io yet: they come through git, see the
//! [repository's README](https://github.com/cuda-driver-rs/cuda-driver#install)):
//! ```toml
//! [dependencies]
//! cuda-driver = { git = "https://github.com/cuda-driver-rs/cuda-driver" }
//!
//! [build-dependencies]
//! cuda-driver-build = { git = "https://github.com/cuda-driver-rs/cuda-driver" }
//! ```
//!
//! `build.rs` (`kernels/saxpy.cu` holds
//! `__global__ void saxpy(float a, const float* x, float* y, int n)`):
//! ```no_run
//! // fn main() {
//! cuda_driver_build::Build::new()
//!     .file("kernels/saxpy.cu")
//!     .oldest_driver(13, 0) // PTX of the CUDA 13.0 toolkit: drivers from CUDA 13.0 on
//!     .committed_ptx("kernels") // optional: kernels/saxpy.ptx when nvcc is missing
//!     .compile();
//! // }
//! ```
//!
//! `src/main.rs`:
//! ```ignore
//! use std::process::ExitCode;
//!
//! use cuda_driver::{prelude::*, Device, DeviceBuffer, LaunchConfig, Stream, types::StreamFlags};
//!
//! mod saxpy {
//!     include!(concat!(env!("OUT_DIR"), "/saxpy.rs"));
//! }
//!
//! fn main() -> ExitCode {
//!     match run() {
//!         Ok(()) => ExitCode::SUCCESS,
//!         Err(e) => {
//!             // One sentence: "no CUDA driver found: ..." without a driver.
//!             eprintln!("error: {e}");
//!             ExitCode::FAILURE
//!         }
//!     }
//! }
//!
//! fn run() -> Result<(), cuda_driver::Error> {
//!     let ctx = Device::get(0)?.primary_context()?;
//!     let k = saxpy::Kernels::load(&ctx)?; // the embedded PTX, every kernel looked up
//!     let x = DeviceBuffer::from_slice(&ctx, &[1.0f32; 1024])?;
//!     let mut y = DeviceBuffer::from_slice(&ctx, &[2.0f32; 1024])?;
//!     let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;
//!     let cfg = LaunchConfig::for_num_elems(1024)?;
//!     // saxpy(float, const float*, float*, int): (f32, DeviceSlice<f32>, DeviceSliceMut<f32>, i32)
//!     // SAFETY: x and y hold 1024 floats, the kernel skips i >= n; y is read after the sync.
//!     unsafe { k.saxpy.launch(&stream, &cfg, 2.0, x.as_view(), y.as_view_mut(), 1024)? };
//!     stream.synchronize()?;
//!     Ok(())
//! }
//! ```
//!
//! The repository's README has this program whole, with its kernel; CI builds it from the
//! packaged crates with warnings denied and runs it.
//!
//! # nvcc, and the drivers the PTX loads on
//!
//! [`Build`] runs the nvcc that `NVCC` names, else `bin/nvcc` of the toolkit at `CUDA_PATH`
//! (then `CUDA_HOME`), else the first on `PATH`; a toolkit named by one of those variables is
//! never passed over for another. The PTX nvcc writes is of its own CUDA release's PTX ISA, which
//! only drivers of that release or newer load ([`isa`]). [`Build::oldest_driver`] says which
//! driver the PTX must load on, CUDA 12.0 by default (the oldest cuda-driver supports); newer
//! PTX fails the build with one sentence naming the toolkit that wrote it and the pinned toolkit
//! to install (CUDA 12.0.1 for 12.x drivers; for 13.x, the CUDA 13.0 wheels of
//! [`isa::PINNED_CUDA_13_WHEELS`], with `CUDA_PATH` set to their `nvidia/cu13` folder). Errors
//! reach cargo once, through `cargo::error=`, without a panic.
//!
//! # The types
//!
//! | C++ parameter | Rust argument |
//! |---------------|---------------|
//! | `const T*` | `DeviceSlice<'_, T>`: a shared view (`buf.as_view()`) |
//! | `T*` | `DeviceSliceMut<'_, T>`: a mutable view (`buf.as_view_mut()`, `view.reborrow()`) |
//! | `int`, `unsigned`, `long long`, `unsigned long long`, `short`, `char`, ... | `i32`, `u32`, `i64`, `u64`, `i16`, `i8`, ... |
//! | `size_t` (`unsigned long`), `long` | `usize`, `i64` |
//! | `float`, `double`, `__half`, `__nv_bfloat16` | `f32`, `f64`, `half::f16`, `half::bf16` |
//! | `float2`, `float4`, `int4`, `double2`, ... | `cuda_driver::vector::Float2`, `Float4`, `Int4`, `Double2`, ... |
//! | a struct by value | a generic `T: DeviceRepr`, its size and alignment checked against the PTX (at compile time when the launch is instantiated, and by the checked launch) |
//! | `S*` for a struct `S` | a view of a generic `T: DeviceRepr` |
//! | `void*` | any pointer-sized argument: a view, or `&u64` |
//!
//! A template instantiation gets a handle of its own, named from its arguments
//! (`scale<float>` is `ScaleF32`, `sum<int, 256>` is `SumI32_256`); other names are
//! converted to Rust type names (`fill_u32` is `FillU32`, `VecAdd` stays). Each handle is
//! also a field of the generated `Kernels`, in snake case (`scale_f32`).
//!
//! `extern "C"` kernels carry no types in their names: their PTX types are used (`.u32` is
//! `u32`, `.s32` `i32`, `.f32` `f32`, a `.b8` array with `.align` a generic `DeviceRepr`),
//! and a `.u64` is an untyped pointer-sized argument (nvcc writes `int` as `.u32` and every
//! pointer as `.u64`). Give their C++ parameter list with [`Build::signature`] for views and
//! exact scalar types: `signature("VecAdd", "const float* A, const float* B, float* C, int N")`
//! (checked against the PTX parameter list, and its names become the arguments' names).
//!
//! Overloads (two kernels of one C++ name), two kernels that would get the same Rust name,
//! and parameter types with no Rust counterpart (`bool`, `float**`, references) are
//! generator errors naming the kernel; [`Build::rename`] resolves the first two.
//!
//! # What stays `unsafe`
//!
//! The generated `launch` is an `unsafe fn` over cuda-driver's checked `Function::launch`:
//! * the compiler checks each argument's type, the launch checks the argument count and
//!   sizes against the kernel the driver loaded (a stale PTX or a mismatched build is an
//!   `Error`, not undefined behaviour), and the stream order of the views;
//! * the caller still promises what no type says: that the kernel stays in bounds of the
//!   views for the launch configuration, that memory it writes is not used by the host or
//!   other work before it finishes, and, for a generic struct argument, that the Rust struct
//!   has the C++ struct's fields (only size and alignment are checked).
//!
//! The wrong cases are rejected at compile time; the examples crate of the repository has
//! `compile_fail` tests for a wrong scalar type, a missing argument and a shared view where
//! the kernel writes.
//!
//! # Without a build script
//!
//! [`Generator`] works on any PTX string (one from `cargo xtask build-kernels`, or the
//! driver's): [`Generator::generate`] returns the Rust source, [`Generator::kernels`] the
//! typed model.
#![deny(missing_docs)]

mod build;
mod error;
mod generate;
pub mod isa;
pub mod nvcc;
pub mod ptx;
pub mod types;

pub use build::Build;
pub use error::Error;
pub use generate::{Generator, TypedKernel, TypedParam, MAX_PARAMS};
