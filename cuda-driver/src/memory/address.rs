//! Address ranges (of the reference's memory management group): the allocation a pointer lies
//! in, and a DMA-BUF handle for a range of device memory.

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use crate::error::Result;
use crate::memory::view::DeviceSlice;
use crate::repr::DeviceRepr;

impl<T: DeviceRepr> DeviceSlice<'_, T> {
    /// The base address and size of the allocation the view lies in.
    #[wraps(cuMemGetAddressRange)]
    #[track_caller]
    pub fn address_range(&self) -> Result<(sys::CUdeviceptr, usize)> {
        let _cur = self.context().enter()?;
        let (mut base, mut size) = (0, 0);
        call!(
            // SAFETY: writes one CUdeviceptr and one size_t.
            unsafe { sys::cuMemGetAddressRange_v2(&mut base, &mut size, self.as_raw()) },
        )?;
        Ok((base, size))
    }
}

impl<T: DeviceRepr> DeviceSlice<'_, T> {
    /// A dma-buf file descriptor for the view's range (page-aligned; needs
    /// `CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED`), closed when dropped (Linux).
    #[cfg(unix)]
    #[wraps(cuMemGetHandleForAddressRange)]
    #[track_caller]
    pub fn dma_buf_fd(&self) -> Result<std::os::fd::OwnedFd> {
        use std::os::fd::FromRawFd;
        let _cur = self.context().enter()?;
        let mut fd: std::os::raw::c_int = -1;
        call!(
            // SAFETY: DMA_BUF_FD writes one int; the view borrows live memory.
            unsafe {
                sys::cuMemGetHandleForAddressRange(
                    (&mut fd as *mut std::os::raw::c_int).cast(),
                    self.as_raw(),
                    self.bytes(),
                    sys::CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
                    0,
                )
            },
        )?;
        // SAFETY: on success the driver handed over a new open file descriptor, owned by the
        // caller from now on.
        Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
    }
}
