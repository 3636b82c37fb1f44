//! GPU tests: the stream-ordered allocator (Stream Ordered Memory Allocator): allocation and
//! free in stream order and the rules that keep it sound, memory pools with every property and
//! attribute, thresholds and trims, the device's current pool, pools by location, a pool and
//! its allocations shared with another process. Between devices: `peer`.

use cuda_driver::memory::vmm::VmmError;
use cuda_driver::prelude::*;
use cuda_driver::{
    error::drop_error_count, memory::pool::MemPool, memory::pool::MemPoolProps,
    memory::vmm::MemAccessDesc, memory::MemLocation, types::ContextFlags, types::DeviceAttribute,
    types::MemAccessFlags, types::MemAllocationHandleType, types::MemAllocationType,
    types::PinnedFlags, types::StreamFlags, Context, Device, DeviceBuffer, Error, PinnedBuffer,
    Stream,
};

use crate::child::pattern;
#[cfg(unix)]
use crate::child::{child_role, spawn_child};
use crate::common::{note, skip, unsupported};
use crate::memory::{floats, words};
use crate::vmm::write_pattern_on;

mod shared;

/// Skips the test unless the device supports memory pools.
fn require_pools(ctx: &Context) {
    crate::common::require_attribute(
        ctx.device(),
        DeviceAttribute::MEMORY_POOLS_SUPPORTED,
        "the device does not support memory pools",
    );
}

#[gpu_test]
fn every_attribute_reads_back_what_was_set() {
    let ctx = gpu_or_skip!();
    require_pools(&ctx);
    let dev = ctx.device();
    let pool =
        MemPool::with_props(dev, &MemPoolProps::device(dev).with_max_size(256 << 20)).unwrap();
    assert_eq!(pool.device(), dev);
    // The three reuse policies: on by default, each set off and on again.
    type Get = fn(&MemPool) -> cuda_driver::Result<bool>;
    type Set = fn(&MemPool, bool) -> cuda_driver::Result<()>;
    let policies: [(Get, Set); 3] = [
        (
            MemPool::reuse_follow_event_dependencies,
            MemPool::set_reuse_follow_event_dependencies,
        ),
        (
            MemPool::reuse_allow_opportunistic,
            MemPool::set_reuse_allow_opportunistic,
        ),
        (
            MemPool::reuse_allow_internal_dependencies,
            MemPool::set_reuse_allow_internal_dependencies,
        ),
    ];
    for (i, (get, set)) in policies.iter().enumerate() {
        assert!(get(&pool).unwrap(), "policy {i} is on by default");
        set(&pool, false).unwrap();
        assert!(!get(&pool).unwrap(), "policy {i} off");
        // The others are untouched.
        for (j, (other, _)) in policies.iter().enumerate() {
            if j != i {
                assert!(other(&pool).unwrap(), "policy {j} untouched by {i}");
            }
        }
        set(&pool, true).unwrap();
        assert!(get(&pool).unwrap());
    }
    pool.set_release_threshold(u64::MAX).unwrap();
    assert_eq!(pool.release_threshold().unwrap(), u64::MAX);

    // Used and reserved memory, current and high, with resets.
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let mut a = pool.alloc_async::<u32>(&stream, 4 << 20).unwrap(); // 16 MiB
    let b = pool.alloc_async::<u32>(&stream, 1 << 20).unwrap(); // 4 MiB
    write_pattern_on(&ctx, &stream, &mut a, 101);
    assert_eq!(a.to_vec().unwrap(), pattern(101, 4 << 20));
    assert!(pool.used_mem_current().unwrap() >= 20 << 20);
    assert!(pool.reserved_mem_current().unwrap() >= 20 << 20);
    drop(a);
    stream.synchronize().unwrap();
    let used = pool.used_mem_current().unwrap();
    assert!((4 << 20..16 << 20).contains(&used), "{used}");
    assert!(pool.used_mem_high().unwrap() >= 20 << 20);
    pool.reset_used_mem_high().unwrap();
    assert_eq!(pool.used_mem_high().unwrap(), used);
    // Trimming keeps what is in use; the high-water mark of reserved memory stays until reset.
    let high = pool.reserved_mem_high().unwrap();
    pool.trim_to(0).unwrap();
    let reserved = pool.reserved_mem_current().unwrap();
    assert!(
        reserved >= used && reserved <= high,
        "{reserved} {used} {high}"
    );
    assert_eq!(pool.reserved_mem_high().unwrap(), high);
    pool.reset_reserved_mem_high().unwrap();
    assert_eq!(pool.reserved_mem_high().unwrap(), reserved);
    drop(b);
    stream.synchronize().unwrap();
    // More than the maximum size: out of memory, and the pool stays usable.
    assert!(pool.alloc_async::<u8>(&stream, 512 << 20).is_err());
    let c = pool.alloc_async::<u8>(&stream, 1 << 20).unwrap();
    drop(c);
    stream.synchronize().unwrap();
}

