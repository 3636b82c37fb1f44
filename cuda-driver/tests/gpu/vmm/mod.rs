//! GPU tests: virtual memory management (Virtual Memory Management): address ranges and
//! reservations, physical allocations and their usage flags, mappings, access, export and
//! import (within the process and with another one), host memory mapped for the device, the
//! growable buffer, and the leak tests. Arrays mapped onto physical memory: `array`. One view
//! over several allocations: `multi`.
//! Across devices: `peer`.

#[cfg(unix)]
use std::os::fd::AsFd;
use std::sync::Arc;

use cuda_driver::memory::vmm::VmmError;
use cuda_driver::prelude::*;
use cuda_driver::types::MemLocationType;
use cuda_driver::{
    error::drop_error_count, memory::vmm::AddressRange, memory::vmm::AllocationProps,
    memory::vmm::GrowableBuffer, memory::vmm::Mapping, memory::vmm::MemAccessDesc,
    memory::vmm::PhysicalAllocation, memory::MemLocation, types::DeviceAttribute, types::ErrorCode,
    types::MemAccessFlags, types::MemAllocationCompType, types::MemAllocationHandleType,
    types::MemCreateUsageFlags, types::StreamCaptureMode as CaptureMode, types::StreamFlags,
    Context, DeviceBuffer, Error, LaunchConfig, Module, Stream,
};

#[cfg(unix)]
use crate::child::{child_role, spawn_child};
use crate::child::{open_fds, pattern, VMM_KERNELS};
#[cfg(unix)]
use crate::common::TEST_KERNELS;
use crate::common::{note, skip};

mod array;
mod multi;

/// Skips the test unless the device supports virtual memory management.
pub fn require_vmm(ctx: &Context) {
    crate::common::require_attribute(
        ctx.device(),
        DeviceAttribute::VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
        "the device does not support virtual memory management",
    );
}

/// Allocation properties of device memory exportable as a POSIX file descriptor, after
/// skipping the test where the device has no virtual memory management or no such handles.
#[cfg(unix)]
pub fn fd_exportable_props(ctx: &Context) -> AllocationProps {
    require_vmm(ctx);
    let dev = ctx.device();
    crate::common::require_attribute(
        dev,
        DeviceAttribute::HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
        "no POSIX fd handles on this device",
    );
    AllocationProps::device(dev).with_handle_types(MemAllocationHandleType::POSIX_FILE_DESCRIPTOR)
}

/// Launches `write_pattern(mem, seed, len)` on `stream` and waits.
pub fn write_pattern_on<M: DeviceMemoryMut<Elem = u32>>(
    ctx: &Context,
    stream: &Stream,
    mem: &mut M,
    seed: u32,
) {
    let module = Module::load_data(ctx, VMM_KERNELS).unwrap();
    let f = module.function("write_pattern").unwrap();
    let n = mem.len() as i32;
    let cfg = LaunchConfig::for_num_elems(mem.len()).unwrap();
    // SAFETY: write_pattern(unsigned*, unsigned, int) matches the arguments and writes only
    // out[i] for i < n, the view's length; the stream is synchronised before returning.
    unsafe { f.launch(stream, &cfg, (mem.as_view_mut(), &seed, &n)) }.unwrap();
    stream.synchronize().unwrap();
}

/// Queues `ms` milliseconds of `sleep_ns` (one thread) on `stream`, so that work queued behind
/// it stays pending that long. The module is returned to outlive the launch.
#[cfg(unix)]
fn hold_stream(ctx: &Context, stream: &Stream, ms: u32) -> Module {
    let module = Module::load_data(ctx, TEST_KERNELS).unwrap();
    let f = module.function("sleep_ns").unwrap();
    let ns = ms * 1_000_000;
    // SAFETY: sleep_ns(unsigned) takes one 32-bit word and touches no memory.
    unsafe { f.launch(stream, &LaunchConfig::new(1u32, 1u32), (&ns,)) }.unwrap();
    module
}

/// Runs `scenario` in a child process that runs this test alone: where the scenario's
/// invariant is broken, the queued work faults the context (a sticky error), which would fail
/// every other test of this process. The parent fails with the child's output.
#[cfg(unix)]
fn in_child_process(role: &str, scenario: impl FnOnce(&Context)) {
    if let Some(_parent) = child_role(role) {
        let ctx = gpu_or_skip!();
        require_vmm(&ctx);
        scenario(&ctx);
        return;
    }
    let ctx = gpu_exclusive_or_skip!();
    require_vmm(&ctx);
    let (child, _chan) = spawn_child(role);
    child.finish();
}

/// A mapping of one fresh allocation of `bytes` bytes at `offset` in `range` (read-write for
/// the range's device, as every fresh mapping is).
fn mapped<'r>(range: &'r AddressRange, offset: usize, bytes: usize) -> Mapping<'r, u32> {
    let ctx = range.context();
    let phys = PhysicalAllocation::new(ctx, bytes, &AllocationProps::device(ctx.device())).unwrap();
    range.map::<u32>(offset, Arc::new(phys), 0, bytes).unwrap()
}

#[cfg(unix)]
#[gpu_test]
fn dropping_a_mapping_waits_for_work_queued_through_its_views() {
    in_child_process("vmm_drop_waits", |ctx| {
        let dev = ctx.device();
        let g = AllocationProps::device(dev).minimum_granularity().unwrap();
        let range = AddressRange::reserve(ctx, g, 0).unwrap();
        let stream = Stream::new(ctx, StreamFlags::NON_BLOCKING).unwrap();
        let mut m = mapped(&range, 0, g);
        let _sleep = hold_stream(ctx, &stream, 500);
        m.memset_async(0xDEAD_BEEFu32, &stream).unwrap();
        drop(m);
        assert!(
            stream.query().unwrap(),
            "dropping the mapping returned while a memset queued through its view was pending"
        );
        // The same addresses, mapped to another allocation (read-write for the device at once,
        // like any fresh mapping): the victim keeps its bytes.
        let mut victim = mapped(&range, 0, g);
        assert_eq!(
            victim.access(MemLocation::device(dev)).unwrap(),
            MemAccessFlags::READWRITE
        );
        let data = pattern(81, victim.len());
        victim.copy_from_host(&data).unwrap();
        stream.synchronize().unwrap();
        ctx.synchronize().unwrap();
        assert_eq!(victim.to_vec().unwrap(), data);
    });
}

