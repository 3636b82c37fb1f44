//! Device memory: [`DeviceBuffer`] and its views [`DeviceSlice`] and [`DeviceSliceMut`].
//!
//! Every copy and memset is implemented once, on the views: [`DeviceSlice`] reads,
//! [`DeviceSliceMut`] writes (and reads through [`DeviceSliceMut::as_slice`]). The buffers
//! ([`DeviceBuffer`], [`AsyncDeviceBuffer`](crate::AsyncDeviceBuffer)) delegate to them. Each
//! operation checks its lengths first, then makes the context current (one `cuCtxGetCurrent`
//! when it already is) and makes one driver call: no allocation, nothing else.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem::size_of;
use std::ops::{Bound, RangeBounds};

use cuda_driver_sys as sys;

use crate::error::{check, report_drop_error, Error, Result};
use crate::{Context, DeviceRepr, Stream};

/// `len * size_of::<T>()`, or an error naming the overflow.
#[inline]
pub(crate) fn byte_len<T>(what: &'static str, len: usize) -> Result<usize> {
    len.checked_mul(size_of::<T>()).ok_or(Error::SizeOverflow {
        what,
        count: len,
        size: size_of::<T>(),
    })
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

/// The number of `width`-byte words in `len` elements of `T`, or an error when the size of
/// `T` is not a multiple of `width` (a memset of 16- or 32-bit words would not cover whole
/// elements).
#[inline]
pub(crate) fn memset_count<T>(what: &'static str, len: usize, width: usize) -> Result<usize> {
    if size_of::<T>() % width != 0 {
        return Err(memset_width_error::<T>(what, width));
    }
    Ok(len * (size_of::<T>() / width))
}

#[cold]
#[inline(never)]
fn memset_width_error<T>(what: &'static str, width: usize) -> Error {
    Error::InvalidArgument(format!(
        "{what} writes {width}-byte words, but the element type {} is {} bytes, not a multiple \
         of {width}",
        std::any::type_name::<T>(),
        size_of::<T>()
    ))
}

/// The address of element `index` of an array of `T` at `ptr`.
#[inline]
fn element_addr<T>(ptr: sys::CUdeviceptr, index: usize) -> sys::CUdeviceptr {
    ptr + (index * size_of::<T>()) as sys::CUdeviceptr
}

/// A typed allocation of device memory (`cuMemAlloc_v2`), freed on drop in its own context.
///
/// The buffer keeps its [`Context`] alive and can be used from any thread: each operation
/// makes the context current first if it is not. Its copies and memsets are those of its
/// views, [`DeviceSlice`] and [`DeviceSliceMut`]; sub-views come from
/// [`slice`](Self::slice) and [`slice_mut`](Self::slice_mut).
///
/// ```no_run
/// use cuda_driver::{Device, DeviceBuffer};
///
/// let ctx = Device::get(0)?.primary_context()?;
/// let mut buf = DeviceBuffer::from_slice(&ctx, &[1u32, 2, 3, 4])?;
/// buf.slice_mut(2..)?.memset_u32(7)?;
/// assert_eq!(buf.to_vec()?, [1, 2, 7, 7]);
/// # Ok::<(), cuda_driver::Error>(())
/// ```
///
/// # Ordering of the blocking operations
///
/// The operations without a stream run on the default stream (the legacy one, or the
/// per-thread one with the `per-thread-default-stream` feature) with the driver's
/// [synchronisation rules](https://docs.nvidia.com/cuda/cuda-driver-api/api-sync-behavior.html):
/// a copy to the host is done when it returns; a copy from page-locked memory too; a copy
/// from pageable memory has read `src` but may still be travelling to the device; memsets and
/// device-to-device copies may still be running. Later work on the default stream, and on
/// streams created with [`StreamFlags::DEFAULT`](crate::StreamFlags::DEFAULT), is ordered
/// after them; work on [`NON_BLOCKING`](crate::StreamFlags::NON_BLOCKING) streams is not:
/// synchronise the default stream first ([`Stream::null`]`(ctx).synchronize()`), or use the
/// `*_async` forms on that stream. The constructors [`zeroed`](Self::zeroed) and
/// [`from_slice`](Self::from_slice) return only when the data is in place.
#[doc(alias = "CUdeviceptr")]
pub struct DeviceBuffer<T: DeviceRepr> {
    /// Kept first and by value: a kernel argument is a pointer to this field.
    pub(crate) ptr: sys::CUdeviceptr,
    pub(crate) len: usize,
    pub(crate) ctx: Context,
    pub(crate) _marker: PhantomData<T>,
}

// SAFETY: device memory is not tied to a host thread; DeviceBuffer<T> only hands out T by copy
// (T: DeviceRepr is Copy + 'static, plain data), and the driver's copy functions are
// thread-safe.
unsafe impl<T: DeviceRepr> Send for DeviceBuffer<T> {}
// SAFETY: shared access only reads device memory through the driver.
unsafe impl<T: DeviceRepr> Sync for DeviceBuffer<T> {}

impl<T: DeviceRepr> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        if self.ptr == 0 {
            return;
        }
        if self.ctx.ensure_current_for_drop() {
            // SAFETY: `ptr` was allocated by cuMemAlloc_v2 in `ctx`, is owned by self and freed
            // once, here. cuMemFree waits for device work still using the memory.
            let r = unsafe { sys::cuMemFree_v2(self.ptr) };
            report_drop_error("cuMemFree_v2", r);
        }
    }
}

