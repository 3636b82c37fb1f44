//! Page-locked memory shared by the program, its host functions and its graph host nodes:
//! [`SharedPinnedBuffer`], an `Arc` of a [`PinnedBuffer`] whose every use (asynchronous
//! copies, host functions, host access) is ordered after the one before.

use std::ffi::c_void;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError};

use cuda_driver_macros::{call, uses, wraps};
use cuda_driver_sys as sys;

use super::pinned::PinnedBuffer;
use super::pool::check_orderable;
use super::view::{check_len, check_stream};
use crate::context::Context;
use crate::error::graph::GraphError;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::handle::Handle;
use crate::memory::owner::{DeviceMemory, DeviceMemoryMut};
use crate::repr::DeviceRepr;
use crate::stream::Stream;
use crate::types::{EventFlags, PinnedFlags};

/// Set while a [`SharedPinnedGuard`] gives the program the memory.
const HOST_LOCKED: u32 = 1;
/// Set while a graph host node's closure has the memory.
const IN_NODE: u32 = 2;

struct Inner<T: DeviceRepr> {
    /// Never replaced nor reached mutably; its elements are reached only through `ptr`, as
    /// the type's docs say. Freed when the last handle goes.
    buf: PinnedBuffer<T>,
    /// Recorded after every use queued on a stream; the next use waits for it. The mutex
    /// orders queuing, and a guard holds it for as long as the program has the memory.
    last_use: Mutex<Event>,
    /// `HOST_LOCKED` / `IN_NODE`.
    state: AtomicU32,
    /// Uses queued on streams whose trailing host function has not run yet.
    pending: AtomicUsize,
    /// Graph host node runs that found the memory in use and skipped their closure.
    skipped: AtomicUsize,
    /// Set when a queued use's end can no longer be known (the event after it could not be
    /// recorded, or its host function not be queued, and its stream could not be waited
    /// for): every later use and guard is refused, and the memory stays allocated.
    broken: AtomicBool,
    ptr: *mut T,
    len: usize,
}

// SAFETY: the memory is reached only as the type's docs say: by one user at a time (queued
// uses are chained by `last_use`, guards hold its mutex, graph host nodes take `IN_NODE` only
// when nothing else is pending or locked), so sharing it between threads hands `T` values
// across threads (`T: Send`), never two live references of which one is mutable.
unsafe impl<T: DeviceRepr + Send> Send for Inner<T> {}
// SAFETY: as above.
unsafe impl<T: DeviceRepr + Send> Sync for Inner<T> {}