#[cfg(unix)]
#[gpu_test]
fn dropping_a_growable_buffer_waits_for_work_queued_through_its_views() {
    in_child_process("vmm_growable_drop_waits", |ctx| {
        let stream = Stream::new(ctx, StreamFlags::NON_BLOCKING).unwrap();
        let n = 1 << 20;
        let mut buf = GrowableBuffer::<u32>::new(ctx, 4 * n).unwrap();
        buf.resize(n).unwrap();
        let base = buf.as_raw();
        let _sleep = hold_stream(ctx, &stream, 500);
        buf.memset_async(0xDEAD_BEEFu32, &stream).unwrap();
        drop(buf);
        assert!(
            stream.query().unwrap(),
            "dropping the buffer returned while a memset queued through its view was pending"
        );
        // A new buffer (the driver may hand out the same addresses) keeps its bytes, and the
        // context is healthy.
        let mut victim = GrowableBuffer::<u32>::new(ctx, 4 * n).unwrap();
        let data = pattern(82, n);
        victim.extend_from_host(&data).unwrap();
        stream.synchronize().unwrap();
        ctx.synchronize().unwrap();
        assert_eq!(victim.to_vec().unwrap(), data);
        note(format!(
            "the new buffer {} the dropped one's addresses",
            if victim.as_raw() == base {
                "reuses"
            } else {
                "does not reuse"
            }
        ));
    });
}

#[cfg(unix)]
#[gpu_test]
fn revoking_access_waits_for_pending_work() {
    in_child_process("vmm_revoke_waits", |ctx| {
        let dev = ctx.device();
        let g = AllocationProps::device(dev).minimum_granularity().unwrap();
        let range = AddressRange::reserve(ctx, g, 0).unwrap();
        let stream = Stream::new(ctx, StreamFlags::NON_BLOCKING).unwrap();
        let mut m = mapped(&range, 0, g);
        let mut copy = DeviceBuffer::<u32>::new(ctx, m.len()).unwrap();
        let _sleep = hold_stream(ctx, &stream, 500);
        // Pending behind the sleep: a write through the exclusive mapping's view, then a copy
        // from the mapping once it is shared.
        m.memset_async(0x0BAD_F00Du32, &stream).unwrap();
        let mut shared = m.into_shared();
        copy.copy_from_device_async(&shared, &stream).unwrap();
        // Read-only for the device from now on (what a shared mapping may ask): the write
        // still queued would fault.
        shared.set_access(&[MemAccessDesc::read(dev)]).unwrap();
        assert!(
            stream.query().unwrap(),
            "set_access returned while work queued through the mapping's views was pending"
        );
        assert_eq!(
            shared.access(MemLocation::device(dev)).unwrap(),
            MemAccessFlags::READ
        );
        stream.synchronize().unwrap();
        ctx.synchronize().unwrap();
        assert!(copy.to_vec().unwrap().iter().all(|&x| x == 0x0BAD_F00D));
        assert!(shared.to_vec().unwrap().iter().all(|&x| x == 0x0BAD_F00D));
    });
}

#[gpu_test]
fn an_exclusive_mapping_is_the_only_mapping_of_its_allocation() {
    let ctx = gpu_or_skip!();
    require_vmm(&ctx);
    let dev = ctx.device();
    let props = AllocationProps::device(dev);
    let g = props.minimum_granularity().unwrap();
    let phys = Arc::new(PhysicalAllocation::new(&ctx, g, &props).unwrap());
    let a = AddressRange::reserve(&ctx, g, 0).unwrap();
    let b = AddressRange::reserve(&ctx, g, 0).unwrap();
    let mut m = a.map::<u32>(0, phys.clone(), 0, g).unwrap();
    let data = pattern(83, m.len());
    m.copy_from_host(&data).unwrap();
    // No second mapping of the allocation, exclusive or shared, whatever handle it comes
    // through (a retained handle is the same handle), before the driver is asked.
    let held_exclusively = |e: Error| {
        assert!(
            matches!(
                e,
                Error::Vmm(VmmError::AllocationMapped {
                    exclusive: true,
                    ..
                })
            ),
            "{e:?}"
        )
    };
    held_exclusively(b.map::<u32>(0, phys.clone(), 0, g).unwrap_err());
    held_exclusively(b.map_shared::<u32>(0, phys.clone(), 0, g).unwrap_err());
    let retained = Arc::new(m.retain_allocation().unwrap().with_known_size(g));
    held_exclusively(b.map::<u8>(0, retained.clone(), 0, g).unwrap_err());
    // The refusals left `b` free.
    drop(mapped(&b, 0, g));
    // Once the exclusive mapping is gone, shared mappings alias the bytes ...
    drop(m);
    let s1 = a.map_shared::<u32>(0, phys.clone(), 0, g).unwrap();
    let s2 = b.map_shared::<u32>(0, retained.clone(), 0, g).unwrap();
    assert_eq!(s1.to_vec().unwrap(), data);
    assert_eq!(s2.to_vec().unwrap(), data);
    // ... and exclude an exclusive one while they live.
    let c = AddressRange::reserve(&ctx, g, 0).unwrap();
    let e = c.map::<u32>(0, phys.clone(), 0, g).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Vmm(VmmError::AllocationMapped {
                exclusive: false,
                ..
            })
        ),
        "{e:?}"
    );
    drop(s1);
    assert!(c.map::<u32>(0, phys.clone(), 0, g).is_err(), "one is left");
    drop(s2);
    let m = c.map::<u32>(0, phys, 0, g).unwrap();
    assert_eq!(m.to_vec().unwrap(), data);
    // An exclusive mapping made shared lets shared mappings join it, and excludes an
    // exclusive one until all are gone.
    let s1 = m.into_shared();
    let s2 = a.map_shared::<u32>(0, retained.clone(), 0, g).unwrap();
    assert_eq!(s2.to_vec().unwrap(), data);
    let e = b.map::<u32>(0, retained.clone(), 0, g).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Vmm(VmmError::AllocationMapped {
                exclusive: false,
                ..
            })
        ),
        "{e:?}"
    );
    drop((s1, s2));
    drop(b.map::<u32>(0, retained, 0, g).unwrap());
    // A growable buffer's chunks are claimed as exclusive mappings too.
    let mut buf = GrowableBuffer::<u32>::new(&ctx, 1024).unwrap();
    buf.extend_from_host(&[1, 2, 3]).unwrap();
    let chunk = Arc::new(PhysicalAllocation::retain(&ctx, buf.as_raw()).unwrap());
    let d = AddressRange::reserve(&ctx, buf.chunk_bytes(), 0).unwrap();
    held_exclusively(
        d.map_shared::<u32>(0, chunk, 0, buf.chunk_bytes())
            .unwrap_err(),
    );
    assert_eq!(buf.to_vec().unwrap(), [1, 2, 3]);
}

