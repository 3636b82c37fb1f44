//! GPU tests: contexts and primary contexts (Context Management, Primary Context Management):
//! the context stack, creation with parameters and flags, ids and devices, limits, cache
//! configuration and L2, context events, execution affinity, contexts used from worker
//! threads, raw-handle round trips.
//!
//! Tests that change the primary context's global state restore it; tests that need their
//! own limits or cache configuration use a created context, so tests running in parallel on
//! the primary context are not disturbed.

use cuda_driver::prelude::*;
use cuda_driver::{
    context::ContextCreateParams, context::ContextRef, error::drop_error_count, sys,
    types::CacheConfig, types::ContextFlags, types::DeviceAttribute, types::ErrorCode,
    types::EventFlags, types::ExecAffinityType, types::Limit, types::StreamFlags, Context, Device,
    DeviceBuffer, Error, Event, LaunchConfig, Module, Stream,
};

use crate::common::{note, skip, TEST_KERNELS};

fn current() -> Option<sys::CUcontext> {
    Context::current_raw().unwrap()
}

#[gpu_test]
fn created_contexts_are_pushed_and_popped_in_order() {
    let ctx = gpu_exclusive_or_skip!();
    let dev = ctx.device();
    // Each test runs on its own thread, with its own (empty) context stack.
    assert_eq!(current(), None);
    let a = Context::new(dev, ContextFlags::SCHED_AUTO).unwrap();
    let b = Context::new(dev, ContextFlags::SCHED_AUTO).unwrap();
    assert_ne!(a.as_raw(), b.as_raw());
    assert!(!a.is_primary());
    assert_eq!(a.device(), dev);
    // Context::new pops what cuCtxCreate pushed: the caller's stack is unchanged.
    assert_eq!(current(), None);
    {
        let ga = a.push().unwrap();
        assert_eq!(ga.context().as_raw(), a.as_raw());
        assert!(a.is_current().unwrap());
        {
            let _gb = b.push().unwrap();
            assert_eq!(current(), Some(b.as_raw()));
            {
                let _gp = ctx.push().unwrap();
                assert_eq!(current(), Some(ctx.as_raw()));
            }
            assert_eq!(current(), Some(b.as_raw()));
        }
        assert_eq!(current(), Some(a.as_raw()));
        ga.pop().unwrap();
    }
    assert_eq!(current(), None);
    // set_current replaces the top of the stack (pushing onto an empty one).
    a.set_current().unwrap();
    assert_eq!(current(), Some(a.as_raw()));
    b.set_current().unwrap();
    assert_eq!(current(), Some(b.as_raw()));
    let mut popped = std::ptr::null_mut();
    // SAFETY: the stack holds exactly `b`, set above; popping it leaves this thread's stack
    // empty again.
    let r = unsafe { sys::cuCtxPopCurrent_v2(&mut popped) };
    assert_eq!(r, sys::CUDA_SUCCESS);
    assert_eq!(current(), None);
}

