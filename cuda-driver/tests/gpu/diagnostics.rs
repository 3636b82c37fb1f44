//! GPU tests: diagnostics (issue #14): coredump settings (process-wide and per context), the
//! driver's error log (callback into the `log` crate, current position, dumps to memory and
//! to a file) and checkpointing a child process (lock, checkpoint, restore, unlock).

// Parts of this file need Unix; elsewhere what only they use is unused.
#![cfg_attr(not(unix), allow(unused_imports, dead_code))]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use cuda_driver::prelude::*;
use cuda_driver::{
    checkpoint_checkpoint, checkpoint_lock, checkpoint_restore, checkpoint_restore_thread_id,
    checkpoint_state, checkpoint_unlock, coredump_attribute_global, set_coredump_attribute_global,
    Context, ContextFlags, CoredumpGenerationFlags, CoredumpSettings, CoredumpValue, Device,
    DeviceBuffer, Error, ErrorCode, Limit, LogForwarder, LogPosition, ProcessState,
};

#[cfg(unix)]
use crate::child::{child_role, spawn_child};
use crate::common::{note, skip};

/// Skips the test when `r` says the driver is too old for the call.
#[track_caller]
fn or_skip<T>(r: Result<T, Error>, what: &str) -> T {
    match r {
        Err(e @ Error::Unsupported { .. }) => skip(format!("{what}: {e}")),
        r => r.unwrap(),
    }
}

/// The flags with `SKIP_SHARED_MEMORY` toggled: a value different from `f`.
fn toggled(f: CoredumpGenerationFlags) -> CoredumpGenerationFlags {
    f ^ CoredumpGenerationFlags::SKIP_SHARED_MEMORY
}