#[gpu_test]
fn a_mapping_whose_wait_fails_is_leaked_not_unmapped() {
    let ctx = gpu_exclusive_or_skip!();
    require_vmm(&ctx);
    let dev = ctx.device();
    let props = AllocationProps::device(dev);
    let g = props.minimum_granularity().unwrap();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let range = AddressRange::reserve(&ctx, g, 0).unwrap();
    let phys = Arc::new(PhysicalAllocation::new(&ctx, g, &props).unwrap());
    // Shared, so that read-only for the device is a change set_access may make.
    let mut m = range
        .map::<u32>(0, phys.clone(), 0, g)
        .unwrap()
        .into_shared();
    let addr = m.as_raw();
    // During a capture of a stream of the context the wait is refused
    // (stream::capture::synchronizing_during_a_global_capture_invalidates_it): the access stays.
    // SAFETY: nothing is captured.
    unsafe { s.begin_capture(CaptureMode::GLOBAL).unwrap() };
    let e = m.set_access(&[MemAccessDesc::read(dev)]).unwrap_err();
    let _ = s.end_capture();
    assert_eq!(e.code(), Some(ErrorCode::STREAM_CAPTURE_UNSUPPORTED), "{e}");
    assert_eq!(
        m.access(MemLocation::device(dev)).unwrap(),
        MemAccessFlags::READWRITE
    );
    // Dropped meanwhile, the mapping is leaked and reported: it stays mapped, and the
    // allocation stays claimed.
    let before = drop_error_count();
    // SAFETY: nothing is captured.
    unsafe { s.begin_capture(CaptureMode::GLOBAL).unwrap() };
    drop(m);
    let _ = s.end_capture();
    assert!(drop_error_count() > before, "the leak is reported");
    let still = PhysicalAllocation::retain(&ctx, addr).unwrap();
    assert_eq!(still.as_raw(), phys.as_raw());
    let other = AddressRange::reserve(&ctx, g, 0).unwrap();
    assert!(matches!(
        other.map::<u32>(0, phys.clone(), 0, g),
        Err(Error::Vmm(VmmError::AllocationMapped {
            exclusive: false,
            ..
        }))
    ));
    // The same for a growable buffer.
    let mut buf = GrowableBuffer::<u32>::new(&ctx, 1024).unwrap();
    buf.extend_from_host(&[7; 16]).unwrap();
    let base = buf.as_raw();
    let before = drop_error_count();
    // SAFETY: nothing is captured.
    unsafe { s.begin_capture(CaptureMode::GLOBAL).unwrap() };
    drop(buf);
    let _ = s.end_capture();
    assert!(drop_error_count() > before, "the leak is reported");
    PhysicalAllocation::retain(&ctx, base).unwrap();
    // The context is usable.
    ctx.synchronize().unwrap();
    let mut fresh = mapped(&other, 0, g);
    fresh.memset(5u32).unwrap();
    assert!(fresh.to_vec().unwrap().iter().all(|&x| x == 5));
}

#[gpu_test]
fn granularities_are_powers_of_two_and_recommended_is_a_multiple() {
    let ctx = gpu_or_skip!();
    require_vmm(&ctx);
    let props = AllocationProps::device(ctx.device());
    let min = props.minimum_granularity().unwrap();
    let rec = props.recommended_granularity().unwrap();
    assert!(min.is_power_of_two() && min >= 4096, "{min}");
    assert!(rec >= min && rec % min == 0, "{rec} {min}");
}

#[gpu_test]
fn a_mapping_is_memory_of_the_model() {
    let ctx = gpu_or_skip!();
    require_vmm(&ctx);
    let dev = ctx.device();
    let props = AllocationProps::device(dev);
    let g = props.minimum_granularity().unwrap();
    let range = AddressRange::reserve(&ctx, 4 * g, 0).unwrap();
    assert_eq!(range.size(), 4 * g);
    assert_ne!(range.as_raw(), 0);
    let phys = Arc::new(PhysicalAllocation::new(&ctx, g, &props).unwrap());
    assert_eq!(phys.size(), Some(g));
    // The allocation, mapped into the second quarter of the range.
    let mut m = range.map::<u32>(g, phys.clone(), 0, g).unwrap();
    assert_eq!(m.as_raw(), range.as_raw() + g as u64);
    assert_eq!(m.len(), g / 4);
    // Read-write for the device from the start; setting what it has is allowed (and waits).
    assert_eq!(
        m.access(MemLocation::device(dev)).unwrap(),
        MemAccessFlags::READWRITE
    );
    m.set_access(&[MemAccessDesc::read_write(dev)]).unwrap();
    assert_eq!(
        m.access(MemLocation::device(dev)).unwrap(),
        MemAccessFlags::READWRITE
    );

    // Copies, memsets and kernels through its views.
    let data = pattern(11, m.len());
    m.copy_from_host(&data).unwrap();
    assert_eq!(m.to_vec().unwrap(), data);
    m.slice_mut(10..20).unwrap().memset(7u32).unwrap();
    let mut want = data.clone();
    want[10..20].fill(7);
    assert_eq!(m.to_vec().unwrap(), want);
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    write_pattern_on(&ctx, &stream, &mut m, 12);
    assert_eq!(m.to_vec().unwrap(), pattern(12, m.len()));
    let copy = DeviceBuffer::<u32>::new(&ctx, m.len()).unwrap();
    let mut copy = copy;
    copy.copy_from_device(&m).unwrap();
    assert_eq!(copy.to_vec().unwrap(), pattern(12, m.len()));

    // The allocation behind any address of the mapping, and its properties.
    let retained = m.retain_allocation().unwrap();
    assert_eq!(retained.as_raw(), phys.as_raw());
    assert_eq!(retained.size(), None);
    let got = retained.properties().unwrap();
    assert_eq!(got.location(), MemLocation::device(dev));
    assert_eq!(got.handle_types(), MemAllocationHandleType::NONE);
    assert_eq!(phys.properties().unwrap(), got);
    let addr_inside = m.as_raw() + 4096;
    assert_eq!(
        PhysicalAllocation::retain(&ctx, addr_inside)
            .unwrap()
            .as_raw(),
        phys.as_raw()
    );
}

