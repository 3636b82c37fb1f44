//! Panics where the driver calls into Rust, and in `Drop`.
//!
//! A panic must never unwind across the FFI boundary (the process aborts) nor out of a
//! `Drop` (a double panic aborts too, and a handle would be half released). The places at
//! risk are the code the driver calls (the trampolines of host functions and graph host
//! nodes, the destructors of user objects, the driver-log callback), the release thread,
//! and every `Drop` that reports a failure: each runs user code (a closure, the `Drop` of
//! what it captured) or the [`log`](https://docs.rs/log) facade, whose logger is user code
//! too and may panic.
//!
//! All of them go through this module:
//!
//! * [`guard`] runs code under `catch_unwind` and disposes of a panic's payload without
//!   letting it unwind either (a payload whose own `Drop` panics is leaked);
//! * [`log`] makes the crate's log calls from those places: a logger that panics loses the
//!   message, and the panic is counted in [`logger_panic_count`];
//! * user code is counted by its caller ([`host_fn_panic_count`](crate::stream::host_fn_panic_count)
//!   for host functions and user objects, [`drop_error_count`](crate::error::drop_error_count) for
//!   releases).
//!
//! This module is the crate's lowest layer: it imports nothing of the crate.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Counts the panics of the `log` facade caught by [`log`].
static LOGGER_PANICS: AtomicUsize = AtomicUsize::new(0);

/// How many times the [`log`](https://docs.rs/log) logger has panicked on a message of this
/// crate that was logged where no panic may pass: inside a callback the driver called (a
/// host function's panic report, the driver-log forwarder of
/// [`LogForwarder`](crate::logs::LogForwarder)), on the crate's release thread, or in a `Drop`
/// reporting a failed release. The panic is caught, the message lost and the process goes
/// on; the failure that was being reported is still counted where it belongs
/// ([`drop_error_count`](crate::error::drop_error_count),
/// [`host_fn_panic_count`](crate::stream::host_fn_panic_count)).
pub fn logger_panic_count() -> usize {
    LOGGER_PANICS.load(Ordering::Relaxed)
}

/// Runs `f`, catching a panic: `Some` of its value, or `None` if it panicked (the payload
/// disposed of by [`dispose`]). Nothing unwinds out of this function.
#[inline]
pub(crate) fn guard<R>(f: impl FnOnce() -> R) -> Option<R> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => Some(r),
        Err(payload) => {
            dispose(payload);
            None
        }
    }
}

/// Drops a panic payload under `catch_unwind`: a payload whose own `Drop` panics is leaked
/// (`mem::forget`, the second payload too). Returns `false` if it was leaked.
#[cold]
pub(crate) fn dispose(payload: Box<dyn Any + Send>) -> bool {
    match catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        Ok(()) => true,
        Err(second) => {
            std::mem::forget(second);
            false
        }
    }
}

/// Makes a log call (`f` holds one `log::warn!` or the like) where no panic may pass: a
/// panicking logger is caught, counted in [`logger_panic_count`], and its payload disposed
/// of. Costs what the log call costs, plus nothing when it does not panic.
#[inline]
pub(crate) fn log(f: impl FnOnce()) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(f)) {
        LOGGER_PANICS.fetch_add(1, Ordering::Relaxed);
        dispose(payload);
    }
}

/// The text of a panic payload (`panic!`'s message, or a placeholder).
pub(crate) fn payload_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".into()
    }
}

/// A `log` logger for the unit tests: panics on every record logged on a thread that asked
/// for it ([`panic_on_this_thread`](test_logger::panic_on_this_thread)), so that tests
/// running in parallel on other threads are not disturbed.
#[cfg(test)]
pub(crate) mod test_logger {
    use std::cell::Cell;
    use std::sync::Once;

    thread_local! {
        static PANIC_HERE: Cell<bool> = const { Cell::new(false) };
        static THROWN: Cell<usize> = const { Cell::new(0) };
    }