impl<T: DeviceRepr> std::fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("len", &self.len)
            .field("type", &std::any::type_name::<T>())
            .finish()
    }
}

impl<T: DeviceRepr> DeviceBuffer<T> {
    /// Allocates room for `len` elements. The contents are unspecified (but every bit pattern
    /// is a valid `T`). A buffer of zero bytes allocates nothing.
    ///
    /// Wraps [`cuMemAlloc_v2`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html).
    #[doc(alias = "cuMemAlloc")]
    #[doc(alias = "cuMemAlloc_v2")]
    #[track_caller]
    pub fn new(ctx: &Context, len: usize) -> Result<Self> {
        let bytes = byte_len::<T>("DeviceBuffer::new", len)?;
        ctx.ensure_current()?;
        let mut ptr = 0;
        if bytes > 0 {
            check(
                // SAFETY: writes one CUdeviceptr; the allocation is owned by the buffer built in
                // the next statement.
                unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes) },
                "cuMemAlloc_v2",
            )?;
        }
        Ok(DeviceBuffer {
            ptr,
            len,
            ctx: ctx.clone(),
            _marker: PhantomData,
        })
    }

    /// Allocates `len` elements with every byte zero, and returns once they are: the buffer
    /// is ready for work on any stream.
    ///
    /// Wraps `cuMemAlloc_v2`, `cuMemsetD8_v2` and `cuStreamSynchronize` of the default stream.
    #[doc(alias = "cuMemsetD8")]
    #[track_caller]
    pub fn zeroed(ctx: &Context, len: usize) -> Result<Self> {
        let mut buf = Self::new(ctx, len)?;
        if buf.bytes() > 0 {
            buf.memset_u8(0)?;
            Stream::null(ctx).synchronize()?;
        }
        Ok(buf)
    }

    /// Allocates a buffer holding a copy of `src`, and returns once the copy has landed: the
    /// buffer is ready for work on any stream.
    ///
    /// Wraps `cuMemAlloc_v2`, `cuMemcpyHtoD_v2` and, for a pageable `src` whose copy may
    /// still be in flight, `cuStreamSynchronize` of the default stream.
    #[doc(alias = "cuMemcpyHtoD")]
    #[track_caller]
    pub fn from_slice(ctx: &Context, src: &[T]) -> Result<Self> {
        let mut buf = Self::new(ctx, src.len())?;
        if buf.bytes() > 0 {
            buf.copy_from_host(src)?;
            Stream::null(ctx).synchronize()?;
        }
        Ok(buf)
    }

    /// Takes ownership of `len` elements at `ptr`, allocated with `cuMemAlloc` in `ctx`.
    ///
    /// # Safety
    /// `ptr` was returned by `cuMemAlloc*` in `ctx` for at least `len * size_of::<T>()` bytes
    /// (or is 0 with a zero-byte length) and nothing else frees it.
    pub unsafe fn from_raw(ctx: &Context, ptr: sys::CUdeviceptr, len: usize) -> Self {
        DeviceBuffer {
            ptr,
            len,
            ctx: ctx.clone(),
            _marker: PhantomData,
        }
    }

    /// Gives up ownership; the caller frees the pointer with `cuMemFree`.
    pub fn into_raw(self) -> sys::CUdeviceptr {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: `this` is never dropped; the context clone is dropped exactly once here.
        unsafe { std::ptr::read(&this.ctx) };
        this.ptr
    }
}

device_memory_accessors! {
    impl<T> DeviceBuffer<T>, "buffer" {
        /// The device address, valid while `self` lives (0 for a buffer of zero bytes).
        fn as_raw;
        /// The buffer's context.
        fn context(buf) -> &Context { &buf.ctx }
    }
}

delegate_to_views!(impl<T> DeviceBuffer<T>);

/// A shared view of part of a [`DeviceBuffer`] (or of other device memory), borrowed from it.
///
/// A view cannot outlive its buffer:
///
/// ```compile_fail
/// # fn f(ctx: &cuda_driver::Context) -> cuda_driver::Result<()> {
/// let view = {
///     let buf = cuda_driver::DeviceBuffer::<f32>::new(ctx, 16)?;
///     buf.as_slice()
/// };
/// # drop(view); Ok(()) }
/// ```
#[derive(Clone, Copy)]
pub struct DeviceSlice<'a, T: DeviceRepr> {
    /// Kept first and by value: a kernel argument is a pointer to this field.
    pub(crate) ptr: sys::CUdeviceptr,
    pub(crate) len: usize,
    pub(crate) ctx: &'a Context,
    pub(crate) _marker: PhantomData<&'a T>,
}

