//! Compiler options: [`Options`] (typed, with a raw escape hatch) and [`CppStd`]; the
//! architecture is an [`Arch`].
//!
//! Every typed option is written as the one NVRTC option it stands for, in a fixed order, so
//! that equal options give equal command lines (and equal [cache](crate::Cache) keys). See
//! NVRTC's [supported compile options](https://docs.nvidia.com/cuda/nvrtc/index.html#supported-compile-options).

use std::ffi::CString;
use std::path::PathBuf;

use crate::arch::Arch;
use crate::cache::Cache;
use crate::cstring::c_string;
use crate::error::{Error, Result};

/// The C++ dialect (`--std=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CppStd {
    /// `--std=c++03`.
    Cpp03,
    /// `--std=c++11`.
    Cpp11,
    /// `--std=c++14`.
    Cpp14,
    /// `--std=c++17` (NVRTC's default).
    Cpp17,
    /// `--std=c++20`.
    Cpp20,
}

impl CppStd {
    fn name(self) -> &'static str {
        match self {
            CppStd::Cpp03 => "c++03",
            CppStd::Cpp11 => "c++11",
            CppStd::Cpp14 => "c++14",
            CppStd::Cpp17 => "c++17",
            CppStd::Cpp20 => "c++20",
        }
    }
}

/// How to compile a [`Program`](crate::Program): typed options, raw ones, and an optional
/// [`Cache`].
///
/// ```
/// use cuda_driver_rtc::{Arch, CppStd, Options};
/// let opts = Options::new()
///     .arch(Arch::compute(8, 0))
///     .std(CppStd::Cpp17)
///     .define("BLOCK", "256")
///     .fast_math(true)
///     .raw("--extra-device-vectorization");
/// assert_eq!(
///     opts.to_strings(),
///     [
///         "--gpu-architecture=compute_80",
///         "--std=c++17",
///         "-DBLOCK=256",
///         "--use_fast_math",
///         "--extra-device-vectorization",
///     ]
/// );
/// ```
#[derive(Clone, Debug, Default)]
pub struct Options {
    arch: Option<Arch>,
    std: Option<CppStd>,
    defines: Vec<(String, Option<String>)>,
    include_paths: Vec<PathBuf>,
    fast_math: bool,
    relocatable: bool,
    lto: bool,
    line_info: bool,
    device_debug: bool,
    raw: Vec<String>,
    cache: Option<Cache>,
    prefer_cubin: bool,
}

impl Options {
    /// No options: NVRTC's defaults (`compute_75`, C++17 in NVRTC 13.0).
    pub fn new() -> Options {
        Options::default()
    }

    /// The architecture (`--gpu-architecture`). [`Program::compile_for`](crate::Program::compile_for)
    /// chooses it for a device and refuses options that set it.
    pub fn arch(mut self, arch: Arch) -> Options {
        self.arch = Some(arch);
        self
    }

    /// The C++ dialect (`--std`).
    pub fn std(mut self, std: CppStd) -> Options {
        self.std = Some(std);
        self
    }

    /// Defines a macro: `-D<name>=<value>`.
    pub fn define(mut self, name: &str, value: &str) -> Options {
        self.defines.push((name.into(), Some(value.into())));
        self
    }

    /// Defines a macro without a value: `-D<name>` (it is `1`).
    pub fn define_flag(mut self, name: &str) -> Options {
        self.defines.push((name.into(), None));
        self
    }

    /// Adds a directory to search for `#include`d files on disk (`--include-path`). Headers
    /// given in memory to [`Program::with_headers`](crate::Program::with_headers) are found
    /// first. The [`Cache`] keys on the path, not on the files in it.
    pub fn include_path(mut self, dir: impl Into<PathBuf>) -> Options {
        self.include_paths.push(dir.into());
        self
    }

    /// Fast, less precise math (`--use_fast_math`).
    pub fn fast_math(mut self, on: bool) -> Options {
        self.fast_math = on;
        self
    }

    /// Relocatable device code (`--relocatable-device-code=true`), for linking with
    /// [`Linker`](crate::Linker).
    pub fn relocatable(mut self, on: bool) -> Options {
        self.relocatable = on;
        self
    }

    /// Link-time optimisation (`-dlto`): the output is LTO-IR for [`Linker`](crate::Linker)
    /// instead of PTX or a CUBIN.
    pub fn lto(mut self, on: bool) -> Options {
        self.lto = on;
        self
    }

    /// Line information for profilers and debuggers (`--generate-line-info`).
    pub fn line_info(mut self, on: bool) -> Options {
        self.line_info = on;
        self
    }

    /// Device debug information, no optimisation (`--device-debug`).
    pub fn device_debug(mut self, on: bool) -> Options {
        self.device_debug = on;
        self
    }

    /// Any NVRTC option, passed as it is, after the typed ones.
    pub fn raw(mut self, option: &str) -> Options {
        self.raw.push(option.into());
        self
    }

    /// Keeps compiled outputs in `cache` and reuses them (see [`Cache`]). Off by default.
    pub fn cache(mut self, cache: Cache) -> Options {
        self.cache = Some(cache);
        self
    }