#[gpu_test]
fn coredump_settings_round_trip_globally_and_per_context() {
    // Process-wide settings: no other test may run meanwhile.
    let ctx = gpu_exclusive_or_skip!();
    let tmp = std::env::temp_dir();
    let file = tmp
        .join(format!("cuda-driver-test-core.{}", std::process::id()))
        .to_string_lossy()
        .into_owned();

    // --- Process-wide. Save everything first, restore everything last.
    let settings = [
        CoredumpSettings::ENABLE_ON_EXCEPTION,
        CoredumpSettings::TRIGGER_HOST,
        CoredumpSettings::LIGHTWEIGHT,
        CoredumpSettings::ENABLE_USER_TRIGGER,
        CoredumpSettings::FILE,
        CoredumpSettings::PIPE,
        CoredumpSettings::GENERATION_FLAGS,
    ];
    let first = coredump_attribute_global(CoredumpSettings::ENABLE_ON_EXCEPTION);
    let first = or_skip(first, "coredump attributes need CUDA 12.1");
    let saved: Vec<(CoredumpSettings, CoredumpValue)> = settings
        .iter()
        .map(|&s| (s, coredump_attribute_global(s).unwrap()))
        .collect();
    assert_eq!(saved[0].1, first);
    for (s, v) in &saved {
        let kind_ok = match v {
            CoredumpValue::Bool(_) => !matches!(
                *s,
                CoredumpSettings::FILE
                    | CoredumpSettings::PIPE
                    | CoredumpSettings::GENERATION_FLAGS
            ),
            CoredumpValue::Path(p) => {
                matches!(*s, CoredumpSettings::FILE | CoredumpSettings::PIPE) && p.len() < 1024
            }
            CoredumpValue::Flags(_) => *s == CoredumpSettings::GENERATION_FLAGS,
        };
        assert!(kind_ok, "{s:?} read as {v:?}");
    }
    note(format!("global coredump settings: {saved:?}"));
    let restore_global = || {
        // Booleans first (the deprecated ones rewrite the flags), the flags last.
        for (s, v) in saved
            .iter()
            .filter(|(s, _)| *s != CoredumpSettings::GENERATION_FLAGS)
        {
            if matches!(v, CoredumpValue::Path(p) if p.is_empty()) {
                continue;
            }
            // ENABLE_USER_TRIGGER and PIPE were never changed.
            if matches!(
                *s,
                CoredumpSettings::ENABLE_USER_TRIGGER | CoredumpSettings::PIPE
            ) {
                continue;
            }
            set_coredump_attribute_global(*s, v).unwrap();
        }
        set_coredump_attribute_global(CoredumpSettings::GENERATION_FLAGS, &saved[6].1).unwrap();
    };

    // Each boolean: set to the other value, read it back.
    for s in [
        CoredumpSettings::ENABLE_ON_EXCEPTION,
        CoredumpSettings::TRIGGER_HOST,
        CoredumpSettings::LIGHTWEIGHT,
    ] {
        let CoredumpValue::Bool(b) = coredump_attribute_global(s).unwrap() else {
            panic!("{s:?} is a boolean");
        };
        set_coredump_attribute_global(s, &CoredumpValue::Bool(!b)).unwrap();
        assert_eq!(
            coredump_attribute_global(s).unwrap(),
            CoredumpValue::Bool(!b),
            "{s:?}"
        );
        set_coredump_attribute_global(s, &CoredumpValue::Bool(b)).unwrap();
        assert_eq!(
            coredump_attribute_global(s).unwrap(),
            CoredumpValue::Bool(b)
        );
    }
    // The generation flags.
    let CoredumpValue::Flags(f) = saved[6].1.clone() else {
        panic!("GENERATION_FLAGS are flags");
    };
    set_coredump_attribute_global(
        CoredumpSettings::GENERATION_FLAGS,
        &CoredumpValue::Flags(toggled(f)),
    )
    .unwrap();
    assert_eq!(
        coredump_attribute_global(CoredumpSettings::GENERATION_FLAGS).unwrap(),
        CoredumpValue::Flags(toggled(f))
    );
    // The file: a new path reads back, and a context created now starts with it.
    set_coredump_attribute_global(CoredumpSettings::FILE, &CoredumpValue::Path(file.clone()))
        .unwrap();
    assert_eq!(
        coredump_attribute_global(CoredumpSettings::FILE).unwrap(),
        CoredumpValue::Path(file.clone())
    );
    let fresh = Context::new(ctx.device(), ContextFlags::SCHED_AUTO).unwrap();
    assert_eq!(
        fresh.coredump_attribute(CoredumpSettings::FILE).unwrap(),
        CoredumpValue::Path(file.clone()),
        "a context created after the global change inherits it"
    );
    drop(fresh);
    restore_global();
    for (s, v) in &saved {
        if matches!(v, CoredumpValue::Path(p) if p.is_empty()) {
            continue;
        }
        assert_eq!(&coredump_attribute_global(*s).unwrap(), v, "{s:?} restored");
    }

    // --- Per context (a context of our own: nothing to restore on the primary one).
    let c = Context::new(ctx.device(), ContextFlags::SCHED_AUTO).unwrap();
    let CoredumpValue::Bool(on) = c
        .coredump_attribute(CoredumpSettings::ENABLE_ON_EXCEPTION)
        .unwrap()
    else {
        panic!("ENABLE_ON_EXCEPTION is a boolean");
    };
    c.set_coredump_attribute(
        CoredumpSettings::ENABLE_ON_EXCEPTION,
        &CoredumpValue::Bool(!on),
    )
    .unwrap();
    assert_eq!(
        c.coredump_attribute(CoredumpSettings::ENABLE_ON_EXCEPTION)
            .unwrap(),
        CoredumpValue::Bool(!on)
    );
    // The process-wide value did not move.
    assert_eq!(
        coredump_attribute_global(CoredumpSettings::ENABLE_ON_EXCEPTION).unwrap(),
        saved[0].1
    );
    c.set_coredump_attribute(
        CoredumpSettings::ENABLE_ON_EXCEPTION,
        &CoredumpValue::Bool(on),
    )
    .unwrap();
    let CoredumpValue::Flags(cf) = c
        .coredump_attribute(CoredumpSettings::GENERATION_FLAGS)
        .unwrap()
    else {
        panic!("GENERATION_FLAGS are flags");
    };
    c.set_coredump_attribute(
        CoredumpSettings::GENERATION_FLAGS,
        &CoredumpValue::Flags(toggled(cf)),
    )
    .unwrap();
    assert_eq!(
        c.coredump_attribute(CoredumpSettings::GENERATION_FLAGS)
            .unwrap(),
        CoredumpValue::Flags(toggled(cf))
    );
    let ctx_file = format!("{file}.ctx");
    c.set_coredump_attribute(
        CoredumpSettings::FILE,
        &CoredumpValue::Path(ctx_file.clone()),
    )
    .unwrap();
    assert_eq!(
        c.coredump_attribute(CoredumpSettings::FILE).unwrap(),
        CoredumpValue::Path(ctx_file)
    );
    // The primary context is unaffected by another context's settings.
    assert_ne!(
        ctx.coredump_attribute(CoredumpSettings::FILE).unwrap(),
        c.coredump_attribute(CoredumpSettings::FILE).unwrap()
    );

    // Bad input: the pipe and the user trigger cannot be set per context, MAX is no
    // setting; each is an error and the context stays usable.
    assert!(c
        .set_coredump_attribute(
            CoredumpSettings::PIPE,
            &CoredumpValue::Path(format!("{file}.pipe"))
        )
        .is_err());
    assert!(c
        .set_coredump_attribute(
            CoredumpSettings::ENABLE_USER_TRIGGER,
            &CoredumpValue::Bool(true)
        )
        .is_err());
    assert!(c
        .set_coredump_attribute(CoredumpSettings::MAX, &CoredumpValue::Bool(true))
        .is_err());
    assert!(coredump_attribute_global(CoredumpSettings::MAX).is_err());
    // The user trigger is process-wide: a context neither sets nor reports it (driver 580
    // answers CUDA_ERROR_INVALID_VALUE), and the context stays usable.
    assert!(c
        .coredump_attribute(CoredumpSettings::ENABLE_USER_TRIGGER)
        .is_err());
    let b = DeviceBuffer::from_slice(&c, &[3u32; 16]).unwrap();
    assert_eq!(b.to_vec().unwrap(), [3; 16]);
}

