//! Memory Management (and the Stream Ordered Memory Allocator): the memory model.
//!
//! Every kind of device memory is an *owner* that hands out typed *views*; views are the one
//! currency: copies (blocking and on a stream; host, device and peer), memsets of every
//! width and kernel arguments are implemented once, on [`DeviceSlice`] (reads) and
//! [`DeviceSliceMut`] (writes). Owners implement [`DeviceMemory`] and [`DeviceMemoryMut`]
//! (one method each) and get all of them. Adding a memory kind is one new file implementing
//! those two traits and its `Drop`.
//!
//! | Type | Allocated by | Freed by | Host access |
//! |---|---|---|---|
//! | [`DeviceBuffer`] | `cuMemAlloc_v2` | `cuMemFree_v2` | through copies |
//! | [`AsyncDeviceBuffer`](crate::memory::pool::AsyncDeviceBuffer) | `cuMemAllocAsync`, `cuMemAllocFromPoolAsync` ([`MemPool`](crate::memory::pool::MemPool)) | `cuMemFreeAsync` on its stream | through copies |
//! | [`ManagedBuffer`] | `cuMemAllocManaged` | `cuMemFree_v2` | `as_slice` / `as_mut_slice` after synchronising its stream |
//! | [`PinnedBuffer`] | `cuMemHostAlloc` | `cuMemFreeHost` | `Deref<Target = [T]>`; device view in a closure, on a stream it then waits for |
//! | [`HostRegistration`] | `cuMemHostRegister_v2` | `cuMemHostUnregister` | `Deref<Target = [T]>`; device view in a closure (`unsafe`) |
//! | [`Mapping`](crate::memory::vmm::Mapping) | `cuMemCreate` + `cuMemMap` into an [`AddressRange`](crate::memory::vmm::AddressRange) | `cuCtxSynchronize`, then `cuMemUnmap` (+ `cuMemRelease`, `cuMemAddressFree`) | through copies |
//! | [`GrowableBuffer`](crate::memory::vmm::GrowableBuffer) | `cuMemAddressReserve`, then `cuMemCreate` + `cuMemMap` per chunk | `cuCtxSynchronize`, then `cuMemUnmap`, `cuMemRelease`, `cuMemAddressFree` | through copies |
//! | [`MultiMapping`](crate::memory::vmm::MultiMapping) | `cuMemAddressReserve`, then `cuMemMap` of several allocations back to back, one `cuMemSetAccess` | `cuCtxSynchronize`, then `cuMemUnmap` of each, `cuMemRelease`, `cuMemAddressFree` | through copies |
//! | [`SharedPinnedBuffer`] | `cuMemHostAlloc` | `cuMemFreeHost` when the last handle (the program's, a host function's, a graph host node's) goes | a guard that waits for every queued use (`lock`); host functions get `&mut [T]` in their turn |
//! | [`IpcMemory`] | `cuIpcOpenMemHandle_v2` (another process's allocation) | `cuCtxSynchronize`, then `cuIpcCloseMemHandle` | through copies |
//! | [`Pitched2D`] | `cuMemAllocPitch_v2` | `cuMemFree_v2` | through [`Copy2D`] / [`Copy3D`] |
//! | [`Array`], [`MipmappedArray`] | `cuArray3DCreate_v2`, `cuMipmappedArrayCreate` | `cuArrayDestroy`, `cuMipmappedArrayDestroy` | through [`Copy2D`] / [`Copy3D`]; not linear memory |

use std::ffi::CStr;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use crate::device::Device;
use crate::error::Result;
use crate::init::init;

pub(crate) mod address;
pub(crate) mod array;
pub(crate) mod array_1d;
pub(crate) mod copy;
pub(crate) mod decompress;
pub(crate) mod device;
pub(crate) mod ipc;
#[cfg(unix)]
pub(crate) mod ipc_socket;
pub(crate) mod managed;
pub(crate) mod notification;
pub(crate) mod owner;
pub(crate) mod pinned;
pub(crate) mod pinned_shared;
pub(crate) mod pitched;
pub mod pool;
pub mod unified;
pub(crate) mod view;
pub mod vmm;

