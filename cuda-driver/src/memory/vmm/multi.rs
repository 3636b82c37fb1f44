//! One view over a reserved range backed by several physical allocations, as the samples use
//! virtual memory: vectorAddMMAP stripes each vector over the devices (on one GPU, over
//! several allocations of the same device) and sets the access of the whole range in one
//! `cuMemSetAccess`.

use std::marker::PhantomData;
use std::sync::Arc;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use super::{
    check_own_access, fits, get_access_raw, once_idle, release_once_idle, round_up,
    set_access_in_current, AddressRange, AllocationProps, Claim, MemAccessDesc, MemAccessFlags,
    PhysicalAllocation,
};
use crate::context::Context;
use crate::device::Device;
use crate::error::{report_drop_error, report_drop_problem, Error, Result};
use crate::memory::owner::device_memory;
use crate::memory::view::byte_len;
use crate::memory::MemLocation;
use crate::repr::DeviceRepr;

/// One allocation mapped into a [`MultiMapping`]: where, how much, and its exclusive claim.
struct Piece {
    offset: usize,
    bytes: usize,
    alloc: Arc<PhysicalAllocation>,
    _claim: Claim,
}

/// A whole [`AddressRange`] backed by several physical allocations mapped one after another
/// (`cuMemMap` each), with one access list set over the whole range in one call
/// (`cuMemSetAccess`), as one memory owner whose views span every allocation: a kernel, a
/// copy or a memset sees one contiguous array. vectorAddMMAP's `simpleMallocMultiDeviceMmap`
/// is [`striped`](Self::striped); [`new`](Self::new) maps allocations the caller made.
///
/// It follows the rules of [`Mapping`](super::Mapping) (see its sections), for every piece:
///
/// * **Access.** The own device (the device of the range's context, whose streams use its
///   views) gets read-write access over the whole range before a constructor returns, in the
///   same `cuMemSetAccess` call as the other entries; [`set_access`](Self::set_access) sets a
///   new list over the whole range, never giving the own device less than read-write.
/// * **Release and invalidation.** Its views are not stream-ordered, so dropping it and
///   [`set_access`](Self::set_access) first wait for all work of the context
///   (`cuCtxSynchronize`; cross-context peer copies through the fences), then unmap every
///   piece or change the access; when the wait fails, nothing is unmapped (the memory, the
///   allocations and the reservation are leaked and the leak reported) and `set_access`
///   returns the error, the access unchanged.
/// * **Exclusive mappings.** Every allocation is claimed as an exclusive mapping: one that is
///   mapped elsewhere, or given twice, is
///   [`VmmError::AllocationMapped`](crate::error::vmm::VmmError::AllocationMapped) before the
///   driver maps anything, and while the `MultiMapping` lives no other mapping of it can be made.
///
/// A constructor that fails part-way unmaps what it mapped (no view exists yet, so nothing
/// needs waiting for) and releases its claims.
///
/// ```no_run
/// use cuda_driver::prelude::*;
/// use cuda_driver::memory::vmm::MultiMapping;
/// use cuda_driver::Device;
///
/// let dev = Device::get(0)?;
/// let ctx = dev.primary_context()?;
/// // Three physical allocations of the same device behind one vector.
/// let mut v = MultiMapping::<f32>::striped(&ctx, 3 << 20, &[dev, dev, dev], &[dev])?;
/// assert_eq!(v.piece_count(), 3);
/// v.memset(1.0f32.to_bits())?;
/// assert!(v.to_vec()?.iter().all(|&x| x == 1.0));
/// # Ok::<(), cuda_driver::Error>(())
/// ```
#[doc(alias = "cuMemMap")]
pub struct MultiMapping<T: DeviceRepr> {
    // The reservation is held by the release of the pieces (Drop) until they are unmapped.
    range: AddressRange,
    pieces: Vec<Piece>,
    len: usize,
    _marker: PhantomData<T>,
}

// SAFETY: as for Mapping: device memory addressed by an integer, T plain data; the range,
// allocations and claims it holds are Send + Sync.
unsafe impl<T: DeviceRepr> Send for MultiMapping<T> {}
// SAFETY: shared access only reads through the driver.
unsafe impl<T: DeviceRepr> Sync for MultiMapping<T> {}

