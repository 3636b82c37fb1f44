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
//! * [`wait_for_deferred_releases`] returns once every release deferred so far has run, so a
//!   program that counts memory knows when it is back.
//!
//! [`Stream::launch_host_fn`]: crate::Stream::launch_host_fn

use std::cell::Cell;
use std::panic::Location;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Condvar, Mutex, MutexGuard};

use crate::error::{Error, Result};

thread_local! {
    static IN_HOST_FN: Cell<bool> = const { Cell::new(false) };
    /// Set on the release thread.
    static ON_RELEASE_THREAD: Cell<bool> = const { Cell::new(false) };
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

/// How far the deferred releases have got: `deferred` counts the releases handed to the
/// release thread, `finished` those that have run (or were given up: leaked because no
/// thread could take them). Both only grow; [`FINISHED`] is notified on every change of
/// `finished`.
struct Progress {
    deferred: u64,
    finished: u64,
}

static PROGRESS: Mutex<Progress> = Mutex::new(Progress {
    deferred: 0,
    finished: 0,
});
static FINISHED: Condvar = Condvar::new();

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Counts one deferred release as finished (run or given up) and wakes the waiters.
fn finish_one() {
    lock(&PROGRESS).finished += 1;
    FINISHED.notify_all();
}

/// Waits until every release deferred out of a host function so far has run.
///
/// CUDA objects dropped inside a host function ([`Stream::launch_host_fn`], a graph's host
/// node) are released later, on the crate's release thread (see
/// [`Stream::launch_host_fn`]). A program that counts memory (free device memory, a pool's
/// used memory) calls this after the host function has run (after synchronizing its
/// stream) to know that those releases are done; a stream-ordered free is then queued, and
/// done once its stream is synchronized too. Returns at once when nothing was deferred;
/// never polls (a condition variable wakes it).
///
/// Releases deferred after the call begins may or may not be waited for. On the release
/// thread itself (code run by a deferred release, such as the `Drop` of something it
/// frees) it returns at once: the releases before the running one have all run.
///
/// # Errors
///
/// [`Error::InHostCallback`] inside a host function, before waiting: the host function
/// holds its stream back, and a release may wait for that stream.
///
/// [`Stream::launch_host_fn`]: crate::Stream::launch_host_fn
#[track_caller]
pub fn wait_for_deferred_releases() -> Result<()> {
    if in_host_fn() {
        return Err(Error::InHostCallback {
            location: Location::caller(),
        });
    }
    if ON_RELEASE_THREAD.with(Cell::get) {
        return Ok(());
    }
    let mut progress = lock(&PROGRESS);
    let target = progress.deferred;
    while progress.finished < target {
        progress = FINISHED
            .wait(progress)
            .unwrap_or_else(|poisoned| poisoned.into_inner());
    }
    Ok(())
}

/// The release thread: runs the deferred releases in order, each under
/// [`callback::guard`](crate::callback::guard), so that a release that panics (it should
/// not: `Drop` reports and counts failures) is counted in
/// [`drop_error_count`](crate::error::drop_error_count) and the thread goes on.
fn release_thread(jobs: std::sync::mpsc::Receiver<Job>) {
    ON_RELEASE_THREAD.with(|t| t.set(true));
    for job in jobs {
        if crate::callback::guard(job).is_none() {
            crate::error::report_drop_problem(&"a deferred release panicked");
        }
        finish_one();
    }
}

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
    // Counted before it is handed over, so that a waiter that sees it also waits for it.
    lock(&PROGRESS).deferred += 1;
    if slot.is_none() {
        let (tx, rx) = channel::<Job>();
        let spawned = std::thread::Builder::new()
            .name("cuda-driver-release".into())
            .spawn(move || release_thread(rx));
        match spawned {
            Ok(_) => *slot = Some(tx),
            Err(e) => {
                // No thread: leak the object rather than call CUDA inside the host function.
                crate::error::report_drop_problem(&format_args!(
                    "cannot start the release thread ({e}); a CUDA object dropped inside a \
                     host function is leaked"
                ));
                std::mem::forget(job);
                finish_one();
                return;
            }
        }
    }
    if let Some(tx) = slot.as_ref() {
        if let Err(e) = tx.send(job) {
            // The thread has ended (it does not: every job runs under a guard); start a new
            // one next time.
            *slot = None;
            std::mem::forget(e.0);
            crate::error::report_drop_problem(&"the release thread has ended; an object is leaked");
            finish_one();
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
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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

    #[test]
    fn waiting_returns_once_every_deferred_release_has_run() {
        // Releases held back by a gate: the wait cannot return before the gate opens.
        let (open, gate) = channel::<()>();
        let ran = Arc::new(AtomicUsize::new(0));
        {
            let _scope = HostFnScope::enter();
            let r = ran.clone();
            release(move || {
                let _ = gate.recv();
                r.fetch_add(1, Ordering::SeqCst);
            });
            for _ in 0..3 {
                let r = ran.clone();
                release(move || {
                    r.fetch_add(1, Ordering::SeqCst);
                });
            }
        }
        let waiter = std::thread::spawn(move || {
            wait_for_deferred_releases().unwrap();
            ran.load(Ordering::SeqCst)
        });
        open.send(()).unwrap();
        assert_eq!(
            waiter.join().unwrap(),
            4,
            "every release ran before the wait returned"
        );
        // Nothing deferred since: returns at once.
        wait_for_deferred_releases().unwrap();
    }

    #[test]
    fn waiting_is_refused_inside_a_host_function() {
        let _scope = HostFnScope::enter();
        assert!(matches!(
            wait_for_deferred_releases(),
            Err(Error::InHostCallback { .. })
        ));
    }

    #[test]
    fn a_panicking_release_is_counted_and_the_release_thread_goes_on() {
        let errors = crate::error::drop_error_count();
        let ran = Arc::new(AtomicBool::new(false));
        {
            let _scope = HostFnScope::enter();
            release(|| panic!("a release that panics"));
            let r = ran.clone();
            release(move || r.store(true, Ordering::SeqCst));
        }
        wait_for_deferred_releases().unwrap();
        assert!(
            ran.load(Ordering::SeqCst),
            "the release after the panic ran"
        );
        assert!(crate::error::drop_error_count() > errors);
    }
}
