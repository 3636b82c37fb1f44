//! GPU tests: memory.
//!
//! Every copy is checked with non-zero, position-dependent data. Managed allocations stay
//! tiny (KBs).

use std::sync::mpsc;
use std::time::Duration;

use cuda_driver::prelude::*;
use cuda_driver::{
    drop_error_count, AttachFlags, CaptureMode, CaptureStatus, Context, ContextFlags, Device,
    DeviceAttribute, DeviceBuffer, DeviceSlice, DeviceSliceMut, Error, ErrorCode,
    HostRegisterFlags, HostRegistration, ManagedBuffer, MemAdvice, MemLocation, MemPool,
    MemoryType, PinnedBuffer, PinnedFlags, PointerInfo, Stream, StreamFlags,
};

use crate::common::xorshift32;

/// Position-dependent, non-zero pseudo-random words (xorshift32), different per `seed`.
fn words(n: usize, seed: u32) -> Vec<u32> {
    xorshift32(n, seed).map(|x| x | 1).collect()
}

/// Non-zero floats, different per `seed`.
fn floats(n: usize, seed: u32) -> Vec<f32> {
    words(n, seed)
        .into_iter()
        .map(|w| (w % 100_000) as f32 * 0.25 + 1.0)
        .collect()
}

#[gpu_test]
fn host_device_host_round_trip() {
    let ctx = gpu_or_skip!();
    let data = floats(10_007, 1);
    let buf = DeviceBuffer::from_slice(&ctx, &data).unwrap();
    assert_eq!(buf.len(), data.len());
    assert_eq!(buf.bytes(), data.len() * 4);
    assert_ne!(buf.as_raw(), 0);
    assert_eq!(buf.to_vec().unwrap(), data);
    let mut back = vec![0.0f32; data.len()];
    buf.copy_to_host(&mut back).unwrap();
    assert_eq!(back, data);

    // Overwrite with other data through copy_from_host.
    let mut buf = buf;
    let other = floats(data.len(), 2);
    buf.copy_from_host(&other).unwrap();
    assert_eq!(buf.to_vec().unwrap(), other);
}

#[gpu_test]
fn zeroed_is_zero_and_empty_buffers_work() {
    let ctx = gpu_or_skip!();
    let mut buf = DeviceBuffer::<u64>::from_slice(&ctx, &[7; 64]).unwrap();
    drop(buf);
    buf = DeviceBuffer::zeroed(&ctx, 64).unwrap();
    assert_eq!(buf.to_vec().unwrap(), vec![0u64; 64]);

    let mut empty = DeviceBuffer::<f32>::new(&ctx, 0).unwrap();
    assert!(empty.is_empty());
    empty.copy_from_host(&[]).unwrap();
    empty.memset(1u32).unwrap();
    assert!(empty.to_vec().unwrap().is_empty());
}

#[gpu_test]
fn views_copy_exactly_their_elements() {
    let ctx = gpu_or_skip!();
    let data = words(1000, 3);
    let mut buf = DeviceBuffer::from_slice(&ctx, &data).unwrap();
    let patch = words(100, 4);
    buf.slice_mut(300..400)
        .unwrap()
        .copy_from_host(&patch)
        .unwrap();
    let mut expect = data.clone();
    expect[300..400].copy_from_slice(&patch);
    assert_eq!(buf.to_vec().unwrap(), expect);

    // Reads of sub-views, and views of views.
    let view = buf.slice(250..450).unwrap();
    assert_eq!(view.len(), 200);
    assert_eq!(view.as_raw(), buf.as_raw() + 250 * 4);
    assert_eq!(view.to_vec().unwrap(), expect[250..450]);
    let inner = view.slice(50..=51).unwrap();
    let mut two = [0u32; 2];
    inner.copy_to_host(&mut two).unwrap();
    assert_eq!(two, [expect[300], expect[301]]);

    // Disjoint mutable halves: copy the second half over the first.
    let mut all = buf.as_view_mut();
    let (mut lo, hi) = all.split_at_mut(500).unwrap();
    lo.copy_from_device(&hi.as_view()).unwrap();
    let got = buf.to_vec().unwrap();
    assert_eq!(got[..500], expect[500..]);
    assert_eq!(got[500..], expect[500..]);
}

#[gpu_test]
fn device_to_device_copies_blocking_and_async() {
    let ctx = gpu_or_skip!();
    let data = floats(4096, 5);
    let src = DeviceBuffer::from_slice(&ctx, &data).unwrap();
    let mut dst = DeviceBuffer::<f32>::zeroed(&ctx, 4096).unwrap();
    dst.copy_from_device(&src.as_view()).unwrap();
    assert_eq!(dst.to_vec().unwrap(), data);

    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let mut dst2 = DeviceBuffer::<f32>::zeroed(&ctx, 1024).unwrap();
    dst2.copy_from_device_async(&src.slice(1024..2048).unwrap(), &stream)
        .unwrap();
    dst2.slice_mut(..16)
        .unwrap()
        .copy_from_device_async(&src.slice(4080..).unwrap(), &stream)
        .unwrap();
    stream.synchronize().unwrap();
    let got = dst2.to_vec().unwrap();
    assert_eq!(got[..16], data[4080..]);
    assert_eq!(got[16..], data[1040..2048]);
}