impl<T: DeviceRepr> Drop for MultiMapping<T> {
    fn drop(&mut self) {
        let pieces = std::mem::take(&mut self.pieces);
        let base = self.range.inner.ptr;
        let spans: Vec<(sys::CUdeviceptr, usize)> = pieces
            .iter()
            .map(|p| (base + p.offset as sys::CUdeviceptr, p.bytes))
            .collect();
        release_once_idle(
            &self.range.inner,
            "MultiMapping",
            move || {
                let mut all = true;
                for (ptr, bytes) in spans {
                    // SAFETY: each piece was mapped at `ptr` with `bytes` bytes by `map_all`,
                    // owned by the MultiMapping and unmapped once, here, after all work of the
                    // context is done (release_once_idle), with the reservation still held.
                    let r = unsafe { sys::cuMemUnmap(ptr, bytes) };
                    report_drop_error("cuMemUnmap", r);
                    all &= r == sys::CUDA_SUCCESS;
                }
                all
            },
            pieces,
        );
    }
}

impl<T: DeviceRepr> std::fmt::Debug for MultiMapping<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MultiMapping")
            .field("ptr", &format_args!("{:#x}", self.range.inner.ptr))
            .field("len", &self.len)
            .field("pieces", &self.pieces.len())
            .finish()
    }
}

/// The access list a constructor sets: read-write for `own` added when the caller's list has
/// no entry for it, an entry that gives it less refused.
fn with_own_access(
    what: &'static str,
    own: Device,
    access: &[MemAccessDesc],
) -> Result<Vec<MemAccessDesc>> {
    let loc = MemLocation::device(own);
    check_own_access(what, loc, true, access)?;
    let mut all = Vec::with_capacity(access.len() + 1);
    if !access.iter().any(|d| d.location() == loc) {
        all.push(MemAccessDesc::read_write(own));
    }
    all.extend_from_slice(access);
    Ok(all)
}

impl<T: DeviceRepr> MultiMapping<T> {
    /// Reserves a range of `ctx` the size of all of `allocs` together and maps them into it
    /// in order, each whole, then sets `access` over the whole range in one `cuMemSetAccess`
    /// (with read-write access for `ctx`'s device added when `access` has no entry for it;
    /// an entry that gives it less is [`Error::InvalidArgument`]). The memory holds
    /// `total / size_of::<T>()` elements.
    ///
    /// Every allocation's size must be known ([`PhysicalAllocation::size`]:
    /// [`Error::InvalidArgument`] otherwise) and a multiple of the granularity (the driver
    /// checks); the allocations may belong to other devices
    /// ([`PhysicalAllocation::on_device`]), which `ctx`'s device must be able to reach. An
    /// allocation mapped elsewhere, or given twice, is
    /// [`VmmError::AllocationMapped`](crate::error::vmm::VmmError::AllocationMapped).
    #[wraps(cuMemAddressReserve, cuMemMap, cuMemSetAccess)]
    #[track_caller]
    pub fn new(
        ctx: &Context,
        allocs: Vec<Arc<PhysicalAllocation>>,
        access: &[MemAccessDesc],
    ) -> Result<Self> {
        const WHAT: &str = "MultiMapping::new";
        let access = with_own_access(WHAT, ctx.device(), access)?;
        if allocs.is_empty() {
            return Err(Error::InvalidArgument(format!("{WHAT}: no allocation")));
        }
        let mut total = 0usize;
        let mut layout = Vec::with_capacity(allocs.len());
        for (i, a) in allocs.iter().enumerate() {
            let Some(bytes) = a.size() else {
                return Err(Error::InvalidArgument(format!(
                    "{WHAT}: the size of allocation {i} is unknown (record it with \
                     PhysicalAllocation::with_known_size)"
                )));
            };
            if bytes == 0 {
                return Err(Error::InvalidArgument(format!(
                    "{WHAT}: allocation {i} has 0 bytes"
                )));
            }
            layout.push((total, bytes));
            total = total.checked_add(bytes).ok_or(Error::SizeOverflow {
                what: WHAT,
                count: allocs.len(),
                size: bytes,
            })?;
        }
        let range = AddressRange::reserve(ctx, total, 0)?;
        let len = total.checked_div(std::mem::size_of::<T>()).unwrap_or(0);
        Self::map_all(WHAT, range, allocs, &layout, &access, len)
    }

