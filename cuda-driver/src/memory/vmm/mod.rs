//! Virtual Memory Management: address ranges, physical allocations and the mappings between
//! them.
//!
//! The driver separates what `cuMemAlloc` does in one step:
//!
//! 1. [`AddressRange::reserve`] reserves a range of virtual addresses (`cuMemAddressReserve`),
//!    freed on drop (`cuMemAddressFree`); no memory backs it yet.
//! 2. [`PhysicalAllocation::new`] creates physical memory (`cuMemCreate`) with the
//!    [`AllocationProps`] asked for (device, host or host-NUMA location, shareable handle
//!    types, compression, GPUDirect RDMA, usage), released on drop (`cuMemRelease`).
//! 3. [`AddressRange::map`] maps an allocation, or a part of it, into part of a range
//!    (`cuMemMap`) and returns a [`Mapping`], which keeps both alive, unmaps on drop
//!    (`cuMemUnmap`) and is a memory owner of the crate's model: its views copy, memset and
//!    go to kernels like those of any other memory. It is the only mapping of the allocation;
//!    [`AddressRange::map_shared`] maps one allocation any number of times, with shared
//!    views only.
//! 4. A mapping is read-write for its own device (the device of the range's context, whose
//!    streams use its views) as soon as `map` returns: it sets that access (`cuMemSetAccess`)
//!    right after `cuMemMap`. [`Mapping::set_access`] makes it readable or writable from other
//!    devices and host locations; it never gives the own device less than the mapping's views
//!    need (see [`Mapping`](Mapping#access)).
//!
//! Sizes and offsets are multiples of the allocation granularity
//! ([`AllocationProps::minimum_granularity`], [`AllocationProps::recommended_granularity`]).
//!
//! Physical allocations are shared between processes as file descriptors
//! ([`PhysicalAllocation::export_fd`], [`PhysicalAllocation::import_fd`]); the fd crosses to
//! another process over a Unix socket (`SCM_RIGHTS`).
//!
//! [`GrowableBuffer`] shows the pattern this enables: reserve a large range once, map chunks
//! as the data grows, and the addresses never move.
//!
//! [`MultiMapping`] is one owner, with one view, over a whole range backed by several
//! allocations mapped back to back, its access set over the whole range in one
//! `cuMemSetAccess`: vectorAddMMAP's vectors striped over devices
//! ([`MultiMapping::striped`]). Its allocations may be made from a device alone, with no
//! context on it ([`PhysicalAllocation::on_device`], as `cuMemCreate`'s properties name the
//! device).
//!
//! Releasing and invalidating VMM memory (unmapping, changing access) waits for all work of
//! the context first, a physical allocation is mapped either once exclusively or any number of
//! times shared, and a mapping is accessible to its own device for as long as it hands out
//! views: the mechanisms are described once, on [`Mapping`] (sections "Access", "Release and
//! invalidation" and "Exclusive and shared mappings"), and the code is `map_accessible`,
//! `check_own_access`, `once_idle` / `release_once_idle` and `Claim` below.
//!
//! # Not testable on the machines this crate is tested on
//!
//! * Fabric handles ([`MemAllocationHandleType::FABRIC`], [`FabricHandle`]) need an NVSwitch
//!   fabric (`CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED`); asking for them where the
//!   device does not support them is [`VmmError::HandleTypeUnsupported`], which is tested, but
//!   an actual fabric export and import is not.
//! * Windows handle types ([`MemAllocationHandleType::WIN32`],
//!   [`MemAllocationHandleType::WIN32_KMT`]) are refused on other systems with
//!   [`VmmError::HandleTypeUnsupported`]; the crate offers no Windows export or import.

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
#[cfg(unix)]
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use crate::context::Context;
use crate::device::Device;
pub use crate::error::vmm::VmmError;
use crate::error::{check, report_drop_error, report_drop_problem, Error, Result};
use crate::handle::{give_up, Handle, OwnedHandle};
use crate::init;
use crate::memory::owner::{device_memory, DeviceMemoryMut};
use crate::memory::MemLocation;
use crate::release::release;
use crate::repr::DeviceRepr;
use crate::types::DeviceAttribute;
use crate::types::ErrorCode;

use crate::types::{
    MemAccessFlags, MemAllocationCompType, MemAllocationGranularityFlags, MemAllocationHandleType,
    MemAllocationType, MemCreateUsageFlags,
};

/// Rounds `x` up to a multiple of `granularity` (which must not be 0); `None` on overflow.
pub(crate) fn round_up(x: usize, granularity: usize) -> Option<usize> {
    debug_assert!(granularity > 0);
    x.checked_add(granularity - 1)
        .map(|y| y / granularity * granularity)
}

/// Whether `len` bytes at `offset` fit in `size` bytes (and `len` is not 0).
pub(crate) fn fits(offset: usize, len: usize, size: usize) -> bool {
    len > 0 && offset.checked_add(len).is_some_and(|end| end <= size)
}

/// Refuses handle types the device or the operating system cannot provide, before the driver
/// is asked: fabric handles without `CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED`,
/// POSIX file descriptors without `..._POSIX_FILE_DESCRIPTOR_SUPPORTED`, Windows handles on
/// other systems. `device` is the device whose attributes decide (none: host memory).
#[track_caller]
pub(crate) fn check_handle_types(
    what: &'static str,
    types: MemAllocationHandleType,
    device: Option<Device>,
) -> Result<()> {
    let windows = MemAllocationHandleType::WIN32 | MemAllocationHandleType::WIN32_KMT;
    if !cfg!(windows) && types.intersects(windows) {
        return Err(Error::Vmm(VmmError::HandleTypeUnsupported {
            what,
            handle_type: types & windows,
            reason: "Windows handle types exist only on Windows",
        }));
    }
    if let Some(device) = device {
        for (t, attr, reason) in [
            (
                MemAllocationHandleType::FABRIC,
                DeviceAttribute::HANDLE_TYPE_FABRIC_SUPPORTED,
                "the device reports CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED = 0 \
                 (fabric handles need an NVSwitch fabric and IMEX)",
            ),
            (
                MemAllocationHandleType::POSIX_FILE_DESCRIPTOR,
                DeviceAttribute::HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                "the device reports \
                 CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED = 0",
            ),
        ] {
            if types.contains(t) && device.attribute(attr)? == 0 {
                return Err(Error::Vmm(VmmError::HandleTypeUnsupported {
                    what,
                    handle_type: t,
                    reason,
                }));
            }
        }
    }
    Ok(())
}

/// The device whose attributes decide what a location supports: the location's device, or
/// none for host memory.
fn location_device(location: MemLocation) -> Option<Device> {
    let raw = location.as_raw();
    (raw.type_ == sys::CU_MEM_LOCATION_TYPE_DEVICE).then(|| Device::from_raw(raw.id))
}

/// The properties of a physical allocation (`CUmemAllocationProp`), built from a location:
/// [`device`](Self::device), [`host`](Self::host), [`host_numa`](Self::host_numa), then the
/// `with_*` methods. Every field of `CUmemAllocationProp` has one (the Windows security
/// attributes excepted: they are always null, see [`PhysicalAllocation`](PhysicalAllocation#not-testable-on-these-machines)).
///
/// ```no_run
/// use cuda_driver::{memory::vmm::AllocationProps, Device, types::MemAllocationHandleType};
///
/// let props = AllocationProps::device(Device::get(0)?)
///     .with_handle_types(MemAllocationHandleType::POSIX_FILE_DESCRIPTOR);
/// let chunk = props.recommended_granularity()?;
/// # let _ = chunk;
/// # Ok::<(), cuda_driver::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[doc(alias = "CUmemAllocationProp")]
pub struct AllocationProps {
    alloc_type: MemAllocationType,
    handle_types: MemAllocationHandleType,
    location: MemLocation,
    compression: MemAllocationCompType,
    gpu_direct_rdma_capable: bool,
    usage: MemCreateUsageFlags,
}

impl AllocationProps {
    /// Pinned memory at `location`, with no shareable handle type, no compression, not
    /// GPUDirect RDMA capable and no usage flags.
    pub const fn at(location: MemLocation) -> AllocationProps {
        AllocationProps {
            alloc_type: MemAllocationType::PINNED,
            handle_types: MemAllocationHandleType::NONE,
            location,
            compression: MemAllocationCompType::NONE,
            gpu_direct_rdma_capable: false,
            usage: MemCreateUsageFlags::empty(),
        }
    }

    /// Pinned memory of `device` (`CU_MEM_LOCATION_TYPE_DEVICE`).
    pub const fn device(device: Device) -> AllocationProps {
        Self::at(MemLocation::device(device))
    }

    /// Pinned host memory (`CU_MEM_LOCATION_TYPE_HOST`; needs
    /// `CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED`). The driver may report
    /// the allocation's location as the host NUMA node it landed on
    /// ([`MemLocation::host_numa`]; driver 580 does).
    pub const fn host() -> AllocationProps {
        Self::at(MemLocation::host())
    }

    /// Pinned host memory on NUMA node `node` (`CU_MEM_LOCATION_TYPE_HOST_NUMA`; needs
    /// `CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED`).
    pub const fn host_numa(node: i32) -> AllocationProps {
        Self::at(MemLocation::host_numa(node))
    }

    /// The allocation type (`CUmemAllocationProp::type`; `PINNED` by default).
    pub const fn with_alloc_type(mut self, alloc_type: MemAllocationType) -> Self {
        self.alloc_type = alloc_type;
        self
    }

    /// The shareable handle types the allocation may be exported as
    /// (`requestedHandleTypes`).
    pub const fn with_handle_types(mut self, types: MemAllocationHandleType) -> Self {
        self.handle_types = types;
        self
    }

    /// Asks for compressible memory (`allocFlags.compressionType`); the driver may give
    /// uncompressible memory instead: read [`PhysicalAllocation::properties`] to know.
    pub const fn with_compression(mut self, compression: MemAllocationCompType) -> Self {
        self.compression = compression;
        self
    }

    /// Asks for memory that GPUDirect RDMA can reach (`allocFlags.gpuDirectRDMACapable`;
    /// needs `CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED`).
    pub const fn with_gpu_direct_rdma(mut self, capable: bool) -> Self {
        self.gpu_direct_rdma_capable = capable;
        self
    }

    /// The intended uses of the allocation (`allocFlags.usage`).
    pub const fn with_usage(mut self, usage: MemCreateUsageFlags) -> Self {
        self.usage = usage;
        self
    }

    /// The allocation type.
    pub const fn alloc_type(&self) -> MemAllocationType {
        self.alloc_type
    }

    /// The shareable handle types asked for.
    pub const fn handle_types(&self) -> MemAllocationHandleType {
        self.handle_types
    }

    /// Where the memory lives.
    pub const fn location(&self) -> MemLocation {
        self.location
    }

    /// The compression asked for (or, read back from a handle, given).
    pub const fn compression(&self) -> MemAllocationCompType {
        self.compression
    }

    /// Whether GPUDirect RDMA capable memory is asked for.
    pub const fn gpu_direct_rdma(&self) -> bool {
        self.gpu_direct_rdma_capable
    }

    /// The usage flags.
    pub const fn usage(&self) -> MemCreateUsageFlags {
        self.usage
    }

