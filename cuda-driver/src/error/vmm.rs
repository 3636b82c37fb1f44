//! Errors of virtual memory and shareable memory: mappings of physical allocations, handle
//! types for sharing allocations and pools, memory opened from another process.
//!
//! Re-exported as [`crate::memory::vmm::VmmError`]; an [`Error`](super::Error) holds one as
//! [`Error::Vmm`](super::Error::Vmm).

use crate::types::MemAllocationHandleType;

/// A mapping or a shareable handle that the crate refuses before the driver is called (see
/// the [module docs](self)).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum VmmError {
    /// A shareable handle type that the device, or this operating system, cannot provide
    /// (fabric handles without `CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED`, Windows
    /// handles on Linux).
    #[error("{what}: {handle_type:?} handles are not supported here: {reason}")]
    HandleTypeUnsupported {
        /// The operation.
        what: &'static str,
        /// The handle type asked for.
        handle_type: MemAllocationHandleType,
        /// Why not (the device attribute that says so, or the operating system).
        reason: &'static str,
    },

    /// A byte range of a virtual-memory mapping that is empty or does not fit in its address
    /// range or physical allocation.
    #[error("{what}: {len} bytes at offset {offset} do not fit in a {kind} of {size} bytes")]
    MappingRange {
        /// The operation.
        what: &'static str,
        /// "address range" or "physical allocation".
        kind: &'static str,
        /// Offset asked for, in bytes.
        offset: usize,
        /// Length asked for, in bytes.
        len: usize,
        /// Size of the range or allocation, in bytes.
        size: usize,
    },

    /// A physical allocation cannot be mapped the way asked for because it is mapped
    /// already: an exclusive mapping ([`AddressRange::map`](crate::memory::vmm::AddressRange::map))
    /// excludes every other mapping of its allocation, and shared mappings
    /// ([`AddressRange::map_shared`](crate::memory::vmm::AddressRange::map_shared)) exclude exclusive ones.
    #[error(
        "{what}: physical allocation {handle:#x} is mapped already; an exclusive mapping \
         (AddressRange::map) excludes every other mapping of its allocation, and shared ones \
         (AddressRange::map_shared) exclude an exclusive one"
    )]
    AllocationMapped {
        /// The operation.
        what: &'static str,
        /// The raw allocation handle (`CUmemGenericAllocationHandle`).
        handle: u64,
        /// Whether the mapping in the way is exclusive (otherwise: shared mappings are).
        exclusive: bool,
    },

    /// Memory opened from another process is smaller than the length asked for.
    #[error("{what}: {needed} bytes asked for, but the shared allocation holds {size}")]
    SharedAllocationTooSmall {
        /// The operation.
        what: &'static str,
        /// Bytes asked for.
        needed: usize,
        /// Bytes the allocation has.
        size: usize,
    },
}