    /// vectorAddMMAP's `simpleMallocMultiDeviceMmap`: `len` elements striped over
    /// `backing` (one physical allocation per entry, created on that device without a
    /// context: [`PhysicalAllocation::on_device`]; a device may appear several times), in
    /// stripes of equal size, a multiple of the largest minimum granularity of the backing
    /// and accessing devices, mapped one after another into one range of `ctx`, read-write
    /// for `ctx`'s device and every device of `access_from`, set in one `cuMemSetAccess` over
    /// the whole range. The stripes may hold more than `len` elements; the views cover `len`.
    ///
    /// `len` 0 or no backing device is [`Error::InvalidArgument`].
    #[wraps(
        cuMemCreate,
        cuMemGetAllocationGranularity,
        cuMemAddressReserve,
        cuMemMap,
        cuMemSetAccess
    )]
    #[track_caller]
    pub fn striped(
        ctx: &Context,
        len: usize,
        backing: &[Device],
        access_from: &[Device],
    ) -> Result<Self> {
        const WHAT: &str = "MultiMapping::striped";
        let bytes = byte_len::<T>(WHAT, len)?;
        if bytes == 0 || backing.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "{WHAT}: {len} elements over {} devices: nothing to map",
                backing.len()
            )));
        }
        let mut granularity = 1;
        for &d in backing.iter().chain(access_from).chain([&ctx.device()]) {
            granularity = granularity.max(AllocationProps::device(d).minimum_granularity()?);
        }
        let n = backing.len();
        let overflow = || Error::SizeOverflow {
            what: WHAT,
            count: len,
            size: std::mem::size_of::<T>(),
        };
        let size = round_up(bytes, granularity).ok_or_else(overflow)?;
        let stripe = round_up(size.div_ceil(n), granularity).ok_or_else(overflow)?;
        stripe.checked_mul(n).ok_or_else(overflow)?;
        let mut allocs = Vec::with_capacity(n);
        for &d in backing {
            let props = AllocationProps::device(d);
            allocs.push(Arc::new(PhysicalAllocation::on_device(stripe, &props)?));
        }
        let mut access: Vec<MemAccessDesc> = access_from
            .iter()
            .map(|&d| MemAccessDesc::read_write(d))
            .collect();
        access.dedup_by_key(|d| d.location());
        let mut m = Self::new(ctx, allocs, &access)?;
        m.len = len;
        Ok(m)
    }

    /// Maps `allocs` at `layout` (offset, bytes) into `range`, each claimed exclusively, then
    /// sets `access` over the whole range; undoes everything on failure.
    #[track_caller]
    fn map_all(
        what: &'static str,
        range: AddressRange,
        allocs: Vec<Arc<PhysicalAllocation>>,
        layout: &[(usize, usize)],
        access: &[MemAccessDesc],
        len: usize,
    ) -> Result<Self> {
        /// Unmaps what was mapped when the constructor fails before handing out the owner:
        /// no view covered the memory, so nothing needs waiting for.
        struct Undo<'a> {
            base: sys::CUdeviceptr,
            mapped: Vec<(usize, usize)>,
            ctx: &'a Context,
            what: &'static str,
        }
        impl Drop for Undo<'_> {
            fn drop(&mut self) {
                if self.mapped.is_empty() {
                    return;
                }
                let Some(_cur) = self.ctx.enter_for_drop() else {
                    report_drop_problem(&format_args!(
                        "{}: undoing a failed mapping could not enter its context; the spans \
                         stay mapped, reachable by no view",
                        self.what
                    ));
                    return;
                };
                for &(offset, bytes) in &self.mapped {
                    // SAFETY: mapped by map_all just before, owned by no one else, covered by
                    // no view (the owner was never built), unmapped once, here.
                    let r =
                        unsafe { sys::cuMemUnmap(self.base + offset as sys::CUdeviceptr, bytes) };
                    report_drop_error("cuMemUnmap", r);
                }
            }
        }
        let ctx = range.context().clone();
        let base = range.inner.ptr;
        let mut undo = Undo {
            base,
            mapped: Vec::with_capacity(allocs.len()),
            ctx: &ctx,
            what,
        };
        let mut pieces = Vec::with_capacity(allocs.len());
        {
            let _cur = ctx.enter()?;
            for (alloc, &(offset, bytes)) in allocs.into_iter().zip(layout) {
                debug_assert!(fits(offset, bytes, range.size()));
                // Released again (dropped) when a later step fails.
                let claim = Claim::take(what, alloc.handle, true)?;
                call!(
                    // SAFETY: `offset..offset + bytes` lies in the reserved range (the layout
                    // sums to its size), free (the pieces do not overlap), and is unmapped by
                    // the owner's release or by `undo`; the allocation is alive and `bytes` is
                    // its size.
                    unsafe {
                        sys::cuMemMap(base + offset as sys::CUdeviceptr, bytes, 0, alloc.handle, 0)
                    },
                )?;
                undo.mapped.push((offset, bytes));
                pieces.push(Piece {
                    offset,
                    bytes,
                    alloc,
                    _claim: claim,
                });
            }
            set_access_in_current(base, range.size(), access)?;
        }
        undo.mapped.clear();
        drop(undo);
        Ok(MultiMapping {
            range,
            pieces,
            len,
            _marker: PhantomData,
        })
    }

    /// Sets who may access the memory, over the whole range in one `cuMemSetAccess`: one
    /// entry per device (or host location); locations without an entry keep their access.
    /// As for [`Mapping::set_access`](super::Mapping::set_access): the own device keeps
    /// read-write access (an entry that gives it less is [`Error::InvalidArgument`], the
    /// access unchanged), and the change first waits for all work of the range's context
    /// (returning that wait's error, the access unchanged, when it fails). `&mut self`: no
    /// view is alive.
    #[wraps(cuMemSetAccess, cuCtxSynchronize)]
    #[track_caller]
    pub fn set_access(&mut self, descs: &[MemAccessDesc]) -> Result<()> {
        let ctx = &self.range.inner.ctx;
        check_own_access(
            "MultiMapping::set_access",
            MemLocation::device(ctx.device()),
            true,
            descs,
        )?;
        let (ptr, bytes) = (self.range.inner.ptr, self.range.inner.size);
        once_idle(ctx, || set_access_in_current(ptr, bytes, descs))?
    }

    /// The access `location` has to the piece that holds byte `offset` (every piece has the
    /// same: access is only set over the whole range).
    #[wraps(cuMemGetAccess)]
    #[track_caller]
    pub fn access(&self, location: MemLocation) -> Result<MemAccessFlags> {
        get_access_raw(&self.range.inner.ctx, self.range.inner.ptr, location)
    }

    /// The number of allocations behind the memory.
    pub fn piece_count(&self) -> usize {
        self.pieces.len()
    }

    /// The allocations, in address order, with the byte offset and size of each.
    pub fn pieces(&self) -> impl Iterator<Item = (usize, usize, &Arc<PhysicalAllocation>)> {
        self.pieces.iter().map(|p| (p.offset, p.bytes, &p.alloc))
    }

    /// The reserved range, all of it mapped.
    pub fn range(&self) -> &AddressRange {
        &self.range
    }

    /// The first address, valid while `self` lives.
    pub fn as_raw(&self) -> sys::CUdeviceptr {
        self.range.inner.ptr
    }
}

