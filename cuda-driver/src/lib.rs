//! Safe, zero-overhead bindings to the CUDA Driver API.
//!
//! `cuda-driver` is the idiomatic layer over [`cuda_driver_sys`] (cuda.h in Rust): devices,
//! contexts and the per-thread context stack, streams and events, device, page-locked and
//! managed memory, modules, the JIT linker, context-independent libraries and kernels, and
//! checked kernel launches. Every wrapper names the driver call it wraps and gives access to
//! the raw handle ([`as_raw`](crate::handle::Handle::as_raw)), so a program can drop down to
//! `cuda_driver_sys` at any point.
//!
//! * **Errors** carry the failing driver call and the caller's location
//!   (`cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory) at src/main.rs:12:5`);
//!   distinct failures are distinct [`Error`] variants, and [`Error::is_sticky`] tells the
//!   errors after which a context is lost for good.
//! * **One memory model**: every kind of memory is an owner that hands out typed views
//!   ([`DeviceSlice`], [`DeviceSliceMut`]); copies, memsets and kernel arguments are
//!   implemented once, on the views, and every owner gets them through [`DeviceMemory`] and
//!   [`DeviceMemoryMut`] (import [`prelude`]). Memory freed in stream order
//!   ([`AsyncDeviceBuffer`](crate::memory::pool::AsyncDeviceBuffer)) is used on its own stream only, which safe code cannot break.
//! * **Contexts**: no operation changes the caller's context stack. Each object makes its
//!   context current for the span of one operation when it is not (pushing and popping it);
//!   when it is, the whole cost is one `cuCtxGetCurrent`. Launches and stream-ordered
//!   allocations and frees on a created stream cost not even that: the driver takes their
//!   context from the stream.
//! * **Ownership**: every handle is released in `Drop`, which never panics (failures go to
//!   the [`log`](https://docs.rs/log) crate and [`drop_error_count`](crate::error::drop_error_count)); objects keep their
//!   context alive, work from any thread, and are never released inside a host function.
//!   Owned and borrowed handles are different types, never a flag ([`Stream`] /
//!   [`StreamRef`](crate::stream::StreamRef), [`Context`] / [`ContextRef`](crate::context::ContextRef),
//!   [`Function`] / [`FunctionRef`](crate::module::FunctionRef),
//!   [`MemPool`](crate::memory::pool::MemPool) / [`MemPoolRef`](crate::memory::pool::MemPoolRef)).
//!   The raw API is defined once, in [`handle`]: every handle has
//!   [`as_raw`](crate::handle::Handle::as_raw); every owner
//!   [`from_raw(raw, parent)`](crate::handle::OwnedHandle::from_raw), which takes ownership, and
//!   [`into_raw`](crate::handle::OwnedHandle::into_raw), which gives it up; a borrowed form is
//!   made with its own `unsafe fn borrow_raw(raw, ..)`.
//! * **Speed**: the launch and copy paths allocate nothing; launches check arguments against
//!   the kernel's parameter list read once from the driver.
//!
//! # Your first program
//!
//! Multiplies 1000 floats by 3 on the GPU and checks them. The kernel is PTX, which the
//! driver compiles for the GPU at hand; without a GPU the program says so in one line
//! (`error: no CUDA driver found: ...`) and exits with status 1.
//!
//! ```no_run
//! use std::process::ExitCode;
//!
//! use cuda_driver::prelude::*;
//! use cuda_driver::types::StreamFlags;
//!
//! /// `scale(float* data, float factor, int n)`, `data[i] *= factor` for every `i < n`: what
//! /// `nvcc --ptx` makes of a three-line CUDA C kernel (its comment lines left out).
//! const SCALE_PTX: &str = "
//! .version 7.0
//! .target sm_75
//! .address_size 64
//!
//! .visible .entry scale(
//!     .param .u64 scale_param_0,
//!     .param .f32 scale_param_1,
//!     .param .u32 scale_param_2
//! )
//! {
//!     .reg .pred %p<2>;
//!     .reg .f32 %f<4>;
//!     .reg .b32 %r<6>;
//!     .reg .b64 %rd<5>;
//!
//!     ld.param.u64 %rd1, [scale_param_0];
//!     ld.param.f32 %f1, [scale_param_1];
//!     ld.param.u32 %r2, [scale_param_2];
//!     mov.u32 %r3, %ctaid.x;
//!     mov.u32 %r4, %ntid.x;
//!     mov.u32 %r5, %tid.x;
//!     mad.lo.s32 %r1, %r3, %r4, %r5;
//!     setp.ge.s32 %p1, %r1, %r2;
//!     @%p1 bra DONE;
//!     cvta.to.global.u64 %rd2, %rd1;
//!     mul.wide.s32 %rd3, %r1, 4;
//!     add.s64 %rd4, %rd2, %rd3;
//!     ld.global.f32 %f2, [%rd4];
//!     mul.f32 %f3, %f2, %f1;
//!     st.global.f32 [%rd4], %f3;
//! DONE:
//!     ret;
//! }
//! ";
//!
//! fn main() -> ExitCode {
//!     match run() {
//!         Ok(()) => ExitCode::SUCCESS,
//!         Err(e) => {
//!             eprintln!("error: {e}");
//!             ExitCode::FAILURE
//!         }
//!     }
//! }
//!
//! fn run() -> Result<(), cuda_driver::Error> {
//!     // Device 0 and its primary context (the one the CUDA runtime uses, too).
//!     let device = Device::get(0)?;
//!     let ctx = device.primary_context()?;
//!
//!     // The driver compiles the PTX for this GPU; `scale` is the kernel's entry name.
//!     let module = Module::load_data(&ctx, SCALE_PTX)?;
//!     let scale = module.function("scale")?;
//!
//!     // 1000 floats copied to device memory.
//!     let host: Vec<f32> = (0..1000).map(|i| i as f32).collect();
//!     let mut data = DeviceBuffer::from_slice(&ctx, &host)?;
//!
//!     // One thread per element, on a stream of our own.
//!     let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;
//!     let cfg = LaunchConfig::for_num_elems(host.len())?;
//!     let n = host.len() as i32;
//!     // SAFETY: `scale` takes (float*, float, int), which the arguments are (the launch checks
//!     // their number and sizes against the kernel's parameters), and it writes only data[..n].
//!     unsafe { scale.launch(&stream, &cfg, (&mut data.as_view_mut(), &3.0f32, &n))? };
//!     stream.synchronize()?;
//!
//!     // Back to the host, every element checked.
//!     let result = data.to_vec()?;
//!     assert!(result.iter().zip(&host).all(|(r, h)| *r == 3.0 * h));
//!     println!("scaled {} floats on {}", result.len(), device.name()?);
//!     Ok(())
//! }
//! ```
//!
//! # A tour, in the order a program meets the areas
//!
//! Each area is a module named after its group of the
//! [CUDA Driver API reference](https://docs.nvidia.com/cuda/cuda-driver-api/modules.html); the
//! root re-exports the core types above, and [`prelude`] brings them and the traits into scope.
//! Every wrapper carries its C name as a `#[doc(alias)]`: search the docs for `cuMemAlloc`.
//!
//! 1. [`device`]: the GPUs, their attributes and names; [`init`] and [`driver_version`].
//! 2. [`context`]: primary and created contexts, the per-thread current context (which no call
//!    of this crate changes behind your back), limits and cache configuration.
//! 3. [`module`] and [`library`]: code from PTX, cubins and fatbins, per context or
//!    context-independent, their [`Function`]s, [`Kernel`]s and globals; the JIT's options are
//!    in [`jit`], and the JIT linker is [`module::Linker`].
//! 4. [`memory`]: one model for every kind of memory. Owners ([`DeviceBuffer`],
//!    [`PinnedBuffer`], managed, pitched, arrays) hand out views ([`DeviceSlice`],
//!    [`DeviceSliceMut`]) on which copies, memsets and kernel arguments are written once; the
//!    stream-ordered allocator is [`memory::pool`], virtual memory management
//!    [`memory::vmm`], unified addressing [`memory::unified`].
//! 5. [`launch`]: [`LaunchConfig`], checked and typed launches, launch attributes, cooperative
//!    and clustered launches, occupancy, and the parameter buffer for launches built at run
//!    time.
//! 6. [`stream`] and [`event`]: ordering work, host functions, stream attributes, waiting and
//!    timing; [`stream_memop`] has the stream memory operations (wait on and write values).
//! 7. [`graph`]: graphs built node by node or captured from a stream, executable graphs and
//!    their updates, memory nodes, conditional nodes and user objects.
//!    [`future`]: async Rust on any executor: awaiting a stream, an event or a graph launch
//!    (woken by the driver, no polling thread), and owned-buffer copies and launches that stay
//!    sound when a future is dropped or leaked.
//! 8. [`texture`], [`surface`] and [`tensor_map`]: texture and surface objects over arrays and
//!    linear memory, and tensor maps for the Hopper tensor-memory accelerator.
//! 9. [`peer`]: access between GPUs; [`interop`]: external memory and semaphores (Vulkan,
//!    D3D12, NvSci); [`external`]: the hooks companion crates (NCCL) use.
//! 10. [`green`]: green contexts over a share of a GPU's SMs.
//! 11. Tools: [`coredump`], [`checkpoint`] (process checkpoints), [`logs`] (the driver's error
//!     log), [`profiler`], and [`entry_point`] for functions newer than the linked library.
//! 12. Values: [`handle`] (the raw API every handle shares), [`error`] ([`Error`], the codes,
//!     which errors are sticky), [`types`] (every enum
//!     and flag set of cuda.h as a newtype, with one path each), and [`vector`] (CUDA's vector
//!     types: `float4` is [`vector::Float4`]).
//!
//! The rules that make all of this safe (views, stream order, releases that wait for the
//! device, panics that never cross into the driver) are written down once, in the project's
//! `docs/SOUNDNESS.md`.
//!
//! Driver support: any driver from CUDA 12.0 on. Functions newer than 12.0 are resolved at run
//! time (see [`entry_point`]) and return [`Error::Unsupported`] on an older driver.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