    /// The raw `CUmemAllocationProp` (reserved bytes and the Windows metadata zero).
    pub fn as_raw(&self) -> sys::CUmemAllocationProp {
        sys::CUmemAllocationProp {
            type_: self.alloc_type.as_raw(),
            requestedHandleTypes: self.handle_types.as_raw(),
            location: self.location.as_raw(),
            win32HandleMetaData: std::ptr::null_mut(),
            allocFlags: sys::CUmemAllocationProp_st__bindgen_ty_1 {
                compressionType: self.compression.as_raw() as u8,
                gpuDirectRDMACapable: self.gpu_direct_rdma_capable as u8,
                usage: self.usage.as_raw() as u16,
                reserved: [0; 4],
            },
        }
    }

    /// The properties in a raw `CUmemAllocationProp` (the Windows metadata is not kept).
    pub fn from_raw(raw: &sys::CUmemAllocationProp) -> AllocationProps {
        AllocationProps {
            alloc_type: MemAllocationType::from_raw(raw.type_),
            handle_types: MemAllocationHandleType::from_raw(raw.requestedHandleTypes),
            location: MemLocation::from_raw(raw.location),
            compression: MemAllocationCompType::from_raw(raw.allocFlags.compressionType.into()),
            gpu_direct_rdma_capable: raw.allocFlags.gpuDirectRDMACapable != 0,
            usage: MemCreateUsageFlags::from_raw(raw.allocFlags.usage.into()),
        }
    }

    /// The granularity of allocations with these properties: sizes, offsets and address
    /// ranges are multiples of it. `flags` picks the minimum (required) or the recommended
    /// (fastest) one.
    #[wraps(cuMemGetAllocationGranularity)]
    #[track_caller]
    pub fn granularity(&self, flags: MemAllocationGranularityFlags) -> Result<usize> {
        init()?;
        let prop = self.as_raw();
        let mut g = 0;
        call!(
            // SAFETY: `prop` is a fully initialised CUmemAllocationProp; writes one size_t.
            unsafe { sys::cuMemGetAllocationGranularity(&mut g, &prop, flags.as_raw()) },
        )?;
        Ok(g)
    }

    /// The minimum granularity (`CU_MEM_ALLOC_GRANULARITY_MINIMUM`).
    #[doc(alias = "cuMemGetAllocationGranularity")]
    #[track_caller]
    pub fn minimum_granularity(&self) -> Result<usize> {
        self.granularity(MemAllocationGranularityFlags::MINIMUM)
    }

    /// The recommended granularity (`CU_MEM_ALLOC_GRANULARITY_RECOMMENDED`).
    #[doc(alias = "cuMemGetAllocationGranularity")]
    #[track_caller]
    pub fn recommended_granularity(&self) -> Result<usize> {
        self.granularity(MemAllocationGranularityFlags::RECOMMENDED)
    }
}

/// Who may access a mapping (or a pool's memory), and how (`CUmemAccessDesc`).
#[derive(Clone, Copy)]
#[repr(transparent)]
#[doc(alias = "CUmemAccessDesc")]
pub struct MemAccessDesc(sys::CUmemAccessDesc);

impl MemAccessDesc {
    /// `flags` access from `location`.
    pub const fn new(location: MemLocation, flags: MemAccessFlags) -> MemAccessDesc {
        MemAccessDesc(sys::CUmemAccessDesc {
            location: location.as_raw(),
            flags: flags.as_raw(),
        })
    }

    /// Read-write access from `device` (`CU_MEM_ACCESS_FLAGS_PROT_READWRITE`).
    pub const fn read_write(device: Device) -> MemAccessDesc {
        Self::new(MemLocation::device(device), MemAccessFlags::READWRITE)
    }

    /// Read-only access from `device` (`CU_MEM_ACCESS_FLAGS_PROT_READ`).
    pub const fn read(device: Device) -> MemAccessDesc {
        Self::new(MemLocation::device(device), MemAccessFlags::READ)
    }

    /// No access from `device` (`CU_MEM_ACCESS_FLAGS_PROT_NONE`).
    pub const fn none(device: Device) -> MemAccessDesc {
        Self::new(MemLocation::device(device), MemAccessFlags::NONE)
    }

    /// The location the access is for.
    pub const fn location(&self) -> MemLocation {
        MemLocation::from_raw(self.0.location)
    }

    /// The access.
    pub const fn flags(&self) -> MemAccessFlags {
        MemAccessFlags::from_raw(self.0.flags)
    }

    /// Wraps a raw `CUmemAccessDesc`.
    pub const fn from_raw(raw: sys::CUmemAccessDesc) -> MemAccessDesc {
        MemAccessDesc(raw)
    }

    /// The raw `CUmemAccessDesc`.
    pub const fn as_raw(&self) -> sys::CUmemAccessDesc {
        self.0
    }
}

impl PartialEq for MemAccessDesc {
    fn eq(&self, other: &Self) -> bool {
        self.location() == other.location() && self.flags() == other.flags()
    }
}

impl Eq for MemAccessDesc {}

impl std::fmt::Debug for MemAccessDesc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemAccessDesc")
            .field("location", &self.location())
            .field("flags", &self.flags())
            .finish()
    }
}

/// `cuMemSetAccess` on `bytes` at `ptr`, in the current context.
#[track_caller]
fn set_access_in_current(
    ptr: sys::CUdeviceptr,
    bytes: usize,
    descs: &[MemAccessDesc],
) -> Result<()> {
    call!(
        // SAFETY: MemAccessDesc is repr(transparent) over CUmemAccessDesc, so `descs` is an
        // array of `descs.len()` CUmemAccessDesc; the driver validates the range.
        unsafe { sys::cuMemSetAccess(ptr, bytes, descs.as_ptr().cast(), descs.len()) },
    )
}

/// Refuses an access list that gives `own` (the device of the memory's context, whose streams
/// use its views) less than those views need: read-write for mutable views (`exclusive`), read
/// or read-write for shared ones. Entries for other devices and host locations are free: they
/// reach the memory only through `unsafe` launches or peer copies, which the release path
/// waits for (see [`Mapping`](Mapping#access)).
#[track_caller]
fn check_own_access(
    what: &'static str,
    own: MemLocation,
    exclusive: bool,
    descs: &[MemAccessDesc],
) -> Result<()> {
    let bad = descs.iter().find(|d| {
        let flags = d.flags();
        d.location() == own
            && flags != MemAccessFlags::READWRITE
            && (exclusive || flags != MemAccessFlags::READ)
    });
    match bad {
        None => Ok(()),
        Some(d) => Err(Error::InvalidArgument(format!(
            "{what}: {:?} for the memory's own device ({own:?}) is less than its views need: \
             {}; entries for other devices and host locations are free",
            d.flags(),
            if exclusive {
                "mutable views need READWRITE (read-only memory hands out shared views only: \
                 see Mapping::into_shared)"
            } else {
                "shared views need READ or READWRITE"
            }
        ))),
    }
}

/// `cuMemGetAccess` of `location` at `ptr`.
#[track_caller]
fn get_access_raw(
    ctx: &Context,
    ptr: sys::CUdeviceptr,
    location: MemLocation,
) -> Result<MemAccessFlags> {
    let _cur = ctx.enter()?;
    let loc = location.as_raw();
    let mut flags: std::ffi::c_ulonglong = 0;
    call!(
        // SAFETY: reads one CUmemLocation, writes one unsigned long long.
        unsafe { sys::cuMemGetAccess(&mut flags, &loc, ptr) },
    )?;
    Ok(MemAccessFlags::from_raw(flags as sys::CUmemAccess_flags))
}

/// The one path by which VMM memory is invalidated (see
/// [`Mapping`](Mapping#release-and-invalidation)): waits for the work queued through its
/// views on other contexts' streams (see `Context::fence_foreign_use`), then, with `ctx`
/// current, for all of its own work (`cuCtxSynchronize`), then runs `invalidate`, still with
/// `ctx` current, and returns its result. When entering or waiting fails, `invalidate` does
/// not run and the error is returned. Refuses inside a host function, as every entry does.
#[track_caller]
fn once_idle<R>(ctx: &Context, invalidate: impl FnOnce() -> R) -> Result<R> {
    // Work queued on other contexts' streams through the views (peer copies) first.
    ctx.wait_foreign_uses_checked()?;
    let _cur = ctx.enter()?;
    call!(
        // SAFETY: no arguments; waits for the current context, which is `ctx`.
        unsafe { sys::cuCtxSynchronize() },
    )?;
    Ok(invalidate())
}

/// Releases VMM memory from `Drop` through [`once_idle`]: `unmap` makes the unmapping calls
/// (reporting each failure) and says whether all succeeded; `keep` holds what the mapped
/// memory needs until then (allocation references and their claims) and is dropped after it,
/// then `range`'s reservation is let go (freed once no mapping is left in it). When the wait
/// or an unmapping fails, nothing more is released: `keep` and the reservation are leaked and
/// the leak is reported, because freeing them could let queued work reach memory that is
/// reused. Inside a host function all of it runs on the crate's release thread.
fn release_once_idle<K: Send + 'static>(
    range: &Arc<RangeInner>,
    what: &'static str,
    unmap: impl FnOnce() -> bool + Send + 'static,
    keep: K,
) {
    let range = Arc::clone(range);
    release(move || {
        let unmapped = match once_idle(&range.ctx, unmap) {
            Ok(all) => all,
            Err(e) => {
                // At process exit the driver may be torn down already: nothing to report.
                if e.code() != Some(ErrorCode::DEINITIALIZED) {
                    report_drop_problem(&format_args!(
                        "{what}: waiting for the context's work before unmapping failed ({e}); \
                         the memory is leaked, not unmapped, because work queued through its \
                         views may still use it"
                    ));
                }
                false
            }
        };
        if unmapped {
            drop(keep);
            drop(range);
        } else {
            std::mem::forget(keep);
            std::mem::forget(range);
        }
    });
}

/// How a physical allocation is mapped, by raw handle (see
/// [`Mapping`](Mapping#exclusive-and-shared-mappings)).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Claimed {
    /// One exclusive mapping.
    Exclusive,
    /// This many shared mappings (at least one).
    Shared(usize),
}

/// The claims of every mapped allocation of the process, by raw handle. An entry lives while
/// its mappings do, and for ever after a release that failed (the memory is leaked, and stays
/// claimed).
static CLAIMS: Mutex<BTreeMap<sys::CUmemGenericAllocationHandle, Claimed>> =
    Mutex::new(BTreeMap::new());

fn claims() -> MutexGuard<'static, BTreeMap<sys::CUmemGenericAllocationHandle, Claimed>> {
    // The map is consistent at every unlock (no code between lock and unlock panics).
    CLAIMS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A mapping's claim on its physical allocation, released on drop.
#[derive(Debug)]
struct Claim {
    handle: sys::CUmemGenericAllocationHandle,
    exclusive: bool,
}

impl Claim {
    /// Claims `handle` for an exclusive or a shared mapping; [`VmmError::AllocationMapped`] when
    /// a mapping of it excludes that.
    fn take(
        what: &'static str,
        handle: sys::CUmemGenericAllocationHandle,
        exclusive: bool,
    ) -> Result<Claim> {
        match claims().entry(handle) {
            Entry::Vacant(v) => {
                v.insert(if exclusive {
                    Claimed::Exclusive
                } else {
                    Claimed::Shared(1)
                });
            }
            Entry::Occupied(mut o) => match (o.get_mut(), exclusive) {
                (Claimed::Shared(n), false) => *n += 1,
                (held, _) => {
                    return Err(Error::Vmm(VmmError::AllocationMapped {
                        what,
                        handle,
                        exclusive: *held == Claimed::Exclusive,
                    }))
                }
            },
        }
        Ok(Claim { handle, exclusive })
    }

