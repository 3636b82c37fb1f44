//! Errors: the driver's result codes and the crate's one error type.
//!
//! `check` is the one place where a `CUresult` becomes a [`Result`]: every driver call in
//! the crate goes through it, with the name of the driver symbol and the caller's location.
//!
//! [`Error`] holds the failures every area shares (a failed driver call, a length mismatch,
//! objects of two contexts, a missing device feature, ...) as its own variants, and the
//! failures only one area knows in that area's error type, behind one variant each:
//! [`Error::Graph`] ([`GraphError`], graphs and stream capture), [`Error::TensorMap`]
//! ([`TensorMapError`]), [`Error::Layout`] ([`LayoutError`], the shapes of arrays, pitched
//! memory, 2D/3D copies and memsets), [`Error::Vmm`] ([`VmmError`], virtual memory and
//! shareable handles), [`Error::Interop`] ([`InteropError`], external resources),
//! [`Error::Launch`] ([`LaunchError`], kernel arguments that do not match the kernel's
//! parameters) and [`Error::Module`] ([`ModuleError`], loading code: malformed images,
//! variables of the wrong size, the device runtime library).
//! Match them as nested patterns, `Err(Error::Graph(GraphError::Mismatch { .. }))`.
//!
//! To give a new area its own errors: write its enum in a file of its own under `error/`
//! (`#[non_exhaustive]`, `Debug`, `Clone`, `thiserror::Error`, documented), declare it here as
//! a `pub mod`, add one variant `Area(#[from] AreaError)` with `#[error(transparent)]` to
//! [`Error`], and re-export the enum from the area's module, where its users look for it. The
//! area's code then returns `Err(Error::Area(AreaError::Variant { .. }))` or
//! `Err(AreaError::Variant { .. }.into())`. The files live here, not in the area, so that
//! this module (the lowest layer) never imports a higher one.

use std::ffi::CStr;
use std::fmt;
use std::panic::Location;

use cuda_driver_macros::wraps;
use cuda_driver_sys as sys;

pub use crate::callback::logger_panic_count;
use crate::types::ErrorCode;
use crate::types::ProcAddressStatus;

pub mod graph;
pub mod interop;
pub mod launch;
pub mod layout;
pub mod module;
pub mod tensor_map;
pub mod vmm;

use self::graph::GraphError;
use self::interop::InteropError;
use self::launch::LaunchError;
use self::layout::LayoutError;
use self::module::ModuleError;
use self::tensor_map::TensorMapError;
use self::vmm::VmmError;

impl ErrorCode {
    /// The code's name, such as `"CUDA_ERROR_OUT_OF_MEMORY"`, from `cuGetErrorName`; for a
    /// code neither the driver nor cuda.h 13.0 knows, `"CUDA_ERROR_UNRECOGNIZED"`.
    #[wraps(cuGetErrorName)]
    pub fn name(self) -> &'static str {
        let mut p = std::ptr::null();
        // SAFETY: cuGetErrorName writes a pointer to a static NUL-terminated string into `p`
        // or leaves it untouched on failure; it needs no initialisation or context.
        let r = unsafe { sys::cuGetErrorName(self.0, &mut p) };
        if r == sys::CUDA_SUCCESS && !p.is_null() {
            // SAFETY: on success `p` points to a static NUL-terminated string owned by the
            // driver for the life of the process.
            if let Ok(s) = unsafe { CStr::from_ptr(p) }.to_str() {
                return s;
            }
        }
        self.c_name().unwrap_or("CUDA_ERROR_UNRECOGNIZED")
    }

    /// The driver's description of the code, such as `"out of memory"`, from
    /// `cuGetErrorString`; cuda.h's text where the driver cannot be asked.
    #[wraps(cuGetErrorString)]
    pub fn description(self) -> &'static str {
        let mut p = std::ptr::null();
        // SAFETY: as in `name`: cuGetErrorString writes a pointer to a static string or
        // nothing.
        let r = unsafe { sys::cuGetErrorString(self.0, &mut p) };
        if r == sys::CUDA_SUCCESS && !p.is_null() {
            // SAFETY: on success `p` points to a static NUL-terminated string of the driver.
            if let Ok(s) = unsafe { CStr::from_ptr(p) }.to_str() {
                return s;
            }
        }
        match self.c_info() {
            Some((_, doc)) => doc,
            None => "a result code that this version of cuda-driver does not know",
        }
    }
}

