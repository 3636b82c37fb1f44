//! Views: [`DeviceSlice`] and [`DeviceSliceMut`], the one currency of device memory.
//!
//! Every memory kind (a [`DeviceBuffer`](crate::DeviceBuffer), stream-ordered memory, managed
//! memory, a module global, the device side of page-locked memory, ...) is an *owner* that
//! hands out typed views; every copy, memset and kernel argument is implemented once, here,
//! on the views. The owners get the same operations through the
//! [`DeviceMemory`](crate::DeviceMemory) / [`DeviceMemoryMut`](crate::DeviceMemoryMut)
//! traits, whose provided methods forward to the views.
//!
//! Each operation checks lengths and streams first, then enters the context (one
//! `cuCtxGetCurrent` when it is current already) and makes one driver call: no allocation.
//!
//! # Stream order
//!
//! Views of memory that is ordered on a stream carry their stream: memory freed in stream
//! order ([`AsyncDeviceBuffer`]), managed memory ([`ManagedBuffer`], whose host access waits
//! for that stream) and the device view of page-locked memory
//! ([`PinnedBuffer::with_device_view_mut`], which waits for it when the closure ends). An
//! operation with an explicit stream must use that stream ([`Error::StreamMismatch`]
//! otherwise): work queued elsewhere could still run when the memory is freed and reused, or
//! handed to the host. Move the buffer to another stream with
//! [`AsyncDeviceBuffer::move_to_stream`] first. The operations without a stream run on the
//! memory's own stream and wait for it. Every operation with a stream also requires the
//! stream to belong to the view's context ([`Error::ContextMismatch`]); copies between
//! contexts are the `*_peer` operations.
//!
//! **Blocking operations on memory that is not ordered on a stream** (a [`DeviceBuffer`], a
//! VMM mapping, ...) **run on the default stream and are ordered like it: after the work of
//! blocking streams, but not after the work of [`StreamFlags::NON_BLOCKING`] streams**:
//! synchronise such a stream first (or use the operation's `*_async` form on that stream).
//! (With the `per-thread-default-stream` feature, after this thread's default stream and the
//! legacy one only.)
//! Reading bytes such a stream is still writing is a data race on device memory, which gives
//! unspecified values (every bit pattern is a valid [`DeviceRepr`]), not undefined behaviour
//! on the host; the GPU test `memory::copy::blocking_copies_follow_blocking_streams_not_non_blocking_ones`
//! shows the rule.
//!
//! [`AsyncDeviceBuffer`]: crate::memory::pool::AsyncDeviceBuffer
//! [`AsyncDeviceBuffer::move_to_stream`]: crate::memory::pool::AsyncDeviceBuffer::move_to_stream
//! [`ManagedBuffer`]: crate::memory::ManagedBuffer
//! [`PinnedBuffer::with_device_view_mut`]: crate::PinnedBuffer::with_device_view_mut
//! [`DeviceBuffer`]: crate::DeviceBuffer
//! [`StreamFlags::NON_BLOCKING`]: crate::types::StreamFlags::NON_BLOCKING

use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem::size_of;
use std::ops::{Bound, RangeBounds};
use std::ptr;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use crate::context::Context;
use crate::error::layout::LayoutError;
use crate::error::{check, Error, Result};
use crate::handle::Handle;
use crate::repr::DeviceRepr;
use crate::stream::Stream;

/// `len * size_of::<T>()`, or an error naming the overflow.
#[inline]
pub(crate) fn byte_len<T>(what: &'static str, len: usize) -> Result<usize> {
    // `ok_or_else`: an error built eagerly is dropped through an out-of-line call on every
    // success (measurable next to a stream-ordered allocation).
    len.checked_mul(size_of::<T>())
        .ok_or_else(|| size_overflow(what, len, size_of::<T>()))
}

#[cold]
#[inline(never)]
fn size_overflow(what: &'static str, count: usize, size: usize) -> Error {
    Error::SizeOverflow { what, count, size }
}

/// `range` resolved against a length: `(start, end)` with `start <= end <= len`, or
/// [`Error::OutOfBounds`] naming the range and the length.
#[inline]
pub(crate) fn resolve_range(range: impl RangeBounds<usize>, len: usize) -> Result<(usize, usize)> {
    let start = match range.start_bound() {
        Bound::Included(&s) => Some(s),
        Bound::Excluded(&s) => s.checked_add(1),
        Bound::Unbounded => Some(0),
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.checked_add(1),
        Bound::Excluded(&e) => Some(e),
        Bound::Unbounded => Some(len),
    };
    match (start, end) {
        (Some(start), Some(end)) if start <= end && end <= len => Ok((start, end)),
        (start, end) => Err(Error::OutOfBounds {
            start: start.unwrap_or(usize::MAX),
            end: end.unwrap_or(usize::MAX),
            len,
        }),
    }
}

/// `Ok` when the destination and source lengths (in elements) agree.
#[inline]
pub(crate) fn check_len(what: &'static str, dst: usize, src: usize) -> Result<()> {
    if dst == src {
        Ok(())
    } else {
        Err(Error::LengthMismatch { what, dst, src })
    }
}

