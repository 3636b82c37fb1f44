//! Contexts: cuCtxCreate_v4 parameters, flags, ids, devices, limits, L2, context events,
//! execution affinity, and contexts created on one thread and used on workers.

use cuda_driver::prelude::*;
use cuda_driver::{
    Context, ContextCreateParams, ContextFlags, DeviceBuffer, Error, Event, EventFlags,
    ExecAffinityType, Limit, Stream, StreamFlags,
};

#[gpu_test]
fn create_with_params_flags_ids_and_devices() {
    let ctx = gpu_or_skip!();
    let dev = ctx.device();
    let before = Context::current_raw().unwrap();
    let c = match Context::with_params(dev, ContextFlags::SCHED_AUTO, &ContextCreateParams::new()) {
        Err(e @ Error::Unsupported { .. }) => {
            crate::common::skip(format!("the driver is too old for this call: {e}"))
        }
        r => r.unwrap(),
    };
    // Floating: the caller's stack is unchanged.
    assert_eq!(Context::current_raw().unwrap(), before);
    assert!(!c.is_current().unwrap());
    assert_ne!(c.id().unwrap(), ctx.id().unwrap());
    assert_eq!(c.query_device().unwrap(), dev);
    if let Ok(d) = c.query_device_direct() {
        assert_eq!(d, dev);
    }
    c.set_flags(ContextFlags::SCHED_BLOCKING_SYNC).unwrap();
    assert!(c
        .flags()
        .unwrap()
        .contains(ContextFlags::SCHED_BLOCKING_SYNC));
    // Bad flags: an error, and the context still works.
    assert!(c.set_flags(ContextFlags::from_raw(0x4000_0000)).is_err());
    let b = DeviceBuffer::from_slice(&c, &[7u8; 4]).unwrap();
    assert_eq!(b.to_vec().unwrap(), [7; 4]);
    if let Ok(()) = c.synchronize_direct() {}
    assert!(c.api_version().unwrap() >= 3020);
}

#[gpu_test]
fn limits_l2_and_affinity() {
    let ctx = gpu_or_skip!();
    let c = Context::new(ctx.device(), ContextFlags::SCHED_AUTO).unwrap();
    for (l, v) in [
        (Limit::STACK_SIZE, 4096usize),
        (Limit::PRINTF_FIFO_SIZE, 2 << 20),
        (Limit::MALLOC_HEAP_SIZE, 16 << 20),
    ] {
        c.set_limit(l, v).unwrap();
        assert!(c.limit(l).unwrap() >= v, "{l:?}");
    }
    for l in [
        Limit::DEV_RUNTIME_SYNC_DEPTH,
        Limit::DEV_RUNTIME_PENDING_LAUNCH_COUNT,
        Limit::MAX_L2_FETCH_GRANULARITY,
        Limit::PERSISTING_L2_CACHE_SIZE,
    ] {
        let _ = c.limit(l);
    }
    c.reset_persisting_l2_cache().unwrap();
    let sms = ctx
        .device()
        .attribute(cuda_driver::DeviceAttribute::MULTIPROCESSOR_COUNT)
        .unwrap();
    assert_eq!(c.exec_affinity_sm_count().unwrap() as i32, sms);
    let _ = ctx
        .device()
        .supports_exec_affinity(ExecAffinityType::SM_COUNT)
        .unwrap();
    let (least, greatest) = c.stream_priority_range().unwrap();
    assert!(greatest <= least);
}

#[gpu_test]
fn context_record_and_wait_event() {
    let ctx = gpu_or_skip!();
    let e = Event::new(&ctx, EventFlags::DEFAULT).unwrap();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let mut b = DeviceBuffer::<u32>::zeroed(&ctx, 1 << 20).unwrap();
    b.memset_async(5u32, &s).unwrap();
    match ctx.record_event(&e) {
        Err(e @ Error::Unsupported { .. }) => {
            crate::common::skip(format!("the driver is too old for this call: {e}"))
        }
        r => r.unwrap(),
    }
    ctx.wait_event(&e).unwrap();
    e.synchronize().unwrap();
    assert!(s.query().unwrap());
    assert_eq!(b.to_vec().unwrap()[12345], 5);
}

/// NVIDIA's threadMigration, safely: contexts created here, used by worker threads.
#[gpu_test]
fn contexts_migrate_to_worker_threads() {
    let ctx = gpu_or_skip!();
    let ctxs: Vec<Context> = (0..2)
        .map(|_| Context::new(ctx.device(), ContextFlags::SCHED_AUTO).unwrap())
        .collect();
    let handles: Vec<_> = ctxs
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            std::thread::spawn(move || {
                let b = DeviceBuffer::from_slice(&c, &[i as u32; 64]).unwrap();
                b.to_vec().unwrap()
            })
        })
        .collect();
    for (i, h) in handles.into_iter().enumerate() {
        assert_eq!(h.join().unwrap(), vec![i as u32; 64]);
    }
}
