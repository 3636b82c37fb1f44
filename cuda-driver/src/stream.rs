//! Streams: ordered queues of work on a device.

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};

use cuda_driver_sys as sys;

use crate::error::{check, report_drop_error, Result};
use crate::{Context, ErrorCode, Event};

pub use crate::types::StreamFlags;

/// A stream (`CUstream`) of a context: work queued on it runs in order.
///
/// Created streams ([`Stream::new`]) are destroyed on drop. The default streams
/// ([`Stream::legacy`], [`Stream::per_thread`], [`Stream::null`]) are borrowed handles that
/// own nothing. Every stream keeps its context alive and can be used from any thread
/// (`Send + Sync`).
#[doc(alias = "CUstream")]
pub struct Stream {
    raw: sys::CUstream,
    ctx: Context,
    owned: bool,
}

// SAFETY: CUDA streams may be used from any host thread; the handle is destroyed once, in Drop.
unsafe impl Send for Stream {}
// SAFETY: every operation on a stream is thread-safe in the driver.
unsafe impl Sync for Stream {}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream")
            .field("raw", &self.raw)
            .field("owned", &self.owned)
            .finish()
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if self.owned && self.ctx.ensure_current_for_drop() {
            // SAFETY: `raw` was created by cuStreamCreate* and is owned by self; pending work
            // completes before the driver releases it.
            let r = unsafe { sys::cuStreamDestroy_v2(self.raw) };
            report_drop_error("cuStreamDestroy_v2", r);
        }
    }
}

static HOST_FN_PANICS: AtomicUsize = AtomicUsize::new(0);

/// How many host callbacks ([`Stream::launch_host_fn`]) have panicked in this process. The
/// panic is caught in the callback and never unwinds into the driver.
pub fn host_fn_panic_count() -> usize {
    HOST_FN_PANICS.load(Ordering::Relaxed)
}

impl Stream {
    /// Creates a stream in `ctx`.
    ///
    /// Wraps `cuStreamCreate`.
    #[doc(alias = "cuStreamCreate")]
    #[track_caller]
    pub fn new(ctx: &Context, flags: StreamFlags) -> Result<Stream> {
        ctx.ensure_current()?;
        let mut raw = ptr::null_mut();
        check(
            // SAFETY: writes one CUstream; wrapped in the next statement.
            unsafe { sys::cuStreamCreate(&mut raw, flags.as_raw()) },
            "cuStreamCreate",
        )?;
        Ok(Stream {
            raw,
            ctx: ctx.clone(),
            owned: true,
        })
    }

    /// Creates a stream with a priority; see [`Context::stream_priority_range`] for the range
    /// (lower numbers are higher priorities; values outside are clamped by the driver).
    ///
    /// Wraps `cuStreamCreateWithPriority`.
    #[doc(alias = "cuStreamCreateWithPriority")]
    #[track_caller]
    pub fn with_priority(ctx: &Context, flags: StreamFlags, priority: i32) -> Result<Stream> {
        ctx.ensure_current()?;
        let mut raw = ptr::null_mut();
        check(
            // SAFETY: writes one CUstream; wrapped in the next statement.
            unsafe { sys::cuStreamCreateWithPriority(&mut raw, flags.as_raw(), priority) },
            "cuStreamCreateWithPriority",
        )?;
        Ok(Stream {
            raw,
            ctx: ctx.clone(),
            owned: true,
        })
    }

    /// The legacy default stream (`CU_STREAM_LEGACY`) of `ctx`: it synchronises with every
    /// blocking stream of the context. A borrowed handle; dropping it does nothing.
    #[doc(alias = "CU_STREAM_LEGACY")]
    pub fn legacy(ctx: &Context) -> Stream {
        Stream {
            raw: sys::CU_STREAM_LEGACY,
            ctx: ctx.clone(),
            owned: false,
        }
    }

    /// The per-thread default stream (`CU_STREAM_PER_THREAD`) of `ctx`: one per host thread,
    /// not synchronising with other threads' default streams. A borrowed handle.
    #[doc(alias = "CU_STREAM_PER_THREAD")]
    pub fn per_thread(ctx: &Context) -> Stream {
        Stream {
            raw: sys::CU_STREAM_PER_THREAD,
            ctx: ctx.clone(),
            owned: false,
        }
    }

    /// The null stream (handle 0) of `ctx`: the legacy default stream, or the per-thread one
    /// with the `per-thread-default-stream` feature. A borrowed handle.
    pub fn null(ctx: &Context) -> Stream {
        Stream {
            raw: ptr::null_mut(),
            ctx: ctx.clone(),
            owned: false,
        }
    }

    /// Takes ownership of a stream created in `ctx` with `cuStreamCreate*`.
    ///
    /// # Safety
    /// `raw` is a live stream of `ctx` that nothing else destroys.
    pub unsafe fn from_raw(raw: sys::CUstream, ctx: &Context) -> Stream {
        Stream {
            raw,
            ctx: ctx.clone(),
            owned: true,
        }
    }