/// The `bytemuck` crate, whose [`Pod`](bytemuck::Pod) types are device memory and kernel
/// arguments as [`Pod<T>`](crate::Pod).
#[cfg(feature = "bytemuck")]
#[cfg_attr(docsrs, doc(cfg(feature = "bytemuck")))]
pub use bytemuck;
pub use cuda_driver_sys as sys;
/// The `half` crate, whose [`f16`](half::f16) and [`bf16`](half::bf16) are [`DeviceRepr`].
pub use half;

// `#[derive(DeviceRepr)]` names the crate `::cuda_driver`, also inside it.
extern crate self as cuda_driver;

mod callback;
pub mod checkpoint;
pub mod context;
pub mod coredump;
mod count;
mod cstr;
pub mod device;

pub mod entry_point;
pub mod error;
pub mod event;
pub mod external;
pub mod future;
pub mod graph;
pub mod green;
pub mod handle;
mod image;
mod init;
pub mod interop;
pub mod jit;
pub mod launch;
pub mod library;
pub mod logs;
pub mod memory;
pub mod module;
mod params;
pub mod peer;
#[cfg(feature = "bytemuck")]
mod pod;
pub mod profiler;
mod release;
mod repr;
pub mod stream;
pub mod stream_memop;
pub mod surface;
pub mod tensor_map;
pub mod texture;
#[rustfmt::skip]
pub mod types;
#[cfg(test)]
mod types_tests;
pub mod vector;

