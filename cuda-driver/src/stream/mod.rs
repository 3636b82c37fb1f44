//! Streams: ordered queues of work on a device.

use std::any::Any;
use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use crate::callback;
use crate::context::Context;
use crate::error::{report_drop_problem, Result};
use crate::handle::{give_up, Handle, OwnedHandle};
use crate::release::{HostFnScope, SendRaw};
use crate::types::AccessProperty;
use crate::types::ErrorCode;

use crate::types::StreamFlags;

pub(crate) mod attr;
mod handoff;
pub(crate) mod host_fn;

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
    /// The event recorded for hand-offs to other streams (see `handoff.rs`).
    handoff: handoff::HandoffEvent,
}

// SAFETY: CUDA streams may be used from any host thread; the handle is destroyed once, in Drop.
// The hand-off event is an owned CUevent (Send + Sync) in a `OnceLock`.
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
///
/// The deref is shared only (`Stream` is not `Clone`, and its `&self` methods neither destroy
/// nor give up the handle), so no owned `Stream` can be moved out of a borrowed one:
///
/// ```compile_fail,E0596
/// # fn f(ctx: &cuda_driver::Context, mine: &mut cuda_driver::Stream) {
/// let mut legacy = cuda_driver::Stream::legacy(ctx);
/// std::mem::swap(&mut *legacy, mine); // `mine` would then destroy CU_STREAM_LEGACY
/// # }
/// ```
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
        // SAFETY: the Stream inside is never used again; its hand-off event (ours) and its
        // context clone are dropped once, here, and its raw handle (not ours) is not destroyed.
        unsafe {
            ptr::drop_in_place(&mut self.stream.handoff);
            ptr::drop_in_place(&mut self.stream.ctx);
        }
    }
}

impl std::fmt::Debug for StreamRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("StreamRef").field(&*self.stream).finish()
    }
}

impl<'a> StreamRef<'a> {
    /// Borrows a stream of `ctx` by its raw handle (or one of the special handles
    /// `CU_STREAM_LEGACY`, `CU_STREAM_PER_THREAD`, null); dropping the borrow destroys nothing.
    ///
    /// # Safety
    /// `raw` is a live stream of `ctx` that stays alive for `'a`, or a special handle.
    pub unsafe fn borrow_raw(raw: sys::CUstream, ctx: &'a Context) -> StreamRef<'a> {
        StreamRef {
            stream: ManuallyDrop::new(Stream {
                raw,
                ctx: ctx.clone(),
                handoff: handoff::HandoffEvent::new(),
            }),
            _borrow: PhantomData,
        }
    }
}

impl Handle for StreamRef<'_> {
    type Raw = sys::CUstream;

    /// The raw `CUstream` (or special handle), valid for the borrow.
    #[inline]
    fn as_raw(&self) -> sys::CUstream {
        self.stream.raw
    }
}

impl Handle for Stream {
    type Raw = sys::CUstream;

    /// The raw `CUstream`, valid while `self` lives.
    #[inline]
    fn as_raw(&self) -> sys::CUstream {
        self.raw
    }
}

impl OwnedHandle for Stream {
    type Parent<'p> = &'p Context;

    /// Takes ownership of a stream created in `ctx` with `cuStreamCreate*`; it is destroyed
    /// on drop. (A stream to borrow is a [`StreamRef::borrow_raw`].)
    ///
    /// # Safety
    /// `raw` is a live stream of `ctx` that nothing else destroys.
    unsafe fn from_raw(raw: sys::CUstream, ctx: &Context) -> Stream {
        Stream {
            raw,
            ctx: ctx.clone(),
            handoff: handoff::HandoffEvent::new(),
        }
    }

    /// Gives up ownership: the caller destroys the returned stream. The hand-off event is
    /// destroyed first, before the caller may destroy the stream.
    fn into_raw(self) -> sys::CUstream {
        give_up!(self, raw; drop(handoff, ctx))
    }
}

static HOST_FN_PANICS: AtomicUsize = AtomicUsize::new(0);

