//! The one mechanism under every future of [`crate::future`]: a stream callback
//! (`cuStreamAddCallback`) that records the driver's status and wakes the task, and the state
//! it shares with the future.
//!
//! The callback runs on a driver thread and makes no CUDA call: it stores the status it was
//! passed, takes the waker and the resources of a future dropped early out of the shared
//! state, hands those resources to the crate's release thread (their `Drop` may free device
//! memory, a CUDA call) and wakes the waker under `catch_unwind`. It runs inside
//! [`Stream::add_callback`]'s host-function scope, so even a CUDA object it dropped by
//! mistake would be released on the release thread, and a panic would be caught and counted.

use std::any::Any;
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context as TaskContext, Poll, Waker};

use cuda_driver_macros::call;
use cuda_driver_sys as sys;

use crate::callback;
use crate::error::{check, Error, Result};
use crate::event::Event;
use crate::handle::Handle;
use crate::release::release;
use crate::stream::{run_host_fn, Stream};
use crate::types::EventFlags;

/// Counts the wakers that panicked when the driver's callback woke them.
static WAKER_PANICS: AtomicUsize = AtomicUsize::new(0);

/// How many wakers have panicked when woken by the driver's callback (a future of
/// [`crate::future`] completing). The panic is caught on the driver's thread, never unwinds
/// into the driver, and the process goes on; the task whose waker panicked is not woken by
/// that wake (an executor whose waker panics has lost the notification, not the result: a
/// later poll sees the completion).
pub fn waker_panic_count() -> usize {
    WAKER_PANICS.load(Ordering::Relaxed)
}

/// What the callback and the future share.
#[derive(Default)]
pub(crate) struct Signal {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The status the driver passed to the callback; `None` until it ran.
    status: Option<Result<()>>,
    /// The waker of the last poll.
    waker: Option<Waker>,
    /// What a future dropped before completion still holds for the device: released on the
    /// release thread once the callback has run.
    orphan: Option<Box<dyn Any + Send>>,
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    // A poisoned lock can only come from a panic between two of the statements below, none
    // of which runs user code while the lock is held; the state is consistent either way.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Signal {
    /// The callback's side: records `status`, releases an orphan, wakes the waker. Makes no
    /// CUDA call and lets no panic out.
    fn fire(&self, status: Result<()>) {
        let (waker, orphan) = {
            let mut s = lock(&self.state);
            s.status = Some(status);
            (s.waker.take(), s.orphan.take())
        };
        if let Some(orphan) = orphan {
            // On the driver's thread (a host function), `release` hands the drop to the
            // crate's release thread: the device memory the orphan owns is freed there, after
            // this callback returned, never inside it.
            release(move || drop(orphan));
        }
        if let Some(waker) = waker {
            if callback::guard(move || waker.wake()).is_none() {
                WAKER_PANICS.fetch_add(1, Ordering::Relaxed);
                callback::log(
                    || log::warn!(target: "cuda_driver", "a waker panicked when woken by a stream callback"),
                );
            }
        }
    }
}

/// The stream callback: wakes the future whose signal `data` is. Runs on a driver thread,
/// inside the host-function scope (CUDA calls refused, releases deferred, panics caught and
/// counted in [`host_fn_panic_count`](crate::stream::host_fn_panic_count)); [`Signal::fire`] makes
/// no CUDA call. `status` is `CUDA_SUCCESS` or the error of the work before it (cuda.h: "In
/// the event of a device error, all subsequently executed callbacks will receive an
/// appropriate CUresult"); building the crate's `Error` from it is plain data.
extern "C" fn trampoline(_stream: sys::CUstream, status: sys::CUresult, data: *mut c_void) {
    run_host_fn(|| {
        // SAFETY: `data` is the `Arc::into_raw` of `queue_callback`, handed to the driver by
        // one successful cuStreamAddCallback, whose callback runs exactly once (cuda.h: "For
        // each cuStreamAddCallback call, the callback will be executed exactly once"); this
        // takes back the one reference given up there.
        let signal = unsafe { Arc::from_raw(data.cast_const().cast::<Signal>()) };
        signal.fire(check(status, "cuStreamAddCallback"));
    });
}

/// The error of a future asked for on a stream that is being captured: a callback cannot be
/// captured (a captured graph would run it at every launch, or never), and the work before it
/// is not run by the capture.
#[track_caller]
pub(crate) fn capturing_error() -> Error {
    match check(
        sys::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
        "cuStreamAddCallback",
    ) {
        Err(e) => e,
        Ok(()) => Error::InvalidArgument("a stream being captured cannot be awaited".into()),
    }
}

/// Refuses a stream that is being captured ([`capturing_error`]), before anything is queued.
#[track_caller]
pub(crate) fn refuse_capture(stream: &Stream) -> Result<()> {
    let _cur = stream.context().enter()?;
    if stream.capture_status_raw()? != sys::CU_STREAM_CAPTURE_STATUS_NONE {
        return Err(capturing_error());
    }
    Ok(())
}

