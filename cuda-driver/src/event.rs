//! Events: markers in a stream, for synchronisation and timing.

use std::ptr;

use cuda_driver_sys as sys;

use crate::error::{check, report_drop_error, Result};
use crate::{Context, ErrorCode, Stream};

pub use crate::types::EventFlags;

/// An event (`CUevent`) of a context, destroyed on drop. `Send + Sync`.
#[doc(alias = "CUevent")]
pub struct Event {
    raw: sys::CUevent,
    ctx: Context,
}

// SAFETY: CUDA events may be used from any host thread; destroyed once, in Drop.
unsafe impl Send for Event {}
// SAFETY: every operation on an event is thread-safe in the driver.
unsafe impl Sync for Event {}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Event").field("raw", &self.raw).finish()
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        if self.ctx.ensure_current_for_drop() {
            // SAFETY: `raw` was created by cuEventCreate and is owned by self.
            let r = unsafe { sys::cuEventDestroy_v2(self.raw) };
            report_drop_error("cuEventDestroy_v2", r);
        }
    }
}

impl Event {
    /// Creates an event in `ctx`.
    ///
    /// Wraps `cuEventCreate`.
    #[doc(alias = "cuEventCreate")]
    #[track_caller]
    pub fn new(ctx: &Context, flags: EventFlags) -> Result<Event> {
        ctx.ensure_current()?;
        let mut raw = ptr::null_mut();
        check(
            // SAFETY: writes one CUevent; wrapped in the next statement.
            unsafe { sys::cuEventCreate(&mut raw, flags.as_raw()) },
            "cuEventCreate",
        )?;
        Ok(Event {
            raw,
            ctx: ctx.clone(),
        })
    }

    /// The raw `CUevent`, valid while `self` lives.
    #[inline]
    pub fn as_raw(&self) -> sys::CUevent {
        self.raw
    }

    /// The event's context.
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// Records the event on `stream`: it completes when the work queued before it does.
    ///
    /// Wraps `cuEventRecord`.
    #[doc(alias = "cuEventRecord")]
    #[inline]
    #[track_caller]
    pub fn record(&self, stream: &Stream) -> Result<()> {
        self.ctx.ensure_current()?;
        check(
            // SAFETY: event and stream are alive.
            unsafe { sys::cuEventRecord(self.raw, stream.as_raw()) },
            "cuEventRecord",
        )
    }

    /// Blocks until the event has completed.
    ///
    /// Wraps `cuEventSynchronize`.
    #[doc(alias = "cuEventSynchronize")]
    #[track_caller]
    pub fn synchronize(&self) -> Result<()> {
        self.ctx.ensure_current()?;
        check(
            // SAFETY: the event is alive.
            unsafe { sys::cuEventSynchronize(self.raw) },
            "cuEventSynchronize",
        )
    }

    /// Whether the event has completed, without blocking.
    ///
    /// Wraps `cuEventQuery` (`CUDA_ERROR_NOT_READY` is `Ok(false)`).
    #[doc(alias = "cuEventQuery")]
    #[track_caller]
    pub fn query(&self) -> Result<bool> {
        self.ctx.ensure_current()?;
        // SAFETY: the event is alive.
        match check(unsafe { sys::cuEventQuery(self.raw) }, "cuEventQuery") {
            Ok(()) => Ok(true),
            Err(e) if e.code() == Some(ErrorCode::NOT_READY) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Milliseconds elapsed from `self` to `end`; both must have completed and have timing
    /// enabled.
    ///
    /// Wraps `cuEventElapsedTime` (the first version, which every driver has).
    #[doc(alias = "cuEventElapsedTime")]
    #[track_caller]
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32> {
        let f = crate::entry_point::newer::cuEventElapsedTime_v1()?;
        self.ctx.ensure_current()?;
        let mut ms = 0.0f32;
        check(
            // SAFETY: both events are alive; writes one float.
            unsafe { f(&mut ms, self.raw, end.raw) },
            "cuEventElapsedTime",
        )?;
        Ok(ms)
    }
}