#[gpu_test]
fn the_devices_current_pool_is_set_used_and_restored() {
    let ctx = gpu_exclusive_or_skip!();
    require_pools(&ctx);
    let dev = ctx.device();
    let default = MemPool::device_default(dev).unwrap();
    let pool = MemPool::new(dev).unwrap();
    assert_eq!(
        pool.access(MemLocation::device(dev)).unwrap(),
        MemAccessFlags::READWRITE
    );
    MemPool::set_device_current(dev, &pool).unwrap();
    assert_eq!(MemPool::device_current(dev).unwrap(), pool.as_raw());
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let before = pool.used_mem_current().unwrap();
    let buf = DeviceBuffer::<u8>::new_async(&stream, 2 << 20).unwrap();
    assert!(pool.used_mem_current().unwrap() >= before + (2 << 20));
    drop(buf);
    stream.synchronize().unwrap();
    MemPool::set_device_current(dev, &default).unwrap();
    assert_eq!(MemPool::device_current(dev).unwrap(), default.as_raw());
    // Destroying a pool that is current makes the default pool current again.
    let other = MemPool::new(dev).unwrap();
    MemPool::set_device_current(dev, &other).unwrap();
    drop(other);
    assert_eq!(MemPool::device_current(dev).unwrap(), default.as_raw());
}

#[gpu_test]
fn host_pools_serve_the_device() {
    let ctx = gpu_or_skip!();
    require_pools(&ctx);
    let dev = ctx.device();
    let numa = dev.attribute(DeviceAttribute::HOST_NUMA_ID).unwrap_or(-1);
    let mut tried = 0;
    for (props, attr) in [
        (
            MemPoolProps::host(),
            DeviceAttribute::HOST_MEMORY_POOLS_SUPPORTED,
        ),
        (
            MemPoolProps::host_numa(numa.max(0)),
            DeviceAttribute::HOST_NUMA_MEMORY_POOLS_SUPPORTED,
        ),
    ] {
        if dev.attribute(attr).unwrap_or(0) == 0
            || (props.location() != MemLocation::host() && numa < 0)
        {
            note(format!(
                "{:?}: not supported by this device",
                props.location()
            ));
            continue;
        }
        tried += 1;
        let pool = MemPool::with_props(dev, &props).unwrap();
        pool.set_access(&[MemAccessDesc::read_write(dev)]).unwrap();
        assert_eq!(
            pool.access(MemLocation::device(dev)).unwrap(),
            MemAccessFlags::READWRITE
        );
        let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
        let mut buf = pool.alloc_async::<u32>(&stream, 1 << 16).unwrap();
        write_pattern_on(&ctx, &stream, &mut buf, 111);
        // The memory is host memory: the device-to-host copies refuse it
        // (CUDA_ERROR_INVALID_VALUE from cuMemcpyDtoHAsync on driver 580), the unified
        // copies (cuMemcpy) take it.
        let mut back = DeviceBuffer::<u32>::zeroed(&ctx, 1 << 16).unwrap();
        back.as_view_mut()
            .copy_from_unified(&buf.as_view())
            .unwrap();
        assert_eq!(back.to_vec().unwrap(), pattern(111, 1 << 16));
        drop(buf);
        stream.synchronize().unwrap();
    }
    note(format!("host pool locations exercised: {tried}"));
}

#[gpu_test]
fn pool_properties_are_checked() {
    let ctx = gpu_or_skip!();
    require_pools(&ctx);
    let dev = ctx.device();
    // A device pool created for another device.
    let e = MemPool::with_props(
        Device::from_raw(dev.as_raw() + 1),
        &MemPoolProps::device(dev),
    )
    .unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    // Windows handles; fabric where the device has none.
    let e = MemPool::with_props(
        dev,
        &MemPoolProps::device(dev).with_handle_types(MemAllocationHandleType::WIN32_KMT),
    )
    .unwrap_err();
    assert!(
        matches!(e, Error::Vmm(VmmError::HandleTypeUnsupported { .. })),
        "{e:?}"
    );
    if dev
        .attribute(DeviceAttribute::HANDLE_TYPE_FABRIC_SUPPORTED)
        .unwrap()
        == 0
    {
        let e = MemPool::with_props(
            dev,
            &MemPoolProps::device(dev).with_handle_types(MemAllocationHandleType::FABRIC),
        )
        .unwrap_err();
        assert!(
            matches!(e, Error::Vmm(VmmError::HandleTypeUnsupported { .. })),
            "{e:?}"
        );
    }
    // A pool without export handle types exports nothing.
    let pool = MemPool::new(dev).unwrap();
    #[cfg(unix)]
    assert!(pool.export_fd().is_err());
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let buf = pool.alloc_async::<u8>(&stream, 4096).unwrap();
    assert!(buf.export_pointer().is_err());
    drop(buf);
    stream.synchronize().unwrap();
}