impl<T: DeviceRepr> Inner<T> {
    fn lock_last_use(&self) -> MutexGuard<'_, Event> {
        // The event is consistent at every unlock (nothing between lock and unlock leaves it
        // half-changed), so a poisoned lock is still good.
        self.last_use.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Page-locked host memory (`cuMemHostAlloc`) that the program, the host functions it queues
/// and its graph host nodes share, without raw addresses: clones are `Arc` handles of one
/// buffer, and each host function or node holds one for as long as it may run, so the memory
/// outlives every use (`cuMemFreeHost` runs when the last handle goes, on the crate's release
/// thread when that is inside a host function).
///
/// # When who may touch it
///
/// * **Device work** ([`copy_from_device_async`](Self::copy_from_device_async),
///   [`copy_to_device_async`](Self::copy_to_device_async)) and **host functions**
///   ([`launch_host_fn`](Self::launch_host_fn), whose closure gets `&mut [T]`) are queued on a
///   stream of the buffer's context. Every such use waits (`cuStreamWaitEvent`) for an event
///   recorded after the use queued before it, whatever its stream, and records that event
///   again after itself: the uses run one after the other, in the order they were queued. A
///   host function therefore sees the result of every copy queued before it (simpleCallback,
///   simpleCudaGraphs' host node), and a copy queued after it reads what the function wrote.
/// * **The program** reads and writes it only through a [`SharedPinnedGuard`]:
///   [`lock`](Self::lock) waits for the event of the last queued use
///   (`cuEventSynchronize`), [`try_lock`](Self::try_lock) checks it (`cuEventQuery`) and
///   returns `None` while work is pending. While a guard lives, no use can be queued (the
///   guard holds the lock that queuing takes), so the memory is the program's alone.
/// * **Graph host nodes** ([`Graph::add_host_with`](crate::graph::Graph::add_host_with)) run
///   whenever an executable graph is launched, which the buffer cannot order. So a node checks
///   at run time: its closure gets the memory only when no queued use is pending and no guard
///   or other node has it; otherwise it skips this run, which is counted
///   ([`skipped_host_nodes`](Self::skipped_host_nodes)). Order the graph's launches with the
///   buffer's other uses (synchronise, or launch on the stream the uses are queued on after
///   they completed) and no run is skipped. Queuing a use while a node's closure runs is
///   refused ([`Error::AlreadyBorrowed`]).
///
/// A queued use that could not be completed (a failed stream) keeps its handle, and the
/// memory stays allocated: the event it records is never waited for successfully, so no guard
/// is handed out.
///
/// Uses are refused on a stream being captured ([`GraphError::HostFnNotReplayable`]: each queues a
/// host function that runs once), on a stream of another context
/// ([`Error::ContextMismatch`]) and on the per-thread default stream
/// ([`Error::InvalidStream`]).
///
/// ```no_run
/// use cuda_driver::prelude::*;
/// use cuda_driver::memory::SharedPinnedBuffer;
/// use cuda_driver::types::StreamFlags;
/// use cuda_driver::{Device, DeviceBuffer, Stream};
///
/// let ctx = Device::get(0)?.primary_context()?;
/// let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;
/// let results = DeviceBuffer::from_slice(&ctx, &[1u32, 2, 3, 4])?;
/// let host = SharedPinnedBuffer::<u32>::zeroed(&ctx, 4)?;
/// host.copy_from_device_async(&results, &stream)?; // device -> page-locked, queued
/// let sum = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
/// let s = sum.clone();
/// host.launch_host_fn(&stream, move |data| {
///     // Runs after the copy: the data is there.
///     s.store(data.iter().sum(), std::sync::atomic::Ordering::Relaxed);
/// })?;
/// assert_eq!(*host.lock()?, [1, 2, 3, 4]); // waits for the copy and the function
/// assert_eq!(sum.load(std::sync::atomic::Ordering::Relaxed), 10);
/// # Ok::<(), cuda_driver::Error>(())
/// ```
#[wraps(cuMemHostAlloc)]
#[doc(alias = "cuLaunchHostFunc")]
pub struct SharedPinnedBuffer<T: DeviceRepr> {
    inner: Arc<Inner<T>>,
}

impl<T: DeviceRepr> Clone for SharedPinnedBuffer<T> {
    fn clone(&self) -> Self {
        SharedPinnedBuffer {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<T: DeviceRepr> std::fmt::Debug for SharedPinnedBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedPinnedBuffer")
            .field("ptr", &self.inner.ptr)
            .field("len", &self.inner.len)
            .field("pending", &self.inner.pending.load(Ordering::Relaxed))
            .finish()
    }
}

/// Decrements `pending` and gives the handle back when dropped: the tail of every queued use,
/// run by its host function (also when the closure panics).
struct Completion<T: DeviceRepr>(Arc<Inner<T>>);

impl<T: DeviceRepr> Drop for Completion<T> {
    fn drop(&mut self) {
        self.0.pending.fetch_sub(1, Ordering::SeqCst);
    }
}

impl<T: DeviceRepr + Send> SharedPinnedBuffer<T> {
    /// Wraps a page-locked buffer.
    pub fn new(buf: PinnedBuffer<T>) -> Result<Self> {
        let last_use = Event::new(buf.context(), EventFlags::DISABLE_TIMING)?;
        let (ptr, len) = (buf.as_raw(), buf.len());
        Ok(SharedPinnedBuffer {
            inner: Arc::new(Inner {
                buf,
                last_use: Mutex::new(last_use),
                state: AtomicU32::new(0),
                pending: AtomicUsize::new(0),
                skipped: AtomicUsize::new(0),
                broken: AtomicBool::new(false),
                ptr,
                len,
            }),
        })
    }

    /// `len` zeroed elements of page-locked memory of `ctx` ([`PinnedBuffer::zeroed`]).
    #[wraps(cuMemHostAlloc)]
    #[track_caller]
    pub fn zeroed(ctx: &Context, len: usize) -> Result<Self> {
        Self::new(PinnedBuffer::zeroed(ctx, len, PinnedFlags::empty())?)
    }

    /// Page-locked memory of `ctx` holding a copy of `src` ([`PinnedBuffer::from_slice`]).
    #[wraps(cuMemHostAlloc)]
    #[track_caller]
    pub fn from_slice(ctx: &Context, src: &[T]) -> Result<Self> {
        Self::new(PinnedBuffer::from_slice(ctx, src, PinnedFlags::empty())?)
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.inner.len
    }

