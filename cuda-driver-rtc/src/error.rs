//! Errors: the result codes of NVRTC and nvJitLink, and the crate's one error type.
//!
//! `check_nvrtc` and `check_nvjitlink` (crate-private) are the one place where a C status becomes a
//! [`Result`]: every call into the libraries goes through one of them, with the name of the
//! function. Where a failure has more to say (the compile log, the linker's error log), the
//! caller turns the plain error into the variant that carries it ([`Error::Compile`],
//! [`Error::Link`]), matching on the typed code, never on a raw number.

use std::fmt;
use std::path::PathBuf;

use crate::sys::{nvjitlink, nvrtc};
use crate::version::Version;

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A result code of NVRTC (`nvrtcResult`): a number, so that a code this crate does not
/// know (from a newer library) is a value like any other, never undefined behaviour.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[doc(alias = "nvrtcResult")]
pub struct NvrtcResult(pub nvrtc::nvrtcResult);

/// A result code of nvJitLink (`nvJitLinkResult`): a number, as [`NvrtcResult`].
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[doc(alias = "nvJitLinkResult")]
pub struct NvJitLinkResult(pub nvjitlink::nvJitLinkResult);

/// Associated constants under the codes' names without their prefix, `name()` (the C name)
/// and `Debug`/`Display` for a result code newtype.
macro_rules! codes {
    ($ty:ident, $module:ident, $unknown:literal, $($name:ident = $c:ident),+ $(,)?) => {
        impl $ty {
            $(
                #[doc = concat!("`", stringify!($c), "`.")]
                pub const $name: $ty = $ty($module::$c);
            )+

            /// The code's C name (`"NVRTC_ERROR_COMPILATION"`), or a placeholder for a code
            /// the headers of these bindings do not know.
            pub fn name(self) -> &'static str {
                $(
                    if self == $ty::$name {
                        return stringify!($c);
                    }
                )+
                $unknown
            }
        }

        impl fmt::Debug for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", self.name(), self.0)
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{} ({})", self.name(), self.0)
            }
        }
    };
}

codes!(
    NvrtcResult,
    nvrtc,
    "NVRTC_ERROR_UNRECOGNIZED",
    SUCCESS = NVRTC_SUCCESS,
    OUT_OF_MEMORY = NVRTC_ERROR_OUT_OF_MEMORY,
    PROGRAM_CREATION_FAILURE = NVRTC_ERROR_PROGRAM_CREATION_FAILURE,
    INVALID_INPUT = NVRTC_ERROR_INVALID_INPUT,
    INVALID_PROGRAM = NVRTC_ERROR_INVALID_PROGRAM,
    INVALID_OPTION = NVRTC_ERROR_INVALID_OPTION,
    COMPILATION = NVRTC_ERROR_COMPILATION,
    BUILTIN_OPERATION_FAILURE = NVRTC_ERROR_BUILTIN_OPERATION_FAILURE,
    NO_NAME_EXPRESSIONS_AFTER_COMPILATION = NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION,
    NO_LOWERED_NAMES_BEFORE_COMPILATION = NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION,
    NAME_EXPRESSION_NOT_VALID = NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID,
    INTERNAL_ERROR = NVRTC_ERROR_INTERNAL_ERROR,
    TIME_FILE_WRITE_FAILED = NVRTC_ERROR_TIME_FILE_WRITE_FAILED,
    NO_PCH_CREATE_ATTEMPTED = NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED,
    PCH_CREATE_HEAP_EXHAUSTED = NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED,
    PCH_CREATE = NVRTC_ERROR_PCH_CREATE,
    CANCELLED = NVRTC_ERROR_CANCELLED,
    TIME_TRACE_FILE_WRITE_FAILED = NVRTC_ERROR_TIME_TRACE_FILE_WRITE_FAILED,
);

codes!(
    NvJitLinkResult,
    nvjitlink,
    "NVJITLINK_ERROR_UNRECOGNIZED",
    SUCCESS = NVJITLINK_SUCCESS,
    UNRECOGNIZED_OPTION = NVJITLINK_ERROR_UNRECOGNIZED_OPTION,
    MISSING_ARCH = NVJITLINK_ERROR_MISSING_ARCH,
    INVALID_INPUT = NVJITLINK_ERROR_INVALID_INPUT,
    PTX_COMPILE = NVJITLINK_ERROR_PTX_COMPILE,
    NVVM_COMPILE = NVJITLINK_ERROR_NVVM_COMPILE,
    INTERNAL = NVJITLINK_ERROR_INTERNAL,
    THREADPOOL = NVJITLINK_ERROR_THREADPOOL,
    UNRECOGNIZED_INPUT = NVJITLINK_ERROR_UNRECOGNIZED_INPUT,
    FINALIZE = NVJITLINK_ERROR_FINALIZE,
    NULL_INPUT = NVJITLINK_ERROR_NULL_INPUT,
    INCOMPATIBLE_OPTIONS = NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS,
    INCORRECT_INPUT_TYPE = NVJITLINK_ERROR_INCORRECT_INPUT_TYPE,
    ARCH_MISMATCH = NVJITLINK_ERROR_ARCH_MISMATCH,
    OUTDATED_LIBRARY = NVJITLINK_ERROR_OUTDATED_LIBRARY,
    MISSING_FATBIN = NVJITLINK_ERROR_MISSING_FATBIN,
    UNRECOGNIZED_ARCH = NVJITLINK_ERROR_UNRECOGNIZED_ARCH,
    UNSUPPORTED_ARCH = NVJITLINK_ERROR_UNSUPPORTED_ARCH,
    LTO_NOT_ENABLED = NVJITLINK_ERROR_LTO_NOT_ENABLED,
);

