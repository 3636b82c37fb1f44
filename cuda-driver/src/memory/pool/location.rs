//! Memory pools by location (CUDA 13.0): the default and current pool of a device, the host
//! or a host NUMA node, for an allocation type (`cuMemGetDefaultMemPool`, `cuMemGetMemPool`,
//! `cuMemSetMemPool`).

use std::ptr;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use super::{MemPool, MemPoolRef};
use crate::device::Device;
use crate::entry_point::newer;
use crate::error::Result;
use crate::handle::Handle;
use crate::memory::MemLocation;
use crate::types::MemAllocationType;

/// The device a borrowed pool of `location` reports: the location's device, or device 0
/// for host locations.
#[track_caller]
fn device_of(location: MemLocation) -> Result<Device> {
    let raw = location.as_raw();
    if raw.type_ == sys::CU_MEM_LOCATION_TYPE_DEVICE {
        Device::get(raw.id as usize)
    } else {
        Device::get(0)
    }
}

impl MemPool {
    /// The default pool of `location` for allocations of `kind` (CUDA 13.0): a device's
    /// default pool for [`MemAllocationType::PINNED`], and, for host or host-NUMA locations,
    /// the driver's host pools. The pool is the driver's (borrowed); its
    /// [`device`](MemPool::device) is the location's device, or device 0 for host locations.
    #[wraps(cuMemGetDefaultMemPool)]
    #[track_caller]
    pub fn location_default(
        location: MemLocation,
        kind: MemAllocationType,
    ) -> Result<MemPoolRef<'static>> {
        crate::init()?;
        let device = device_of(location)?;
        let mut loc = location.as_raw();
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: reads one location, writes one pool handle (the driver's).
            unsafe { newer::cuMemGetDefaultMemPool()?(&mut raw, &mut loc, kind.as_raw()) },
        )?;
        // SAFETY: a default pool lives as long as the process.
        Ok(unsafe { MemPoolRef::borrow_raw(raw, device) })
    }

    /// The raw handle of the current pool of `location` for allocations of `kind` (CUDA
    /// 13.0): the default pool, or the one set with
    /// [`set_location_current`](Self::set_location_current). A raw handle to compare, not a
    /// borrowed pool, for the reason given at [`device_current`](Self::device_current).
    #[wraps(cuMemGetMemPool)]
    #[track_caller]
    pub fn location_current(
        location: MemLocation,
        kind: MemAllocationType,
    ) -> Result<sys::CUmemoryPool> {
        crate::init()?;
        let mut loc = location.as_raw();
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: reads one location, writes one pool handle.
            unsafe { newer::cuMemGetMemPool()?(&mut raw, &mut loc, kind.as_raw()) },
        )?;
        Ok(raw)
    }

    /// Makes `pool` the current pool of `location` for allocations of `kind` (CUDA 13.0).
    /// The pool must have been created for that location and kind (the driver checks).
    #[wraps(cuMemSetMemPool)]
    #[track_caller]
    pub fn set_location_current(
        location: MemLocation,
        kind: MemAllocationType,
        pool: &MemPool,
    ) -> Result<()> {
        crate::init()?;
        let mut loc = location.as_raw();
        call!(
            // SAFETY: reads one location; the pool is alive.
            unsafe { newer::cuMemSetMemPool()?(&mut loc, kind.as_raw(), pool.as_raw()) },
        )
    }
}