#[gpu_test]
fn stream_ordered_allocation_and_free() {
    let ctx = gpu_exclusive_or_skip!();
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let data = words(10_000, 13);
    let mut host = PinnedBuffer::<u32>::zeroed(&ctx, data.len(), PinnedFlags::empty()).unwrap();
    {
        let mut a = DeviceBuffer::<u32>::new_async(&stream, data.len()).unwrap();
        let mut b = DeviceBuffer::<u32>::new_async(&stream, data.len()).unwrap();
        assert_eq!((a.len(), a.bytes()), (data.len(), data.len() * 4));
        assert_eq!(a.stream().as_raw(), stream.as_raw());
        // SAFETY: `data` and `host` are not touched until the stream is synchronised.
        unsafe {
            a.copy_from_host_async(&data, &stream).unwrap();
            b.copy_from_device_async(&a.as_view(), &stream).unwrap();
            b.slice_mut(..10)
                .unwrap()
                .memset_async(99u32, &stream)
                .unwrap();
            b.copy_to_host_async(&mut host, &stream).unwrap();
        }
        a.free_async().unwrap();
        // `b` is freed on the stream by Drop.
    }
    stream.synchronize().unwrap();
    assert!(host[..10].iter().all(|&x| x == 99));
    assert_eq!(host[10..], data[10..]);

    // Zero elements allocate nothing.
    let empty = DeviceBuffer::<f32>::new_async(&stream, 0).unwrap();
    assert_eq!(empty.as_raw(), 0);
    empty.free_async().unwrap();
}

#[gpu_test]
fn memory_pools_threshold_trim_and_allocation() {
    let ctx = gpu_exclusive_or_skip!();
    let dev = ctx.device();
    if dev
        .attribute(DeviceAttribute::MEMORY_POOLS_SUPPORTED)
        .unwrap()
        == 0
    {
        crate::common::skip("memory pools are not supported by this device");
    }
    let pool = MemPool::new(dev).unwrap();
    assert_eq!(pool.device(), dev);
    pool.set_release_threshold(32 << 20).unwrap();
    assert_eq!(pool.release_threshold().unwrap(), 32 << 20);

    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let data = floats(1 << 18, 14); // 1 MiB
    let mut host = vec![0.0f32; data.len()];
    {
        let mut buf = pool.alloc_async::<f32>(&stream, data.len()).unwrap();
        // SAFETY: `data` and `host` are not touched until the stream is synchronised.
        unsafe {
            buf.copy_from_host_async(&data, &stream).unwrap();
            buf.copy_to_host_async(&mut host, &stream).unwrap();
        }
        stream.synchronize().unwrap();
        assert!(pool.used_mem_current().unwrap() >= 1 << 20);
        assert!(pool.reserved_mem_current().unwrap() >= 1 << 20);
        assert!(pool.used_mem_high().unwrap() >= 1 << 20);
        assert!(pool.reserved_mem_high().unwrap() >= 1 << 20);
    }
    stream.synchronize().unwrap();
    assert_eq!(host, data);
    assert_eq!(pool.used_mem_current().unwrap(), 0);
    // The freed MiB stays cached (below the threshold) until trimmed.
    let reserved = pool.reserved_mem_current().unwrap();
    pool.trim_to(0).unwrap();
    let trimmed = pool.reserved_mem_current().unwrap();
    assert!(trimmed <= reserved, "{trimmed} > {reserved}");
    assert_eq!(
        trimmed, 0,
        "nothing is in use, so trimming to 0 releases everything"
    );

    // The default pool: a borrowed handle; restore what we change.
    let default = MemPool::device_default(dev).unwrap();
    let current = MemPool::device_current(dev).unwrap();
    assert_eq!(default.as_raw(), current);
    let old = default.release_threshold().unwrap();
    default.set_release_threshold(old + 4096).unwrap();
    assert_eq!(default.release_threshold().unwrap(), old + 4096);
    default.set_release_threshold(old).unwrap();
    let _ = default; // a borrowed handle: forgetting it destroys nothing
    let buf = DeviceBuffer::<u8>::new_async(&stream, 4096).unwrap();
    drop(buf);
    stream.synchronize().unwrap();
}