    /// The exclusive claim of a mapping taken over with [`Mapping::from_raw`]: the claim its
    /// [`into_raw`](Mapping::into_raw) left, or a new one (the caller of `from_raw` vouches
    /// that no other mapping of the allocation hands out views).
    fn adopt_exclusive(handle: sys::CUmemGenericAllocationHandle) -> Claim {
        claims().insert(handle, Claimed::Exclusive);
        Claim {
            handle,
            exclusive: true,
        }
    }

    /// Turns an exclusive claim into a shared one (its mapping became shared,
    /// [`Mapping::into_shared`]): the entry then counts one shared mapping, so further shared
    /// claims may join it and an exclusive one is refused until all are gone.
    fn share(&mut self) {
        if !self.exclusive {
            return;
        }
        match claims().entry(self.handle) {
            Entry::Occupied(mut o) => match o.get_mut() {
                held @ Claimed::Exclusive => *held = Claimed::Shared(1),
                // Only after `unsafe` take-overs (`from_raw`) of one allocation.
                Claimed::Shared(n) => *n += 1,
            },
            Entry::Vacant(v) => {
                v.insert(Claimed::Shared(1));
            }
        }
        self.exclusive = false;
    }

    /// Forgets any claim left on `handle`, a handle `cuMemCreate` has just returned: new
    /// physical memory is mapped nowhere, so an entry can only be left from an earlier
    /// allocation of the same handle value (a mapping given up with `into_raw` and unmapped
    /// by its caller).
    fn forget_stale(handle: sys::CUmemGenericAllocationHandle) {
        claims().remove(&handle);
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        let mut claims = claims();
        if let Entry::Occupied(mut o) = claims.entry(self.handle) {
            match (o.get_mut(), self.exclusive) {
                (Claimed::Exclusive, true) => {
                    o.remove();
                }
                (Claimed::Shared(n), false) if *n > 1 => *n -= 1,
                (Claimed::Shared(_), false) => {
                    o.remove();
                }
                // Taken over by a `from_raw` whose caller vouched for it: not ours any more.
                _ => {}
            }
        }
    }
}

/// A fabric handle of a physical allocation (`CUmemFabricHandle`): 64 opaque bytes that any
/// process of the same NVSwitch fabric can import. `Copy`, and sent as plain bytes.
///
/// Not testable on single-node machines without a fabric: see [`PhysicalAllocation`](PhysicalAllocation#not-testable-on-these-machines).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[doc(alias = "CUmemFabricHandle")]
pub struct FabricHandle([u8; 64]);

impl FabricHandle {
    /// The handle's bytes, to send to another process.
    pub const fn to_bytes(self) -> [u8; 64] {
        self.0
    }

    /// A handle from bytes received from another process.
    pub const fn from_bytes(bytes: [u8; 64]) -> FabricHandle {
        FabricHandle(bytes)
    }
}

impl std::fmt::Debug for FabricHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FabricHandle(")?;
        for b in &self.0[..8] {
            write!(f, "{b:02x}")?;
        }
        write!(f, "..)")
    }
}

/// Physical memory created with `cuMemCreate` (or imported, or retained from an address),
/// released with `cuMemRelease` on drop. The memory itself lives until its last mapping is
/// unmapped too, so a [`Mapping`] may outlive the handle it was made from; mappings hold it
/// in an [`Arc`].
///
/// `Send + Sync`: the handle is a process-wide driver object.
///
/// Virtual memory management in steps: [`AddressRange::reserve`] reserves addresses,
/// [`PhysicalAllocation::new`] creates memory with [`AllocationProps`], [`AddressRange::map`]
/// maps (a part of) it into (a part of) a range as a [`Mapping`], a memory owner whose views
/// copy, memset and go to kernels, read-write for the device of the range's context from the
/// start, and [`Mapping::set_access`] makes it accessible to other devices. An allocation has
/// one such exclusive mapping at a time, or any number of shared ones
/// ([`AddressRange::map_shared`]), which hand out shared views only. [`GrowableBuffer`] shows
/// the pattern. Another process gets the memory through [`export_fd`](Self::export_fd) and
/// [`import_fd`](Self::import_fd) (the fd crosses over a Unix socket with `SCM_RIGHTS`).
///
/// # Not testable on these machines
///
/// * Fabric handles ([`MemAllocationHandleType::FABRIC`], [`FabricHandle`],
///   [`export_fabric`](Self::export_fabric), [`import_fabric`](Self::import_fabric)) need an
///   NVSwitch fabric (`CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED`). Asking for them
///   where the device does not support them is [`VmmError::HandleTypeUnsupported`], which is
///   tested; an actual fabric export and import is not.
/// * Windows handle types ([`MemAllocationHandleType::WIN32`],
///   [`MemAllocationHandleType::WIN32_KMT`]) are refused elsewhere with
///   [`VmmError::HandleTypeUnsupported`]; the crate offers no Windows export or import, and the
///   Windows security attributes of `CUmemAllocationProp` / `CUmemPoolProps` stay null.
#[doc(alias = "CUmemGenericAllocationHandle")]
pub struct PhysicalAllocation {
    handle: sys::CUmemGenericAllocationHandle,
    size: Option<usize>,
    /// The context made current for its calls and kept alive; none for an allocation created
    /// from a device alone ([`on_device`](PhysicalAllocation::on_device)).
    ctx: Option<Context>,
}

// SAFETY: an allocation handle is a process-wide integer handle usable from any thread,
// released once, in Drop.
unsafe impl Send for PhysicalAllocation {}
// SAFETY: every operation on it is thread-safe in the driver.
unsafe impl Sync for PhysicalAllocation {}

impl Drop for PhysicalAllocation {
    fn drop(&mut self) {
        let handle = self.handle;
        match &self.ctx {
            Some(ctx) => ctx.release("cuMemRelease", move || {
                // SAFETY: `handle` holds one reference (cuMemCreate,
                // cuMemRetainAllocationHandle or cuMemImportFromShareableHandle), owned by self
                // and released once, here; mappings of it keep the memory until unmapped.
                unsafe { sys::cuMemRelease(handle) }
            }),
            None => release(move || {
                let r = without_context(|| {
                    // SAFETY: as above, for an allocation made by `on_device`; called again
                    // only when the first call was refused for want of a context (nothing
                    // released).
                    unsafe { sys::cuMemRelease(handle) }
                });
                report_drop_error("cuMemRelease", r);
            }),
        }
    }
}

/// Runs `call`, a driver call that belongs to no context (VMM handles are process-wide), with
/// whatever context is current on this thread, or none; should the driver ask for one
/// (`CUDA_ERROR_INVALID_CONTEXT`), again with some context current
/// ([`AnyCurrent`](crate::context::AnyCurrent): the caller's, or device 0's primary context for
/// the span of the call).
fn without_context(mut call: impl FnMut() -> sys::CUresult) -> sys::CUresult {
    let r = call();
    if r != sys::CUDA_ERROR_INVALID_CONTEXT {
        return r;
    }
    match crate::context::AnyCurrent::enter() {
        Ok(_any) => call(),
        Err(_) => r,
    }
}

impl std::fmt::Debug for PhysicalAllocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PhysicalAllocation")
            .field("handle", &format_args!("{:#x}", self.handle))
            .field("size", &self.size)
            .field("context", &self.ctx.is_some())
            .finish()
    }
}

/// The context an allocation's call runs in: its own, entered; or, for one created from a
/// device alone, none (the call runs through [`without_context`]).
enum AllocCall<'a> {
    Entered(#[allow(dead_code)] crate::context::Current<'a>),
    Free,
}

impl PhysicalAllocation {
    /// Creates `size` bytes of physical memory with `props` (`size` a multiple of the
    /// [granularity](AllocationProps::minimum_granularity)). `ctx` is made current for the
    /// calls and kept alive by the handle.
    ///
    /// Handle types the device cannot export (fabric without the device attribute, POSIX
    /// file descriptors without theirs, Windows handles elsewhere) are
    /// [`VmmError::HandleTypeUnsupported`], before the driver is asked.
    #[wraps(cuMemCreate)]
    #[track_caller]
    pub fn new(ctx: &Context, size: usize, props: &AllocationProps) -> Result<PhysicalAllocation> {
        let device = location_device(props.location).or(Some(ctx.device()));
        check_handle_types("PhysicalAllocation::new", props.handle_types, device)?;
        let prop = props.as_raw();
        let _cur = ctx.enter()?;
        let mut handle = 0;
        call!(
            // SAFETY: `prop` is a fully initialised CUmemAllocationProp; writes one handle,
            // owned by the value built in the next statement.
            unsafe { sys::cuMemCreate(&mut handle, size, &prop, 0) },
        )?;
        Claim::forget_stale(handle);
        Ok(PhysicalAllocation {
            handle,
            size: Some(size),
            ctx: Some(ctx.clone()),
        })
    }

    /// Creates `size` bytes of physical memory with `props` on the device (or host location)
    /// that `props` names, as `cuMemCreate` does, without a context: the allocation belongs to
    /// no context, none needs to exist on its device (vectorAddMMAP backs a vector with memory
    /// of devices on which it creates no context), and it holds none
    /// ([`context`](Self::context) is `None`). Its calls (`cuMemCreate`, `cuMemRelease`,
    /// exports) run with whatever context is current on the calling thread, or none; should
    /// the driver ask for one, with device 0's primary context for the span of the call.
    ///
    /// It maps into a range of any context ([`AddressRange::map`],
    /// [`MultiMapping::new`](crate::memory::vmm::MultiMapping::new)), whose device must be able to reach
    /// the memory (the mapping's access: peer access between the devices).
    ///
    /// Handle types the device cannot export are [`VmmError::HandleTypeUnsupported`], before the
    /// driver is asked, as for [`new`](Self::new).
    #[wraps(cuMemCreate)]
    #[track_caller]
    pub fn on_device(size: usize, props: &AllocationProps) -> Result<PhysicalAllocation> {
        check_handle_types(
            "PhysicalAllocation::on_device",
            props.handle_types,
            location_device(props.location),
        )?;
        if crate::release::in_host_fn() {
            return Err(Error::InHostCallback {
                location: std::panic::Location::caller(),
            });
        }
        let prop = props.as_raw();
        let mut handle = 0;
        check(
            without_context(|| {
                // SAFETY: `prop` is a fully initialised CUmemAllocationProp; writes one handle,
                // owned by the value built in the next statement.
                unsafe { sys::cuMemCreate(&mut handle, size, &prop, 0) }
            }),
            "cuMemCreate",
        )?;
        Claim::forget_stale(handle);
        Ok(PhysicalAllocation {
            handle,
            size: Some(size),
            ctx: None,
        })
    }

