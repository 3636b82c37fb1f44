//! Event Management: markers in a stream, for synchronisation and timing; record flags, both
//! elapsed-time ABIs, waits with flags, and the events recorded on or waited for by a whole
//! context (`cuCtxRecordEvent`, `cuCtxWaitEvent`, and `cuStreamWaitEvent`, which take an
//! event: they stand here because the context and stream layers must not depend on events).

use std::ptr;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use crate::context::Context;
use crate::entry_point::newer;
use crate::error::{Error, Result};
use crate::handle::{give_up, Handle, OwnedHandle};
use crate::release::SendRaw;
use crate::stream::Stream;
use crate::types::ErrorCode;

use crate::types::{EventFlags, EventRecordFlags, EventWaitFlags};

/// An event (`CUevent`) of a context, destroyed on drop. `Send + Sync`.
#[wraps(CUevent)]
pub struct Event {
    raw: sys::CUevent,
    ctx: Context,
    /// The flags it was created with (the driver cannot be asked); `None` for an event handed
    /// over through [`from_raw`](Event::from_raw).
    flags: Option<EventFlags>,
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

impl Handle for Event {
    type Raw = sys::CUevent;

    /// The raw `CUevent`, valid while `self` lives.
    #[inline]
    fn as_raw(&self) -> sys::CUevent {
        self.raw
    }
}

impl OwnedHandle for Event {
    type Parent<'p> = &'p Context;

    /// Takes ownership of an event created in `ctx` with `cuEventCreate` (or opened from an
    /// IPC handle); it is destroyed on drop.
    ///
    /// # Safety
    /// `raw` is a live event of `ctx` that nothing else destroys.
    unsafe fn from_raw(raw: sys::CUevent, ctx: &Context) -> Event {
        Event {
            raw,
            ctx: ctx.clone(),
            flags: None,
        }
    }

    /// Gives up ownership: the caller destroys the event with `cuEventDestroy`.
    fn into_raw(self) -> sys::CUevent {
        give_up!(self, raw; drop(ctx); forget(flags))
    }
}

impl Event {
    /// Creates an event in `ctx`.
    #[wraps(cuEventCreate)]
    #[track_caller]
    pub fn new(ctx: &Context, flags: EventFlags) -> Result<Event> {
        let _cur = ctx.enter()?;
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: writes one CUevent; wrapped in the next statement.
            unsafe { sys::cuEventCreate(&mut raw, flags.as_raw()) },
        )?;
        Ok(Event {
            raw,
            ctx: ctx.clone(),
            flags: Some(flags),
        })
    }

    /// As [`from_raw`](Self::from_raw), for an event known to have been created with `flags`,
    /// which [`flags`](Self::flags) then reports.
    ///
    /// # Safety
    /// As for [`from_raw`](Self::from_raw), and `raw` was created with `flags` (an event opened
    /// from an IPC handle has `DISABLE_TIMING | INTERPROCESS`).
    pub unsafe fn from_raw_with_flags(
        raw: sys::CUevent,
        ctx: &Context,
        flags: EventFlags,
    ) -> Event {
        Event {
            raw,
            ctx: ctx.clone(),
            flags: Some(flags),
        }
    }

    /// The flags the event was created with (timing disabled, blocking synchronisation,
    /// interprocess): the driver has no call that reports them, so the event remembers them
    /// (`None` for an event from [`from_raw`](Self::from_raw), whose flags the crate never saw).
    #[doc(alias = "cuEventCreate")]
    #[inline]
    pub fn flags(&self) -> Option<EventFlags> {
        self.flags
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
        // The driver takes the context from a created stream (GPU test
        // `context::stream_calls_run_in_the_streams_context_whatever_is_current`).
        let _cur = stream.enter_for_call()?;
        call!(
            // SAFETY: event and stream are alive and of one context, entered above unless
            // the stream is a created one.
            unsafe { sys::cuEventRecord(self.raw, stream.as_raw()) },
        )
    }

    /// Blocks until the event has completed.
    #[wraps(cuEventSynchronize)]
    #[track_caller]
    pub fn synchronize(&self) -> Result<()> {
        let _cur = self.ctx.enter_for_event_call()?;
        call!(
            // SAFETY: the event is alive.
            unsafe { sys::cuEventSynchronize(self.raw) },
        )
    }

