//! Mapping physical memory into sparse CUDA arrays (`cuMemMapArrayAsync`): a region of a
//! mip level, or the mip tail, of an [`Array`](crate::memory::Array) created with
//! [`Array3DFlags::SPARSE`](crate::types::Array3DFlags::SPARSE).

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use super::PhysicalAllocation;
use crate::error::{Error, Result};
use crate::handle::Handle;
use crate::memory::array::{ArrayElement, ArrayRef};
use crate::stream::Stream;

/// The part of a sparse array a mapping covers (`CUarraySparseSubresourceType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SparseRegion {
    /// A box of a mip level (`CU_ARRAY_SPARSE_SUBRESOURCE_TYPE_SPARSE_LEVEL`), in elements,
    /// aligned to the array's tile extent
    /// ([`Array::sparse_properties`](crate::memory::Array::sparse_properties)).
    Level {
        /// The mip level (0 for a plain array).
        level: u32,
        /// The layer (0 unless layered).
        layer: u32,
        /// The box's origin.
        offset: [u32; 3],
        /// The box's extent.
        extent: [u32; 3],
    },
    /// Part of the mip tail (`CU_ARRAY_SPARSE_SUBRESOURCE_TYPE_MIPTAIL`), in bytes.
    MipTail {
        /// The layer (0 unless layered with a per-layer tail).
        layer: u32,
        /// Byte offset into the tail.
        offset: u64,
        /// Bytes to map.
        size: u64,
    },
}

fn map_info<T: ArrayElement>(
    array: ArrayRef<'_, T>,
    region: SparseRegion,
    op: sys::CUmemOperationType,
    handle: sys::CUmemGenericAllocationHandle,
    offset: u64,
    device_mask: u32,
) -> sys::CUarrayMapInfo {
    // SAFETY: a plain C struct of integers, handles and unions of them; all-zero is valid.
    let mut info: sys::CUarrayMapInfo = unsafe { std::mem::zeroed() };
    info.resourceType = sys::CU_RESOURCE_TYPE_ARRAY;
    info.resource.array = array.as_raw();
    match region {
        SparseRegion::Level {
            level,
            layer,
            offset: o,
            extent: e,
        } => {
            info.subresourceType = sys::CU_ARRAY_SPARSE_SUBRESOURCE_TYPE_SPARSE_LEVEL;
            info.subresource.sparseLevel = sys::CUarrayMapInfo_st__bindgen_ty_2__bindgen_ty_1 {
                level,
                layer,
                offsetX: o[0],
                offsetY: o[1],
                offsetZ: o[2],
                extentWidth: e[0],
                extentHeight: e[1],
                extentDepth: e[2],
            };
        }
        SparseRegion::MipTail {
            layer,
            offset,
            size,
        } => {
            info.subresourceType = sys::CU_ARRAY_SPARSE_SUBRESOURCE_TYPE_MIPTAIL;
            info.subresource.miptail = sys::CUarrayMapInfo_st__bindgen_ty_2__bindgen_ty_2 {
                layer,
                offset,
                size,
            };
        }
    }
    info.memOperationType = op;
    info.memHandleType = sys::CU_MEM_HANDLE_TYPE_GENERIC;
    info.memHandle.memHandle = handle;
    info.offset = offset;
    // Exactly one bit, that of the stream's device (the reference's rule for
    // `deviceBitMask`; a zero mask is refused).
    info.deviceBitMask = device_mask;
    info
}

/// The `deviceBitMask` of a mapping on `stream`: the bit of the stream's device.
fn device_mask(stream: &Stream, what: &'static str) -> Result<u32> {
    let ordinal = stream.context().device().as_raw();
    u32::try_from(ordinal)
        .ok()
        .and_then(|o| 1u32.checked_shl(o))
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{what}: device {ordinal} has no bit in cuMemMapArrayAsync's 32-bit device mask"
            ))
        })
}

impl Stream {
    /// Maps `region` of the sparse `array` onto the physical allocation `memory` from byte
    /// `offset`, in stream order on this stream. `memory` is a tile pool (created with
    /// [`MemCreateUsageFlags::TILE_POOL`](crate::types::MemCreateUsageFlags::TILE_POOL)) of this
    /// stream's device. For an array created with
    /// [`Array3DFlags::DEFERRED_MAPPING`](crate::types::Array3DFlags::DEFERRED_MAPPING) the region
    /// is ignored: the whole array is mapped (its size and alignment:
    /// [`Array::memory_requirements`](crate::memory::Array::memory_requirements)).
    ///
    /// # Safety
    /// `array` and `memory` stay alive until the region is unmapped
    /// ([`unmap_array`](Self::unmap_array)) and the stream has run the unmapping; kernels
    /// and copies using the region run after the mapping in stream order. The bytes of
    /// `memory` mapped here are not written through the views of a
    /// [`Mapping`](crate::memory::vmm::Mapping) of it meanwhile (the exclusive claims of mappings do not
    /// cover sparse arrays).
    #[wraps(cuMemMapArrayAsync)]
    #[track_caller]
    pub unsafe fn map_array<'a, T: ArrayElement>(
        &self,
        array: impl Into<ArrayRef<'a, T>>,
        region: SparseRegion,
        memory: &PhysicalAllocation,
        offset: u64,
    ) -> Result<()> {
        let mask = device_mask(self, "Stream::map_array")?;
        let mut info = map_info(
            array.into(),
            region,
            sys::CU_MEM_OPERATION_TYPE_MAP,
            memory.as_raw(),
            offset,
            mask,
        );
        let _cur = self.context().enter()?;
        call!(
            // SAFETY: one map info naming the live array and allocation; the caller keeps
            // both alive while mapped.
            unsafe { sys::cuMemMapArrayAsync(&mut info, 1, self.as_raw()) },
        )
    }

    /// Unmaps `region` of the sparse `array` in stream order on this stream.
    ///
    /// # Safety
    /// No work still to run uses the region.
    #[wraps(cuMemMapArrayAsync)]
    #[track_caller]
    pub unsafe fn unmap_array<'a, T: ArrayElement>(
        &self,
        array: impl Into<ArrayRef<'a, T>>,
        region: SparseRegion,
    ) -> Result<()> {
        let mask = device_mask(self, "Stream::unmap_array")?;
        let mut info = map_info(
            array.into(),
            region,
            sys::CU_MEM_OPERATION_TYPE_UNMAP,
            0,
            0,
            mask,
        );
        let _cur = self.context().enter()?;
        call!(
            // SAFETY: one unmap info naming the live array.
            unsafe { sys::cuMemMapArrayAsync(&mut info, 1, self.as_raw()) },
        )
    }
}
