//! Host functions queued on a stream (`cuLaunchHostFunc`, of the reference's execution
//! control group): Rust closures that run on a driver thread in stream order. The machinery
//! they share with stream callbacks and graph host nodes (the host-function scope, panic
//! containment, user objects) is in `stream/`.

use std::ffi::c_void;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use crate::error::graph::GraphError;
use crate::error::{Error, Result};
use crate::handle::Handle;
use crate::stream::{retain_in_graph, run_host_fn, shared_host_fn_trampoline, Stream};

impl Stream {
    /// Queues a Rust closure to run on a driver thread once all earlier work on the stream
    /// is done; later work waits for it.
    ///
    /// CUDA forbids CUDA calls inside a host function. The crate makes them harmless: while
    /// the closure runs, every operation of this crate fails with
    /// [`Error::InHostCallback`] before calling the driver, and CUDA objects the closure drops
    /// (captured buffers, the last handle of a context) are released on the crate's release
    /// thread once the closure has returned, not inside it.
    /// A panic in the closure is caught, logged (`log::warn!`) and counted in
    /// [`host_fn_panic_count`]; it never unwinds into the driver, and a panic payload whose
    /// own `Drop` panics is leaked rather than aborting the process.
    ///
    /// # Stream capture
    ///
    /// A graph captured from the stream may run its host node many times, but an `FnOnce`
    /// runs once and is freed by its one call. So while the stream is being captured
    /// (`cuStreamIsCapturing`, asked on every call), this method refuses with
    /// [`GraphError::HostFnNotReplayable`] before calling the driver, and the capture stays
    /// valid; capture a closure with
    /// [`launch_host_fn_repeatable`](Self::launch_host_fn_repeatable) instead. Should the
    /// stream join a capture after that check all the same (another thread made it wait on an
    /// event of a capturing stream), the captured host node runs the closure at its first
    /// launch only, and does nothing at later ones: never a freed closure.
    #[wraps(cuLaunchHostFunc)]
    #[track_caller]
    pub fn launch_host_fn<F: FnOnce() + Send + 'static>(&self, f: F) -> Result<()> {
        let _cur = self.context().enter()?;
        if self.capture_status_raw()? != sys::CU_STREAM_CAPTURE_STATUS_NONE {
            return Err(Error::Graph(GraphError::HostFnNotReplayable {
                what: "Stream::launch_host_fn",
            }));
        }
        self.launch_host_fn_once(f)
    }

    /// Queues a closure that may run many times: once now, like
    /// [`launch_host_fn`](Self::launch_host_fn), or, while the stream is being captured, once
    /// per launch of every executable graph made from the captured graph.
    ///
    /// While capturing, the closure is owned by a CUDA user object (`cuUserObjectCreate`)
    /// whose reference is moved into the graph being captured (`cuGraphRetainUserObject`):
    /// the graph, its clones and every executable graph instantiated from them keep it alive,
    /// and it is dropped (on a driver thread, inside the host-function scope, so CUDA objects
    /// it captured are released on the crate's release thread) once the last of them is gone
    /// and their launches have finished. It is `Fn + Sync` because executable graphs made
    /// from one graph may run it concurrently. Panics are caught and counted as for
    /// [`launch_host_fn`](Self::launch_host_fn).
    ///
    /// Wraps `cuLaunchHostFunc`, `cuUserObjectCreate` and `cuGraphRetainUserObject`.
    #[doc(alias = "cuLaunchHostFunc")]
    #[track_caller]
    pub fn launch_host_fn_repeatable<F: Fn() + Send + Sync + 'static>(&self, f: F) -> Result<()> {
        let _cur = self.context().enter()?;
        match self.capture_graph()? {
            None => self.launch_host_fn_once(f),
            Some(graph) => {
                // SAFETY: `graph` is the graph being captured into, valid for the capture,
                // which lasts at least until this call returns.
                let data = unsafe { retain_in_graph(graph, f) }?;
                // SAFETY: the trampoline matches CUhostFn and only borrows `data`, an F that
                // the graph's user object keeps alive as long as any graph or exec runs it.
                call!(unsafe {
                    sys::cuLaunchHostFunc(
                        self.as_raw(),
                        Some(shared_host_fn_trampoline::<F>),
                        data.cast_mut().cast(),
                    )
                })
            }
        }
    }

    #[track_caller]
    fn launch_host_fn_once<F: FnOnce() + Send + 'static>(&self, f: F) -> Result<()> {
        // The closure waits in a table under a fresh id, which is all the driver gets: the
        // trampoline takes it out, so a second run of the same host function (its launch
        // captured into a graph after all, when another thread made the stream join a capture
        // between the check above and this call) finds nothing and does nothing, instead of
        // calling a freed closure.
        let id = once_fns::insert(Box::new(f));
        // SAFETY: the trampoline matches CUhostFn; `id` is a plain integer, no pointer.
        let r = call!(unsafe {
            sys::cuLaunchHostFunc(self.as_raw(), Some(once_fn_trampoline), id as *mut c_void)
        });
        if r.is_err() {
            // The driver rejected the call and will never run the trampoline.
            drop(once_fns::take(id));
        }
        r
    }
}

/// The closures of one-shot host functions, by id, until their host function runs.
pub(crate) mod once_fns {
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    pub(crate) type OnceFn = Box<dyn FnOnce() + Send>;

    static NEXT: AtomicUsize = AtomicUsize::new(1);
    static TABLE: Mutex<Option<HashMap<usize, OnceFn>>> = Mutex::new(None);

    /// Stores `f` under a new id.
    pub(crate) fn insert(f: OnceFn) -> usize {
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        TABLE
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(HashMap::new)
            .insert(id, f);
        id
    }

    /// Takes the closure stored under `id` out, if it is still there.
    pub(crate) fn take(id: usize) -> Option<OnceFn> {
        TABLE
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
            .and_then(|t| t.remove(&id))
    }

    #[cfg(test)]
    pub(crate) fn len() -> usize {
        TABLE
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map_or(0, |t| t.len())
    }
}

/// The host function of [`Stream::launch_host_fn`]: runs the closure stored under the id
/// `data`, once; a later run of the same host function finds nothing and returns.
pub(crate) extern "C" fn once_fn_trampoline(data: *mut c_void) {
    // The closure, and with it everything it captured, is consumed (dropped) inside
    // run_host_fn: under catch_unwind and inside the host-function scope.
    run_host_fn(|| {
        if let Some(f) = once_fns::take(data as usize) {
            f();
        }
    });
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;

    #[test]
    fn a_one_shot_host_function_run_twice_runs_its_closure_once() {
        let calls = Arc::new(AtomicUsize::new(0));
        let c = calls.clone();
        let before = once_fns::len();
        let id = once_fns::insert(Box::new(move || {
            c.fetch_add(1, Ordering::SeqCst);
        }));
        assert_eq!(once_fns::len(), before + 1);
        // As the driver would call it: once, then again from a replayed graph.
        once_fn_trampoline(id as *mut c_void);
        once_fn_trampoline(id as *mut c_void);
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        // The closure, and what it captured, is gone after the first run.
        assert_eq!(Arc::strong_count(&calls), 1);
        assert_eq!(once_fns::len(), before);
        // An id never given out is nothing to run.
        once_fn_trampoline(usize::MAX as *mut c_void);
    }
}
