//! GPU tests: managed memory: host access after device writes, host access waiting for its
//! stream (or refused), moves between streams of its context.

use std::sync::mpsc;
use std::time::Duration;

use cuda_driver::prelude::*;
use cuda_driver::{
    memory::unified::PointerInfo, memory::ManagedBuffer, memory::MemLocation, types::AttachFlags,
    types::ContextFlags, types::DeviceAttribute, types::MemAdvice,
    types::StreamCaptureMode as CaptureMode, types::StreamFlags, Context, Error, Stream,
};

use crate::memory::{block, words};

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