    /// Whether it holds no element.
    pub fn is_empty(&self) -> bool {
        self.inner.len == 0
    }

    /// The context the memory belongs to.
    pub fn context(&self) -> &Context {
        self.inner.buf.context()
    }

    /// How many runs of graph host nodes found the memory in use and skipped their closure
    /// (see [When who may touch it](Self#when-who-may-touch-it)).
    pub fn skipped_host_nodes(&self) -> usize {
        self.inner.skipped.load(Ordering::Relaxed)
    }

    /// The memory for the program, once every use queued so far has completed
    /// (`cuEventSynchronize` of the event recorded after the last one). No use can be queued
    /// while the guard lives; a graph host node that runs meanwhile skips its closure. When
    /// the wait fails (a failed stream), no guard is handed out.
    #[uses(cuEventSynchronize)]
    #[track_caller]
    pub fn lock(&self) -> Result<SharedPinnedGuard<'_, T>> {
        self.usable("SharedPinnedBuffer::lock")?;
        let last = self.inner.lock_last_use();
        last.synchronize()?;
        // A node that began before may still run its closure: wait for it (it runs user code
        // that needs no CUDA call and nothing this thread holds).
        while self
            .inner
            .state
            .compare_exchange(0, HOST_LOCKED, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            std::thread::yield_now();
        }
        Ok(SharedPinnedGuard {
            inner: &self.inner,
            _last: last,
        })
    }

