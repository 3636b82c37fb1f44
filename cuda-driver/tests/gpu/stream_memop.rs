//! Stream queries, attributes and memory operations, events with flags.

use cuda_driver::prelude::*;
use cuda_driver::{
    DeviceAttribute, DeviceBuffer, Error, Event, EventFlags, EventRecordFlags, EventWaitFlags,
    MemOpBatch, Stream, StreamFlags, StreamWaitValueFlags, StreamWriteValueFlags,
    SynchronizationPolicy,
};

#[gpu_test]
fn stream_queries_and_attributes() {
    let ctx = gpu_or_skip!();
    let (_, greatest) = ctx.stream_priority_range().unwrap();
    let s = Stream::with_priority(&ctx, StreamFlags::NON_BLOCKING, greatest).unwrap();
    let t = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    assert_ne!(s.id().unwrap(), t.id().unwrap());
    assert_eq!(s.query_context().unwrap(), ctx.as_raw());
    if let Ok(d) = s.device() {
        assert_eq!(d, ctx.device());
    }
    assert_eq!(s.priority_attribute().unwrap(), greatest);
    s.set_synchronization_policy(SynchronizationPolicy::BLOCKING_SYNC)
        .unwrap();
    assert_eq!(
        s.synchronization_policy().unwrap(),
        SynchronizationPolicy::BLOCKING_SYNC
    );
    t.copy_attributes_from(&s).unwrap();
    assert_eq!(
        t.synchronization_policy().unwrap(),
        SynchronizationPolicy::BLOCKING_SYNC
    );
    let w = s.access_policy_window().unwrap();
    assert_eq!(w.num_bytes, 0);
    // Bad input: a window larger than the device allows.
    let max = ctx
        .device()
        .attribute(DeviceAttribute::MAX_ACCESS_POLICY_WINDOW_SIZE)
        .unwrap();
    let mut bad = w;
    bad.num_bytes = max as usize * 4 + 4096;
    bad.hit_ratio = 1.0;
    assert!(s.set_access_policy_window(bad).is_err());
    s.synchronize().unwrap();
}