/// The address of element `index` of an array of `T` at `ptr`.
#[inline]
fn element_addr<T>(ptr: sys::CUdeviceptr, index: usize) -> sys::CUdeviceptr {
    ptr + (index * size_of::<T>()) as sys::CUdeviceptr
}

/// The stream a raw handle names for ordering purposes: the null handle is the legacy
/// default stream, or the per-thread one with the `per-thread-default-stream` feature.
#[inline]
pub(crate) fn stream_identity(raw: sys::CUstream) -> sys::CUstream {
    if raw.is_null() {
        if cfg!(feature = "per-thread-default-stream") {
            sys::CU_STREAM_PER_THREAD
        } else {
            sys::CU_STREAM_LEGACY
        }
    } else {
        raw
    }
}

/// A word a memset can write: `u8`, `u16` or `u32` (`cuMemsetD8`, `D16`, `D32`). The
/// element size of the view must be a multiple of the word's.
pub trait MemsetValue: Copy + sealed::Sealed {
    /// Bytes per word.
    const WIDTH: usize;
    #[doc(hidden)]
    const CALL: &'static str;
    #[doc(hidden)]
    const CALL_ASYNC: &'static str;
    #[doc(hidden)]
    /// # Safety
    /// `ptr` is valid device memory for `n` words, in the current context.
    unsafe fn memset(self, ptr: sys::CUdeviceptr, n: usize) -> sys::CUresult;
    #[doc(hidden)]
    /// # Safety
    /// As `memset`, and `stream` is a live stream of the current context.
    unsafe fn memset_async(
        self,
        ptr: sys::CUdeviceptr,
        n: usize,
        stream: sys::CUstream,
    ) -> sys::CUresult;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u8 {}
    impl Sealed for u16 {}
    impl Sealed for u32 {}
}

macro_rules! memset_value {
    ($t:ty, $w:literal, $f:ident, $call:literal, $fa:ident, $call_a:literal) => {
        impl MemsetValue for $t {
            const WIDTH: usize = $w;
            const CALL: &'static str = $call;
            const CALL_ASYNC: &'static str = $call_a;
            #[inline(always)]
            unsafe fn memset(self, ptr: sys::CUdeviceptr, n: usize) -> sys::CUresult {
                // SAFETY: the caller's guarantees.
                unsafe { sys::$f(ptr, self, n) }
            }
            #[inline(always)]
            unsafe fn memset_async(
                self,
                ptr: sys::CUdeviceptr,
                n: usize,
                stream: sys::CUstream,
            ) -> sys::CUresult {
                // SAFETY: the caller's guarantees.
                unsafe { sys::$fa(ptr, self, n, stream) }
            }
        }
    };
}

memset_value!(
    u8,
    1,
    cuMemsetD8,
    "cuMemsetD8_v2",
    cuMemsetD8Async,
    "cuMemsetD8Async"
);
memset_value!(
    u16,
    2,
    cuMemsetD16,
    "cuMemsetD16_v2",
    cuMemsetD16Async,
    "cuMemsetD16Async"
);
memset_value!(
    u32,
    4,
    cuMemsetD32,
    "cuMemsetD32_v2",
    cuMemsetD32Async,
    "cuMemsetD32Async"
);

/// The number of `W` words in `len` elements of `T`, or [`LayoutError::MemsetWidth`] when the size
/// of `T` is not a multiple of the word's.
#[inline]
pub(crate) fn memset_count<T, W: MemsetValue>(what: &'static str, len: usize) -> Result<usize> {
    if size_of::<T>() % W::WIDTH != 0 {
        return Err(Error::Layout(LayoutError::MemsetWidth {
            what,
            width: W::WIDTH,
            elem: std::any::type_name::<T>(),
            size: size_of::<T>(),
        }));
    }
    Ok(len * (size_of::<T>() / W::WIDTH))
}

/// A shared view of device memory: `len` elements of `T` at a device address, in a context,
/// borrowed from the memory's owner for `'a`.
///
/// # Stream order
///
/// A view of memory ordered on a stream ([`AsyncDeviceBuffer`](crate::memory::pool::AsyncDeviceBuffer),
/// [`ManagedBuffer`](crate::memory::ManagedBuffer), the device view of a
/// [`PinnedBuffer`](crate::PinnedBuffer)) carries that stream
/// ([`stream_order`](Self::stream_order)): its operations with a stream must use it
/// ([`Error::StreamMismatch`]), and its operations without a stream run on it and wait for
/// it. Every operation with a stream requires a stream of the view's context
/// ([`Error::ContextMismatch`]). **The blocking operations of memory not ordered on a stream
/// run on the default stream: ordered after blocking streams' work, not after
/// [`NON_BLOCKING`](crate::types::StreamFlags::NON_BLOCKING) streams' work** (synchronise such a
/// stream first, or use the `*_async` form on it).
///
/// A view cannot outlive its owner:
///
/// ```compile_fail
/// # use cuda_driver::prelude::*;
/// # fn f(ctx: &cuda_driver::Context) -> cuda_driver::Result<()> {
/// let view = {
///     let buf = cuda_driver::DeviceBuffer::<f32>::new(ctx, 16)?;
///     buf.as_view()
/// };
/// # drop(view); Ok(()) }
/// ```
#[derive(Clone, Copy)]
pub struct DeviceSlice<'a, T: DeviceRepr> {
    /// Kept first and by value: a kernel argument is a pointer to this field.
    ptr: sys::CUdeviceptr,
    len: usize,
    ctx: &'a Context,
    /// The stream the memory is ordered on (freed in stream order), or null.
    home: sys::CUstream,
    _marker: PhantomData<&'a T>,
}