/// Issue #10, item 2: using and dropping objects of context B under a guard of context A
/// must leave A current, and A's guard must pop cleanly. Before the fix, every operation
/// called cuCtxSetCurrent(B), which replaced A on top of the stack.
#[gpu_test]
fn objects_of_another_context_leave_the_callers_stack_alone() {
    let ctx = gpu_exclusive_or_skip!();
    let dev = ctx.device();
    let a = Context::new(dev, ContextFlags::SCHED_AUTO).unwrap();
    let b = Context::new(dev, ContextFlags::SCHED_AUTO).unwrap();
    let before = drop_error_count();
    let guard = a.push().unwrap();
    {
        let stream =
            cuda_driver::Stream::new(&b, cuda_driver::types::StreamFlags::NON_BLOCKING).unwrap();
        assert_eq!(current(), Some(a.as_raw()));
        let mut buf = DeviceBuffer::from_slice(&b, &[1u32, 2, 3, 4]).unwrap();
        buf.memset_async(9u32, &stream).unwrap();
        let event = cuda_driver::Event::new(&b, cuda_driver::types::EventFlags::DEFAULT).unwrap();
        event.record(&stream).unwrap();
        event.synchronize().unwrap();
        assert_eq!(buf.to_vec().unwrap(), [9; 4]);
        let mut stream_ordered = DeviceBuffer::<u8>::new_async(&stream, 64).unwrap();
        stream_ordered.memset(1u8).unwrap();
        b.synchronize().unwrap();
        assert!(b.limit(Limit::STACK_SIZE).unwrap() > 0);
        assert_eq!(
            current(),
            Some(a.as_raw()),
            "an operation replaced the top of the stack"
        );
        // Dropped here, in B, under A's guard: stream_ordered, event, buf, stream.
    }
    assert_eq!(
        current(),
        Some(a.as_raw()),
        "a drop replaced the top of the stack"
    );
    // And B itself, the last handle of a context that is not current.
    drop(b);
    assert_eq!(current(), Some(a.as_raw()));
    guard.pop().expect("A's guard pops cleanly");
    assert_eq!(current(), None);
    assert_eq!(drop_error_count(), before, "no release failed");
}

#[gpu_test]
fn a_guard_refuses_to_pop_a_context_it_did_not_push() {
    let ctx = gpu_exclusive_or_skip!();
    let dev = ctx.device();
    let a = Context::new(dev, ContextFlags::SCHED_AUTO).unwrap();
    let b = Context::new(dev, ContextFlags::SCHED_AUTO).unwrap();
    // Stack: [] (created contexts are floating).
    let before = drop_error_count();
    let ga = a.push().unwrap(); // [a]
    let gb = b.push().unwrap(); // [a, b]
    drop(ga); // out of order: b is on top, so nothing is popped
    assert_eq!(drop_error_count(), before + 1);
    assert_eq!(current(), Some(b.as_raw()), "the stack is intact");
    drop(gb); // b is on top: popped
    assert_eq!(current(), Some(a.as_raw()));
    assert_eq!(drop_error_count(), before + 1);
    // Popping explicitly reports the refusal as an error.
    let ga = a.push().unwrap(); // [a, a]
    let _gb = b.push().unwrap(); // [a, a, b]
    let e = ga.pop().unwrap_err();
    assert!(
        matches!(e, cuda_driver::Error::ContextStackMismatch { .. }),
        "{e:?}"
    );
    assert!(e.to_string().contains("cannot pop context"), "{e}");
    assert_eq!(current(), Some(b.as_raw()));
    drop(_gb);
    // Take the two `a` entries the refused guards left behind off the stack.
    for _ in 0..2 {
        let mut popped = std::ptr::null_mut();
        // SAFETY: the top of this thread's stack is `a`, pushed above and left there.
        let r = unsafe { sys::cuCtxPopCurrent_v2(&mut popped) };
        assert_eq!(r, sys::CUDA_SUCCESS);
        assert_eq!(popped, a.as_raw());
    }
    assert_eq!(current(), None);
    assert_eq!(drop_error_count(), before + 1);
}

#[gpu_test]
fn the_primary_context_is_shared_through_clones_and_threads() {
    let ctx = gpu_or_skip!();
    let dev = ctx.device();
    assert!(ctx.is_primary());
    let (_, active) = dev.primary_context_state().unwrap();
    assert!(active, "a retained primary context is active");
    // A second retain is the same context; releasing it leaves ours usable.
    let again = dev.primary_context().unwrap();
    assert_eq!(again, *ctx);
    drop(again);
    let clone = ctx.clone();
    drop(clone);
    std::thread::scope(|s| {
        for i in 0..4u32 {
            let ctx = &ctx;
            s.spawn(move || {
                let mine = dev.primary_context().unwrap();
                assert_eq!(mine.as_raw(), ctx.as_raw());
                let shared = (*ctx).clone();
                let buf = DeviceBuffer::from_slice(&shared, &[i + 1; 16]).unwrap();
                assert_eq!(buf.to_vec().unwrap(), vec![i + 1; 16]);
            });
        }
    });
    // Every retain taken above was released, and ours still holds it.
    assert!(dev.primary_context_state().unwrap().1);
    let buf = DeviceBuffer::from_slice(&ctx, &[9u8; 8]).unwrap();
    assert_eq!(buf.to_vec().unwrap(), vec![9u8; 8]);
}

