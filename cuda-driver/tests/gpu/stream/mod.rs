//! GPU tests: streams (Stream Management): creation with flags and priorities, ids, queries
//! and synchronisation, waits on events, the default streams, attributes; host functions and
//! callbacks (panics contained, CUDA calls refused, drops deferred). Stream capture:
//! `capture`.
//!
//! Work that must still be pending when a test looks is held back by a host function
//! blocked on a channel, not by timing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

use cuda_driver::graph::GraphError;
use cuda_driver::prelude::*;
use cuda_driver::{
    context::wait_for_deferred_releases, error::drop_error_count, memory::ManagedBuffer,
    stream::host_fn_panic_count, stream::AccessPolicyWindow, sys, types::AccessProperty,
    types::AttachFlags, types::DeviceAttribute, types::EventFlags, types::LaunchMemSyncDomain,
    types::StreamCaptureMode as CaptureMode, types::StreamFlags, types::SynchronizationPolicy,
    DeviceBuffer, Error, Event, Stream,
};

use crate::common::note;

mod capture;

/// Queues a host function that blocks `stream` until the returned sender sends (or drops).
fn block(stream: &Stream) -> mpsc::Sender<()> {
    let (tx, rx) = mpsc::channel::<()>();
    stream
        .launch_host_fn(move || {
            let _ = rx.recv();
        })
        .unwrap();
    tx
}

#[gpu_test]
fn create_with_flags_and_priority() {
    let ctx = gpu_or_skip!();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    assert!(s.flags().unwrap().contains(StreamFlags::NON_BLOCKING));
    assert_eq!(s.context(), &*ctx);
    let d = Stream::new(&ctx, StreamFlags::DEFAULT).unwrap();
    assert!(!d.flags().unwrap().contains(StreamFlags::NON_BLOCKING));

    let (least, greatest) = ctx.stream_priority_range().unwrap();
    let hi = Stream::with_priority(&ctx, StreamFlags::NON_BLOCKING, greatest).unwrap();
    assert_eq!(hi.priority().unwrap(), greatest);
    let lo = Stream::with_priority(&ctx, StreamFlags::DEFAULT, least).unwrap();
    assert_eq!(lo.priority().unwrap(), least);
    assert_ne!(hi.as_raw(), lo.as_raw());
}

#[gpu_test]
fn query_and_synchronize() {
    let ctx = gpu_exclusive_or_skip!();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    assert!(s.query().unwrap(), "a new stream is idle");
    // Allocate first: nothing that may synchronise with the stream runs while it is blocked.
    let mut buf = DeviceBuffer::<u32>::new(&ctx, 1024).unwrap();
    let release = block(&s);
    buf.memset_async(0x5A5A_5A5Au32, &s).unwrap();
    assert!(
        !s.query().unwrap(),
        "the stream is held by the host function"
    );
    release.send(()).unwrap();
    s.synchronize().unwrap();
    assert!(s.query().unwrap());
    assert_eq!(buf.to_vec().unwrap(), vec![0x5A5A_5A5A; 1024]);
}

#[gpu_test]
fn wait_event_orders_two_streams() {
    let ctx = gpu_exclusive_or_skip!();
    let a = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let b = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let event = Event::new(&ctx, EventFlags::DISABLE_TIMING).unwrap();
    let release = block(&a);
    event.record(&a).unwrap();
    assert!(!event.query().unwrap(), "recorded behind blocked work");
    b.wait_event(&event).unwrap();
    let ran = Arc::new(AtomicBool::new(false));
    let flag = ran.clone();
    b.launch_host_fn(move || flag.store(true, Ordering::SeqCst))
        .unwrap();
    assert!(!b.query().unwrap(), "b waits for the event on a");
    assert!(!ran.load(Ordering::SeqCst));
    release.send(()).unwrap();
    b.synchronize().unwrap();
    assert!(ran.load(Ordering::SeqCst));
    assert!(event.query().unwrap());
    event.synchronize().unwrap();
}

#[gpu_test]
fn default_stream_handles() {
    let ctx = gpu_or_skip!();
    let legacy = Stream::legacy(&ctx);
    let per_thread = Stream::per_thread(&ctx);
    let null = Stream::null(&ctx);
    assert_eq!(legacy.as_raw(), sys::CU_STREAM_LEGACY);
    assert_eq!(per_thread.as_raw(), sys::CU_STREAM_PER_THREAD);
    assert!(null.as_raw().is_null());
    let mut buf = DeviceBuffer::<u32>::new(&ctx, 64).unwrap();
    for (i, s) in [&*legacy, &*per_thread, &*null].into_iter().enumerate() {
        buf.memset_async(i as u32 + 1, s).unwrap();
        s.synchronize().unwrap();
        assert!(s.query().unwrap());
        assert_eq!(buf.to_vec().unwrap(), vec![i as u32 + 1; 64]);
    }
    // Borrowed handles: dropping them destroys nothing.
    assert_eq!(Stream::legacy(&ctx).as_raw(), sys::CU_STREAM_LEGACY);
    assert_eq!(Stream::per_thread(&ctx).as_raw(), sys::CU_STREAM_PER_THREAD);
    drop((legacy, per_thread, null));
    Stream::legacy(&ctx).synchronize().unwrap();
}

