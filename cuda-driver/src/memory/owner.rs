//! The owner side of the memory model: [`DeviceMemory`] and [`DeviceMemoryMut`].
//!
//! A memory kind implements these two traits (one method each: hand out a view) and gets
//! every copy, memset and slicing operation, all implemented once on the views. A kernel
//! takes the views themselves as arguments (`buf.as_view()`, `buf.as_view_mut()`).
//!
//! | Owner | Allocated by | Freed by |
//! |---|---|---|
//! | [`DeviceBuffer`](crate::DeviceBuffer) | `cuMemAlloc_v2` | `cuMemFree_v2` |
//! | [`AsyncDeviceBuffer`](crate::memory::pool::AsyncDeviceBuffer) | `cuMemAllocAsync`, `cuMemAllocFromPoolAsync` | `cuMemFreeAsync` on its stream |
//! | [`ManagedBuffer`](crate::memory::ManagedBuffer) | `cuMemAllocManaged` | `cuMemFree_v2` |
//! | [`Global`](crate::module::Global) | a module's `__device__` variable | nothing (the module) |
//! | [`DeviceSlice`], [`DeviceSliceMut`] | borrowed | nothing |
//!
//! The device side of page-locked host memory ([`PinnedBuffer::with_device_view_mut`](crate::PinnedBuffer::with_device_view_mut))
//! and of library `__managed__` variables ([`Managed::view`](crate::library::Managed::view)) are views
//! too.

use std::ops::RangeBounds;

use cuda_driver_macros::wraps;
use cuda_driver_sys as sys;

use super::view::MemsetValue;
use crate::context::Context;
use crate::error::Result;
use crate::memory::view::{DeviceSlice, DeviceSliceMut};
use crate::repr::DeviceRepr;
use crate::stream::Stream;

/// Device memory of [`Elem`](Self::Elem)s that hands out shared views: every memory owner,
/// and the views themselves. Its provided methods are the read side of the memory model.
///
/// # Safety
/// [`as_view`](Self::as_view) returns a view of memory that `self` owns or borrows, valid for
/// as long as `self` is borrowed, whose context and stream order are the memory's.
pub unsafe trait DeviceMemory {
    /// The element type.
    type Elem: DeviceRepr;

    /// The whole memory as a shared view.
    fn as_view(&self) -> DeviceSlice<'_, Self::Elem>;

    /// The device address of the first element, valid while `self` lives.
    #[inline]
    fn device_ptr(&self) -> sys::CUdeviceptr {
        self.as_view().as_raw()
    }

    /// Number of elements.
    #[inline]
    fn len(&self) -> usize {
        self.as_view().len()
    }

    /// Whether the memory holds no elements.
    #[inline]
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Size in bytes.
    #[inline]
    fn bytes(&self) -> usize {
        self.as_view().bytes()
    }

    /// The context of the memory.
    #[inline]
    fn context(&self) -> &Context {
        self.as_view().context()
    }

    /// The elements in `range`, as a shared view; a range outside the memory is
    /// [`Error::OutOfBounds`](crate::Error::OutOfBounds).
    #[inline]
    fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceSlice<'_, Self::Elem>> {
        self.as_view().slice(range)
    }

    /// Copies the memory into `dst`; see [`DeviceSlice::copy_to_host`].
    #[wraps(cuMemcpyDtoH)]
    #[inline]
    #[track_caller]
    fn copy_to_host(&self, dst: &mut [Self::Elem]) -> Result<()> {
        self.as_view().copy_to_host(dst)
    }

    /// Copies the memory into a new `Vec`; see [`DeviceSlice::to_vec`].
    #[inline]
    #[track_caller]
    fn to_vec(&self) -> Result<Vec<Self::Elem>> {
        self.as_view().to_vec()
    }

    /// Queues a copy of the memory into `dst` on `stream`; see
    /// [`DeviceSlice::copy_to_host_async`].
    ///
    /// # Safety
    /// `dst` must stay valid, and be neither read nor written by the host, until the stream
    /// has executed the copy.
    #[wraps(cuMemcpyDtoHAsync)]
    #[inline]
    #[track_caller]
    unsafe fn copy_to_host_async(&self, dst: &mut [Self::Elem], stream: &Stream) -> Result<()> {
        // SAFETY: the caller upholds the view method's contract, which is this one.
        unsafe { self.as_view().copy_to_host_async(dst, stream) }
    }
}