#[gpu_test]
fn primary_context_flags_are_set_and_read_back() {
    let ctx = gpu_or_skip!();
    let dev = ctx.device();
    let (old, _) = dev.primary_context_state().unwrap();
    dev.set_primary_context_flags(ContextFlags::SCHED_BLOCKING_SYNC)
        .unwrap();
    let (flags, active) = dev.primary_context_state().unwrap();
    assert!(active);
    assert_eq!(
        flags & ContextFlags::SCHED_MASK,
        ContextFlags::SCHED_BLOCKING_SYNC,
        "{flags:?}"
    );
    dev.set_primary_context_flags(old).unwrap();
    assert_eq!(dev.primary_context_state().unwrap().0, old);
}

#[gpu_test]
fn limits_cache_config_and_versions() {
    let ctx = gpu_exclusive_or_skip!();
    let own = Context::new(ctx.device(), ContextFlags::SCHED_BLOCKING_SYNC).unwrap();
    let stack = own.limit(Limit::STACK_SIZE).unwrap();
    assert!(stack > 0);
    own.set_limit(Limit::STACK_SIZE, stack + 4096).unwrap();
    let set = own.limit(Limit::STACK_SIZE).unwrap();
    assert!(set >= stack + 4096, "{set} < {}", stack + 4096);
    own.set_limit(Limit::STACK_SIZE, stack).unwrap();

    own.set_cache_config(CacheConfig::PREFER_L1).unwrap();
    assert_eq!(own.cache_config().unwrap(), CacheConfig::PREFER_L1);
    own.set_cache_config(CacheConfig::PREFER_SHARED).unwrap();
    assert_eq!(own.cache_config().unwrap(), CacheConfig::PREFER_SHARED);

    assert!(own.api_version().unwrap() >= 3020);
    assert!(ctx.api_version().unwrap() >= 3020);
    let flags = own.flags().unwrap();
    assert_eq!(
        flags & ContextFlags::SCHED_MASK,
        ContextFlags::SCHED_BLOCKING_SYNC,
        "{flags:?}"
    );

    let (least, greatest) = ctx.stream_priority_range().unwrap();
    assert!(greatest <= least, "greatest {greatest} > least {least}");
    own.synchronize().unwrap();
    ctx.synchronize().unwrap();

    let (free, total) = own.mem_info().unwrap();
    assert!(free > 0 && free <= total, "{free} / {total}");
}

#[gpu_test]
fn from_raw_and_into_raw_round_trip() {
    let ctx = gpu_exclusive_or_skip!();
    let dev = ctx.device();
    let own = Context::new(dev, ContextFlags::SCHED_AUTO).unwrap();
    let raw = own.as_raw();
    // A clone stays usable after the handle is given up, and releases nothing when dropped.
    let clone = own.clone();
    let back = own.into_raw();
    assert_eq!(back, raw);
    let buf = DeviceBuffer::from_slice(&clone, &[0.5f32]).unwrap();
    assert_eq!(buf.to_vec().unwrap(), [0.5]);
    drop(buf);
    drop(clone);
    // The context is still alive (nothing released it): borrowed, it answers queries.
    // SAFETY: `back` is alive, and nothing releases it while `borrowed` is used.
    let borrowed = unsafe { ContextRef::borrow_raw(back) };
    assert_eq!(borrowed.as_raw(), raw);
    assert!(borrowed.api_version().unwrap() > 0);
    // SAFETY: `back` is the live created context whose ownership was given up, and no clone
    // of the old handle is left.
    let own = unsafe { Context::from_raw(back, dev) };
    assert_eq!(own.as_raw(), raw);
    let buf = DeviceBuffer::from_slice(&own, &[1.5f32, 2.5]).unwrap();
    assert_eq!(buf.to_vec().unwrap(), [1.5, 2.5]);
    drop(buf);
    drop(own); // destroys it
    let _ = Device::count().unwrap();
}