/// Issue #10 hole a: stream-ordered memory used on another stream. Before the fix, queuing
/// work on stream B that writes a buffer of stream A and then dropping the buffer freed it
/// on A at once; the next allocation reused the address and B's pending work overwrote the
/// new owner's data. Now the work on B is refused, and moving the buffer to B orders the
/// free after B's work: the new owner's data survives.
#[gpu_test]
fn stream_ordered_memory_cannot_be_freed_under_another_streams_work() {
    let ctx = gpu_exclusive_or_skip!();
    const N: usize = 4 << 20;
    let a = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let b = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let mut buf = DeviceBuffer::<u32>::new_async(&a, N).unwrap();
    let e = buf.memset_async(0xDEAD_BEEFu32, &b).unwrap_err();
    assert!(matches!(e, Error::StreamMismatch { .. }), "{e:?}");
    // SAFETY: refused before anything is queued.
    let e = unsafe { buf.copy_from_host_async(&vec![1; N], &b) }.unwrap_err();
    assert!(matches!(e, Error::StreamMismatch { .. }), "{e:?}");
    // The per-thread default stream names another stream on every thread: refused.
    let pt = Stream::per_thread(&ctx);
    assert!(matches!(
        DeviceBuffer::<u32>::new_async(&pt, 16),
        Err(Error::InvalidStream { .. })
    ));

    // Moved to B: B waits for A's allocation, and the free is queued on B after B's work.
    let mut buf = buf.move_to_stream(&b).unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    b.launch_host_fn(move || {
        let _ = rx.recv();
    })
    .unwrap();
    buf.memset_async(0xDEAD_BEEFu32, &b).unwrap(); // pending behind the blocked host fn
    drop(buf); // cuMemFreeAsync on B, after the memset
    let mut fresh = DeviceBuffer::<u32>::new_async(&a, N).unwrap();
    fresh.memset_async(1u32, &a).unwrap();
    tx.send(()).unwrap();
    b.synchronize().unwrap();
    a.synchronize().unwrap();
    assert!(
        fresh.to_vec().unwrap().iter().all(|&x| x == 1),
        "work of another stream overwrote a live stream-ordered buffer"
    );
    // A buffer dropped on another thread is freed on its own stream.
    let moved = DeviceBuffer::<u32>::new_async(&a, 1024).unwrap();
    std::thread::scope(|s| {
        s.spawn(move || drop(moved));
    });
    a.synchronize().unwrap();
}

/// Issue #23 hole 1: stream-ordered memory moved to the null (legacy) stream of another
/// context. The null handle is the same in every context, so the move was taken for a move to
/// the buffer's own stream and accepted without a context check: the buffer then claimed the
/// other context, its free was queued there, unordered after the work pending on its own
/// stream, and the pool reused the memory under that work. Now the context is checked first,
/// whatever the handles, and the refused move gives the buffer back, intact and usable.
#[gpu_test]
fn stream_ordered_memory_cannot_move_to_another_contexts_null_stream() {
    let ctx = gpu_exclusive_or_skip!();
    let other = Context::new(ctx.device(), ContextFlags::SCHED_AUTO).unwrap();
    let refused = |mine: &Stream, theirs: &Stream| {
        const N: usize = 1 << 20;
        let mut buf = DeviceBuffer::<u32>::new_async(mine, N).unwrap();
        buf.memset_async(0x5EED_0001u32, mine).unwrap();
        let err = buf.move_to_stream(theirs).unwrap_err();
        assert!(
            matches!(err.error, Error::ContextMismatch { .. }),
            "{err:?}"
        );
        // The buffer comes back on its own stream, in its own context, with its contents.
        let mut buf = err.buffer;
        assert_eq!(buf.stream().as_raw(), mine.as_raw());
        assert_eq!(buf.as_view().context().as_raw(), ctx.as_raw());
        assert!(buf.to_vec().unwrap().iter().all(|&x| x == 0x5EED_0001));
        // Still refused there, still usable here.
        assert!(matches!(
            buf.memset_async(3u32, theirs),
            Err(Error::ContextMismatch { .. })
        ));
        buf.memset_async(2u32, mine).unwrap();
        assert!(buf.to_vec().unwrap().iter().all(|&x| x == 2));
        // `?` turns the refusal into its error; the buffer is freed on its own stream.
        let via_question_mark = || -> cuda_driver::Result<()> {
            let buf = DeviceBuffer::<u32>::new_async(mine, 16)?;
            buf.move_to_stream(theirs)?;
            Ok(())
        };
        assert!(matches!(
            via_question_mark(),
            Err(Error::ContextMismatch { .. })
        ));
        drop(buf);
        mine.synchronize().unwrap();
    };
    let before = drop_error_count();
    refused(&Stream::legacy(&ctx), &Stream::legacy(&other));
    if !cfg!(feature = "per-thread-default-stream") {
        // Null handles: the legacy stream of each context.
        refused(&Stream::null(&ctx), &Stream::null(&other));
        refused(&Stream::legacy(&ctx), &Stream::null(&other));
    }
    // A created stream of the other context, as before.
    let theirs = Stream::new(&other, StreamFlags::NON_BLOCKING).unwrap();
    refused(
        &Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap(),
        &theirs,
    );
    assert_eq!(drop_error_count(), before);
}

