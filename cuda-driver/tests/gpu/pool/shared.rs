//! GPU tests: stream-ordered memory read by several streams at once
//! (`AsyncDeviceBuffer::read_on_streams`), as the graphMemoryNodes sample reads one allocation
//! with a kernel on one stream and a copy on another, and the free ordered after every reader.

use std::sync::mpsc;

use cuda_driver::prelude::*;
use cuda_driver::{
    error::drop_error_count, types::ContextFlags, types::StreamFlags, Context, DeviceBuffer, Error,
    LaunchConfig, Stream,
};

use crate::graph::kernels;

/// graphMemoryNodes' pattern: a kernel on stream 1 and a copy on stream 2 read the same
/// stream-ordered allocation at the same time; the buffer is then written and freed on stream 1.
#[gpu_test]
fn two_streams_read_one_stream_ordered_buffer_then_it_is_freed_after_both() {
    let ctx = gpu_or_skip!();
    const N: usize = 1 << 16;
    let s1 = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let s2 = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let m = kernels(&ctx);
    let inc = m.function("inc").unwrap();
    let mut a = DeviceBuffer::<i32>::new_async(&s1, N).unwrap();
    a.memset_async(5u32, &s1).unwrap();
    let mut by_kernel = DeviceBuffer::<i32>::zeroed(&ctx, N).unwrap();
    let mut by_copy = DeviceBuffer::<i32>::zeroed(&ctx, N).unwrap();
    let cfg = LaunchConfig::for_num_elems(N).unwrap();
    let n = N as i32;
    a.read_on_streams(&[&s1, &s2], |views| -> cuda_driver::Result<()> {
        // Stream 1: copy then add 1 in place (a kernel reading a's copy); stream 2: a copy.
        by_kernel.copy_from_device_async(&views[0], &s1)?;
        // SAFETY: inc(int*, int) touches n elements of by_kernel, live past the sync below.
        unsafe { inc.launch(&s1, &cfg, (by_kernel.as_view_mut(), &n))? };
        by_copy.copy_from_device_async(&views[1], &s2)?;
        // A view is ordered on its own stream only.
        assert!(matches!(
            by_copy.copy_from_device_async(&views[0], &s2),
            Err(Error::StreamMismatch { .. })
        ));
        Ok(())
    })
    .unwrap()
    .unwrap();
    // Written on stream 1 after both reads, then freed there.
    a.memset_async(9u32, &s1).unwrap();
    drop(a);
    s1.synchronize().unwrap();
    s2.synchronize().unwrap();
    assert!(by_copy.to_vec().unwrap().iter().all(|&x| x == 5));
    assert!(by_kernel.to_vec().unwrap().iter().all(|&x| x == 6));
}

/// The hostile order: the reader on stream 2 is held back by a blocked host function; the
/// buffer is freed on stream 1 and the pool hands its memory to a new allocation that stream
/// 1 overwrites. The free waits for the reader, so the reader still copies the old data.
#[gpu_test]
fn the_free_waits_for_a_reader_held_back_on_another_stream() {
    let ctx = gpu_exclusive_or_skip!();
    const N: usize = 4 << 20;
    let s1 = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let s2 = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let mut a = DeviceBuffer::<u32>::new_async(&s1, N).unwrap();
    a.memset_async(0x0A0A_0A0Au32, &s1).unwrap();
    let mut out = DeviceBuffer::<u32>::zeroed(&ctx, N).unwrap();
    let (tx, rx) = mpsc::channel::<()>();
    a.read_on_streams(&[&s2], |views| {
        s2.launch_host_fn(move || {
            let _ = rx.recv();
        })
        .unwrap();
        out.copy_from_device_async(&views[0], &s2).unwrap();
    })
    .unwrap();
    drop(a); // cuMemFreeAsync on s1, after s2's copy
    let mut fresh = DeviceBuffer::<u32>::new_async(&s1, N).unwrap();
    fresh.memset_async(1u32, &s1).unwrap();
    // Released from another thread: the driver may block a call above until s2 runs.
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let _ = tx.send(());
    });
    s2.synchronize().unwrap();
    s1.synchronize().unwrap();
    assert!(
        out.to_vec().unwrap().iter().all(|&x| x == 0x0A0A_0A0A),
        "the reader on another stream copied memory freed and reused under it"
    );
    assert!(fresh.to_vec().unwrap().iter().all(|&x| x == 1));
}

/// Streams of another context (their null stream included) and the per-thread default stream
/// are refused before anything is queued; the buffer stays usable. A panic in the closure
/// goes on after the readers are joined; the buffer is still freed on its stream.
#[gpu_test]
fn other_contexts_and_the_per_thread_stream_are_refused_and_a_panic_still_joins() {
    let ctx = gpu_exclusive_or_skip!();
    let other = Context::new(ctx.device(), ContextFlags::SCHED_AUTO).unwrap();
    let s1 = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let s2 = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let theirs = Stream::new(&other, StreamFlags::NON_BLOCKING).unwrap();
    let before = drop_error_count();
    let mut a = DeviceBuffer::<u32>::new_async(&s1, 1024).unwrap();
    a.memset_async(3u32, &s1).unwrap();
    let mut called = false;
    let (legacy, per_thread) = (Stream::legacy(&other), Stream::per_thread(&ctx));
    for bad in [&theirs, &*legacy, &*per_thread] {
        let e = a
            .read_on_streams(&[&s2, bad], |_| called = true)
            .unwrap_err();
        assert!(
            matches!(
                e,
                Error::ContextMismatch { .. } | Error::InvalidStream { .. }
            ),
            "{e:?}"
        );
    }
    assert!(!called);
    // The buffer's own stream, listed twice, and another stream twice: one view each.
    let lens = a
        .read_on_streams(&[&s1, &s2, &s1, &s2], |v| {
            v.iter().map(|x| x.len()).sum::<usize>()
        })
        .unwrap();
    assert_eq!(lens, 4 * 1024);
    // A panic in the closure: the readers are joined, the panic goes on.
    let mut out = DeviceBuffer::<u32>::zeroed(&ctx, 1024).unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        a.read_on_streams(&[&s2], |v| {
            out.copy_from_device_async(&v[0], &s2).unwrap();
            panic!("reader panicked");
        })
    }));
    assert!(r.is_err());
    assert!(a.to_vec().unwrap().iter().all(|&x| x == 3));
    // Dropped on another thread: freed on its own stream.
    std::thread::scope(|sc| {
        sc.spawn(move || drop(a));
    });
    s1.synchronize().unwrap();
    s2.synchronize().unwrap();
    assert!(out.to_vec().unwrap().iter().all(|&x| x == 3));
    assert_eq!(drop_error_count(), before);
}