#[gpu_test]
fn a_fresh_mapping_is_read_write_for_its_device_without_set_access() {
    let ctx = gpu_or_skip!();
    require_vmm(&ctx);
    let dev = ctx.device();
    let own = MemLocation::device(dev);
    let props = AllocationProps::device(dev);
    let g = props.minimum_granularity().unwrap();
    let range = AddressRange::reserve(&ctx, 2 * g, 0).unwrap();
    let fresh = || Arc::new(PhysicalAllocation::new(&ctx, g, &props).unwrap());
    // The access is asserted before any work touches the memory: through a mapping accessible
    // from nowhere, the copies below would fault the context.
    let mut m = range.map::<u32>(0, fresh(), 0, g).unwrap();
    assert_eq!(m.access(own).unwrap(), MemAccessFlags::READWRITE);
    let data = pattern(85, m.len());
    m.copy_from_host(&data).unwrap();
    assert_eq!(m.to_vec().unwrap(), data);
    m.slice_mut(..7).unwrap().memset(4u32).unwrap();
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    write_pattern_on(&ctx, &stream, &mut m, 86);
    assert_eq!(m.to_vec().unwrap(), pattern(86, m.len()));
    // A shared mapping too (of another allocation, in the second half of the range).
    let s = range.map_shared::<u32>(g, fresh(), 0, g).unwrap();
    assert_eq!(s.access(own).unwrap(), MemAccessFlags::READWRITE);
    let mut copy = DeviceBuffer::<u32>::new(&ctx, s.len()).unwrap();
    copy.copy_from_device(&s).unwrap();
    assert_eq!(copy.to_vec().unwrap(), s.to_vec().unwrap());
    // And at a reused address: the first mapping goes, another allocation is mapped there.
    drop(m);
    let mut again = range.map::<u32>(0, fresh(), 0, g).unwrap();
    assert_eq!(again.access(own).unwrap(), MemAccessFlags::READWRITE);
    again.copy_from_host(&data).unwrap();
    assert_eq!(again.to_vec().unwrap(), data);
    ctx.synchronize().unwrap();
}

#[gpu_test]
fn set_access_that_would_starve_the_mappings_own_views_is_refused() {
    let ctx = gpu_or_skip!();
    require_vmm(&ctx);
    let dev = ctx.device();
    let own = MemLocation::device(dev);
    let props = AllocationProps::device(dev);
    let g = props.minimum_granularity().unwrap();
    let range = AddressRange::reserve(&ctx, g, 0).unwrap();
    let phys = Arc::new(PhysicalAllocation::new(&ctx, g, &props).unwrap());
    let mut m = range.map::<u32>(0, phys.clone(), 0, g).unwrap();
    m.set_access(&[MemAccessDesc::read_write(dev)]).unwrap();
    let data = pattern(87, m.len());
    m.copy_from_host(&data).unwrap();
    // An exclusive mapping hands out mutable views: its own device keeps read-write access.
    for descs in [
        vec![MemAccessDesc::read(dev)],
        vec![MemAccessDesc::none(dev)],
        vec![MemAccessDesc::read_write(dev), MemAccessDesc::read(dev)],
    ] {
        let e = m.set_access(&descs).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{descs:?}: {e:?}");
        assert_eq!(
            m.access(own).unwrap(),
            MemAccessFlags::READWRITE,
            "{descs:?}"
        );
    }
    // The mapping still works, for reads and writes.
    assert_eq!(m.to_vec().unwrap(), data);
    m.memset(0x5A5A_5A5Au32).unwrap();
    assert!(m.to_vec().unwrap().iter().all(|&x| x == 0x5A5A_5A5A));
    // A shared mapping hands out shared views: read-only is enough, no access is not.
    drop(m);
    let mut s = range.map_shared::<u32>(0, phys, 0, g).unwrap();
    s.set_access(&[MemAccessDesc::read_write(dev)]).unwrap();
    let e = s.set_access(&[MemAccessDesc::none(dev)]).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    assert_eq!(s.access(own).unwrap(), MemAccessFlags::READWRITE);
    s.set_access(&[MemAccessDesc::read(dev)]).unwrap();
    assert_eq!(s.access(own).unwrap(), MemAccessFlags::READ);
    assert!(s.to_vec().unwrap().iter().all(|&x| x == 0x5A5A_5A5A));
    ctx.synchronize().unwrap();
}

#[gpu_test]
fn a_growable_buffer_is_read_write_for_its_device_whatever_access_it_is_given() {
    let ctx = gpu_or_skip!();
    require_vmm(&ctx);
    let dev = ctx.device();
    let props = AllocationProps::device(dev);
    let chunk = props.minimum_granularity().unwrap();
    // Less than read-write for its own device would starve its views: refused up front.
    for access in [
        vec![MemAccessDesc::read(dev)],
        vec![MemAccessDesc::none(dev)],
    ] {
        let e =
            GrowableBuffer::<u32>::with_props(&ctx, 1 << 20, props, chunk, &access).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{access:?}: {e:?}");
    }
    // No entry for its device: read-write is granted anyway, to every chunk.
    let mut buf = GrowableBuffer::<u32>::with_props(&ctx, 1 << 20, props, chunk, &[]).unwrap();
    let data = pattern(88, chunk / 4 + 100);
    buf.extend_from_host(&data).unwrap();
    assert_eq!(buf.chunk_count(), 2);
    assert_eq!(buf.to_vec().unwrap(), data);
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    write_pattern_on(&ctx, &stream, &mut buf, 89);
    assert_eq!(buf.to_vec().unwrap(), pattern(89, data.len()));
    ctx.synchronize().unwrap();
}

#[gpu_test]
fn one_allocation_mapped_twice_shows_the_same_bytes() {
    let ctx = gpu_or_skip!();
    require_vmm(&ctx);
    let dev = ctx.device();
    let props = AllocationProps::device(dev);
    let g = props.minimum_granularity().unwrap();
    let phys = Arc::new(PhysicalAllocation::new(&ctx, 2 * g, &props).unwrap());
    let a = AddressRange::reserve(&ctx, 2 * g, 0).unwrap();
    let b = AddressRange::reserve(&ctx, 2 * g, 0).unwrap();
    // Written through the one exclusive mapping, which then goes.
    let data = pattern(21, 2 * g / 4);
    {
        let mut only = a.map::<u32>(0, phys.clone(), 0, 2 * g).unwrap();
        only.copy_from_host(&data).unwrap();
    }
    // Two shared mappings at two addresses show the same bytes.
    let whole = a.map_shared::<u32>(0, phys.clone(), 0, 2 * g).unwrap();
    let mut again = b.map_shared::<u32>(0, phys.clone(), 0, 2 * g).unwrap();
    assert_ne!(whole.as_raw(), again.as_raw());
    assert_eq!(whole.to_vec().unwrap(), data);
    assert_eq!(again.to_vec().unwrap(), data);
    let half = whole.len() / 2;
    assert_eq!(again.slice(half..).unwrap().to_vec().unwrap(), data[half..]);
    // The handle may go: the mappings keep the memory.
    drop(phys);
    assert_eq!(whole.allocation().size(), Some(2 * g));
    assert_eq!(again.to_vec().unwrap(), data);
    // Read-only access is recorded as such.
    again.set_access(&[MemAccessDesc::read(dev)]).unwrap();
    assert_eq!(
        again.access(MemLocation::device(dev)).unwrap(),
        MemAccessFlags::READ
    );
    assert_eq!(again.to_vec().unwrap(), data);
}

