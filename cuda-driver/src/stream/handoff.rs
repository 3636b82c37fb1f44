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
//! covers at least the work it must. The event is destroyed, in its context, with the stream
//! (an owned [`Stream`], or a [`StreamRef`](super::StreamRef) when it is dropped); a wait
//! already queued on it still completes (`cuEventDestroy`: the resources are released once the
//! work completes).
//!
//! [`AsyncDeviceBuffer::move_to_stream`]: crate::memory::AsyncDeviceBuffer::move_to_stream

use std::ptr;
use std::sync::OnceLock;

use cuda_driver_macros::call;
use cuda_driver_sys as sys;

use super::Stream;
use crate::context::Context;
use crate::error::Result;
use crate::handle::Handle;
use crate::release::SendRaw;

/// A stream's hand-off event, created when first needed, destroyed with the stream.
pub(crate) struct HandoffEvent(OnceLock<Owned>);

impl HandoffEvent {
    pub(crate) const fn new() -> HandoffEvent {
        HandoffEvent(OnceLock::new())
    }
}

/// An event created by `cuEventCreate` in `ctx`, destroyed on drop.
struct Owned {
    raw: sys::CUevent,
    ctx: Context,
}

// SAFETY: a CUevent may be used and destroyed from any thread; it is destroyed once, in Drop.
unsafe impl Send for Owned {}
// SAFETY: the driver's event calls are thread-safe; nothing mutates `Owned` through `&self`.
unsafe impl Sync for Owned {}

impl Drop for Owned {
    fn drop(&mut self) {
        let raw = SendRaw(self.raw);
        // SAFETY: created by cuEventCreate in `init_handoff`, owned here, destroyed once; a
        // wait queued on it still completes.
        self.ctx.release("cuEventDestroy_v2", move || unsafe {
            sys::cuEventDestroy_v2(raw.get())
        });
    }
}

impl Stream {
    /// Makes work queued on `later` from now on wait for the work queued on `self` so far:
    /// records this stream's hand-off event here and waits for it on `later`. No context
    /// check between created streams; the caller has checked that `later` is not `self`.
    #[track_caller]
    pub(crate) fn hand_off_to(&self, later: &Stream) -> Result<()> {
        let event = match self.handoff.0.get() {
            Some(e) => e.raw,
            None => self.init_handoff()?,
        };
        // Each call in its stream's context, entered only for a default stream: the driver
        // takes the context from a created stream (GPU test
        // `context::stream_calls_run_in_the_streams_context_whatever_is_current`), so a
        // hand-off between created streams makes no cuCtxGetCurrent.
        {
            let _cur = self.enter_for_call()?;
            call!(
                // SAFETY: the event is of this stream's context (created in it), both alive.
                unsafe { sys::cuEventRecord(event, self.as_raw()) },
            )?;
        }
        let _cur = later.enter_for_call()?;
        call!(
            // SAFETY: `later` is a live stream; the event is alive (of `later`'s context or
            // another one, which the driver allows); flags must be 0.
            unsafe { sys::cuStreamWaitEvent(later.as_raw(), event, 0) },
        )
    }

    #[cold]
    #[inline(never)]
    #[track_caller]
    fn init_handoff(&self) -> Result<sys::CUevent> {
        let _cur = self.context().enter()?;
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: writes one CUevent, owned by the `Owned` built in the next statement.
            unsafe { sys::cuEventCreate(&mut raw, sys::CU_EVENT_DISABLE_TIMING) },
        )?;
        let owned = Owned {
            raw,
            ctx: self.context().clone(),
        };
        // Another thread may have set one meanwhile: then this one is dropped (destroyed).
        Ok(self.handoff.0.get_or_init(|| owned).raw)
    }
}
