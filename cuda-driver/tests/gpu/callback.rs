//! GPU tests: panics where the driver calls into Rust and in `Drop` (issue 23, hole 7).
//!
//! The `log` crate has one logger per process, so the test runs in a child process of its
//! own (see `child.rs`): there it installs a logger that panics on every record, and drives
//! each place where the crate logs without a caller to return an error to: a `Drop` that
//! reports a failed release, the report of a host function's panic (on a driver thread),
//! and the driver-log callback. A panic unwinding across the FFI boundary aborts the child
//! and one out of `Drop` fails its test; either fails the parent's test with the child's
//! output, and the other tests of this process are left alone.

#![cfg_attr(not(unix), allow(unused_imports, dead_code))]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use cuda_driver::prelude::*;
use cuda_driver::{
    error::drop_error_count, error::logger_panic_count, logs::LogForwarder, logs::LogPosition,
    stream::host_fn_panic_count, sys, types::ContextFlags, types::StreamFlags, Context,
    DeviceBuffer, Error, Stream,
};

#[cfg(unix)]
use crate::child::{child_role, spawn_child};
use crate::common::note;

/// The child process's `log` logger: every record panics while [`PANICKING`] is set.
struct PanickingLogger;

static PANICKING: AtomicBool = AtomicBool::new(false);
/// How many records the logger has panicked on.
static THROWN: AtomicUsize = AtomicUsize::new(0);

impl log::Log for PanickingLogger {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, r: &log::Record<'_>) {
        if PANICKING.load(Ordering::SeqCst) {
            THROWN.fetch_add(1, Ordering::SeqCst);
            panic!("the test logger panics on `{}`", r.args());
        }
    }
    fn flush(&self) {}
}

const ROLE: &str = "panicking-logger";

/// Hole 7: with a logger that panics, a `Drop` that reports a failure does not panic, a
/// host function's panic report does not abort the process, nor does the driver-log
/// callback; each caught panic is counted, and the context stays usable.
#[cfg(unix)]
#[gpu_test]
fn a_panicking_logger_never_unwinds_out_of_drop_or_into_the_driver() {
    if let Some(mut chan) = child_role(ROLE) {
        panicking_logger_child();
        chan.send(b"ok").unwrap();
        return;
    }
    let _ctx = gpu_or_skip!();
    let (mut child, mut chan) = spawn_child(ROLE);
    let r = chan.recv();
    let msg = child.check(r, "the child's report");
    assert_eq!(msg, b"ok");
    child.finish();
}

