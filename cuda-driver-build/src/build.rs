//! [`Build`]: the `build.rs` helper.

use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::generate::Generator;
use crate::{isa, nvcc};

/// Compiles `.cu` files to PTX and generates their typed launchers, from a build script.
///
/// For each file `NAME.cu` it writes `$OUT_DIR/NAME.ptx` and `$OUT_DIR/NAME.rs` (the
/// launchers, which embed the PTX: see [`Generator::generate`]) and prints
/// `cargo:rerun-if-changed` for the source, the headers it includes with `#include "..."`,
/// and the committed PTX, and `cargo:rerun-if-env-changed` for `NVCC`, `CUDA_PATH` and
/// `CUDA_HOME`.
///
/// nvcc is the one `NVCC` names, else `bin/nvcc` of `CUDA_PATH`, else of `CUDA_HOME`, else the
/// first on `PATH` (see [`nvcc::find_nvcc`]). Without nvcc, a file is taken from the
/// [committed PTX](Build::committed_ptx) folder (`NAME.ptx`), with a `cargo:warning`; without
/// that, the build fails saying which file it looked for, where, and the nvcc command that
/// writes it. The PTX, nvcc's or committed, must load on the
/// [oldest driver](Build::oldest_driver) (CUDA 12.0 unless declared), or the build fails naming
/// the toolkit that wrote it and the pinned one to install.
///
/// ```no_run
/// // build.rs, in fn main:
/// cuda_driver_build::Build::new()
///     .file("kernels/saxpy.cu")
///     .oldest_driver(13, 0) // PTX ISA 9.0, from the pinned CUDA 13.0 toolkit
///     .committed_ptx("kernels") // kernels/saxpy.ptx, for builds without a toolkit
///     .compile();
/// ```
#[derive(Clone, Debug)]
pub struct Build {
    files: Vec<PathBuf>,
    arch: String,
    flags: Vec<String>,
    include_dirs: Vec<PathBuf>,
    committed: Option<PathBuf>,
    prefer_committed: bool,
    out_dir: Option<PathBuf>,
    generator: Generator,
    cargo_metadata: bool,
    oldest_driver: (u32, u32),
    device_runtime: bool,
}

impl Default for Build {
    fn default() -> Build {
        Build::new()
    }
}

impl Build {
    /// A build of no files, for `compute_75`.
    pub fn new() -> Build {
        Build {
            files: Vec::new(),
            arch: nvcc::DEFAULT_ARCH.into(),
            flags: Vec::new(),
            include_dirs: Vec::new(),
            committed: None,
            prefer_committed: false,
            out_dir: None,
            generator: Generator::new(),
            cargo_metadata: true,
            oldest_driver: isa::OLDEST_SUPPORTED_DRIVER,
            device_runtime: false,
        }
    }

    /// Adds a `.cu` file (relative to the package root, where cargo runs build scripts).
    pub fn file(&mut self, path: impl AsRef<Path>) -> &mut Build {
        self.files.push(path.as_ref().to_path_buf());
        self
    }

    /// The virtual architecture (`compute_80`); `compute_75` by default. An `-arch` among the
    /// [flags](Build::flag) wins.
    pub fn arch(&mut self, arch: &str) -> &mut Build {
        self.arch = arch.into();
        self
    }

    /// Adds an nvcc flag (`-lineinfo`, `-DN=4`, `--use_fast_math`).
    pub fn flag(&mut self, flag: &str) -> &mut Build {
        self.flags.push(flag.into());
        self
    }

    /// Adds an include directory (`-I`), also searched for `rerun-if-changed` headers.
    pub fn include(&mut self, dir: impl AsRef<Path>) -> &mut Build {
        self.include_dirs.push(dir.as_ref().to_path_buf());
        self
    }