    /// Makes the allocation's context current for a call (or none: see
    /// [`on_device`](Self::on_device)); refuses inside a host function, as every entry does.
    #[track_caller]
    fn enter(&self) -> Result<AllocCall<'_>> {
        match &self.ctx {
            Some(ctx) => Ok(AllocCall::Entered(ctx.enter()?)),
            None if crate::release::in_host_fn() => Err(Error::InHostCallback {
                location: std::panic::Location::caller(),
            }),
            None => Ok(AllocCall::Free),
        }
    }

    /// Runs one driver call of the allocation in its context ([`enter`](Self::enter)).
    #[track_caller]
    fn call(&self, name: &'static str, mut f: impl FnMut() -> sys::CUresult) -> Result<()> {
        match self.enter()? {
            AllocCall::Entered(_cur) => check(f(), name),
            AllocCall::Free => check(without_context(f), name),
        }
    }

    /// A new reference to the allocation mapped at `ptr` (any address inside a mapping), to
    /// be released on drop like any other. Its size is unknown ([`size`](Self::size) is
    /// `None`).
    #[wraps(cuMemRetainAllocationHandle)]
    #[track_caller]
    pub fn retain(ctx: &Context, ptr: sys::CUdeviceptr) -> Result<PhysicalAllocation> {
        let _cur = ctx.enter()?;
        let mut handle = 0;
        call!(
            // SAFETY: the driver checks that `ptr` lies in a mapping and writes one handle
            // holding a new reference, owned by the value built in the next statement.
            unsafe { sys::cuMemRetainAllocationHandle(&mut handle, ptr as *mut std::ffi::c_void) },
        )?;
        Ok(PhysicalAllocation {
            handle,
            size: None,
            ctx: Some(ctx.clone()),
        })
    }

    /// Imports an allocation another process exported as a POSIX file descriptor
    /// ([`export_fd`](Self::export_fd)). The fd stays the caller's (close it when done; the
    /// allocation does not need it). The size is not carried by the fd: the exporter sends
    /// it, and [`size`](Self::size) is `None` until
    /// [`with_known_size`](Self::with_known_size) records it.
    #[cfg(unix)]
    #[wraps(cuMemImportFromShareableHandle)]
    #[track_caller]
    pub fn import_fd(ctx: &Context, fd: BorrowedFd<'_>) -> Result<PhysicalAllocation> {
        let _cur = ctx.enter()?;
        let mut handle = 0;
        call!(
            // SAFETY: for CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR the driver takes the fd
            // itself in the pointer argument and does not close it; writes one handle, owned
            // by the value built in the next statement.
            unsafe {
                sys::cuMemImportFromShareableHandle(
                    &mut handle,
                    fd.as_raw_fd() as usize as *mut std::ffi::c_void,
                    sys::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                )
            },
        )?;
        Ok(PhysicalAllocation {
            handle,
            size: None,
            ctx: Some(ctx.clone()),
        })
    }

    /// Imports an allocation exported as a fabric handle ([`export_fabric`](Self::export_fabric)).
    /// Not testable without an NVSwitch fabric: see [`PhysicalAllocation`](PhysicalAllocation#not-testable-on-these-machines).
    #[wraps(cuMemImportFromShareableHandle)]
    #[track_caller]
    pub fn import_fabric(ctx: &Context, handle: &FabricHandle) -> Result<PhysicalAllocation> {
        check_handle_types(
            "PhysicalAllocation::import_fabric",
            MemAllocationHandleType::FABRIC,
            Some(ctx.device()),
        )?;
        let _cur = ctx.enter()?;
        let mut fabric = sys::CUmemFabricHandle { data: handle.0 };
        let mut raw = 0;
        call!(
            // SAFETY: for CU_MEM_HANDLE_TYPE_FABRIC the pointer is to a CUmemFabricHandle,
            // which lives across the call; writes one handle, owned by the value built next.
            unsafe {
                sys::cuMemImportFromShareableHandle(
                    &mut raw,
                    (&mut fabric as *mut sys::CUmemFabricHandle).cast(),
                    sys::CU_MEM_HANDLE_TYPE_FABRIC,
                )
            },
        )?;
        Ok(PhysicalAllocation {
            handle: raw,
            size: None,
            ctx: Some(ctx.clone()),
        })
    }

    /// Records the size of an allocation whose size the driver does not tell (imported or
    /// retained), so that [`AddressRange::map`] checks ranges against it. A wrong size only
    /// moves the error to the driver: `cuMemMap` checks the real one.
    pub fn with_known_size(mut self, size: usize) -> Self {
        self.size = Some(size);
        self
    }

    /// Exports the allocation as a POSIX file descriptor, owned by the caller, to send to
    /// another process (over a Unix socket with `SCM_RIGHTS`:
    /// [`IpcSocket::send_allocation`](crate::memory::IpcSocket::send_allocation) exports and
    /// sends it with its size). The allocation must have
    /// been created with [`MemAllocationHandleType::POSIX_FILE_DESCRIPTOR`].
    #[cfg(unix)]
    #[wraps(cuMemExportToShareableHandle)]
    #[track_caller]
    pub fn export_fd(&self) -> Result<OwnedFd> {
        let mut fd: std::ffi::c_int = -1;
        let out = &mut fd as *mut std::ffi::c_int;
        self.call("cuMemExportToShareableHandle", || {
            // SAFETY: for CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR the driver writes one int
            // (to `fd`, alive across the call), a new descriptor that the caller owns.
            unsafe {
                sys::cuMemExportToShareableHandle(
                    out.cast(),
                    self.handle,
                    sys::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                    0,
                )
            }
        })?;
        if fd < 0 {
            return Err(Error::UnexpectedValue {
                call: "cuMemExportToShareableHandle",
                reason: format!("file descriptor {fd}"),
            });
        }
        // SAFETY: the driver returned a new open descriptor that nothing else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// Exports the allocation as a fabric handle. The allocation must have been created with
    /// [`MemAllocationHandleType::FABRIC`], which needs
    /// `CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED` ([`VmmError::HandleTypeUnsupported`]
    /// otherwise). Not testable without an NVSwitch fabric: see [`PhysicalAllocation`](PhysicalAllocation#not-testable-on-these-machines).
    #[wraps(cuMemExportToShareableHandle)]
    #[track_caller]
    pub fn export_fabric(&self) -> Result<FabricHandle> {
        let device = match &self.ctx {
            Some(ctx) => Some(ctx.device()),
            None => location_device(self.properties()?.location),
        };
        check_handle_types(
            "PhysicalAllocation::export_fabric",
            MemAllocationHandleType::FABRIC,
            device,
        )?;
        let mut fabric = sys::CUmemFabricHandle { data: [0; 64] };
        let out = &mut fabric as *mut sys::CUmemFabricHandle;
        self.call("cuMemExportToShareableHandle", || {
            // SAFETY: for CU_MEM_HANDLE_TYPE_FABRIC the driver writes one CUmemFabricHandle
            // (to `fabric`, alive across the call).
            unsafe {
                sys::cuMemExportToShareableHandle(
                    out.cast(),
                    self.handle,
                    sys::CU_MEM_HANDLE_TYPE_FABRIC,
                    0,
                )
            }
        })?;
        Ok(FabricHandle(fabric.data))
    }

    /// The properties the allocation was created with (what the driver granted: read the
    /// compression here).
    #[wraps(cuMemGetAllocationPropertiesFromHandle)]
    #[track_caller]
    pub fn properties(&self) -> Result<AllocationProps> {
        let mut prop = sys::CUmemAllocationProp {
            type_: 0,
            requestedHandleTypes: 0,
            location: sys::CUmemLocation { type_: 0, id: 0 },
            win32HandleMetaData: std::ptr::null_mut(),
            allocFlags: Default::default(),
        };
        let out = &mut prop as *mut sys::CUmemAllocationProp;
        self.call("cuMemGetAllocationPropertiesFromHandle", || {
            // SAFETY: writes one CUmemAllocationProp (to `prop`, alive across the call); the
            // handle is alive.
            unsafe { sys::cuMemGetAllocationPropertiesFromHandle(out, self.handle) }
        })?;
        Ok(AllocationProps::from_raw(&prop))
    }

    /// The size in bytes: given at creation, or recorded with
    /// [`with_known_size`](Self::with_known_size); `None` for an imported or retained
    /// handle whose size nobody told.
    pub fn size(&self) -> Option<usize> {
        self.size
    }

    /// The context the handle keeps alive and makes current for its calls; `None` for an
    /// allocation created from a device alone ([`on_device`](Self::on_device)).
    pub fn context(&self) -> Option<&Context> {
        self.ctx.as_ref()
    }
}

impl Handle for PhysicalAllocation {
    type Raw = sys::CUmemGenericAllocationHandle;

    /// The raw `CUmemGenericAllocationHandle`, valid while `self` lives.
    #[inline]
    fn as_raw(&self) -> sys::CUmemGenericAllocationHandle {
        self.handle
    }
}

impl OwnedHandle for PhysicalAllocation {
    type Parent<'p> = (Option<usize>, &'p Context);

    /// Takes ownership of one reference to an allocation of `ctx`'s device (released on drop),
    /// of `size` bytes when known.
    ///
    /// # Safety
    /// `handle` holds a reference (from `cuMemCreate`, `cuMemRetainAllocationHandle` or
    /// `cuMemImportFromShareableHandle`) that nothing else releases; `size`, when given, is
    /// at most the allocation's size.
    unsafe fn from_raw(
        handle: sys::CUmemGenericAllocationHandle,
        (size, ctx): (Option<usize>, &Context),
    ) -> PhysicalAllocation {
        PhysicalAllocation {
            handle,
            size,
            ctx: Some(ctx.clone()),
        }
    }

    /// Gives up ownership: the caller releases the handle with `cuMemRelease`.
    fn into_raw(self) -> sys::CUmemGenericAllocationHandle {
        give_up!(self, handle; drop(ctx); forget(size))
    }
}

/// A reserved range of virtual addresses (`cuMemAddressReserve`), freed on drop
/// (`cuMemAddressFree`) once no mapping is left in it. Physical memory is mapped into it with
/// [`map`](Self::map) or [`map_shared`](Self::map_shared); the mappings borrow the range, so it
/// outlives them, and the release of each mapping (after waiting for the context's work: see
/// [`Mapping`](Mapping#release-and-invalidation)) holds the reservation until the mapping is
/// unmapped: a release deferred out of a host function, or a mapping leaked because that wait
/// failed, keeps the addresses reserved.
///
/// ```no_run
/// use std::sync::Arc;
/// use cuda_driver::prelude::*;
/// use cuda_driver::{
///     memory::vmm::AddressRange, memory::vmm::AllocationProps, Device, types::MemAccessFlags, memory::MemLocation, memory::vmm::PhysicalAllocation,
/// };
///
/// let dev = Device::get(0)?;
/// let ctx = dev.primary_context()?;
/// let props = AllocationProps::device(dev);
/// let size = props.minimum_granularity()?; // 2 MiB on current GPUs
/// let range = AddressRange::reserve(&ctx, 4 * size, 0)?;
/// let phys = Arc::new(PhysicalAllocation::new(&ctx, size, &props)?);
/// let mut mapping = range.map::<u32>(size, phys, 0, size)?; // into the second quarter
/// mapping.memset(7u32)?; // read-write for `dev` from the start
/// assert_eq!(mapping.access(MemLocation::device(dev))?, MemAccessFlags::READWRITE);
/// assert!(mapping.to_vec()?.iter().all(|&x| x == 7));
/// # Ok::<(), cuda_driver::Error>(())
/// ```
#[doc(alias = "cuMemAddressReserve")]
pub struct AddressRange {
    inner: Arc<RangeInner>,
}

/// The reservation of an [`AddressRange`], shared with the releases of its mappings.
struct RangeInner {
    ptr: sys::CUdeviceptr,
    size: usize,
    ctx: Context,
}