// The core types a first program needs; everything else is found in its area's module.
pub use context::Context;
pub use cuda_driver_macros::DeviceRepr;
pub use device::Device;
pub use error::{Error, Result};
pub use event::Event;
/// The entry points of the fuzz targets in `fuzz/`: not part of the API.
#[cfg(feature = "__fuzz")]
#[doc(hidden)]
pub use image::fuzz as __fuzz;
pub use init::{driver_version, init};
pub use launch::{Dim3, LaunchConfig};
pub use library::{Kernel, Library};
pub use memory::{
    DeviceBuffer, DeviceMemory, DeviceMemoryMut, DeviceSlice, DeviceSliceMut, PinnedBuffer,
};
pub use module::{Function, Module};
#[cfg(feature = "bytemuck")]
#[cfg_attr(docsrs, doc(cfg(feature = "bytemuck")))]
pub use pod::Pod;
pub use repr::DeviceRepr;
pub use stream::Stream;

/// What most programs need in scope: the memory traits ([`DeviceMemory`] and
/// [`DeviceMemoryMut`], whose methods (copies, memsets, slicing) every memory owner has), the
/// kernel-argument traits, the handle traits ([`Handle`](crate::handle::Handle)'s `as_raw`,
/// [`OwnedHandle`](crate::handle::OwnedHandle)'s `from_raw` and `into_raw`), and the core
/// types.
///
/// ```
/// use cuda_driver::prelude::*;
/// ```
pub mod prelude {
    pub use crate::context::Context;
    pub use crate::device::Device;
    pub use crate::error::{Error, Result};
    pub use crate::event::Event;
    pub use crate::handle::{Handle, OwnedHandle};
    pub use crate::launch::{Dim3, KernelArg, KernelArgs, LaunchConfig};
    pub use crate::library::{Kernel, Library};
    pub use crate::memory::{
        DeviceBuffer, DeviceMemory, DeviceMemoryMut, DeviceSlice, DeviceSliceMut, MemsetValue,
        PinnedBuffer,
    };
    pub use crate::module::{Function, Module};
    pub use crate::repr::DeviceRepr;
    pub use crate::stream::Stream;
    pub use cuda_driver_macros::DeviceRepr;
}
