//! Device, stream-ordered, page-locked and managed memory.
//!
//! | Type | Driver call | Host access |
//! |---|---|---|
//! | [`DeviceBuffer`] | `cuMemAlloc_v2` | through copies |
//! | [`AsyncDeviceBuffer`] | `cuMemAllocAsync`, `cuMemAllocFromPoolAsync` ([`MemPool`]) | through copies |
//! | [`PinnedBuffer`] | `cuMemHostAlloc` | `Deref<Target = [T]>` |
//! | [`HostRegistration`] | `cuMemHostRegister_v2` | `Deref<Target = [T]>` |
//! | [`ManagedBuffer`] | `cuMemAllocManaged` | `as_slice` / `as_mut_slice` after synchronising |
//!
//! Copies and memsets are those of the views [`DeviceSlice`] (reads) and [`DeviceSliceMut`]
//! (writes); the device buffers delegate to them.

use cuda_driver_sys as sys;

use crate::Device;

/// Adds the whole-buffer views and the view operations to a buffer type with `ptr` and `len`
/// fields and a `context()`, each operation delegating to the one implementation on
/// [`DeviceSlice`] / [`DeviceSliceMut`].
macro_rules! delegate_to_views {
    (impl<$($lt:lifetime,)? T> $ty:ty) => {
        impl<$($lt,)? T: $crate::DeviceRepr> $ty {
            /// The whole buffer as a shared view.
            #[inline]
            pub fn as_slice(&self) -> $crate::DeviceSlice<'_, T> {
                $crate::DeviceSlice {
                    ptr: self.ptr,
                    len: self.len,
                    ctx: self.context(),
                    _marker: ::std::marker::PhantomData,
                }
            }

            /// The whole buffer as a mutable view.
            #[inline]
            pub fn as_mut_slice(&mut self) -> $crate::DeviceSliceMut<'_, T> {
                $crate::DeviceSliceMut {
                    ptr: self.ptr,
                    len: self.len,
                    ctx: self.context(),
                    _marker: ::std::marker::PhantomData,
                }
            }

            /// The elements in `range`, as a shared view; a range outside the buffer is
            /// [`Error::OutOfBounds`](crate::Error::OutOfBounds).
            #[inline]
            pub fn slice(
                &self,
                range: impl ::std::ops::RangeBounds<usize>,
            ) -> $crate::Result<$crate::DeviceSlice<'_, T>> {
                self.as_slice().slice(range)
            }

            /// The elements in `range`, as a mutable view; a range outside the buffer is
            /// [`Error::OutOfBounds`](crate::Error::OutOfBounds).
            #[inline]
            pub fn slice_mut(
                &mut self,
                range: impl ::std::ops::RangeBounds<usize>,
            ) -> $crate::Result<$crate::DeviceSliceMut<'_, T>> {
                self.as_mut_slice().into_slice_mut(range)
            }

            /// Copies `src` into the buffer; see [`DeviceSliceMut::copy_from_host`](crate::DeviceSliceMut::copy_from_host).
            #[doc(alias = "cuMemcpyHtoD")]
            #[doc(alias = "cuMemcpyHtoD_v2")]
            #[inline]
            #[track_caller]
            pub fn copy_from_host(&mut self, src: &[T]) -> $crate::Result<()> {
                self.as_mut_slice().copy_from_host(src)
            }

            /// Copies the buffer into `dst`; see [`DeviceSlice::copy_to_host`](crate::DeviceSlice::copy_to_host).
            #[doc(alias = "cuMemcpyDtoH")]
            #[doc(alias = "cuMemcpyDtoH_v2")]
            #[inline]
            #[track_caller]
            pub fn copy_to_host(&self, dst: &mut [T]) -> $crate::Result<()> {
                self.as_slice().copy_to_host(dst)
            }

            /// Copies the buffer into a new `Vec`; see [`DeviceSlice::to_vec`](crate::DeviceSlice::to_vec).
            #[track_caller]
            pub fn to_vec(&self) -> $crate::Result<Vec<T>> {
                self.as_slice().to_vec()
            }

            /// Queues a copy of `src` into the buffer on `stream`; see
            /// [`DeviceSliceMut::copy_from_host_async`](crate::DeviceSliceMut::copy_from_host_async).
            ///
            /// # Safety
            /// `src` must stay valid, and must not be written by the host, until the stream
            /// has executed the copy.
            #[doc(alias = "cuMemcpyHtoDAsync")]
            #[doc(alias = "cuMemcpyHtoDAsync_v2")]
            #[inline]
            #[track_caller]
            pub unsafe fn copy_from_host_async(
                &mut self,
                src: &[T],
                stream: &$crate::Stream,
            ) -> $crate::Result<()> {
                // SAFETY: the caller upholds the view method's contract, which is this one.
                unsafe { self.as_mut_slice().copy_from_host_async(src, stream) }
            }

            /// Queues a copy of the buffer into `dst` on `stream`; see
            /// [`DeviceSlice::copy_to_host_async`](crate::DeviceSlice::copy_to_host_async).
            ///
            /// # Safety
            /// `dst` must stay valid, and must be neither read nor written by the host, until
            /// the stream has executed the copy.
            #[doc(alias = "cuMemcpyDtoHAsync")]
            #[doc(alias = "cuMemcpyDtoHAsync_v2")]
            #[inline]
            #[track_caller]
            pub unsafe fn copy_to_host_async(
                &self,
                dst: &mut [T],
                stream: &$crate::Stream,
            ) -> $crate::Result<()> {
                // SAFETY: the caller upholds the view method's contract, which is this one.
                unsafe { self.as_slice().copy_to_host_async(dst, stream) }
            }

            /// Copies device memory into the buffer; see
            /// [`DeviceSliceMut::copy_from_device`](crate::DeviceSliceMut::copy_from_device).
            #[doc(alias = "cuMemcpyDtoD")]
            #[doc(alias = "cuMemcpyDtoD_v2")]
            #[inline]
            #[track_caller]
            pub fn copy_from_device(
                &mut self,
                src: &$crate::DeviceSlice<'_, T>,
            ) -> $crate::Result<()> {
                self.as_mut_slice().copy_from_device(src)
            }

            /// Queues a copy of device memory into the buffer on `stream`; see
            /// [`DeviceSliceMut::copy_from_device_async`](crate::DeviceSliceMut::copy_from_device_async).
            #[doc(alias = "cuMemcpyDtoDAsync")]
            #[doc(alias = "cuMemcpyDtoDAsync_v2")]
            #[inline]
            #[track_caller]
            pub fn copy_from_device_async(
                &mut self,
                src: &$crate::DeviceSlice<'_, T>,
                stream: &$crate::Stream,
            ) -> $crate::Result<()> {
                self.as_mut_slice().copy_from_device_async(src, stream)
            }

            /// Copies device memory of another context into the buffer; see
            /// [`DeviceSliceMut::copy_from_peer`](crate::DeviceSliceMut::copy_from_peer).
            #[doc(alias = "cuMemcpyPeer")]
            #[inline]
            #[track_caller]
            pub fn copy_from_peer(
                &mut self,
                src: &$crate::DeviceSlice<'_, T>,
            ) -> $crate::Result<()> {
                self.as_mut_slice().copy_from_peer(src)
            }

            /// Queues a copy of device memory of another context into the buffer; see
            /// [`DeviceSliceMut::copy_from_peer_async`](crate::DeviceSliceMut::copy_from_peer_async).
            #[doc(alias = "cuMemcpyPeerAsync")]
            #[inline]
            #[track_caller]
            pub fn copy_from_peer_async(
                &mut self,
                src: &$crate::DeviceSlice<'_, T>,
                stream: &$crate::Stream,
            ) -> $crate::Result<()> {
                self.as_mut_slice().copy_from_peer_async(src, stream)
            }

            /// Sets every byte; see [`DeviceSliceMut::memset_u8`](crate::DeviceSliceMut::memset_u8).
            #[doc(alias = "cuMemsetD8")]
            #[doc(alias = "cuMemsetD8_v2")]
            #[inline]
            #[track_caller]
            pub fn memset_u8(&mut self, value: u8) -> $crate::Result<()> {
                self.as_mut_slice().memset_u8(value)
            }

            /// Sets every 16-bit word; see [`DeviceSliceMut::memset_u16`](crate::DeviceSliceMut::memset_u16).
            #[doc(alias = "cuMemsetD16")]
            #[doc(alias = "cuMemsetD16_v2")]
            #[inline]
            #[track_caller]
            pub fn memset_u16(&mut self, value: u16) -> $crate::Result<()> {
                self.as_mut_slice().memset_u16(value)
            }

            /// Sets every 32-bit word; see [`DeviceSliceMut::memset_u32`](crate::DeviceSliceMut::memset_u32).
            #[doc(alias = "cuMemsetD32")]
            #[doc(alias = "cuMemsetD32_v2")]
            #[inline]
            #[track_caller]
            pub fn memset_u32(&mut self, value: u32) -> $crate::Result<()> {
                self.as_mut_slice().memset_u32(value)
            }

            /// Queues setting every byte on `stream`; see
            /// [`DeviceSliceMut::memset_u8_async`](crate::DeviceSliceMut::memset_u8_async).
            #[doc(alias = "cuMemsetD8Async")]
            #[inline]
            #[track_caller]
            pub fn memset_u8_async(&mut self, value: u8, stream: &$crate::Stream) -> $crate::Result<()> {
                self.as_mut_slice().memset_u8_async(value, stream)
            }

            /// Queues setting every 16-bit word on `stream`; see
            /// [`DeviceSliceMut::memset_u16_async`](crate::DeviceSliceMut::memset_u16_async).
            #[doc(alias = "cuMemsetD16Async")]
            #[inline]
            #[track_caller]
            pub fn memset_u16_async(&mut self, value: u16, stream: &$crate::Stream) -> $crate::Result<()> {
                self.as_mut_slice().memset_u16_async(value, stream)
            }

            /// Queues setting every 32-bit word on `stream`; see
            /// [`DeviceSliceMut::memset_u32_async`](crate::DeviceSliceMut::memset_u32_async).
            #[doc(alias = "cuMemsetD32Async")]
            #[inline]
            #[track_caller]
            pub fn memset_u32_async(&mut self, value: u32, stream: &$crate::Stream) -> $crate::Result<()> {
                self.as_mut_slice().memset_u32_async(value, stream)
            }
        }
    };
}