impl ErrorCode {
    /// Whether the code is one of the sticky errors that leave the context unusable; see
    /// [`Error::is_sticky`].
    pub const fn is_sticky(self) -> bool {
        matches!(
            self.0,
            sys::CUDA_ERROR_ILLEGAL_ADDRESS
                | sys::CUDA_ERROR_LAUNCH_FAILED
                | sys::CUDA_ERROR_HARDWARE_STACK_ERROR
                | sys::CUDA_ERROR_ILLEGAL_INSTRUCTION
                | sys::CUDA_ERROR_MISALIGNED_ADDRESS
                | sys::CUDA_ERROR_INVALID_ADDRESS_SPACE
                | sys::CUDA_ERROR_INVALID_PC
                | sys::CUDA_ERROR_ASSERT
                | sys::CUDA_ERROR_LAUNCH_TIMEOUT
                | sys::CUDA_ERROR_ECC_UNCORRECTABLE
                | sys::CUDA_ERROR_NVLINK_UNCORRECTABLE
                | sys::CUDA_ERROR_CONTAINED
                | sys::CUDA_ERROR_TENSOR_MEMORY_LEAK
        )
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.name();
        if self.c_name().is_none() && name == "CUDA_ERROR_UNRECOGNIZED" {
            write!(f, "CUresult {}", self.0)
        } else {
            write!(f, "{name} ({})", self.description())
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every error this crate returns: a failed driver call, or a check on the Rust side that
/// refused to make a call that could not succeed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A driver call returned an error code.
    #[error("{}", DriverDisplay { call, code: *code, location })]
    Driver {
        /// The driver symbol that failed, such as `"cuMemAlloc_v2"`.
        call: &'static str,
        /// What it returned.
        code: ErrorCode,
        /// Where in the caller's code the failing operation was requested.
        location: &'static Location<'static>,
    },

    /// A driver call that loads or links device code failed; the JIT's log says why.
    #[error("{call} failed: {code} at {location}\n--- JIT log ---\n{log}")]
    Jit {
        /// The driver symbol that failed.
        call: &'static str,
        /// What it returned.
        code: ErrorCode,
        /// The JIT compiler's or linker's error log.
        log: String,
        /// Where in the caller's code the load was requested.
        location: &'static Location<'static>,
    },

    /// A device ordinal past the number of devices.
    #[error("device ordinal {ordinal} is out of range: there are {count} CUDA devices")]
    DeviceOutOfRange {
        /// The ordinal asked for.
        ordinal: usize,
        /// How many devices there are.
        count: usize,
    },

    /// Two lengths that must agree do not (a copy between buffers of different sizes).
    #[error("length mismatch in {what}: destination holds {dst} elements, source {src}")]
    LengthMismatch {
        /// The operation.
        what: &'static str,
        /// Elements of the destination.
        dst: usize,
        /// Elements of the source.
        src: usize,
    },

    /// A range outside a buffer.
    #[error("range {start}..{end} is out of bounds of a buffer of {len} elements")]
    OutOfBounds {
        /// Start of the range asked for.
        start: usize,
        /// End of the range asked for.
        end: usize,
        /// Length of the buffer.
        len: usize,
    },

    /// A size computation overflowed (`len * size_of::<T>()`, a grid for `n` elements).
    #[error("{what}: {count} elements of {size} bytes overflow usize")]
    SizeOverflow {
        /// What was being sized.
        what: &'static str,
        /// Number of elements.
        count: usize,
        /// Size of one element in bytes.
        size: usize,
    },

    /// A name (kernel, global, managed variable) the module or library does not define.
    #[error("{kind} `{name}` not found ({code})")]
    NotFound {
        /// What was looked for: "kernel", "global", ...
        kind: &'static str,
        /// The name asked for.
        name: String,
        /// What the driver returned.
        code: ErrorCode,
    },

    /// An argument the crate can tell is invalid before calling the driver, and that no
    /// more specific variant describes (a block of 0 threads, a grid too wide).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// An object of one context was used with an object of another (a `Function` launched
    /// on a stream of another context, an event recorded on another context's stream).
    #[error(
        "{what}: the object belongs to context {expected:#x}, but the other one to context \
         {found:#x}"
    )]
    ContextMismatch {
        /// The operation.
        what: &'static str,
        /// The raw `CUcontext` the operation needed.
        expected: usize,
        /// The raw `CUcontext` it was given.
        found: usize,
    },