/// The child's side: everything runs with the panicking logger installed.
fn panicking_logger_child() {
    let ctx = gpu_exclusive_or_skip!();
    static LOGGER: PanickingLogger = PanickingLogger;
    assert!(
        log::set_logger(&LOGGER).is_ok(),
        "the child process installs the first logger"
    );
    log::set_max_level(log::LevelFilter::Trace);
    PANICKING.store(true, Ordering::SeqCst);

    // 1. A Drop that reports a failure: a context guard dropped while another context is on
    //    top of this thread's stack refuses to pop and reports it.
    let dev = ctx.device();
    let a = Context::new(dev, ContextFlags::SCHED_AUTO).unwrap();
    let b = Context::new(dev, ContextFlags::SCHED_AUTO).unwrap();
    let drops = drop_error_count();
    let logs = logger_panic_count();
    let thrown = THROWN.load(Ordering::SeqCst);
    let ga = a.push().unwrap();
    let gb = b.push().unwrap();
    let dropped = catch_unwind(AssertUnwindSafe(|| drop(ga)));
    assert!(dropped.is_ok(), "the logger's panic unwound out of a Drop");
    assert_eq!(drop_error_count(), drops + 1, "the refused pop is counted");
    assert!(
        THROWN.load(Ordering::SeqCst) > thrown,
        "the refused pop was reported to the logger"
    );
    assert_eq!(
        logger_panic_count(),
        logs + 1,
        "the logger's panic is counted"
    );
    drop(gb);
    // Take the `a` the refused guard left behind off the stack.
    let mut popped = std::ptr::null_mut();
    // SAFETY: the top of this thread's stack is `a`, pushed above and left there.
    let r = unsafe { sys::cuCtxPopCurrent_v2(&mut popped) };
    assert_eq!(r, sys::CUDA_SUCCESS);
    assert_eq!(popped, a.as_raw());

    // 2. A host function panics: its report, on the driver's thread, meets the panicking
    //    logger.
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let panics = host_fn_panic_count();
    let logs = logger_panic_count();
    let thrown = THROWN.load(Ordering::SeqCst);
    s.launch_host_fn(|| panic!("deliberate panic in a host function"))
        .unwrap();
    s.synchronize().unwrap();
    assert_eq!(host_fn_panic_count(), panics + 1);
    assert!(
        THROWN.load(Ordering::SeqCst) > thrown,
        "the host function's panic was reported to the logger"
    );
    assert_eq!(
        logger_panic_count(),
        logs + 1,
        "the logger's panic is counted"
    );

    // 3. The driver-log callback forwards the driver's messages to the panicking logger.
    match LogPosition::current() {
        Err(e @ Error::Unsupported { .. }) => note(format!("no driver log to test: {e}")),
        Err(e) => panic!("cuLogsCurrent: {e}"),
        Ok(start) => {
            let thrown = THROWN.load(Ordering::SeqCst);
            let logs = logger_panic_count();
            let fwd = LogForwarder::register().unwrap();
            crate::logs::provoke_driver_errors(&ctx);
            // The driver calls the callback from inside the failing calls; the dump tells
            // whether it logged anything at all.
            let mut pos = start;
            let logged = !pos.dump_to_memory(1 << 20).unwrap().trim().is_empty();
            fwd.unregister().unwrap();
            if logged {
                assert!(
                    THROWN.load(Ordering::SeqCst) > thrown,
                    "the driver logged messages but the callback never reached the logger"
                );
                // Every panic of the logger (all of them in the callback) was caught.
                assert_eq!(
                    logger_panic_count() - logs,
                    THROWN.load(Ordering::SeqCst) - thrown
                );
            } else {
                note("the driver logged none of the provoked errors");
            }
        }
    }
    PANICKING.store(false, Ordering::SeqCst);

    // The process lives, and the context is usable.
    let buf = DeviceBuffer::from_slice(&ctx, &[7u32; 64]).unwrap();
    assert_eq!(buf.to_vec().unwrap(), [7; 64]);
}

/// Issue 23: the closures an executable graph keeps for its host nodes are user code; a
/// captured value whose `Drop` panics when the exec is dropped is caught and counted, and
/// never unwinds out of the exec's `Drop`.
#[gpu_test]
fn a_host_node_closure_whose_captures_panic_on_drop_does_not_unwind_out_of_the_exec() {
    use cuda_driver::{graph::Graph, types::GraphInstantiateFlags};
    struct Bomb;
    impl Drop for Bomb {
        fn drop(&mut self) {
            panic!("a captured value's Drop panics");
        }
    }
    let ctx = gpu_or_skip!();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let g = Graph::new().unwrap();
    let node = g.add_host(&[], || ()).unwrap();
    let mut exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
    let bomb = Bomb;
    let ran = std::sync::Arc::new(AtomicBool::new(false));
    let r = ran.clone();
    exec.set_host_node(node, move || {
        let _keep = &bomb;
        r.store(true, Ordering::SeqCst);
    })
    .unwrap();
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert!(ran.load(Ordering::SeqCst));
    let panics = host_fn_panic_count();
    let dropped = catch_unwind(AssertUnwindSafe(move || drop(exec)));
    assert!(
        dropped.is_ok(),
        "a captured value's panic unwound out of Drop"
    );
    assert!(host_fn_panic_count() > panics, "the panic is counted");
    s.synchronize().unwrap();
}
