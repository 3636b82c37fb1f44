//! The generator's and the build helper's errors.

use std::fmt;
use std::path::PathBuf;

use crate::isa;

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
        /// The build's [`oldest_driver`](crate::Build::oldest_driver), which decides the
        /// toolkit to install.
        oldest_driver: (u32, u32),
    },
    /// nvcc was not found, and the committed PTX that [`Build::committed_ptx`] names for the
    /// source does not exist.
    ///
    /// [`Build::committed_ptx`]: crate::Build::committed_ptx
    CommittedPtxMissing {
        /// The source.
        source_file: PathBuf,
        /// The committed PTX's path as the build names it (`kernels/saxpy.ptx`).
        committed: PathBuf,
        /// Where it was looked for (the path made absolute).
        looked_at: PathBuf,
        /// Where nvcc was looked for.
        searched: String,
        /// The nvcc command that writes it.
        command: Box<str>,
        /// The build's [`oldest_driver`](crate::Build::oldest_driver).
        oldest_driver: (u32, u32),
    },
    /// The PTX is written in a PTX ISA that the build's
    /// [`oldest_driver`](crate::Build::oldest_driver) rejects: nvcc is of a newer CUDA release
    /// than that driver (see [`isa`](crate::isa)).
    PtxTooNew {
        /// The source.
        source_file: PathBuf,
        /// The PTX: nvcc's output, or the committed file.
        ptx_file: PathBuf,
        /// Whether the PTX is the committed file.
        committed: bool,
        /// The nvcc that wrote it, when this build ran it.
        nvcc: Option<PathBuf>,
        /// The toolkit release that wrote it (`13.0.88`), when known.
        toolkit: Option<String>,
        /// The PTX's ISA (`.version`).
        isa: (u32, u32),
        /// The oldest driver the PTX must load on.
        oldest_driver: (u32, u32),
    },
    /// [`Build::oldest_driver`](crate::Build::oldest_driver) names a CUDA release whose PTX ISA
    /// this crate does not know (older than 12.0, or of a later major release).
    UnknownDriver {
        /// The CUDA release, `(major, minor)`.
        driver: (u32, u32),
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
                oldest_driver,
            } => write!(
                f,
                "cannot compile {}: nvcc not found ({searched}); install {} (or set NVCC to an \
                 nvcc), or commit the PTX and name its folder with Build::committed_ptx",
                source_file.display(),
                isa::install_advice(*oldest_driver)
            ),
            Error::CommittedPtxMissing {
                source_file,
                committed,
                looked_at,
                searched,
                command,
                oldest_driver,
            } => write!(
                f,
                "cannot compile {}: nvcc not found ({searched}), and the committed PTX {} that \
                 Build::committed_ptx names does not exist (looked for {}); write it with \
                 `{command}` where nvcc is installed and commit it, or install {}",
                source_file.display(),
                committed.display(),
                looked_at.display(),
                isa::install_advice(*oldest_driver)
            ),
            Error::PtxTooNew {
                source_file,
                ptx_file,
                committed,
                nvcc,
                toolkit,
                isa: (a, b),
                oldest_driver,
            } => {
                let (da, db) = *oldest_driver;
                let from = match toolkit {
                    Some(v) => format!("CUDA {v}"),
                    None => "an unknown CUDA release".into(),
                };
                if *committed {
                    write!(
                        f,
                        "the committed PTX {} of {} (written by {from}) is PTX ISA {a}.{b}, ",
                        ptx_file.display(),
                        source_file.display()
                    )?;
                } else {
                    let nvcc = nvcc
                        .as_ref()
                        .map(|p| format!(" ({})", p.display()))
                        .unwrap_or_default();
                    write!(
                        f,
                        "nvcc of {from}{nvcc} compiled {} to PTX ISA {a}.{b}, ",
                        source_file.display()
                    )?;
                }
                match isa::oldest_driver_for((*a, *b)) {
                    Some((na, nb)) => write!(
                        f,
                        "which loads only on drivers from CUDA {na}.{nb} on, but this build \
                         promises CUDA {da}.{db} drivers (Build::oldest_driver{}): {} {}, or \
                         declare Build::oldest_driver({na}, {nb})",
                        if *oldest_driver == isa::OLDEST_SUPPORTED_DRIVER {
                            ", by default the oldest driver cuda-driver supports"
                        } else {
                            ""
                        },
                        if *committed { "regenerate it with" } else { "install" },
                        isa::install_advice(*oldest_driver)
                    ),
                    None => write!(
                        f,
                        "newer than any driver this version of cuda-driver-build knows, and this \
                         build promises CUDA {da}.{db} drivers: {} {}",
                        if *committed { "regenerate it with" } else { "install" },
                        isa::install_advice(*oldest_driver)
                    ),
                }
            }
            Error::UnknownDriver { driver } => {
                write!(f, "Build::oldest_driver: {}", isa::unknown_driver(*driver))
            }
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
