//! Primary Context Management: the device's primary context, which the CUDA runtime uses too.

use std::ptr;
use std::sync::Arc;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use super::{Context, ContextFlags, Inner, Release};
use crate::device::Device;
use crate::error::Result;
use crate::init;

impl Context {
    #[track_caller]
    fn retain_primary(device: Device) -> Result<Context> {
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: writes one CUcontext; on success we hold one retain, released in Drop.
            unsafe { sys::cuDevicePrimaryCtxRetain(&mut raw, device.as_raw()) },
        )?;
        Ok(Context {
            inner: Arc::new(Inner::new(raw, device, Release::Primary)),
        })
    }
}

impl Device {
    /// Retains the device's primary context, the one the CUDA runtime uses. It is released
    /// when the last clone of the returned [`Context`] is dropped.
    #[wraps(cuDevicePrimaryCtxRetain)]
    #[track_caller]
    pub fn primary_context(self) -> Result<Context> {
        init()?;
        Context::retain_primary(self)
    }

    /// The primary context's flags and whether it is active (retained by anyone).
    #[wraps(cuDevicePrimaryCtxGetState)]
    #[track_caller]
    pub fn primary_context_state(self) -> Result<(ContextFlags, bool)> {
        init()?;
        let (mut flags, mut active) = (0u32, 0i32);
        call!(
            // SAFETY: writes one unsigned and one int to valid pointers.
            unsafe { sys::cuDevicePrimaryCtxGetState(self.as_raw(), &mut flags, &mut active) },
        )?;
        Ok((ContextFlags::from_raw(flags), active != 0))
    }

    /// Sets the primary context's flags (scheduling mode and the rest). Takes effect when the
    /// primary context is next created; on an active one only the scheduling flags may change.
    #[wraps(cuDevicePrimaryCtxSetFlags)]
    #[track_caller]
    pub fn set_primary_context_flags(self, flags: ContextFlags) -> Result<()> {
        init()?;
        call!(
            // SAFETY: plain value arguments.
            unsafe { sys::cuDevicePrimaryCtxSetFlags_v2(self.as_raw(), flags.as_raw()) },
        )
    }

    /// Destroys all allocations and resets all state of the primary context.
    ///
    ///
    /// # Safety
    /// No buffer, stream, event, module or other object created in the primary context may
    /// be used afterwards (their handles dangle), and no other thread may be using it.
    #[wraps(cuDevicePrimaryCtxReset)]
    #[track_caller]
    pub unsafe fn reset_primary_context(self) -> Result<()> {
        init()?;
        call!(
            // SAFETY: the caller guarantees nothing created in the primary context is used again.
            unsafe { sys::cuDevicePrimaryCtxReset_v2(self.as_raw()) },
        )
    }
}
