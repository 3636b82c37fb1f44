//! Runtime compilation for [`cuda-driver`](cuda_driver): CUDA C++ compiled by NVRTC to PTX,
//! CUBIN or LTO-IR, linked by nvJitLink, loaded with `cuda-driver`'s
//! [`Module::load_data`](cuda_driver::Module::load_data) and
//! [`Library::load_data`](cuda_driver::Library::load_data), and launched with its checked
//! launches.
//!
//! * **No build-time toolkit**: NVRTC and nvJitLink are opened at run time, from a CUDA
//!   toolkit, the pip wheels `nvidia-cuda-nvrtc` and `nvidia-nvjitlink`, or the system's
//!   loader; when neither is found, the error lists every place searched ([`Nvrtc::load`]).
//!   The raw functions are in [`sys`].
//! * **[`Program`]**: source with headers in memory, typed [`Options`] (architecture, C++
//!   dialect, defines, include paths, fast math, relocatable code, LTO, line info, raw
//!   options), name expressions and their lowered names (templated kernels), the log of every
//!   compilation, outputs as [`Ptx`], [`Cubin`] or [`LtoIr`] ([`Compiled`]).
//! * **Code the driver loads**: [`Program::compile_for`] compiles for a device and its driver:
//!   PTX where the driver can JIT-compile it, a CUBIN for the device where the compiler is
//!   newer than the driver, one sentence naming both versions where nothing would load
//!   ([`Target`]).
//! * **[`Linker`]**: LTO-IR, PTX, CUBINs and fatbins into one CUBIN, with error and info logs.
//! * **[`Cache`]**: an optional on-disk cache of compiled programs, off by default.
//! * **[`typed_kernel!`]**: typed launchers for kernels whose signature is known at build
//!   time, checked against the compiled kernel at load.
//!
//! ```no_run
//! use cuda_driver::{prelude::*, Device, DeviceBuffer, LaunchConfig, Stream, types::StreamFlags};
//! use cuda_driver_rtc::{Options, Program};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let device = Device::get(0)?;
//! let ctx = device.primary_context()?;
//! let mut program = Program::new(
//!     "scale.cu",
//!     r#"template <typename T>
//!        __global__ void scale(T* x, T factor, int n) {
//!            int i = blockIdx.x * blockDim.x + threadIdx.x;
//!            if (i < n) x[i] *= factor;
//!        }"#,
//! )?;
//! program.add_name_expression("scale<float>")?;
//! // PTX or a CUBIN, whichever this device's driver loads.
//! let compiled = program.compile_for(&device, &Options::new())?;
//! let module = compiled.load(&ctx)?;
//! let scale = module.function(compiled.lowered_name("scale<float>")?)?;
//!
//! let mut x = DeviceBuffer::from_slice(&ctx, &[1.0f32; 1000])?;
//! let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;
//! let cfg = LaunchConfig::for_num_elems(1000)?;
//! let n = 1000i32;
//! // SAFETY: scale<float> takes (float*, float, int) and writes x[..n].
//! unsafe { scale.launch(&stream, &cfg, (&mut x.as_view_mut(), &3.0f32, &n))? };
//! stream.synchronize()?;
//! assert!(x.to_vec()?.iter().all(|&v| v == 3.0));
//! # Ok(())
//! # }
//! ```
//!
//! NVRTC needs no GPU: compiling, linking and the cache work on any machine with the
//! libraries; loading and launching need the driver and a device.
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub use cuda_driver;

pub mod sys;

pub mod arch;
pub mod cache;
mod cstring;
pub mod error;
pub mod library;
pub mod linker;
pub mod options;
pub mod output;
pub mod program;
mod report;
pub mod target;
mod typed;
pub mod version;

pub use arch::Arch;
pub use cache::Cache;
pub use error::{Error, LoadError, NvJitLinkResult, NvrtcResult, Result};
pub use library::{NvJitLink, Nvrtc};
pub use linker::{LinkOptions, Linker};
pub use options::{CppStd, Options};
pub use output::{Compiled, Cubin, LtoIr, Ptx};
pub use program::{compile_ptx, CancelHandle, Program};
pub use report::drop_error_count;
pub use target::Target;
pub use version::Version;

/// What [`typed_kernel!`] expands to refers to, under paths a user's crate cannot shadow.
#[doc(hidden)]
pub mod __private {
    pub use crate::typed::check_signature;
    pub use cuda_driver::{
        launch::KernelArg, Function, LaunchConfig, Module, Result as DriverResult, Stream,
    };
}
