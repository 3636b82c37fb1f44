//! GPU tests: the driver's error log (Error Log Management Functions): the callback into the
//! `log` crate, the current position, dumps to memory and to a file.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use cuda_driver::prelude::*;
use cuda_driver::{
    logs::LogForwarder, logs::LogPosition, types::ErrorCode, types::Limit, Context, Device,
    DeviceBuffer,
};

use crate::common::{note, or_skip, skip};

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