    /// A folder of committed `NAME.ptx` files, used for the `NAME.cu` files when nvcc is not
    /// installed, so that builds need no CUDA toolkit.
    pub fn committed_ptx(&mut self, dir: impl AsRef<Path>) -> &mut Build {
        self.committed = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Uses the committed PTX even where nvcc is installed (nvcc then runs only for a file
    /// without committed PTX): for repositories that regenerate and check their PTX
    /// themselves, so that every build embeds the checked files.
    pub fn prefer_committed(&mut self, yes: bool) -> &mut Build {
        self.prefer_committed = yes;
        self
    }

    /// Where the `.ptx` and `.rs` files go; `OUT_DIR` by default.
    pub fn out_dir(&mut self, dir: impl AsRef<Path>) -> &mut Build {
        self.out_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Whether to print `cargo:` lines (on by default).
    pub fn cargo_metadata(&mut self, yes: bool) -> &mut Build {
        self.cargo_metadata = yes;
        self
    }

    /// The oldest CUDA driver the PTX must load on, `(major, minor)`: CUDA 12.0 by default, the
    /// oldest driver cuda-driver supports. The PTX that the build embeds (nvcc's output or the
    /// committed file) must be of a PTX ISA that driver accepts, which only a toolkit of that
    /// CUDA release or older writes (see [`isa`]): CUDA 12.0's nvcc for the default, the
    /// pinned CUDA 13.0 toolkit for `oldest_driver(13, 0)`. Newer PTX fails the build, naming
    /// the toolkit that wrote it and the one to install, instead of failing to load
    /// (`CUDA_ERROR_UNSUPPORTED_PTX_VERSION`) on the users' machines.
    pub fn oldest_driver(&mut self, major: u32, minor: u32) -> &mut Build {
        self.oldest_driver = (major, minor);
        self
    }

    /// Kernels that call the CUDA device runtime from device code (`cudaGraphSetConditional`,
    /// which drives a graph's if, while and switch nodes from a kernel): compiles them as
    /// relocatable device code (`-rdc=true`, unless the [flags](Build::flag) choose already)
    /// and makes the generated `Kernels::load` link the PTX with the device runtime library
    /// (`libcudadevrt.a`) before loading it (`cuda_driver::Module::load_with_device_runtime`).
    ///
    /// The library is looked for at build time next to the nvcc that compiles (its toolkit's
    /// `lib64/`, `lib/`, `targets/<arch>/lib/`), then where `cuda_driver::module::find_device_runtime`
    /// looks (`CUDA_DRIVER_CUDADEVRT`, `CUDA_PATH`, `CUDA_HOME`, a `.venv`'s pinned wheels,
    /// `/usr/local/cuda`, ...); the file found is tried first at run time, then the same
    /// search runs where the program runs, so a program built on one machine finds the
    /// toolkit of another. Not found at build time is a `cargo:warning` naming the places;
    /// not found at run time is `cuda_driver::module::ModuleError::DeviceRuntimeNotFound`,
    /// naming them.
    pub fn device_runtime(&mut self, yes: bool) -> &mut Build {
        self.device_runtime = yes;
        self
    }

    /// The C++ parameter list of an `extern "C"` kernel: see [`Generator::signature`].
    pub fn signature(&mut self, kernel: &str, params: &str) -> &mut Build {
        self.generator.signature(kernel, params);
        self
    }

    /// A Rust name for a kernel's handle: see [`Generator::rename`].
    pub fn rename(&mut self, kernel: &str, rust_name: &str) -> &mut Build {
        self.generator.rename(kernel, rust_name);
        self
    }

    /// Compiles and generates, failing the build script with the error's message, printed once
    /// through cargo's build-script error channel (`cargo::error=`, which fails the build when
    /// the build script has finished) with no panic and no backtrace. With a cargo older than
    /// 1.84, or [`cargo_metadata(false)`](Build::cargo_metadata), the message goes to stderr
    /// and the process exits with status 1.
    pub fn compile(&self) {
        if let Err(e) = self.try_compile() {
            fail(
                &e.to_string(),
                self.cargo_metadata && cargo_has_error_directive(),
            );
        }
    }

    /// Compiles and generates; returns the generated `.rs` files, one per source.
    pub fn try_compile(&self) -> Result<Vec<PathBuf>, Error> {
        if isa::newest_ptx_isa(self.oldest_driver).is_none() {
            return Err(Error::UnknownDriver {
                driver: self.oldest_driver,
            });
        }
        let out_dir = match &self.out_dir {
            Some(d) => d.clone(),
            None => PathBuf::from(std::env::var_os("OUT_DIR").ok_or(Error::Env("OUT_DIR"))?),
        };
        if self.cargo_metadata {
            for var in nvcc::NVCC_ENV {
                println!("cargo:rerun-if-env-changed={var}");
            }
        }
        let mut flags = nvcc::ptx_flags(&self.arch, &self.flags);
        for d in &self.include_dirs {
            flags.push(format!("-I{}", d.display()));
        }
        let mut base_generator = self.generator.clone();
        if self.device_runtime {
            if !flags
                .iter()
                .any(|f| f.starts_with("-rdc") || f.starts_with("--relocatable-device-code"))
            {
                flags.push("-rdc=true".into());
            }
            if self.cargo_metadata {
                println!("cargo:rerun-if-env-changed={}", nvcc::DEVICE_RUNTIME_ENV);
            }
            let nvcc = nvcc::find_nvcc(&[]).ok();
            match nvcc::find_device_runtime(nvcc.as_deref()) {
                Ok(lib) => {
                    base_generator.device_runtime(&[lib]);
                }
                Err(searched) => {
                    if self.cargo_metadata {
                        println!(
                            "cargo:warning=libcudadevrt.a not found at build time (looked at {}); \
                             Kernels::load looks for it where the program runs",
                            searched
                                .iter()
                                .map(|p| p.display().to_string())
                                .collect::<Vec<_>>()
                                .join(", ")
                        );
                    }
                    base_generator.device_runtime(&[]);
                }
            }
        }
        let mut used_options: Vec<String> = Vec::new();
        let mut nvcc_path: Option<Result<PathBuf, String>> = None;
        let mut outputs = Vec::new();
        for cu in &self.files {
            let stem = cu
                .file_stem()
                .ok_or_else(|| Error::Io {
                    path: cu.clone(),
                    source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "no file name"),
                })?
                .to_string_lossy()
                .into_owned();
            let named = self
                .committed
                .as_ref()
                .map(|d| d.join(format!("{stem}.ptx")));
            let committed = named.clone().filter(|p| p.is_file());
            if self.cargo_metadata {
                println!("cargo:rerun-if-changed={}", cu.display());
                for h in nvcc::local_includes(cu, &self.include_dirs) {
                    println!("cargo:rerun-if-changed={}", h.display());
                }
                if let Some(c) = &committed {
                    println!("cargo:rerun-if-changed={}", c.display());
                }
            }
            let ptx_path = out_dir.join(format!("{stem}.ptx"));
            let use_committed = match (&committed, self.prefer_committed) {
                (Some(c), true) => Some(c.clone()),
                (committed, false) => {
                    let found = nvcc_path.get_or_insert_with(|| nvcc::find_nvcc(&[]));
                    match (found, committed) {
                        (Ok(nvcc), _) => {
                            nvcc::compile_ptx(nvcc, &flags, cu, &ptx_path, None)
                                .map_err(|d| Error::nvcc(cu, d))?;
                            None
                        }
                        (Err(_), Some(c)) => {
                            if self.cargo_metadata {
                                println!(
                                    "cargo:warning=nvcc not found: using the committed {} for {}",
                                    c.display(),
                                    cu.display()
                                );
                            }
                            Some(c.clone())
                        }
                        (Err(searched), None) => {
                            return Err(match named {
                                Some(c) => Error::CommittedPtxMissing {
                                    source_file: cu.clone(),
                                    looked_at: std::path::absolute(&c).unwrap_or(c.clone()),
                                    command: format!(
                                        "nvcc {} -o {} {}",
                                        flags.join(" "),
                                        c.display(),
                                        cu.display()
                                    )
                                    .into(),
                                    committed: c,
                                    searched: searched.clone(),
                                    oldest_driver: self.oldest_driver,
                                },
                                None => Error::NvccNotFound {
                                    source_file: cu.clone(),
                                    searched: searched.clone(),
                                    oldest_driver: self.oldest_driver,
                                },
                            })
                        }
                    }
                }
                (None, true) => {
                    let nvcc = nvcc::find_nvcc(&[]).map_err(|searched| Error::NvccNotFound {
                        source_file: cu.clone(),
                        searched,
                        oldest_driver: self.oldest_driver,
                    })?;
                    nvcc_path = Some(Ok(nvcc.clone()));
                    nvcc::compile_ptx(&nvcc, &flags, cu, &ptx_path, None)
                        .map_err(|d| Error::nvcc(cu, d))?;
                    None
                }
            };
            if let Some(c) = &use_committed {
                std::fs::copy(c, &ptx_path).map_err(|source| Error::Io {
                    path: c.clone(),
                    source,
                })?;
            }
            let ptx = std::fs::read_to_string(&ptx_path).map_err(|source| Error::Io {
                path: ptx_path.clone(),
                source,
            })?;
            self.check_isa(cu, &ptx, &ptx_path, use_committed.as_deref(), &nvcc_path)?;
            let abs = std::path::absolute(&ptx_path).unwrap_or(ptx_path.clone());
            let (generator, used) = base_generator.restricted_to(&ptx)?;
            used_options.extend(used);
            let src = generator.generate(&ptx, Some(&abs))?;
            let rs = out_dir.join(format!("{stem}.rs"));
            std::fs::write(&rs, src).map_err(|source| Error::Io {
                path: rs.clone(),
                source,
            })?;
            outputs.push(rs);
        }
        // An option naming a kernel of no file is a mistake (a typo, a renamed kernel).
        if let Some((option, kernel)) = self
            .generator
            .option_names()
            .into_iter()
            .find(|(_, k)| !used_options.iter().any(|u| u == k))
        {
            return Err(Error::UnknownKernel {
                option,
                kernel: kernel.into(),
            });
        }
        Ok(outputs)
    }
}

impl Build {
    /// Fails when `ptx` (nvcc's output, or the `committed` file) is newer than
    /// [`oldest_driver`](Build::oldest_driver) loads.
    fn check_isa(
        &self,
        cu: &Path,
        ptx: &str,
        ptx_path: &Path,
        committed: Option<&Path>,
        nvcc_path: &Option<Result<PathBuf, String>>,
    ) -> Result<(), Error> {
        let version = isa::ptx_isa_version(ptx).map_err(|detail| Error::Ptx {
            kernel: ptx_path.display().to_string(),
            detail,
        })?;
        if isa::check(version, self.oldest_driver).is_ok() {
            return Ok(());
        }
        let nvcc = match (committed, nvcc_path) {
            (None, Some(Ok(p))) => Some(p.clone()),
            _ => None,
        };
        let toolkit = isa::toolkit_of(ptx)
            .map(str::to_string)
            .or_else(|| nvcc.as_deref().and_then(|n| nvcc::nvcc_version(n).ok()));
        Err(Error::PtxTooNew {
            source_file: cu.to_path_buf(),
            ptx_file: committed.unwrap_or(ptx_path).to_path_buf(),
            committed: committed.is_some(),
            nvcc,
            toolkit,
            isa: version,
            oldest_driver: self.oldest_driver,
        })
    }
}

/// Whether the cargo running this build script takes `cargo::error=` (cargo 1.84 on), and the
/// package's `rust-version` allows the `cargo::` syntax (1.77 on).
fn cargo_has_error_directive() -> bool {
    let version = |v: &str| -> Option<(u32, u32)> {
        let mut parts = v.trim().split('.');
        Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
    };
    let msrv_ok = match std::env::var("CARGO_PKG_RUST_VERSION") {
        Ok(v) if !v.is_empty() => version(&v).is_some_and(|v| v >= (1, 77)),
        _ => true,
    };
    let Some(cargo) = std::env::var_os("CARGO") else {
        return false;
    };
    let Ok(out) = std::process::Command::new(cargo).arg("-V").output() else {
        return false;
    };
    // `cargo 1.84.0 (66221abde 2024-11-19)`
    let text = String::from_utf8_lossy(&out.stdout);
    let cargo_ok = text
        .split_whitespace()
        .nth(1)
        .and_then(version)
        .is_some_and(|v| v >= (1, 84));
    msrv_ok && cargo_ok
}

/// Reports a failed build once: through `cargo::error=` lines, after which cargo fails the
/// build, or on stderr with exit status 1.
fn fail(message: &str, error_directive: bool) {
    if error_directive {
        for line in message.lines() {
            println!("cargo::error={line}");
        }
    } else {
        eprintln!("error: {message}");
        std::process::exit(1);
    }
}