impl Drop for RangeInner {
    fn drop(&mut self) {
        let (ptr, size) = (self.ptr, self.size);
        // SAFETY: the range was reserved by cuMemAddressReserve with this size and is owned by
        // the last holder of the Arc, here; every mapping borrows the AddressRange and its
        // release holds this Arc until it has unmapped, so none is left; freed once, here.
        self.ctx.release("cuMemAddressFree", move || unsafe {
            sys::cuMemAddressFree(ptr, size)
        });
    }
}

impl std::fmt::Debug for AddressRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AddressRange")
            .field("ptr", &format_args!("{:#x}", self.inner.ptr))
            .field("size", &self.inner.size)
            .finish()
    }
}

impl AddressRange {
    /// Reserves `size` bytes of virtual addresses aligned to `alignment` (0: the default,
    /// the granularity); `size` is a multiple of the granularity.
    #[wraps(cuMemAddressReserve)]
    #[track_caller]
    pub fn reserve(ctx: &Context, size: usize, alignment: usize) -> Result<AddressRange> {
        Self::reserve_at(ctx, size, alignment, 0)
    }

    /// As [`reserve`](Self::reserve), asking for the range to start at `addr` (0: anywhere).
    /// The address is a request: the driver may place the range elsewhere, so read
    /// [`as_raw`](Self::as_raw).
    #[wraps(cuMemAddressReserve)]
    #[track_caller]
    pub fn reserve_at(
        ctx: &Context,
        size: usize,
        alignment: usize,
        addr: sys::CUdeviceptr,
    ) -> Result<AddressRange> {
        let _cur = ctx.enter()?;
        let mut ptr = 0;
        call!(
            // SAFETY: writes one CUdeviceptr; the range is owned by the value built next.
            unsafe { sys::cuMemAddressReserve(&mut ptr, size, alignment, addr, 0) },
        )?;
        Ok(AddressRange {
            inner: Arc::new(RangeInner {
                ptr,
                size,
                ctx: ctx.clone(),
            }),
        })
    }

    /// Maps `bytes` bytes of `alloc`, from `alloc_offset`, at `offset` bytes into this range,
    /// as memory of `bytes / size_of::<T>()` elements: the only mapping of `alloc`, which
    /// hands out mutable views. Offsets and `bytes` are multiples of the granularity (checked
    /// by the driver); a span outside the range, or outside the allocation when its size is
    /// known, is [`VmmError::MappingRange`], and an allocation mapped already (through any handle
    /// of it) is [`VmmError::AllocationMapped`], before the driver is asked. To map an allocation
    /// more than once, map it with [`map_shared`](Self::map_shared) each time.
    ///
    /// cuda.h allows mapping part of an allocation; drivers may refuse a nonzero
    /// `alloc_offset` with `CUDA_ERROR_NOT_SUPPORTED` (driver 580 on an H100 does), leaving
    /// the range free. Mapping whole allocations works everywhere.
    ///
    /// The mapping is read-write for the device of the range's context as soon as this returns
    /// (`cuMemSetAccess` right after `cuMemMap`; when that fails, the span is unmapped again
    /// and the error returned, the allocation not claimed); [`Mapping::set_access`] grants
    /// access to other devices and host locations (see [`Mapping`](Mapping#access)).
    #[wraps(cuMemMap)]
    #[doc(alias = "cuMemSetAccess")]
    #[track_caller]
    pub fn map<T: DeviceRepr>(
        &self,
        offset: usize,
        alloc: Arc<PhysicalAllocation>,
        alloc_offset: usize,
        bytes: usize,
    ) -> Result<Mapping<'_, T>> {
        self.map_as("AddressRange::map", offset, alloc, alloc_offset, bytes)
    }

    /// As [`map`](Self::map), as one of possibly several mappings of `alloc` that hand out
    /// shared views only ([`SharedMapping`]: [`DeviceMemory`], not [`DeviceMemoryMut`]). An
    /// allocation mapped exclusively ([`map`](Self::map)) is [`VmmError::AllocationMapped`].
    /// Read-write for the device of the range's context as soon as this returns, as
    /// [`map`](Self::map) is; [`Mapping::set_access`] may make it read-only for that device.
    ///
    /// A shared mapping gives no mutable view:
    ///
    /// ```compile_fail
    /// # use std::sync::Arc;
    /// # use cuda_driver::prelude::*;
    /// # fn f(range: &cuda_driver::memory::vmm::AddressRange, alloc: Arc<cuda_driver::memory::vmm::PhysicalAllocation>)
    /// # -> cuda_driver::Result<()> {
    /// let mut alias = range.map_shared::<u32>(0, alloc, 0, 2 << 20)?;
    /// alias.memset(0u32)?;
    /// # Ok(()) }
    /// ```
    #[wraps(cuMemMap)]
    #[doc(alias = "cuMemSetAccess")]
    #[track_caller]
    pub fn map_shared<T: DeviceRepr>(
        &self,
        offset: usize,
        alloc: Arc<PhysicalAllocation>,
        alloc_offset: usize,
        bytes: usize,
    ) -> Result<SharedMapping<'_, T>> {
        self.map_as(
            "AddressRange::map_shared",
            offset,
            alloc,
            alloc_offset,
            bytes,
        )
    }

    #[track_caller]
    fn map_as<T: DeviceRepr, M: MapMode>(
        &self,
        what: &'static str,
        offset: usize,
        alloc: Arc<PhysicalAllocation>,
        alloc_offset: usize,
        bytes: usize,
    ) -> Result<Mapping<'_, T, M>> {
        if !fits(offset, bytes, self.inner.size) {
            return Err(Error::Vmm(VmmError::MappingRange {
                what,
                kind: "address range",
                offset,
                len: bytes,
                size: self.inner.size,
            }));
        }
        if let Some(size) = alloc.size {
            if !fits(alloc_offset, bytes, size) {
                return Err(Error::Vmm(VmmError::MappingRange {
                    what,
                    kind: "physical allocation",
                    offset: alloc_offset,
                    len: bytes,
                    size,
                }));
            }
        }
        // Released again (dropped) when the mapping fails.
        let claim = Claim::take(what, alloc.handle, M::EXCLUSIVE)?;
        let ctx = &self.inner.ctx;
        let ptr = self.inner.ptr + offset as sys::CUdeviceptr;
        // Read-write for the own device, whatever the mode: what both modes' views need.
        let own = MemAccessDesc::read_write(ctx.device());
        map_accessible(
            what,
            ctx,
            ptr,
            bytes,
            &alloc,
            alloc_offset,
            std::slice::from_ref(&own),
        )?;
        Ok(Mapping {
            ptr,
            bytes,
            len: bytes.checked_div(std::mem::size_of::<T>()).unwrap_or(0),
            range: self,
            alloc,
            claim: Some(claim),
            _marker: PhantomData,
        })
    }

    /// The first address of the range, valid while `self` lives.
    pub fn as_raw(&self) -> sys::CUdeviceptr {
        self.inner.ptr
    }

    /// The size of the range in bytes.
    pub fn size(&self) -> usize {
        self.inner.size
    }

    /// The context the range keeps alive and makes current for its calls.
    pub fn context(&self) -> &Context {
        &self.inner.ctx
    }

    /// Takes ownership of a reserved range.
    ///
    /// # Safety
    /// `ptr` and `size` are a range reserved by `cuMemAddressReserve` that nothing else
    /// frees, with nothing mapped into it that something else unmaps later.
    pub unsafe fn from_raw(ptr: sys::CUdeviceptr, size: usize, ctx: &Context) -> AddressRange {
        AddressRange {
            inner: Arc::new(RangeInner {
                ptr,
                size,
                ctx: ctx.clone(),
            }),
        }
    }

    /// Gives up ownership of the range if nothing else holds it; otherwise returns `self`
    /// unchanged. A mapping's release holds the range until the mapping is unmapped: one
    /// deferred out of a host function and not run yet, or one leaked because the wait before
    /// unmapping failed (for ever then). The caller frees `(ptr, size)` with
    /// `cuMemAddressFree`.
    pub fn into_raw(self) -> std::result::Result<(sys::CUdeviceptr, usize), AddressRange> {
        match Arc::try_unwrap(self.inner) {
            Ok(inner) => {
                let inner = ManuallyDrop::new(inner);
                // SAFETY: `inner` is never dropped; the context clone is dropped once, here.
                drop(unsafe { std::ptr::read(&inner.ctx) });
                Ok((inner.ptr, inner.size))
            }
            Err(inner) => Err(AddressRange { inner }),
        }
    }
}

/// `cuMemMap` of `bytes` of `alloc` at `alloc_offset` to `ptr`, then `cuMemSetAccess` of that
/// span with `access`, in `ctx`: when this returns `Ok`, views of the span can be used (the
/// caller's `access` gives `ctx`'s device what they need; see [`check_own_access`]). When
/// setting the access fails, the span is unmapped again and the error returned: no view covers
/// it yet, so no work can use it, and nothing needs waiting for. Should that unmapping fail
/// too, the failure is reported and the span stays mapped where no view reaches it.
#[track_caller]
fn map_accessible(
    what: &'static str,
    ctx: &Context,
    ptr: sys::CUdeviceptr,
    bytes: usize,
    alloc: &PhysicalAllocation,
    alloc_offset: usize,
    access: &[MemAccessDesc],
) -> Result<()> {
    let _cur = ctx.enter()?;
    call!(
        // SAFETY: `ptr..ptr + bytes` lies in a range reserved by the caller (checked against
        // its size), which unmaps it before freeing the range; the handle is alive.
        unsafe { sys::cuMemMap(ptr, bytes, alloc_offset, alloc.handle, 0) },
    )?;
    let set = set_access_in_current(ptr, bytes, access);
    if set.is_err() {
        // SAFETY: mapped just above and not handed to any owner, so unmapped once, here; no
        // view covers the span (the caller builds its owner only on success), so no queued
        // work can use it.
        let unmapped = call!(unsafe { sys::cuMemUnmap(ptr, bytes) });
        if let Err(e) = unmapped {
            report_drop_problem(&format_args!(
                "{what}: undoing a mapping whose access could not be set failed ({e}); the span \
                 stays mapped, reachable by no view"
            ));
        }
    }
    set
}

pub(crate) mod multi;
pub(crate) mod sparse;

pub use multi::MultiMapping;
pub use sparse::SparseRegion;

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::MapExclusive {}
    impl Sealed for super::MapShared {}
}

/// How a [`Mapping`] holds its physical allocation: [`MapExclusive`] (the only mapping of it,
/// mutable views) or [`MapShared`] (one of possibly several, shared views only). Sealed.
pub trait MapMode: sealed::Sealed + 'static {
    /// Whether a mapping of this mode excludes every other mapping of its allocation.
    const EXCLUSIVE: bool;
}

/// The mode of a mapping made by [`AddressRange::map`]: the only mapping of its allocation,
/// which hands out mutable views.
#[derive(Debug)]
pub enum MapExclusive {}

/// The mode of a mapping made by [`AddressRange::map_shared`]: one of possibly several
/// mappings of its allocation, none of them exclusive, which hand out shared views only.
#[derive(Debug)]
pub enum MapShared {}

impl MapMode for MapExclusive {
    const EXCLUSIVE: bool = true;
}

impl MapMode for MapShared {
    const EXCLUSIVE: bool = false;
}

/// A mapping that hands out shared views only ([`AddressRange::map_shared`]): an allocation may
/// be mapped this way any number of times, but not while it is mapped exclusively.
pub type SharedMapping<'r, T> = Mapping<'r, T, MapShared>;

