//! The legacy stream callback (`cuStreamAddCallback`): a closure run on a driver thread once
//! the work queued before it is done, told whether that work failed.

use std::ffi::c_void;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use crate::error::graph::GraphError;
use crate::error::{check, Error, Result};
use crate::handle::Handle;
use crate::stream::{run_host_fn, Stream};

impl Stream {
    /// Queues `f` to run on a driver thread once all work queued on the stream before it is
    /// done; later work waits for it. `f` receives `Ok(())`, or the error of earlier work
    /// (a sticky error, as the status `cuStreamAddCallback` passes).
    ///
    /// The same rules as [`launch_host_fn`](Stream::launch_host_fn) apply: while `f` runs,
    /// this crate's operations fail with [`Error::InHostCallback`], CUDA objects it drops are
    /// released on the crate's release thread, and a panic is caught and counted in
    /// [`host_fn_panic_count`](crate::stream::host_fn_panic_count). It runs once, so it is refused
    /// with [`GraphError::HostFnNotReplayable`] while the stream is being captured (CUDA does not
    /// capture callbacks either). Prefer `launch_host_fn` in new code.
    #[wraps(cuStreamAddCallback)]
    #[track_caller]
    pub fn add_callback<F: FnOnce(Result<()>) + Send + 'static>(&self, f: F) -> Result<()> {
        extern "C" fn trampoline<F: FnOnce(Result<()>) + Send + 'static>(
            _stream: sys::CUstream,
            status: sys::CUresult,
            data: *mut c_void,
        ) {
            run_host_fn(|| {
                // SAFETY: `data` is the Box<F> leaked by add_callback, handed to the driver
                // once, which calls the callback exactly once.
                let f = unsafe { Box::from_raw(data.cast::<F>()) };
                f(check(status, "cuStreamAddCallback"));
            });
        }
        let _cur = self.context().enter()?;
        if self.capture_status_raw()? != sys::CU_STREAM_CAPTURE_STATUS_NONE {
            return Err(Error::Graph(GraphError::HostFnNotReplayable {
                what: "Stream::add_callback",
            }));
        }
        let data = Box::into_raw(Box::new(f)).cast::<c_void>();
        // SAFETY: the trampoline matches CUstreamCallback and takes back ownership of `data`;
        // flags must be 0.
        let r = call!(unsafe {
            sys::cuStreamAddCallback(self.as_raw(), Some(trampoline::<F>), data, 0)
        });
        if r.is_err() {
            // SAFETY: the driver refused the call and will never run the trampoline; the box
            // is still ours.
            drop(unsafe { Box::from_raw(data.cast::<F>()) });
        }
        r
    }
}