#[cfg(unix)]
const N: usize = 1 << 20;

#[cfg(unix)]
#[gpu_test]
fn a_pool_and_its_allocations_shared_with_another_process() {
    if let Some(mut chan) = child_role("pool_fd") {
        let ctx = gpu_or_skip!();
        // The crate's IpcSocket: the pool's fd, then the allocation's export data and size.
        let pool = chan.0.recv_pool(ctx.device()).unwrap();
        let ptr = chan.0.recv_pool_pointer().unwrap();
        let n = ptr.len::<u32>();
        assert_eq!(n, N);
        // SAFETY: the parent exported an allocation of n u32 whose allocation completed
        // (it synchronised first) and frees it only after this buffer is dropped (it waits
        // for "written", sent after the drop).
        let mut buf = unsafe { pool.import_pointer::<u32>(&ctx, &ptr.data, n) }.unwrap();
        assert_eq!(buf.to_vec().unwrap(), pattern(81, n), "the parent's data");
        let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
        write_pattern_on(&ctx, &stream, &mut buf, 82);
        drop(buf);
        chan.send(b"written").unwrap();
        return;
    }
    let ctx = gpu_or_skip!();
    let dev = ctx.device();
    if dev
        .attribute(DeviceAttribute::MEMORY_POOLS_SUPPORTED)
        .unwrap()
        == 0
        || dev
            .attribute(DeviceAttribute::HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED)
            .unwrap()
            == 0
    {
        skip("no memory pools or no POSIX fd handles on this device");
    }
    let props =
        MemPoolProps::device(dev).with_handle_types(MemAllocationHandleType::POSIX_FILE_DESCRIPTOR);
    let pool = MemPool::with_props(dev, &props).unwrap();
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let mut buf = pool.alloc_async::<u32>(&stream, N).unwrap();
    buf.copy_from_host(&pattern(81, N)).unwrap();
    stream.synchronize().unwrap();
    let (mut child, mut chan) = spawn_child("pool_fd");
    // The pool is shared first: cuMemPoolExportPointer exports allocations of an already
    // shared pool.
    let r = chan.0.send_pool(&pool).map_err(std::io::Error::other);
    child.check(r, "send the pool's fd");
    let r = chan
        .0
        .send_pool_pointer(&buf)
        .map_err(std::io::Error::other);
    child.check(r, "send the pointer's export data");
    let r = chan.recv();
    assert_eq!(child.check(r, "wait for the child"), b"written");
    assert_eq!(buf.to_vec().unwrap(), pattern(82, N));
    drop(buf);
    stream.synchronize().unwrap();
    child.finish();
}

#[gpu_test]
fn pools_by_location() {
    let ctx = gpu_exclusive_or_skip!();
    let loc = MemLocation::device(ctx.device());
    let def = match MemPool::location_default(loc, MemAllocationType::PINNED) {
        Err(e) if unsupported(&e) => {
            skip("pools by location need CUDA 13.0");
        }
        r => r.unwrap(),
    };
    assert_eq!(
        def.as_raw(),
        MemPool::device_default(ctx.device()).unwrap().as_raw()
    );
    let pool = MemPool::new(ctx.device()).unwrap();
    MemPool::set_location_current(loc, MemAllocationType::PINNED, &pool).unwrap();
    let cur = MemPool::location_current(loc, MemAllocationType::PINNED).unwrap();
    assert_eq!(cur, pool.as_raw());
    assert_eq!(
        MemPool::device_current(ctx.device()).unwrap(),
        pool.as_raw()
    );
    MemPool::set_location_current(loc, MemAllocationType::PINNED, &def).unwrap();
    // An invalid allocation type: a driver error, the context usable afterwards.
    assert!(MemPool::location_default(loc, MemAllocationType::INVALID).is_err());
    assert!(MemPool::location_current(loc, MemAllocationType::PINNED).is_ok());
}