/// How many host callbacks have panicked in this process: host functions
/// ([`Stream::launch_host_fn`], [`Stream::add_callback`], graph host nodes) and the
/// destructors of the values kept for them (by user objects, or by an executable graph for
/// [`GraphExec::set_host_node`](crate::graph::GraphExec::set_host_node): the `Drop` of a closure's
/// captures). The panic is caught where it happens and never unwinds into the driver or out
/// of a `Drop`; its report goes to the [`log`](https://docs.rs/log) crate, and a logger that
/// panics on it is caught too (counted in [`logger_panic_count`](crate::error::logger_panic_count)).
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
        call!(
            // SAFETY: writes one CUstream; wrapped in the next statement.
            unsafe { sys::cuStreamCreate(&mut raw, flags.as_raw()) },
        )?;
        Ok(Stream {
            raw,
            ctx: ctx.clone(),
            handoff: handoff::HandoffEvent::new(),
        })
    }

    /// Creates a stream with a priority; see [`Context::stream_priority_range`] for the range
    /// (lower numbers are higher priorities; values outside are clamped by the driver).
    #[wraps(cuStreamCreateWithPriority)]
    #[track_caller]
    pub fn with_priority(ctx: &Context, flags: StreamFlags, priority: i32) -> Result<Stream> {
        let _cur = ctx.enter()?;
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: writes one CUstream; wrapped in the next statement.
            unsafe { sys::cuStreamCreateWithPriority(&mut raw, flags.as_raw(), priority) },
        )?;
        Ok(Stream {
            raw,
            ctx: ctx.clone(),
            handoff: handoff::HandoffEvent::new(),
        })
    }

    /// The legacy default stream (`CU_STREAM_LEGACY`) of `ctx`: it synchronises with every
    /// blocking stream of the context. A borrowed handle.
    #[doc(alias = "CU_STREAM_LEGACY")]
    pub fn legacy(ctx: &Context) -> StreamRef<'_> {
        // SAFETY: a special handle, valid for as long as the context.
        unsafe { StreamRef::borrow_raw(sys::CU_STREAM_LEGACY, ctx) }
    }

    /// The per-thread default stream (`CU_STREAM_PER_THREAD`) of `ctx`: one per host thread,
    /// not synchronising with other threads' default streams. A borrowed handle. It names a
    /// different stream on each thread, so it cannot order memory freed in stream order
    /// ([`AsyncDeviceBuffer`](crate::memory::pool::AsyncDeviceBuffer) refuses it).
    #[doc(alias = "CU_STREAM_PER_THREAD")]
    pub fn per_thread(ctx: &Context) -> StreamRef<'_> {
        // SAFETY: a special handle, valid for as long as the context.
        unsafe { StreamRef::borrow_raw(sys::CU_STREAM_PER_THREAD, ctx) }
    }

    /// The null stream (handle 0) of `ctx`: the legacy default stream, or the per-thread one
    /// with the `per-thread-default-stream` feature. A borrowed handle.
    pub fn null(ctx: &Context) -> StreamRef<'_> {
        // SAFETY: the null handle is valid for as long as the context.
        unsafe { StreamRef::borrow_raw(ptr::null_mut(), ctx) }
    }

    /// The stream's context.
    #[inline]
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// The stream's context made current for one call that takes its context from the
    /// stream (see [`Context::enter_for_stream_call`]): nothing on a created stream.
    #[inline]
    #[track_caller]
    pub(crate) fn enter_for_call(&self) -> Result<crate::context::Current<'_>> {
        self.ctx.enter_for_stream_call(self.raw)
    }

    /// Blocks until all work queued on the stream is done.
    #[wraps(cuStreamSynchronize)]
    #[track_caller]
    pub fn synchronize(&self) -> Result<()> {
        // The driver takes the context from a created stream (GPU test
        // `context::stream_calls_run_in_the_streams_context_whatever_is_current`).
        let _cur = self.enter_for_call()?;
        call!(
            // SAFETY: the stream is alive while self is.
            unsafe { sys::cuStreamSynchronize(self.raw) },
        )
    }

    /// Whether all work queued on the stream is done, without blocking.
    ///
    /// Calls `cuStreamQuery` (`CUDA_ERROR_NOT_READY` is `Ok(false)`).
    #[wraps(cuStreamQuery)]
    #[track_caller]
    pub fn query(&self) -> Result<bool> {
        // As for `synchronize`.
        let _cur = self.enter_for_call()?;
        // SAFETY: the stream is alive while self is.
        match call!(unsafe { sys::cuStreamQuery(self.raw) }) {
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
        call!(
            // SAFETY: writes one int.
            unsafe { sys::cuStreamGetPriority(self.raw, &mut p) },
        )?;
        Ok(p)
    }

    /// The stream's flags.
    #[wraps(cuStreamGetFlags)]
    #[track_caller]
    pub fn flags(&self) -> Result<StreamFlags> {
        let _cur = self.ctx.enter()?;
        let mut f = 0;
        call!(
            // SAFETY: writes one unsigned int.
            unsafe { sys::cuStreamGetFlags(self.raw, &mut f) },
        )?;
        Ok(StreamFlags(f))
    }

    /// The capture status of the stream (`cuStreamIsCapturing`), raw.
    #[track_caller]
    pub(crate) fn capture_status_raw(&self) -> Result<sys::CUstreamCaptureStatus> {
        let mut status = sys::CU_STREAM_CAPTURE_STATUS_NONE;
        call!(
            // SAFETY: the stream is alive; writes one enum value.
            unsafe { sys::cuStreamIsCapturing(self.raw, &mut status) },
        )?;
        Ok(status)
    }

    /// The graph this stream is capturing into, or `None` when it is not capturing
    /// (`cuStreamGetCaptureInfo`, CUDA 11.3 ABI). The caller has entered the context.
    #[track_caller]
    pub(crate) fn capture_graph(&self) -> Result<Option<sys::CUgraph>> {
        let RawCaptureInfo { status, graph, .. } = self.capture_info_raw()?;
        Ok((status == sys::CU_STREAM_CAPTURE_STATUS_ACTIVE && !graph.is_null()).then_some(graph))
    }

    /// The stream's capture state as the driver writes it (`cuStreamGetCaptureInfo`, CUDA
    /// 11.3 ABI): the one reader behind [`capture_info`](Self::capture_info), the captured
    /// graph and a capture's dependencies. The caller has entered the context.
    #[track_caller]
    pub(crate) fn capture_info_raw(&self) -> Result<RawCaptureInfo> {
        let mut info = RawCaptureInfo {
            status: sys::CU_STREAM_CAPTURE_STATUS_NONE,
            id: 0,
            graph: ptr::null_mut(),
            deps: ptr::null(),
            dependency_count: 0,
        };
        call!(
            // SAFETY: the stream is alive; writes the status, id, graph, a driver-owned
            // dependency array pointer and its length.
            unsafe {
                crate::entry_point::newer::cuStreamGetCaptureInfo_v2()?(
                    self.raw,
                    &mut info.status,
                    &mut info.id,
                    &mut info.graph,
                    &mut info.deps,
                    &mut info.dependency_count,
                )
            },
        )?;
        Ok(info)
    }
}

