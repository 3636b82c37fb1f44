//! The event a stream records when work queued on it so far must come before work on another
//! stream: one per stream, created at the first hand-off and reused after, so that moving a
//! stream-ordered buffer between streams ([`AsyncDeviceBuffer::move_to_stream`]) or
//! [`Stream::wait_stream`] costs the two driver calls a hand-off needs, `cuEventRecord` and
//! `cuStreamWaitEvent`, and not an event's creation and destruction each time.
//!
//! Reusing the event is sound because it is only ever recorded on its own stream:
//! `cuStreamWaitEvent` waits for the event's most recent record when it is called, and a
//! record made after the one a hand-off made (by another thread handing off from the same
//! stream) completes only after everything queued before it on that stream, so the wait
//! covers at least the work it must. The event is destroyed with the stream (an owned
//! [`Stream`], or a [`StreamRef`](super::StreamRef) when it is dropped); a wait already queued
//! on it still completes (`cuEventDestroy`).
//!
//! [`AsyncDeviceBuffer::move_to_stream`]: crate::AsyncDeviceBuffer::move_to_stream

use std::sync::OnceLock;

use cuda_driver_macros::call;
use cuda_driver_sys as sys;

use super::Stream;
use crate::error::Result;
use crate::event::Event;
use crate::types::EventFlags;

/// A stream's hand-off event, created when first needed.
pub(crate) type HandoffEvent = OnceLock<Event>;

impl Stream {
    /// Makes work queued on `later` from now on wait for the work queued on `self` so far:
    /// records this stream's hand-off event here and waits for it on `later`. One context
    /// check when both streams are of one context; the caller has checked that `later` is
    /// not `self`.
    #[track_caller]
    pub(crate) fn hand_off_to(&self, later: &Stream) -> Result<()> {
        let event = match self.handoff.get() {
            Some(e) => e,
            None => self.init_handoff()?,
        };
        if later.context().as_raw() != self.context().as_raw() {
            event.record(self)?;
            return later.wait_event(event);
        }
        let _cur = self.context().enter()?;
        call!(
            // SAFETY: the event is of this stream's context (created in it), both alive.
            unsafe { sys::cuEventRecord(event.as_raw(), self.as_raw()) },
        )?;
        call!(
            // SAFETY: `later` is a live stream of the current context, the event is alive;
            // flags must be 0.
            unsafe { sys::cuStreamWaitEvent(later.as_raw(), event.as_raw(), 0) },
        )
    }

    #[cold]
    #[inline(never)]
    #[track_caller]
    fn init_handoff(&self) -> Result<&Event> {
        let event = Event::new(self.context(), EventFlags::DISABLE_TIMING)?;
        // Another thread may have set one meanwhile: then this one is dropped (destroyed).
        Ok(self.handoff.get_or_init(|| event))
    }
}
