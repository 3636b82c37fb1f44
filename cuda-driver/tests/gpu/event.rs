//! GPU tests: events (Event Management): record, synchronize, query and elapsed time (both
//! ABIs), record and wait flags.

use cuda_driver::prelude::*;
use cuda_driver::{
    DeviceBuffer, Event, EventFlags, EventRecordFlags, EventWaitFlags, Stream, StreamFlags,
};

#[gpu_test]
fn events_record_synchronize_query_and_time() {
    let ctx = gpu_or_skip!();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let start = Event::new(&ctx, EventFlags::DEFAULT).unwrap();
    let end = Event::new(&ctx, EventFlags::BLOCKING_SYNC).unwrap();
    start.record(&s).unwrap();
    let mut buf = DeviceBuffer::<u8>::new(&ctx, 1 << 20).unwrap();
    buf.memset_async(7u8, &s).unwrap();
    end.record(&s).unwrap();
    end.synchronize().unwrap();
    assert!(end.query().unwrap());
    assert!(start.query().unwrap());
    let ms = start.elapsed_ms(&end).unwrap();
    assert!(ms >= 0.0 && ms.is_finite(), "{ms}");
    assert_eq!(start.context(), &*ctx);
    assert!(buf.to_vec().unwrap().iter().all(|&b| b == 7));
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