/// A mutable view of part of a [`DeviceBuffer`], borrowed exclusively from it.
///
/// Two mutable views of one buffer cannot coexist, except as disjoint halves from
/// [`split_at_mut`](Self::split_at_mut):
///
/// ```compile_fail
/// # fn f(ctx: &cuda_driver::Context) -> cuda_driver::Result<()> {
/// let mut buf = cuda_driver::DeviceBuffer::<f32>::new(ctx, 16)?;
/// let mut a = buf.slice_mut(..8)?;
/// let b = buf.slice(8..)?;
/// a.copy_from_device(&b)?;
/// # Ok(()) }
/// ```
pub struct DeviceSliceMut<'a, T: DeviceRepr> {
    /// Kept first and by value: a kernel argument is a pointer to this field.
    pub(crate) ptr: sys::CUdeviceptr,
    pub(crate) len: usize,
    pub(crate) ctx: &'a Context,
    pub(crate) _marker: PhantomData<&'a mut T>,
}

// SAFETY: a view is a borrowed device address; see DeviceBuffer.
unsafe impl<T: DeviceRepr> Send for DeviceSlice<'_, T> {}
// SAFETY: as above.
unsafe impl<T: DeviceRepr> Sync for DeviceSlice<'_, T> {}
// SAFETY: as above; exclusive by construction (borrows the buffer mutably).
unsafe impl<T: DeviceRepr> Send for DeviceSliceMut<'_, T> {}
// SAFETY: as above.
unsafe impl<T: DeviceRepr> Sync for DeviceSliceMut<'_, T> {}

impl<T: DeviceRepr> std::fmt::Debug for DeviceSlice<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceSlice")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("len", &self.len)
            .finish()
    }
}

impl<T: DeviceRepr> std::fmt::Debug for DeviceSliceMut<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceSliceMut")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("len", &self.len)
            .finish()
    }
}

device_memory_accessors! {
    impl<'a, T> DeviceSlice<'a, T>, "view" {
        /// A view of `len` elements at `ptr`, device-accessible memory of `ctx` that this crate
        /// did not allocate (another library's, or the device address of mapped page-locked
        /// memory).
        ///
        /// # Safety
        /// `ptr` is valid for reads of `len * size_of::<T>()` bytes from `ctx` for `'a`, and the
        /// host does not write that memory while the view or work queued through it may read
        /// it.
        unsafe fn from_raw;
        /// The device address of the first element.
        fn as_raw;
        /// The context of the memory.
        fn context;
    }
}

device_memory_accessors! {
    impl<'a, T> DeviceSliceMut<'a, T>, "view" {
        /// A mutable view of `len` elements at `ptr`, device memory of `ctx` that this crate did
        /// not allocate.
        ///
        /// # Safety
        /// `ptr` is valid for reads and writes of `len * size_of::<T>()` bytes from `ctx` for
        /// `'a`; nothing else accesses that memory while the view lives; and the host does not
        /// access it while work queued through the view (the `*_async` operations, or blocking
        /// device-to-device copies, which return before they are done) may still run.
        unsafe fn from_raw;
        /// The device address of the first element.
        fn as_raw;
        /// The context of the memory.
        fn context;
    }
}

impl<'a, T: DeviceRepr> DeviceSlice<'a, T> {
    /// The elements in `range`, as a view borrowed from the same buffer; a range outside the
    /// view is [`Error::OutOfBounds`].
    #[inline]
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceSlice<'a, T>> {
        let (start, end) = resolve_range(range, self.len)?;
        Ok(DeviceSlice {
            ptr: element_addr::<T>(self.ptr, start),
            len: end - start,
            ctx: self.ctx,
            _marker: PhantomData,
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
    /// Wraps [`cuMemcpyDtoH_v2`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html).
    #[doc(alias = "cuMemcpyDtoH")]
    #[doc(alias = "cuMemcpyDtoH_v2")]
    #[inline]
    #[track_caller]
    pub fn copy_to_host(&self, dst: &mut [T]) -> Result<()> {
        check_len("copy_to_host", dst.len(), self.len)?;
        // SAFETY: `dst` is valid for writes of `self.len` elements (lengths checked above)
        // and exclusively borrowed for the call.
        unsafe { self.read_into(dst.as_mut_ptr()) }
    }

    /// Copies the view into a new `Vec`.
    ///
    /// Wraps `cuMemcpyDtoH_v2`.
    #[doc(alias = "cuMemcpyDtoH")]
    #[doc(alias = "cuMemcpyDtoH_v2")]
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

    /// The one device-to-host copy: `self.bytes()` bytes into `dst`.
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
        self.ctx.ensure_current()?;
        check(
            // SAFETY: the view covers `bytes` bytes of live device memory of the current context
            // (it borrows its buffer); the caller guarantees `dst` holds as many.
            unsafe { sys::cuMemcpyDtoH(dst.cast::<c_void>(), self.ptr, bytes) },
            "cuMemcpyDtoH_v2",
        )
    }

    /// Queues a copy of the view into `dst` on `stream` and returns at once; the copy is done
    /// when the stream has reached it (after [`Stream::synchronize`], or an event recorded
    /// after it). Into page-locked memory ([`PinnedBuffer`](crate::PinnedBuffer),
    /// [`HostRegistration`](crate::HostRegistration)) the copy is truly asynchronous; into
    /// pageable memory the driver may block until it is done.
    ///
    /// Wraps `cuMemcpyDtoHAsync_v2`.
    ///
    /// # Safety
    /// `dst` must stay valid, and must be neither read nor written by the host, until the
    /// stream has executed the copy: the borrow ends when this function returns, but the
    /// device writes to `dst` later.
    #[doc(alias = "cuMemcpyDtoHAsync")]
    #[doc(alias = "cuMemcpyDtoHAsync_v2")]
    #[inline]
    #[track_caller]
    pub unsafe fn copy_to_host_async(&self, dst: &mut [T], stream: &Stream) -> Result<()> {
        check_len("copy_to_host_async", dst.len(), self.len)?;
        let bytes = self.bytes();
        if bytes == 0 {
            return Ok(());
        }
        stream.context().ensure_current()?;
        check(
            // SAFETY: lengths agree (checked), the view borrows live device memory, and the caller
            // keeps `dst` valid and untouched until the stream reaches the copy.
            unsafe {
                sys::cuMemcpyDtoHAsync(
                    dst.as_mut_ptr().cast::<c_void>(),
                    self.ptr,
                    bytes,
                    stream.as_raw(),
                )
            },
            "cuMemcpyDtoHAsync_v2",
        )
    }
}

impl<'a, T: DeviceRepr> DeviceSliceMut<'a, T> {
    /// A shared view of the same elements.
    #[inline]
    pub fn as_slice(&self) -> DeviceSlice<'_, T> {
        DeviceSlice {
            ptr: self.ptr,
            len: self.len,
            ctx: self.ctx,
            _marker: PhantomData,
        }
    }