    /// A context guard was popped while another context was on top of the thread's stack
    /// (contexts pushed out of order, or changed behind the guard's back with raw calls).
    #[error(
        "cannot pop context {expected:#x}: the top of this thread's context stack is {found:#x}"
    )]
    ContextStackMismatch {
        /// The context the guard pushed.
        expected: usize,
        /// The context on top of the stack (0: none).
        found: usize,
    },

    /// Stream-ordered memory was used on a stream other than the one it belongs to; order
    /// the streams explicitly first (see
    /// [`AsyncDeviceBuffer::move_to_stream`](crate::memory::pool::AsyncDeviceBuffer::move_to_stream)).
    #[error(
        "{what}: the memory is ordered on stream {expected:#x}, but the operation was queued \
         on stream {found:#x}; move it to that stream first (AsyncDeviceBuffer::move_to_stream)"
    )]
    StreamMismatch {
        /// The operation.
        what: &'static str,
        /// The raw `CUstream` the memory belongs to.
        expected: usize,
        /// The raw `CUstream` of the operation.
        found: usize,
    },

    /// A stream that cannot serve the operation, such as the per-thread default stream for
    /// memory freed in stream order (it names a different stream on every thread).
    #[error("{what}: {reason}")]
    InvalidStream {
        /// The operation.
        what: &'static str,
        /// Why the stream cannot serve it.
        reason: &'static str,
    },

    /// A string handed to the driver contains a NUL byte, or a path is not valid UTF-8 where
    /// the driver needs it to be.
    #[error("{what} `{value}` cannot be passed to the driver: {reason}")]
    InvalidString {
        /// What the string is: "kernel name", "path", ...
        what: &'static str,
        /// The string (lossily converted).
        value: String,
        /// Why it cannot be passed.
        reason: &'static str,
    },

    /// An exclusive handle to memory that another live handle already refers to (a module
    /// global or a library managed variable looked up twice).
    #[error("{kind} `{name}` is already borrowed by a live handle; drop that one first")]
    AlreadyBorrowed {
        /// What: "global", "managed variable".
        kind: &'static str,
        /// Its name.
        name: String,
    },

    /// A CUDA call was attempted from inside a host function running on a driver thread
    /// ([`Stream::launch_host_fn`](crate::Stream::launch_host_fn)); CUDA forbids it.
    #[error(
        "a CUDA call was attempted from inside a CUDA host function, where CUDA calls are not \
         allowed, at {location}"
    )]
    InHostCallback {
        /// Where in the caller's code the operation was requested.
        location: &'static Location<'static>,
    },

    /// The driver returned a value the crate cannot represent (a null pointer from a
    /// successful allocation, memory not aligned for the element type).
    #[error("{call} returned an unusable value: {reason}")]
    UnexpectedValue {
        /// The driver call.
        call: &'static str,
        /// What was wrong with it.
        reason: String,
    },

    /// A fixed-capacity container (launch attributes, a parameter buffer) is full.
    #[error("{what} holds at most {capacity} {unit}")]
    CapacityExceeded {
        /// The container.
        what: &'static str,
        /// Its capacity.
        capacity: usize,
        /// What the capacity counts: "attributes", "bytes", "parameters".
        unit: &'static str,
    },

    /// A driver function newer than the installed driver.
    #[error(
        "{function} needs a CUDA {}.{} driver, but the installed driver supports CUDA {}.{}",
        needs / 1000, needs % 1000 / 10, driver / 1000, driver % 1000 / 10
    )]
    Unsupported {
        /// The driver function, such as `"cuKernelGetParamInfo"`.
        function: &'static str,
        /// The CUDA version that introduced it (12040 for 12.4).
        needs: i32,
        /// The driver's CUDA version.
        driver: i32,
    },

    /// `cuGetProcAddress` found no such symbol, or not at the version asked for.
    #[error("{}", EntryPointDisplay { symbol, version: *version, status: *status })]
    EntryPoint {
        /// The symbol asked for.
        symbol: String,
        /// The CUDA version asked for (12040 for 12.4).
        version: i32,
        /// What the driver said: `SYMBOL_NOT_FOUND` or `VERSION_NOT_SUFFICIENT`.
        status: ProcAddressStatus,
    },

    /// The device lacks a feature an operation needs, as a device attribute says (checked
    /// before the driver call).
    #[error("{what} needs a device with {attribute}, which device {device} does not have")]
    FeatureUnsupported {
        /// The operation.
        what: &'static str,
        /// The gating device attribute, such as `CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS`.
        attribute: &'static str,
        /// The device ordinal.
        device: i32,
    },
    /// A resource split or a batch asked for more than there is.
    #[error("{what}: asked for {asked}, at most {available} available")]
    ResourceExhausted {
        /// The operation.
        what: &'static str,
        /// What was asked for.
        asked: usize,
        /// What is available.
        available: usize,
    },

    // One variant per area whose errors live in a file of their own under `error/`.
    /// A graph or a stream capture refused an operation.
    #[error(transparent)]
    Graph(#[from] GraphError),

    /// A tensor map's parameters break one of the encoding's rules.
    #[error(transparent)]
    TensorMap(#[from] TensorMapError),

    /// A shape, region or element type that a memory operation (an array, pitched memory, a
    /// 2D/3D copy, a memset) cannot take.
    #[error(transparent)]
    Layout(#[from] LayoutError),

    /// A virtual-memory mapping or a shareable handle (of an allocation, a pool, memory of
    /// another process) that cannot be made.
    #[error(transparent)]
    Vmm(#[from] VmmError),

    /// An external resource (interop with other APIs) of a kind the operation cannot take.
    #[error(transparent)]
    Interop(#[from] InteropError),

    /// A kernel launch whose arguments do not match the kernel's parameters.
    #[error(transparent)]
    Launch(#[from] LaunchError),

    /// Code or a variable of a module or library that the crate refuses to load or hand out
    /// (a malformed image, a variable of the wrong size, no device runtime library).
    #[error(transparent)]
    Module(#[from] ModuleError),
}

struct DriverDisplay<'a> {
    call: &'a str,
    code: ErrorCode,
    location: &'a Location<'static>,
}

impl fmt::Display for DriverDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let DriverDisplay {
            call,
            code,
            location,
        } = self;
        if *code == ErrorCode::STUB_LIBRARY && cfg!(feature = "dynamic-loading") {
            write!(
                f,
                "no CUDA driver found: {call} found no driver library to load ({}; \
                 CUDA_ERROR_STUB_LIBRARY); install the NVIDIA driver to use a GPU, at {location}",
                if cfg!(windows) {
                    "nvcuda.dll"
                } else {
                    "libcuda.so.1"
                }
            )
        } else if *code == ErrorCode::STUB_LIBRARY {
            write!(
                f,
                "no CUDA driver found: {call} reached the stub libcuda.so.1 that this program was \
                 built against (CUDA_ERROR_STUB_LIBRARY); install the NVIDIA driver to use a GPU, \
                 at {location}"
            )
        } else if *code == ErrorCode::NO_DEVICE {
            write!(
                f,
                "no CUDA-capable device is present: {call} failed with CUDA_ERROR_NO_DEVICE at \
                 {location}"
            )
        } else {
            write!(f, "{call} failed: {code} at {location}")
        }
    }
}

struct EntryPointDisplay<'a> {
    symbol: &'a str,
    version: i32,
    status: ProcAddressStatus,
}

impl fmt::Display for EntryPointDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (symbol, v) = (self.symbol, self.version);
        let (major, minor) = (v / 1000, v % 1000 / 10);
        if self.status == ProcAddressStatus::VERSION_NOT_SUFFICIENT {
            write!(
                f,
                "the driver has `{symbol}`, but not at CUDA {major}.{minor} (version {v}): \
                 CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT"
            )
        } else {
            write!(
                f,
                "the driver has no symbol `{symbol}` at CUDA {major}.{minor} (version {v}): {:?}",
                self.status
            )
        }
    }
}

