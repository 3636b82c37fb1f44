//! Initialization and Version Management: `cuInit` once per process, and the driver's
//! version.

use std::sync::OnceLock;

use cuda_driver_macros::wraps;
use cuda_driver_sys as sys;

use crate::error::{self, Result};

static INIT: OnceLock<sys::CUresult> = OnceLock::new();

/// Initialises the driver (`cuInit(0)`) once per process; later calls return the first
/// result. Every entry point of the crate calls it, so calling it yourself is optional.
///
/// Without a driver (the stub library) or a device, the error says so plainly
/// ([`Error::is_no_gpu`](crate::Error::is_no_gpu)).
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
