//! Seed 001 (CUDA Driver API context management), ported line for line to `cuda_driver_sys`:
//! two contexts made with cuCtxCreate on this thread's context stack, push, pop and
//! cuCtxGetCurrent, cuCtxDestroy, then the device's primary context (retain / release).
//! Where the seed prints what the stack holds, this port also checks it.
//!
//! CUDA 13's `cuCtxCreate` is `cuCtxCreate_v4`, which takes a `CUctxCreateParams*` before the
//! flags; null asks for what the seed's three-argument call did.
//!
//! Run: `cargo run -p cuda-driver-examples --example raw_context_stack`

// The seed's C names (ctxA, ctxB) are kept.
#![allow(non_snake_case)]

use std::ffi::{c_int, c_uint};
use std::ptr::null_mut;

use cuda_driver_examples::{check_driver, ensure, raw_init_or_exit};
use cuda_driver_sys::*;

fn main() {
    // checkDriver(cuInit(0))
    raw_init_or_exit();

    // Two contexts on device 0; each cuCtxCreate pushes the new context on this thread's stack.
    let mut ctxA: CUcontext = null_mut();
    let mut ctxB: CUcontext = null_mut();
    let device: CUdevice = 0;
    // SAFETY: `ctxA` and `ctxB` are live out-pointers for the new handles; null
    // CUctxCreateParams is allowed (no execution affinity, no CIG); device 0 exists, as
    // cuInit succeeded.
    unsafe {
        check_driver!(cuCtxCreate(
            &mut ctxA,
            null_mut(),
            CU_CTX_SCHED_AUTO,
            device
        ));
        check_driver!(cuCtxCreate(
            &mut ctxB,
            null_mut(),
            CU_CTX_SCHED_AUTO,
            device
        ));
    }
    println!("ctxA = {ctxA:p}");
    println!("ctxB = {ctxB:p}");
    ensure!(
        !ctxA.is_null() && !ctxB.is_null(),
        "both contexts were created"
    );
    ensure!(ctxA != ctxB, "two cuCtxCreate calls make two contexts");
    // contexts stack:
    //     ctxB -- top <--- current_context
    //     ctxA

    // The current context is the top of the stack: ctxB, the last one created.
    let mut current_context: CUcontext = null_mut();
    // SAFETY: `current_context` is a live out-pointer for a CUcontext.
    unsafe {
        check_driver!(cuCtxGetCurrent(&mut current_context));
    }
    println!("current_context = {current_context:p}");
    ensure!(
        current_context == ctxB,
        "after creating ctxA then ctxB, ctxB is current"
    );

    // Push ctxA: it becomes current.
    // SAFETY: `ctxA` is a live context created above; `current_context` is a live out-pointer.
    unsafe {
        check_driver!(cuCtxPushCurrent(ctxA));
        check_driver!(cuCtxGetCurrent(&mut current_context));
    }
    println!("after pushing, current_context = {current_context:p}");
    ensure!(
        current_context == ctxA,
        "after pushing ctxA, ctxA is current"
    );
    // contexts stack:
    //     ctxA -- top <--- current_context
    //     ctxB
    //     ctxA

    // Pop: the popped context is ctxA, and ctxB is current again.
    let mut popped_ctx: CUcontext = null_mut();
    // SAFETY: the stack is not empty (ctxA is on top); both out-pointers are live.
    unsafe {
        check_driver!(cuCtxPopCurrent(&mut popped_ctx));
        check_driver!(cuCtxGetCurrent(&mut current_context));
    }
    println!("after poping, popped_ctx = {popped_ctx:p}");
    println!("after poping, current_context = {current_context:p}");
    ensure!(
        popped_ctx == ctxA,
        "the pop returns ctxA, the context pushed last"
    );
    ensure!(
        current_context == ctxB,
        "after the pop, ctxB is current again"
    );

    // SAFETY: both are live contexts this program created, each destroyed once and not used
    // afterwards; no other thread uses them.
    unsafe {
        check_driver!(cuCtxDestroy(ctxA));
        check_driver!(cuCtxDestroy(ctxB));
    }

    // The primary context: one per device, reference-counted, shared with the runtime API.
    // SAFETY: `ctxA` is a live out-pointer (reused for the primary context, as in the seed).
    unsafe {
        check_driver!(cuDevicePrimaryCtxRetain(&mut ctxA, device));
    }
    println!("ctxA = {ctxA:p}");
    ensure!(
        !ctxA.is_null(),
        "cuDevicePrimaryCtxRetain returns a context"
    );
    let mut flags: c_uint = 0;
    let mut active: c_int = 0;
    // SAFETY: `flags` and `active` are live out-pointers.
    unsafe {
        check_driver!(cuDevicePrimaryCtxGetState(device, &mut flags, &mut active));
    }
    ensure!(active == 1, "a retained primary context is active");

    // The one retain is released: the count drops to zero and the primary context goes away.
    // SAFETY: this program retained the primary context of `device` exactly once above.
    unsafe {
        check_driver!(cuDevicePrimaryCtxRelease(device));
        check_driver!(cuDevicePrimaryCtxGetState(device, &mut flags, &mut active));
    }
    ensure!(
        active == 0,
        "the primary context is inactive once its only retain is released"
    );
    println!("All checks passed.");
}
