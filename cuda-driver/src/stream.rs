//! Streams: ordered queues of work on a device.

use std::any::Any;
use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};

use cuda_driver_macros::wraps;
use cuda_driver_sys as sys;

use crate::error::{check, report_drop_problem, Result};
use crate::release::{HostFnScope, SendRaw};
use crate::{Context, ErrorCode};

pub use crate::types::StreamFlags;

/// A stream (`CUstream`) created in a context, destroyed on drop: work queued on it runs in
/// order. It keeps its context alive and can be used from any thread (`Send + Sync`).
///
/// The default streams ([`Stream::legacy`], [`Stream::per_thread`], [`Stream::null`]) and
/// streams passed in as raw handles are [`StreamRef`]s: borrowed handles that deref to
/// `Stream` and destroy nothing.
#[wraps(CUstream)]
pub struct Stream {
    raw: sys::CUstream,
    ctx: Context,
}

// SAFETY: CUDA streams may be used from any host thread; the handle is destroyed once, in Drop.
unsafe impl Send for Stream {}
// SAFETY: every operation on a stream is thread-safe in the driver.
unsafe impl Sync for Stream {}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream")
            .field("raw", &self.raw)
            .field("context", &self.ctx.as_raw())
            .finish()
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let raw = SendRaw(self.raw);
        // SAFETY: `raw` was created by cuStreamCreate* (or handed over through from_raw) and
        // is owned by self; pending work completes before the driver releases it.
        self.ctx.release("cuStreamDestroy_v2", move || unsafe {
            sys::cuStreamDestroy_v2(raw.get())
        });
    }
}

/// A borrowed [`Stream`]: a default stream of a context, or a stream this crate did not
/// create. Derefs to `Stream`, so it goes wherever a `&Stream` does; dropping it destroys
/// nothing.
pub struct StreamRef<'a> {
    stream: ManuallyDrop<Stream>,
    _borrow: PhantomData<&'a Context>,
}

impl Deref for StreamRef<'_> {
    type Target = Stream;
    #[inline]
    fn deref(&self) -> &Stream {
        &self.stream
    }
}

impl Drop for StreamRef<'_> {
    fn drop(&mut self) {
        // SAFETY: the Stream inside is never used again; its context clone is dropped once,
        // here, and its raw handle (not ours) is not destroyed.
        unsafe { ptr::drop_in_place(&mut self.stream.ctx) };
    }
}

impl std::fmt::Debug for StreamRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("StreamRef").field(&*self.stream).finish()
    }
}

impl<'a> StreamRef<'a> {
    /// Borrows a stream of `ctx` by its raw handle (or one of the special handles
    /// `CU_STREAM_LEGACY`, `CU_STREAM_PER_THREAD`, null).
    ///
    /// # Safety
    /// `raw` is a live stream of `ctx` that stays alive for `'a`, or a special handle.
    pub unsafe fn from_raw(raw: sys::CUstream, ctx: &'a Context) -> StreamRef<'a> {
        StreamRef {
            stream: ManuallyDrop::new(Stream {
                raw,
                ctx: ctx.clone(),
            }),
            _borrow: PhantomData,
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
    #[wraps(cuStreamCreate)]
    #[track_caller]
    pub fn new(ctx: &Context, flags: StreamFlags) -> Result<Stream> {
        let _cur = ctx.enter()?;
        let mut raw = ptr::null_mut();
        check(
            // SAFETY: writes one CUstream; wrapped in the next statement.
            unsafe { sys::cuStreamCreate(&mut raw, flags.as_raw()) },
            "cuStreamCreate",
        )?;
        Ok(Stream {
            raw,
            ctx: ctx.clone(),
        })
    }

    /// Creates a stream with a priority; see [`Context::stream_priority_range`] for the range
    /// (lower numbers are higher priorities; values outside are clamped by the driver).
    #[wraps(cuStreamCreateWithPriority)]
    #[track_caller]
    pub fn with_priority(ctx: &Context, flags: StreamFlags, priority: i32) -> Result<Stream> {
        let _cur = ctx.enter()?;
        let mut raw = ptr::null_mut();
        check(
            // SAFETY: writes one CUstream; wrapped in the next statement.
            unsafe { sys::cuStreamCreateWithPriority(&mut raw, flags.as_raw(), priority) },
            "cuStreamCreateWithPriority",
        )?;
        Ok(Stream {
            raw,
            ctx: ctx.clone(),
        })
    }

    /// The legacy default stream (`CU_STREAM_LEGACY`) of `ctx`: it synchronises with every
    /// blocking stream of the context. A borrowed handle.
    #[doc(alias = "CU_STREAM_LEGACY")]
    pub fn legacy(ctx: &Context) -> StreamRef<'_> {
        // SAFETY: a special handle, valid for as long as the context.
        unsafe { StreamRef::from_raw(sys::CU_STREAM_LEGACY, ctx) }
    }

    /// The per-thread default stream (`CU_STREAM_PER_THREAD`) of `ctx`: one per host thread,
    /// not synchronising with other threads' default streams. A borrowed handle. It names a
    /// different stream on each thread, so it cannot order memory freed in stream order
    /// ([`AsyncDeviceBuffer`](crate::AsyncDeviceBuffer) refuses it).
    #[doc(alias = "CU_STREAM_PER_THREAD")]
    pub fn per_thread(ctx: &Context) -> StreamRef<'_> {
        // SAFETY: a special handle, valid for as long as the context.
        unsafe { StreamRef::from_raw(sys::CU_STREAM_PER_THREAD, ctx) }
    }

    /// The null stream (handle 0) of `ctx`: the legacy default stream, or the per-thread one
    /// with the `per-thread-default-stream` feature. A borrowed handle.
    pub fn null(ctx: &Context) -> StreamRef<'_> {
        // SAFETY: the null handle is valid for as long as the context.
        unsafe { StreamRef::from_raw(ptr::null_mut(), ctx) }
    }