/// Physical memory mapped into part of an [`AddressRange`] (`cuMemMap`), unmapped on drop
/// (`cuMemUnmap`). It borrows the range and holds the allocation, so both outlive it. A
/// memory owner of the crate's model: through
/// [`DeviceMemory`](crate::memory::DeviceMemory) (and, for the exclusive mode,
/// [`DeviceMemoryMut`]) its views copy, memset and go to kernels.
///
/// The mode `M` says how it holds its allocation: [`MapExclusive`] (the default, made by
/// [`AddressRange::map`]) is the only mapping of the allocation and hands out mutable views;
/// [`MapShared`] ([`SharedMapping`], made by [`AddressRange::map_shared`]) hands out shared
/// views only.
///
/// # Access
///
/// A mapping is read-write for its *own device*, the device of its range's context, whose
/// streams use its views, from the moment [`AddressRange::map`] or [`AddressRange::map_shared`]
/// returns: they set that access (`cuMemSetAccess`) right after `cuMemMap`, and unmap again
/// when it cannot be set. So its views work at once (the GPU test
/// `a_fresh_mapping_is_read_write_for_its_device_without_set_access`).
///
/// [`set_access`](Self::set_access) grants, changes or revokes access for other devices and
/// host locations freely: other devices reach the memory only through `unsafe` launches or peer
/// copies, which the change waits for (see below). For the own device it never gives less than
/// the mapping's views need: read-write for an exclusive mapping (mutable views), read-only or
/// read-write for a shared one. An entry that gives less is [`Error::InvalidArgument`], before
/// the driver is asked, the access unchanged (the GPU test
/// `set_access_that_would_starve_the_mappings_own_views_is_refused`). To make memory read-only
/// for its own device, turn the exclusive mapping into a shared one first
/// ([`into_shared`](Mapping::into_shared)).
///
/// # Release and invalidation
///
/// Views of VMM memory are not stream-ordered: they may be used on any stream of the memory's
/// context, so no one stream orders the work that uses them, and `cuMemUnmap` does not wait
/// for it (the GPU test `dropping_a_mapping_waits_for_work_queued_through_its_views` fails
/// without the wait). The mechanism of this memory kind, chosen once: everything that
/// invalidates it first waits for all work of the context (`cuCtxSynchronize`, the context
/// entered without changing the caller's stack), then makes its call. One function of the
/// crate does that for every path:
///
/// * dropping a [`Mapping`] (`cuMemUnmap`; then `cuMemRelease` of its allocation reference and,
///   once no mapping is left in it, `cuMemAddressFree` of the range);
/// * dropping a [`GrowableBuffer`] (`cuMemUnmap` of every chunk, then the same);
/// * changing a mapping's access ([`Mapping::set_access`], `cuMemSetAccess`, which can revoke).
///
/// Each takes `self` or `&mut self`, so no view is alive; the wait covers the work queued
/// through views already gone. Inside a host function a drop is deferred to the crate's
/// release thread, as every release is, and the range stays reserved until that unmapping has
/// run. When the wait fails (a stream of the context is being captured, on any thread, or a
/// sticky error), nothing is invalidated: `set_access` returns the error with the access
/// unchanged, and a drop leaks the memory (the addresses stay mapped and reserved, the
/// physical memory allocated and claimed) and reports it through
/// [`drop_error_count`](crate::error::drop_error_count), because unmapping could let queued work reach
/// memory that is reused.
///
/// Work queued in *another* context through the views, by a peer copy on that context's
/// stream, is fenced when it is queued and waited for before the context's own work. Not
/// covered: a kernel launched in another context with a view as its argument (an `unsafe`
/// launch); wait for such work before dropping the mapping or changing its access.
///
/// # Exclusive and shared mappings
///
/// [`AddressRange::map`] makes the only mapping of its physical allocation, which hands out
/// mutable views ([`DeviceMemoryMut`]); [`AddressRange::map_shared`] makes one of possibly
/// several mappings of an allocation, which hand out shared views only ([`SharedMapping`]). An
/// exclusive mapping excludes every other mapping of its allocation, shared ones exclude an
/// exclusive one, whatever handle the allocation comes through (a retained handle is the same
/// handle): the refusal is [`VmmError::AllocationMapped`], before the driver is asked. The chunks
/// of a [`GrowableBuffer`] are claimed the same way. So no two views of the same bytes exist
/// of which one is mutable.
///
/// Not covered: an allocation exported and imported again *in the same process*
/// ([`PhysicalAllocation::import_fd`], or as external memory), which the driver may hand out
/// under a new handle, and sparse arrays the allocation backs ([`Stream::map_array`], an
/// `unsafe` call). Memory shared with another process is written by that process whatever
/// this one's types say, as IPC memory is.
///
/// [`Stream::map_array`]: crate::Stream::map_array
pub struct Mapping<'r, T: DeviceRepr, M: MapMode = MapExclusive> {
    ptr: sys::CUdeviceptr,
    bytes: usize,
    len: usize,
    range: &'r AddressRange,
    alloc: Arc<PhysicalAllocation>,
    /// The claim on `alloc`; taken out only by `Drop`, `into_raw` and `into_shared`.
    claim: Option<Claim>,
    _marker: PhantomData<(T, M)>,
}

// SAFETY: as for DeviceBuffer: device memory addressed by an integer, T plain data; the
// range and allocation it holds are Send + Sync, the claim is plain data.
unsafe impl<T: DeviceRepr, M: MapMode> Send for Mapping<'_, T, M> {}
// SAFETY: shared access only reads through the driver.
unsafe impl<T: DeviceRepr, M: MapMode> Sync for Mapping<'_, T, M> {}

impl<T: DeviceRepr, M: MapMode> Drop for Mapping<'_, T, M> {
    fn drop(&mut self) {
        let (ptr, bytes) = (self.ptr, self.bytes);
        let keep = (Arc::clone(&self.alloc), self.claim.take());
        release_once_idle(
            &self.range.inner,
            "Mapping",
            move || {
                // SAFETY: `ptr..ptr + bytes` was mapped by cuMemMap in `map_as` (or handed over
                // through from_raw), owned by the mapping and unmapped once, here, after all
                // work of the context is done (release_once_idle), with the reservation still
                // held.
                let r = unsafe { sys::cuMemUnmap(ptr, bytes) };
                report_drop_error("cuMemUnmap", r);
                r == sys::CUDA_SUCCESS
            },
            keep,
        );
    }
}

impl<T: DeviceRepr, M: MapMode> std::fmt::Debug for Mapping<'_, T, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mapping")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("bytes", &self.bytes)
            .field("len", &self.len)
            .field("exclusive", &M::EXCLUSIVE)
            .finish()
    }
}

impl<'r, T: DeviceRepr, M: MapMode> Mapping<'r, T, M> {
    /// Sets who may access the mapping: one entry per device (or host location), read-write,
    /// read-only or none. Locations without an entry keep their access.
    ///
    /// The mapping's own device (the device of the range's context) keeps what the mapping's
    /// views need (see [Access](Mapping#access)): an entry for it that gives an exclusive
    /// mapping less than read-write, or a shared mapping less than read-only, is
    /// [`Error::InvalidArgument`], before the driver is asked, the access unchanged. Entries
    /// for other devices and host locations are free.
    ///
    /// The change may revoke access that work queued through the mapping's views still needs,
    /// so it first waits for all work of the range's context (`cuCtxSynchronize`; see
    /// [Release and invalidation](Mapping#release-and-invalidation)) and returns that wait's
    /// error, with the access unchanged, when it fails (for example while a stream of the
    /// context is being captured). `&mut self`: no view of the mapping is alive.
    ///
    /// ```compile_fail
    /// # use std::sync::Arc;
    /// # use cuda_driver::prelude::*;
    /// # use cuda_driver::{memory::vmm::AddressRange, memory::vmm::MemAccessDesc, memory::vmm::PhysicalAllocation};
    /// # fn f(range: &AddressRange, alloc: Arc<PhysicalAllocation>) -> cuda_driver::Result<()> {
    /// let mut mapping = range.map::<u32>(0, alloc, 0, 2 << 20)?;
    /// let view = mapping.as_view();
    /// mapping.set_access(&[MemAccessDesc::read_write(range.context().device())])?;
    /// drop(view);
    /// # Ok(()) }
    /// ```
    #[wraps(cuMemSetAccess)]
    #[doc(alias = "cuCtxSynchronize")]
    #[track_caller]
    pub fn set_access(&mut self, descs: &[MemAccessDesc]) -> Result<()> {
        let (ctx, ptr, bytes) = (&self.range.inner.ctx, self.ptr, self.bytes);
        check_own_access(
            "Mapping::set_access",
            MemLocation::device(ctx.device()),
            M::EXCLUSIVE,
            descs,
        )?;
        // once_idle runs the change with `ctx` current.
        once_idle(ctx, || set_access_in_current(ptr, bytes, descs))?
    }

    /// The access `location` has to the mapping.
    #[wraps(cuMemGetAccess)]
    #[track_caller]
    pub fn access(&self, location: MemLocation) -> Result<MemAccessFlags> {
        get_access_raw(&self.range.inner.ctx, self.ptr, location)
    }

    /// A new handle to the mapped allocation, retained from the mapping's address (as
    /// [`PhysicalAllocation::retain`]). It is the same handle as the mapping's allocation, and
    /// mapping it is refused as mapping that one is.
    #[wraps(cuMemRetainAllocationHandle)]
    #[track_caller]
    pub fn retain_allocation(&self) -> Result<PhysicalAllocation> {
        PhysicalAllocation::retain(&self.range.inner.ctx, self.ptr)
    }

    /// The allocation the mapping holds.
    pub fn allocation(&self) -> &Arc<PhysicalAllocation> {
        &self.alloc
    }

    /// The range the mapping lies in.
    pub fn range(&self) -> &'r AddressRange {
        self.range
    }

    /// The mapped size in bytes (the element count is
    /// [`DeviceMemory::len`](crate::memory::DeviceMemory::len)).
    pub fn mapped_bytes(&self) -> usize {
        self.bytes
    }

    /// The first mapped address, valid while `self` lives.
    pub fn as_raw(&self) -> sys::CUdeviceptr {
        self.ptr
    }
}

impl<'r, T: DeviceRepr> Mapping<'r, T> {
    /// Takes ownership of a mapping, as an exclusive one.
    ///
    /// # Safety
    /// `ptr..ptr + bytes` lies in `range`, is mapped to `alloc` by `cuMemMap` and nothing
    /// else unmaps it; it is read-write for the device of `range`'s context (its views are
    /// used as they are: see [Access](Mapping#access)); no other mapping of `alloc` hands out
    /// views while this one lives (a claim left by [`into_raw`](Self::into_raw) is taken over).
    pub unsafe fn from_raw(
        ptr: sys::CUdeviceptr,
        bytes: usize,
        range: &'r AddressRange,
        alloc: Arc<PhysicalAllocation>,
    ) -> Self {
        Mapping {
            ptr,
            bytes,
            len: bytes.checked_div(std::mem::size_of::<T>()).unwrap_or(0),
            range,
            claim: Some(Claim::adopt_exclusive(alloc.handle)),
            alloc,
            _marker: PhantomData,
        }
    }