    /// Whether the event has completed, without blocking.
    ///
    /// Calls `cuEventQuery` (`CUDA_ERROR_NOT_READY` is `Ok(false)`).
    #[wraps(cuEventQuery)]
    #[track_caller]
    pub fn query(&self) -> Result<bool> {
        let _cur = self.ctx.enter_for_event_call()?;
        // SAFETY: the event is alive.
        match call!(unsafe { sys::cuEventQuery(self.raw) }) {
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
        let _cur = self.ctx.enter_for_event_call()?;
        let mut ms = 0.0f32;
        call!(
            // SAFETY: both events are alive; writes one float.
            unsafe {
                crate::entry_point::newer::cuEventElapsedTime_v1()?(&mut ms, self.raw, end.raw)
            },
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
        // As in `Event::record`: the driver takes the context from a created stream.
        let _cur = self.enter_for_call()?;
        call!(
            // SAFETY: stream and event are alive; flags must be 0.
            unsafe { sys::cuStreamWaitEvent(self.as_raw(), event.as_raw(), 0) },
        )
    }

    /// Makes later work on this stream wait until the work queued on `other` so far has
    /// completed (what `cudaStreamWaitEvent` users write by hand): records an event on `other`
    /// (in its context, without timing) and waits for it here. `other` may be of another
    /// context or device. Waiting for itself does nothing.
    ///
    /// The event is `other`'s own, created at its first hand-off and reused by the next ones
    /// (it is only ever recorded on `other`, so a wait for its latest record covers the work
    /// this call must wait for), and destroyed with `other`.
    #[wraps(cuEventRecord, cuStreamWaitEvent)]
    #[doc(alias = "cuEventCreate")]
    #[track_caller]
    pub fn wait_stream(&self, other: &Stream) -> Result<()> {
        if other.as_raw() == self.as_raw() && other.context() == self.context() {
            return Ok(());
        }
        other.hand_off_to(self)
    }
}

impl Event {
    /// Records the event on `stream` with `flags` (`EXTERNAL` only inside stream capture).
    /// The stream must be of the event's context.
    #[wraps(cuEventRecordWithFlags)]
    #[track_caller]
    pub fn record_with_flags(&self, stream: &Stream, flags: EventRecordFlags) -> Result<()> {
        if stream.context() != self.context() {
            return Err(crate::error::Error::ContextMismatch {
                what: "Event::record_with_flags",
                expected: self.context().as_raw() as usize,
                found: stream.context().as_raw() as usize,
            });
        }
        // As in `record`: the driver takes the context from a created stream.
        let _cur = stream.enter_for_call()?;
        call!(
            // SAFETY: event and stream are alive and of one context.
            unsafe { sys::cuEventRecordWithFlags(self.as_raw(), stream.as_raw(), flags.as_raw()) },
        )
    }

    /// Milliseconds from `self` to `end`, through the CUDA 12.8 ABI (`cuEventElapsedTime_v2`),
    /// which also times events recorded with `CU_EVENT_BLOCKING_SYNC`.
    #[wraps(cuEventElapsedTime_v2)]
    #[track_caller]
    pub fn elapsed_ms_v2(&self, end: &Event) -> Result<f32> {
        let _cur = self.context().enter_for_event_call()?;
        let mut ms = 0.0f32;
        call!(
            // SAFETY: both events are alive; writes one float.
            unsafe { newer::cuEventElapsedTime_v2()?(&mut ms, self.as_raw(), end.as_raw()) },
        )?;
        Ok(ms)
    }
}

impl Stream {
    /// Makes later work on this stream wait for `event`, with `flags` (`EXTERNAL` only inside
    /// stream capture).
    #[wraps(cuStreamWaitEvent)]
    #[track_caller]
    pub fn wait_event_with_flags(&self, event: &Event, flags: EventWaitFlags) -> Result<()> {
        // As in `wait_event`: the driver takes the context from a created stream.
        let _cur = self.enter_for_call()?;
        call!(
            // SAFETY: stream and event are alive.
            unsafe { sys::cuStreamWaitEvent(self.as_raw(), event.as_raw(), flags.as_raw()) },
        )
    }
}

impl Context {
    /// Records `event` so that it completes when all work queued in this context so far (on
    /// every stream) is done; CUDA 12.5. The event must be of this context.
    #[wraps(cuCtxRecordEvent)]
    #[track_caller]
    pub fn record_event(&self, event: &Event) -> Result<()> {
        let _cur = self.enter()?;
        call!(
            // SAFETY: context and event are alive.
            unsafe { newer::cuCtxRecordEvent()?(self.as_raw(), event.as_raw()) },
        )
    }

    /// Makes all later work of this context (every stream) wait for `event`; CUDA 12.5.
    #[wraps(cuCtxWaitEvent)]
    #[track_caller]
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        let _cur = self.enter()?;
        call!(
            // SAFETY: context and event are alive.
            unsafe { newer::cuCtxWaitEvent()?(self.as_raw(), event.as_raw()) },
        )
    }
}