    /// The elements in `range`, as a shared view; a range outside the view is
    /// [`Error::OutOfBounds`].
    #[inline]
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceSlice<'_, T>> {
        self.as_slice().slice(range)
    }

    /// The elements in `range`, as a mutable view; a range outside the view is
    /// [`Error::OutOfBounds`].
    #[inline]
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceSliceMut<'_, T>> {
        self.reborrow().into_slice_mut(range)
    }

    /// The elements in `range`, as a mutable view for the whole lifetime of this one, which
    /// it consumes; a range outside the view is [`Error::OutOfBounds`].
    #[inline]
    pub fn into_slice_mut(self, range: impl RangeBounds<usize>) -> Result<DeviceSliceMut<'a, T>> {
        let (start, end) = resolve_range(range, self.len)?;
        Ok(DeviceSliceMut {
            ptr: element_addr::<T>(self.ptr, start),
            len: end - start,
            ctx: self.ctx,
            _marker: PhantomData,
        })
    }

    /// The same elements, borrowed from this view for a shorter lifetime.
    #[inline]
    pub fn reborrow(&mut self) -> DeviceSliceMut<'_, T> {
        DeviceSliceMut {
            ptr: self.ptr,
            len: self.len,
            ctx: self.ctx,
            _marker: PhantomData,
        }
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
            _marker: PhantomData,
        };
        Ok((
            view(self.ptr, end),
            view(element_addr::<T>(self.ptr, end), self.len - end),
        ))
    }

    /// Copies the view into `dst`; see [`DeviceSlice::copy_to_host`].
    #[doc(alias = "cuMemcpyDtoH")]
    #[doc(alias = "cuMemcpyDtoH_v2")]
    #[inline]
    #[track_caller]
    pub fn copy_to_host(&self, dst: &mut [T]) -> Result<()> {
        self.as_slice().copy_to_host(dst)
    }

    /// Copies the view into a new `Vec`; see [`DeviceSlice::to_vec`].
    #[track_caller]
    pub fn to_vec(&self) -> Result<Vec<T>> {
        self.as_slice().to_vec()
    }

    /// Queues a copy of the view into `dst` on `stream`; see
    /// [`DeviceSlice::copy_to_host_async`].
    ///
    /// # Safety
    /// As for [`DeviceSlice::copy_to_host_async`]: `dst` must stay valid, and be neither read
    /// nor written by the host, until the stream has executed the copy.
    #[doc(alias = "cuMemcpyDtoHAsync")]
    #[doc(alias = "cuMemcpyDtoHAsync_v2")]
    #[inline]
    #[track_caller]
    pub unsafe fn copy_to_host_async(&self, dst: &mut [T], stream: &Stream) -> Result<()> {
        // SAFETY: the caller upholds the same contract.
        unsafe { self.as_slice().copy_to_host_async(dst, stream) }
    }

    /// Copies `src` into the view; the lengths must agree. When it returns, `src` has been
    /// read and may be changed; from page-locked memory the copy is complete, from pageable
    /// memory it may still be travelling from the driver's staging buffer (see
    /// [ordering](crate::DeviceBuffer#ordering-of-the-blocking-operations)).
    ///
    /// Wraps [`cuMemcpyHtoD_v2`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html).
    #[doc(alias = "cuMemcpyHtoD")]
    #[doc(alias = "cuMemcpyHtoD_v2")]
    #[inline]
    #[track_caller]
    pub fn copy_from_host(&mut self, src: &[T]) -> Result<()> {
        check_len("copy_from_host", self.len, src.len())?;
        let bytes = self.bytes();
        if bytes == 0 {
            return Ok(());
        }
        self.ctx.ensure_current()?;
        check(
            // SAFETY: lengths agree (checked), `src` is readable for `bytes` bytes, and the view
            // exclusively borrows `bytes` bytes of live device memory of the current context.
            unsafe { sys::cuMemcpyHtoD(self.ptr, src.as_ptr().cast::<c_void>(), bytes) },
            "cuMemcpyHtoD_v2",
        )
    }

    /// Queues a copy of `src` into the view on `stream` and returns at once; the copy is done
    /// when the stream has reached it. From page-locked memory
    /// ([`PinnedBuffer`](crate::PinnedBuffer), [`HostRegistration`](crate::HostRegistration))
    /// the copy is truly asynchronous; from pageable memory the driver stages it and may
    /// block.
    ///
    /// Wraps `cuMemcpyHtoDAsync_v2`.
    ///
    /// # Safety
    /// `src` must stay valid, and must not be written by the host, until the stream has
    /// executed the copy (see [`Stream::synchronize`]): the borrow ends when this function
    /// returns, but the device reads `src` later.
    #[doc(alias = "cuMemcpyHtoDAsync")]
    #[doc(alias = "cuMemcpyHtoDAsync_v2")]
    #[inline]
    #[track_caller]
    pub unsafe fn copy_from_host_async(&mut self, src: &[T], stream: &Stream) -> Result<()> {
        check_len("copy_from_host_async", self.len, src.len())?;
        let bytes = self.bytes();
        if bytes == 0 {
            return Ok(());
        }
        stream.context().ensure_current()?;
        check(
            // SAFETY: lengths agree (checked), the view borrows live device memory, and the caller
            // keeps `src` valid and unwritten until the stream reaches the copy.
            unsafe {
                sys::cuMemcpyHtoDAsync(
                    self.ptr,
                    src.as_ptr().cast::<c_void>(),
                    bytes,
                    stream.as_raw(),
                )
            },
            "cuMemcpyHtoDAsync_v2",
        )
    }

    /// Copies `src` (device memory of the same context, or of another one on a device with
    /// unified addressing) into the view; the lengths must agree. The copy runs on the
    /// default stream and may still run when this returns: later blocking copies to the host
    /// see its result (see
    /// [ordering](crate::DeviceBuffer#ordering-of-the-blocking-operations)). For memory of
    /// another device's context, [`copy_from_peer`] says so explicitly.
    ///
    /// Wraps `cuMemcpyDtoD_v2`.
    ///
    /// [`copy_from_peer`]: Self::copy_from_peer
    #[doc(alias = "cuMemcpyDtoD")]
    #[doc(alias = "cuMemcpyDtoD_v2")]
    #[inline]
    #[track_caller]
    pub fn copy_from_device(&mut self, src: &DeviceSlice<'_, T>) -> Result<()> {
        check_len("copy_from_device", self.len, src.len)?;
        let bytes = self.bytes();
        if bytes == 0 {
            return Ok(());
        }
        self.ctx.ensure_current()?;
        check(
            // SAFETY: both views borrow `bytes` bytes of live device memory (lengths checked); they
            // cannot overlap, as `self` borrows its memory exclusively.
            unsafe { sys::cuMemcpyDtoD(self.ptr, src.ptr, bytes) },
            "cuMemcpyDtoD_v2",
        )
    }

    /// Queues a copy of `src` into the view on `stream`; the lengths must agree.
    ///
    /// Both sides are device memory, so this is safe: the host never sees the memory while
    /// the copy runs. Ordering it against other streams (and against blocking operations,
    /// which run on the legacy default stream) is up to the caller.
    ///
    /// Wraps `cuMemcpyDtoDAsync_v2`.
    #[doc(alias = "cuMemcpyDtoDAsync")]
    #[doc(alias = "cuMemcpyDtoDAsync_v2")]
    #[inline]
    #[track_caller]
    pub fn copy_from_device_async(
        &mut self,
        src: &DeviceSlice<'_, T>,
        stream: &Stream,
    ) -> Result<()> {
        check_len("copy_from_device_async", self.len, src.len)?;
        let bytes = self.bytes();
        if bytes == 0 {
            return Ok(());
        }
        stream.context().ensure_current()?;
        check(
            // SAFETY: both views borrow `bytes` bytes of live device memory (lengths checked);
            // freeing either waits for the copy (cuMemFree synchronises).
            unsafe { sys::cuMemcpyDtoDAsync(self.ptr, src.ptr, bytes, stream.as_raw()) },
            "cuMemcpyDtoDAsync_v2",
        )
    }

    /// Copies `src`, device memory of another context (typically on another device), into
    /// the view; the lengths must agree. Works without peer access (through the host then);
    /// with [`Context::enable_peer_access`] the copy goes directly between the devices.
    ///
    /// Wraps `cuMemcpyPeer`.
    #[doc(alias = "cuMemcpyPeer")]
    #[inline]
    #[track_caller]
    pub fn copy_from_peer(&mut self, src: &DeviceSlice<'_, T>) -> Result<()> {
        check_len("copy_from_peer", self.len, src.len)?;
        let bytes = self.bytes();
        if bytes == 0 {
            return Ok(());
        }
        self.ctx.ensure_current()?;
        check(
            // SAFETY: both views borrow `bytes` bytes of live device memory of their contexts,
            // which the views keep alive (lengths checked).
            unsafe {
                sys::cuMemcpyPeer(
                    self.ptr,
                    self.ctx.as_raw(),
                    src.ptr,
                    src.ctx.as_raw(),
                    bytes,
                )
            },
            "cuMemcpyPeer",
        )
    }

    /// Queues a copy of `src`, device memory of another context, into the view on `stream`
    /// (a stream of either context); the lengths must agree.
    ///
    /// Wraps `cuMemcpyPeerAsync`.
    #[doc(alias = "cuMemcpyPeerAsync")]
    #[inline]
    #[track_caller]
    pub fn copy_from_peer_async(
        &mut self,
        src: &DeviceSlice<'_, T>,
        stream: &Stream,
    ) -> Result<()> {
        check_len("copy_from_peer_async", self.len, src.len)?;
        let bytes = self.bytes();
        if bytes == 0 {
            return Ok(());
        }
        stream.context().ensure_current()?;
        check(
            // SAFETY: both views borrow `bytes` bytes of live device memory of their contexts
            // (lengths checked); freeing either waits for the copy.
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
            "cuMemcpyPeerAsync",
        )
    }

    /// The one memset: checks the element size against `width`, makes `ctx` current and
    /// calls `f(address, words)`.
    #[inline]
    #[track_caller]
    fn memset_with(
        &mut self,
        what: &'static str,
        width: usize,
        ctx: &Context,
        call: &'static str,
        f: impl FnOnce(sys::CUdeviceptr, usize) -> sys::CUresult,
    ) -> Result<()> {
        let words = memset_count::<T>(what, self.len, width)?;
        if words == 0 {
            return Ok(());
        }
        ctx.ensure_current()?;
        check(f(self.ptr, words), call)
    }

    /// Sets every byte of the view to `value`. Runs on the default stream, and may still run
    /// when this returns: later blocking copies to the host see it (see
    /// [ordering](crate::DeviceBuffer#ordering-of-the-blocking-operations)).
    ///
    /// Wraps `cuMemsetD8_v2`.
    #[doc(alias = "cuMemsetD8")]
    #[doc(alias = "cuMemsetD8_v2")]
    #[inline]
    #[track_caller]
    pub fn memset_u8(&mut self, value: u8) -> Result<()> {
        let ctx = self.ctx;
        self.memset_with("memset_u8", 1, ctx, "cuMemsetD8_v2", |ptr, n| {
            // SAFETY: the view exclusively borrows `n` bytes of live device memory.
            unsafe { sys::cuMemsetD8(ptr, value, n) }
        })
    }

    /// Sets every 16-bit word of the view to `value`; the size of `T` must be a multiple of
    /// 2 bytes ([`Error::InvalidArgument`] otherwise, before any driver call).
    ///
    /// Wraps `cuMemsetD16_v2`.
    #[doc(alias = "cuMemsetD16")]
    #[doc(alias = "cuMemsetD16_v2")]
    #[inline]
    #[track_caller]
    pub fn memset_u16(&mut self, value: u16) -> Result<()> {
        let ctx = self.ctx;
        self.memset_with("memset_u16", 2, ctx, "cuMemsetD16_v2", |ptr, n| {
            // SAFETY: the view exclusively borrows `n` 16-bit words of live device memory,
            // 2-byte aligned (allocations are 256-byte aligned, element offsets are multiples
            // of the element size, a multiple of 2).
            unsafe { sys::cuMemsetD16(ptr, value, n) }
        })
    }

    /// Sets every 32-bit word of the view to `value` (for `f32`: `x.to_bits()`); the size of
    /// `T` must be a multiple of 4 bytes ([`Error::InvalidArgument`] otherwise, before any
    /// driver call).
    ///
    /// Wraps `cuMemsetD32_v2`.
    #[doc(alias = "cuMemsetD32")]
    #[doc(alias = "cuMemsetD32_v2")]
    #[inline]
    #[track_caller]
    pub fn memset_u32(&mut self, value: u32) -> Result<()> {
        let ctx = self.ctx;
        self.memset_with("memset_u32", 4, ctx, "cuMemsetD32_v2", |ptr, n| {
            // SAFETY: the view exclusively borrows `n` 32-bit words of live device memory,
            // 4-byte aligned (as for memset_u16).
            unsafe { sys::cuMemsetD32(ptr, value, n) }
        })
    }

    /// Queues setting every byte of the view to `value` on `stream`.
    ///
    /// Wraps `cuMemsetD8Async`.
    #[doc(alias = "cuMemsetD8Async")]
    #[inline]
    #[track_caller]
    pub fn memset_u8_async(&mut self, value: u8, stream: &Stream) -> Result<()> {
        let raw = stream.as_raw();
        self.memset_with(
            "memset_u8_async",
            1,
            stream.context(),
            "cuMemsetD8Async",
            |ptr, n| {
                // SAFETY: the view borrows `n` bytes of live device memory; freeing it waits for
                // the memset.
                unsafe { sys::cuMemsetD8Async(ptr, value, n, raw) }
            },
        )
    }

    /// Queues setting every 16-bit word of the view to `value` on `stream`; the size of `T`
    /// must be a multiple of 2 bytes.
    ///
    /// Wraps `cuMemsetD16Async`.
    #[doc(alias = "cuMemsetD16Async")]
    #[inline]
    #[track_caller]
    pub fn memset_u16_async(&mut self, value: u16, stream: &Stream) -> Result<()> {
        let raw = stream.as_raw();
        self.memset_with(
            "memset_u16_async",
            2,
            stream.context(),
            "cuMemsetD16Async",
            |ptr, n| {
                // SAFETY: as memset_u16; freeing the memory waits for the memset.
                unsafe { sys::cuMemsetD16Async(ptr, value, n, raw) }
            },
        )
    }

    /// Queues setting every 32-bit word of the view to `value` on `stream`; the size of `T`
    /// must be a multiple of 4 bytes.
    ///
    /// Wraps `cuMemsetD32Async`.
    #[doc(alias = "cuMemsetD32Async")]
    #[inline]
    #[track_caller]
    pub fn memset_u32_async(&mut self, value: u32, stream: &Stream) -> Result<()> {
        let raw = stream.as_raw();
        self.memset_with(
            "memset_u32_async",
            4,
            stream.context(),
            "cuMemsetD32Async",
            |ptr, n| {
                // SAFETY: as memset_u32; freeing the memory waits for the memset.
                unsafe { sys::cuMemsetD32Async(ptr, value, n, raw) }
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::mem::ManuallyDrop;

    /// A context handle that is never used by the driver: every test below must fail before
    /// any driver call (on the stub, a driver call would fail with CUDA_ERROR_STUB_LIBRARY,
    /// not with the Rust-side error the tests expect).
    fn fake_context() -> ManuallyDrop<Context> {
        // SAFETY: the handle is never passed to the driver (the tests check that they fail
        // first) and never dropped (ManuallyDrop), so nothing destroys the null context.
        ManuallyDrop::new(unsafe {
            Context::from_raw(std::ptr::null_mut(), crate::Device::from_raw(0))
        })
    }

    fn fake_buffer<T: DeviceRepr>(ctx: &Context, len: usize) -> ManuallyDrop<DeviceBuffer<T>> {
        // SAFETY: never dropped (ManuallyDrop) and never handed to the driver.
        ManuallyDrop::new(unsafe { DeviceBuffer::from_raw(ctx, 0x1000, len) })
    }

    fn is_mismatch(r: Result<()>, what: &str, dst: usize, src: usize) -> bool {
        matches!(r, Err(Error::LengthMismatch { what: w, dst: d, src: s }) if w == what && d == dst && s == src)
    }

    #[test]
    fn length_mismatches_fail_before_any_driver_call() {
        let ctx = fake_context();
        let mut buf = fake_buffer::<f32>(&ctx, 4);
        let other = fake_buffer::<f32>(&ctx, 3);
        let host3 = [1.0f32; 3];
        let mut host5 = [0.0f32; 5];
        assert!(is_mismatch(
            buf.copy_from_host(&host3),
            "copy_from_host",
            4,
            3
        ));
        assert!(is_mismatch(
            buf.copy_to_host(&mut host5),
            "copy_to_host",
            5,
            4
        ));
        assert!(is_mismatch(
            buf.copy_from_device(&other.as_slice()),
            "copy_from_device",
            4,
            3
        ));
        assert!(is_mismatch(
            buf.copy_from_peer(&other.as_slice()),
            "copy_from_peer",
            4,
            3
        ));
        let stream = ManuallyDrop::new(Stream::null(&ctx));
        // SAFETY: the calls fail on the length check, before anything is queued.
        unsafe {
            assert!(is_mismatch(
                buf.copy_from_host_async(&host3, &stream),
                "copy_from_host_async",
                4,
                3
            ));
            assert!(is_mismatch(
                buf.copy_to_host_async(&mut host5, &stream),
                "copy_to_host_async",
                5,
                4
            ));
        }
        assert!(is_mismatch(
            buf.copy_from_device_async(&other.as_slice(), &stream),
            "copy_from_device_async",
            4,
            3
        ));
        assert!(is_mismatch(
            buf.copy_from_peer_async(&other.as_slice(), &stream),
            "copy_from_peer_async",
            4,
            3
        ));
        // Through views too.
        let mut view = buf.slice_mut(1..3).unwrap();
        assert!(is_mismatch(
            view.copy_from_host(&host3),
            "copy_from_host",
            2,
            3
        ));
    }

    #[test]
    fn empty_copies_make_no_driver_call() {
        let ctx = fake_context();
        let mut buf = fake_buffer::<u64>(&ctx, 0);
        buf.copy_from_host(&[]).unwrap();
        buf.copy_to_host(&mut []).unwrap();
        assert!(buf.to_vec().unwrap().is_empty());
        buf.memset_u32(1).unwrap();
    }

    #[test]
    fn out_of_bounds_views_name_the_values() {
        let ctx = fake_context();
        let mut buf = fake_buffer::<u32>(&ctx, 10);
        let e = buf.slice(4..11).unwrap_err();
        assert!(
            matches!(
                e,
                Error::OutOfBounds {
                    start: 4,
                    end: 11,
                    len: 10
                }
            ),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "range 4..11 is out of bounds of a buffer of 10 elements"
        );
        #[allow(clippy::reversed_empty_ranges)]
        let e = buf.slice_mut(6..5).unwrap_err();
        assert!(matches!(
            e,
            Error::OutOfBounds {
                start: 6,
                end: 5,
                len: 10
            }
        ));
        let e = buf.slice(..=usize::MAX).unwrap_err();
        assert!(matches!(
            e,
            Error::OutOfBounds {
                end: usize::MAX,
                ..
            }
        ));
        assert!(buf.as_slice().split_at(11).is_err());
        assert!(buf.as_mut_slice().split_at_mut(11).is_err());
        // A view of a view is bounded by the view.
        let v = buf.slice(2..6).unwrap();
        assert!(matches!(
            v.slice(3..5),
            Err(Error::OutOfBounds {
                start: 3,
                end: 5,
                len: 4
            })
        ));
    }

    #[test]
    fn views_address_the_right_elements() {
        let ctx = fake_context();
        let mut buf = fake_buffer::<[f32; 3]>(&ctx, 10);
        let v = buf.slice(2..7).unwrap();
        assert_eq!((v.as_raw(), v.len(), v.bytes()), (0x1000 + 24, 5, 60));
        let w = v.slice(1..=2).unwrap();
        assert_eq!((w.as_raw(), w.len()), (0x1000 + 36, 2));
        let (a, b) = v.split_at(5).unwrap();
        assert_eq!((a.len(), b.len(), b.as_raw()), (5, 0, 0x1000 + 84));
        let mut m = buf.as_mut_slice();
        let (a, b) = m.split_at_mut(4).unwrap();
        assert_eq!((a.as_raw(), a.len()), (0x1000, 4));
        assert_eq!((b.as_raw(), b.len()), (0x1000 + 48, 6));
        assert_eq!(buf.bytes(), 120);
    }

    #[test]
    fn memset_width_must_divide_the_element_size() {
        let ctx = fake_context();
        let mut bytes = fake_buffer::<u8>(&ctx, 8);
        let e = bytes.memset_u16(1).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
        assert!(
            e.to_string().contains("memset_u16 writes 2-byte words"),
            "{e}"
        );
        assert!(bytes.memset_u32(1).is_err());
        let mut three = fake_buffer::<[u8; 3]>(&ctx, 8);
        assert!(three.memset_u16(1).is_err());
        let mut sixes = fake_buffer::<[u16; 3]>(&ctx, 8);
        assert!(sixes.memset_u32(1).is_err());
        let stream = ManuallyDrop::new(Stream::null(&ctx));
        assert!(bytes.memset_u32_async(1, &stream).is_err());
        assert_eq!(memset_count::<[u16; 3]>("m", 8, 2).unwrap(), 24);
        assert_eq!(memset_count::<f64>("m", 8, 4).unwrap(), 16);
        assert_eq!(memset_count::<u8>("m", 8, 1).unwrap(), 8);
    }

    #[test]
    fn byte_size_overflow_is_an_error() {
        let e = byte_len::<u64>("DeviceBuffer::new", usize::MAX / 4).unwrap_err();
        assert!(matches!(
            e,
            Error::SizeOverflow { count, size: 8, .. } if count == usize::MAX / 4
        ));
        assert_eq!(byte_len::<u64>("x", 3).unwrap(), 24);
        let ctx = fake_context();
        // The overflow is found before the context is made current.
        assert!(matches!(
            DeviceBuffer::<u64>::new(&ctx, usize::MAX / 4),
            Err(Error::SizeOverflow { .. })
        ));
    }

    proptest! {
        #[test]
        fn resolve_range_accepts_exactly_the_ranges_inside(a in 0usize..40, b in 0usize..40, len in 0usize..32) {
            let r = resolve_range(a..b, len);
            if a <= b && b <= len {
                prop_assert_eq!(r.unwrap(), (a, b));
            } else {
                let is_oob = matches!(r, Err(Error::OutOfBounds { start, end, len: l }) if start == a && end == b && l == len);
                prop_assert!(is_oob);
            }
            let r = resolve_range(a..=b, len);
            prop_assert_eq!(r.is_ok(), a <= b + 1 && b < len);
        }
    }
}