#[gpu_test]
fn host_functions_run_and_panics_are_contained() {
    let ctx = gpu_exclusive_or_skip!();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let ran = Arc::new(AtomicBool::new(false));
    let flag = ran.clone();
    s.launch_host_fn(move || flag.store(true, Ordering::SeqCst))
        .unwrap();
    s.synchronize().unwrap();
    assert!(ran.load(Ordering::SeqCst));

    let before = host_fn_panic_count();
    s.launch_host_fn(|| panic!("deliberate panic in a host function"))
        .unwrap();
    let after = Arc::new(AtomicBool::new(false));
    let flag = after.clone();
    s.launch_host_fn(move || flag.store(true, Ordering::SeqCst))
        .unwrap();
    s.synchronize().unwrap();
    assert_eq!(host_fn_panic_count(), before + 1);
    assert!(
        after.load(Ordering::SeqCst),
        "work after the panic still runs"
    );
    // The stream and the process are fine.
    let mut buf = DeviceBuffer::<u16>::new(&ctx, 8).unwrap();
    buf.memset_async(3u16, &s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(buf.to_vec().unwrap(), vec![3u16; 8]);
}

/// Issue #10 hole d: a host function that calls CUDA (here: a method of a captured context)
/// is refused before the driver is reached, and CUDA objects it drops (a 256 MiB buffer, a
/// context handle) are released after it returns, on the crate's release thread; nothing
/// deadlocks and nothing leaks.
#[gpu_test]
fn host_functions_cannot_call_cuda_and_their_drops_are_deferred() {
    let ctx = gpu_exclusive_or_skip!();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    const BYTES: usize = 256 << 20;
    let (free_before, _) = ctx.mem_info().unwrap();
    let buf = DeviceBuffer::<u8>::new(&ctx, BYTES).unwrap();
    let (free_with_buf, _) = ctx.mem_info().unwrap();
    assert!(free_with_buf + BYTES / 2 <= free_before);
    let captured = (*ctx).clone();
    let (tx, rx) = mpsc::channel();
    s.launch_host_fn(move || {
        let r = captured.synchronize();
        let _ = tx.send(matches!(r, Err(Error::InHostCallback { .. })));
        drop(buf);
        drop(captured);
    })
    .unwrap();
    s.synchronize().unwrap();
    assert!(
        rx.recv().unwrap(),
        "a CUDA call inside a host function was not refused"
    );
    // The release thread frees the buffer right after the host function returned.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let (free, _) = ctx.mem_info().unwrap();
        if free + BYTES / 2 > free_before {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the deferred free never ran"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // The stream still works.
    let flag = Arc::new(AtomicBool::new(false));
    let f = flag.clone();
    s.launch_host_fn(move || f.store(true, Ordering::SeqCst))
        .unwrap();
    s.synchronize().unwrap();
    assert!(flag.load(Ordering::SeqCst));
}

/// Issue #10 hole e: a panic whose payload panics again when dropped is contained: counted,
/// the payload leaked, the process alive, the stream usable.
#[gpu_test]
fn a_panicking_panic_payload_does_not_abort() {
    struct Bomb;
    impl Drop for Bomb {
        fn drop(&mut self) {
            panic!("the payload's Drop panics too");
        }
    }
    let ctx = gpu_or_skip!();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let panics = host_fn_panic_count();
    let drops = drop_error_count();
    s.launch_host_fn(|| std::panic::panic_any(Bomb)).unwrap();
    s.synchronize().unwrap();
    assert!(host_fn_panic_count() > panics);
    assert!(drop_error_count() > drops);
    let flag = Arc::new(AtomicBool::new(false));
    let f = flag.clone();
    s.launch_host_fn(move || f.store(true, Ordering::SeqCst))
        .unwrap();
    s.synchronize().unwrap();
    assert!(flag.load(Ordering::SeqCst));
}

/// Launches and stream-ordered allocations on a created stream skip the context check, but
/// not the host-function check: inside a host function they are refused before the driver is
/// reached, and a stream-ordered buffer dropped there is freed after it returns, on the
/// crate's release thread (its memory goes back to the pool; nothing is reported).
#[gpu_test]
fn stream_calls_inside_a_host_function_are_refused_and_their_drops_deferred() {
    use cuda_driver::{memory::pool::MemPool, LaunchConfig, Module};
    let ctx = gpu_exclusive_or_skip!();
    let before = drop_error_count();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    // 'static, so that a buffer ordered on it can move into the host function.
    let other: &'static Stream = Box::leak(Box::new(
        Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap(),
    ));
    let module = Module::load_data(&ctx, crate::common::TEST_KERNELS).unwrap();
    let fill = module.function("fill_u32").unwrap();
    let pool = Arc::new(MemPool::new(ctx.device()).unwrap());
    let n = 1usize << 20;
    let buf = pool.alloc_async::<u32>(other, n).unwrap();
    other.synchronize().unwrap();
    let used = pool.used_mem_current().unwrap();
    assert!(used >= (n * 4) as u64, "{used}");
    let (tx, rx) = mpsc::channel();
    let in_fn_pool = Arc::clone(&pool);
    s.launch_host_fn(move || {
        let mut buf = buf;
        let cfg = LaunchConfig::for_num_elems(n).unwrap();
        // SAFETY: fill_u32(unsigned*, unsigned, int) over buf's n elements; refused anyway.
        let launch = unsafe { fill.launch(other, &cfg, (buf.as_view_mut(), &1u32, &(n as i32))) };
        let alloc = in_fn_pool.alloc_async::<u8>(other, 64);
        let refused = |r: &Result<(), Error>| matches!(r, Err(Error::InHostCallback { .. }));
        let _ = tx.send((refused(&launch), refused(&alloc.map(drop))));
        drop(buf);
    })
    .unwrap();
    s.synchronize().unwrap();
    assert_eq!(
        rx.recv().unwrap(),
        (true, true),
        "(launch, alloc_async) refused"
    );
    // The deferred free runs on the release thread, which queues it on `other`; once it has
    // run and `other` is synchronized, the memory is back in the pool.
    wait_for_deferred_releases().unwrap();
    other.synchronize().unwrap();
    let now = pool.used_mem_current().unwrap();
    assert!(
        now + (n * 4) as u64 <= used,
        "the deferred stream-ordered free has not run: {now} bytes used, {used} before"
    );
    assert_eq!(drop_error_count(), before, "no release failed");
}