/// Queues the callback (`cuStreamAddCallback`, not `cuLaunchHostFunc`: cuda.h says a host
/// function "will not be called in the event of an error in the CUDA context", so a future
/// waiting for one would never complete after a faulting kernel; a stream callback runs
/// exactly once, with the error), after a marker event recorded on `stream`. Refused on a
/// capturing stream.
///
/// The marker is what the poll that observes the completion asks the driver about
/// ([`confirm`]): it completed before the callback started (cuda.h: "The start of execution
/// of a callback has the same effect as synchronizing an event recorded in the same stream
/// immediately prior to the callback"), so `cuEventQuery` reports `CUDA_SUCCESS` or the
/// context's sticky error, never a `CUDA_ERROR_NOT_READY` for work queued after the future
/// or for the callback still returning (which `cuStreamQuery` would).
#[track_caller]
fn queue_callback(stream: &Stream) -> Result<(Arc<Signal>, Event)> {
    let _cur = stream.context().enter()?;
    if stream.capture_status_raw()? != sys::CU_STREAM_CAPTURE_STATUS_NONE {
        return Err(capturing_error());
    }
    let marker = Event::new(stream.context(), EventFlags::DISABLE_TIMING)?;
    marker.record(stream)?;
    let signal = Arc::new(Signal::default());
    let data = Arc::into_raw(signal.clone()).cast_mut().cast::<c_void>();
    // SAFETY: the trampoline matches CUstreamCallback and takes back the reference `data`
    // holds; the stream is alive while `stream` is borrowed; flags must be 0.
    let r = call!(unsafe { sys::cuStreamAddCallback(stream.as_raw(), Some(trampoline), data, 0) });
    if r.is_err() {
        // SAFETY: the driver refused the call and will never run the trampoline: the
        // reference is still ours.
        drop(unsafe { Arc::from_raw(data.cast_const().cast::<Signal>()) });
    }
    r?;
    Ok((signal, marker))
}

/// The poll that observes a completion asks the driver, on the executor's thread, about the
/// marker event recorded before the callback (`cuEventQuery`, with its context entered for the
/// call and the caller's context stack left as it was): a sticky error that the callback's
/// status did not carry comes out here. A failure of the query that says nothing about the
/// device (the query refused inside a host function) is no error: the callback has reported
/// the work done.
#[track_caller]
fn confirm(marker: &Event) -> Result<()> {
    match marker.query() {
        Err(e) if e.is_sticky() => Err(e),
        _ => Ok(()),
    }
}

/// A future's wait for its stream callback.
pub(crate) enum Wait {
    /// The callback is queued, after the marker event.
    Pending(Arc<Signal>, Option<Event>),
    /// Nothing is queued: the error that kept the callback from being queued, taken by the
    /// first poll.
    Failed(Option<Error>),
}

impl Wait {
    /// Queues the callback on `stream`, after the work queued so far.
    #[track_caller]
    pub(crate) fn enqueue(stream: &Stream) -> Wait {
        match queue_callback(stream) {
            Ok((signal, marker)) => Wait::Pending(signal, Some(marker)),
            Err(e) => Wait::Failed(Some(e)),
        }
    }

    /// A wait that completes with `e` at its first poll.
    pub(crate) fn failed(e: Error) -> Wait {
        Wait::Failed(Some(e))
    }

    /// Whether the callback is queued (so the work before it will be waited for).
    pub(crate) fn is_queued(&self) -> bool {
        matches!(self, Wait::Pending(..))
    }