/// The `log` crate's logger of this test binary: keeps what the driver's log callback
/// forwards (target `cuda_driver::driver`) while `CAPTURING` is set.
struct Capture;

static CAPTURED: Mutex<Vec<String>> = Mutex::new(Vec::new());
static CAPTURING: AtomicBool = AtomicBool::new(false);

impl log::Log for Capture {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.target() == "cuda_driver::driver"
    }
    fn log(&self, r: &log::Record<'_>) {
        if self.enabled(r.metadata()) && CAPTURING.load(Ordering::SeqCst) {
            CAPTURED
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(format!("{}", r.args()));
        }
    }
    fn flush(&self) {}
}

/// Installs [`Capture`] once; `false` when another logger was installed first.
fn install_capture() -> bool {
    static INSTALLED: OnceLock<bool> = OnceLock::new();
    *INSTALLED.get_or_init(|| {
        static LOGGER: Capture = Capture;
        let ok = log::set_logger(&LOGGER).is_ok();
        if ok {
            log::set_max_level(log::LevelFilter::Trace);
        }
        ok
    })
}

/// Calls the driver with input it refuses, each an error that a driver with error logging
/// may log; every call must fail and leave `ctx` usable.
pub(crate) fn provoke_driver_errors(ctx: &Context) {
    assert!(DeviceBuffer::<u8>::new(ctx, 1 << 44).is_err());
    assert!(ctx.set_limit(Limit::from_raw(0x7777), 1).is_err());
    assert!(Device::by_pci_bus_id("not a bus id").is_err());
    assert!(ctx.set_limit(Limit::STACK_SIZE, usize::MAX).is_err());
    let b = DeviceBuffer::from_slice(ctx, &[1u8; 8]).unwrap();
    assert_eq!(b.to_vec().unwrap(), [1; 8]);
}

