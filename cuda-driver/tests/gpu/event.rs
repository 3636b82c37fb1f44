//! GPU tests: events (Event Management): record, synchronize, query and elapsed time (both
//! ABIs), record and wait flags.

use cuda_driver::prelude::*;
use cuda_driver::{
    types::EventFlags, types::EventRecordFlags, types::EventWaitFlags, types::StreamFlags,
    DeviceBuffer, Event, Stream,
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

#[gpu_test]
fn events_remember_the_flags_they_were_created_with() {
    let ctx = gpu_or_skip!();
    for flags in [
        EventFlags::DEFAULT,
        EventFlags::DISABLE_TIMING,
        EventFlags::BLOCKING_SYNC | EventFlags::DISABLE_TIMING,
        EventFlags::INTERPROCESS | EventFlags::DISABLE_TIMING,
    ] {
        let e = Event::new(&ctx, flags).unwrap();
        assert_eq!(e.flags(), Some(flags));
        // Handed over raw, the crate never saw its flags; told them, it reports them.
        let raw = e.into_raw();
        // SAFETY: `raw` is a live event of ctx, handed over once and destroyed by `e` only.
        let e = unsafe { Event::from_raw(raw, &ctx) };
        assert_eq!(e.flags(), None);
        let raw = e.into_raw();
        // SAFETY: as above; it was created with `flags`.
        let e = unsafe { Event::from_raw_with_flags(raw, &ctx, flags) };
        assert_eq!(e.flags(), Some(flags));
    }
}

#[gpu_test]
fn a_stream_waits_for_the_work_queued_on_another_stream() {
    let ctx = gpu_exclusive_or_skip!();
    let a = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let b = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    // `a` is held back by a host function until the channel sends.
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    a.launch_host_fn(move || {
        let _ = rx.recv();
    })
    .unwrap();
    b.wait_stream(&a).unwrap();
    let mut buf = DeviceBuffer::<u32>::zeroed(&ctx, 1 << 16).unwrap();
    buf.memset_async(5u32, &b).unwrap();
    // b's memset waits for a: still pending while a is held.
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert!(
        !b.query().unwrap(),
        "b ran ahead of the work it waits for on a"
    );
    tx.send(()).unwrap();
    b.synchronize().unwrap();
    assert!(a.query().unwrap());
    assert!(buf.to_vec().unwrap().iter().all(|&x| x == 5));
    // Waiting for itself does nothing; waiting for a stream of another context works.
    b.wait_stream(&b).unwrap();
    let other =
        cuda_driver::Context::new(ctx.device(), cuda_driver::types::ContextFlags::empty()).unwrap();
    let c = Stream::new(&other, StreamFlags::NON_BLOCKING).unwrap();
    b.wait_stream(&c).unwrap();
    c.wait_stream(&b).unwrap();
    b.synchronize().unwrap();
    c.synchronize().unwrap();
}

/// A stream's hand-off event is reused: a wait queued before a later record of it waits for
/// the work before the first record only, and the later wait for the later work too.
#[gpu_test]
fn hand_offs_reuse_the_streams_event_and_each_waits_for_its_own_point() {
    let ctx = gpu_exclusive_or_skip!();
    let a = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let b = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let c = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let (tx1, rx1) = std::sync::mpsc::channel::<()>();
    let (tx2, rx2) = std::sync::mpsc::channel::<()>();
    a.launch_host_fn(move || {
        let _ = rx1.recv();
    })
    .unwrap();
    b.wait_stream(&a).unwrap();
    a.launch_host_fn(move || {
        let _ = rx2.recv();
    })
    .unwrap();
    // The same event of `a`, recorded again after the second host function.
    c.wait_stream(&a).unwrap();
    let mut on_b = DeviceBuffer::<u32>::zeroed(&ctx, 1 << 12).unwrap();
    let mut on_c = DeviceBuffer::<u32>::zeroed(&ctx, 1 << 12).unwrap();
    on_b.memset_async(1u32, &b).unwrap();
    on_c.memset_async(2u32, &c).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert!(
        !b.query().unwrap() && !c.query().unwrap(),
        "both wait for a"
    );
    tx1.send(()).unwrap();
    // b waits for the first host function only: it completes while a is still held.
    b.synchronize().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert!(
        !c.query().unwrap(),
        "c ran ahead of the second host function"
    );
    tx2.send(()).unwrap();
    c.synchronize().unwrap();
    assert!(on_b.to_vec().unwrap().iter().all(|&x| x == 1));
    assert!(on_c.to_vec().unwrap().iter().all(|&x| x == 2));
    // Hand-offs from borrowed streams (their event goes with the borrow) and from a stream
    // given up raw (its event is destroyed before the caller destroys the stream).
    let drops = cuda_driver::error::drop_error_count();
    for _ in 0..3 {
        b.wait_stream(&Stream::legacy(&ctx)).unwrap();
    }
    let raw = {
        let d = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
        b.wait_stream(&d).unwrap();
        d.into_raw()
    };
    // SAFETY: `raw` was created by Stream::new and given up by into_raw; destroyed once.
    unsafe { Stream::from_raw(raw, &ctx) };
    b.synchronize().unwrap();
    assert_eq!(
        cuda_driver::error::drop_error_count(),
        drops,
        "no release failed"
    );
}