    struct PanickingLogger;

    impl log::Log for PanickingLogger {
        fn enabled(&self, _: &log::Metadata<'_>) -> bool {
            true
        }
        fn log(&self, r: &log::Record<'_>) {
            if PANIC_HERE.with(Cell::get) {
                THROWN.with(|t| t.set(t.get() + 1));
                panic!("the test logger panics on `{}`", r.args());
            }
        }
        fn flush(&self) {}
    }

    /// Installs the logger (once per process) and makes it panic on this thread's records
    /// while `on`.
    pub(crate) fn panic_on_this_thread(on: bool) {
        static INSTALL: Once = Once::new();
        INSTALL.call_once(|| {
            static LOGGER: PanickingLogger = PanickingLogger;
            log::set_logger(&LOGGER).expect("no other logger in the unit tests");
            log::set_max_level(log::LevelFilter::Trace);
        });
        PANIC_HERE.with(|p| p.set(on));
    }

    /// How many records the logger has panicked on, on this thread.
    pub(crate) fn thrown() -> usize {
        THROWN.with(Cell::get)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Bomb;
    impl Drop for Bomb {
        fn drop(&mut self) {
            panic!("Bomb's Drop panics");
        }
    }

    #[test]
    fn guard_returns_the_value_or_none_after_a_panic() {
        assert_eq!(guard(|| 7), Some(7));
        assert_eq!(guard(|| -> i32 { panic!("deliberate") }), None);
    }

    #[test]
    fn a_payload_whose_drop_panics_is_leaked_not_unwound() {
        assert_eq!(guard(|| std::panic::panic_any(Bomb)), None::<()>);
        let payload = catch_unwind(|| std::panic::panic_any(Bomb)).unwrap_err();
        assert!(!dispose(payload));
        let payload = catch_unwind(|| panic!("plain")).unwrap_err();
        assert!(dispose(payload));
    }

    #[test]
    fn a_panicking_logger_is_caught_and_counted() {
        test_logger::panic_on_this_thread(true);
        let before = logger_panic_count();
        let thrown = test_logger::thrown();
        log(|| log::warn!(target: "cuda_driver", "to a panicking logger"));
        test_logger::panic_on_this_thread(false);
        assert_eq!(test_logger::thrown(), thrown + 1, "the logger was called");
        assert!(logger_panic_count() > before);
        // Without the flag the logger is quiet, and nothing is counted on this thread.
        log(|| log::warn!(target: "cuda_driver", "to a quiet logger"));
        assert_eq!(test_logger::thrown(), thrown + 1);
    }

    /// Hole 7 (issue 23): a `Drop` that reports a failed release to a panicking logger does
    /// not panic; the failure and the logger's panic are both counted.
    #[test]
    fn a_drop_report_to_a_panicking_logger_does_not_unwind() {
        test_logger::panic_on_this_thread(true);
        let drops = crate::error::drop_error_count();
        let logs = logger_panic_count();
        let thrown = test_logger::thrown();
        crate::error::report_drop_problem(&"a release failed");
        crate::error::report_drop_error("cuMemFree_v2", cuda_driver_sys::CUDA_ERROR_INVALID_VALUE);
        test_logger::panic_on_this_thread(false);
        assert_eq!(
            test_logger::thrown(),
            thrown + 2,
            "both reports reached the logger"
        );
        assert!(crate::error::drop_error_count() >= drops + 2);
        assert!(logger_panic_count() >= logs + 2);
    }

    #[test]
    fn payload_messages() {
        let p = catch_unwind(|| panic!("static text")).unwrap_err();
        assert_eq!(payload_message(&*p), "static text");
        let p = catch_unwind(|| panic!("formatted {}", 7)).unwrap_err();
        assert_eq!(payload_message(&*p), "formatted 7");
        let p = catch_unwind(|| std::panic::panic_any(7u8)).unwrap_err();
        assert_eq!(payload_message(&*p), "non-string panic payload");
    }
}