impl Error {
    /// The driver's result code, for errors that come from the driver.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Error::Driver { code, .. } | Error::Jit { code, .. } | Error::NotFound { code, .. } => {
                Some(*code)
            }
            _ => None,
        }
    }

    /// Whether the error means there is no CUDA driver (the stub library) or no device:
    /// the cases in which a program should say so and stop rather than report a bug.
    pub fn is_no_gpu(&self) -> bool {
        matches!(
            self.code(),
            Some(ErrorCode::STUB_LIBRARY | ErrorCode::NO_DEVICE)
        ) || matches!(self, Error::DeviceOutOfRange { count: 0, .. })
    }

    /// Whether the error leaves the context unusable for the rest of the process: the
    /// "sticky" errors that CUDA documents as corrupting the context (an illegal address, a
    /// failed launch, a hardware stack error, an illegal instruction, a misaligned address,
    /// an invalid address space or program counter, a device-side assert, a launch timeout,
    /// a trap, an uncorrectable ECC error, a lost NVLink).
    ///
    /// After such an error every later call in that context fails with the same code. The
    /// only recovery is to end the process: measured on an H200 (driver 580), after a
    /// kernel that executes `trap` neither a new context nor a reset of the primary context
    /// ([`Device::reset_primary_context`](crate::Device::reset_primary_context)) works again
    /// in the same process. Report the error, drop what you can and exit; a supervisor (or
    /// a worker process per job) restarts the work.
    pub fn is_sticky(&self) -> bool {
        self.code().is_some_and(ErrorCode::is_sticky)
    }

    /// The driver symbol that failed, for errors that come from a driver call.
    pub fn call(&self) -> Option<&'static str> {
        match self {
            Error::Driver { call, .. } | Error::Jit { call, .. } => Some(call),
            _ => None,
        }
    }
}