    /// Gives up ownership: the caller unmaps `(ptr, bytes)` with `cuMemUnmap`, after waiting
    /// for the work queued through the mapping's views; the allocation is returned. It stays
    /// claimed, so safe code cannot map it again while the raw mapping may exist;
    /// [`from_raw`](Self::from_raw) takes the claim back (and dropping that mapping releases
    /// it).
    pub fn into_raw(self) -> (sys::CUdeviceptr, usize, Arc<PhysicalAllocation>) {
        let mut this = ManuallyDrop::new(self);
        std::mem::forget(this.claim.take());
        // SAFETY: `this` is never dropped; the Arc is moved out once, here.
        let alloc = unsafe { std::ptr::read(&this.alloc) };
        (this.ptr, this.bytes, alloc)
    }

    /// Turns the mapping into a shared one: the same addresses, allocation and access, with
    /// shared views only from now on. Its exclusive claim becomes a shared one, so the
    /// allocation may then be mapped again with [`AddressRange::map_shared`], and
    /// [`set_access`](Mapping::set_access) may make the memory read-only for its own device
    /// (see [Access](Mapping#access)). No driver call and no wait: nothing is unmapped and no
    /// access changes here (work queued through its mutable views may still run; a later
    /// `set_access` or the drop waits for it).
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use cuda_driver::prelude::*;
    /// use cuda_driver::{memory::vmm::AddressRange, memory::vmm::AllocationProps, Device, memory::vmm::MemAccessDesc, memory::vmm::PhysicalAllocation};
    ///
    /// let dev = Device::get(0)?;
    /// let ctx = dev.primary_context()?;
    /// let props = AllocationProps::device(dev);
    /// let size = props.minimum_granularity()?;
    /// let range = AddressRange::reserve(&ctx, size, 0)?;
    /// let phys = Arc::new(PhysicalAllocation::new(&ctx, size, &props)?);
    /// let mut table = range.map::<u32>(0, phys, 0, size)?;
    /// table.copy_from_host(&vec![1; table.len()])?;
    /// // Written once, read-only from now on.
    /// let mut table = table.into_shared();
    /// table.set_access(&[MemAccessDesc::read(dev)])?;
    /// assert!(table.to_vec()?.iter().all(|&x| x == 1));
    /// # Ok::<(), cuda_driver::Error>(())
    /// ```
    pub fn into_shared(self) -> SharedMapping<'r, T> {
        let mut this = ManuallyDrop::new(self);
        let mut claim = this.claim.take();
        if let Some(claim) = &mut claim {
            claim.share();
        }
        // SAFETY: `this` is never dropped; the Arc is moved out once, here.
        let alloc = unsafe { std::ptr::read(&this.alloc) };
        Mapping {
            ptr: this.ptr,
            bytes: this.bytes,
            len: this.len,
            range: this.range,
            alloc,
            claim,
            _marker: PhantomData,
        }
    }
}

// SAFETY: the view covers the mapping's elements, borrowed from `self`, readable by the
// context's device (read-write from `map_as`, never less through `set_access`:
// `check_own_access`); not stream-ordered (the mapping's release waits for all work of its
// context first). Mutable views (exclusive mappings only) borrow `self` exclusively and are
// writable by the context's device (an exclusive mapping's `set_access` keeps READWRITE for
// it); an exclusive mapping is the only mapping of its allocation (its claim; Mapping's docs
// name what the claim does not see), so no other view of these bytes exists.
device_memory!(
    impl[T: DeviceRepr, M: MapMode] Mapping<'_, T, M>,
    mut impl[T: DeviceRepr] Mapping<'_, T, MapExclusive>;
    |this| (this.ptr, this.len, &this.range.inner.ctx, std::ptr::null_mut())
);

/// Device memory that grows without moving: a large [`AddressRange`] reserved once, into
/// which physical chunks are mapped as the length grows. Every address handed out stays
/// valid as the buffer grows (the pattern of a KV cache, or of any arena that must not
/// relocate), and only the chunks in use take memory.
///
/// ```no_run
/// use cuda_driver::prelude::*;
/// use cuda_driver::{Device, memory::vmm::GrowableBuffer};
///
/// let ctx = Device::get(0)?.primary_context()?;
/// let mut buf = GrowableBuffer::<f32>::new(&ctx, 1 << 30)?; // room for 1 Gi floats
/// let base = buf.as_raw();
/// buf.extend_from_host(&[1.0; 1000])?; // maps the first chunk
/// buf.extend_from_host(&vec![2.0; 1 << 20])?; // maps more, at the following addresses
/// assert_eq!(buf.as_raw(), base);
/// assert_eq!(buf.len(), 1000 + (1 << 20));
/// # Ok::<(), cuda_driver::Error>(())
/// ```
///
/// Access: every chunk is read-write for the device of the buffer's context before the call
/// that maps it returns (`cuMemSetAccess` right after `cuMemMap`, the chunk unmapped again
/// when that fails), so its views work at once; the access is never changed afterwards (see
/// [`with_props`](Self::with_props) for the entries of other devices).
///
/// Release: its views are not stream-ordered (any stream of its context may use them), so
/// dropping it first waits for all work of the context (`cuCtxSynchronize`), then unmaps every
/// chunk; when that wait fails the buffer is leaked instead (see
/// [`Mapping`](Mapping#release-and-invalidation)). Shrinking keeps the chunks mapped, so
/// nothing else invalidates its memory. Its chunks are claimed as exclusive mappings: no other
/// mapping of them can be made.
///
/// Wraps `cuMemAddressReserve`, `cuMemCreate`, `cuMemMap`, `cuMemSetAccess`,
/// `cuCtxSynchronize`, `cuMemUnmap`, `cuMemRelease` and `cuMemAddressFree`.
pub struct GrowableBuffer<T: DeviceRepr> {
    // Its reservation is held by the release of the chunks (Drop) until they are unmapped.
    range: AddressRange,
    chunks: Vec<Chunk>,
    chunk_bytes: usize,
    props: AllocationProps,
    access: Vec<MemAccessDesc>,
    len: usize,
    _marker: PhantomData<T>,
}

/// A mapped chunk of a [`GrowableBuffer`]: its allocation and its exclusive claim.
struct Chunk {
    _alloc: PhysicalAllocation,
    _claim: Claim,
}

impl<T: DeviceRepr> Drop for GrowableBuffer<T> {
    fn drop(&mut self) {
        let chunks = std::mem::take(&mut self.chunks);
        if chunks.is_empty() {
            // Nothing mapped: no view has covered any memory.
            return;
        }
        let (base, bytes, n) = (self.range.inner.ptr, self.chunk_bytes, chunks.len());
        release_once_idle(
            &self.range.inner,
            "GrowableBuffer",
            move || {
                let mut all = true;
                for i in 0..n {
                    let ptr = base + (i * bytes) as sys::CUdeviceptr;
                    // SAFETY: chunk i is mapped at `ptr` with `bytes` bytes by `grow_mapping`,
                    // owned by the buffer and unmapped once, here, after all work of the
                    // context is done (release_once_idle), with the reservation still held.
                    let r = unsafe { sys::cuMemUnmap(ptr, bytes) };
                    report_drop_error("cuMemUnmap", r);
                    all &= r == sys::CUDA_SUCCESS;
                }
                all
            },
            chunks,
        );
    }
}

impl<T: DeviceRepr> std::fmt::Debug for GrowableBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrowableBuffer")
            .field("ptr", &format_args!("{:#x}", self.range.inner.ptr))
            .field("len", &self.len)
            .field("chunks", &self.chunks.len())
            .field("chunk_bytes", &self.chunk_bytes)
            .finish()
    }
}

impl<T: DeviceRepr> GrowableBuffer<T> {
    /// An empty buffer of device memory of `ctx`'s device that can grow to `max_len`
    /// elements, in chunks of the recommended granularity, read-write for that device.
    #[track_caller]
    pub fn new(ctx: &Context, max_len: usize) -> Result<Self> {
        let dev = ctx.device();
        let props = AllocationProps::device(dev);
        let chunk = props.recommended_granularity()?;
        Self::with_props(
            ctx,
            max_len,
            props,
            chunk,
            &[MemAccessDesc::read_write(dev)],
        )
    }

    /// An empty buffer that can grow to `max_len` elements, in physical chunks of
    /// `chunk_bytes` bytes (a multiple of the granularity) created with `props`, each
    /// accessible as `access` says once mapped.
    ///
    /// The buffer hands out mutable views, so the device of `ctx` always gets read-write
    /// access: added when `access` has no entry for it, and an entry that gives it less is
    /// [`Error::InvalidArgument`]. Entries for other devices and host locations are free.
    #[doc(alias = "cuMemSetAccess")]
    #[track_caller]
    pub fn with_props(
        ctx: &Context,
        max_len: usize,
        props: AllocationProps,
        chunk_bytes: usize,
        access: &[MemAccessDesc],
    ) -> Result<Self> {
        let bytes = crate::memory::view::byte_len::<T>("GrowableBuffer::with_props", max_len)?;
        if chunk_bytes == 0 {
            return Err(Error::InvalidArgument(
                "GrowableBuffer: chunk_bytes is 0".into(),
            ));
        }
        let own = MemLocation::device(ctx.device());
        check_own_access("GrowableBuffer::with_props", own, true, access)?;
        let mut all_access = Vec::with_capacity(access.len() + 1);
        if !access.iter().any(|d| d.location() == own) {
            all_access.push(MemAccessDesc::read_write(ctx.device()));
        }
        all_access.extend_from_slice(access);
        let reserve = round_up(bytes.max(1), chunk_bytes).ok_or(Error::SizeOverflow {
            what: "GrowableBuffer::with_props",
            count: max_len,
            size: std::mem::size_of::<T>(),
        })?;
        let range = AddressRange::reserve(ctx, reserve, 0)?;
        Ok(GrowableBuffer {
            range,
            chunks: Vec::new(),
            chunk_bytes,
            props,
            access: all_access,
            len: 0,
            _marker: PhantomData,
        })
    }

    /// Sets the length to `new_len` elements, mapping chunks as needed (new elements are
    /// unspecified; shrinking keeps the chunks mapped). More than
    /// [`max_len`](Self::max_len) is [`Error::OutOfBounds`].
    #[track_caller]
    pub fn resize(&mut self, new_len: usize) -> Result<()> {
        if new_len > self.max_len() {
            return Err(Error::OutOfBounds {
                start: 0,
                end: new_len,
                len: self.max_len(),
            });
        }
        let bytes = new_len * std::mem::size_of::<T>();
        while self.chunks.len() * self.chunk_bytes < bytes {
            self.grow_mapping()?;
        }
        self.len = new_len;
        Ok(())
    }

    /// Appends `src` (copied from the host), mapping chunks as needed.
    #[doc(alias = "cuMemcpyHtoD")]
    #[track_caller]
    pub fn extend_from_host(&mut self, src: &[T]) -> Result<()> {
        let old = self.len;
        let new_len = old
            .checked_add(src.len())
            .ok_or_else(|| Error::OutOfBounds {
                start: old,
                end: usize::MAX,
                len: self.max_len(),
            })?;
        self.resize(new_len)?;
        let r = self.slice_mut(old..new_len)?.copy_from_host(src);
        if r.is_err() {
            self.len = old;
        }
        r
    }

