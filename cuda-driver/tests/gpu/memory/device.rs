//! GPU tests: device memory: buffers, their views and bounds, allocation failures and leaks,
//! buffers used from other threads and after their context's handle is gone.

use cuda_driver::prelude::*;
use cuda_driver::{
    error::drop_error_count, types::ContextFlags, types::ErrorCode, Context, Device, DeviceBuffer,
    Error,
};

use crate::memory::{floats, words};

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
        shown.contains(file!()),
        "the location is the caller's: {shown}"
    );
    let data = words(256, 12);
    let buf = DeviceBuffer::from_slice(&ctx, &data).unwrap();
    assert_eq!(buf.to_vec().unwrap(), data);
}