/// Turns a driver result into a [`Result`]: the one place the crate inspects a `CUresult`.
///
/// `call` names the driver symbol (`"cuMemAlloc_v2"`); the error records the location of the
/// public function's caller (every public fallible function is `#[track_caller]`).
#[inline(always)]
#[track_caller]
pub(crate) fn check(code: sys::CUresult, call: &'static str) -> Result<()> {
    if code == sys::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(driver_error(code, call, Location::caller()))
    }
}

#[cold]
#[inline(never)]
fn driver_error(
    code: sys::CUresult,
    call: &'static str,
    location: &'static Location<'static>,
) -> Error {
    Error::Driver {
        call,
        code: ErrorCode(code),
        location,
    }
}

/// Counts failures of driver calls made in `Drop`, which are reported and never panic.
static DROP_ERRORS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many releases made while dropping a handle (`cuMemFree`, `cuCtxDestroy`, a context
/// guard's pop, ...) have failed in this process. `Drop` never panics: it counts the failure
/// here and reports it through the [`log`] crate at the `warn` level (target
/// `cuda_driver`), which costs nothing when no logger is installed. A logger that panics on
/// the report is caught and counted in [`logger_panic_count`].
pub fn drop_error_count() -> usize {
    DROP_ERRORS.load(std::sync::atomic::Ordering::Relaxed)
}

/// Records a failed release in `Drop` (see [`drop_error_count`]).
#[cold]
pub(crate) fn report_drop_error(call: &'static str, code: sys::CUresult) {
    if code == sys::CUDA_SUCCESS || code == sys::CUDA_ERROR_DEINITIALIZED {
        // At process exit the driver may already be torn down; nothing is leaked then.
        return;
    }
    DROP_ERRORS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // A panicking logger must not unwind out of the `Drop` (or the callback) reporting this.
    crate::callback::log(|| {
        log::warn!(
            target: "cuda_driver",
            "{call} failed while dropping a handle: {}",
            ErrorCode(code)
        )
    });
}

/// Records a failure in `Drop` that is not a driver result code (a guard that is not on top
/// of the stack, a panicking host function's payload).
#[cold]
pub(crate) fn report_drop_problem(what: &dyn fmt::Display) {
    DROP_ERRORS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    crate::callback::log(|| log::warn!(target: "cuda_driver", "{what}"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_code_has_a_name_and_description() {
        // Without a driver (the stub), names come from cuda.h; with one, from the driver.
        for raw in 0..1000 {
            let code = ErrorCode(raw);
            if let Some(c_name) = code.c_name() {
                assert!(code.name().starts_with("CUDA_"), "{raw}: {}", code.name());
                assert!(!code.description().is_empty(), "{c_name}");
                let shown = code.to_string();
                assert!(shown.contains(code.name()), "{shown}");
            }
        }
        assert_eq!(
            ErrorCode::OUT_OF_MEMORY.c_name(),
            Some("CUDA_ERROR_OUT_OF_MEMORY")
        );
        assert_eq!(ErrorCode::SUCCESS.c_name(), Some("CUDA_SUCCESS"));
    }

    #[test]
    fn unknown_code_is_a_value() {
        let code = ErrorCode::from_raw(123_456);
        assert_eq!(code.c_name(), None);
        assert_eq!(format!("{code:?}"), "ErrorCode(123456)");
        assert!(code.to_string().contains("123456"), "{code}");
    }

    #[test]
    fn driver_error_display_names_call_code_and_location() {
        let line = line!() + 1;
        let e = check(sys::CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc_v2").unwrap_err();
        let s = e.to_string();
        // The description is the driver's ("out of memory"), or cuda.h's without a driver.
        assert!(
            s.starts_with("cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY ("),
            "{s}"
        );
        assert!(s.ends_with(&format!("src/error/mod.rs:{line}:17")), "{s}");
        assert_eq!(e.code(), Some(ErrorCode::OUT_OF_MEMORY));
        assert_eq!(e.call(), Some("cuMemAlloc_v2"));
    }

    #[test]
    fn stub_and_no_device_say_so_plainly() {
        let e = check(sys::CUDA_ERROR_STUB_LIBRARY, "cuInit").unwrap_err();
        assert!(e.to_string().starts_with("no CUDA driver found"), "{e}");
        // The stub only exists when the driver is linked; a loaded one is named.
        assert_eq!(
            e.to_string().contains("stub libcuda.so.1"),
            !cfg!(feature = "dynamic-loading"),
            "{e}"
        );
        assert!(e.is_no_gpu());
        let e = check(sys::CUDA_ERROR_NO_DEVICE, "cuInit").unwrap_err();
        assert!(e.to_string().starts_with("no CUDA-capable device"), "{e}");
        assert!(e.is_no_gpu());
        assert!(!check(sys::CUDA_ERROR_INVALID_VALUE, "cuInit")
            .unwrap_err()
            .is_no_gpu());
    }

    #[test]
    fn sticky_errors_are_the_documented_ones() {
        for code in [
            sys::CUDA_ERROR_ILLEGAL_ADDRESS,
            sys::CUDA_ERROR_LAUNCH_FAILED,
            sys::CUDA_ERROR_HARDWARE_STACK_ERROR,
            sys::CUDA_ERROR_ILLEGAL_INSTRUCTION,
            sys::CUDA_ERROR_MISALIGNED_ADDRESS,
            sys::CUDA_ERROR_INVALID_ADDRESS_SPACE,
            sys::CUDA_ERROR_INVALID_PC,
            sys::CUDA_ERROR_ASSERT,
        ] {
            let e = check(code, "cuCtxSynchronize").unwrap_err();
            assert!(e.is_sticky(), "{e}");
        }
        for code in [
            sys::CUDA_ERROR_INVALID_VALUE,
            sys::CUDA_ERROR_OUT_OF_MEMORY,
            sys::CUDA_ERROR_NOT_READY,
            sys::CUDA_ERROR_STUB_LIBRARY,
            sys::CUDA_ERROR_INVALID_HANDLE,
        ] {
            assert!(!check(code, "cuMemAlloc_v2").unwrap_err().is_sticky());
        }
        let e = Error::LengthMismatch {
            what: "x",
            dst: 1,
            src: 2,
        };
        assert!(!e.is_sticky());
    }

    #[test]
    fn success_is_ok() {
        assert!(check(sys::CUDA_SUCCESS, "cuInit").is_ok());
    }

    #[test]
    fn rust_side_errors_name_their_values() {
        let e = Error::LengthMismatch {
            what: "copy_from_host",
            dst: 4,
            src: 5,
        };
        assert_eq!(
            e.to_string(),
            "length mismatch in copy_from_host: destination holds 4 elements, source 5"
        );
        let e = Error::Launch(LaunchError::ArgumentSize {
            kernel: "add4".into(),
            index: 3,
            expected: 4,
            actual: 8,
        });
        assert!(e.to_string().contains("parameter 3 is 4 bytes"), "{e}");
        let e = Error::Unsupported {
            function: "cuKernelGetParamInfo",
            needs: 12040,
            driver: 12000,
        };
        assert_eq!(
            e.to_string(),
            "cuKernelGetParamInfo needs a CUDA 12.4 driver, but the installed driver supports CUDA 12.0"
        );
    }

    #[test]
    fn area_errors_convert_into_error_and_keep_their_text() {
        fn error_traits<T: std::error::Error + Clone + Send + Sync + 'static>() {}
        error_traits::<Error>();
        error_traits::<GraphError>();
        error_traits::<TensorMapError>();
        error_traits::<LayoutError>();
        error_traits::<VmmError>();
        error_traits::<InteropError>();
        error_traits::<LaunchError>();
        error_traits::<ModuleError>();

        // `?` converts an area's error into an `Error` (the `#[from]` of its variant).
        fn refuse(area: GraphError) -> Result<()> {
            Err(area)?
        }
        let e = refuse(GraphError::Mismatch {
            what: "Graph::add_dependencies",
            expected: 0x10,
            found: 0x20,
        })
        .unwrap_err();
        assert!(
            matches!(
                e,
                Error::Graph(GraphError::Mismatch {
                    expected: 0x10,
                    found: 0x20,
                    ..
                })
            ),
            "{e:?}"
        );
        // The texts are those of the variants they replace (`Error::GraphMismatch`, ...).
        assert_eq!(
            e.to_string(),
            "Graph::add_dependencies: the object belongs to graph 0x10, but is used with graph 0x20"
        );
        assert_eq!((e.code(), e.call(), e.is_sticky()), (None, None, false));
        assert!(std::error::Error::source(&e).is_none());

        let location = Location::caller();
        let e = Error::from(GraphError::CaptureInvalidated { location });
        assert_eq!(
            e.to_string(),
            format!(
                "the stream capture was invalidated (an operation not allowed during capture was \
                 made while it ran), at {location}"
            )
        );

        let cases: [(Error, &str); 7] = [
            (
                TensorMapError::Rule {
                    rule: "rank",
                    detail: "6 dimensions, at most 5".into(),
                }
                .into(),
                "tensor map rule broken (rank): 6 dimensions, at most 5",
            ),
            (
                LayoutError::RegionOutOfBounds {
                    what: "Copy2D::run",
                    operand: "source",
                    axis: "y",
                    end: 9,
                    limit: 8,
                }
                .into(),
                "Copy2D::run: the source region reaches 9 along y, past its limit 8",
            ),
            (
                LayoutError::ZeroExtent {
                    what: "Array::new",
                    axis: "width",
                }
                .into(),
                "Array::new: the width is zero",
            ),
            (
                VmmError::MappingRange {
                    what: "AddressRange::map",
                    kind: "physical allocation",
                    offset: 4096,
                    len: 8192,
                    size: 8192,
                }
                .into(),
                "AddressRange::map: 8192 bytes at offset 4096 do not fit in a physical allocation \
                 of 8192 bytes",
            ),
            (
                InteropError::HandleTypeUnsupported {
                    what: "ExternalSemaphore::import",
                    handle_type: 99,
                }
                .into(),
                "ExternalSemaphore::import: external handle type 99 is not supported here",
            ),
            (
                LaunchError::ArgumentCount {
                    kernel: "add4".into(),
                    expected: 4,
                    actual: 3,
                }
                .into(),
                "kernel `add4` takes 4 parameters but the launch passes 3 arguments",
            ),
            (
                ModuleError::MalformedImage {
                    kind: "ELF",
                    reason: "truncated header".into(),
                }
                .into(),
                "malformed ELF image: truncated header",
            ),
        ];
        for (e, text) in cases {
            assert_eq!(e.to_string(), text, "{e:?}");
            assert_eq!(e.code(), None);
        }
        let layout = LayoutError::MemsetWidth {
            what: "memset",
            width: 4,
            elem: "u8",
            size: 1,
        };
        let text = layout.to_string();
        let e = Error::from(layout);
        assert!(
            matches!(e, Error::Layout(LayoutError::MemsetWidth { width: 4, .. })),
            "{e:?}"
        );
        assert_eq!(e.to_string(), text);
        assert_eq!(
            text,
            "memset writes 4-byte words, but the element type u8 is 1 bytes, not a multiple of 4"
        );
        let e = Error::from(VmmError::SharedAllocationTooSmall {
            what: "IpcMemory::open",
            needed: 64,
            size: 32,
        });
        assert!(matches!(
            e,
            Error::Vmm(VmmError::SharedAllocationTooSmall { needed: 64, .. })
        ));
        assert_eq!(
            e.to_string(),
            "IpcMemory::open: 64 bytes asked for, but the shared allocation holds 32"
        );
        let e = Error::from(TensorMapError::Rule {
            rule: "bounds",
            detail: String::new(),
        });
        assert!(matches!(
            e,
            Error::TensorMap(TensorMapError::Rule { rule: "bounds", .. })
        ));
        let e = Error::from(LaunchError::ArgumentOffset {
            kernel: "k".into(),
            index: 1,
            expected: 8,
            actual: 4,
        });
        assert!(matches!(
            e,
            Error::Launch(LaunchError::ArgumentOffset { index: 1, .. })
        ));
        assert_eq!(
            e.to_string(),
            "kernel `k` parameter 1 is at offset 8 but the ParamBuffer puts it at offset 4 (an \
             argument before it has a different alignment on the device: use this crate's vector \
             types)"
        );
        let e = Error::from(ModuleError::SizeMismatch {
            kind: "global",
            name: "g".into(),
            bytes: 6,
            elem: "u32",
            size: 4,
        });
        assert!(matches!(
            e,
            Error::Module(ModuleError::SizeMismatch { bytes: 6, .. })
        ));
        assert_eq!(
            e.to_string(),
            "global `g` is 6 bytes, not a whole number of u32 (4 bytes)"
        );
        let e = Error::from(ModuleError::DeviceRuntimeNotFound {
            searched: vec!["/a/libcudadevrt.a".into(), "/b/libcudadevrt.a".into()],
            env: "CUDA_DRIVER_CUDADEVRT",
        });
        assert_eq!(
            e.to_string(),
            "libcudadevrt.a (the CUDA device runtime, linked with device code that calls \
             cudaGraphSetConditional) not found; looked at: /a/libcudadevrt.a, /b/libcudadevrt.a; \
             set CUDA_DRIVER_CUDADEVRT to the file, or CUDA_PATH to a CUDA 13.0 toolkit \
             (/usr/local/cuda) or the nvidia-cuda-runtime wheel's nvidia/cu13 folder"
        );
        assert_eq!(e.code(), None);
    }
}
