//! GPU tests: one view over a reserved range backed by several physical allocations
//! ([`MultiMapping`]), vectorAddMMAP's striped vectors, physical allocations made from a
//! device without a context, access set over the whole range in one call, and the hostile
//! cases (allocations mapped elsewhere or given twice, a failed constructor undone, a drop
//! while work is pending, another thread, `mem::swap`).

use std::sync::Arc;

use cuda_driver::memory::vmm::VmmError;
use cuda_driver::memory::vmm::{
    AddressRange, AllocationProps, MemAccessDesc, MultiMapping, PhysicalAllocation,
};
use cuda_driver::memory::MemLocation;
use cuda_driver::prelude::*;
use cuda_driver::types::{MemAccessFlags, StreamFlags};
use cuda_driver::{Device, Error, LaunchConfig, Module, Stream};

use crate::child::pattern;
use crate::vmm::require_vmm;

const VECTOR_ADD: &str = include_str!("../../ptx/vector_add.ptx");

/// The devices that can back a vector used from `dev`: `dev` itself three times (several
/// allocations of one device), and every other device `dev` can reach as a peer.
fn backing_devices(dev: Device) -> Vec<Device> {
    let mut v = vec![dev, dev, dev];
    for i in 0..Device::count().unwrap() {
        let d = Device::get(i).unwrap();
        if d != dev && dev.can_access_peer(d).unwrap_or(false) {
            v.push(d);
        }
    }
    v
}

/// vectorAddMMAP: A, B and C striped over the backing devices (allocations created from the
/// devices, no context on them), read-write for the device that computes, accessed as three
/// ordinary vectors: copies in, VecAdd over the whole range (crossing every stripe), copy out.
#[gpu_test]
fn vectors_striped_over_several_allocations_add_as_one_array_like_vector_add_mmap() {
    let ctx = gpu_or_skip!();
    require_vmm(&ctx);
    let dev = ctx.device();
    let backing = backing_devices(dev);
    let g = AllocationProps::device(dev).minimum_granularity().unwrap();
    // Not a multiple of anything: the last stripe is partly unused.
    let n = (backing.len() * g) / 4 + 1234;
    let mut a = MultiMapping::<f32>::striped(&ctx, n, &backing, &[dev]).unwrap();
    let mut b = MultiMapping::<f32>::striped(&ctx, n, &backing, &[dev]).unwrap();
    let mut c = MultiMapping::<f32>::striped(&ctx, n, &backing, &[dev]).unwrap();
    assert_eq!((a.len(), a.piece_count()), (n, backing.len()));
    // Back to back over the whole range, each made without a context.
    let mut end = 0;
    for (offset, bytes, alloc) in a.pieces() {
        assert_eq!(offset, end);
        assert!(alloc.context().is_none());
        assert_eq!(alloc.size(), Some(bytes));
        end += bytes;
    }
    assert_eq!(end, a.range().size());
    assert_eq!(
        a.access(MemLocation::device(dev)).unwrap(),
        MemAccessFlags::READWRITE
    );
    let ha: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
    let hb: Vec<f32> = (0..n).map(|i| (i % 7) as f32 * 0.5).collect();
    a.copy_from_host(&ha).unwrap();
    b.copy_from_host(&hb).unwrap();
    c.memset(0u32).unwrap();
    let module = Module::load_data(&ctx, VECTOR_ADD).unwrap();
    let f = module.function("VecAdd").unwrap();
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let len = n as i32;
    // SAFETY: VecAdd(const float*, const float*, float*, int) matches the arguments and
    // touches elements below n only, the views' length; synchronised before the views go.
    unsafe {
        f.launch(
            &stream,
            &LaunchConfig::for_num_elems(n).unwrap(),
            (a.as_view(), b.as_view(), c.as_view_mut(), &len),
        )
    }
    .unwrap();
    stream.synchronize().unwrap();
    let hc = c.to_vec().unwrap();
    for i in 0..n {
        assert_eq!(hc[i], ha[i] + hb[i], "element {i}");
    }
    // A memset across a stripe boundary, through a sub-view.
    let stripe = a.pieces().next().unwrap().1 / 4;
    a.slice_mut(stripe - 3..stripe + 3)
        .unwrap()
        .memset(7.0f32.to_bits())
        .unwrap();
    let back = a.to_vec().unwrap();
    assert!(back[stripe - 3..stripe + 3].iter().all(|&x| x == 7.0));
    assert_eq!(back[stripe - 4], ha[stripe - 4]);
    assert_eq!(back[stripe + 3], ha[stripe + 3]);
}