    /// As [`lock`](Self::lock) without blocking: `None` while a queued use has not completed
    /// (`cuEventQuery`), another guard lives or a graph host node has the memory.
    #[uses(cuEventQuery)]
    #[track_caller]
    pub fn try_lock(&self) -> Result<Option<SharedPinnedGuard<'_, T>>> {
        self.usable("SharedPinnedBuffer::try_lock")?;
        let last = match self.inner.last_use.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return Ok(None),
        };
        if !last.query()? {
            return Ok(None);
        }
        if self
            .inner
            .state
            .compare_exchange(0, HOST_LOCKED, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return Ok(None);
        }
        Ok(Some(SharedPinnedGuard {
            inner: &self.inner,
            _last: last,
        }))
    }

    /// Queues a copy of `src` (device memory of the buffer's context, as long as the buffer)
    /// into the buffer on `stream`, after every use queued before; see
    /// [When who may touch it](Self#when-who-may-touch-it).
    #[wraps(cuMemcpyDtoHAsync)]
    #[track_caller]
    pub fn copy_from_device_async<M: DeviceMemory<Elem = T> + ?Sized>(
        &self,
        src: &M,
        stream: &Stream,
    ) -> Result<()> {
        const WHAT: &str = "SharedPinnedBuffer::copy_from_device_async";
        let src = src.as_view();
        check_len(WHAT, self.len(), src.len())?;
        check_stream(WHAT, src.context(), src.home(), stream)?;
        let (dst, from, bytes) = (self.inner.ptr, src.as_raw(), src.bytes());
        self.queue(WHAT, stream, |s| {
            if bytes == 0 {
                return Ok(());
            }
            call!(
                // SAFETY: `dst` holds `bytes` bytes of page-locked memory that nothing else
                // touches until this use completes (the chain: see the type's docs) and that
                // the use's handle keeps allocated; `from` is a view of as many bytes of device
                // memory of the stream's context (checked), whose owner outlives the queued
                // work (M2).
                unsafe { sys::cuMemcpyDtoHAsync(dst.cast::<c_void>(), from, bytes, s) },
            )
        })
    }

    /// Queues a copy of the buffer into `dst` (device memory of the buffer's context) on
    /// `stream`, after every use queued before; see
    /// [When who may touch it](Self#when-who-may-touch-it).
    #[wraps(cuMemcpyHtoDAsync)]
    #[track_caller]
    pub fn copy_to_device_async<M: DeviceMemoryMut<Elem = T> + ?Sized>(
        &self,
        dst: &mut M,
        stream: &Stream,
    ) -> Result<()> {
        const WHAT: &str = "SharedPinnedBuffer::copy_to_device_async";
        let dst = dst.as_view_mut();
        check_len(WHAT, dst.len(), self.len())?;
        check_stream(WHAT, dst.context(), dst.home(), stream)?;
        let (src, to, bytes) = (self.inner.ptr, dst.as_raw(), dst.bytes());
        self.queue(WHAT, stream, |s| {
            if bytes == 0 {
                return Ok(());
            }
            call!(
                // SAFETY: as in copy_from_device_async, the other way round; `dst` is a
                // mutable view, so no other view of those bytes exists.
                unsafe { sys::cuMemcpyHtoDAsync(to, src.cast::<c_void>(), bytes, s) },
            )
        })
    }

    /// Queues `f` on `stream` as a host function ([`Stream::launch_host_fn`]: CUDA calls
    /// refused inside, drops deferred, panics caught and counted) that gets the buffer's
    /// elements, after every use queued before it on any stream; later uses wait for it. The
    /// function holds a handle of the buffer until it has run.
    ///
    /// The elements cannot escape the function:
    ///
    /// ```compile_fail
    /// fn f(b: &cuda_driver::memory::SharedPinnedBuffer<u32>, s: &cuda_driver::Stream) {
    ///     let mut keep: Option<&'static mut [u32]> = None;
    ///     b.launch_host_fn(s, move |d| keep = Some(d)).unwrap();
    /// }
    /// ```
    #[uses(cuStreamWaitEvent, cuLaunchHostFunc, cuEventRecord)]
    #[track_caller]
    pub fn launch_host_fn<F>(&self, stream: &Stream, f: F) -> Result<()>
    where
        F: FnOnce(&mut [T]) + Send + 'static,
    {
        const WHAT: &str = "SharedPinnedBuffer::launch_host_fn";
        let inner = Arc::clone(&self.inner);
        self.queue_with(
            WHAT,
            stream,
            |_| Ok(()),
            move || {
                // SAFETY: this host function is the one use of the memory running now: the uses
                // queued before it completed (the chain), later ones wait for the event recorded
                // after it, no guard can be taken before that event, and graph host nodes skip
                // while this use is pending; the handle it holds keeps the memory allocated.
                let data = unsafe { std::slice::from_raw_parts_mut(inner.ptr, inner.len) };
                f(data);
            },
        )
    }

    /// Queues one use: checks, the wait for the last use, `op` on the stream, a host function
    /// that runs `then` and gives back the use's handle, and the event after it.
    #[track_caller]
    fn queue(
        &self,
        what: &'static str,
        stream: &Stream,
        op: impl FnOnce(sys::CUstream) -> Result<()>,
    ) -> Result<()> {
        self.queue_with(what, stream, op, || {})
    }

    #[track_caller]
    fn queue_with(
        &self,
        what: &'static str,
        stream: &Stream,
        op: impl FnOnce(sys::CUstream) -> Result<()>,
        then: impl FnOnce() + Send + 'static,
    ) -> Result<()> {
        let ctx = self.context();
        if stream.context().as_raw() != ctx.as_raw() {
            return Err(Error::ContextMismatch {
                what,
                expected: ctx.as_raw() as usize,
                found: stream.context().as_raw() as usize,
            });
        }
        check_orderable(what, stream)?;
        // Before the lock: refuses inside a host function, which must never wait for it.
        let _cur = ctx.enter()?;
        self.usable(what)?;
        let last = self.inner.lock_last_use();
        if stream.capture_status_raw()? != sys::CU_STREAM_CAPTURE_STATUS_NONE {
            return Err(Error::Graph(GraphError::HostFnNotReplayable { what }));
        }
        // Counted before the check, so that a node that begins after it sees this use.
        self.inner.pending.fetch_add(1, Ordering::SeqCst);
        let completion = Completion(Arc::clone(&self.inner));
        if self.inner.state.load(Ordering::SeqCst) & IN_NODE != 0 {
            // Dropping `completion` takes the count back.
            return Err(Error::AlreadyBorrowed {
                kind: "page-locked buffer",
                name: "in use by a graph host node's closure".into(),
            });
        }
        stream.wait_event(&last)?;
        op(stream.as_raw())?;
        // From here work may be queued that uses the memory: the completion (the handle)
        // must outlive it.
        let queued = stream.launch_host_fn(move || {
            let completion = completion;
            then();
            drop(completion);
        });
        if let Err(e) = queued {
            // The closure (and the completion) was dropped: wait for the queued work here;
            // if even that fails, keep the memory allocated for ever and unreachable (the
            // work may still run: no guard, no use, no node from now on).
            if stream.synchronize().is_err() {
                self.inner.pending.fetch_add(1, Ordering::SeqCst);
                self.inner.broken.store(true, Ordering::SeqCst);
                std::mem::forget(Arc::clone(&self.inner));
            }
            return Err(e);
        }
        let recorded = last.record(stream);
        if recorded.is_err() && stream.synchronize().is_err() {
            // Later uses could not be ordered after this one.
            self.inner.broken.store(true, Ordering::SeqCst);
        }
        recorded
    }

    /// Refuses inside a host function (before any lock: a host function must never wait for
    /// one) and once the order of uses is lost.
    #[track_caller]
    fn usable(&self, what: &'static str) -> Result<()> {
        if crate::release::in_host_fn() {
            return Err(Error::InHostCallback {
                location: std::panic::Location::caller(),
            });
        }
        if self.inner.broken.load(Ordering::SeqCst) {
            return Err(Error::InvalidArgument(format!(
                "{what}: the event after a queued use of this buffer could not be recorded nor \
                 its stream be waited for, so later uses cannot be ordered after it; the buffer \
                 is unusable (and stays allocated)"
            )));
        }
        Ok(())
    }

    /// The closure of a graph host node over this buffer (see
    /// [When who may touch it](Self#when-who-may-touch-it)): `f` runs with the elements when
    /// nothing else has them, and the run is skipped (counted) otherwise.
    pub(crate) fn node_closure<F>(&self, f: F) -> impl Fn() + Send + Sync + 'static
    where
        F: Fn(&mut [T]) + Send + Sync + 'static,
    {
        let inner = Arc::clone(&self.inner);
        move || {
            if inner
                .state
                .compare_exchange(0, IN_NODE, Ordering::SeqCst, Ordering::SeqCst)
                .is_err()
            {
                inner.skipped.fetch_add(1, Ordering::Relaxed);
                return;
            }
            // Cleared however `f` ends.
            struct Leave<'a>(&'a AtomicU32);
            impl Drop for Leave<'_> {
                fn drop(&mut self) {
                    self.0.fetch_and(!IN_NODE, Ordering::SeqCst);
                }
            }
            let _leave = Leave(&inner.state);
            if inner.pending.load(Ordering::SeqCst) != 0 {
                inner.skipped.fetch_add(1, Ordering::Relaxed);
                return;
            }
            // SAFETY: IN_NODE is set and no use is pending: a guard cannot be taken (it needs
            // the state clear), a use queued from now on is refused (it sees IN_NODE after
            // counting itself, and this check saw no count), and earlier uses have completed
            // (their counts are gone); the handle this closure holds keeps the memory.
            let data = unsafe { std::slice::from_raw_parts_mut(inner.ptr, inner.len) };
            f(data);
        }
    }
}