    /// Gives up ownership: the caller destroys the returned stream (if it was created).
    pub fn into_raw(self) -> sys::CUstream {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: `this` is never used or dropped again; the context clone is dropped once.
        unsafe { ptr::read(&this.ctx) };
        this.raw
    }

    /// The raw `CUstream`, valid while `self` lives.
    #[inline]
    pub fn as_raw(&self) -> sys::CUstream {
        self.raw
    }

    /// The stream's context.
    #[inline]
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// Blocks until all work queued on the stream is done.
    ///
    /// Wraps `cuStreamSynchronize`.
    #[doc(alias = "cuStreamSynchronize")]
    #[track_caller]
    pub fn synchronize(&self) -> Result<()> {
        self.ctx.ensure_current()?;
        check(
            // SAFETY: the stream is alive while self is.
            unsafe { sys::cuStreamSynchronize(self.raw) },
            "cuStreamSynchronize",
        )
    }

    /// Whether all work queued on the stream is done, without blocking.
    ///
    /// Wraps `cuStreamQuery` (`CUDA_ERROR_NOT_READY` is `Ok(false)`).
    #[doc(alias = "cuStreamQuery")]
    #[track_caller]
    pub fn query(&self) -> Result<bool> {
        self.ctx.ensure_current()?;
        // SAFETY: the stream is alive while self is.
        match check(unsafe { sys::cuStreamQuery(self.raw) }, "cuStreamQuery") {
            Ok(()) => Ok(true),
            Err(e) if e.code() == Some(ErrorCode::NOT_READY) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Makes later work on this stream wait until `event` has completed.
    ///
    /// Wraps `cuStreamWaitEvent`.
    #[doc(alias = "cuStreamWaitEvent")]
    #[track_caller]
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        self.ctx.ensure_current()?;
        check(
            // SAFETY: stream and event are alive; flags must be 0.
            unsafe { sys::cuStreamWaitEvent(self.raw, event.as_raw(), 0) },
            "cuStreamWaitEvent",
        )
    }

    /// The stream's priority.
    ///
    /// Wraps `cuStreamGetPriority`.
    #[doc(alias = "cuStreamGetPriority")]
    #[track_caller]
    pub fn priority(&self) -> Result<i32> {
        self.ctx.ensure_current()?;
        let mut p = 0;
        check(
            // SAFETY: writes one int.
            unsafe { sys::cuStreamGetPriority(self.raw, &mut p) },
            "cuStreamGetPriority",
        )?;
        Ok(p)
    }

    /// The stream's flags.
    ///
    /// Wraps `cuStreamGetFlags`.
    #[doc(alias = "cuStreamGetFlags")]
    #[track_caller]
    pub fn flags(&self) -> Result<StreamFlags> {
        self.ctx.ensure_current()?;
        let mut f = 0;
        check(
            // SAFETY: writes one unsigned int.
            unsafe { sys::cuStreamGetFlags(self.raw, &mut f) },
            "cuStreamGetFlags",
        )?;
        Ok(StreamFlags(f))
    }

    /// Queues a Rust closure to run on a driver thread once all earlier work on the stream
    /// is done; later work waits for it. The closure must not call CUDA functions (a driver
    /// rule for host functions). A panic in it is caught, reported on stderr and counted in
    /// [`host_fn_panic_count`]; it never unwinds into the driver.
    ///
    /// Wraps `cuLaunchHostFunc`.
    #[doc(alias = "cuLaunchHostFunc")]
    #[track_caller]
    pub fn launch_host_fn<F: FnOnce() + Send + 'static>(&self, f: F) -> Result<()> {
        extern "C" fn trampoline<F: FnOnce() + Send + 'static>(data: *mut c_void) {
            // SAFETY: `data` is the Box<F> leaked by launch_host_fn, handed to the driver once
            // and called once.
            let f = unsafe { Box::from_raw(data.cast::<F>()) };
            if let Err(payload) = catch_unwind(AssertUnwindSafe(f)) {
                HOST_FN_PANICS.fetch_add(1, Ordering::Relaxed);
                let msg = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "non-string panic payload".into());
                eprintln!(
                    "cuda-driver: a host function queued with launch_host_fn panicked: {msg}"
                );
            }
        }
        self.ctx.ensure_current()?;
        let data = Box::into_raw(Box::new(f)).cast::<c_void>();
        // SAFETY: the trampoline matches CUhostFn and takes back ownership of `data`.
        let r = unsafe { sys::cuLaunchHostFunc(self.raw, Some(trampoline::<F>), data) };
        if r != sys::CUDA_SUCCESS {
            // SAFETY: the driver rejected the call, so it will never run the trampoline; the
            // box is still ours.
            drop(unsafe { Box::from_raw(data.cast::<F>()) });
        }
        check(r, "cuLaunchHostFunc")
    }
}