/// Launches, stream-ordered allocations and frees, event records and event waits on a
/// created stream make no context current (the driver takes the context from the stream), nor
/// do event queries, synchronisations and elapsed times (from the events): they must work,
/// compute the right result and leave the stack alone with no context current and with another context
/// current. On the legacy default stream, which names the current context's stream, the
/// stream's context is entered, so the work runs in it and not in the current one.
#[gpu_test]
fn stream_calls_run_in_the_streams_context_whatever_is_current() {
    use cuda_driver::{
        event::Event,
        launch::LaunchAttributes,
        memory::pool::MemPool,
        stream::StreamRef,
        types::{EventFlags, EventRecordFlags, EventWaitFlags, StreamFlags},
        LaunchConfig, Module, Stream,
    };
    let ctx = gpu_exclusive_or_skip!();
    let dev = ctx.device();
    let before = drop_error_count();
    let a = Context::new(dev, ContextFlags::SCHED_AUTO).unwrap();
    let b = Context::new(dev, ContextFlags::SCHED_AUTO).unwrap();
    let ma = Module::load_data(&a, crate::common::TEST_KERNELS).unwrap();
    let fa = ma.function("fill_u32").unwrap();
    let mb = Module::load_data(&b, crate::common::TEST_KERNELS).unwrap();
    let fb = mb.function("fill_u32").unwrap();
    let sa = Stream::new(&a, StreamFlags::NON_BLOCKING).unwrap();
    let pool = MemPool::new(dev).unwrap();
    let n = 4099usize;
    let cfg = LaunchConfig::for_num_elems(n).unwrap();

    // Each round under a different current context: none, then `b` (not the stream's).
    let rounds: [(Option<&Context>, u32); 2] = [(None, 7), (Some(&b), 11)];
    for (current_ctx, v) in rounds {
        let guard = current_ctx.map(|c| c.push().unwrap());
        let expected_current = current_ctx.map(|c| c.as_raw());
        assert_eq!(current(), expected_current);
        let mut buf = DeviceBuffer::<u32>::zeroed(&a, n).unwrap();
        // SAFETY: fill_u32(unsigned* out, unsigned v, int n) over n elements of buf.
        unsafe { fa.launch(&sa, &cfg, (buf.as_view_mut(), &v, &(n as i32))) }.unwrap();
        sa.synchronize().unwrap();
        assert!(buf.to_vec().unwrap().iter().all(|&x| x == v), "launch");
        // SAFETY: as above, through cuLaunchKernelEx.
        unsafe {
            fa.launch_ex(
                &sa,
                &cfg,
                &LaunchAttributes::new(),
                (buf.as_view_mut(), &(v + 1), &(n as i32)),
            )
        }
        .unwrap();
        sa.synchronize().unwrap();
        assert!(
            buf.to_vec().unwrap().iter().all(|&x| x == v + 1),
            "launch_ex"
        );

        // Stream-ordered memory from the current pool and from a pool, written by a kernel
        // on its stream, read back, freed explicitly and by drop.
        let mut from_default = DeviceBuffer::<u32>::new_async(&sa, n).unwrap();
        let mut from_pool = pool.alloc_async::<u32>(&sa, n).unwrap();
        // SAFETY: as above; both are ordered on sa.
        unsafe {
            fa.launch(
                &sa,
                &cfg,
                (from_default.as_view_mut(), &(v + 2), &(n as i32)),
            )
            .unwrap();
            fa.launch(&sa, &cfg, (from_pool.as_view_mut(), &(v + 3), &(n as i32)))
                .unwrap();
        }
        sa.synchronize().unwrap();
        assert!(from_default.to_vec().unwrap().iter().all(|&x| x == v + 2));
        assert!(from_pool.to_vec().unwrap().iter().all(|&x| x == v + 3));
        from_default.free_async().unwrap();
        drop(from_pool);
        sa.synchronize().unwrap();

        // cuStreamSynchronize and cuStreamQuery take the context from the stream (no context
        // entered): the synchronize waits for the work queued before it (an event recorded
        // after that work is complete when it returns), and the stream is then idle.
        let done = Event::new(&a, EventFlags::DISABLE_TIMING).unwrap();
        // SAFETY: as above.
        unsafe { fa.launch(&sa, &cfg, (buf.as_view_mut(), &(v + 4), &(n as i32))) }.unwrap();
        done.record(&sa).unwrap();
        sa.synchronize().unwrap();
        assert!(
            done.query().unwrap(),
            "the synchronize waited for the stream"
        );
        assert!(sa.query().unwrap(), "the stream is idle");
        assert!(
            buf.to_vec().unwrap().iter().all(|&x| x == v + 4),
            "fill before the synchronize"
        );

        // Events recorded and waited for, and a stream-ordered buffer handed between two
        // created streams of `a` (cuEventRecord, cuEventRecordWithFlags, cuStreamWaitEvent:
        // no context entered). Each wait orders a fill on `sb` after one on `sa`.
        let sb = Stream::new(&a, StreamFlags::NON_BLOCKING).unwrap();
        let ev = Event::new(&a, EventFlags::DISABLE_TIMING).unwrap();
        // SAFETY: as above.
        unsafe { fa.launch(&sa, &cfg, (buf.as_view_mut(), &(v + 5), &(n as i32))) }.unwrap();
        ev.record(&sa).unwrap();
        sb.wait_event(&ev).unwrap();
        // SAFETY: as above; sb waits for the fill on sa.
        unsafe { fa.launch(&sb, &cfg, (buf.as_view_mut(), &(v + 6), &(n as i32))) }.unwrap();
        ev.record_with_flags(&sb, EventRecordFlags::DEFAULT)
            .unwrap();
        sa.wait_event_with_flags(&ev, EventWaitFlags::DEFAULT)
            .unwrap();
        sa.synchronize().unwrap();
        assert!(ev.query().unwrap(), "sa waited for the record on sb");
        // Event calls that need no context current: query, synchronize, elapsed time.
        let (t0, t1) = (
            Event::new(&a, EventFlags::DEFAULT).unwrap(),
            Event::new(&a, EventFlags::DEFAULT).unwrap(),
        );
        t0.record(&sa).unwrap();
        // SAFETY: as above.
        unsafe { fa.launch(&sa, &cfg, (buf.as_view_mut(), &(v + 6), &(n as i32))) }.unwrap();
        t1.record(&sa).unwrap();
        t1.synchronize().unwrap();
        assert!(t0.query().unwrap() && t1.query().unwrap());
        let ms = t0.elapsed_ms(&t1).unwrap();
        assert!(ms.is_finite() && ms >= 0.0, "{ms}");
        let ms2 = t0.elapsed_ms_v2(&t1).unwrap();
        assert!(ms2.is_finite() && (ms2 - ms).abs() < 1.0, "{ms} vs {ms2}");
        assert!(
            buf.to_vec().unwrap().iter().all(|&x| x == v + 6),
            "event order"
        );
        let mut moved = DeviceBuffer::<u32>::new_async(&sa, n).unwrap();
        // SAFETY: as above; `moved` is ordered on sa.
        unsafe { fa.launch(&sa, &cfg, (moved.as_view_mut(), &(v + 7), &(n as i32))) }.unwrap();
        let mut moved = moved.move_to_stream(&sb).unwrap();
        // SAFETY: as above; `moved` is now ordered on sb, after the fill on sa.
        unsafe { fa.launch(&sb, &cfg, (moved.as_view_mut(), &(v + 8), &(n as i32))) }.unwrap();
        sb.wait_stream(&sa).unwrap();
        sb.synchronize().unwrap();
        assert!(
            moved.to_vec().unwrap().iter().all(|&x| x == v + 8),
            "hand-off"
        );
        moved.free_async().unwrap();
        sb.synchronize().unwrap();
        drop((ev, sb));

        // A function of `b` on a stream of `a`: refused in Rust, whatever is current.
        // SAFETY: refused before any launch.
        let e = unsafe { fb.launch(&sa, &cfg, (buf.as_view_mut(), &v, &(n as i32))) }.unwrap_err();
        assert!(
            matches!(e, cuda_driver::Error::ContextMismatch { .. }),
            "{e}"
        );

        // The legacy default stream of `a`: entered, so the launch runs in `a`.
        // SAFETY: CU_STREAM_LEGACY is a special handle, valid for `a`'s lifetime.
        let legacy = unsafe { StreamRef::borrow_raw(sys::CU_STREAM_LEGACY, &a) };
        // SAFETY: as above.
        unsafe { fa.launch(&legacy, &cfg, (buf.as_view_mut(), &(v + 4), &(n as i32))) }.unwrap();
        a.synchronize().unwrap();
        assert!(buf.to_vec().unwrap().iter().all(|&x| x == v + 4), "legacy");

        assert_eq!(
            current(),
            expected_current,
            "a stream call changed the stack"
        );
        if let Some(g) = guard {
            g.pop().unwrap();
        }
        assert_eq!(current(), None);
    }
    drop((sa, ma, mb));
    assert_eq!(drop_error_count(), before, "no release failed");
}

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
        .attribute(cuda_driver::types::DeviceAttribute::MULTIPROCESSOR_COUNT)
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

