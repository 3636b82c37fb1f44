//! Seed 001 (CUDA Driver API context management) with the safe API: two contexts created with
//! [`Context::new`] (floating: no operation of cuda-driver changes the caller's stack, so the
//! port pushes them itself, in the seed's order, to get the stack `cuCtxCreate` leaves), the
//! current context, a push and pop through a [`ContextGuard`](cuda_driver::context::ContextGuard)
//! (guards pop in order, nested), then the device's primary context. Where the seed prints
//! what the stack holds, this port also checks it.
//!
//! Run: `cargo run -p cuda-driver-examples --example context_stack`

use std::process::ExitCode;

use cuda_driver::handle::Handle;
use cuda_driver::{sys, types::ContextFlags, Context, Device};
use cuda_driver_examples::{check, run_example, Failure};

fn main() -> ExitCode {
    run_example(run)
}

/// The top of this thread's context stack (null when it is empty), as the seed prints it.
fn current() -> Result<sys::CUcontext, Failure> {
    Ok(Context::current_raw()?.unwrap_or(std::ptr::null_mut()))
}

fn run() -> Result<(), Failure> {
    let device = Device::get(0)?;

    // Two contexts on device 0. cuCtxCreate pushes each on this thread's stack; the safe
    // Context::new leaves the stack as it was, so push them as the seed's creation does.
    let ctx_a = Context::new(device, ContextFlags::SCHED_AUTO)?;
    let ctx_b = Context::new(device, ContextFlags::SCHED_AUTO)?;
    check!(
        current()?.is_null(),
        "Context::new leaves the caller's stack alone"
    );
    let stack_a = ctx_a.push()?;
    let stack_b = ctx_b.push()?;
    println!("ctxA = {:p}", ctx_a.as_raw());
    println!("ctxB = {:p}", ctx_b.as_raw());
    check!(ctx_a != ctx_b, "two created contexts are two contexts");
    // contexts stack:
    //     ctxB -- top <--- current_context
    //     ctxA

    let current_context = current()?;
    println!("current_context = {current_context:p}");
    check!(
        current_context == ctx_b.as_raw(),
        "after creating ctxA then ctxB, ctxB is current"
    );

    {
        // Push ctxA for this scope: the guard pops it when dropped.
        let guard = ctx_a.push()?;
        let current_context = current()?;
        println!("after pushing, current_context = {current_context:p}");
        check!(
            current_context == ctx_a.as_raw(),
            "after pushing ctxA, ctxA is current"
        );
        // contexts stack:
        //     ctxA -- top <--- current_context
        //     ctxB
        //     ctxA
        {
            // Guards nest: the inner one pops first.
            let _inner = ctx_b.push()?;
            check!(
                ctx_b.is_current()?,
                "a nested push of ctxB makes it current"
            );
        }
        check!(ctx_a.is_current()?, "the inner guard popped only ctxB");

        // Pop explicitly (dropping the guard does the same, reporting rather than returning
        // a failure): the popped context is ctxA.
        let popped_ctx = guard.context().as_raw();
        guard.pop()?;
        println!("after poping, popped_ctx = {popped_ctx:p}");
        check!(popped_ctx == ctx_a.as_raw(), "the pop takes off ctxA");
    }
    let current_context = current()?;
    println!("after poping, current_context = {current_context:p}");
    check!(
        current_context == ctx_b.as_raw(),
        "after the pop, ctxB is current again"
    );

    // Take both off the stack (in order), then destroy them with their last handles
    // (cuCtxDestroy).
    stack_b.pop()?;
    stack_a.pop()?;
    check!(current()?.is_null(), "the stack is empty again");
    drop(ctx_a);
    drop(ctx_b);

    // The primary context: one per device, reference counted, shared with the runtime API.
    let primary = device.primary_context()?;
    println!("ctxA = {:p}", primary.as_raw());
    check!(primary.is_primary(), "the device's primary context");
    let (_, active) = device.primary_context_state()?;
    check!(active, "a retained primary context is active");
    // Clones share the one retain; dropping the last handle releases it.
    let clone = primary.clone();
    drop(primary);
    check!(
        device.primary_context_state()?.1,
        "the clone still holds it"
    );
    drop(clone);
    let (_, active) = device.primary_context_state()?;
    check!(
        !active,
        "the primary context is inactive once its only retain is released"
    );
    println!("All checks passed.");
    Ok(())
}
