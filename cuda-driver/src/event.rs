//! Events: markers in a stream, for synchronisation and timing.

use std::ptr;

use cuda_driver_macros::wraps;
use cuda_driver_sys as sys;

use crate::error::{check, Error, Result};
use crate::release::SendRaw;
use crate::{Context, ErrorCode, Stream};

pub use crate::types::EventFlags;

/// An event (`CUevent`) of a context, destroyed on drop. `Send + Sync`.
#[wraps(CUevent)]
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
        let raw = SendRaw(self.raw);
        // SAFETY: `raw` was created by cuEventCreate (or handed over through from_raw) and is
        // owned by self; a pending record or wait still completes.
        self.ctx.release("cuEventDestroy_v2", move || unsafe {
            sys::cuEventDestroy_v2(raw.get())
        });
    }
}

/// Refuses an event and a stream of different contexts (the driver requires one).
#[inline]
fn same_context(what: &'static str, event: &Event, stream: &Stream) -> Result<()> {
    if event.ctx.as_raw() == stream.context().as_raw() {
        Ok(())
    } else {
        Err(Error::ContextMismatch {
            what,
            expected: event.ctx.as_raw() as usize,
            found: stream.context().as_raw() as usize,
        })
    }
}

impl Event {
    /// Creates an event in `ctx`.
    #[wraps(cuEventCreate)]
    #[track_caller]
    pub fn new(ctx: &Context, flags: EventFlags) -> Result<Event> {
        let _cur = ctx.enter()?;
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

    /// Takes ownership of an event created in `ctx` with `cuEventCreate` (or opened from an
    /// IPC handle); it is destroyed on drop.
    ///
    /// # Safety
    /// `raw` is a live event of `ctx` that nothing else destroys.
    pub unsafe fn from_raw(raw: sys::CUevent, ctx: &Context) -> Event {
        Event {
            raw,
            ctx: ctx.clone(),
        }
    }

    /// Gives up ownership: the caller destroys the event with `cuEventDestroy`.
    pub fn into_raw(self) -> sys::CUevent {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: `this` is never used or dropped again; the context clone is dropped once.
        unsafe { ptr::read(&this.ctx) };
        this.raw
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

    /// Records the event on `stream`, a stream of the event's context
    /// ([`Error::ContextMismatch`] otherwise): it completes when the work queued before it
    /// does.
    #[wraps(cuEventRecord)]
    #[inline]
    #[track_caller]
    pub fn record(&self, stream: &Stream) -> Result<()> {
        same_context("Event::record", self, stream)?;
        let _cur = self.ctx.enter()?;
        check(
            // SAFETY: event and stream are alive.
            unsafe { sys::cuEventRecord(self.raw, stream.as_raw()) },
            "cuEventRecord",
        )
    }

    /// Blocks until the event has completed.
    #[wraps(cuEventSynchronize)]
    #[track_caller]
    pub fn synchronize(&self) -> Result<()> {
        let _cur = self.ctx.enter()?;
        check(
            // SAFETY: the event is alive.
            unsafe { sys::cuEventSynchronize(self.raw) },
            "cuEventSynchronize",
        )
    }

    /// Whether the event has completed, without blocking.
    ///
    /// Calls `cuEventQuery` (`CUDA_ERROR_NOT_READY` is `Ok(false)`).
    #[wraps(cuEventQuery)]
    #[track_caller]
    pub fn query(&self) -> Result<bool> {
        let _cur = self.ctx.enter()?;
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
    /// Calls `cuEventElapsedTime` (the first version, which every driver has).
    #[wraps(cuEventElapsedTime)]
    #[track_caller]
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32> {
        let f = crate::entry_point::newer::cuEventElapsedTime_v1()?;
        let _cur = self.ctx.enter()?;
        let mut ms = 0.0f32;
        check(
            // SAFETY: both events are alive; writes one float.
            unsafe { f(&mut ms, self.raw, end.raw) },
            "cuEventElapsedTime",
        )?;
        Ok(ms)
    }
}

impl Stream {
    /// Makes later work on this stream wait until `event` has completed. The event may be of
    /// another context (cross-device waits are allowed).
    #[wraps(cuStreamWaitEvent)]
    #[track_caller]
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        let _cur = self.context().enter()?;
        check(
            // SAFETY: stream and event are alive; flags must be 0.
            unsafe { sys::cuStreamWaitEvent(self.as_raw(), event.as_raw(), 0) },
            "cuStreamWaitEvent",
        )
    }
}