#[gpu_test]
fn write_and_wait_values() {
    let ctx = gpu_or_skip!();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let mut flag = DeviceBuffer::<u32>::zeroed(&ctx, 1).unwrap();
    let mut data = DeviceBuffer::<u32>::zeroed(&ctx, 4).unwrap();
    s.write_value_u32(&mut flag.as_view_mut(), 42, StreamWriteValueFlags::empty())
        .unwrap();
    s.wait_value_u32(&flag.as_view(), 42, StreamWaitValueFlags::EQ)
        .unwrap();
    data.memset_async(9u32, &s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(flag.to_vec().unwrap(), [42]);
    assert_eq!(data.to_vec().unwrap(), [9; 4]);
    let mut w64 = DeviceBuffer::<u64>::zeroed(&ctx, 1).unwrap();
    match s.write_value_u64(
        &mut w64.as_view_mut(),
        u64::MAX - 1,
        StreamWriteValueFlags::empty(),
    ) {
        Err(Error::FeatureUnsupported { .. }) => {}
        r => {
            r.unwrap();
            s.wait_value_u64(&w64.as_view(), u64::MAX - 1, StreamWaitValueFlags::GEQ)
                .unwrap();
            s.synchronize().unwrap();
            assert_eq!(w64.to_vec().unwrap(), [u64::MAX - 1]);
        }
    }
    // A batch: write 1 then 2 to two words.
    let mut a = DeviceBuffer::<u32>::zeroed(&ctx, 1).unwrap();
    let mut b = DeviceBuffer::<u32>::zeroed(&ctx, 1).unwrap();
    let (mut va, mut vb) = (a.as_view_mut(), b.as_view_mut());
    let mut batch = MemOpBatch::new();
    batch
        .write_u32(&mut va, 1, StreamWriteValueFlags::empty())
        .unwrap();
    batch
        .write_u32(&mut vb, 2, StreamWriteValueFlags::empty())
        .unwrap();
    s.batch_mem_ops(&mut batch).unwrap();
    s.synchronize().unwrap();
    drop(batch);
    assert_eq!(
        (a.to_vec().unwrap(), b.to_vec().unwrap()),
        (vec![1], vec![2])
    );
    // Bad input: an empty view.
    let empty = DeviceBuffer::<u32>::zeroed(&ctx, 0).unwrap();
    assert!(matches!(
        s.wait_value_u32(&empty.as_view(), 0, StreamWaitValueFlags::GEQ),
        Err(Error::OutOfBounds { .. })
    ));
    s.synchronize().unwrap();
}

#[gpu_test]
fn events_with_flags_and_both_elapsed_abis() {
    let ctx = gpu_or_skip!();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let a = Event::new(&ctx, EventFlags::DEFAULT).unwrap();
    let b = Event::new(&ctx, EventFlags::DEFAULT).unwrap();
    a.record_with_flags(&s, EventRecordFlags::DEFAULT).unwrap();
    let mut buf = DeviceBuffer::<u32>::zeroed(&ctx, 1 << 22).unwrap();
    buf.memset_async(1u32, &s).unwrap();
    b.record_with_flags(&s, EventRecordFlags::DEFAULT).unwrap();
    let t = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    t.wait_event_with_flags(&b, EventWaitFlags::DEFAULT)
        .unwrap();
    t.synchronize().unwrap();
    assert!(b.query().unwrap());
    let ms = a.elapsed_ms(&b).unwrap();
    assert!(ms >= 0.0);
    if let Ok(ms2) = a.elapsed_ms_v2(&b) {
        assert!((ms2 - ms).abs() < 1e-3, "{ms} vs {ms2}");
    }
    // EXTERNAL outside capture is refused; the stream still works.
    assert!(a.record_with_flags(&s, EventRecordFlags::EXTERNAL).is_err());
    s.synchronize().unwrap();
}

/// Issue 23: a batch of more than `MAX_BATCH_MEM_OPS` operations is refused before the
/// driver is called (`ResourceExhausted`), a full batch is either run or refused by the
/// driver, and the stream stays usable either way.
#[gpu_test]
fn a_batch_of_too_many_mem_ops_is_refused_and_the_stream_stays_usable() {
    use cuda_driver::{StreamMemoryBarrierFlags, MAX_BATCH_MEM_OPS};
    let ctx = gpu_or_skip!();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let mut batch = MemOpBatch::new();
    for _ in 0..=MAX_BATCH_MEM_OPS {
        batch.barrier(StreamMemoryBarrierFlags::GPU);
    }
    match s.batch_mem_ops(&mut batch) {
        Err(Error::ResourceExhausted {
            asked, available, ..
        }) => {
            assert_eq!(
                (asked, available),
                (MAX_BATCH_MEM_OPS + 1, MAX_BATCH_MEM_OPS)
            );
        }
        r => panic!("a batch of {} operations: {r:?}", MAX_BATCH_MEM_OPS + 1),
    }
    let mut full = MemOpBatch::new();
    for _ in 0..MAX_BATCH_MEM_OPS {
        full.barrier(StreamMemoryBarrierFlags::GPU);
    }
    match s.batch_mem_ops(&mut full) {
        Ok(()) => crate::common::note("the driver ran a full batch"),
        Err(e) => crate::common::note(format!("the driver refused a full batch: {e}")),
    }
    s.synchronize().unwrap();
    let mut flag = DeviceBuffer::<u32>::zeroed(&ctx, 1).unwrap();
    s.write_value_u32(&mut flag.as_view_mut(), 7, StreamWriteValueFlags::empty())
        .unwrap();
    s.synchronize().unwrap();
    assert_eq!(flag.to_vec().unwrap(), [7]);
}
