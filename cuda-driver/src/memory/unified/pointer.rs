//! Pointer attributes: what the driver knows about an address ([`PointerInfo`]).

use std::ffi::c_void;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use crate::error::Result;
use crate::init;
use crate::memory::MemoryType;

/// What the driver knows about an address in the unified address space: the kind of memory,
/// the device it was allocated against and its context.
///
/// ```no_run
/// use cuda_driver::handle::Handle;
/// use cuda_driver::{Device, DeviceBuffer, types::MemoryType, memory::unified::PointerInfo};
///
/// let ctx = Device::get(0)?.primary_context()?;
/// let buf = DeviceBuffer::<f32>::new(&ctx, 16)?;
/// let info = PointerInfo::query(buf.as_raw())?;
/// assert_eq!(info.memory_type, MemoryType::DEVICE);
/// assert_eq!(info.context, Some(ctx.as_raw()));
/// # Ok::<(), cuda_driver::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PointerInfo {
    /// Device or host memory (`CU_POINTER_ATTRIBUTE_MEMORY_TYPE`).
    pub memory_type: MemoryType,
    /// Ordinal of the device the memory was allocated or registered against
    /// (`CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL`).
    pub device_ordinal: usize,
    /// The context the memory was allocated or registered in, a handle this crate does not
    /// own; `None` where the driver reports none (memory from a pool is not tied to a
    /// context) (`CU_POINTER_ATTRIBUTE_CONTEXT`).
    pub context: Option<sys::CUcontext>,
}

/// One `cuPointerGetAttribute` query of a plain-data attribute.
#[track_caller]
fn attribute<V: Copy>(ptr: sys::CUdeviceptr, attr: sys::CUpointer_attribute, zero: V) -> Result<V> {
    let mut v = zero;
    call!(
        // SAFETY: each caller passes the `V` the attribute's documentation names (unsigned int,
        // int, CUcontext), so the driver writes exactly one V.
        unsafe { sys::cuPointerGetAttribute((&mut v as *mut V).cast::<c_void>(), attr, ptr) },
    )?;
    Ok(v)
}

impl PointerInfo {
    /// Asks the driver about `ptr`: a device address, a managed address, or the address of
    /// page-locked host memory. Memory CUDA does not know is an error
    /// (`CUDA_ERROR_INVALID_VALUE`).
    ///
    /// Calls `cuPointerGetAttribute` with `CU_POINTER_ATTRIBUTE_MEMORY_TYPE`,
    /// `CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL` and `CU_POINTER_ATTRIBUTE_CONTEXT`.
    #[wraps(cuPointerGetAttribute)]
    #[track_caller]
    pub fn query(ptr: sys::CUdeviceptr) -> Result<PointerInfo> {
        init()?;
        let memory_type: u32 = attribute(ptr, sys::CU_POINTER_ATTRIBUTE_MEMORY_TYPE, 0)?;
        let ordinal: i32 = attribute(ptr, sys::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, 0)?;
        let context: sys::CUcontext =
            attribute(ptr, sys::CU_POINTER_ATTRIBUTE_CONTEXT, std::ptr::null_mut())?;
        Ok(PointerInfo {
            memory_type: MemoryType(memory_type),
            device_ordinal: ordinal as usize,
            context: (!context.is_null()).then_some(context),
        })
    }

    /// [`query`](Self::query) for a host pointer to page-locked or managed memory.
    #[track_caller]
    pub fn of_host<T>(ptr: *const T) -> Result<PointerInfo> {
        Self::query(ptr as usize as sys::CUdeviceptr)
    }
}
