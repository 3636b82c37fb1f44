//! Devices: enumeration, names, identity, attributes.

pub(crate) mod info;

use std::ffi::CStr;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use crate::error::{Error, Result};
use crate::init;

use crate::types::DeviceAttribute;

/// A CUDA device (`CUdevice`).
///
/// A `Device` is a plain handle: copying it is free and it owns nothing. Work happens in a
/// [`Context`](crate::Context) on the device, usually its [primary context](Device::primary_context).
#[wraps(CUdevice)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[repr(transparent)]
pub struct Device(sys::CUdevice);

impl Device {
    /// The number of CUDA devices; 0 when the driver is present but finds no device.
    #[wraps(cuDeviceGetCount)]
    #[track_caller]
    pub fn count() -> Result<usize> {
        match init() {
            Err(e) if e.code() == Some(crate::types::ErrorCode::NO_DEVICE) => return Ok(0),
            r => r?,
        }
        let mut n = 0;
        // SAFETY: cuDeviceGetCount writes one int to a valid pointer.
        call!(unsafe { sys::cuDeviceGetCount(&mut n) })?;
        Ok(n as usize)
    }

    /// The device with the given ordinal; an ordinal past [`Device::count`] is an error.
    #[wraps(cuDeviceGet)]
    #[track_caller]
    pub fn get(ordinal: usize) -> Result<Device> {
        init()?;
        let count = Self::count()?;
        if ordinal >= count {
            return Err(Error::DeviceOutOfRange { ordinal, count });
        }
        let mut dev = 0;
        call!(
            // SAFETY: cuDeviceGet writes one CUdevice to a valid pointer; the ordinal is in range.
            unsafe { sys::cuDeviceGet(&mut dev, ordinal as i32) },
        )?;
        Ok(Device(dev))
    }

    /// All devices, in ordinal order.
    #[track_caller]
    pub fn all() -> Result<Vec<Device>> {
        (0..Self::count()?).map(Device::get).collect()
    }

    /// Calls a raw `CUdevice` obtained from `cuda_driver_sys`.
    #[wraps(CUdevice)]
    pub const fn from_raw(raw: sys::CUdevice) -> Device {
        Device(raw)
    }

    /// The raw `CUdevice`.
    pub const fn as_raw(self) -> sys::CUdevice {
        self.0
    }

    /// The device's name, such as `"NVIDIA H200"`.
    #[wraps(cuDeviceGetName)]
    #[track_caller]
    pub fn name(self) -> Result<String> {
        let mut buf = [0 as std::ffi::c_char; 256];
        call!(
            // SAFETY: the driver writes at most `len` bytes, NUL-terminated, into `buf`.
            unsafe { sys::cuDeviceGetName(buf.as_mut_ptr(), buf.len() as i32, self.0) },
        )?;
        // SAFETY: `buf` is NUL-terminated within its length (zero-initialised, and the driver
        // writes a terminated string of at most len bytes).
        Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned())
    }

    /// The device's 16-byte UUID.
    ///
    /// Calls `cuDeviceGetUuid_v2` (CUDA 11.4).
    #[wraps(cuDeviceGetUuid)]
    #[track_caller]
    pub fn uuid(self) -> Result<[u8; 16]> {
        let mut uuid = sys::CUuuid { bytes: [0; 16] };
        call!(
            // SAFETY: writes one CUuuid to a valid pointer.
            unsafe { sys::cuDeviceGetUuid_v2(&mut uuid, self.0) },
        )?;
        Ok(uuid.bytes.map(|b| b as u8))
    }

    /// Total memory on the device in bytes.
    #[wraps(cuDeviceTotalMem)]
    #[track_caller]
    pub fn total_memory(self) -> Result<usize> {
        let mut bytes = 0;
        call!(
            // SAFETY: writes one size_t to a valid pointer.
            unsafe { sys::cuDeviceTotalMem_v2(&mut bytes, self.0) },
        )?;
        Ok(bytes)
    }

    /// An attribute of the device.
    ///
    /// ```no_run
    /// use cuda_driver::{Device, types::DeviceAttribute};
    /// let dev = Device::get(0)?;
    /// let sms = dev.attribute(DeviceAttribute::MULTIPROCESSOR_COUNT)?;
    /// # Ok::<(), cuda_driver::Error>(())
    /// ```
    #[wraps(cuDeviceGetAttribute)]
    #[track_caller]
    pub fn attribute(self, attr: DeviceAttribute) -> Result<i32> {
        let mut v = 0;
        call!(
            // SAFETY: writes one int to a valid pointer; an attribute the driver does not know is
            // an error code, not undefined behaviour.
            unsafe { sys::cuDeviceGetAttribute(&mut v, attr.0, self.0) },
        )?;
        Ok(v)
    }

    /// The compute capability as `(major, minor)`, such as `(9, 0)` for Hopper.
    #[track_caller]
    pub fn compute_capability(self) -> Result<(i32, i32)> {
        Ok((
            self.attribute(DeviceAttribute::COMPUTE_CAPABILITY_MAJOR)?,
            self.attribute(DeviceAttribute::COMPUTE_CAPABILITY_MINOR)?,
        ))
    }
}