// SAFETY: the view covers the first `len` elements, inside the range, all of which is mapped
// (the pieces are laid out back to back over its whole size) and read-write for the context's
// device from the constructor on (`with_own_access`, never less through `set_access`:
// `check_own_access`); borrowed from `self`; not stream-ordered (the release and `set_access`
// wait for all work of the context first). Mutable views borrow `self` exclusively; every
// piece is claimed as an exclusive mapping, so no other mapping shows its bytes.
device_memory!(
    impl[T: DeviceRepr] MultiMapping<T>, mut impl[T: DeviceRepr] MultiMapping<T>;
    |this| (this.range.inner.ptr, this.len, &this.range.inner.ctx, std::ptr::null_mut())
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_access_is_added_or_refused_before_any_driver_call() {
        let (d0, d1) = (Device::from_raw(0), Device::from_raw(1));
        let all = with_own_access("t", d0, &[MemAccessDesc::read_write(d1)]).unwrap();
        assert_eq!(
            all,
            [MemAccessDesc::read_write(d0), MemAccessDesc::read_write(d1)]
        );
        let all = with_own_access("t", d0, &[MemAccessDesc::read_write(d0)]).unwrap();
        assert_eq!(all, [MemAccessDesc::read_write(d0)]);
        assert!(matches!(
            with_own_access("t", d0, &[MemAccessDesc::read(d0)]),
            Err(Error::InvalidArgument(_))
        ));
    }

    #[test]
    fn a_multi_mapping_is_send_and_sync() {
        fn send_sync<X: Send + Sync>() {}
        send_sync::<MultiMapping<u32>>();
    }
}
