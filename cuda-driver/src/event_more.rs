//! Events beyond create/record/synchronize: record flags, the second elapsed-time ABI, waits
//! with flags, and events recorded on or waited by a whole context.

use cuda_driver_macros::wraps;
use cuda_driver_sys as sys;

use crate::entry_point::newer;
use crate::error::{check, Result};
use crate::{Context, Event, Stream};

pub use crate::types::{EventRecordFlags, EventWaitFlags};

impl Event {
    /// Records the event on `stream` with `flags` (`EXTERNAL` only inside stream capture).
    /// The stream must be of the event's context.
    #[wraps(cuEventRecordWithFlags)]
    #[track_caller]
    pub fn record_with_flags(&self, stream: &Stream, flags: EventRecordFlags) -> Result<()> {
        if stream.context() != self.context() {
            return Err(crate::Error::ContextMismatch {
                what: "Event::record_with_flags",
                expected: self.context().as_raw() as usize,
                found: stream.context().as_raw() as usize,
            });
        }
        let _cur = self.context().enter()?;
        check(
            // SAFETY: event and stream are alive.
            unsafe { sys::cuEventRecordWithFlags(self.as_raw(), stream.as_raw(), flags.as_raw()) },
            "cuEventRecordWithFlags",
        )
    }

    /// Milliseconds from `self` to `end`, through the CUDA 12.8 ABI (`cuEventElapsedTime_v2`),
    /// which also times events recorded with `CU_EVENT_BLOCKING_SYNC`.
    #[wraps(cuEventElapsedTime_v2)]
    #[track_caller]
    pub fn elapsed_ms_v2(&self, end: &Event) -> Result<f32> {
        let f = newer::cuEventElapsedTime_v2()?;
        let _cur = self.context().enter()?;
        let mut ms = 0.0f32;
        check(
            // SAFETY: both events are alive; writes one float.
            unsafe { f(&mut ms, self.as_raw(), end.as_raw()) },
            "cuEventElapsedTime_v2",
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
        let _cur = self.context().enter()?;
        check(
            // SAFETY: stream and event are alive.
            unsafe { sys::cuStreamWaitEvent(self.as_raw(), event.as_raw(), flags.as_raw()) },
            "cuStreamWaitEvent",
        )
    }
}

impl Context {
    /// Records `event` so that it completes when all work queued in this context so far (on
    /// every stream) is done; CUDA 12.5. The event must be of this context.
    #[wraps(cuCtxRecordEvent)]
    #[track_caller]
    pub fn record_event(&self, event: &Event) -> Result<()> {
        let f = newer::cuCtxRecordEvent()?;
        let _cur = self.enter()?;
        check(
            // SAFETY: context and event are alive.
            unsafe { f(self.as_raw(), event.as_raw()) },
            "cuCtxRecordEvent",
        )
    }

    /// Makes all later work of this context (every stream) wait for `event`; CUDA 12.5.
    #[wraps(cuCtxWaitEvent)]
    #[track_caller]
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        let f = newer::cuCtxWaitEvent()?;
        let _cur = self.enter()?;
        check(
            // SAFETY: context and event are alive.
            unsafe { f(self.as_raw(), event.as_raw()) },
            "cuCtxWaitEvent",
        )
    }
}