/// What `cuStreamGetCaptureInfo` writes ([`Stream::capture_info_raw`]).
pub(crate) struct RawCaptureInfo {
    pub(crate) status: sys::CUstreamCaptureStatus,
    pub(crate) id: u64,
    pub(crate) graph: sys::CUgraph,
    /// The driver's array of the nodes the next captured operation depends on, valid until
    /// the next call on the stream (null or dangling when `dependency_count` is 0).
    pub(crate) deps: *const sys::CUgraphNode,
    pub(crate) dependency_count: usize,
}

/// The host function of a closure owned by a user object: borrows it, never frees it.
pub(crate) extern "C" fn shared_host_fn_trampoline<F: Fn() + Send + Sync + 'static>(
    data: *mut c_void,
) {
    run_host_fn(|| {
        // SAFETY: `data` is the F that `retain_in_graph` boxed; the user object that owns it
        // is held by every graph and exec that can run this host function, so it is alive.
        let f = unsafe { &*data.cast::<F>() };
        f();
    });
}

/// The destructor of a user object made by [`retain_in_graph`]: drops the boxed value on the
/// driver's thread, through [`run_host_fn`] (CUDA objects it held are released on the
/// crate's release thread; a panic is caught and counted).
extern "C" fn user_object_destroy<T: Send + Sync + 'static>(data: *mut c_void) {
    run_host_fn(|| {
        // SAFETY: `data` is the Box<T> leaked by `retain_in_graph`; the driver calls the
        // destructor once, after the last reference is gone.
        drop(unsafe { Box::from_raw(data.cast::<T>()) });
    });
}

