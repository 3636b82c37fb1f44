//! Safe, zero-overhead bindings to the CUDA Driver API.
//!
//! `cuda-driver` is the idiomatic layer over [`cuda_driver_sys`] (cuda.h in Rust): devices,
//! contexts and the per-thread context stack, streams and events, device, page-locked and
//! managed memory, modules, the JIT linker, context-independent libraries and kernels, and
//! checked kernel launches. Every wrapper names the driver call it wraps and gives access to
//! the raw handle (`as_raw`), so a program can drop down to `cuda_driver_sys` at any point.
//!
//! * **Errors** carry the failing driver call and the caller's location
//!   (`cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory) at src/main.rs:12:5`).
//! * **Ownership**: every handle is released in `Drop`, which never panics; objects keep
//!   their context alive, and work from any thread.
//! * **Speed**: the launch path allocates nothing and checks arguments against the kernel's
//!   parameter list read once from the driver.
//!
//! ```no_run
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

#[macro_use]
mod macros;

#[allow(
    rustdoc::broken_intra_doc_links,
    rustdoc::invalid_html_tags,
    rustdoc::bare_urls
)]
#[rustfmt::skip]
mod consts;
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
#[cfg(feature = "bytemuck")]
mod pod;
mod repr;
mod stream;
mod vector;

pub use context::{CacheConfig, Context, ContextFlags, ContextGuard, Limit, SharedMemConfig};
pub use device::{Device, DeviceAttribute};
pub use entry_point::{ProcAddressFlags, ProcAddressStatus};
pub use error::{drop_error_count, Error, ErrorCode, Result};
pub use event::{Event, EventFlags};
pub use launch::*;
pub use library::*;
pub use linker::*;
pub use memory::*;
pub use module::*;
#[cfg(feature = "bytemuck")]
#[cfg_attr(docsrs, doc(cfg(feature = "bytemuck")))]
pub use pod::Pod;
pub use repr::DeviceRepr;
pub use stream::{host_fn_panic_count, Stream, StreamFlags};
pub use vector::*;

use std::sync::OnceLock;

static INIT: OnceLock<sys::CUresult> = OnceLock::new();

/// Initialises the driver (`cuInit(0)`) once per process; later calls return the first
/// result. Every entry point of the crate calls it, so calling it yourself is optional.
///
/// Without a driver (the stub library) or a device, the error says so plainly
/// ([`Error::is_no_gpu`]).
///
/// Wraps [`cuInit`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__INITIALIZE.html).
#[doc(alias = "cuInit")]
#[track_caller]
pub fn init() -> Result<()> {
    // SAFETY: cuInit(0) may be called from any thread, any number of times.
    let code = *INIT.get_or_init(|| unsafe { sys::cuInit(0) });
    error::check(code, "cuInit")
}

static DRIVER_VERSION: OnceLock<sys::CUresult> = OnceLock::new();
static DRIVER_VERSION_VALUE: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// The CUDA version the installed driver supports, as `(major, minor)`: `(13, 0)` for 13.0.
///
/// Wraps `cuDriverGetVersion`.
#[doc(alias = "cuDriverGetVersion")]
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