#[gpu_test]
fn every_settable_limit_reads_back_and_is_restored() {
    // Device-wide L2 set-aside: nothing else runs meanwhile.
    let ctx = gpu_exclusive_or_skip!();
    let dev = ctx.device();
    let c = Context::new(dev, ContextFlags::SCHED_AUTO).unwrap();
    let mut limits = vec![
        (Limit::STACK_SIZE, 8192usize),
        (Limit::PRINTF_FIFO_SIZE, 4 << 20),
        (Limit::MALLOC_HEAP_SIZE, 32 << 20),
        (Limit::DEV_RUNTIME_SYNC_DEPTH, 4),
        (Limit::DEV_RUNTIME_PENDING_LAUNCH_COUNT, 4096),
        (Limit::MAX_L2_FETCH_GRANULARITY, 64),
    ];
    let persist_max = dev
        .attribute(DeviceAttribute::MAX_PERSISTING_L2_CACHE_SIZE)
        .unwrap() as usize;
    if persist_max > 0 {
        limits.push((Limit::PERSISTING_L2_CACHE_SIZE, persist_max.min(4 << 20)));
    } else {
        note("no persisting L2 cache on this device");
    }
    let mut set = 0;
    for (limit, value) in limits {
        let before = match c.limit(limit) {
            Err(e) if e.code() == Some(ErrorCode::UNSUPPORTED_LIMIT) => {
                note(format!("{limit:?}: not supported here ({e})"));
                continue;
            }
            r => r.unwrap(),
        };
        match c.set_limit(limit, value) {
            Err(e)
                if matches!(
                    e.code(),
                    Some(ErrorCode::UNSUPPORTED_LIMIT | ErrorCode::NOT_SUPPORTED)
                ) =>
            {
                note(format!("{limit:?}: not settable here ({e})"));
                continue;
            }
            r => r.unwrap(),
        }
        set += 1;
        let got = c.limit(limit).unwrap();
        match limit {
            // Rounded up by the driver.
            Limit::STACK_SIZE
            | Limit::PRINTF_FIFO_SIZE
            | Limit::MALLOC_HEAP_SIZE
            | Limit::DEV_RUNTIME_PENDING_LAUNCH_COUNT => {
                assert!(
                    got >= value && got <= 2 * value,
                    "{limit:?}: {got} for {value}"
                )
            }
            Limit::PERSISTING_L2_CACHE_SIZE => {
                assert!(got > 0 && got <= persist_max, "{limit:?}: {got}")
            }
            _ => assert_eq!(got, value, "{limit:?}"),
        }
        c.set_limit(limit, before).unwrap();
        let back = c.limit(limit).unwrap();
        if limit == Limit::PERSISTING_L2_CACHE_SIZE {
            // The driver keeps the set-aside in its own granularity.
            assert!(back <= persist_max, "{limit:?} restored: {back}");
        } else if limit == Limit::STACK_SIZE {
            assert!(back <= got, "{limit:?} restored: {back}");
        } else {
            assert_eq!(back, before, "{limit:?} restored");
        }
    }
    assert!(set >= 4, "only {set} limits were settable");
    c.reset_persisting_l2_cache().unwrap();
    // A limit the driver does not know: an error, and the context works.
    assert!(c.set_limit(Limit::from_raw(0x7777), 1).is_err());
    let b = DeviceBuffer::from_slice(&c, &[2u32; 8]).unwrap();
    assert_eq!(b.to_vec().unwrap(), [2; 8]);
}

