//! Host functions and deferred releases.
//!
//! CUDA forbids CUDA calls inside a host function ([`Stream::launch_host_fn`], a graph's host
//! node): the driver runs it on one of its own threads, and a CUDA call there may deadlock
//! or fail. A Rust closure can still reach one, by dropping a CUDA object it captured (a
//! buffer, the last handle of a context) or by calling a method of one. This module makes
//! both harmless:
//!
//! * While a host function runs, its thread is marked ([`HostFnScope`]).
//! * Every operation of the crate that would call the driver first enters its context
//!   ([`Context::enter`](crate::Context)), which refuses on a marked thread with
//!   [`Error::InHostCallback`](crate::Error::InHostCallback), before any driver call.
//! * Every `Drop` releases through [`release`], which on a marked thread hands the release to
//!   the crate's release thread instead (`cuda-driver-release`, started on first use) and
//!   returns at once; there it runs as soon as the host function has returned.
//!
//! [`Stream::launch_host_fn`]: crate::Stream::launch_host_fn

use std::cell::Cell;
use std::sync::mpsc::{channel, Sender};
use std::sync::Mutex;

thread_local! {
    static IN_HOST_FN: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread is running a host function of this crate.
#[inline]
pub(crate) fn in_host_fn() -> bool {
    IN_HOST_FN.with(Cell::get)
}

/// Marks the calling thread as running a host function until dropped.
pub(crate) struct HostFnScope {
    was: bool,
}

impl HostFnScope {
    pub(crate) fn enter() -> HostFnScope {
        HostFnScope {
            was: IN_HOST_FN.with(|f| f.replace(true)),
        }
    }
}

impl Drop for HostFnScope {
    fn drop(&mut self) {
        IN_HOST_FN.with(|f| f.set(self.was));
    }
}

type Job = Box<dyn FnOnce() + Send>;

static RELEASE_THREAD: Mutex<Option<Sender<Job>>> = Mutex::new(None);

/// Runs `f` (a release: a driver call that frees something) now, or, inside a host
/// function, on the release thread. Allocates only in the deferred case.
#[inline]
pub(crate) fn release<F: FnOnce() + Send + 'static>(f: F) {
    if in_host_fn() {
        defer(Box::new(f));
    } else {
        f();
    }
}

#[cold]
#[inline(never)]
fn defer(job: Job) {
    let mut slot = match RELEASE_THREAD.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    };
    if slot.is_none() {
        let (tx, rx) = channel::<Job>();
        let spawned = std::thread::Builder::new()
            .name("cuda-driver-release".into())
            .spawn(move || {
                for job in rx {
                    // A release never panics (Drop reports and counts failures); a panic
                    // here would only end this thread, and the next defer starts another.
                    job();
                }
            });
        match spawned {
            Ok(_) => *slot = Some(tx),
            Err(e) => {
                // No thread: leak the object rather than call CUDA inside the host function.
                crate::error::report_drop_problem(&format_args!(
                    "cannot start the release thread ({e}); a CUDA object dropped inside a \
                     host function is leaked"
                ));
                std::mem::forget(job);
                return;
            }
        }
    }
    if let Some(tx) = slot.as_ref() {
        if let Err(e) = tx.send(job) {
            // The thread has ended (a panic in a release): start a new one next time.
            *slot = None;
            std::mem::forget(e.0);
            crate::error::report_drop_problem(&"the release thread has ended; an object is leaked");
        }
    }
}

/// A raw handle moved into a deferred release: raw pointers are not `Send`, driver handles
/// may be released from any thread.
pub(crate) struct SendRaw<T>(pub(crate) T);

impl<T> SendRaw<T> {
    /// The handle (a method, so that a closure captures the whole `SendRaw`, not its field).
    #[inline]
    pub(crate) fn get(self) -> T {
        self.0
    }
}

// SAFETY: only driver handles (CUstream, CUevent, ...) are wrapped, and the driver allows
// releasing them from any thread.
unsafe impl<T> Send for SendRaw<T> {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    #[test]
    fn releases_run_now_outside_host_functions() {
        let ran = Arc::new(AtomicBool::new(false));
        let r = ran.clone();
        release(move || r.store(true, Ordering::SeqCst));
        assert!(ran.load(Ordering::SeqCst));
    }

    #[test]
    fn releases_inside_host_functions_run_on_another_thread() {
        let (tx, rx) = channel();
        {
            let _scope = HostFnScope::enter();
            assert!(in_host_fn());
            let me = std::thread::current().id();
            release(move || {
                tx.send(std::thread::current().id() != me).unwrap();
            });
        }
        assert!(!in_host_fn());
        let on_other_thread = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("the deferred release ran");
        assert!(on_other_thread);
    }
}