/// Everything that can go wrong: finding the libraries, compiling, linking, loading and
/// checking what was compiled. Distinct failures are distinct variants; strings carry the
/// detail (the compile log, the places searched).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// NVRTC or nvJitLink could not be found or opened; the error lists every place searched.
    #[error(transparent)]
    LibraryNotFound(#[from] LoadError),
    /// A string for the compiler or the linker (a source, a name, a header, an option, a name
    /// expression) holds a NUL byte, where its C string would end.
    #[error("the {what} holds a NUL byte at offset {offset}, where its C string would end")]
    InteriorNul {
        /// What the string is (`"source of program `saxpy.cu`"`).
        what: String,
        /// The offset of the first NUL byte.
        offset: usize,
    },
    /// A program whose source is empty or blank: there is nothing to compile.
    #[error("program `{name}` has an empty source: there is nothing to compile")]
    EmptyProgram {
        /// The program's name.
        name: String,
    },
    /// NVRTC rejected the program (`NVRTC_ERROR_COMPILATION`); the log says why.
    #[error("program `{name}` failed to compile:\n{log}")]
    Compile {
        /// The program's name.
        name: String,
        /// NVRTC's log.
        log: String,
    },
    /// NVRTC rejected an option (`NVRTC_ERROR_INVALID_OPTION`); the log names it.
    #[error("program `{name}`: NVRTC rejected an option: {}", log.trim_end())]
    InvalidOption {
        /// The program's name.
        name: String,
        /// NVRTC's log.
        log: String,
    },
    /// The compilation was cancelled through the program's
    /// [`CancelHandle`](crate::CancelHandle).
    #[error("the compilation of program `{name}` was cancelled")]
    Cancelled {
        /// The program's name.
        name: String,
    },
    /// A lowered name was asked for a name expression that was not added before compiling.
    #[error(
        "program `{name}` has no name expression `{expression}`: add it with \
         Program::add_name_expression before compiling"
    )]
    UnknownNameExpression {
        /// The program's name.
        name: String,
        /// The expression asked for.
        expression: String,
    },
    /// A name expression was added after the program compiled (NVRTC looks them up while
    /// compiling).
    #[error(
        "program `{name}` has compiled already: add the name expression `{expression}` before \
         compiling"
    )]
    NameExpressionAfterCompile {
        /// The program's name.
        name: String,
        /// The expression.
        expression: String,
    },
    /// What was compiled has no output of the kind asked for.
    #[error("program `{name}` has no {kind}: {reason}")]
    NoOutput {
        /// The program's name.
        name: String,
        /// `"PTX"`, `"CUBIN"` or `"LTO-IR"`.
        kind: &'static str,
        /// Why, and what to ask for instead.
        reason: String,
    },
    /// Options that contradict each other, or an option this call decides itself.
    #[error("invalid options: {0}")]
    InvalidOptions(String),
    /// Another failure of an NVRTC call.
    #[error("{call} failed: {code}")]
    Nvrtc {
        /// The NVRTC function.
        call: &'static str,
        /// Its result.
        code: NvrtcResult,
    },
    /// An nvJitLink call failed; `log` is the linker's error log (empty where it has none).
    #[error("{call} failed: {code}{}{}", if log.is_empty() { "" } else { "\n" }, log.trim_end())]
    Link {
        /// The nvJitLink function.
        call: &'static str,
        /// Its result.
        code: NvJitLinkResult,
        /// The linker's error log.
        log: String,
    },
    /// The compiler (or linker) is newer than the driver, in a way that no output of it can
    /// be loaded there (see [`Target`](crate::Target)).
    #[error(
        "{tool} {tool_version} is newer than the driver, which supports CUDA {driver}, and a \
         newer major version's code does not load there: install a driver for CUDA \
         {tool_version} or later, or use {tool} {driver} or older"
    )]
    DriverTooOld {
        /// `"NVRTC"` or `"nvJitLink"`.
        tool: &'static str,
        /// The tool's version.
        tool_version: Version,
        /// The CUDA version the driver supports.
        driver: Version,
    },
    /// The device's architecture is one the compiler cannot produce loadable code for.
    #[error("{tool} {tool_version} cannot compile for this device (sm_{arch}): {reason}")]
    UnsupportedDevice {
        /// `"NVRTC"` or `"nvJitLink"`.
        tool: &'static str,
        /// The tool's version.
        tool_version: Version,
        /// The device's architecture, `major * 10 + minor`.
        arch: u32,
        /// Why (the versions involved and the architectures the tool supports).
        reason: String,
    },
    /// A kernel's parameters differ from the signature declared for it (see
    /// [`typed_kernel!`](crate::typed_kernel)).
    #[error("kernel `{kernel}` does not match its declared signature {signature}: {detail}")]
    SignatureMismatch {
        /// The kernel's (lowered) name.
        kernel: String,
        /// The declared signature.
        signature: &'static str,
        /// What differs.
        detail: String,
    },
    /// An error of the driver, through `cuda-driver` (asking for the device's architecture or
    /// the driver's version, loading a module, looking up a kernel).
    #[error(transparent)]
    Driver(#[from] cuda_driver::Error),
    /// The compile cache's directory could not be created.
    #[error("compile cache {}: {source}", path.display())]
    Cache {
        /// The file or directory.
        path: PathBuf,
        /// What the file system said.
        source: std::io::Error,
    },
}

