//! The generator's and the build helper's errors.

use std::fmt;
use std::path::PathBuf;

/// What went wrong while generating launchers or compiling kernels. Every variant that is
/// about one kernel names it.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The PTX of a kernel's `.entry` could not be read.
    Ptx {
        /// The PTX entry name.
        kernel: String,
        /// What is wrong.
        detail: String,
    },
    /// A C++ kernel's mangled name could not be demangled.
    Demangle {
        /// The PTX entry name.
        kernel: String,
        /// What the demangler said.
        detail: String,
    },
    /// A parameter has a type that has no Rust counterpart, or a signature given with
    /// [`Generator::signature`](crate::Generator::signature) does not parse.
    Unsupported {
        /// The kernel (its C++ signature when known).
        kernel: String,
        /// The parameter's position (0-based).
        param: usize,
        /// The C++ (or PTX) type.
        ty: String,
        /// Why, and what to use instead.
        detail: String,
    },
    /// The C++ signature and the PTX parameter list disagree (a stale annotation, or PTX
    /// that was not compiled from this source).
    Mismatch {
        /// The kernel.
        kernel: String,
        /// What differs.
        detail: String,
    },
    /// Two or more kernels are overloads of one C++ name; a Rust handle needs one name each.
    Overload {
        /// The C++ name.
        name: String,
        /// The overloads' signatures.
        kernels: Vec<String>,
    },
    /// Two kernels would get the same Rust name.
    Collision {
        /// The Rust name.
        rust_name: String,
        /// The kernels' signatures.
        kernels: Vec<String>,
    },
    /// A builder option names a kernel the PTX does not declare.
    UnknownKernel {
        /// The option (`signature`, `rename`).
        option: &'static str,
        /// The name it was given.
        kernel: String,
    },
    /// nvcc was not found, and there is no committed PTX to use instead.
    NvccNotFound {
        /// The source that needed it.
        source_file: PathBuf,
        /// Where nvcc was looked for.
        searched: String,
    },
    /// nvcc failed.
    Nvcc {
        /// The source being compiled.
        source_file: PathBuf,
        /// nvcc's status and output.
        detail: String,
    },
    /// Reading or writing a file failed.
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A required environment variable (`OUT_DIR`, set by cargo for build scripts) is
    /// missing.
    Env(&'static str),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Ptx { kernel, detail } => write!(f, "kernel `{kernel}`: bad PTX: {detail}"),
            Error::Demangle { kernel, detail } => {
                write!(f, "kernel `{kernel}`: cannot demangle the name: {detail}")
            }
            Error::Unsupported {
                kernel,
                param,
                ty,
                detail,
            } => write!(
                f,
                "kernel `{kernel}`: parameter {param} has type `{ty}`, which has no Rust launcher type: {detail}"
            ),
            Error::Mismatch { kernel, detail } => write!(
                f,
                "kernel `{kernel}`: the C++ signature and the PTX disagree: {detail}"
            ),
            Error::Overload { name, kernels } => write!(
                f,
                "kernel `{name}` is overloaded ({}): give each a Rust name with \
                 Generator::rename(\"<PTX entry name>\", \"RustName\") or rename them in C++",
                kernels.join("; ")
            ),
            Error::Collision { rust_name, kernels } => write!(
                f,
                "kernels {} would all be named `{rust_name}` in Rust: give one another name with \
                 Generator::rename",
                kernels.join(" and ")
            ),
            Error::UnknownKernel { option, kernel } => write!(
                f,
                "{option}(\"{kernel}\", ..): the PTX declares no kernel of that name"
            ),
            Error::NvccNotFound {
                source_file,
                searched,
            } => write!(
                f,
                "cannot compile {}: nvcc not found ({searched}). Install the CUDA toolkit \
                 (https://developer.nvidia.com/cuda-downloads, or `pip install nvidia-cuda-nvcc \
                 nvidia-cuda-crt nvidia-nvvm` and set CUDA_PATH to site-packages/nvidia/cu13) and set \
                 NVCC or CUDA_PATH, or commit the PTX and name its folder with \
                 Build::committed_ptx",
                source_file.display()
            ),
            Error::Nvcc {
                source_file,
                detail,
            } => write!(f, "nvcc failed on {}: {detail}", source_file.display()),
            Error::Io { path, source } => write!(f, "{}: {source}", path.display()),
            Error::Env(var) => write!(
                f,
                "{var} is not set: run from a build script, or give the output directory with \
                 Build::out_dir"
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
