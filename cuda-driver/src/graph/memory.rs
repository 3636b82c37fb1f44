//! Graph memory: the device's pool for memory allocated by graphs.

use cuda_driver_macros::wraps;
use cuda_driver_sys as sys;

use crate::error::{check, Result};
use crate::Device;

pub use crate::types::GraphMemAttribute;

impl Device {
    /// A graph memory attribute of the device, in bytes: memory currently used by or
    /// reserved for graph allocations, or their high watermarks.
    #[wraps(cuDeviceGetGraphMemAttribute)]
    #[track_caller]
    pub fn graph_mem_attribute(self, attr: GraphMemAttribute) -> Result<u64> {
        crate::init()?;
        let mut v: u64 = 0;
        check(
            // SAFETY: every graph memory attribute is a cuuint64_t; writes one.
            unsafe {
                sys::cuDeviceGetGraphMemAttribute(
                    self.as_raw(),
                    attr.as_raw(),
                    (&mut v as *mut u64).cast(),
                )
            },
            "cuDeviceGetGraphMemAttribute",
        )?;
        Ok(v)
    }

    /// Resets a high watermark ([`GraphMemAttribute::USED_MEM_HIGH`] or
    /// [`GraphMemAttribute::RESERVED_MEM_HIGH`]) to zero; the driver refuses other attributes.
    #[wraps(cuDeviceSetGraphMemAttribute)]
    #[track_caller]
    pub fn reset_graph_mem_high_watermark(self, attr: GraphMemAttribute) -> Result<()> {
        crate::init()?;
        let mut v: u64 = 0;
        check(
            // SAFETY: the watermarks are cuuint64_t and may only be set to 0.
            unsafe {
                sys::cuDeviceSetGraphMemAttribute(
                    self.as_raw(),
                    attr.as_raw(),
                    (&mut v as *mut u64).cast(),
                )
            },
            "cuDeviceSetGraphMemAttribute",
        )
    }

    /// Frees unused memory of the device's graph memory pool back to the system.
    #[wraps(cuDeviceGraphMemTrim)]
    #[track_caller]
    pub fn graph_mem_trim(self) -> Result<()> {
        crate::init()?;
        check(
            // SAFETY: a valid device ordinal.
            unsafe { sys::cuDeviceGraphMemTrim(self.as_raw()) },
            "cuDeviceGraphMemTrim",
        )
    }
}