/// NVRTC or nvJitLink was not found: the library's file name and every place searched, in
/// order, with why it did not work there (see [`Nvrtc::load`](crate::Nvrtc::load) for the
/// order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError {
    /// The library's file name (`libnvrtc.so.13`).
    pub library: &'static str,
    /// Each place tried: where (a path, or the name given to the system's loader, with what
    /// pointed there) and why it did not work.
    pub tried: Vec<(String, String)>,
    /// What to do about it.
    pub hint: &'static str,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} not found; searched:", self.library)?;
        for (place, why) in &self.tried {
            write!(f, "\n  {place}: {why}")?;
        }
        write!(f, "\n{}", self.hint)
    }
}

impl std::error::Error for LoadError {}

/// Turns an NVRTC status into a [`Result`]: the one place that does.
#[inline]
pub(crate) fn check_nvrtc(code: nvrtc::nvrtcResult, call: &'static str) -> Result<()> {
    if code == nvrtc::NVRTC_SUCCESS {
        Ok(())
    } else {
        Err(Error::Nvrtc {
            call,
            code: NvrtcResult(code),
        })
    }
}

/// Turns an nvJitLink status into a [`Result`]: the one place that does. The log is left
/// empty for the caller to fill ([`Linker`](crate::Linker) adds its error log).
#[inline]
pub(crate) fn check_nvjitlink(code: nvjitlink::nvJitLinkResult, call: &'static str) -> Result<()> {
    if code == nvjitlink::NVJITLINK_SUCCESS {
        Ok(())
    } else {
        Err(Error::Link {
            call,
            code: NvJitLinkResult(code),
            log: String::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_have_their_c_names_and_unknown_codes_are_values() {
        assert_eq!(NvrtcResult::COMPILATION.name(), "NVRTC_ERROR_COMPILATION");
        assert_eq!(
            NvrtcResult(9999).to_string(),
            "NVRTC_ERROR_UNRECOGNIZED (9999)"
        );
        assert_eq!(
            NvJitLinkResult::LTO_NOT_ENABLED.name(),
            "NVJITLINK_ERROR_LTO_NOT_ENABLED"
        );
        assert_eq!(
            format!("{:?}", NvJitLinkResult(77)),
            "NVJITLINK_ERROR_UNRECOGNIZED(77)"
        );
    }

    #[test]
    fn check_passes_success_and_names_the_call() {
        assert!(check_nvrtc(nvrtc::NVRTC_SUCCESS, "nvrtcVersion").is_ok());
        let e = check_nvrtc(nvrtc::NVRTC_ERROR_INVALID_INPUT, "nvrtcCreateProgram").unwrap_err();
        assert_eq!(
            e.to_string(),
            "nvrtcCreateProgram failed: NVRTC_ERROR_INVALID_INPUT (3)"
        );
        let e = check_nvjitlink(nvjitlink::NVJITLINK_ERROR_MISSING_ARCH, "nvJitLinkCreate")
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "nvJitLinkCreate failed: NVJITLINK_ERROR_MISSING_ARCH (2)"
        );
    }

    #[test]
    fn a_load_error_lists_every_place_searched() {
        let e = LoadError {
            library: "libnvrtc.so.13",
            tried: vec![
                ("CUDA_DRIVER_RTC_NVRTC".into(), "not set".into()),
                (
                    "/usr/local/cuda/lib64/libnvrtc.so.13 (CUDA_PATH)".into(),
                    "no such file".into(),
                ),
            ],
            hint: "install it",
        };
        assert_eq!(
            e.to_string(),
            "libnvrtc.so.13 not found; searched:\n  CUDA_DRIVER_RTC_NVRTC: not set\n  \
             /usr/local/cuda/lib64/libnvrtc.so.13 (CUDA_PATH): no such file\ninstall it"
        );
    }
}