    /// `Ready` with the callback's status once it ran, confirmed by the driver ([`confirm`]),
    /// or with the queueing error; otherwise stores the task's waker. A second `Ready` after
    /// the first gives `Ok(())`.
    pub(crate) fn poll(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<()>> {
        match self {
            Wait::Failed(e) => Poll::Ready(e.take().map_or(Ok(()), Err)),
            Wait::Pending(signal, marker) => {
                let mut s = lock(&signal.state);
                if let Some(status) = s.status.take() {
                    drop(s);
                    let status = status.and_then(|()| marker.as_ref().map_or(Ok(()), confirm));
                    *self = Wait::Failed(None);
                    return Poll::Ready(status);
                }
                let stale = match &s.waker {
                    Some(w) if w.will_wake(cx.waker()) => return Poll::Pending,
                    _ => s.waker.take(),
                };
                drop(s);
                // Cloned and the old one dropped outside the lock: both run the executor's code.
                let new = cx.waker().clone();
                drop(stale);
                let mut s = lock(&signal.state);
                if let Some(status) = s.status.take() {
                    drop(s);
                    drop(new);
                    let status = status.and_then(|()| marker.as_ref().map_or(Ok(()), confirm));
                    *self = Wait::Failed(None);
                    return Poll::Ready(status);
                }
                s.waker = Some(new);
                Poll::Pending
            }
        }
    }

    /// For a future dropped before completion: `keep` (what the device may still use) goes
    /// to the callback, which hands it to the release thread once the work is done; if the
    /// callback has run already, `keep` is dropped here. With no callback queued, `keep` is
    /// returned: the caller decides (it synchronises or leaks).
    pub(crate) fn orphan(&mut self, keep: Box<dyn Any + Send>) -> Option<Box<dyn Any + Send>> {
        match self {
            Wait::Failed(_) => Some(keep),
            Wait::Pending(signal, _) => {
                let mut s = lock(&signal.state);
                let waker = s.waker.take();
                if s.status.is_some() {
                    drop(s);
                    drop(waker);
                    drop(keep);
                } else {
                    s.orphan = Some(keep);
                    drop(s);
                    drop(waker);
                }
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::task::Wake;

    struct Flag(AtomicBool);
    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    struct Panicking;
    impl Wake for Panicking {
        fn wake(self: Arc<Self>) {
            panic!("a waker that panics");
        }
    }

    fn pending() -> (Wait, Arc<Signal>) {
        let signal = Arc::new(Signal::default());
        (Wait::Pending(signal.clone(), None), signal)
    }

    #[test]
    fn the_callback_wakes_the_last_waker_and_the_status_comes_out_once() {
        let (mut wait, signal) = pending();
        let flag = Arc::new(Flag(AtomicBool::new(false)));
        let waker = Waker::from(flag.clone());
        let mut cx = TaskContext::from_waker(&waker);
        assert!(wait.poll(&mut cx).is_pending());
        assert!(
            wait.poll(&mut cx).is_pending(),
            "a second poll keeps the waker"
        );
        signal.fire(Ok(()));
        assert!(flag.0.load(Ordering::SeqCst));
        assert!(matches!(wait.poll(&mut cx), Poll::Ready(Ok(()))));
        assert!(matches!(wait.poll(&mut cx), Poll::Ready(Ok(()))));
        assert_eq!(
            Arc::strong_count(&signal),
            1,
            "the wait let go of the signal"
        );
    }

    #[test]
    fn the_trampoline_takes_back_its_reference_and_records_the_status() {
        let signal = Arc::new(Signal::default());
        let data = Arc::into_raw(signal.clone()).cast_mut().cast::<c_void>();
        // As the driver calls it after a device error.
        trampoline(std::ptr::null_mut(), sys::CUDA_ERROR_ILLEGAL_ADDRESS, data);
        assert_eq!(
            Arc::strong_count(&signal),
            1,
            "the driver's reference is dropped"
        );
        assert!(matches!(lock(&signal.state).status, Some(Err(_))));
        assert!(
            !crate::release::in_host_fn(),
            "the host-function scope is left"
        );
    }

    #[test]
    fn an_error_status_comes_out_of_the_poll() {
        let (mut wait, signal) = pending();
        let e = crate::error::check(
            cuda_driver_sys::CUDA_ERROR_LAUNCH_FAILED,
            "cuStreamAddCallback",
        );
        signal.fire(e);
        let waker = Waker::from(Arc::new(Flag(AtomicBool::new(false))));
        let mut cx = TaskContext::from_waker(&waker);
        match wait.poll(&mut cx) {
            Poll::Ready(Err(e)) => assert!(e.is_sticky(), "{e}"),
            other => panic!("expected the callback's error, got {other:?}"),
        }
    }

    #[test]
    fn a_panicking_waker_is_caught_and_counted() {
        let (mut wait, signal) = pending();
        let waker = Waker::from(Arc::new(Panicking));
        let mut cx = TaskContext::from_waker(&waker);
        assert!(wait.poll(&mut cx).is_pending());
        let before = waker_panic_count();
        signal.fire(Ok(()));
        assert_eq!(waker_panic_count(), before + 1);
        assert!(
            matches!(wait.poll(&mut cx), Poll::Ready(Ok(()))),
            "the result is not lost"
        );
    }

    #[test]
    fn an_orphan_is_released_when_the_callback_runs_not_before() {
        struct Tell(Arc<AtomicBool>);
        impl Drop for Tell {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let (mut wait, signal) = pending();
        let dropped = Arc::new(AtomicBool::new(false));
        assert!(wait.orphan(Box::new(Tell(dropped.clone()))).is_none());
        drop(wait);
        assert!(
            !dropped.load(Ordering::SeqCst),
            "kept while the work may run"
        );
        // As the driver's thread would: inside a host function, the drop is deferred.
        crate::stream::run_host_fn(|| signal.fire(Ok(())));
        crate::release::wait_for_deferred_releases().unwrap();
        assert!(
            dropped.load(Ordering::SeqCst),
            "released once the callback ran"
        );
    }

    #[test]
    fn an_orphan_after_completion_is_dropped_at_once_and_without_a_callback_handed_back() {
        let (mut wait, signal) = pending();
        signal.fire(Ok(()));
        let kept = Arc::new(());
        assert!(wait.orphan(Box::new(kept.clone())).is_none());
        assert_eq!(Arc::strong_count(&kept), 1);
        let mut failed = Wait::failed(Error::InvalidArgument("test".into()));
        assert!(failed.orphan(Box::new(kept.clone())).is_some());
    }
}