/// A mutable view of device memory, borrowed exclusively from its owner for `'a`.
///
/// Two mutable views of one owner cannot coexist, except as disjoint halves from
/// [`split_at_mut`](Self::split_at_mut):
///
/// ```compile_fail
/// # use cuda_driver::prelude::*;
/// # fn f(ctx: &cuda_driver::Context) -> cuda_driver::Result<()> {
/// let mut buf = cuda_driver::DeviceBuffer::<f32>::new(ctx, 16)?;
/// let mut a = buf.slice_mut(..8)?;
/// let b = buf.slice(8..)?;
/// a.copy_from_device(&b)?;
/// # Ok(()) }
/// ```
pub struct DeviceSliceMut<'a, T: DeviceRepr> {
    /// Kept first and by value: a kernel argument is a pointer to this field.
    ptr: sys::CUdeviceptr,
    len: usize,
    ctx: &'a Context,
    /// As in [`DeviceSlice`].
    home: sys::CUstream,
    _marker: PhantomData<&'a mut T>,
}

// SAFETY: a view is a borrowed device address (plus a borrowed Context, which is Sync and a
// stream handle used only as an identity or with the driver, which allows any thread); T is
// plain data handed out by copy.
unsafe impl<T: DeviceRepr> Send for DeviceSlice<'_, T> {}
// SAFETY: as above.
unsafe impl<T: DeviceRepr> Sync for DeviceSlice<'_, T> {}
// SAFETY: as above; exclusive by construction (borrows its owner mutably).
unsafe impl<T: DeviceRepr> Send for DeviceSliceMut<'_, T> {}
// SAFETY: as above.
unsafe impl<T: DeviceRepr> Sync for DeviceSliceMut<'_, T> {}

/// The accessors and `Debug` that [`DeviceSlice`] and [`DeviceSliceMut`] share, written once:
/// `view_accessors!()` inside each one's `impl<'a, T>` block gives the methods,
/// `view_accessors!(debug Name)` the `Debug` impl.
macro_rules! view_accessors {
    () => {
        /// The stream the memory is ordered on (its identity), or null.
        #[inline(always)]
        pub(crate) fn home(&self) -> sys::CUstream {
            self.home
        }

        /// The device address, in place: a kernel argument points at it.
        #[inline(always)]
        pub(crate) fn ptr_ref(&self) -> &sys::CUdeviceptr {
            &self.ptr
        }

        /// The device address of the first element.
        #[inline]
        pub fn as_raw(&self) -> sys::CUdeviceptr {
            self.ptr
        }

        /// Number of elements.
        #[inline]
        pub fn len(&self) -> usize {
            self.len
        }

        /// Whether the view holds no elements.
        #[inline]
        pub fn is_empty(&self) -> bool {
            self.len == 0
        }

        /// Size in bytes.
        #[inline]
        pub fn bytes(&self) -> usize {
            self.len * size_of::<T>()
        }

        /// The context of the memory.
        #[inline]
        pub fn context(&self) -> &'a Context {
            self.ctx
        }
    };
    (debug $name:ident) => {
        impl<T: DeviceRepr> ::core::fmt::Debug for $name<'_, T> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.debug_struct(::core::stringify!($name))
                    .field("ptr", &::core::format_args!("{:#x}", self.ptr))
                    .field("len", &self.len)
                    .field("type", &::core::any::type_name::<T>())
                    .finish()
            }
        }
    };
}

view_accessors!(debug DeviceSlice);
view_accessors!(debug DeviceSliceMut);