/// Device memory that hands out mutable views: the write side of the memory model.
///
/// # Safety
/// As for [`DeviceMemory`]; [`as_view_mut`](Self::as_view_mut) returns a view of the same
/// memory as `as_view`, exclusively borrowed.
pub unsafe trait DeviceMemoryMut: DeviceMemory {
    /// The whole memory as a mutable view.
    fn as_view_mut(&mut self) -> DeviceSliceMut<'_, Self::Elem>;

    /// The elements in `range`, as a mutable view; a range outside the memory is
    /// [`Error::OutOfBounds`](crate::Error::OutOfBounds).
    #[inline]
    fn slice_mut(
        &mut self,
        range: impl RangeBounds<usize>,
    ) -> Result<DeviceSliceMut<'_, Self::Elem>> {
        self.as_view_mut().into_slice_mut(range)
    }

    /// Copies `src` into the memory; see [`DeviceSliceMut::copy_from_host`].
    #[wraps(cuMemcpyHtoD)]
    #[inline]
    #[track_caller]
    fn copy_from_host(&mut self, src: &[Self::Elem]) -> Result<()> {
        self.as_view_mut().copy_from_host(src)
    }

    /// Queues a copy of `src` into the memory on `stream`; see
    /// [`DeviceSliceMut::copy_from_host_async`].
    ///
    /// # Safety
    /// `src` must stay valid, and must not be written by the host, until the stream has
    /// executed the copy.
    #[wraps(cuMemcpyHtoDAsync)]
    #[inline]
    #[track_caller]
    unsafe fn copy_from_host_async(&mut self, src: &[Self::Elem], stream: &Stream) -> Result<()> {
        // SAFETY: the caller upholds the view method's contract, which is this one.
        unsafe { self.as_view_mut().copy_from_host_async(src, stream) }
    }

    /// Copies device memory of the same context into this memory; see
    /// [`DeviceSliceMut::copy_from_device`].
    #[wraps(cuMemcpyDtoD)]
    #[inline]
    #[track_caller]
    fn copy_from_device<S>(&mut self, src: &S) -> Result<()>
    where
        S: DeviceMemory<Elem = Self::Elem> + ?Sized,
    {
        self.as_view_mut().copy_from_device(&src.as_view())
    }

    /// Queues a copy of device memory of the same context on `stream`; see
    /// [`DeviceSliceMut::copy_from_device_async`].
    #[wraps(cuMemcpyDtoDAsync)]
    #[inline]
    #[track_caller]
    fn copy_from_device_async<S>(&mut self, src: &S, stream: &Stream) -> Result<()>
    where
        S: DeviceMemory<Elem = Self::Elem> + ?Sized,
    {
        self.as_view_mut()
            .copy_from_device_async(&src.as_view(), stream)
    }

    /// Copies device memory of another context into this memory; see
    /// [`DeviceSliceMut::copy_from_peer`].
    #[wraps(cuMemcpyPeer)]
    #[inline]
    #[track_caller]
    fn copy_from_peer<S>(&mut self, src: &S) -> Result<()>
    where
        S: DeviceMemory<Elem = Self::Elem> + ?Sized,
    {
        self.as_view_mut().copy_from_peer(&src.as_view())
    }

    /// Queues a copy of device memory of another context on `stream`; see
    /// [`DeviceSliceMut::copy_from_peer_async`].
    #[wraps(cuMemcpyPeerAsync)]
    #[inline]
    #[track_caller]
    fn copy_from_peer_async<S>(&mut self, src: &S, stream: &Stream) -> Result<()>
    where
        S: DeviceMemory<Elem = Self::Elem> + ?Sized,
    {
        self.as_view_mut()
            .copy_from_peer_async(&src.as_view(), stream)
    }

    /// Sets every word of the memory; see [`DeviceSliceMut::memset`].
    #[wraps(cuMemsetD8, cuMemsetD16, cuMemsetD32)]
    #[inline]
    #[track_caller]
    fn memset<W: MemsetValue>(&mut self, value: W) -> Result<()> {
        self.as_view_mut().memset(value)
    }

    /// Queues setting every word of the memory on `stream`; see
    /// [`DeviceSliceMut::memset_async`].
    #[wraps(cuMemsetD8Async, cuMemsetD16Async, cuMemsetD32Async)]
    #[inline]
    #[track_caller]
    fn memset_async<W: MemsetValue>(&mut self, value: W, stream: &Stream) -> Result<()> {
        self.as_view_mut().memset_async(value, stream)
    }
}