/// Physical allocations made from a device alone, on a thread where no context is current
/// (none is needed), mapped together into one range of a context, their access set over the
/// whole range in one call; their properties and exports work without a context; a
/// `set_access` that would starve the own device is refused, the access unchanged.
#[gpu_test]
fn allocations_made_from_a_device_without_a_context_map_into_one_range() {
    let ctx = gpu_or_skip!();
    require_vmm(&ctx);
    let dev = ctx.device();
    let props = AllocationProps::device(dev);
    let g = props.minimum_granularity().unwrap();
    let allocs = std::thread::spawn(move || {
        (0..3)
            .map(|i| Arc::new(PhysicalAllocation::on_device((i + 1) * g, &props).unwrap()))
            .collect::<Vec<_>>()
    })
    .join()
    .unwrap();
    for a in &allocs {
        assert!(a.context().is_none());
        assert_eq!(a.properties().unwrap().location(), MemLocation::device(dev));
    }
    let mut m = MultiMapping::<u32>::new(&ctx, allocs.clone(), &[]).unwrap();
    assert_eq!(m.len(), 6 * g / 4);
    assert_eq!(m.piece_count(), 3);
    let data = pattern(17, m.len());
    m.copy_from_host(&data).unwrap();
    assert_eq!(m.to_vec().unwrap(), data);
    // The whole range in one call; own device read-write is what it needs.
    m.set_access(&[MemAccessDesc::read_write(dev)]).unwrap();
    let e = m.set_access(&[MemAccessDesc::read(dev)]).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    let e = m.set_access(&[MemAccessDesc::none(dev)]).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    assert_eq!(
        m.access(MemLocation::device(dev)).unwrap(),
        MemAccessFlags::READWRITE
    );
    assert_eq!(m.to_vec().unwrap(), data);
    // Moved to another thread and dropped there (waits for the context, unmaps every piece);
    // the allocations are free to map again afterwards.
    std::thread::spawn(move || drop(m)).join().unwrap();
    let range = AddressRange::reserve(&ctx, g, 0).unwrap();
    let again = range.map::<u32>(0, allocs[0].clone(), 0, g).unwrap();
    drop(again);
    drop(allocs);
}