/// The program's access to a [`SharedPinnedBuffer`]: every queued use has completed, and none
/// can be queued while it lives. Dereferences to the elements. `!Send` (it holds a lock):
///
/// ```compile_fail
/// fn f(b: &cuda_driver::memory::SharedPinnedBuffer<u32>) {
///     let g = b.lock().unwrap();
///     std::thread::scope(|s| {
///         s.spawn(move || drop(g));
///     });
/// }
/// ```
pub struct SharedPinnedGuard<'a, T: DeviceRepr> {
    inner: &'a Inner<T>,
    _last: MutexGuard<'a, Event>,
}

impl<T: DeviceRepr> Drop for SharedPinnedGuard<'_, T> {
    fn drop(&mut self) {
        self.inner.state.fetch_and(!HOST_LOCKED, Ordering::SeqCst);
    }
}

impl<T: DeviceRepr> Deref for SharedPinnedGuard<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: the guard is the memory's one user (HOST_LOCKED set, the queuing lock held,
        // every queued use completed: `lock`/`try_lock`); `ptr` holds `len` initialised,
        // aligned elements, kept allocated by the handle the guard borrows.
        unsafe { std::slice::from_raw_parts(self.inner.ptr, self.inner.len) }
    }
}

impl<T: DeviceRepr> DerefMut for SharedPinnedGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.inner.ptr, self.inner.len) }
    }
}

impl<T: DeviceRepr + std::fmt::Debug> std::fmt::Debug for SharedPinnedGuard<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_and_guards_have_the_thread_rules_they_state() {
        fn send_sync<X: Send + Sync>() {}
        send_sync::<SharedPinnedBuffer<u32>>();
        // A guard holds a MutexGuard: !Send (the compile_fail doctest on SharedPinnedGuard).
    }
}