#[gpu_test]
fn async_host_copies_on_a_stream() {
    let ctx = gpu_or_skip!();
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let data = words(1 << 16, 6);
    let src = PinnedBuffer::from_slice(&ctx, &data, PinnedFlags::empty()).unwrap();
    let mut dst = PinnedBuffer::<u32>::zeroed(&ctx, data.len(), PinnedFlags::empty()).unwrap();
    let mut buf = DeviceBuffer::<u32>::new(&ctx, data.len()).unwrap();
    // SAFETY: neither host buffer is touched until the stream is synchronised.
    unsafe {
        buf.copy_from_host_async(&src, &stream).unwrap();
        buf.copy_to_host_async(&mut dst, &stream).unwrap();
    }
    stream.synchronize().unwrap();
    assert_eq!(&dst[..], &data[..]);

    // Views, and pageable memory (the driver stages it).
    let mut pageable = vec![0u32; 100];
    let patch = words(100, 7);
    // SAFETY: `patch` and `pageable` are not touched until the stream is synchronised.
    unsafe {
        buf.slice_mut(10..110)
            .unwrap()
            .copy_from_host_async(&patch, &stream)
            .unwrap();
        buf.slice(5..105)
            .unwrap()
            .copy_to_host_async(&mut pageable, &stream)
            .unwrap();
    }
    stream.synchronize().unwrap();
    assert_eq!(pageable[..5], data[5..10]);
    assert_eq!(pageable[5..], patch[..95]);
}

#[gpu_test]
fn memsets_of_8_16_and_32_bits() {
    let ctx = gpu_or_skip!();
    let mut bytes = DeviceBuffer::<u8>::new(&ctx, 1000).unwrap();
    bytes.memset(0xA5u8).unwrap();
    assert_eq!(bytes.to_vec().unwrap(), vec![0xA5u8; 1000]);
    bytes.slice_mut(10..20).unwrap().memset(0x3Cu8).unwrap();
    let got = bytes.to_vec().unwrap();
    assert!(got[..10].iter().all(|&b| b == 0xA5));
    assert!(got[10..20].iter().all(|&b| b == 0x3C));
    assert!(got[20..].iter().all(|&b| b == 0xA5));

    let mut halves = DeviceBuffer::<[u16; 3]>::new(&ctx, 100).unwrap();
    halves.memset(0xBEEFu16).unwrap();
    assert_eq!(halves.to_vec().unwrap(), vec![[0xBEEFu16; 3]; 100]);

    let mut floats = DeviceBuffer::<f32>::new(&ctx, 1000).unwrap();
    floats.memset(555.0f32.to_bits()).unwrap();
    assert_eq!(floats.to_vec().unwrap(), vec![555.0f32; 1000]);
    let mut wide = DeviceBuffer::<f64>::new(&ctx, 10).unwrap();
    wide.memset(0x4000_0000u32).unwrap();
    assert_eq!(
        wide.to_vec().unwrap(),
        vec![f64::from_bits(0x4000_0000_4000_0000); 10]
    );

    // Async, on a stream.
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    bytes.memset_async(0x11u8, &stream).unwrap();
    halves
        .slice_mut(50..)
        .unwrap()
        .memset_async(0x1234u16, &stream)
        .unwrap();
    floats
        .slice_mut(..500)
        .unwrap()
        .memset_async(7.5f32.to_bits(), &stream)
        .unwrap();
    stream.synchronize().unwrap();
    assert_eq!(bytes.to_vec().unwrap(), vec![0x11u8; 1000]);
    let h = halves.to_vec().unwrap();
    assert_eq!(h[..50], vec![[0xBEEFu16; 3]; 50]);
    assert_eq!(h[50..], vec![[0x1234u16; 3]; 50]);
    let f = floats.to_vec().unwrap();
    assert!(f[..500].iter().all(|&x| x == 7.5));
    assert!(f[500..].iter().all(|&x| x == 555.0));

    // A width that does not divide the element size is refused.
    assert!(matches!(bytes.memset(1u16), Err(Error::MemsetWidth { .. })));
    assert!(matches!(
        halves.memset_async(1u32, &stream),
        Err(Error::MemsetWidth { .. })
    ));
}

#[gpu_test]
fn length_mismatches_are_refused_before_any_call() {
    let ctx = gpu_or_skip!();
    let data = words(8, 8);
    let mut buf = DeviceBuffer::from_slice(&ctx, &data).unwrap();
    let e = buf.copy_from_host(&[1, 2, 3]).unwrap_err();
    assert!(
        matches!(
            e,
            Error::LengthMismatch {
                what: "copy_from_host",
                dst: 8,
                src: 3
            }
        ),
        "{e:?}"
    );
    let mut nine = [0u32; 9];
    let e = buf.copy_to_host(&mut nine).unwrap_err();
    assert!(
        matches!(e, Error::LengthMismatch { dst: 9, src: 8, .. }),
        "{e:?}"
    );
    let small = DeviceBuffer::<u32>::new(&ctx, 4).unwrap();
    let e = buf.copy_from_device(&small.as_view()).unwrap_err();
    assert!(
        matches!(e, Error::LengthMismatch { dst: 8, src: 4, .. }),
        "{e:?}"
    );
    // Nothing was written.
    assert_eq!(buf.to_vec().unwrap(), data);
}