    /// For [`Program::compile_for`](crate::Program::compile_for): compile a CUBIN for the
    /// device even where PTX would load (no JIT at load time), instead of only where PTX
    /// would not.
    pub fn prefer_cubin(mut self, on: bool) -> Options {
        self.prefer_cubin = on;
        self
    }

    /// The architecture set with [`arch`](Self::arch).
    pub fn get_arch(&self) -> Option<Arch> {
        self.arch
    }

    /// Whether [`lto`](Self::lto) is on.
    pub fn is_lto(&self) -> bool {
        self.lto
    }

    pub(crate) fn get_cache(&self) -> Option<&Cache> {
        self.cache.as_ref()
    }

    pub(crate) fn prefers_cubin(&self) -> bool {
        self.prefer_cubin
    }

    /// Whether an option sets the architecture (the typed one, or a raw `-arch`,
    /// `--gpu-architecture`).
    pub(crate) fn sets_arch(&self) -> bool {
        self.arch.is_some()
            || self.raw.iter().any(|o| {
                let o = o.trim_start_matches('-');
                o.starts_with("arch") || o.starts_with("gpu-architecture")
            })
    }

    /// The options as NVRTC gets them, in order: architecture, dialect, defines, include
    /// paths, the switches, then the raw options.
    pub fn to_strings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(a) = self.arch {
            out.push(a.option());
        }
        if let Some(s) = self.std {
            out.push(format!("--std={}", s.name()));
        }
        for (name, value) in &self.defines {
            match value {
                Some(v) => out.push(format!("-D{name}={v}")),
                None => out.push(format!("-D{name}")),
            }
        }
        for p in &self.include_paths {
            out.push(format!("--include-path={}", p.display()));
        }
        let switches = [
            (self.fast_math, "--use_fast_math"),
            (self.relocatable, "--relocatable-device-code=true"),
            (self.lto, "-dlto"),
            (self.line_info, "--generate-line-info"),
            (self.device_debug, "--device-debug"),
        ];
        for (on, opt) in switches {
            if on {
                out.push(opt.into());
            }
        }
        out.extend(self.raw.iter().cloned());
        out
    }

    /// The options as C strings, with `arch` (if any) in place of the one set here.
    pub(crate) fn to_c_strings(&self, arch: Option<Arch>) -> Result<Vec<CString>> {
        let mut opts = self.clone();
        if arch.is_some() {
            opts.arch = arch;
        }
        opts.to_strings()
            .into_iter()
            .map(|o| {
                let what = format!("option `{}`", o.escape_debug());
                c_string(o.into_bytes(), || what)
            })
            .collect()
    }
}

/// Options that conflict with an architecture chosen by [`Program::compile_for`].
pub(crate) fn refuse_arch(opts: &Options) -> Result<()> {
    if opts.sets_arch() {
        return Err(Error::InvalidOptions(
            "compile_for chooses the architecture for the device: leave Options::arch and raw \
             -arch/--gpu-architecture options out, or call compile"
                .into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_typed_option_is_one_nvrtc_option_in_a_fixed_order() {
        let o = Options::new()
            .raw("-w")
            .device_debug(true)
            .line_info(true)
            .lto(true)
            .relocatable(true)
            .fast_math(true)
            .include_path("/inc")
            .define_flag("FLAG")
            .define("N", "4")
            .std(CppStd::Cpp20)
            .arch(Arch::sm(9, 0));
        assert_eq!(
            o.to_strings(),
            [
                "--gpu-architecture=sm_90",
                "--std=c++20",
                "-DFLAG",
                "-DN=4",
                "--include-path=/inc",
                "--use_fast_math",
                "--relocatable-device-code=true",
                "-dlto",
                "--generate-line-info",
                "--device-debug",
                "-w",
            ]
        );
        assert!(Options::new().to_strings().is_empty());
    }

    #[test]
    fn an_architecture_set_in_any_form_is_refused_where_the_device_chooses() {
        assert!(refuse_arch(&Options::new().define("A", "1")).is_ok());
        for o in [
            Options::new().arch(Arch::compute(7, 5)),
            Options::new().raw("-arch=sm_80"),
            Options::new().raw("--gpu-architecture=compute_90"),
            Options::new().raw("-arch"),
        ] {
            assert!(matches!(refuse_arch(&o), Err(Error::InvalidOptions(_))));
        }
    }

    #[test]
    fn an_option_with_a_nul_byte_is_an_error_naming_it() {
        let e = Options::new()
            .define("A", "x\0y")
            .to_c_strings(None)
            .unwrap_err();
        assert!(
            matches!(&e, Error::InteriorNul { what, offset: 5 } if what.contains("-DA=x")),
            "{e}"
        );
        let c = Options::new()
            .arch(Arch::compute(8, 0))
            .to_c_strings(Some(Arch::sm(8, 6)))
            .unwrap();
        assert_eq!(c[0].to_str().unwrap(), "--gpu-architecture=sm_86");
    }
}
