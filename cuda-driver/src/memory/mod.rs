//! Device, page-locked and managed memory.

use cuda_driver_sys as sys;

mod device;

pub use device::{DeviceBuffer, DeviceSlice, DeviceSliceMut};

c_enum! {
    /// The kind of memory a pointer refers to (`CUmemorytype`).
    #[doc(alias = "CUmemorytype")]
    MemoryType(sys::CUmemorytype)
}

c_enum! {
    /// Advice for managed memory (`CUmem_advise`).
    #[doc(alias = "CUmem_advise")]
    MemAdvice(sys::CUmem_advise)
}