pub use crate::error::layout::LayoutError;
pub use array::{
    Array, ArrayDescriptor, ArrayElement, ArrayMemoryRequirements, ArrayRef, ArrayRefMut,
    ArraySparseProperties, MipmappedArray,
};
pub use copy::{Copy2D, Copy3D};
pub use decompress::Decompression;
pub use device::DeviceBuffer;
pub use ipc::{IpcEventHandle, IpcMemHandle, IpcMemory};
#[cfg(unix)]
pub use ipc_socket::{IpcMessageKind, IpcResult, IpcSocket, IpcSocketError, PoolPointerMessage};
pub use managed::ManagedBuffer;
pub use notification::{AsyncNotification, AsyncNotificationRegistration};
pub use owner::{DeviceMemory, DeviceMemoryMut};
pub use pinned::{HostRegistration, PinnedBuffer};
pub use pinned_shared::{SharedPinnedBuffer, SharedPinnedGuard};
pub use pitched::{Pitched2D, Pitched2DView, Pitched2DViewMut};
pub use view::{DeviceSlice, DeviceSliceMut, MemsetValue};

use crate::types::{MemAdvice, MemoryType};

/// A place memory can live or be moved to (`CUmemLocation`): a device, or the host. For
/// [`ManagedBuffer::prefetch`] and [`ManagedBuffer::advise`].
#[wraps(CUmemLocation)]
#[derive(Clone, Copy)]
#[repr(transparent)]
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

    /// Calls a raw `CUmemLocation`.
    #[wraps(CUmemLocation)]
    pub const fn from_raw(raw: sys::CUmemLocation) -> MemLocation {
        MemLocation(raw)
    }

    /// The raw `CUmemLocation`.
    pub const fn as_raw(self) -> sys::CUmemLocation {
        self.0
    }

    /// The kind of place: a device, the host, a host NUMA node, ...
    pub const fn kind(self) -> crate::types::MemLocationType {
        crate::types::MemLocationType::from_raw(self.0.type_)
    }

    /// The device ordinal or NUMA node id, as the kind says (ignored for plain host memory).
    pub const fn id(self) -> i32 {
        self.0.id
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

impl crate::device::Device {
    /// The device with PCI bus id `id` (`"0000:19:00.0"`, as [`pci_bus_id`](Self::pci_bus_id)
    /// returns).
    #[wraps(cuDeviceGetByPCIBusId)]
    #[track_caller]
    pub fn by_pci_bus_id(id: &str) -> Result<Device> {
        init()?;
        let mut d = 0;
        crate::cstr::with_c_str("PCI bus id", id, |p| {
            // SAFETY: `p` is NUL-terminated; writes one CUdevice.
            call!(unsafe { sys::cuDeviceGetByPCIBusId(&mut d, p) })
        })??;
        Ok(Device::from_raw(d))
    }
}

impl crate::device::Device {
    /// The PCI bus id, as `"0000:19:00.0"`.
    #[wraps(cuDeviceGetPCIBusId)]
    #[track_caller]
    pub fn pci_bus_id(self) -> Result<String> {
        let mut buf = [0 as std::ffi::c_char; 64];
        call!(
            // SAFETY: the driver writes at most `len` bytes, NUL-terminated.
            unsafe { sys::cuDeviceGetPCIBusId(buf.as_mut_ptr(), buf.len() as i32, self.as_raw()) },
        )?;
        // SAFETY: zero-initialised buffer holding a terminated string.
        Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned())
    }
}

impl crate::context::Context {
    /// Free and total device memory in bytes, as seen from this context.
    #[wraps(cuMemGetInfo)]
    #[track_caller]
    pub fn mem_info(&self) -> Result<(usize, usize)> {
        let _cur = self.enter()?;
        let (mut free, mut total) = (0, 0);
        call!(
            // SAFETY: writes two size_t to valid pointers.
            unsafe { sys::cuMemGetInfo_v2(&mut free, &mut total) },
        )?;
        Ok((free, total))
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
