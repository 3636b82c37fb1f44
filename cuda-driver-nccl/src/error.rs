//! Errors: NCCL's result codes and the crate's one error type.
//!
//! [`check`] is the one place where an `ncclResult_t` becomes a [`Result`]: every NCCL call
//! of the crate goes through it, with the function's name and the caller's location.

use std::fmt;
use std::panic::{AssertUnwindSafe, Location};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::launcher::RendezvousError;
use crate::load::LoadError;
use crate::sys;
use crate::version::Version;

/// A result code of NCCL (`ncclResult_t`). A newtype, not an enum: a newer library may
/// return a code nccl.h 2.28.9 does not know.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
#[doc(alias = "ncclResult_t")]
pub struct NcclResult(sys::ncclResult_t);

impl NcclResult {
    /// `ncclSuccess`.
    pub const SUCCESS: NcclResult = NcclResult(sys::ncclSuccess);
    /// `ncclUnhandledCudaError`: a CUDA call inside NCCL failed.
    pub const UNHANDLED_CUDA_ERROR: NcclResult = NcclResult(sys::ncclUnhandledCudaError);
    /// `ncclSystemError`: a system call failed (a socket, memory, a file).
    pub const SYSTEM_ERROR: NcclResult = NcclResult(sys::ncclSystemError);
    /// `ncclInternalError`: a bug in NCCL, or memory corruption.
    pub const INTERNAL_ERROR: NcclResult = NcclResult(sys::ncclInternalError);
    /// `ncclInvalidArgument`: an argument NCCL refused (a bad pointer, a wrong count).
    pub const INVALID_ARGUMENT: NcclResult = NcclResult(sys::ncclInvalidArgument);
    /// `ncclInvalidUsage`: a call made at the wrong time (mixed collectives and
    /// initialisation in one group, a finalized communicator).
    pub const INVALID_USAGE: NcclResult = NcclResult(sys::ncclInvalidUsage);
    /// `ncclRemoteError`: a peer failed (its process exited, its network broke).
    pub const REMOTE_ERROR: NcclResult = NcclResult(sys::ncclRemoteError);
    /// `ncclInProgress`: a call of a non-blocking communicator has not finished.
    pub const IN_PROGRESS: NcclResult = NcclResult(sys::ncclInProgress);

    /// The code `raw`.
    pub const fn from_raw(raw: sys::ncclResult_t) -> NcclResult {
        NcclResult(raw)
    }

    /// The raw code.
    pub const fn as_raw(self) -> sys::ncclResult_t {
        self.0
    }

    /// The code's C name, such as `"ncclInvalidArgument"`; `"ncclResult_t(unknown)"` for a
    /// code nccl.h 2.28.9 does not define.
    pub fn name(self) -> &'static str {
        match self.0 {
            sys::ncclSuccess => "ncclSuccess",
            sys::ncclUnhandledCudaError => "ncclUnhandledCudaError",
            sys::ncclSystemError => "ncclSystemError",
            sys::ncclInternalError => "ncclInternalError",
            sys::ncclInvalidArgument => "ncclInvalidArgument",
            sys::ncclInvalidUsage => "ncclInvalidUsage",
            sys::ncclRemoteError => "ncclRemoteError",
            sys::ncclInProgress => "ncclInProgress",
            _ => "ncclResult_t(unknown)",
        }
    }
}

impl fmt::Debug for NcclResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.0)
    }
}