#[gpu_test]
fn part_of_an_allocation_maps_or_is_refused_cleanly() {
    let ctx = gpu_or_skip!();
    require_vmm(&ctx);
    let dev = ctx.device();
    let props = AllocationProps::device(dev);
    let g = props.minimum_granularity().unwrap();
    let phys = Arc::new(PhysicalAllocation::new(&ctx, 2 * g, &props).unwrap());
    let whole_range = AddressRange::reserve(&ctx, 2 * g, 0).unwrap();
    let data = pattern(22, 2 * g / 4);
    {
        let mut only = whole_range.map::<u32>(0, phys.clone(), 0, 2 * g).unwrap();
        only.copy_from_host(&data).unwrap();
    }
    // Mapped twice from here on: shared mappings.
    let whole = whole_range
        .map_shared::<u32>(0, phys.clone(), 0, 2 * g)
        .unwrap();
    // cuda.h allows mapping part of an allocation; drivers may refuse it (driver 580 on an
    // H100 answers CUDA_ERROR_NOT_SUPPORTED for an offset). Either the bytes at the offset
    // show through, or the refusal is the driver's error and nothing is left mapped.
    let upper_range = AddressRange::reserve(&ctx, g, 0).unwrap();
    match upper_range.map_shared::<u32>(0, phys.clone(), g, g) {
        Ok(upper) => {
            assert_eq!(upper.to_vec().unwrap(), data[whole.len() / 2..]);
        }
        Err(e) => {
            note(format!("a mapping at an offset is refused here: {e}"));
            assert_eq!(e.code(), Some(ErrorCode::NOT_SUPPORTED), "{e}");
        }
    }
    // The range is still free for a whole mapping of another allocation.
    let other = Arc::new(PhysicalAllocation::new(&ctx, g, &props).unwrap());
    let mut m = upper_range.map::<u32>(0, other, 0, g).unwrap();
    m.memset(9u32).unwrap();
    assert!(m.to_vec().unwrap().iter().all(|&x| x == 9));
    assert_eq!(whole.to_vec().unwrap(), data);
}

#[gpu_test]
fn spans_outside_the_range_or_allocation_are_refused_and_the_context_stays_usable() {
    let ctx = gpu_or_skip!();
    require_vmm(&ctx);
    let props = AllocationProps::device(ctx.device());
    let g = props.minimum_granularity().unwrap();
    let range = AddressRange::reserve(&ctx, 2 * g, 0).unwrap();
    let phys = Arc::new(PhysicalAllocation::new(&ctx, g, &props).unwrap());
    let e = range.map::<u8>(2 * g, phys.clone(), 0, g).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Vmm(VmmError::MappingRange {
                kind: "address range",
                ..
            })
        ),
        "{e:?}"
    );
    let e = range.map::<u8>(0, phys.clone(), g, g).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Vmm(VmmError::MappingRange {
                kind: "physical allocation",
                ..
            })
        ),
        "{e:?}"
    );
    assert!(matches!(
        range.map::<u8>(0, phys.clone(), 0, 0),
        Err(Error::Vmm(VmmError::MappingRange { .. }))
    ));
    // Unaligned: the driver refuses.
    let e = range.map::<u8>(1, phys.clone(), 0, g - 1).unwrap_err();
    assert!(e.code().is_some(), "{e:?}");
    // A mapped address is not mapped twice.
    let _m = range.map::<u8>(0, phys.clone(), 0, g).unwrap();
    assert!(range.map::<u8>(0, phys.clone(), 0, g).is_err());
    // Not a mapping at all.
    let plain = DeviceBuffer::<u8>::new(&ctx, 1024).unwrap();
    assert!(PhysicalAllocation::retain(&ctx, plain.as_raw()).is_err());
    assert_eq!(
        DeviceBuffer::from_slice(&ctx, &[1u8, 2, 3])
            .unwrap()
            .to_vec()
            .unwrap(),
        [1, 2, 3]
    );
}

#[gpu_test]
fn growable_buffer_grows_in_place() {
    let ctx = gpu_or_skip!();
    require_vmm(&ctx);
    let mut buf = GrowableBuffer::<u32>::new(&ctx, 64 << 20).unwrap();
    let base = buf.as_raw();
    assert_eq!(buf.len(), 0);
    assert_eq!(buf.chunk_count(), 0);
    assert!(buf.max_len() >= 64 << 20);
    let per_chunk = buf.chunk_bytes() / 4;
    let first = pattern(31, 1000);
    buf.extend_from_host(&first).unwrap();
    assert_eq!(buf.chunk_count(), 1);
    // Three and a half chunks more: the view of the first elements keeps its address.
    let second = pattern(32, per_chunk * 7 / 2);
    buf.extend_from_host(&second).unwrap();
    assert_eq!(buf.as_raw(), base);
    assert_eq!(buf.len(), 1000 + second.len());
    assert_eq!(
        buf.chunk_count(),
        (buf.len() * 4).div_ceil(buf.chunk_bytes())
    );
    let mut all = first.clone();
    all.extend_from_slice(&second);
    assert_eq!(buf.to_vec().unwrap(), all);
    // Kernels see the whole buffer.
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    write_pattern_on(&ctx, &stream, &mut buf, 33);
    assert_eq!(buf.to_vec().unwrap(), pattern(33, all.len()));
    // Shrinking keeps the chunks; past the reservation is refused.
    let chunks = buf.chunk_count();
    buf.resize(10).unwrap();
    assert_eq!((buf.len(), buf.chunk_count()), (10, chunks));
    assert_eq!(buf.to_vec().unwrap(), pattern(33, 10));
    let max = buf.max_len();
    assert!(matches!(
        buf.resize(max + 1),
        Err(Error::OutOfBounds { .. })
    ));
    assert_eq!(buf.as_raw(), base);
}

