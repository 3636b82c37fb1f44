//! GPU tests: memory pools with every property and attribute, access, the device's current
//! pool. Pools shared between processes: ipc.rs; between devices: multi_gpu.rs.

use cuda_driver::prelude::*;
use cuda_driver::{
    Context, Device, DeviceAttribute, DeviceBuffer, Error, MemAccessDesc, MemAccessFlags,
    MemAllocationHandleType, MemLocation, MemPool, MemPoolProps, Stream, StreamFlags,
};

use crate::child::pattern;
use crate::common::note;
use crate::vmm::write_pattern_on;

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
    assert!(matches!(e, Error::HandleTypeUnsupported { .. }), "{e:?}");
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
        assert!(matches!(e, Error::HandleTypeUnsupported { .. }), "{e:?}");
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