#[gpu_test]
fn driver_log_reaches_the_callback_and_the_dumps() {
    // The log callback is process-wide: no other test's errors may reach it meanwhile.
    let ctx = gpu_exclusive_or_skip!();
    if !install_capture() {
        skip("another `log` logger is installed in this process");
    }
    let start = or_skip(LogPosition::current(), "driver logs need CUDA 12.9");
    CAPTURED.lock().unwrap().clear();
    CAPTURING.store(true, Ordering::SeqCst);
    let fwd = LogForwarder::register().unwrap();
    provoke_driver_errors(&ctx);
    std::thread::sleep(Duration::from_millis(200));
    let seen = CAPTURED.lock().unwrap().clone();

    let mut pos = start;
    let mem = pos.dump_to_memory(1 << 20).unwrap();
    let path = std::env::temp_dir().join(format!("cuda-driver-test-log.{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let mut pos2 = start;
    pos2.dump_to_file(&path).unwrap();
    let file = std::fs::read_to_string(&path);
    let _ = std::fs::remove_file(&path);

    // Unregistered: later errors reach the log, not the callback.
    fwd.unregister().unwrap();
    let after_unregister = CAPTURED.lock().unwrap().len();
    provoke_driver_errors(&ctx);
    std::thread::sleep(Duration::from_millis(200));
    let later = CAPTURED.lock().unwrap().len();
    CAPTURING.store(false, Ordering::SeqCst);
    // Dropping a second registration unregisters too (counted, not panicking).
    drop(LogForwarder::register().unwrap());

    if seen.is_empty() && mem.trim().is_empty() {
        note("the driver logged none of the provoked errors; checked that the log APIs work");
        assert!(
            file.is_ok() || matches!(file, Err(ref e) if e.kind() == std::io::ErrorKind::NotFound),
            "{file:?}"
        );
        assert_eq!(later, after_unregister);
        return;
    }
    note(format!("callback saw {} messages: {seen:?}", seen.len()));
    note(format!("memory dump: {mem:?}"));
    assert!(
        !seen.is_empty(),
        "the dump has messages but the callback saw none: {mem}"
    );
    assert!(
        !mem.trim().is_empty(),
        "the callback saw {seen:?} but the dump is empty"
    );
    let file = file.expect("cuLogsDumpToFile wrote the file");
    assert!(!file.trim().is_empty(), "the file dump is empty");
    assert_eq!(
        later, after_unregister,
        "the callback ran after it was unregistered"
    );
    // The second batch was logged (only the callback is gone), after the advanced position.
    let again = pos.dump_to_memory(1 << 20).unwrap();
    assert!(
        !again.trim().is_empty(),
        "the second batch is not in the log"
    );
}

/// Hole 8: a dump of the driver log into memory allocates only what the driver can fill
/// (at most [`LogPosition::MAX_DUMP_BYTES`]): `usize::MAX` and other absurd sizes return the
/// log, `0` returns nothing without asking the driver, `1` at most one byte (or the driver's
/// refusal when no message fits); the context stays usable.
#[gpu_test]
fn dumping_the_driver_log_with_absurd_sizes_is_safe() {
    let ctx = gpu_or_skip!();
    let start = or_skip(LogPosition::current(), "driver logs need CUDA 12.9");
    provoke_driver_errors(&ctx);
    for max in [usize::MAX, usize::MAX - 1, 1 << 40, 0, 1] {
        let mut pos = start;
        match pos.dump_to_memory(max) {
            Ok(text) => {
                assert!(text.len() <= max, "{max}: {} bytes", text.len());
                if max == 0 {
                    assert!(text.is_empty());
                    assert_eq!(pos, start, "a dump of 0 bytes leaves the position alone");
                }
            }
            // No message fits in one byte: the driver says so.
            Err(e) if max == 1 && e.code() == Some(ErrorCode::INVALID_VALUE) => {}
            Err(e) => panic!("dump_to_memory({max}): {e}"),
        }
    }
    let b = DeviceBuffer::from_slice(&ctx, &[5u8; 8]).unwrap();
    assert_eq!(b.to_vec().unwrap(), [5; 8]);
}

const CHECKPOINT_ROLE: &str = "checkpoint-child";

#[cfg(unix)]
#[gpu_test]
fn checkpoint_a_child_process_and_its_data_survives() {
    if let Some(mut chan) = child_role(CHECKPOINT_ROLE) {
        // The child: device data, then wait while the parent checkpoints and restores it.
        let ctx = gpu_or_skip!();
        let data: Vec<u32> = crate::common::xorshift32(1 << 16, 77).collect();
        let buf = DeviceBuffer::from_slice(&ctx, &data).unwrap();
        ctx.synchronize().unwrap();
        chan.send_u64(std::process::id() as u64).unwrap();
        let go = chan.recv().unwrap();
        if go == b"skip" {
            return;
        }
        assert_eq!(go, b"check");
        assert_eq!(buf.to_vec().unwrap(), data, "device data after restore");
        let mut more = DeviceBuffer::<u32>::zeroed(&ctx, 1024).unwrap();
        more.memset(9u32).unwrap();
        assert!(more.to_vec().unwrap().iter().all(|&v| v == 9));
        chan.send(b"ok").unwrap();
        return;
    }
    let _ctx = gpu_or_skip!();
    // This process: running, and it names its restore thread.
    let me = std::process::id() as i32;
    match checkpoint_state(me) {
        Err(e @ Error::Unsupported { .. }) => skip(format!("checkpointing needs CUDA 12.8: {e}")),
        Ok(s) => assert_eq!(s, ProcessState::RUNNING),
        Err(e) => note(format!("checkpoint state of this process: {e}")),
    }
    match checkpoint_restore_thread_id(me) {
        Ok(tid) => assert!(tid > 0, "{tid}"),
        Err(e) => note(format!("restore thread id of this process: {e}")),
    }
    // A process that does not exist: an error.
    assert!(checkpoint_state(i32::MAX).is_err());

    let (mut child, mut chan) = spawn_child(CHECKPOINT_ROLE);
    let r = chan.recv_u64();
    let pid = child.check(r, "the child's pid") as i32;
    assert_eq!(checkpoint_state(pid).unwrap(), ProcessState::RUNNING);
    let tid = checkpoint_restore_thread_id(pid).unwrap();
    assert!(tid > 0, "restore thread id {tid}");
    if let Err(e) = checkpoint_lock(pid, 30_000) {
        if matches!(
            e.code(),
            Some(ErrorCode::NOT_SUPPORTED | ErrorCode::NOT_PERMITTED)
        ) {
            let r = chan.send(b"skip");
            child.check(r, "tell the child to stop");
            child.finish();
            skip(format!("the driver refuses to checkpoint here: {e}"));
        }
        panic!("cuCheckpointProcessLock: {e}");
    }
    assert_eq!(checkpoint_state(pid).unwrap(), ProcessState::LOCKED);
    checkpoint_checkpoint(pid).unwrap();
    assert_eq!(checkpoint_state(pid).unwrap(), ProcessState::CHECKPOINTED);
    checkpoint_restore(pid).unwrap();
    assert_eq!(checkpoint_state(pid).unwrap(), ProcessState::LOCKED);
    checkpoint_unlock(pid).unwrap();
    assert_eq!(checkpoint_state(pid).unwrap(), ProcessState::RUNNING);
    let r = chan.send(b"check");
    child.check(r, "tell the child to check");
    let r = chan.recv();
    let ok = child.check(r, "the child's verdict");
    assert_eq!(ok, b"ok");
    child.finish();
}