/// Boxes `value`, makes it a CUDA user object (`cuUserObjectCreate`) and moves the one
/// reference into `graph` (`cuGraphRetainUserObject` with `CU_GRAPH_USER_OBJECT_MOVE`): the
/// value then lives as long as `graph`, its clones and the executable graphs made from them
/// (and their launches). Returns the value's stable address.
///
/// # Safety
/// `graph` is a live graph (also one being captured into).
#[track_caller]
pub(crate) unsafe fn retain_in_graph<T: Send + Sync + 'static>(
    graph: sys::CUgraph,
    value: T,
) -> Result<*const T> {
    let data = Box::into_raw(Box::new(value));
    let mut obj = ptr::null_mut();
    // SAFETY: `data` is a live Box<T>; the destructor takes it back once; flags as required.
    let r = call!(unsafe {
        sys::cuUserObjectCreate(
            &mut obj,
            data.cast(),
            Some(user_object_destroy::<T>),
            1,
            sys::CU_USER_OBJECT_NO_DESTRUCTOR_SYNC,
        )
    });
    if r.is_err() {
        // SAFETY: no user object owns the box: it is still ours.
        drop(unsafe { Box::from_raw(data) });
        r?;
    }
    let r = call!(
        // SAFETY: `graph` is live (the caller's guarantee); moves our one reference.
        unsafe { sys::cuGraphRetainUserObject(graph, obj, 1, sys::CU_GRAPH_USER_OBJECT_MOVE) }
    );
    if r.is_err() {
        // SAFETY: the reference is still ours: releasing it runs the destructor, which frees
        // the box (asynchronously, on a driver thread).
        unsafe { sys::cuUserObjectRelease(obj, 1) };
        r?;
    }
    Ok(data)
}

static CAPTURES: AtomicUsize = AtomicUsize::new(0);

/// Counts a stream capture begun by this crate (see [`keep_in_capture`]).
pub(crate) fn capture_begun() {
    CAPTURES.fetch_add(1, Ordering::Relaxed);
}

/// Counts a stream capture ended (successfully or not) by this crate.
pub(crate) fn capture_ended() {
    let _ = CAPTURES.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
}

/// Whether a stream capture begun by this crate may be in progress anywhere in the process.
#[inline(always)]
pub(crate) fn captures_active() -> bool {
    CAPTURES.load(Ordering::Relaxed) != 0
}

/// While `stream` is being captured, moves `keep()` (a handle keeping a module or library
/// loaded) into the graph being captured as a user object, so that the graph and its
/// executable graphs keep it alive; nothing otherwise. The caller checks
/// [`captures_active`] first, so that outside captures this costs one atomic load.
#[cold]
#[inline(never)]
#[track_caller]
pub(crate) fn keep_in_capture<T: Send + Sync + 'static>(
    stream: &Stream,
    keep: impl FnOnce() -> T,
) -> Result<()> {
    let _cur = stream.ctx.enter()?;
    if let Some(graph) = stream.capture_graph()? {
        // SAFETY: the graph being captured into, alive during the capture.
        unsafe { retain_in_graph(graph, keep()) }?;
    }
    Ok(())
}

/// Runs user code where the driver called into Rust (every host-function trampoline, graph
/// host node and user-object destructor of the crate goes through here): on a thread marked
/// as running a host function ([`HostFnScope`]: CUDA calls are refused, CUDA objects dropped
/// are released on the release thread), with a panic caught, counted in
/// [`host_fn_panic_count`] and reported ([`host_fn_panicked`]). Nothing unwinds out of it,
/// so nothing unwinds into the driver.
#[inline]
pub(crate) fn run_host_fn(f: impl FnOnce()) {
    let _scope = HostFnScope::enter();
    if let Err(payload) = catch_unwind(AssertUnwindSafe(f)) {
        host_fn_panicked(payload);
    }
}

