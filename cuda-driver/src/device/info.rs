//! Device queries beyond the basics: LUID, NUMA ids, texture limits, host atomic
//! capabilities, NvSciSync attributes and execution-affinity support. (The PCI bus id calls
//! are of the reference's memory group, in `memory/`; peer atomics are in `peer.rs`; the
//! GPUDirect RDMA flush acts on a context, in `context/`.)

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use crate::count::count_u32;
use crate::device::Device;
use crate::entry_point::newer;
use crate::error::Result;
use crate::init;
use crate::types::{
    ArrayFormat, AtomicOperation, AtomicOperationCapability, DeviceAttribute, ExecAffinityType,
};

impl Device {
    /// The device's LUID and node mask (Windows only; the driver reports
    /// `CUDA_ERROR_NOT_SUPPORTED` on Linux).
    #[wraps(cuDeviceGetLuid)]
    #[track_caller]
    pub fn luid(self) -> Result<([u8; 8], u32)> {
        init()?;
        let mut luid = [0 as std::ffi::c_char; 8];
        let mut mask = 0;
        call!(
            // SAFETY: writes 8 bytes and one unsigned int.
            unsafe { sys::cuDeviceGetLuid(luid.as_mut_ptr(), &mut mask, self.as_raw()) },
        )?;
        Ok((luid.map(|b| b as u8), mask))
    }

    /// The NUMA node of the device's memory, if it is one (`CU_DEVICE_ATTRIBUTE_NUMA_ID`).
    #[wraps(cuDeviceGetAttribute)]
    #[track_caller]
    pub fn numa_id(self) -> Result<Option<u32>> {
        let v = self.attribute(DeviceAttribute::NUMA_ID)?;
        Ok((v >= 0).then_some(v as u32))
    }

    /// The NUMA node of the host CPU nearest the device (`CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID`).
    #[wraps(cuDeviceGetAttribute)]
    #[track_caller]
    pub fn host_numa_id(self) -> Result<Option<u32>> {
        let v = self.attribute(DeviceAttribute::HOST_NUMA_ID)?;
        Ok((v >= 0).then_some(v as u32))
    }

    /// The widest 1D texture over linear memory of `format` with `channels` channels.
    #[wraps(cuDeviceGetTexture1DLinearMaxWidth)]
    #[track_caller]
    pub fn texture_1d_linear_max_width(self, format: ArrayFormat, channels: u32) -> Result<usize> {
        init()?;
        let mut w = 0;
        call!(
            // SAFETY: writes one size_t.
            unsafe {
                sys::cuDeviceGetTexture1DLinearMaxWidth(
                    &mut w,
                    format.as_raw(),
                    channels,
                    self.as_raw(),
                )
            },
        )?;
        Ok(w)
    }

    /// Which of `ops` the device can perform atomically on host memory; CUDA 13.0. An empty
    /// `ops` is an empty list, without asking the driver.
    #[wraps(cuDeviceGetHostAtomicCapabilities)]
    #[track_caller]
    pub fn host_atomic_capabilities(
        self,
        ops: &[AtomicOperation],
    ) -> Result<Vec<AtomicOperationCapability>> {
        init()?;
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        let count = count_u32("Device::host_atomic_capabilities", "operations", ops.len())?;
        let raw: Vec<sys::CUatomicOperation> = ops.iter().map(|o| o.as_raw()).collect();
        let mut caps = vec![0u32; ops.len()];
        call!(
            // SAFETY: both arrays hold `len` elements.
            unsafe {
                newer::cuDeviceGetHostAtomicCapabilities()?(
                    caps.as_mut_ptr(),
                    raw.as_ptr(),
                    count,
                    self.as_raw(),
                )
            },
        )?;
        Ok(caps
            .into_iter()
            .map(AtomicOperationCapability::from_raw)
            .collect())
    }

    /// Fills an NvSciSync attribute list for this device (Tegra/NvSci systems; untested on
    /// these machines).
    ///
    /// # Safety
    /// `list` is a valid `NvSciSyncAttrList`.
    #[wraps(cuDeviceGetNvSciSyncAttributes)]
    #[track_caller]
    pub unsafe fn nvscisync_attributes(
        self,
        list: *mut std::ffi::c_void,
        flags: i32,
    ) -> Result<()> {
        init()?;
        call!(
            // SAFETY: the caller's guarantee.
            unsafe { sys::cuDeviceGetNvSciSyncAttributes(list, self.as_raw(), flags) },
        )
    }
}

impl Device {
    /// Whether contexts on this device support the execution affinity `kind`.
    #[wraps(cuDeviceGetExecAffinitySupport)]
    #[track_caller]
    pub fn supports_exec_affinity(self, kind: ExecAffinityType) -> Result<bool> {
        init()?;
        let mut v = 0;
        call!(
            // SAFETY: writes one int to a valid pointer.
            unsafe { sys::cuDeviceGetExecAffinitySupport(&mut v, kind.as_raw(), self.as_raw()) },
        )?;
        Ok(v != 0)
    }
}