#[cfg(unix)]
#[gpu_test]
fn an_exported_fd_imports_as_the_same_memory() {
    let ctx = gpu_or_skip!();
    let props = crate::vmm::fd_exportable_props(&ctx);
    let dev = ctx.device();
    let g = props.minimum_granularity().unwrap();
    let phys = Arc::new(PhysicalAllocation::new(&ctx, g, &props).unwrap());
    assert_eq!(
        phys.properties().unwrap().handle_types(),
        MemAllocationHandleType::POSIX_FILE_DESCRIPTOR
    );
    let r1 = AddressRange::reserve(&ctx, g, 0).unwrap();
    {
        let mut m1 = r1.map::<u32>(0, phys.clone(), 0, g).unwrap();
        m1.copy_from_host(&pattern(41, m1.len())).unwrap();
    }
    let m1 = r1.map_shared::<u32>(0, phys.clone(), 0, g).unwrap();

    let fd = phys.export_fd().unwrap();
    let imported = PhysicalAllocation::import_fd(&ctx, fd.as_fd_ref())
        .unwrap()
        .with_known_size(g);
    drop(fd); // the import does not need the descriptor
              // An import in the exporting process is the same memory, under the same handle or not
              // (a new handle is an alias the mapping claims cannot see: see the vmm module docs).
    note(format!(
        "an fd imported in the exporting process gives {} handle",
        if imported.as_raw() == phys.as_raw() {
            "the same"
        } else {
            "a new"
        }
    ));
    let r2 = AddressRange::reserve(&ctx, g, 0).unwrap();
    let m2 = r2.map_shared::<u32>(0, Arc::new(imported), 0, g).unwrap();
    assert_eq!(m2.to_vec().unwrap(), pattern(41, m1.len()));

    // An allocation without the handle type does not export.
    let plain = PhysicalAllocation::new(&ctx, g, &AllocationProps::device(dev)).unwrap();
    assert!(plain.export_fd().is_err());
}

/// `BorrowedFd` from an `OwnedFd` without naming the trait at every call.
#[cfg(unix)]
trait AsFdRef {
    fn as_fd_ref(&self) -> std::os::fd::BorrowedFd<'_>;
}

#[cfg(unix)]
impl AsFdRef for std::os::fd::OwnedFd {
    fn as_fd_ref(&self) -> std::os::fd::BorrowedFd<'_> {
        std::os::fd::AsFd::as_fd(self)
    }
}

#[gpu_test]
fn unsupported_handle_types_say_so() {
    let ctx = gpu_or_skip!();
    require_vmm(&ctx);
    let dev = ctx.device();
    let g = AllocationProps::device(dev).minimum_granularity().unwrap();
    let win = AllocationProps::device(dev).with_handle_types(MemAllocationHandleType::WIN32);
    let e = PhysicalAllocation::new(&ctx, g, &win).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Vmm(VmmError::HandleTypeUnsupported {
                handle_type: MemAllocationHandleType::WIN32,
                ..
            })
        ),
        "{e:?}"
    );
    let fabric_ok = dev
        .attribute(DeviceAttribute::HANDLE_TYPE_FABRIC_SUPPORTED)
        .unwrap()
        != 0;
    let fabric = AllocationProps::device(dev).with_handle_types(MemAllocationHandleType::FABRIC);
    if fabric_ok {
        // Supported by the device, but creating one also needs an IMEX channel, which a
        // machine without the IMEX daemon lacks (CUDA_ERROR_NOT_PERMITTED).
        match PhysicalAllocation::new(&ctx, g, &fabric) {
            Ok(_) => note("fabric handles are supported here: created one"),
            Err(e) => {
                assert_eq!(e.code(), Some(ErrorCode::NOT_PERMITTED), "{e}");
                note(format!("fabric handles need an IMEX channel here: {e}"));
            }
        }
    } else {
        let e = PhysicalAllocation::new(&ctx, g, &fabric).unwrap_err();
        assert!(
            matches!(
                e,
                Error::Vmm(VmmError::HandleTypeUnsupported {
                    handle_type: MemAllocationHandleType::FABRIC,
                    ..
                })
            ),
            "{e:?}"
        );
        let plain = PhysicalAllocation::new(&ctx, g, &AllocationProps::device(dev)).unwrap();
        assert!(matches!(
            plain.export_fabric(),
            Err(Error::Vmm(VmmError::HandleTypeUnsupported { .. }))
        ));
    }
}

#[gpu_test]
fn host_and_host_numa_memory_map_for_the_device() {
    let ctx = gpu_or_skip!();
    require_vmm(&ctx);
    let dev = ctx.device();
    let mut tried = 0;
    let numa = dev.attribute(DeviceAttribute::HOST_NUMA_ID).unwrap_or(-1);
    for (props, attr) in [
        (
            AllocationProps::host(),
            DeviceAttribute::HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
        ),
        (
            AllocationProps::host_numa(numa.max(0)),
            DeviceAttribute::HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
        ),
    ] {
        if dev.attribute(attr).unwrap_or(0) == 0 || (props != AllocationProps::host() && numa < 0) {
            note(format!(
                "{:?}: not supported by this device",
                props.location()
            ));
            continue;
        }
        tried += 1;
        let g = props.minimum_granularity().unwrap();
        let phys = Arc::new(PhysicalAllocation::new(&ctx, g, &props).unwrap());
        let at = phys.properties().unwrap().location();
        if props == AllocationProps::host() {
            // The driver may name the NUMA node the host memory landed on.
            assert!(
                at == MemLocation::host() || at.kind() == MemLocationType::HOST_NUMA,
                "{at:?}"
            );
        } else {
            assert_eq!(at, props.location());
        }
        let range = AddressRange::reserve(&ctx, g, 0).unwrap();
        let mut m = range.map::<u32>(0, phys, 0, g).unwrap();
        let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
        write_pattern_on(&ctx, &stream, &mut m, 51);
        assert_eq!(m.to_vec().unwrap(), pattern(51, m.len()));
    }
    note(format!("host locations exercised: {tried}"));
}