/// Issue 23: `wait_for_deferred_releases` returns once every release deferred out of a host
/// function has run: a buffer dropped inside a host function is back in its pool right
/// after the wait (and its stream's synchronization), without polling; inside a host
/// function the wait is refused.
#[gpu_test]
fn waiting_for_deferred_releases_returns_the_memory_dropped_in_a_host_function() {
    use cuda_driver::memory::pool::MemPool;
    let ctx = gpu_exclusive_or_skip!();
    // 'static, so that a buffer ordered on it can move into the host function.
    let s: &'static Stream = Box::leak(Box::new(
        Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap(),
    ));
    let pool = MemPool::new(ctx.device()).unwrap();
    let n = 4usize << 20;
    let empty = pool.used_mem_current().unwrap();
    for round in 0..3 {
        let buf = pool.alloc_async::<u8>(s, n).unwrap();
        s.synchronize().unwrap();
        assert!(pool.used_mem_current().unwrap() >= empty + n as u64);
        let (tx, rx) = mpsc::channel();
        // The free the host function defers is queued on `s`, after the host function.
        s.launch_host_fn(move || {
            let _ = tx.send(matches!(
                wait_for_deferred_releases(),
                Err(Error::InHostCallback { .. })
            ));
            drop(buf);
        })
        .unwrap();
        s.synchronize().unwrap();
        assert!(
            rx.recv().unwrap(),
            "the wait inside a host function was not refused"
        );
        wait_for_deferred_releases().unwrap();
        s.synchronize().unwrap();
        let used = pool.used_mem_current().unwrap();
        assert!(
            used < empty + n as u64,
            "round {round}: the deferred free has not run ({used} bytes used, {empty} before)"
        );
    }
}