impl fmt::Display for NcclResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.name(), self.description()) {
            ("ncclResult_t(unknown)", _) => write!(f, "ncclResult_t {}", self.0),
            (name, Some(d)) => write!(f, "{name} ({d})"),
            (name, None) => f.write_str(name),
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every error of this crate: NCCL could not be loaded, an NCCL or CUDA call failed, a
/// communicator failed or timed out, or a check on the Rust side refused a call that could
/// not be sound or succeed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No NCCL library could be loaded (the message lists every place tried).
    #[error(transparent)]
    Load(#[from] LoadError),

    /// An NCCL call returned an error code.
    #[error("{call} failed: {code}{} at {location}", detail(last_error))]
    Nccl {
        /// The NCCL function, such as `"ncclAllReduce"`.
        call: &'static str,
        /// What it returned.
        code: NcclResult,
        /// NCCL's last error message (`ncclGetLastError`), which may belong to an earlier
        /// failure.
        last_error: Option<String>,
        /// Where in the caller's code the operation was requested.
        location: &'static Location<'static>,
    },

    /// The communicator reported an asynchronous error (`ncclCommGetAsyncError`): a peer
    /// died or its connection broke, a kernel failed, a non-blocking call failed. The
    /// communicator was aborted (its operations stopped) and cannot be used any more.
    #[error(
        "{what}: the communicator failed with {code}{}; it was aborted",
        detail(last_error)
    )]
    Async {
        /// The operation that found the error.
        what: &'static str,
        /// The communicator's error.
        code: NcclResult,
        /// NCCL's last error message (`ncclGetLastError`).
        last_error: Option<String>,
    },

    /// The communicator did not finish within the timeout its [`CommConfig`](crate::CommConfig)
    /// (or the call) chose: a peer is gone or stuck. It was aborted and cannot be used any
    /// more.
    #[error("{what}: the communicator did not finish within {timeout:?}; it was aborted")]
    Timeout {
        /// The operation that timed out.
        what: &'static str,
        /// The timeout.
        timeout: Duration,
    },

    /// The communicator was aborted (by [`Communicator::abort`](crate::Communicator::abort),
    /// an asynchronous error or a timeout) and cannot be used any more.
    #[error("{what}: the communicator was aborted; create a new one")]
    Aborted {
        /// The operation refused.
        what: &'static str,
    },

    /// The loaded NCCL library does not export a function this operation needs.
    #[error("{name} is not exported by the loaded NCCL {version} (it needs a newer NCCL 2.x)")]
    MissingFunction {
        /// The NCCL function.
        name: &'static str,
        /// The loaded library's version.
        version: Version,
    },

    /// An operation that must not run while a [`Group`](crate::Group) is open on this
    /// thread: NCCL would defer it to the group's end, after the borrows of its buffers
    /// ended. Queue it through the group, or end the group first.
    #[error("{what}: not allowed while a group is open on this thread (queue it through the Group, or end the group first)")]
    InGroup {
        /// The operation refused.
        what: &'static str,
    },

    /// A context that is not its device's primary context: NCCL works through the CUDA
    /// runtime, which uses the primary context (see the crate docs).
    #[error("{what}: NCCL works in the device's primary context (Device::primary_context), not in context {context:#x}")]
    NotPrimaryContext {
        /// The operation refused.
        what: &'static str,
        /// The raw `CUcontext` given.
        context: usize,
    },

    /// A rank (a root, a peer, this process's rank) outside the communicator.
    #[error("{what}: rank {rank} is out of range for a communicator of {size} ranks")]
    RankOutOfRange {
        /// The operation refused.
        what: &'static str,
        /// The rank asked for.
        rank: usize,
        /// The number of ranks.
        size: usize,
    },

    /// An argument the crate can tell is invalid before calling NCCL, that no more specific
    /// variant describes.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// A CUDA error, or a check of `cuda-driver`'s: a view or stream of another context
    /// ([`ContextMismatch`](cuda_driver::Error::ContextMismatch)), stream-ordered memory used
    /// on another stream ([`StreamMismatch`](cuda_driver::Error::StreamMismatch)), lengths
    /// that do not agree ([`LengthMismatch`](cuda_driver::Error::LengthMismatch)), a call
    /// inside a host function ([`InHostCallback`](cuda_driver::Error::InHostCallback)).
    #[error(transparent)]
    Cuda(#[from] cuda_driver::Error),

    /// The exchange of the unique id between the ranks failed, or the launcher's
    /// environment is incomplete.
    #[error(transparent)]
    Rendezvous(#[from] RendezvousError),
}

fn detail(last_error: &Option<String>) -> String {
    match last_error {
        Some(m) if !m.trim().is_empty() => format!(" (NCCL's last error: {})", m.trim()),
        _ => String::new(),
    }
}

impl Error {
    /// The NCCL result code, for [`Nccl`](Error::Nccl) and [`Async`](Error::Async).
    pub fn nccl_code(&self) -> Option<NcclResult> {
        match self {
            Error::Nccl { code, .. } | Error::Async { code, .. } => Some(*code),
            _ => None,
        }
    }
}

/// Whether an NCCL call finished, or (on a non-blocking communicator) goes on in the
/// background.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Progress {
    Done,
    InProgress,
}

static DROP_ERRORS: AtomicUsize = AtomicUsize::new(0);

/// The number of failures in `Drop` so far (a communicator that could not be destroyed, a
/// group whose end failed): reported to `log` and counted here, never panicking.
pub fn drop_error_count() -> usize {
    DROP_ERRORS.load(Ordering::Relaxed)
}

/// Reports a failure in `Drop`: counted, and logged under `catch_unwind` (a logger that
/// panics must not unwind out of `Drop`; its payload is leaked, not dropped).
pub(crate) fn report_drop_error(what: &str, e: &Error) {
    DROP_ERRORS.fetch_add(1, Ordering::Relaxed);
    let logged = std::panic::catch_unwind(AssertUnwindSafe(|| {
        log::error!("cuda-driver-nccl: {what} failed in drop: {e}");
    }));
    if let Err(payload) = logged {
        std::mem::forget(payload);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_have_their_c_names_and_unknown_codes_are_named_so() {
        assert_eq!(NcclResult::INVALID_ARGUMENT.name(), "ncclInvalidArgument");
        assert_eq!(NcclResult::IN_PROGRESS.name(), "ncclInProgress");
        assert_eq!(NcclResult::from_raw(4242).name(), "ncclResult_t(unknown)");
        assert_eq!(NcclResult::from_raw(4242).to_string(), "ncclResult_t 4242");
        assert_eq!(NcclResult::REMOTE_ERROR.as_raw(), sys::ncclRemoteError);
    }

    #[test]
    fn an_empty_last_error_adds_nothing_to_a_message() {
        assert_eq!(detail(&None), "");
        assert_eq!(detail(&Some("  \n".into())), "");
        assert_eq!(
            detail(&Some("peer gone\n".into())),
            " (NCCL's last error: peer gone)"
        );
    }

    #[test]
    fn a_panicking_logger_in_drop_reporting_is_caught_and_counted() {
        struct Panicky;
        impl log::Log for Panicky {
            fn enabled(&self, _: &log::Metadata<'_>) -> bool {
                true
            }
            fn log(&self, _: &log::Record<'_>) {
                panic!("logger panics");
            }
            fn flush(&self) {}
        }
        // Another test may have installed a logger first: then this one only counts.
        let _ = log::set_logger(&Panicky);
        log::set_max_level(log::LevelFilter::Trace);
        let before = drop_error_count();
        report_drop_error(
            "test",
            &Error::InvalidArgument("nothing really failed".into()),
        );
        assert!(drop_error_count() > before);
    }
}