#[gpu_test]
fn compression_and_rdma_requests_are_granted_or_reported() {
    let ctx = gpu_or_skip!();
    require_vmm(&ctx);
    let dev = ctx.device();
    let g = AllocationProps::device(dev).minimum_granularity().unwrap();
    if dev
        .attribute(DeviceAttribute::GENERIC_COMPRESSION_SUPPORTED)
        .unwrap()
        != 0
    {
        let props = AllocationProps::device(dev).with_compression(MemAllocationCompType::GENERIC);
        let g = props.minimum_granularity().unwrap();
        let phys = PhysicalAllocation::new(&ctx, g, &props).unwrap();
        let c = phys.properties().unwrap().compression();
        assert!(
            c == MemAllocationCompType::GENERIC || c == MemAllocationCompType::NONE,
            "{c:?}"
        );
        note(format!("compression granted: {c:?}"));
    } else {
        note("compression: not supported by this device");
    }
    if dev
        .attribute(DeviceAttribute::GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED)
        .unwrap()
        != 0
    {
        let props = AllocationProps::device(dev).with_gpu_direct_rdma(true);
        let phys = PhysicalAllocation::new(&ctx, g, &props).unwrap();
        assert!(phys.properties().unwrap().gpu_direct_rdma());
    } else {
        note("GPUDirect RDMA: not supported by this device");
    }
}

#[gpu_test]
fn a_thousand_map_cycles_leak_nothing() {
    let ctx = gpu_exclusive_or_skip!();
    require_vmm(&ctx);
    let dev = ctx.device();
    let props = AllocationProps::device(dev);
    let size = 2 << 20;
    let cycle = || {
        let range = AddressRange::reserve(&ctx, size, 0).unwrap();
        let phys = Arc::new(PhysicalAllocation::new(&ctx, size, &props).unwrap());
        // Mapped read-write for the device, then unmapped.
        drop(range.map::<u8>(0, phys, 0, size).unwrap());
    };
    cycle();
    ctx.synchronize().unwrap();
    let (free0, _) = ctx.mem_info().unwrap();
    let fds0 = open_fds();
    for _ in 0..1000 {
        cycle();
    }
    ctx.synchronize().unwrap();
    let (free1, _) = ctx.mem_info().unwrap();
    let fds1 = open_fds();
    // A leak would be 1000 x 2 MiB; allow the driver's own bookkeeping a little slack.
    assert!(
        free1 + (16 << 20) >= free0,
        "free device memory fell from {free0} to {free1}"
    );
    assert!(fds1 <= fds0 + 2, "open fds went from {fds0} to {fds1}");
}

#[gpu_test]
fn address_reservations_honour_alignment_and_a_free_address_hint() {
    // The GPU alone: a test reserving addresses in parallel could take the freed one first.
    let ctx = gpu_exclusive_or_skip!();
    require_vmm(&ctx);
    let dev = ctx.device();
    let props = AllocationProps::device(dev);
    let g = props.minimum_granularity().unwrap();
    for shift in [4, 6, 9] {
        let align = g << shift;
        for _ in 0..3 {
            let r = AddressRange::reserve(&ctx, g, align).unwrap();
            assert_eq!(
                r.as_raw() % align as u64,
                0,
                "alignment {align}: {:#x}",
                r.as_raw()
            );
        }
    }
    // A hint at an address just freed. cuMemAddressReserve's `addr` is a request, not a
    // promise: driver 580 on an H100 placed the range there in some runs and elsewhere in
    // others (2 of 4 runs of this suite), so where it lands is noted, and what must hold is
    // that the range is reserved, of the size asked, and usable.
    let probe = AddressRange::reserve(&ctx, 8 * g, 8 * g).unwrap();
    let want = probe.as_raw() + 2 * g as u64;
    drop(probe);
    let r = AddressRange::reserve_at(&ctx, 2 * g, 0, want).unwrap();
    note(format!(
        "address hint {want:#x}: reserved at {:#x} ({})",
        r.as_raw(),
        if r.as_raw() == want {
            "honoured"
        } else {
            "not honoured"
        }
    ));
    assert_ne!(r.as_raw(), 0);
    assert_eq!(r.size(), 2 * g);
    // The range is usable there.
    let phys = Arc::new(PhysicalAllocation::new(&ctx, 2 * g, &props).unwrap());
    let mut m = r.map::<u32>(0, phys, 0, 2 * g).unwrap();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    write_pattern_on(&ctx, &s, &mut m, 61);
    assert_eq!(m.to_vec().unwrap(), pattern(61, m.len()));
}

#[gpu_test]
fn allocation_usage_flags_read_back() {
    let ctx = gpu_or_skip!();
    require_vmm(&ctx);
    let dev = ctx.device();
    crate::common::require_attribute(
        dev,
        DeviceAttribute::SPARSE_CUDA_ARRAY_SUPPORTED,
        "tile pools serve sparse arrays, which the device lacks",
    );
    let props = AllocationProps::device(dev).with_usage(MemCreateUsageFlags::TILE_POOL);
    let g = props.minimum_granularity().unwrap();
    let phys = match PhysicalAllocation::new(&ctx, g, &props) {
        Err(e) if e.code() == Some(ErrorCode::NOT_SUPPORTED) => {
            skip(format!("tile-pool allocations are not supported here: {e}"))
        }
        r => r.unwrap(),
    };
    // Driver 580 does not report the usage in the allocation's properties (they read back
    // without it); what the flag is for, backing a sparse array, is tested with
    // vmm::array::sparse_arrays_map_tiles_of_physical_memory.
    let got = phys.properties().unwrap();
    if !got.usage().contains(MemCreateUsageFlags::TILE_POOL) {
        note(format!("usage flags are not reported back: {got:?}"));
    }
    let plain = PhysicalAllocation::new(&ctx, g, &AllocationProps::device(dev)).unwrap();
    assert!(!plain
        .properties()
        .unwrap()
        .usage()
        .contains(MemCreateUsageFlags::TILE_POOL));
}