    /// Takes ownership of a stream created in `ctx` with `cuStreamCreate*`; it is destroyed
    /// on drop. (A stream to borrow is a [`StreamRef::from_raw`].)
    ///
    /// # Safety
    /// `raw` is a live stream of `ctx` that nothing else destroys.
    pub unsafe fn from_raw(raw: sys::CUstream, ctx: &Context) -> Stream {
        Stream {
            raw,
            ctx: ctx.clone(),
        }
    }

    /// Gives up ownership: the caller destroys the returned stream.
    pub fn into_raw(self) -> sys::CUstream {
        let this = ManuallyDrop::new(self);
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
    #[wraps(cuStreamSynchronize)]
    #[track_caller]
    pub fn synchronize(&self) -> Result<()> {
        let _cur = self.ctx.enter()?;
        check(
            // SAFETY: the stream is alive while self is.
            unsafe { sys::cuStreamSynchronize(self.raw) },
            "cuStreamSynchronize",
        )
    }

    /// Whether all work queued on the stream is done, without blocking.
    ///
    /// Calls `cuStreamQuery` (`CUDA_ERROR_NOT_READY` is `Ok(false)`).
    #[wraps(cuStreamQuery)]
    #[track_caller]
    pub fn query(&self) -> Result<bool> {
        let _cur = self.ctx.enter()?;
        // SAFETY: the stream is alive while self is.
        match check(unsafe { sys::cuStreamQuery(self.raw) }, "cuStreamQuery") {
            Ok(()) => Ok(true),
            Err(e) if e.code() == Some(ErrorCode::NOT_READY) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The stream's priority.
    #[wraps(cuStreamGetPriority)]
    #[track_caller]
    pub fn priority(&self) -> Result<i32> {
        let _cur = self.ctx.enter()?;
        let mut p = 0;
        check(
            // SAFETY: writes one int.
            unsafe { sys::cuStreamGetPriority(self.raw, &mut p) },
            "cuStreamGetPriority",
        )?;
        Ok(p)
    }

    /// The stream's flags.
    #[wraps(cuStreamGetFlags)]
    #[track_caller]
    pub fn flags(&self) -> Result<StreamFlags> {
        let _cur = self.ctx.enter()?;
        let mut f = 0;
        check(
            // SAFETY: writes one unsigned int.
            unsafe { sys::cuStreamGetFlags(self.raw, &mut f) },
            "cuStreamGetFlags",
        )?;
        Ok(StreamFlags(f))
    }

    /// Queues a Rust closure to run on a driver thread once all earlier work on the stream
    /// is done; later work waits for it.
    ///
    /// CUDA forbids CUDA calls inside a host function. The crate makes them harmless: while
    /// the closure runs, every operation of this crate fails with
    /// [`Error::InHostCallback`](crate::Error::InHostCallback) before calling the driver, and
    /// CUDA objects the closure drops (captured buffers, the last handle of a context) are
    /// released on the crate's release thread once the closure has returned, not inside it.
    /// A panic in the closure is caught, logged (`log::warn!`) and counted in
    /// [`host_fn_panic_count`]; it never unwinds into the driver, and a panic payload whose
    /// own `Drop` panics is leaked rather than aborting the process.
    #[wraps(cuLaunchHostFunc)]
    #[track_caller]
    pub fn launch_host_fn<F: FnOnce() + Send + 'static>(&self, f: F) -> Result<()> {
        extern "C" fn trampoline<F: FnOnce() + Send + 'static>(data: *mut c_void) {
            // SAFETY: `data` is the Box<F> leaked by launch_host_fn, handed to the driver once
            // and called once.
            let f = unsafe { Box::from_raw(data.cast::<F>()) };
            let _scope = HostFnScope::enter();
            // The closure, and with it everything it captured, is consumed (dropped) inside
            // catch_unwind and inside the host-function scope.
            if let Err(payload) = catch_unwind(AssertUnwindSafe(f)) {
                host_fn_panicked(payload);
            }
        }
        let _cur = self.ctx.enter()?;
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

/// Counts and logs a panic caught in a host function, then drops its payload under a second
/// `catch_unwind`: a payload whose `Drop` panics is leaked, never allowed to unwind into the
/// driver (which would abort the process).
#[cold]
pub(crate) fn host_fn_panicked(payload: Box<dyn Any + Send>) {
    HOST_FN_PANICS.fetch_add(1, Ordering::Relaxed);
    let msg = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".into());
    log::warn!(target: "cuda_driver", "a host function panicked: {msg}");
    if let Err(second) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        report_drop_problem(
            &"the panic payload of a host function panicked while dropped; it is leaked",
        );
        std::mem::forget(second);
    }
}