    /// Maps one more chunk, accessible as `self.access` says (read-write for the own device,
    /// see [`with_props`](Self::with_props)). On failure nothing is recorded: the views
    /// handed out so far cover the first `len` elements, which lie in the chunks mapped
    /// before this one, so no view covers the span this tried.
    #[track_caller]
    fn grow_mapping(&mut self) -> Result<()> {
        const WHAT: &str = "GrowableBuffer::resize";
        let ctx = &self.range.inner.ctx;
        let offset = self.chunks.len() * self.chunk_bytes;
        let alloc = PhysicalAllocation::new(ctx, self.chunk_bytes, &self.props)?;
        let claim = Claim::take(WHAT, alloc.handle, true)?;
        let ptr = self.range.inner.ptr + offset as sys::CUdeviceptr;
        map_accessible(WHAT, ctx, ptr, self.chunk_bytes, &alloc, 0, &self.access)?;
        self.chunks.push(Chunk {
            _alloc: alloc,
            _claim: claim,
        });
        Ok(())
    }

    /// The largest length the buffer can grow to.
    pub fn max_len(&self) -> usize {
        self.range
            .size()
            .checked_div(std::mem::size_of::<T>())
            .unwrap_or(0)
    }

    /// Elements that fit in the chunks mapped so far.
    pub fn capacity(&self) -> usize {
        (self.chunks.len() * self.chunk_bytes)
            .checked_div(std::mem::size_of::<T>())
            .unwrap_or(0)
    }

    /// Number of physical chunks mapped.
    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Size of one chunk in bytes.
    pub fn chunk_bytes(&self) -> usize {
        self.chunk_bytes
    }

    /// The first address, which never changes.
    pub fn as_raw(&self) -> sys::CUdeviceptr {
        self.range.inner.ptr
    }

    /// The reserved range.
    pub fn range(&self) -> &AddressRange {
        &self.range
    }
}

// SAFETY: the view covers the first `len` elements, all inside mapped chunks, each read-write
// for the context's device from `grow_mapping` on (`with_props` makes sure of the entry, and
// nothing changes it); borrowed from `self`; not stream-ordered (the buffer's release waits
// for all work of its context first). Mutable views borrow `self` exclusively; the chunks are
// claimed as exclusive mappings, so no other mapping shows their bytes.
device_memory!(
    impl[T: DeviceRepr] GrowableBuffer<T>, mut impl[T: DeviceRepr] GrowableBuffer<T>;
    |this| (this.range.inner.ptr, this.len, &this.range.inner.ctx, std::ptr::null_mut())
);

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn props_round_trip_through_the_raw_struct() {
        let props = AllocationProps::device(Device::from_raw(1))
            .with_handle_types(MemAllocationHandleType::POSIX_FILE_DESCRIPTOR)
            .with_compression(MemAllocationCompType::GENERIC)
            .with_gpu_direct_rdma(true)
            .with_usage(MemCreateUsageFlags::TILE_POOL);
        let raw = props.as_raw();
        assert_eq!(raw.type_, sys::CU_MEM_ALLOCATION_TYPE_PINNED);
        assert_eq!(
            raw.requestedHandleTypes,
            sys::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
        );
        assert_eq!(
            (raw.location.type_, raw.location.id),
            (sys::CU_MEM_LOCATION_TYPE_DEVICE, 1)
        );
        assert!(raw.win32HandleMetaData.is_null());
        assert_eq!(
            raw.allocFlags.compressionType as u32,
            sys::CU_MEM_ALLOCATION_COMP_GENERIC
        );
        assert_eq!(raw.allocFlags.gpuDirectRDMACapable, 1);
        assert_eq!(
            raw.allocFlags.usage as u32,
            sys::CU_MEM_CREATE_USAGE_TILE_POOL
        );
        assert_eq!(raw.allocFlags.reserved, [0; 4]);
        assert_eq!(AllocationProps::from_raw(&raw), props);

        let host = AllocationProps::host_numa(3).as_raw();
        assert_eq!(
            (host.location.type_, host.location.id),
            (sys::CU_MEM_LOCATION_TYPE_HOST_NUMA, 3)
        );
        assert_eq!(AllocationProps::host().location(), MemLocation::host());
        let d = AllocationProps::device(Device::from_raw(0));
        assert_eq!(d.compression(), MemAllocationCompType::NONE);
        assert!(!d.gpu_direct_rdma());
        assert_eq!(d.handle_types(), MemAllocationHandleType::NONE);
    }

    #[test]
    fn access_descs_are_what_they_say() {
        let d = MemAccessDesc::read_write(Device::from_raw(2));
        assert_eq!(d.location(), MemLocation::device(Device::from_raw(2)));
        assert_eq!(d.flags(), MemAccessFlags::READWRITE);
        assert_eq!(d.as_raw().flags, sys::CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
        assert_eq!(
            MemAccessDesc::read(Device::from_raw(0)).flags(),
            MemAccessFlags::READ
        );
        assert_ne!(d, MemAccessDesc::none(Device::from_raw(2)));
        assert!(format!("{d:?}").contains("MemLocation::device(2)"), "{d:?}");
        assert_eq!(
            std::mem::size_of::<MemAccessDesc>(),
            std::mem::size_of::<sys::CUmemAccessDesc>()
        );
    }

    #[test]
    fn windows_handles_are_refused_off_windows_before_any_driver_call() {
        if cfg!(windows) {
            return;
        }
        let e = check_handle_types("t", MemAllocationHandleType::WIN32, None).unwrap_err();
        assert!(
            matches!(
                e,
                Error::Vmm(VmmError::HandleTypeUnsupported {
                    what: "t",
                    handle_type: MemAllocationHandleType::WIN32,
                    ..
                })
            ),
            "{e:?}"
        );
        assert!(e.to_string().contains("not supported"), "{e}");
        // Host memory: no device attribute to ask.
        check_handle_types("t", MemAllocationHandleType::POSIX_FILE_DESCRIPTOR, None).unwrap();
    }

    #[test]
    fn fabric_handles_show_a_prefix() {
        let mut b = [0u8; 64];
        b[0] = 0xab;
        let h = FabricHandle::from_bytes(b);
        assert_eq!(h.to_bytes(), b);
        assert_eq!(format!("{h:?}"), "FabricHandle(ab00000000000000..)");
    }

    #[test]
    fn claims_exclude_what_aliasing_would_break() {
        // A handle value no driver hands out here (the unit tests run without a GPU).
        let h = 0xC1A1_0000_0000_0001;
        let held = |r: Result<Claim>, exclusive: bool| match r {
            Err(Error::Vmm(VmmError::AllocationMapped {
                handle,
                exclusive: e,
                what: "t",
            })) => assert_eq!((handle, e), (h, exclusive)),
            other => panic!("{other:?}"),
        };
        // Shared claims coexist and exclude an exclusive one until the last goes.
        let a = Claim::take("t", h, false).unwrap();
        let b = Claim::take("t", h, false).unwrap();
        held(Claim::take("t", h, true), false);
        drop(a);
        held(Claim::take("t", h, true), false);
        drop(b);
        // An exclusive claim excludes every other.
        let x = Claim::take("t", h, true).unwrap();
        held(Claim::take("t", h, true), true);
        held(Claim::take("t", h, false), true);
        // into_raw leaves it; from_raw takes it over; dropping that releases it once.
        std::mem::forget(x);
        held(Claim::take("t", h, false), true);
        drop(Claim::adopt_exclusive(h));
        // A claim left behind on a handle value that cuMemCreate hands out again is stale.
        std::mem::forget(Claim::take("t", h, false).unwrap());
        Claim::forget_stale(h);
        drop(Claim::take("t", h, true).unwrap());
        assert!(!claims().contains_key(&h));
    }

    #[test]
    fn shared_claims_join_a_claim_made_shared() {
        // A handle value no driver hands out here, not the one of the test above.
        let h = 0xC1A1_0000_0000_0002;
        let mut x = Claim::take("t", h, true).unwrap();
        assert!(Claim::take("t", h, false).is_err());
        x.share();
        x.share(); // once shared, stays one shared claim
        assert_eq!(claims().get(&h), Some(&Claimed::Shared(1)));
        let y = Claim::take("t", h, false).unwrap();
        assert!(matches!(
            Claim::take("t", h, true),
            Err(Error::Vmm(VmmError::AllocationMapped {
                exclusive: false,
                ..
            }))
        ));
        drop(x);
        assert_eq!(claims().get(&h), Some(&Claimed::Shared(1)));
        drop(y);
        assert!(!claims().contains_key(&h));
        drop(Claim::take("t", h, true).unwrap());
        assert!(!claims().contains_key(&h));
    }

    #[test]
    fn own_device_access_is_what_the_views_need() {
        let (d0, d1) = (Device::from_raw(0), Device::from_raw(1));
        let own = MemLocation::device(d0);
        let check =
            |exclusive: bool, descs: &[MemAccessDesc]| check_own_access("t", own, exclusive, descs);
        let refused = |r: Result<()>| match r {
            Err(Error::InvalidArgument(m)) => {
                assert!(m.starts_with("t: ") && m.contains("own device"), "{m}")
            }
            other => panic!("{other:?}"),
        };
        let host_rw = MemAccessDesc::new(MemLocation::host(), MemAccessFlags::READWRITE);
        let host_none = MemAccessDesc::new(MemLocation::host(), MemAccessFlags::NONE);
        for exclusive in [true, false] {
            // Nothing for the own device, or read-write for it: fine; others are free.
            check(exclusive, &[]).unwrap();
            check(exclusive, &[MemAccessDesc::read_write(d0)]).unwrap();
            check(
                exclusive,
                &[
                    MemAccessDesc::none(d1),
                    host_none,
                    MemAccessDesc::read_write(d0),
                ],
            )
            .unwrap();
            check(exclusive, &[MemAccessDesc::read(d1), host_rw]).unwrap();
            // No access is never enough, nor an unknown flag.
            refused(check(exclusive, &[MemAccessDesc::none(d0)]));
            refused(check(
                exclusive,
                &[MemAccessDesc::new(own, MemAccessFlags::from_raw(0x40))],
            ));
        }
        // Read-only: enough for shared views, not for mutable ones; any bad entry refuses.
        check(false, &[MemAccessDesc::read(d0)]).unwrap();
        refused(check(true, &[MemAccessDesc::read(d0)]));
        refused(check(
            true,
            &[MemAccessDesc::read_write(d0), MemAccessDesc::read(d0)],
        ));
        refused(check(
            false,
            &[MemAccessDesc::read(d0), MemAccessDesc::none(d0)],
        ));
    }

    #[test]
    fn owners_are_send_and_sync() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<AddressRange>();
        send_sync::<Mapping<'static, u32>>();
        send_sync::<SharedMapping<'static, u32>>();
        send_sync::<GrowableBuffer<u32>>();
        send_sync::<PhysicalAllocation>();
    }

    #[test]
    fn fits_and_round_up_edges() {
        assert!(fits(0, 1, 1));
        assert!(!fits(0, 0, 1));
        assert!(!fits(1, 1, 1));
        assert!(!fits(usize::MAX, 2, usize::MAX));
        assert_eq!(round_up(0, 4), Some(0));
        assert_eq!(round_up(5, 4), Some(8));
        assert_eq!(round_up(usize::MAX, 2), None);
    }

    proptest! {
        #[test]
        fn round_up_is_the_least_multiple_above(x in 0usize..1 << 40, g in 1usize..1 << 22) {
            let r = round_up(x, g).unwrap();
            prop_assert!(r >= x && r % g == 0 && r - x < g);
        }

        #[test]
        fn fits_is_interval_containment(o in 0usize..100, l in 0usize..100, s in 0usize..150) {
            prop_assert_eq!(fits(o, l, s), l > 0 && o + l <= s);
        }
    }
}