#[gpu_test]
fn out_of_bounds_views_are_errors() {
    let ctx = gpu_or_skip!();
    let mut buf = DeviceBuffer::<u16>::new(&ctx, 10).unwrap();
    let e = buf.slice(3..11).unwrap_err();
    assert!(
        matches!(
            e,
            Error::OutOfBounds {
                start: 3,
                end: 11,
                len: 10
            }
        ),
        "{e:?}"
    );
    let e = buf.slice_mut(11..).unwrap_err();
    assert!(
        matches!(
            e,
            Error::OutOfBounds {
                start: 11,
                end: 10,
                len: 10
            }
        ),
        "{e:?}"
    );
    assert_eq!(buf.slice(10..).unwrap().len(), 0);
}

#[gpu_test]
fn a_buffer_works_from_a_thread_with_no_current_context() {
    let ctx = gpu_or_skip!();
    let data = words(513, 9);
    let mut buf = DeviceBuffer::from_slice(&ctx, &data).unwrap();
    let patch = words(513, 10);
    std::thread::scope(|s| {
        s.spawn(|| {
            assert_eq!(Context::current_raw().unwrap(), None);
            assert_eq!(buf.to_vec().unwrap(), data);
            buf.copy_from_host(&patch).unwrap();
            // The operations pushed and popped the context: this thread's stack is as it was.
            assert_eq!(Context::current_raw().unwrap(), None);
        });
    });
    assert_eq!(buf.to_vec().unwrap(), patch);
    // And dropped on another thread.
    std::thread::scope(|s| {
        s.spawn(move || drop(buf));
    });
}

#[gpu_test]
fn a_buffer_outlives_the_handle_of_its_context() {
    let _ctx = gpu_exclusive_or_skip!();
    let errors = drop_error_count();
    let dev = Device::get(0).unwrap();
    let ctx = Context::new(dev, ContextFlags::SCHED_AUTO).unwrap();
    let raw = ctx.as_raw();
    let data = floats(300, 11);
    let mut buf = DeviceBuffer::from_slice(&ctx, &data).unwrap();
    drop(ctx);
    // The buffer's clone keeps the created context alive.
    assert_eq!(buf.context().as_raw(), raw);
    assert_eq!(buf.to_vec().unwrap(), data);
    buf.memset(3.0f32.to_bits()).unwrap();
    assert_eq!(buf.to_vec().unwrap(), vec![3.0f32; 300]);
    drop(buf); // frees the memory, then destroys the context
    assert_eq!(drop_error_count(), errors);
}

#[gpu_test]
fn memory_returns_to_its_level_after_10_000_alloc_free_pairs() {
    let ctx = gpu_exclusive_or_skip!();
    // Warm up: the first allocations may grow the driver's bookkeeping.
    drop(DeviceBuffer::<u8>::new(&ctx, 1 << 20).unwrap());
    let (free_before, total) = ctx.mem_info().unwrap();
    assert!(free_before <= total && total > 0);
    for _ in 0..10_000 {
        let buf = DeviceBuffer::<u8>::new(&ctx, 1 << 20).unwrap();
        assert_ne!(buf.as_raw(), 0);
    }
    let (free_after, _) = ctx.mem_info().unwrap();
    // A leak would lose 10 000 MiB. Allow 256 MiB: the driver's bookkeeping, and the small
    // buffers of other tests running meanwhile (those that create contexts or pools, which
    // take far more, hold the GPU exclusively, as this test does).
    const SLACK: usize = 256 << 20;
    assert!(
        free_after + SLACK >= free_before,
        "free memory fell from {free_before} to {free_after} bytes"
    );
}