mod device;
mod managed;
mod pinned;
mod pointer;
mod pool;

pub use device::{DeviceBuffer, DeviceSlice, DeviceSliceMut};
pub use managed::{AttachFlags, ManagedBuffer};
pub use pinned::{HostRegisterFlags, HostRegistration, PinnedBuffer, PinnedFlags};
pub use pointer::PointerInfo;
pub use pool::{AsyncDeviceBuffer, MemPool};

pub use crate::types::{MemAdvice, MemoryType};

/// A place memory can live or be moved to (`CUmemLocation`): a device, or the host. For
/// [`ManagedBuffer::prefetch`] and [`ManagedBuffer::advise`].
#[derive(Clone, Copy)]
#[repr(transparent)]
#[doc(alias = "CUmemLocation")]
pub struct MemLocation(sys::CUmemLocation);

impl MemLocation {
    /// The memory of `device` (`CU_MEM_LOCATION_TYPE_DEVICE`).
    pub const fn device(device: Device) -> MemLocation {
        MemLocation(sys::CUmemLocation {
            type_: sys::CU_MEM_LOCATION_TYPE_DEVICE,
            id: device.as_raw(),
        })
    }

    /// Host memory (`CU_MEM_LOCATION_TYPE_HOST`).
    pub const fn host() -> MemLocation {
        MemLocation(sys::CUmemLocation {
            type_: sys::CU_MEM_LOCATION_TYPE_HOST,
            id: 0,
        })
    }

