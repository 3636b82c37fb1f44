//! Safe, zero-overhead bindings to the CUDA Driver API.
//!
//! `cuda-driver` is the idiomatic layer over [`cuda_driver_sys`] (cuda.h in Rust): devices,
//! contexts and the per-thread context stack, streams and events, device, page-locked and
//! managed memory, modules, the JIT linker, context-independent libraries and kernels, and
//! checked kernel launches. Every wrapper names the driver call it wraps and gives access to
//! the raw handle (`as_raw`), so a program can drop down to `cuda_driver_sys` at any point.
//!
//! * **Errors** carry the failing driver call and the caller's location
//!   (`cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory) at src/main.rs:12:5`);
//!   distinct failures are distinct [`Error`] variants, and [`Error::is_sticky`] tells the
//!   errors after which a context is lost for good.
//! * **One memory model**: every kind of memory is an owner that hands out typed views
//!   ([`DeviceSlice`], [`DeviceSliceMut`]); copies, memsets and kernel arguments are
//!   implemented once, on the views, and every owner gets them through [`DeviceMemory`] and
//!   [`DeviceMemoryMut`] (import [`prelude`]). Memory freed in stream order
//!   ([`AsyncDeviceBuffer`]) is used on its own stream only, which safe code cannot break.
//! * **Contexts**: no operation changes the caller's context stack. Each object makes its
//!   context current for the span of one operation when it is not (pushing and popping it);
//!   when it is, the whole cost is one `cuCtxGetCurrent`.
//! * **Ownership**: every handle is released in `Drop`, which never panics (failures go to
//!   the [`log`](https://docs.rs/log) crate and [`drop_error_count`]); objects keep their
//!   context alive, work from any thread, and are never released inside a host function.
//!   Owned and borrowed handles are different types ([`Stream`] / [`StreamRef`],
//!   [`MemPool`] / [`MemPoolRef`]); every handle has `as_raw`, `from_raw(raw, ..)` and
//!   `into_raw`.
//! * **Speed**: the launch and copy paths allocate nothing; launches check arguments against
//!   the kernel's parameter list read once from the driver.
//!
//! ```no_run
//! use cuda_driver::prelude::*;
//! use cuda_driver::{Device, DeviceBuffer};
//!
//! let dev = Device::get(0)?;
//! let ctx = dev.primary_context()?;
//! let buf = DeviceBuffer::from_slice(&ctx, &[1.0f32, 2.0, 3.0])?;
//! let mut back = [0.0f32; 3];
//! buf.copy_to_host(&mut back)?;
//! assert_eq!(back, [1.0, 2.0, 3.0]);
//! # Ok::<(), cuda_driver::Error>(())
//! ```
//!
//! Driver support: any driver from CUDA 12.0 on. Functions newer than 12.0 are resolved at run
//! time (see [`entry_point`]) and return [`Error::Unsupported`] on an older driver.
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub use cuda_driver_sys as sys;

// `#[derive(DeviceRepr)]` names the crate `::cuda_driver`, also inside it.
extern crate self as cuda_driver;

mod context;
mod device;
pub mod entry_point;
mod error;
mod event;
mod launch;
mod library;
mod linker;
mod memory;
mod module;
mod release;
mod repr;
mod stream;
mod surface;
mod tensor_map;
mod texture;
#[rustfmt::skip]
pub mod types;
#[cfg(test)]
mod types_tests;
mod vector;

pub use context::{CacheConfig, Context, ContextFlags, ContextGuard, Limit, SharedMemConfig};
pub use cuda_driver_macros::DeviceRepr;
pub use device::{Device, DeviceAttribute};
pub use entry_point::{ProcAddressFlags, ProcAddressStatus};
pub use error::{drop_error_count, Error, ErrorCode, Result};
pub use event::{Event, EventFlags};
pub use launch::*;
pub use library::*;
pub use linker::*;
pub use memory::*;
pub use module::*;
pub use repr::DeviceRepr;
pub use stream::{host_fn_panic_count, Stream, StreamFlags, StreamRef};
pub use surface::SurfaceObject;
pub use tensor_map::*;
pub use texture::{
    AddressMode, FilterMode, ResourceDesc, ResourceViewDesc, ResourceViewFormat, Resourcetype,
    TextureDesc, TextureFlags, TextureObject,
};

/// The traits most programs need in scope: the memory model's [`DeviceMemory`] and
/// [`DeviceMemoryMut`], whose methods (copies, memsets, slicing) every memory owner has.
///
/// ```
/// use cuda_driver::prelude::*;
/// ```
pub mod prelude {
    pub use crate::{DeviceMemory, DeviceMemoryMut};
}
pub use vector::*;

use std::sync::OnceLock;

use cuda_driver_macros::wraps;

static INIT: OnceLock<sys::CUresult> = OnceLock::new();

/// Initialises the driver (`cuInit(0)`) once per process; later calls return the first
/// result. Every entry point of the crate calls it, so calling it yourself is optional.
///
/// Without a driver (the stub library) or a device, the error says so plainly
/// ([`Error::is_no_gpu`]).
#[wraps(cuInit)]
#[track_caller]
pub fn init() -> Result<()> {
    // SAFETY: cuInit(0) may be called from any thread, any number of times.
    let code = *INIT.get_or_init(|| unsafe { sys::cuInit(0) });
    error::check(code, "cuInit")
}

static DRIVER_VERSION: OnceLock<sys::CUresult> = OnceLock::new();
static DRIVER_VERSION_VALUE: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// The CUDA version the installed driver supports, as `(major, minor)`: `(13, 0)` for 13.0.
#[wraps(cuDriverGetVersion)]
#[track_caller]
pub fn driver_version() -> Result<(u32, u32)> {
    let v = driver_version_raw()?;
    Ok((v as u32 / 1000, v as u32 % 1000 / 10))
}

/// The driver's version as cuDriverGetVersion reports it (13000 for 13.0), cached.
#[track_caller]
pub(crate) fn driver_version_raw() -> Result<i32> {
    let code = *DRIVER_VERSION.get_or_init(|| {
        let mut v = 0;
        // SAFETY: writes one int to a valid pointer; needs no initialisation.
        let r = unsafe { sys::cuDriverGetVersion(&mut v) };
        DRIVER_VERSION_VALUE.store(v, std::sync::atomic::Ordering::Relaxed);
        r
    });
    error::check(code, "cuDriverGetVersion")?;
    Ok(DRIVER_VERSION_VALUE.load(std::sync::atomic::Ordering::Relaxed))
}