#[gpu_test]
fn an_impossible_allocation_is_out_of_memory_and_the_next_one_works() {
    let ctx = gpu_or_skip!();
    let e = DeviceBuffer::<u8>::new(&ctx, 1 << 50).unwrap_err(); // 1 PiB
    assert_eq!(e.code(), Some(ErrorCode::OUT_OF_MEMORY), "{e:?}");
    assert_eq!(e.call(), Some("cuMemAlloc_v2"));
    let shown = e.to_string();
    assert!(
        shown.contains("cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY"),
        "{shown}"
    );
    assert!(
        shown.contains("memory.rs"),
        "the location is the caller's: {shown}"
    );
    let data = words(256, 12);
    let buf = DeviceBuffer::from_slice(&ctx, &data).unwrap();
    assert_eq!(buf.to_vec().unwrap(), data);
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

#[gpu_test]
fn pinned_memory_flags_mapping_and_memset() {
    let ctx = gpu_or_skip!();
    let flags = PinnedFlags::PORTABLE | PinnedFlags::DEVICEMAP;
    let mut pinned = PinnedBuffer::<f32>::zeroed(&ctx, 256, flags).unwrap();
    assert_eq!(pinned.flags(), flags);
    assert_eq!(pinned.len(), 256);
    assert!(pinned.iter().all(|&x| x == 0.0));
    pinned[0] = 123.0;
    assert_eq!(pinned[0], 123.0);

    // The mapped device address, read by a device-to-device copy.
    let data = floats(256, 15);
    pinned.copy_from_slice(&data);
    let dptr = pinned.device_ptr().unwrap();
    assert_ne!(dptr, 0);
    // SAFETY: `dptr` maps the 256 floats of `pinned`, which lives and is not written until
    // the view is gone; the blocking copies below finish before `to_vec` returns.
    let mapped = unsafe { DeviceSlice::<f32>::from_raw(dptr, 256, &ctx) };
    let mut dev = DeviceBuffer::<f32>::zeroed(&ctx, 256).unwrap();
    dev.copy_from_device(&mapped).unwrap();
    assert_eq!(dev.to_vec().unwrap(), data);

    // The seed's cuMemsetD32 of 555.0f on page-locked memory, safely, on the legacy stream.
    let legacy = Stream::legacy(&ctx);
    pinned
        .with_device_view_mut(&legacy, |mut v| v.memset(555.0f32.to_bits()))
        .unwrap();
    assert!(pinned.iter().all(|&x| x == 555.0));
    // Work queued on the view's stream inside the closure is done when it returns.
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    pinned
        .with_device_view_mut(&stream, |mut v| v.memset_async(0u8, &stream))
        .unwrap();
    assert!(pinned.iter().all(|&x| x == 0.0));
    // The view is ordered on the closure's stream: another stream is refused.
    let e = pinned
        .with_device_view_mut(&stream, |mut v| v.memset_async(1u8, &legacy))
        .unwrap_err();
    assert!(matches!(e, Error::StreamMismatch { .. }), "{e:?}");
    assert!(pinned.iter().all(|&x| x == 0.0));
    // The shared view reads it (a device copy), under the same rules.
    let mut dev = DeviceBuffer::<f32>::zeroed(&ctx, 256).unwrap();
    pinned
        .with_device_view(&stream, |v| {
            dev.as_view_mut().copy_from_device(&v)?;
            Ok(())
        })
        .unwrap();
    assert!(dev.to_vec().unwrap().iter().all(|&x| x == 0.0));
    let mut halves =
        PinnedBuffer::<u16>::from_slice(&ctx, &[1, 2, 3], PinnedFlags::empty()).unwrap();
    halves
        .with_device_view_mut(&legacy, |mut v| v.memset(0xCAFEu16))
        .unwrap();
    assert_eq!(&halves[..], &[0xCAFE; 3]);
    assert!(matches!(
        halves.with_device_view_mut(&legacy, |mut v| v.memset(1u32)),
        Err(Error::MemsetWidth { .. })
    ));
    assert_eq!(&halves[..], &[0xCAFE; 3]);
    // The per-thread default stream names another stream on every thread: refused.
    assert!(matches!(
        halves.with_device_view_mut(&Stream::per_thread(&ctx), |_| Ok(())),
        Err(Error::InvalidStream { .. })
    ));

    // Write-combined memory: written by the host, read by the device.
    let wc_data = words(64, 16);
    let wc = PinnedBuffer::from_slice(&ctx, &wc_data, PinnedFlags::WRITECOMBINED).unwrap();
    let dev = DeviceBuffer::from_slice(&ctx, &wc).unwrap();
    assert_eq!(dev.to_vec().unwrap(), wc_data);
}

#[gpu_test]
fn host_registration_guard() {
    let ctx = gpu_or_skip!();
    let data = words(4096, 17);
    let mut host = data.clone();
    {
        let mut reg = HostRegistration::new(&ctx, &mut host, HostRegisterFlags::DEVICEMAP).unwrap();
        let info = PointerInfo::of_host(reg.as_ptr()).unwrap();
        assert_eq!(info.memory_type, MemoryType::HOST);
        assert_ne!(reg.device_ptr().unwrap(), 0);
        let mut dev = DeviceBuffer::from_slice(&ctx, &reg).unwrap();
        let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
        dev.memset_async(5u32, &stream).unwrap();
        // SAFETY: `reg` is not touched until the stream is synchronised.
        unsafe { dev.copy_to_host_async(&mut reg, &stream).unwrap() };
        stream.synchronize().unwrap();
        assert!(reg.iter().all(|&x| x == 5));
        reg[0] = 42;
    } // unregistered here
    assert_eq!(host[0], 42);
    assert!(host[1..].iter().all(|&x| x == 5));
    if let Ok(info) = PointerInfo::of_host(host.as_ptr()) {
        // Only with heterogeneous memory management; it is no longer registered memory.
        assert_ne!(
            info.context,
            Some(ctx.as_raw()),
            "still registered: {info:?}"
        );
    }

    let reg = HostRegistration::new(&ctx, &mut host, HostRegisterFlags::PORTABLE).unwrap();
    let slice = reg.unregister().unwrap();
    slice[1] = 7;
    assert_eq!(host[1], 7);
}

#[gpu_test]
fn managed_memory_is_read_on_the_host_after_device_writes() {
    let ctx = gpu_or_skip!();
    let dev = ctx.device();
    if dev.attribute(DeviceAttribute::MANAGED_MEMORY).unwrap() == 0 {
        crate::common::skip("managed memory is not supported by this device");
    }
    // 1 KiB, ordered on a created stream (every device accepts it).
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let mut buf = ManagedBuffer::<u32>::zeroed(&stream, 256, AttachFlags::GLOBAL).unwrap();
    assert_eq!(buf.stream().as_raw(), stream.as_raw());
    assert_eq!(buf.as_slice().unwrap(), &[0; 256][..]);
    buf.memset(0xDEAD_BEEFu32).unwrap();
    assert!(buf.as_slice().unwrap().iter().all(|&x| x == 0xDEAD_BEEF));
    let data = words(256, 18);
    buf.as_mut_slice().unwrap().copy_from_slice(&data);
    assert_eq!(buf.to_vec().unwrap(), data);
    // Work queued on its stream is seen by the host access, which waits for that stream.
    buf.memset_async(7u32, &stream).unwrap();
    assert!(buf.as_slice().unwrap().iter().all(|&x| x == 7));
    buf.as_mut_slice().unwrap().copy_from_slice(&data);

    let info = PointerInfo::query(buf.as_raw()).unwrap();
    assert_eq!(info.device_ordinal, 0);

    // Advice and prefetch are hints: contents stay.
    buf.advise(MemAdvice::SET_READ_MOSTLY, MemLocation::device(dev))
        .unwrap();
    buf.advise(MemAdvice::SET_PREFERRED_LOCATION, MemLocation::host())
        .unwrap();
    if dev
        .attribute(DeviceAttribute::CONCURRENT_MANAGED_ACCESS)
        .unwrap()
        != 0
    {
        buf.prefetch(MemLocation::device(dev)).unwrap();
        buf.prefetch(MemLocation::host()).unwrap();
    }
    assert_eq!(buf.to_vec().unwrap(), data);

    // Allocated from host data, attached to the host.
    let from = ManagedBuffer::from_slice(&stream, &data, AttachFlags::HOST).unwrap();
    assert_eq!(from.as_slice().unwrap(), &data[..]);
}

#[gpu_test]
fn pointer_attributes() {
    let ctx = gpu_or_skip!();
    let buf = DeviceBuffer::<f64>::new(&ctx, 32).unwrap();
    let info = PointerInfo::query(buf.as_raw()).unwrap();
    assert_eq!(info.memory_type, MemoryType::DEVICE);
    assert_eq!(info.device_ordinal, 0);
    assert_eq!(info.context, Some(ctx.as_raw()));
    // An address inside the allocation.
    let inner = PointerInfo::query(buf.slice(5..).unwrap().as_raw()).unwrap();
    assert_eq!(inner, info);

    let pinned = PinnedBuffer::<u8>::zeroed(&ctx, 100, PinnedFlags::empty()).unwrap();
    let info = PointerInfo::of_host(pinned.as_ptr()).unwrap();
    assert_eq!(info.memory_type, MemoryType::HOST);
    assert_eq!(info.device_ordinal, 0);

    // Memory CUDA does not know: an error, except where heterogeneous memory management
    // makes all host memory addressable (then it is not page-locked memory of a context).
    match PointerInfo::of_host(&0u64 as *const u64) {
        Err(e) => assert_eq!(e.code(), Some(ErrorCode::INVALID_VALUE), "{e:?}"),
        Ok(info) => assert_ne!(info.context, Some(ctx.as_raw()), "{info:?}"),
    }
}

#[gpu_test]
fn copies_between_contexts_with_cu_memcpy_peer() {
    let ctx = gpu_exclusive_or_skip!();
    let data = words(2048, 19);
    let src = DeviceBuffer::from_slice(&ctx, &data).unwrap();

    // Two contexts of one device.
    let other = Context::new(ctx.device(), ContextFlags::SCHED_AUTO).unwrap();
    let mut dst = DeviceBuffer::<u32>::zeroed(&other, 2048).unwrap();
    dst.copy_from_peer(&src.as_view()).unwrap();
    assert_eq!(dst.to_vec().unwrap(), data);
    let stream = Stream::new(&other, StreamFlags::NON_BLOCKING).unwrap();
    dst.memset_async(0u32, &stream).unwrap();
    dst.slice_mut(1000..)
        .unwrap()
        .copy_from_peer_async(&src.slice(..1048).unwrap(), &stream)
        .unwrap();
    stream.synchronize().unwrap();
    let got = dst.to_vec().unwrap();
    assert!(got[..1000].iter().all(|&x| x == 0));
    assert_eq!(got[1000..], data[..1048]);
    let e = dst.copy_from_peer(&src.slice(1..).unwrap()).unwrap_err();
    assert!(matches!(
        e,
        Error::LengthMismatch {
            dst: 2048,
            src: 2047,
            ..
        }
    ));

    // Two devices, where there are two.
    if Device::count().unwrap() >= 2 {
        let dev1 = Device::get(1).unwrap();
        let ctx1 = dev1.primary_context().unwrap();
        if ctx.device().can_access_peer(dev1).unwrap() {
            match ctx1.enable_peer_access(&ctx) {
                Ok(()) => {}
                Err(e) if e.code() == Some(ErrorCode::PEER_ACCESS_ALREADY_ENABLED) => {}
                Err(e) => panic!("{e}"),
            }
        }
        let mut far = DeviceBuffer::<u32>::zeroed(&ctx1, 2048).unwrap();
        far.copy_from_peer(&src.as_view()).unwrap();
        assert_eq!(far.to_vec().unwrap(), data);
        let mut back = DeviceBuffer::<u32>::zeroed(&ctx, 2048).unwrap();
        back.copy_from_peer(&far.as_view()).unwrap();
        assert_eq!(back.to_vec().unwrap(), data);
    }
}

#[gpu_test]
fn every_kind_of_memory_drops_without_errors() {
    let ctx = gpu_exclusive_or_skip!();
    let before = drop_error_count();
    let stream = Stream::new(&ctx, StreamFlags::DEFAULT).unwrap();
    let pool = MemPool::new(ctx.device()).unwrap();
    let a = pool.alloc_async::<u8>(&stream, 1000).unwrap();
    let b = DeviceBuffer::<u8>::new_async(&stream, 1000).unwrap();
    let c = PinnedBuffer::<u8>::zeroed(&ctx, 1000, PinnedFlags::empty()).unwrap();
    let d = ManagedBuffer::<u8>::zeroed(&stream, 1000, AttachFlags::GLOBAL).unwrap();
    drop((a, b, c, d));
    drop(pool);
    stream.synchronize().unwrap();
    drop(stream);
    assert_eq!(drop_error_count(), before);
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

/// Blocks `stream` with a host function until the returned sender is dropped (or used): work
/// queued after it stays pending until then. Dropping the sender on a panic unblocks it too,
/// and the host function gives up after 10 s, so that a test whose expectation is wrong (a
/// call that waits for the blocked work) fails instead of hanging.
fn block(stream: &Stream) -> mpsc::Sender<()> {
    let (tx, rx) = mpsc::channel::<()>();
    stream
        .launch_host_fn(move || {
            let _ = rx.recv_timeout(Duration::from_secs(10));
        })
        .unwrap();
    tx
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

/// Issue #23 hole 2, first half: the device view of page-locked memory waited for the whole
/// context (`cuCtxSynchronize`), which fails, and invalidates the capture, while another
/// thread captures a stream of the context. Now it waits for the view's stream only: the
/// other thread's capture goes on and yields its graph.
#[gpu_test]
fn page_locked_device_view_waits_for_its_stream_not_another_threads_capture() {
    let ctx = gpu_exclusive_or_skip!();
    let mine = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let theirs = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let mut pinned = PinnedBuffer::<u32>::zeroed(&ctx, 4096, PinnedFlags::empty()).unwrap();
    let (begun_tx, begun_rx) = mpsc::channel::<()>();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    std::thread::scope(|scope| {
        let capturer = scope.spawn(move || {
            // SAFETY: the captured work uses no device memory.
            unsafe { theirs.begin_capture(CaptureMode::RELAXED) }.unwrap();
            theirs.launch_host_fn_repeatable(|| ()).unwrap();
            begun_tx.send(()).unwrap();
            let _ = done_rx.recv();
            theirs.end_capture()
        });
        begun_rx.recv().unwrap();
        let r = pinned.with_device_view_mut(&mine, |mut v| v.memset_async(9u32, &mine));
        done_tx.send(()).unwrap();
        let graph = capturer.join().unwrap();
        r.unwrap();
        assert!(pinned.iter().all(|&x| x == 9));
        if let Err(e) = graph {
            panic!("the other thread's capture was invalidated: {e}");
        }
    });
}

/// Issue #23 hole 2, second half: when the closing wait of a device view fails while the work
/// queued through the view is pending, the buffer used to return the error and hand the
/// memory back to the host (`Deref`) while the device could still write it. Now it is
/// poisoned: emptied, its memory leaked (never freed, never reachable from the host), the
/// problem counted. The wait is made to fail by beginning a capture of the view's stream
/// inside the closure, after a memset held back behind a blocked host function.
#[gpu_test]
fn a_failed_wait_poisons_page_locked_memory_instead_of_handing_it_back() {
    let ctx = gpu_exclusive_or_skip!();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let mut pinned =
        PinnedBuffer::<u32>::from_slice(&ctx, &[1; 4096], PinnedFlags::empty()).unwrap();
    let before = drop_error_count();
    let gate = block(&s);
    let r = pinned.with_device_view_mut(&s, |mut v| {
        v.memset_async(0xBAD0_BAD0u32, &s)?; // pending behind the blocked host function
                                             // SAFETY: nothing is queued on `s` while it is captured; the capture ends below.
        unsafe { s.begin_capture(CaptureMode::RELAXED) }
    });
    let e = r.unwrap_err();
    crate::common::note(format!("the closing wait failed: {e}"));
    // The memset is still pending: the buffer hands out none of the memory.
    assert_eq!(pinned.len(), 0);
    assert!(pinned.is_empty());
    assert!(pinned.iter().next().is_none());
    assert_eq!(drop_error_count(), before + 1, "the leak is counted");
    let _ = s.end_capture(); // invalidated by the failed synchronisation
    assert_eq!(s.capture_status().unwrap(), CaptureStatus::NONE);
    drop(gate); // the memset runs now, into the leaked memory
    s.synchronize().unwrap();
    // The poisoned buffer stays usable, empty, and drops without freeing anything.
    pinned
        .with_device_view_mut(&s, |v| {
            assert!(v.is_empty());
            Ok(())
        })
        .unwrap();
    drop(pinned);
    assert_eq!(drop_error_count(), before + 1);
}

/// Hole 2 for registered memory: after a failed closing wait the guard empties itself and
/// leaves the memory registered (the pending work must not fault), never unregistering it.
#[gpu_test]
fn a_failed_wait_empties_a_host_registration_and_leaves_it_registered() {
    let ctx = gpu_exclusive_or_skip!();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    // Leaked: after the failed wait the device writes it later, and it stays registered.
    let host: &'static mut [u32] = Box::leak(vec![1u32; 4096].into_boxed_slice());
    let addr = host.as_ptr();
    let mut reg = HostRegistration::new(&ctx, host, HostRegisterFlags::DEVICEMAP).unwrap();
    // SAFETY: the wait succeeds (checked: the guard is not emptied), so nothing is pending.
    unsafe { reg.with_device_view_mut(&s, |mut v| v.memset_async(2u32, &s)) }.unwrap();
    assert!(reg.iter().all(|&x| x == 2));
    let before = drop_error_count();
    let gate = block(&s);
    let queue_then_capture = |mut v: DeviceSliceMut<'_, u32>| {
        v.memset_async(3u32, &s)?;
        // SAFETY: nothing is queued on `s` while it is captured; the capture ends below.
        unsafe { s.begin_capture(CaptureMode::RELAXED) }
    };
    // SAFETY: after the failure the memory is only looked up by address, never read, written
    // or freed (it is leaked).
    let r = unsafe { reg.with_device_view_mut(&s, queue_then_capture) };
    assert!(r.is_err());
    assert!(reg.is_empty(), "the guard still hands out the memory");
    assert_eq!(drop_error_count(), before + 1);
    let _ = s.end_capture();
    drop(gate);
    s.synchronize().unwrap();
    drop(reg);
    // Never unregistered: still page-locked memory of the context.
    let info = PointerInfo::of_host(addr).unwrap();
    assert_eq!(info.memory_type, MemoryType::HOST);
    assert_eq!(info.context, Some(ctx.as_raw()));
    assert_eq!(drop_error_count(), before + 1);
}

/// Issue #23, "host access waits for the work that uses the memory": managed memory's host
/// access synchronised the whole context, which fails, and invalidates the capture, while
/// another thread captures. Now it waits for the buffer's stream only.
#[gpu_test]
fn managed_host_access_waits_for_its_stream_not_another_threads_capture() {
    let ctx = gpu_exclusive_or_skip!();
    crate::common::require_attribute(
        ctx.device(),
        DeviceAttribute::MANAGED_MEMORY,
        "managed memory is not supported by this device",
    );
    let mine = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let theirs = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let mut m = ManagedBuffer::<u32>::zeroed(&mine, 4096, AttachFlags::GLOBAL).unwrap();
    let (begun_tx, begun_rx) = mpsc::channel::<()>();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    std::thread::scope(|scope| {
        let capturer = scope.spawn(move || {
            // SAFETY: the captured work uses no device memory.
            unsafe { theirs.begin_capture(CaptureMode::RELAXED) }.unwrap();
            theirs.launch_host_fn_repeatable(|| ()).unwrap();
            begun_tx.send(()).unwrap();
            let _ = done_rx.recv();
            theirs.end_capture()
        });
        begun_rx.recv().unwrap();
        m.memset_async(6u32, &mine).unwrap();
        let seen = m.to_vec();
        let written = m.as_mut_slice().map(|h| h.fill(8));
        done_tx.send(()).unwrap();
        let graph = capturer.join().unwrap();
        assert!(seen.unwrap().iter().all(|&x| x == 6));
        written.unwrap();
        assert!(m.as_slice().unwrap().iter().all(|&x| x == 8));
        if let Err(e) = graph {
            panic!("the other thread's capture was invalidated: {e}");
        }
    });
}

/// Managed memory's host access when its stream cannot be waited for (it is being captured,
/// while a memset is pending on it): an error and no reference, never the memory.
#[gpu_test]
fn managed_host_access_is_refused_while_its_stream_cannot_be_waited_for() {
    let ctx = gpu_exclusive_or_skip!();
    crate::common::require_attribute(
        ctx.device(),
        DeviceAttribute::MANAGED_MEMORY,
        "managed memory is not supported by this device",
    );
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let mut m = ManagedBuffer::<u32>::zeroed(&s, 4096, AttachFlags::GLOBAL).unwrap();
    let gate = block(&s);
    m.memset_async(5u32, &s).unwrap(); // pending behind the blocked host function
                                       // SAFETY: nothing is queued on `s` while it is captured; the capture ends below.
    unsafe { s.begin_capture(CaptureMode::RELAXED) }.unwrap();
    assert!(
        m.as_slice().is_err(),
        "host access while the memset is pending"
    );
    // Later attempts fail the same way while the (invalidated) capture lasts; should one wait
    // instead, the memset must be done when it returns.
    if let Ok(v) = m.to_vec() {
        assert!(v.iter().all(|&x| x == 5));
    }
    if let Ok(h) = m.as_mut_slice() {
        assert!(h.iter().all(|&x| x == 5));
    }
    let _ = s.end_capture();
    drop(gate);
    assert!(m.as_slice().unwrap().iter().all(|&x| x == 5));
}

/// Managed memory is ordered on its stream: another stream is refused until the buffer is
/// moved there, the move orders the new stream after the old one's work, and a stream of
/// another context (its null stream included) is refused with the buffer given back.
#[gpu_test]
fn managed_memory_moves_between_streams_of_its_context_only() {
    let ctx = gpu_exclusive_or_skip!();
    crate::common::require_attribute(
        ctx.device(),
        DeviceAttribute::MANAGED_MEMORY,
        "managed memory is not supported by this device",
    );
    let a = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let b = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let mut m = ManagedBuffer::<u32>::zeroed(&a, 1 << 16, AttachFlags::GLOBAL).unwrap();
    assert!(matches!(
        m.memset_async(1u32, &b),
        Err(Error::StreamMismatch { .. })
    ));
    let gate = block(&a);
    m.memset_async(3u32, &a).unwrap(); // pending on `a`
    let m = m.move_to_stream(&b).unwrap();
    assert_eq!(m.stream().as_raw(), b.as_raw());
    // Host access now waits for `b`, which waits for `a`'s memset: released a little later,
    // so that a host access not ordered after it would read zeros.
    let opener = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        drop(gate);
    });
    assert!(
        m.as_slice().unwrap().iter().all(|&x| x == 3),
        "host access did not wait for the old stream's work"
    );
    opener.join().unwrap();

    let other = Context::new(ctx.device(), ContextFlags::SCHED_AUTO).unwrap();
    let theirs = Stream::legacy(&other);
    let err = m.move_to_stream(&theirs).unwrap_err();
    assert!(
        matches!(err.error, Error::ContextMismatch { .. }),
        "{err:?}"
    );
    let mut m = err.buffer;
    assert_eq!(m.stream().as_raw(), b.as_raw());
    m.memset_async(4u32, &b).unwrap();
    assert!(m.to_vec().unwrap().iter().all(|&x| x == 4));
}