#[gpu_test]
fn a_context_with_an_sm_count_affinity_uses_that_many() {
    let ctx = gpu_or_skip!();
    let dev = ctx.device();
    let sms = dev
        .attribute(DeviceAttribute::MULTIPROCESSOR_COUNT)
        .unwrap() as u32;
    let want = (sms / 2).max(1);
    if !dev
        .supports_exec_affinity(ExecAffinityType::SM_COUNT)
        .unwrap()
    {
        // Without MPS the driver refuses the affinity: an error, and nothing else changes.
        crate::common::note("SM-count execution affinity is not supported here (it needs MPS)");
        let before = Context::current_raw().unwrap();
        let r = Context::with_params(
            dev,
            ContextFlags::SCHED_AUTO,
            &ContextCreateParams::new().sm_count(want),
        );
        assert!(r.is_err(), "an unsupported affinity was accepted");
        assert_eq!(Context::current_raw().unwrap(), before);
        let b = DeviceBuffer::from_slice(&ctx, &[5u32; 8]).unwrap();
        assert_eq!(b.to_vec().unwrap(), [5; 8]);
        return;
    }
    let c = match Context::with_params(
        dev,
        ContextFlags::SCHED_AUTO,
        &ContextCreateParams::new().sm_count(want),
    ) {
        Err(e @ Error::Unsupported { .. }) => skip(format!("cuCtxCreate_v4: {e}")),
        r => r.unwrap(),
    };
    let got = c.exec_affinity_sm_count().unwrap();
    assert!(
        got >= want && got <= sms,
        "asked {want} of {sms}, got {got}"
    );
    assert!(
        got < sms,
        "the affinity did not limit the SMs: {got} of {sms}"
    );
    // The context runs kernels.
    let m = Module::load_data(&c, TEST_KERNELS).unwrap();
    let f = m.function("fill_u32").unwrap();
    let s = Stream::new(&c, StreamFlags::NON_BLOCKING).unwrap();
    let mut out = DeviceBuffer::<u32>::zeroed(&c, 1000).unwrap();
    let (v, n) = (6u32, 1000i32);
    // SAFETY: fill_u32(unsigned*, unsigned, int) writes out[i] for i < n = out's length.
    unsafe {
        f.launch(
            &s,
            &LaunchConfig::for_num_elems(1000).unwrap(),
            (out.as_view_mut(), &v, &n),
        )
    }
    .unwrap();
    s.synchronize().unwrap();
    assert!(out.to_vec().unwrap().iter().all(|&x| x == 6));
}