/// Drops user values the crate kept for the driver's callbacks (the closures of host nodes,
/// with what they captured) from inside a `Drop`: a panic in their `Drop` is caught, counted
/// in [`host_fn_panic_count`] and reported as a host function's, and never unwinds out of
/// the caller's `Drop`.
pub(crate) fn drop_kept<T>(value: T) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(move || drop(value))) {
        host_fn_panicked(payload);
    }
}

/// Counts and logs a panic caught in a host function, then disposes of its payload: the log
/// call goes through [`callback::log`] (a panicking logger is caught), and a payload whose
/// `Drop` panics is leaked ([`callback::dispose`]), never allowed to unwind into the driver
/// (which would abort the process).
#[cold]
#[inline(never)]
fn host_fn_panicked(payload: Box<dyn Any + Send>) {
    HOST_FN_PANICS.fetch_add(1, Ordering::Relaxed);
    callback::log(|| {
        log::warn!(
            target: "cuda_driver",
            "a host function panicked: {}",
            callback::payload_message(&*payload)
        )
    });
    if !callback::dispose(payload) {
        report_drop_problem(
            &"the panic payload of a host function panicked while dropped; it is leaked",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_values_whose_drop_panics_are_caught_and_counted() {
        struct Bomb;
        impl Drop for Bomb {
            fn drop(&mut self) {
                panic!("a kept value's Drop panics");
            }
        }
        let panics = host_fn_panic_count();
        let kept: Vec<Box<dyn Any + Send + Sync>> = vec![Box::new(Bomb), Box::new(7u32)];
        drop_kept(kept);
        assert!(host_fn_panic_count() > panics);
    }

    /// Hole 7 (issue 23): the report of a host function's panic meets a panicking logger on
    /// the driver's thread; nothing unwinds (into the driver, which would abort), everything
    /// is counted, and a payload whose `Drop` panics as well is leaked and counted.
    #[test]
    fn a_host_function_panic_reported_to_a_panicking_logger_does_not_unwind() {
        struct Bomb;
        impl Drop for Bomb {
            fn drop(&mut self) {
                panic!("the payload's Drop panics too");
            }
        }
        use crate::callback::test_logger;
        test_logger::panic_on_this_thread(true);
        let panics = host_fn_panic_count();
        let logs = crate::callback::logger_panic_count();
        let drops = crate::error::drop_error_count();
        let thrown = test_logger::thrown();
        // As the driver would call it.
        let id = crate::launch::host_fn::once_fns::insert(Box::new(|| {
            panic!("deliberate panic in a host function")
        }));
        crate::launch::host_fn::once_fn_trampoline(id as *mut c_void);
        run_host_fn(|| std::panic::panic_any(Bomb));
        test_logger::panic_on_this_thread(false);
        assert!(host_fn_panic_count() >= panics + 2);
        // Two panic reports and the leaked payload's report reached the logger.
        assert_eq!(test_logger::thrown(), thrown + 3);
        assert!(crate::callback::logger_panic_count() >= logs + 3);
        assert!(
            crate::error::drop_error_count() > drops,
            "the leaked payload is counted"
        );
        assert!(
            !crate::release::in_host_fn(),
            "the host-function scope is left"
        );
    }
}

/// An L2 access-policy window (`CUaccessPolicyWindow`): accesses to `num_bytes` from `base`
/// hit the persisting L2 lines with probability `hit_ratio`. A hint; an address that is not
/// (or no longer) allocated only wastes cache.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AccessPolicyWindow {
    /// The window's first address.
    pub base: sys::CUdeviceptr,
    /// Its length in bytes (at most `MAX_ACCESS_POLICY_WINDOW_SIZE`).
    pub num_bytes: usize,
    /// The fraction of accesses that get `hit_prop`, in `[0, 1]`.
    pub hit_ratio: f32,
    /// The property of hits (usually `PERSISTING`).
    pub hit_prop: AccessProperty,
    /// The property of misses (usually `STREAMING`).
    pub miss_prop: AccessProperty,
}