/// The rule for blocking operations (issue #23): a blocking copy of memory not ordered on a
/// stream runs on the default stream, so it is ordered after the work of blocking streams but
/// not after that of `NON_BLOCKING` streams, whose work it sees once the stream is
/// synchronised.
#[gpu_test]
fn blocking_copies_follow_blocking_streams_not_non_blocking_ones() {
    let ctx = gpu_exclusive_or_skip!();
    let mut buf = DeviceBuffer::<u32>::zeroed(&ctx, 1 << 20).unwrap();
    if !cfg!(feature = "per-thread-default-stream") {
        // A blocking stream: the copy on the (legacy) default stream waits for its memset,
        // held back a while so that a copy not ordered after it would read zeros.
        let blocking = Stream::new(&ctx, StreamFlags::DEFAULT).unwrap();
        let gate = block(&blocking);
        buf.memset_async(7u32, &blocking).unwrap();
        let opener = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            drop(gate);
        });
        assert!(
            buf.to_vec().unwrap().iter().all(|&x| x == 7),
            "a blocking copy was not ordered after a blocking stream's memset"
        );
        opener.join().unwrap();
    } else {
        buf.memset(7u32).unwrap();
    }
    // A non-blocking stream: its memset is held back until the copy has returned, which it
    // does without waiting (a copy that waited would see the memset once the gate gives up).
    let non_blocking = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let gate = block(&non_blocking);
    buf.memset_async(9u32, &non_blocking).unwrap();
    let before_sync = buf.to_vec().unwrap();
    drop(gate);
    assert!(
        before_sync.iter().all(|&x| x == 7),
        "the blocking copy waited for a non-blocking stream's work"
    );
    // Once that stream is synchronised, the blocking copy sees its work.
    non_blocking.synchronize().unwrap();
    assert!(buf.to_vec().unwrap().iter().all(|&x| x == 9));
}