/// The stream-order rules of one operation on a stream: the stream belongs to the memory's
/// context, and memory ordered on a stream is used on that stream only.
#[inline]
#[track_caller]
pub(crate) fn check_stream(
    what: &'static str,
    ctx: &Context,
    home: sys::CUstream,
    stream: &Stream,
) -> Result<()> {
    if stream.context().as_raw() != ctx.as_raw() {
        return Err(context_mismatch(what, ctx, stream));
    }
    if !home.is_null() && home != stream_identity(stream.as_raw()) {
        return Err(Error::StreamMismatch {
            what,
            expected: home as usize,
            found: stream.as_raw() as usize,
        });
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn context_mismatch(what: &'static str, ctx: &Context, stream: &Stream) -> Error {
    Error::ContextMismatch {
        what,
        expected: ctx.as_raw() as usize,
        found: stream.context().as_raw() as usize,
    }
}

/// The stream two views of one operation share: null when neither is stream-ordered, the
/// one stream when one or both are, [`Error::StreamMismatch`] when they differ.
#[inline]
pub(crate) fn common_home(
    what: &'static str,
    a: sys::CUstream,
    b: sys::CUstream,
) -> Result<sys::CUstream> {
    if a.is_null() || a == b {
        Ok(b)
    } else if b.is_null() {
        Ok(a)
    } else {
        Err(Error::StreamMismatch {
            what,
            expected: a as usize,
            found: b as usize,
        })
    }
}

/// After work was queued on `stream` (of `stream_ctx`) that uses memory of `mem_ctx`: when
/// those are different contexts, the memory's context waits for that work before releasing
/// anything (see `context::fence`). Nothing happens, and no driver call is made, within one
/// context.
#[inline]
#[track_caller]
pub(crate) fn fence_if_foreign(
    mem_ctx: &Context,
    stream_ctx: &Context,
    stream: sys::CUstream,
) -> Result<()> {
    if mem_ctx.as_raw() == stream_ctx.as_raw() {
        Ok(())
    } else {
        mem_ctx.fence_foreign_use(stream_ctx, stream)
    }
}

/// Runs a blocking operation on memory ordered on `home` (null: none): the plain call, or
/// the call's stream form on `home` followed by `cuStreamSynchronize(home)`. The context is
/// current.
#[inline(always)]
#[track_caller]
pub(crate) fn blocking(
    home: sys::CUstream,
    call: (&'static str, &'static str),
    sync: impl FnOnce() -> sys::CUresult,
    on_stream: impl FnOnce(sys::CUstream) -> sys::CUresult,
) -> Result<()> {
    if home.is_null() {
        check(sync(), call.0)
    } else {
        check(on_stream(home), call.1)?;
        call!(
            // SAFETY: `home` is the live stream the memory is ordered on (its owner borrows it).
            unsafe { sys::cuStreamSynchronize(home) },
        )
    }
}

impl<'a, T: DeviceRepr> DeviceSlice<'a, T> {
    /// The one constructor of shared views: every memory kind builds its views here (or
    /// through [`DeviceSliceMut::from_parts`] and [`DeviceSliceMut::as_view`]).
    ///
    /// # Safety
    /// * `ptr` is valid device memory of `ctx` for reads of `len * size_of::<T>()` bytes
    ///   (which does not overflow), aligned for `T`, and stays allocated for `'a`: the view
    ///   borrows the memory's owner for `'a`;
    /// * the owner releases the memory only after every piece of work that a view may queue
    ///   has finished: `home` is null and the release waits for (or is preceded by a wait
    ///   for) all work of `ctx` and the cross-context uses fenced in it, or `home` is the
    ///   identity ([`stream_identity`]) of the live stream of `ctx` the memory is ordered on,
    ///   on which it is released;
    /// * no mutable view of these bytes is alive for `'a`, and the host writes them only
    ///   where the owner's rules allow (the host access of managed and page-locked memory
    ///   waits for `home` first).
    #[inline(always)]
    pub(crate) unsafe fn from_parts(
        ptr: sys::CUdeviceptr,
        len: usize,
        ctx: &'a Context,
        home: sys::CUstream,
    ) -> Self {
        DeviceSlice {
            ptr,
            len,
            ctx,
            home,
            _marker: PhantomData,
        }
    }

    /// A view of `len` elements at `ptr`, device-accessible memory of `ctx` that this crate
    /// did not allocate (another library's, or memory the caller manages).
    ///
    /// # Safety
    /// `ptr` is valid for reads of `len * size_of::<T>()` bytes from `ctx` for `'a`, aligned
    /// for `T`; it stays allocated until all work queued through the view has finished; and
    /// the host does not write that memory while the view or work queued through it may
    /// read it.
    #[inline]
    pub unsafe fn borrow_raw(ptr: sys::CUdeviceptr, len: usize, ctx: &'a Context) -> Self {
        // SAFETY: the caller's guarantees, which are `from_parts`' for memory not ordered on a
        // stream.
        unsafe { Self::from_parts(ptr, len, ctx, ptr::null_mut()) }
    }

    view_accessors!();

    /// The raw stream the memory is ordered on, for stream-ordered memory.
    #[inline]
    pub fn stream_order(&self) -> Option<sys::CUstream> {
        (!self.home.is_null()).then_some(self.home)
    }

    /// The elements in `range`, as a view borrowed from the same owner; a range outside the
    /// view is [`Error::OutOfBounds`].
    #[inline]
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceSlice<'a, T>> {
        let (start, end) = resolve_range(range, self.len)?;
        Ok(DeviceSlice {
            ptr: element_addr::<T>(self.ptr, start),
            len: end - start,
            ..*self
        })
    }

    /// The elements before `mid` and from `mid` on; `mid > len` is [`Error::OutOfBounds`].
    #[inline]
    pub fn split_at(&self, mid: usize) -> Result<(DeviceSlice<'a, T>, DeviceSlice<'a, T>)> {
        Ok((self.slice(..mid)?, self.slice(mid..)?))
    }

    /// Copies the view into `dst`, whose length must be the view's; blocks until the copy
    /// is done.
    ///
    /// Calls [`cuMemcpyDtoH_v2`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html)
    /// (`cuMemcpyDtoHAsync_v2` and `cuStreamSynchronize` for stream-ordered memory).
    ///
    /// Unless the memory is ordered on a stream, not ordered after `NON_BLOCKING` streams'
    /// work: synchronise such a stream first ([stream order](Self#stream-order)).
    #[wraps(cuMemcpyDtoH)]
    #[inline]
    #[track_caller]
    pub fn copy_to_host(&self, dst: &mut [T]) -> Result<()> {
        check_len("copy_to_host", dst.len(), self.len)?;
        // SAFETY: `dst` is valid for writes of `self.len` elements (lengths checked above)
        // and exclusively borrowed for the call.
        unsafe { self.read_into(dst.as_mut_ptr()) }
    }

    /// Copies the view into a new `Vec`; blocks until the copy is done.
    /// Unless the memory is ordered on a stream, not ordered after `NON_BLOCKING` streams'
    /// work: synchronise such a stream first ([stream order](Self#stream-order)).
    #[wraps(cuMemcpyDtoH)]
    #[track_caller]
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut v = Vec::with_capacity(self.len);
        // SAFETY: the Vec's buffer has room for `self.len` elements; it is written through a
        // raw pointer, never read, before `set_len`.
        unsafe { self.read_into(v.as_mut_ptr())? };
        // SAFETY: the copy succeeded, so the first `self.len` elements are initialised; any
        // bit pattern is a valid T (T: DeviceRepr).
        unsafe { v.set_len(self.len) };
        Ok(v)
    }

    /// The one blocking device-to-host copy: `self.bytes()` bytes into `dst`.
    ///
    /// # Safety
    /// `dst` is valid for writes of `self.len` elements and not accessed during the call.
    #[inline]
    #[track_caller]
    unsafe fn read_into(&self, dst: *mut T) -> Result<()> {
        let bytes = self.bytes();
        if bytes == 0 {
            return Ok(());
        }
        let _cur = self.ctx.enter()?;
        let (src, dst) = (self.ptr, dst.cast::<c_void>());
        blocking(
            self.home,
            ("cuMemcpyDtoH_v2", "cuMemcpyDtoHAsync_v2"),
            // SAFETY: the view covers `bytes` bytes of live device memory of the current
            // context (it borrows its owner); the caller guarantees `dst` holds as many.
            || unsafe { sys::cuMemcpyDtoH(dst, src, bytes) },
            // SAFETY: as above, on the memory's own stream, which is synchronised before
            // `dst` is released.
            |s| unsafe { sys::cuMemcpyDtoHAsync(dst, src, bytes, s) },
        )
    }

    /// Queues a copy of the view into `dst` on `stream` and returns at once; the copy is done
    /// when the stream has reached it (after [`Stream::synchronize`], or an event recorded
    /// after it). Into page-locked memory ([`PinnedBuffer`](crate::PinnedBuffer),
    /// [`HostRegistration`](crate::memory::HostRegistration)) the copy is truly asynchronous; into
    /// pageable memory the driver may block until it is done.
    ///
    ///
    /// # Safety
    /// `dst` must stay valid, and must be neither read nor written by the host, until the
    /// stream has executed the copy: the borrow ends when this function returns, but the
    /// device writes to `dst` later.
    #[wraps(cuMemcpyDtoHAsync)]
    #[inline]
    #[track_caller]
    pub unsafe fn copy_to_host_async(&self, dst: &mut [T], stream: &Stream) -> Result<()> {
        check_len("copy_to_host_async", dst.len(), self.len)?;
        check_stream("copy_to_host_async", self.ctx, self.home, stream)?;
        let bytes = self.bytes();
        if bytes == 0 {
            return Ok(());
        }
        let _cur = self.ctx.enter()?;
        call!(
            // SAFETY: lengths agree (checked), the view borrows live device memory of the
            // stream's context, and the caller keeps `dst` valid and untouched until the
            // stream reaches the copy.
            unsafe {
                sys::cuMemcpyDtoHAsync(
                    dst.as_mut_ptr().cast::<c_void>(),
                    self.ptr,
                    bytes,
                    stream.as_raw(),
                )
            },
        )
    }
}

