//! Failures that have nowhere to go: a release in `Drop`, a cache write. They go to the `log`
//! crate (under `catch_unwind`, so a panicking logger cannot unwind out of a `Drop`) and to a
//! counter the tests can read.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};

static DROP_ERRORS: AtomicUsize = AtomicUsize::new(0);

/// How many releases in `Drop` (`nvrtcDestroyProgram`, `nvJitLinkDestroy`) failed in this
/// process. Each failure is also logged (`log::warn!`).
pub fn drop_error_count() -> usize {
    DROP_ERRORS.load(Ordering::Relaxed)
}

/// Counts and logs a failed release; never panics.
pub(crate) fn report_drop_failure(what: &str) {
    DROP_ERRORS.fetch_add(1, Ordering::Relaxed);
    log_guarded(|| log::warn!("cuda-driver-rtc: release failed in drop: {what}"));
}

/// Runs a `log` call where a panic must not escape (a logger may panic): a panic is caught,
/// and its payload leaked if dropping it panics too.
pub(crate) fn log_guarded(f: impl FnOnce()) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(f)) {
        if let Err(inner) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
            std::mem::forget(inner);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_log_call_is_contained() {
        let before = drop_error_count();
        log_guarded(|| panic!("logger panicked"));
        report_drop_failure("test");
        assert_eq!(drop_error_count(), before + 1);
    }
}