    /// Host memory on NUMA node `node` (`CU_MEM_LOCATION_TYPE_HOST_NUMA`).
    pub const fn host_numa(node: i32) -> MemLocation {
        MemLocation(sys::CUmemLocation {
            type_: sys::CU_MEM_LOCATION_TYPE_HOST_NUMA,
            id: node,
        })
    }

    /// Wraps a raw `CUmemLocation`.
    pub const fn from_raw(raw: sys::CUmemLocation) -> MemLocation {
        MemLocation(raw)
    }

    /// The raw `CUmemLocation`.
    pub const fn as_raw(self) -> sys::CUmemLocation {
        self.0
    }
}

impl PartialEq for MemLocation {
    fn eq(&self, other: &Self) -> bool {
        (self.0.type_, self.0.id) == (other.0.type_, other.0.id)
    }
}

impl Eq for MemLocation {}

impl std::fmt::Debug for MemLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.type_ {
            sys::CU_MEM_LOCATION_TYPE_DEVICE => write!(f, "MemLocation::device({})", self.0.id),
            sys::CU_MEM_LOCATION_TYPE_HOST => f.write_str("MemLocation::host()"),
            sys::CU_MEM_LOCATION_TYPE_HOST_NUMA => {
                write!(f, "MemLocation::host_numa({})", self.0.id)
            }
            t => write!(f, "MemLocation {{ type: {t}, id: {} }}", self.0.id),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_are_what_they_say() {
        let d = MemLocation::device(Device::from_raw(1)).as_raw();
        assert_eq!((d.type_, d.id), (sys::CU_MEM_LOCATION_TYPE_DEVICE, 1));
        assert_eq!(
            MemLocation::host().as_raw().type_,
            sys::CU_MEM_LOCATION_TYPE_HOST
        );
        assert_eq!(
            format!("{:?}", MemLocation::device(Device::from_raw(2))),
            "MemLocation::device(2)"
        );
        assert_eq!(format!("{:?}", MemLocation::host()), "MemLocation::host()");
        assert_ne!(MemLocation::host(), MemLocation::host_numa(0));
    }

    #[test]
    fn memory_types_and_advice_are_named() {
        assert_eq!(format!("{:?}", MemoryType::DEVICE), "CU_MEMORYTYPE_DEVICE");
        assert_eq!(
            format!("{:?}", MemAdvice::SET_READ_MOSTLY),
            "CU_MEM_ADVISE_SET_READ_MOSTLY"
        );
        assert_eq!(format!("{:?}", MemoryType::from_raw(99)), "MemoryType(99)");
    }
}