impl<'a, T: DeviceRepr> DeviceSliceMut<'a, T> {
    /// The one constructor of mutable views: every memory kind builds its views here.
    ///
    /// # Safety
    /// As for [`DeviceSlice::from_parts`], for reads and writes, and exclusively: no other
    /// view (shared or mutable) of these bytes is alive for `'a` (the view borrows its owner
    /// mutably, and no other owner or handle can make a view of the same bytes: globals and
    /// managed variables are claimed by address, VMM allocations by handle), and the host
    /// does not access them while work queued through the view may still run.
    #[inline(always)]
    pub(crate) unsafe fn from_parts(
        ptr: sys::CUdeviceptr,
        len: usize,
        ctx: &'a Context,
        home: sys::CUstream,
    ) -> Self {
        DeviceSliceMut {
            ptr,
            len,
            ctx,
            home,
            _marker: PhantomData,
        }
    }

    /// A mutable view of `len` elements at `ptr`, device memory of `ctx` that this crate did
    /// not allocate.
    ///
    /// # Safety
    /// `ptr` is valid for reads and writes of `len * size_of::<T>()` bytes from `ctx` for
    /// `'a`, aligned for `T`; it stays allocated until all work queued through the view has
    /// finished; nothing else accesses that memory while the view lives; and the host does
    /// not access it while work queued through the view may still run.
    #[inline]
    pub unsafe fn borrow_raw(ptr: sys::CUdeviceptr, len: usize, ctx: &'a Context) -> Self {
        // SAFETY: the caller's guarantees, which are `from_parts`' for memory not ordered on a
        // stream.
        unsafe { Self::from_parts(ptr, len, ctx, ptr::null_mut()) }
    }

