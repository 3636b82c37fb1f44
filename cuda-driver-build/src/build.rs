//! [`Build`]: the `build.rs` helper.

use std::path::{Path, PathBuf};

use crate::nvcc;
use crate::{Error, Generator};

/// Compiles `.cu` files to PTX and generates their typed launchers, from a build script.
///
/// For each file `NAME.cu` it writes `$OUT_DIR/NAME.ptx` and `$OUT_DIR/NAME.rs` (the
/// launchers, which embed the PTX: see [`Generator::generate`]) and prints
/// `cargo:rerun-if-changed` for the source, the headers it includes with `#include "..."`,
/// and the committed PTX, and `cargo:rerun-if-env-changed` for `NVCC`, `CUDA_PATH` and
/// `CUDA_HOME`.
///
/// Without nvcc, a file is taken from the [committed PTX](Build::committed_ptx) folder
/// (`NAME.ptx`), with a `cargo:warning`; without that, the build fails saying what to
/// install.
///
/// ```no_run
/// // build.rs, in fn main:
/// cuda_driver_build::Build::new()
///     .file("kernels/saxpy.cu")
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

    /// Compiles and generates, failing the build script with the error's message (as `cc`
    /// does).
    pub fn compile(&self) {
        if let Err(e) = self.try_compile() {
            eprintln!("error: {e}");
            panic!("cuda-driver-build: {e}");
        }
    }

    /// Compiles and generates; returns the generated `.rs` files, one per source.
    pub fn try_compile(&self) -> Result<Vec<PathBuf>, Error> {
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
            let committed = self
                .committed
                .as_ref()
                .map(|d| d.join(format!("{stem}.ptx")))
                .filter(|p| p.is_file());
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
                            return Err(Error::NvccNotFound {
                                source_file: cu.clone(),
                                searched: searched.clone(),
                            })
                        }
                    }
                }
                (None, true) => {
                    let nvcc = nvcc::find_nvcc(&[]).map_err(|searched| Error::NvccNotFound {
                        source_file: cu.clone(),
                        searched,
                    })?;
                    nvcc::compile_ptx(&nvcc, &flags, cu, &ptx_path, None)
                        .map_err(|d| Error::nvcc(cu, d))?;
                    None
                }
            };
            if let Some(c) = use_committed {
                std::fs::copy(&c, &ptx_path).map_err(|source| Error::Io {
                    path: c.clone(),
                    source,
                })?;
            }
            let ptx = std::fs::read_to_string(&ptx_path).map_err(|source| Error::Io {
                path: ptx_path.clone(),
                source,
            })?;
            let abs = std::path::absolute(&ptx_path).unwrap_or(ptx_path.clone());
            let (generator, used) = self.generator.restricted_to(&ptx)?;
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