/// Allocations mapped elsewhere, given twice, of unknown size, or no allocation: refused
/// before anything stays mapped; what a failed constructor mapped is unmapped and unclaimed.
/// Absurd lengths are refused before any allocation.
#[gpu_test]
fn a_multi_mapping_refuses_allocations_it_cannot_own_and_undoes_what_it_mapped() {
    let ctx = gpu_or_skip!();
    require_vmm(&ctx);
    let dev = ctx.device();
    let props = AllocationProps::device(dev);
    let g = props.minimum_granularity().unwrap();
    let new = || Arc::new(PhysicalAllocation::new(&ctx, g, &props).unwrap());
    let (held, free) = (new(), new());
    let range = AddressRange::reserve(&ctx, g, 0).unwrap();
    let mapping = range.map::<u32>(0, held.clone(), 0, g).unwrap();
    // `free` is mapped first, then `held` is refused: `free` must be unmapped and unclaimed.
    let e = MultiMapping::<u32>::new(&ctx, vec![free.clone(), held.clone()], &[]).unwrap_err();
    assert!(
        matches!(e, Error::Vmm(VmmError::AllocationMapped { .. })),
        "{e:?}"
    );
    let e = MultiMapping::<u32>::new(&ctx, vec![free.clone(), free.clone()], &[]).unwrap_err();
    assert!(
        matches!(e, Error::Vmm(VmmError::AllocationMapped { .. })),
        "{e:?}"
    );
    let range2 = AddressRange::reserve(&ctx, g, 0).unwrap();
    drop(range2.map::<u32>(0, free.clone(), 0, g).unwrap());
    // Unknown size (a handle retained from a mapping), no allocation, an empty or absurd
    // stripe, an own-device entry that starves the views.
    let retained = Arc::new(mapping.retain_allocation().unwrap());
    let e = MultiMapping::<u32>::new(&ctx, vec![retained], &[]).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    let e = MultiMapping::<u32>::new(&ctx, vec![], &[]).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    let e = MultiMapping::<u32>::striped(&ctx, 0, &[dev], &[]).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    let e = MultiMapping::<u32>::striped(&ctx, 16, &[], &[]).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    let e = MultiMapping::<u64>::striped(&ctx, usize::MAX / 2, &[dev], &[]).unwrap_err();
    assert!(matches!(e, Error::SizeOverflow { .. }), "{e:?}");
    let e = MultiMapping::<u32>::new(&ctx, vec![free.clone()], &[MemAccessDesc::read(dev)])
        .unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    // And `free` is still usable in one.
    let m = MultiMapping::<u32>::new(&ctx, vec![free], &[]).unwrap();
    assert_eq!(m.len(), g / 4);
    drop(mapping);
}

/// Dropping a multi-mapping while a memset queued through its view is pending behind a
/// sleeping kernel: the drop waits for it (cuCtxSynchronize), so when it returns the stream
/// is idle.
#[gpu_test]
fn dropping_a_multi_mapping_waits_for_work_queued_through_its_view() {
    // In a child process (as the Mapping test): were the drop not to wait, the memset would
    // fault the context, which would fail every other test of this process.
    #[cfg(unix)]
    super::in_child_process("vmm_multi_drop_waits", |ctx| {
        let dev = ctx.device();
        let g = AllocationProps::device(dev).minimum_granularity().unwrap();
        let stream = Stream::new(ctx, StreamFlags::NON_BLOCKING).unwrap();
        let mut m = MultiMapping::<u32>::striped(ctx, g / 2, &[dev, dev], &[]).unwrap();
        let module = Module::load_data(ctx, crate::common::TEST_KERNELS).unwrap();
        let sleep = module.function("sleep_ns").unwrap();
        let ns = 300_000_000u32;
        // SAFETY: sleep_ns(unsigned) takes one 32-bit word and touches no memory.
        unsafe { sleep.launch(&stream, &LaunchConfig::new(1u32, 1u32), (&ns,)) }.unwrap();
        m.memset_async(0xDEAD_BEEFu32, &stream).unwrap();
        drop(m);
        assert!(
            stream.query().unwrap(),
            "dropping the multi-mapping returned while a memset through its view was pending"
        );
    });
}

/// Two multi-mappings swapped through `&mut` keep their own memory and drop cleanly.
#[gpu_test]
fn multi_mappings_swapped_through_mut_keep_their_memory() {
    let ctx = gpu_or_skip!();
    require_vmm(&ctx);
    let dev = ctx.device();
    let mut x = MultiMapping::<u32>::striped(&ctx, 1000, &[dev, dev], &[]).unwrap();
    let mut y = MultiMapping::<u32>::striped(&ctx, 2000, &[dev], &[]).unwrap();
    x.copy_from_host(&pattern(1, 1000)).unwrap();
    y.copy_from_host(&pattern(2, 2000)).unwrap();
    std::mem::swap(&mut x, &mut y);
    assert_eq!(x.to_vec().unwrap(), pattern(2, 2000));
    assert_eq!(y.to_vec().unwrap(), pattern(1, 1000));
    drop((x, y));
}