    view_accessors!();

    /// A shared view of the same elements.
    #[inline]
    pub fn as_view(&self) -> DeviceSlice<'_, T> {
        DeviceSlice {
            ptr: self.ptr,
            len: self.len,
            ctx: self.ctx,
            home: self.home,
            _marker: PhantomData,
        }
    }

    /// The same elements, borrowed from this view for a shorter lifetime.
    #[inline]
    pub fn reborrow(&mut self) -> DeviceSliceMut<'_, T> {
        DeviceSliceMut {
            _marker: PhantomData,
            ..*self
        }
    }

    /// The elements in `range`, as a mutable view for the whole lifetime of this one, which
    /// it consumes; a range outside the view is [`Error::OutOfBounds`].
    #[inline]
    pub fn into_slice_mut(self, range: impl RangeBounds<usize>) -> Result<DeviceSliceMut<'a, T>> {
        let (start, end) = resolve_range(range, self.len)?;
        Ok(DeviceSliceMut {
            ptr: element_addr::<T>(self.ptr, start),
            len: end - start,
            ..self
        })
    }

    /// The elements before `mid` and from `mid` on, as two disjoint mutable views;
    /// `mid > len` is [`Error::OutOfBounds`].
    #[inline]
    pub fn split_at_mut(
        &mut self,
        mid: usize,
    ) -> Result<(DeviceSliceMut<'_, T>, DeviceSliceMut<'_, T>)> {
        let (_, end) = resolve_range(..mid, self.len)?;
        let view = |ptr, len| DeviceSliceMut {
            ptr,
            len,
            ctx: self.ctx,
            home: self.home,
            _marker: PhantomData,
        };
        Ok((
            view(self.ptr, end),
            view(element_addr::<T>(self.ptr, end), self.len - end),
        ))
    }

    /// Copies `src` into the view; the lengths must agree. Returns once `src` has been read:
    /// from page-locked memory the copy is then done, from pageable memory it may still be
    /// on its way to the device (later work on the memory's stream is ordered after it).
    ///
    /// Calls `cuMemcpyHtoD_v2` (`cuMemcpyHtoDAsync_v2` and `cuStreamSynchronize` for
    /// stream-ordered memory).
    ///
    /// Unless the memory is ordered on a stream, not ordered after `NON_BLOCKING` streams'
    /// work: synchronise such a stream first ([stream order](DeviceSlice#stream-order)).
    #[wraps(cuMemcpyHtoDAsync_v2, cuStreamSynchronize, cuMemcpyHtoD)]
    #[inline]
    #[track_caller]
    pub fn copy_from_host(&mut self, src: &[T]) -> Result<()> {
        check_len("copy_from_host", self.len, src.len())?;
        let bytes = self.bytes();
        if bytes == 0 {
            return Ok(());
        }
        let _cur = self.ctx.enter()?;
        let (dst, src) = (self.ptr, src.as_ptr().cast::<c_void>());
        blocking(
            self.home,
            ("cuMemcpyHtoD_v2", "cuMemcpyHtoDAsync_v2"),
            // SAFETY: the view exclusively borrows `bytes` bytes of live device memory; `src`
            // holds as many (lengths checked) and is borrowed for the call.
            || unsafe { sys::cuMemcpyHtoD(dst, src, bytes) },
            // SAFETY: as above, on the memory's own stream, synchronised before `src` is
            // released.
            |s| unsafe { sys::cuMemcpyHtoDAsync(dst, src, bytes, s) },
        )
    }

    /// Queues a copy of `src` into the view on `stream` and returns at once.
    ///
    ///
    /// # Safety
    /// `src` must stay valid, and must not be written by the host, until the stream has
    /// executed the copy.
    #[wraps(cuMemcpyHtoDAsync)]
    #[inline]
    #[track_caller]
    pub unsafe fn copy_from_host_async(&mut self, src: &[T], stream: &Stream) -> Result<()> {
        check_len("copy_from_host_async", self.len, src.len())?;
        check_stream("copy_from_host_async", self.ctx, self.home, stream)?;
        let bytes = self.bytes();
        if bytes == 0 {
            return Ok(());
        }
        let _cur = self.ctx.enter()?;
        call!(
            // SAFETY: lengths agree, the view borrows live device memory of the stream's
            // context, and the caller keeps `src` valid and unchanged until the copy ran.
            unsafe {
                sys::cuMemcpyHtoDAsync(
                    self.ptr,
                    src.as_ptr().cast::<c_void>(),
                    bytes,
                    stream.as_raw(),
                )
            },
        )
    }

    /// Copies device memory of the same context into the view; the lengths must agree. May
    /// still run when this returns (later work on the default stream, or on the memory's
    /// stream, is ordered after it).
    ///
    /// Calls `cuMemcpyDtoD_v2` (`cuMemcpyDtoDAsync_v2` and `cuStreamSynchronize` for
    /// stream-ordered memory).
    ///
    /// Unless the memory is ordered on a stream, not ordered after `NON_BLOCKING` streams'
    /// work: synchronise such a stream first ([stream order](DeviceSlice#stream-order)).
    #[wraps(cuMemcpyDtoDAsync_v2, cuStreamSynchronize, cuMemcpyDtoD)]
    #[inline]
    #[track_caller]
    pub fn copy_from_device(&mut self, src: &DeviceSlice<'_, T>) -> Result<()> {
        check_len("copy_from_device", self.len, src.len)?;
        let home = common_home("copy_from_device", self.home, src.home)?;
        let bytes = self.bytes();
        if bytes == 0 {
            return Ok(());
        }
        let _cur = self.ctx.enter()?;
        let (dst, src) = (self.ptr, src.ptr);
        blocking(
            home,
            ("cuMemcpyDtoD_v2", "cuMemcpyDtoDAsync_v2"),
            // SAFETY: both views borrow `bytes` bytes of live device memory (lengths checked),
            // the destination exclusively.
            || unsafe { sys::cuMemcpyDtoD(dst, src, bytes) },
            // SAFETY: as above, on the stream both are ordered on.
            |s| unsafe { sys::cuMemcpyDtoDAsync(dst, src, bytes, s) },
        )
    }

    /// Queues a copy of device memory of the same context into the view on `stream`; the
    /// lengths must agree.
    #[wraps(cuMemcpyDtoDAsync)]
    #[inline]
    #[track_caller]
    pub fn copy_from_device_async(
        &mut self,
        src: &DeviceSlice<'_, T>,
        stream: &Stream,
    ) -> Result<()> {
        check_len("copy_from_device_async", self.len, src.len)?;
        check_stream("copy_from_device_async", self.ctx, self.home, stream)?;
        check_stream("copy_from_device_async", src.ctx, src.home, stream)?;
        let bytes = self.bytes();
        if bytes == 0 {
            return Ok(());
        }
        let _cur = self.ctx.enter()?;
        call!(
            // SAFETY: both views borrow `bytes` bytes of live device memory of the stream's
            // context (lengths and streams checked); stream-ordered memory is ordered on this
            // stream, other memory is released only after the work of its context (see
            // `DeviceSlice::from_parts`; GPU tests in `release`).
            unsafe { sys::cuMemcpyDtoDAsync(self.ptr, src.ptr, bytes, stream.as_raw()) },
        )
    }

    /// Copies `src`, device memory of another context (typically on another device), into
    /// the view; the lengths must agree. Works without peer access (through the host then);
    /// with [`Context::enable_peer_access`] the copy goes directly between the devices.
    ///
    /// Calls `cuMemcpyPeer` (for stream-ordered memory, `cuMemcpyPeerAsync` on its stream and
    /// `cuStreamSynchronize`).
    ///
    /// Unless the memory is ordered on a stream, not ordered after `NON_BLOCKING` streams'
    /// work: synchronise such a stream first ([stream order](DeviceSlice#stream-order)).
    #[wraps(cuMemcpyPeer, cuMemcpyPeerAsync)]
    #[inline]
    #[track_caller]
    pub fn copy_from_peer(&mut self, src: &DeviceSlice<'_, T>) -> Result<()> {
        check_len("copy_from_peer", self.len, src.len)?;
        let home = common_home("copy_from_peer", self.home, src.home)?;
        let bytes = self.bytes();
        if bytes == 0 {
            return Ok(());
        }
        let _cur = self.ctx.enter()?;
        let src_mem_ctx = src.ctx;
        let (dst, dst_ctx, src, src_ctx) = (self.ptr, self.ctx.as_raw(), src.ptr, src.ctx.as_raw());
        blocking(
            home,
            ("cuMemcpyPeer", "cuMemcpyPeerAsync"),
            // SAFETY: both views borrow `bytes` bytes of live device memory of their contexts,
            // which the views keep alive (lengths checked).
            || unsafe { sys::cuMemcpyPeer(dst, dst_ctx, src, src_ctx, bytes) },
            // SAFETY: as above, on the stream the memory is ordered on.
            |s| unsafe { sys::cuMemcpyPeerAsync(dst, dst_ctx, src, src_ctx, bytes, s) },
        )?;
        if home.is_null() {
            // The copy may still run on this context's legacy stream: the source's context
            // waits for it before releasing memory (see `context::fence`).
            fence_if_foreign(src_mem_ctx, self.ctx, sys::CU_STREAM_LEGACY)?;
        }
        Ok(())
    }

    /// Queues a copy of `src`, device memory of another context, into the view on `stream`, a
    /// stream of either side's context (as `cuMemcpyPeerAsync` allows); the lengths must
    /// agree. The side whose context the stream belongs to follows the usual stream-order
    /// rule; the other side's memory must not be stream-ordered (it cannot be ordered on a
    /// stream of another context: [`Error::StreamMismatch`]), and its context's releases
    /// wait for the copy (one event recorded after it, see `docs/SOUNDNESS.md`), so dropping
    /// either owner early is harmless.
    #[wraps(cuMemcpyPeerAsync)]
    #[inline]
    #[track_caller]
    pub fn copy_from_peer_async(
        &mut self,
        src: &DeviceSlice<'_, T>,
        stream: &Stream,
    ) -> Result<()> {
        const WHAT: &str = "copy_from_peer_async";
        check_len(WHAT, self.len, src.len)?;
        let sctx = stream.context();
        // (the side on the stream's context, the other side)
        let (own, foreign) = if sctx.as_raw() == self.ctx.as_raw() {
            ((self.ctx, self.home), (src.ctx, src.home))
        } else if sctx.as_raw() == src.ctx.as_raw() {
            ((src.ctx, src.home), (self.ctx, self.home))
        } else {
            return Err(context_mismatch(WHAT, self.ctx, stream));
        };
        check_stream(WHAT, own.0, own.1, stream)?;
        if foreign.0.as_raw() == own.0.as_raw() {
            // One context on both sides: the other side's stream order applies too.
            check_stream(WHAT, foreign.0, foreign.1, stream)?;
        } else if !foreign.1.is_null() {
            // Memory of another context ordered on a stream of that context cannot be
            // ordered on this one.
            return Err(Error::StreamMismatch {
                what: WHAT,
                expected: foreign.1 as usize,
                found: stream.as_raw() as usize,
            });
        }
        let bytes = self.bytes();
        if bytes == 0 {
            return Ok(());
        }
        {
            let _cur = sctx.enter()?;
            call!(
                // SAFETY: both views borrow `bytes` bytes of live device memory of their
                // contexts (lengths checked); the side of the stream's context is ordered on
                // `stream` or released by a call that waits for its context's work, and the
                // other side's context waits for the fence recorded below before releasing.
                unsafe {
                    sys::cuMemcpyPeerAsync(
                        self.ptr,
                        self.ctx.as_raw(),
                        src.ptr,
                        src.ctx.as_raw(),
                        bytes,
                        stream.as_raw(),
                    )
                },
            )?;
        }
        fence_if_foreign(foreign.0, sctx, stream.as_raw())
    }

    /// Sets every `W`-sized word of the view to `value` (`u8`, `u16` or `u32`; for `f32`,
    /// `x.to_bits()`); the element size must be a multiple of the word's
    /// ([`LayoutError::MemsetWidth`] otherwise, before any driver call). May still run when this
    /// returns; later work on the default stream (or the memory's stream) is ordered after it.
    ///
    /// Calls `cuMemsetD8_v2`, `cuMemsetD16_v2` or `cuMemsetD32_v2` (their `Async` forms and
    /// `cuStreamSynchronize` for stream-ordered memory).
    ///
    /// Unless the memory is ordered on a stream, not ordered after `NON_BLOCKING` streams'
    /// work: synchronise such a stream first ([stream order](DeviceSlice#stream-order)).
    #[wraps(cuMemsetD8, cuMemsetD16, cuMemsetD32)]
    #[inline]
    #[track_caller]
    pub fn memset<W: MemsetValue>(&mut self, value: W) -> Result<()> {
        let words = memset_count::<T, W>("memset", self.len)?;
        if words == 0 {
            return Ok(());
        }
        let _cur = self.ctx.enter()?;
        let ptr = self.ptr;
        blocking(
            self.home,
            (W::CALL, W::CALL_ASYNC),
            // SAFETY: the view exclusively borrows `words` words of live device memory,
            // aligned for W (allocations are 256-byte aligned and element offsets are
            // multiples of the element size, a multiple of W's).
            || unsafe { value.memset(ptr, words) },
            // SAFETY: as above, on the memory's own stream.
            |s| unsafe { value.memset_async(ptr, words, s) },
        )
    }

    /// Queues setting every `W`-sized word of the view to `value` on `stream`.
    ///
    /// Calls `cuMemsetD8Async`, `cuMemsetD16Async` or `cuMemsetD32Async`.
    #[wraps(cuMemsetD8Async, cuMemsetD16Async, cuMemsetD32Async)]
    #[inline]
    #[track_caller]
    pub fn memset_async<W: MemsetValue>(&mut self, value: W, stream: &Stream) -> Result<()> {
        let words = memset_count::<T, W>("memset_async", self.len)?;
        check_stream("memset_async", self.ctx, self.home, stream)?;
        if words == 0 {
            return Ok(());
        }
        let _cur = self.ctx.enter()?;
        check(
            // SAFETY: as in `memset`; the memory is ordered on `stream`, or freed by
            // released only after the work of its context (see `DeviceSlice::from_parts`;
            // GPU tests in `release`).
            unsafe { value.memset_async(self.ptr, words, stream.as_raw()) },
            W::CALL_ASYNC,
        )
    }
}