#[cfg(target_os = "linux")]
#[gpu_test]
fn host_memory_mapped_with_host_access_is_shared_with_the_device() {
    let ctx = gpu_or_skip!();
    require_vmm(&ctx);
    let dev = ctx.device();
    let numa = dev.attribute(DeviceAttribute::HOST_NUMA_ID).unwrap_or(-1);
    let props = if numa >= 0
        && dev
            .attribute(DeviceAttribute::HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)
            .unwrap_or(0)
            != 0
    {
        AllocationProps::host_numa(numa)
    } else if dev
        .attribute(DeviceAttribute::HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)
        .unwrap_or(0)
        != 0
    {
        AllocationProps::host()
    } else {
        skip("the device cannot map host memory through VMM");
    };
    let g = props.minimum_granularity().unwrap();
    let range = AddressRange::reserve(&ctx, g, 0).unwrap();
    let phys = Arc::new(PhysicalAllocation::new(&ctx, g, &props).unwrap());
    let mut m = range.map::<u32>(0, phys, 0, g).unwrap();
    let host = props.location();
    m.set_access(&[
        MemAccessDesc::read_write(dev),
        MemAccessDesc::new(host, MemAccessFlags::READWRITE),
    ])
    .unwrap();
    assert_eq!(m.access(host).unwrap(), MemAccessFlags::READWRITE);
    assert_eq!(
        m.access(MemLocation::device(dev)).unwrap(),
        MemAccessFlags::READWRITE
    );
    // The device writes, the host reads the same bytes at the same address.
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    write_pattern_on(&ctx, &s, &mut m, 71);
    let n = m.len();
    // Read and written through process_vm_readv/writev on this process: an address the
    // host cannot reach fails with EFAULT instead of crashing the test binary.
    let mut seen = vec![0u32; n];
    host_copy(m.as_raw(), &mut seen, false).expect("the host reads the mapping");
    assert_eq!(seen, pattern(71, n));
    // The host writes, the device sees it.
    let mut ones = vec![0x5151_5151u32; n];
    host_copy(m.as_raw(), &mut ones, true).expect("the host writes the mapping");
    assert!(m.to_vec().unwrap().iter().all(|&v| v == 0x5151_5151));
}

#[cfg(target_os = "linux")]
/// Copies between `buf` and this process's memory at `addr` (into `buf`, or from it when
/// `write`) with `process_vm_readv`/`process_vm_writev`, which report an unmapped address as
/// `EFAULT` rather than faulting.
fn host_copy(addr: u64, buf: &mut [u32], write: bool) -> std::io::Result<()> {
    let bytes = std::mem::size_of_val(buf);
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: bytes,
    };
    let remote = libc::iovec {
        iov_base: addr as usize as *mut libc::c_void,
        iov_len: bytes,
    };
    // SAFETY: `local` covers `buf`, alive and exclusively borrowed across the call; the
    // kernel checks `remote` itself and fails with EFAULT where it is not mapped.
    let n = unsafe {
        if write {
            libc::process_vm_writev(libc::getpid(), &local, 1, &remote, 1, 0)
        } else {
            libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0)
        }
    };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    assert_eq!(n as usize, bytes, "a partial copy");
    Ok(())
}

#[cfg(target_os = "linux")]
#[gpu_test]
fn a_thousand_fd_export_import_cycles_leak_nothing() {
    let ctx = gpu_exclusive_or_skip!();
    let props = crate::vmm::fd_exportable_props(&ctx);
    let size = props.minimum_granularity().unwrap();
    let cycle = |i: u32| {
        let phys = PhysicalAllocation::new(&ctx, size, &props).unwrap();
        let fd = phys.export_fd().unwrap();
        let imported = PhysicalAllocation::import_fd(&ctx, fd.as_fd())
            .unwrap()
            .with_known_size(size);
        drop(fd);
        let range = AddressRange::reserve(&ctx, size, 0).unwrap();
        // Read-write for the device as soon as it is mapped.
        let mut m = range.map::<u32>(0, Arc::new(imported), 0, size).unwrap();
        if i % 250 == 0 {
            // The import is the exported memory. (The exclusive mapping goes first: in this
            // process the import may be the same handle, which it keeps claimed.)
            m.memset(i).unwrap();
            drop(m);
            let r2 = AddressRange::reserve(&ctx, size, 0).unwrap();
            let m2 = r2.map_shared::<u32>(0, Arc::new(phys), 0, size).unwrap();
            assert!(m2.to_vec().unwrap().iter().all(|&v| v == i));
        }
    };
    cycle(1);
    ctx.synchronize().unwrap();
    let (free0, _) = ctx.mem_info().unwrap();
    let fds0 = open_fds();
    let drops0 = drop_error_count();
    for i in 0..1000 {
        cycle(i);
    }
    ctx.synchronize().unwrap();
    let (free1, _) = ctx.mem_info().unwrap();
    let fds1 = open_fds();
    // A leak would be 1000 x (at least) 2 MiB; allow the driver's bookkeeping some slack.
    assert!(
        free1 + (16 << 20) >= free0,
        "free device memory fell from {free0} to {free1}"
    );
    assert!(fds1 <= fds0 + 2, "open fds went from {fds0} to {fds1}");
    assert_eq!(drop_error_count(), drops0, "drops failed");
}

#[cfg(unix)]
#[gpu_test]
fn virtual_memory_shared_as_a_file_descriptor() {
    if let Some(mut chan) = child_role("vmm_fd") {
        let ctx = gpu_or_skip!();
        let dev = ctx.device();
        // The crate's IpcSocket: the fd and the size it does not carry.
        let phys = chan.0.recv_allocation(&ctx).unwrap();
        let size = phys.size().unwrap();
        let range = AddressRange::reserve(&ctx, size, 0).unwrap();
        let mut m = range.map::<u32>(0, Arc::new(phys), 0, size).unwrap();
        m.set_access(&[MemAccessDesc::read_write(dev)]).unwrap();
        assert_eq!(
            m.to_vec().unwrap(),
            pattern(71, m.len()),
            "the parent's data"
        );
        let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
        write_pattern_on(&ctx, &stream, &mut m, 72);
        chan.send(b"written").unwrap();
        assert_eq!(chan.recv().unwrap(), b"bye");
        return;
    }
    let ctx = gpu_or_skip!();
    let props = crate::vmm::fd_exportable_props(&ctx);
    let dev = ctx.device();
    let size = props.minimum_granularity().unwrap() * 2;
    let phys = Arc::new(PhysicalAllocation::new(&ctx, size, &props).unwrap());
    let range = AddressRange::reserve(&ctx, size, 0).unwrap();
    let mut m = range.map::<u32>(0, phys.clone(), 0, size).unwrap();
    m.set_access(&[MemAccessDesc::read_write(dev)]).unwrap();
    m.copy_from_host(&pattern(71, m.len())).unwrap();
    ctx.synchronize().unwrap();
    let (mut child, mut chan) = spawn_child("vmm_fd");
    let r = chan.0.send_allocation(&phys).map_err(std::io::Error::other);
    child.check(r, "send the allocation");
    let r = chan.recv();
    assert_eq!(child.check(r, "wait for the child"), b"written");
    assert_eq!(m.to_vec().unwrap(), pattern(72, m.len()));
    let r = chan.send(b"bye");
    child.check(r, "release the child");
    child.finish();
}