#[gpu_test]
fn add_callback_runs_after_earlier_work_and_refuses_capture() {
    let ctx = gpu_exclusive_or_skip!();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let mut buf = DeviceBuffer::<u32>::zeroed(&ctx, 1024).unwrap();
    buf.as_view_mut().memset_async(7u32, &s).unwrap();
    let (tx, rx) = mpsc::channel();
    s.add_callback(move |status| tx.send(status.is_ok()).unwrap())
        .unwrap();
    assert!(rx.recv().unwrap());
    s.synchronize().unwrap();
    assert!(buf.to_vec().unwrap().iter().all(|&v| v == 7));
    // Refused while capturing; the capture stays valid.
    // SAFETY: nothing captured uses memory.
    let g = unsafe {
        s.capture(CaptureMode::THREAD_LOCAL, |st| {
            assert!(matches!(
                st.add_callback(|_| ()),
                Err(Error::Graph(GraphError::HostFnNotReplayable { .. }))
            ));
            Ok(())
        })
    }
    .unwrap();
    drop(g);
}

#[gpu_test]
fn stream_attributes_round_trip() {
    let ctx = gpu_or_skip!();
    let dev = ctx.device();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();

    // Priority.
    let (least, greatest) = ctx.stream_priority_range().unwrap();
    s.set_priority_attribute(greatest).unwrap();
    assert_eq!(s.priority_attribute().unwrap(), greatest);
    s.set_priority_attribute(least).unwrap();
    assert_eq!(s.priority_attribute().unwrap(), least);

    // Memory synchronisation domain (Hopper and later).
    let (major, _) = dev.compute_capability().unwrap();
    if major >= 9 {
        let before = s.mem_sync_domain().unwrap();
        assert_eq!(before, LaunchMemSyncDomain::DEFAULT);
        s.set_mem_sync_domain(LaunchMemSyncDomain::REMOTE).unwrap();
        assert_eq!(s.mem_sync_domain().unwrap(), LaunchMemSyncDomain::REMOTE);
        s.set_mem_sync_domain(before).unwrap();
        assert_eq!(s.mem_sync_domain().unwrap(), before);
    } else {
        note("memory sync domains need compute capability 9.0");
    }

    // The access-policy window.
    let max = dev
        .attribute(DeviceAttribute::MAX_ACCESS_POLICY_WINDOW_SIZE)
        .unwrap() as usize;
    if max == 0 {
        note("the device has no L2 access-policy window");
    } else {
        let bytes = max.min(1 << 20);
        let mut buf = DeviceBuffer::<u8>::zeroed(&ctx, bytes).unwrap();
        let w = AccessPolicyWindow {
            base: buf.as_raw(),
            num_bytes: bytes,
            hit_ratio: 0.5,
            hit_prop: AccessProperty::PERSISTING,
            miss_prop: AccessProperty::STREAMING,
        };
        s.set_access_policy_window(w).unwrap();
        assert_eq!(s.access_policy_window().unwrap(), w);
        // Work on the stream runs under the window.
        buf.as_view_mut().memset_async(4u8, &s).unwrap();
        s.synchronize().unwrap();
        assert!(buf.to_vec().unwrap().iter().all(|&v| v == 4));
        // A window larger than the device allows: an error, the window is unchanged.
        let too_big = AccessPolicyWindow {
            num_bytes: max + 1,
            ..w
        };
        assert!(s.set_access_policy_window(too_big).is_err());
        assert_eq!(s.access_policy_window().unwrap(), w);
        // Reset to no window.
        let none = AccessPolicyWindow {
            base: 0,
            num_bytes: 0,
            hit_ratio: 0.0,
            hit_prop: AccessProperty::NORMAL,
            miss_prop: AccessProperty::NORMAL,
        };
        s.set_access_policy_window(none).unwrap();
        assert_eq!(s.access_policy_window().unwrap().num_bytes, 0);
    }

    // Managed memory attached to the stream: the host reads it once the stream is idle.
    let mut m = ManagedBuffer::<u32>::zeroed(&s, 1 << 16, AttachFlags::GLOBAL).unwrap();
    s.attach_mem(&mut m.as_view_mut(), AttachFlags::SINGLE)
        .unwrap();
    m.as_view_mut().memset_async(11u32, &s).unwrap();
    s.synchronize().unwrap();
    assert!(m.as_slice().unwrap().iter().all(|&v| v == 11));
    // A managed buffer's host access waits for its stream only: it stays attached to it.
    let e = s
        .attach_mem(&mut m.as_view_mut(), AttachFlags::GLOBAL)
        .unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    s.synchronize().unwrap();
    // Device memory cannot be attached: an error, and the stream still works.
    let mut d = DeviceBuffer::<u32>::zeroed(&ctx, 16).unwrap();
    assert!(s
        .attach_mem(&mut d.as_view_mut(), AttachFlags::SINGLE)
        .is_err());
    m.as_view_mut().memset_async(12u32, &s).unwrap();
    s.synchronize().unwrap();
    assert!(m.as_slice().unwrap().iter().all(|&v| v == 12));
}

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
