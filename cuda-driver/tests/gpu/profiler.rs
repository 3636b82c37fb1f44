//! GPU tests: profiler control (`cuProfilerStart`, `cuProfilerStop`).
//!
//! Without a profiler attached the driver calls do nothing observable, so these tests check
//! what the wrappers promise around them: the calls succeed on the context they are given,
//! whatever is current on the calling thread, leave the thread's context stack as they found
//! it, and a `ProfilerRange` stops (without a drop error) however its scope ends.

use std::panic::{catch_unwind, AssertUnwindSafe};

use cuda_driver::prelude::*;
use cuda_driver::{
    error::drop_error_count, profiler::ProfilerRange, sys, types::ContextFlags, Context, Device,
    DeviceBuffer, Error,
};

fn current() -> Option<sys::CUcontext> {
    Context::current_raw().unwrap()
}

/// Work inside a profiled span runs as it would outside: a memset read back.
fn memset_round_trip(ctx: &Context, value: u32) {
    let mut buf = DeviceBuffer::from_slice(ctx, &[0u32; 256]).unwrap();
    buf.memset(value).unwrap();
    assert_eq!(buf.to_vec().unwrap(), [value; 256]);
}

#[gpu_test]
fn start_and_stop_leave_the_callers_stack_as_they_found_it() {
    let ctx = gpu_or_skip!();
    // Each test runs on a thread of its own, with an empty context stack.
    assert_eq!(current(), None);
    ctx.profiler_start().unwrap();
    assert_eq!(current(), None, "profiler_start left its context current");
    memset_round_trip(&ctx, 0x5eed_0001);
    ctx.profiler_stop().unwrap();
    assert_eq!(current(), None, "profiler_stop left its context current");
    // Starts and stops are not counted: a second of each does nothing and succeeds.
    ctx.profiler_start().unwrap();
    ctx.profiler_start().unwrap();
    ctx.profiler_stop().unwrap();
    ctx.profiler_stop().unwrap();
    assert_eq!(current(), None);
    // With the context current already, it stays the one current context.
    {
        let _g = ctx.push().unwrap();
        ctx.profiler_start().unwrap();
        assert_eq!(current(), Some(ctx.as_raw()));
        ctx.profiler_stop().unwrap();
        assert_eq!(current(), Some(ctx.as_raw()));
    }
    assert_eq!(current(), None);
}

#[gpu_test]
fn start_stop_and_a_range_with_another_context_current() {
    // Creates a context and checks the drop-error count: the GPU alone.
    let ctx = gpu_exclusive_or_skip!();
    let other = Context::new(ctx.device(), ContextFlags::SCHED_AUTO).unwrap();
    assert_eq!(current(), None);
    let before = drop_error_count();
    let guard = other.push().unwrap();
    ctx.profiler_start().unwrap();
    assert_eq!(current(), Some(other.as_raw()));
    ctx.profiler_stop().unwrap();
    assert_eq!(current(), Some(other.as_raw()));
    {
        let range = ctx.profiler_range().unwrap();
        assert_eq!(range.context().as_raw(), ctx.as_raw());
        assert_eq!(current(), Some(other.as_raw()));
        memset_round_trip(&ctx, 0x5eed_0002);
        assert_eq!(current(), Some(other.as_raw()));
    } // the drop stops ctx's collection and pops what it pushed
    assert_eq!(current(), Some(other.as_raw()));
    // The explicit stop, too.
    let range = ctx.profiler_range().unwrap();
    range.stop().unwrap();
    assert_eq!(current(), Some(other.as_raw()));
    // `other` itself can be profiled while current.
    other.profiler_range().unwrap().stop().unwrap();
    assert_eq!(current(), Some(other.as_raw()));
    guard.pop().unwrap();
    assert_eq!(current(), None);
    assert_eq!(
        drop_error_count(),
        before,
        "a range's drop reported an error"
    );
}

/// One profiled step that returns early with `?` when `fail`.
fn profiled_step(ctx: &Context, fail: bool) -> cuda_driver::Result<u32> {
    let _range: ProfilerRange<'_> = ctx.profiler_range()?;
    let buf = DeviceBuffer::from_slice(ctx, &[7u32; 64])?;
    if fail {
        Device::get(usize::MAX)?;
    }
    Ok(buf.to_vec()?.iter().sum())
}

#[gpu_test]
fn a_range_stops_on_early_return_and_on_panic() {
    // Checks the drop-error count: the GPU alone.
    let ctx = gpu_exclusive_or_skip!();
    let before = drop_error_count();
    assert_eq!(current(), None);

    assert_eq!(profiled_step(&ctx, false).unwrap(), 7 * 64);
    assert_eq!(current(), None);

    let e = profiled_step(&ctx, true).unwrap_err();
    assert!(
        matches!(e, Error::DeviceOutOfRange { .. }),
        "unexpected error: {e}"
    );
    assert_eq!(current(), None, "the early return left a context current");
    assert_eq!(
        drop_error_count(),
        before,
        "the range's drop reported an error"
    );

    // A panic with the context pushed by the caller: the unwinding drop stops collection
    // and leaves the caller's push in place.
    let guard = ctx.push().unwrap();
    let panicked = catch_unwind(AssertUnwindSafe(|| {
        let _range = ctx.profiler_range().unwrap();
        memset_round_trip(&ctx, 0x5eed_0003);
        panic!("profiled work failed");
    }));
    assert!(panicked.is_err());
    assert_eq!(current(), Some(ctx.as_raw()));
    guard.pop().unwrap();
    assert_eq!(current(), None);
    assert_eq!(
        drop_error_count(),
        before,
        "the range's drop reported an error"
    );

    // The context is usable afterwards, and profiling can start and stop again.
    ctx.profiler_start().unwrap();
    memset_round_trip(&ctx, 0x5eed_0004);
    ctx.profiler_stop().unwrap();
}

#[gpu_test]
fn a_range_moves_to_another_thread_and_stops_there() {
    // Checks the drop-error count: the GPU alone.
    let ctx = gpu_exclusive_or_skip!();
    let before = drop_error_count();
    let stopped = ctx.profiler_range().unwrap();
    let dropped = ctx.profiler_range().unwrap();
    assert_eq!(current(), None);
    std::thread::scope(|s| {
        s.spawn(move || {
            // A new thread, with an empty stack: the stop and the drop leave it empty.
            assert_eq!(current(), None);
            stopped.stop().unwrap();
            assert_eq!(current(), None);
            drop(dropped);
            assert_eq!(current(), None);
        });
    });
    assert_eq!(current(), None);
    assert_eq!(
        drop_error_count(),
        before,
        "the range's drop reported an error"
    );
}
