//! Awaiting an event.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use cuda_driver_macros::uses;

use super::signal::Wait;
use crate::error::Result;
use crate::event::Event;
use crate::handle::Handle;
use crate::stream::Stream;
use crate::types::StreamFlags;

/// A future that completes when an event completes: the awaitable form of
/// [`Event::synchronize`], made by [`Event::completion`].
///
/// An event belongs to no stream, so the future makes a small stream of its own in the
/// event's context (`cuStreamCreate`, non-blocking), makes it wait for the event
/// (`cuStreamWaitEvent`) and queues its callback there. It waits for the work the event
/// captured when the future was made (an event never recorded is complete at once). Once the
/// callback has run, the poll asks `cuEventQuery` about a marker event recorded on that stream
/// before the callback (with the context entered for the call), so that a sticky error of the
/// context comes out as an error. Dropped early, the
/// future's stream is kept by its callback and destroyed on the crate's release thread once
/// it ran. See [the module docs](crate::future).
#[uses(cuStreamWaitEvent, cuStreamAddCallback, cuEventQuery)]
#[must_use = "a future does nothing unless polled"]
pub struct EventFuture<'e> {
    event: &'e Event,
    /// The stream that waits for the event; `None` once done, or when it could not be made.
    waiter: Option<Stream>,
    wait: Wait,
}

impl std::fmt::Debug for EventFuture<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventFuture")
            .field("event", &self.event.as_raw())
            .field("queued", &self.wait.is_queued())
            .finish()
    }
}

impl Event {
    /// A future that completes when the event does (the work before its latest record, as of
    /// this call). See [`EventFuture`] and [the module docs](crate::future).
    #[uses(cuStreamWaitEvent, cuStreamAddCallback, cuEventQuery)]
    #[track_caller]
    pub fn completion(&self) -> EventFuture<'_> {
        let waiter = match Stream::new(self.context(), StreamFlags::NON_BLOCKING) {
            Ok(s) => s,
            Err(e) => {
                return EventFuture {
                    event: self,
                    waiter: None,
                    wait: Wait::failed(e),
                }
            }
        };
        let wait = match waiter.wait_event(self) {
            Ok(()) => Wait::enqueue(&waiter),
            Err(e) => Wait::failed(e),
        };
        EventFuture {
            event: self,
            waiter: Some(waiter),
            wait,
        }
    }
}

impl Future for EventFuture<'_> {
    type Output = Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Result<()>> {
        let this = self.get_mut();
        let status = match this.wait.poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(status) => status,
        };
        // The callback ran (or was never queued): the stream is done with.
        this.waiter = None;
        Poll::Ready(status)
    }
}

impl Drop for EventFuture<'_> {
    fn drop(&mut self) {
        if let Some(waiter) = self.waiter.take() {
            // Kept until its callback ran when one is queued (destroying a stream with
            // pending work is allowed too, but this keeps the callback's stream alive).
            drop(self.wait.orphan(Box::new(waiter)));
        }
    }
}