/// Implements [`DeviceMemory`] for an owner, and [`DeviceMemoryMut`] after `mut impl`, from
/// one closure-like expression naming its memory: `|this| (ptr, len, ctx, home)`, `this`
/// being `&Owner`. Every owner's views are built here, by the one constructor
/// ([`DeviceSlice::from_parts`], [`DeviceSliceMut::from_parts`]); the invocation's
/// `// SAFETY:` comment says why the parts meet its contract for that owner. The element type
/// parameter is named `T` (the impls' `Elem`).
///
/// ```ignore
/// // SAFETY: <why `ptr` holds `len` live elements of `ctx`, how the release waits, and
/// // (for `mut impl`) why no other view of these bytes exists>.
/// device_memory!(
///     impl[T: DeviceRepr] Owner<T>, mut impl[T: DeviceRepr] Owner<T>;
///     |this| (this.ptr, this.len, &this.ctx, ::core::ptr::null_mut())
/// );
/// ```
macro_rules! device_memory {
    (
        impl[$($g:tt)*] $ty:ty $(, mut impl[$($mg:tt)*] $mty:ty)?;
        |$this:ident| $parts:expr $(,)?
    ) => {
        // SAFETY: the views cover the owner's memory (`$parts`), borrowed from it for the
        // view's life, as the invocation's SAFETY comment states.
        unsafe impl<$($g)*> $crate::memory::owner::DeviceMemory for $ty {
            type Elem = T;
            #[inline]
            fn as_view(&self) -> $crate::memory::view::DeviceSlice<'_, T> {
                let $this = self;
                let (ptr, len, ctx, home) = $parts;
                // SAFETY: `ptr` holds `len` elements of live memory of `ctx` that `self` owns
                // or borrows, released as `from_parts` requires (ordered on `home`, or after
                // all work of `ctx` when `home` is null), borrowed for the view's life (the
                // invocation's SAFETY comment says why, for this owner).
                unsafe { $crate::memory::view::DeviceSlice::from_parts(ptr, len, ctx, home) }
            }
        }

        $(
            // SAFETY: as above, borrowed exclusively (the invocation's SAFETY comment says why
            // no other view of these bytes exists).
            unsafe impl<$($mg)*> $crate::memory::owner::DeviceMemoryMut for $mty {
                #[inline]
                fn as_view_mut(&mut self) -> $crate::memory::view::DeviceSliceMut<'_, T> {
                    let $this = &*self;
                    let (ptr, len, ctx, home) = $parts;
                    // SAFETY: as in `as_view`; `&mut self` makes the view the only one of
                    // these bytes for its life (the invocation's SAFETY comment says why no
                    // other handle can make another).
                    unsafe {
                        $crate::memory::view::DeviceSliceMut::from_parts(ptr, len, ctx, home)
                    }
                }
            }
        )?
    };
}
pub(crate) use device_memory;

// SAFETY: a view is its own view.
unsafe impl<T: DeviceRepr> DeviceMemory for DeviceSlice<'_, T> {
    type Elem = T;
    #[inline]
    fn as_view(&self) -> DeviceSlice<'_, T> {
        *self
    }
}

// SAFETY: the shared form of the mutable view.
unsafe impl<T: DeviceRepr> DeviceMemory for DeviceSliceMut<'_, T> {
    type Elem = T;
    #[inline]
    fn as_view(&self) -> DeviceSlice<'_, T> {
        DeviceSliceMut::as_view(self)
    }
}

// SAFETY: a reborrow of the same memory.
unsafe impl<T: DeviceRepr> DeviceMemoryMut for DeviceSliceMut<'_, T> {
    #[inline]
    fn as_view_mut(&mut self) -> DeviceSliceMut<'_, T> {
        self.reborrow()
    }
}
