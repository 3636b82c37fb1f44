//! Finding and running nvcc.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::Error;

/// The default virtual architecture: PTX the driver JIT-compiles for any GPU CUDA 13 supports.
pub const DEFAULT_ARCH: &str = "compute_75";

/// The environment variables [`find_nvcc`] reads, in order (then `PATH`).
pub const NVCC_ENV: [&str; 3] = ["NVCC", "CUDA_PATH", "CUDA_HOME"];

/// Finds nvcc. The first of `NVCC` (the executable), `CUDA_PATH` and `CUDA_HOME` (a toolkit
/// whose `bin/nvcc` is used) that is set decides, so a toolkit named there is never passed
/// over for another one: when it has no nvcc, that is the error. With none of them set,
/// `bin/nvcc` under each of `extra_roots`, then `nvcc` on `PATH`. The error says where it
/// looked.
pub fn find_nvcc(extra_roots: &[PathBuf]) -> Result<PathBuf, String> {
    let set = |var: &str| std::env::var_os(var).filter(|v| !v.is_empty());
    let exe = if cfg!(windows) { "nvcc.exe" } else { "nvcc" };
    if let Some(v) = set("NVCC") {
        let p = PathBuf::from(v);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!("NVCC={} is not a file", p.display()))
        };
    }
    for var in ["CUDA_PATH", "CUDA_HOME"] {
        if let Some(root) = set(var) {
            let p = Path::new(&root).join("bin").join(exe);
            return if p.is_file() {
                Ok(p)
            } else {
                Err(format!(
                    "{var}={} has no bin/{exe}",
                    Path::new(&root).display()
                ))
            };
        }
    }
    let from_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    extra_roots
        .iter()
        .map(|r| r.join("bin").join(exe))
        .chain(from_path.iter().map(|d| d.join(exe)))
        .find(|p| p.is_file())
        .ok_or_else(|| format!("NVCC, CUDA_PATH and CUDA_HOME are not set, and PATH has no {exe}"))
}

/// The environment variable that names the device runtime library file (as
/// `cuda_driver::DEVICE_RUNTIME_ENV`).
pub const DEVICE_RUNTIME_ENV: &str = "CUDA_DRIVER_CUDADEVRT";

/// Finds the CUDA device runtime library (`libcudadevrt.a`) for a build: the file
/// [`DEVICE_RUNTIME_ENV`] names (alone, when set), else the first that exists in the toolkit
/// of `nvcc` (its parent's `lib64/`, `lib/`, `targets/<arch>/lib/`), of `CUDA_PATH`, of
/// `CUDA_HOME`, of the pinned wheels in a `.venv` of the package's folder
/// (`CARGO_MANIFEST_DIR`) or a parent, and of `/usr/local/cuda`. The error lists every place
/// looked at.
pub fn find_device_runtime(nvcc: Option<&Path>) -> Result<PathBuf, Vec<PathBuf>> {
    let file = if cfg!(windows) {
        "cudadevrt.lib"
    } else {
        "libcudadevrt.a"
    };
    let set = |var: &str| std::env::var_os(var).filter(|v| !v.is_empty());
    if let Some(named) = set(DEVICE_RUNTIME_ENV) {
        let p = PathBuf::from(named);
        return if p.is_file() { Ok(p) } else { Err(vec![p]) };
    }
    let mut roots: Vec<PathBuf> = Vec::new();
    if let Some(root) = nvcc.and_then(Path::parent).and_then(Path::parent) {
        roots.push(root.to_path_buf());
    }
    for var in ["CUDA_PATH", "CUDA_HOME"] {
        if let Some(r) = set(var) {
            roots.push(PathBuf::from(r));
        }
    }
    // The pinned wheels of a `.venv` in the package's folder or one of its parents (a
    // repository's; `nvidia/cu13` is laid out as a toolkit).
    if let Some(dir) = set("CARGO_MANIFEST_DIR") {
        for d in Path::new(&dir).ancestors() {
            if let Ok(rd) = std::fs::read_dir(d.join(".venv/lib")) {
                let mut pythons: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
                pythons.sort();
                roots.extend(pythons.iter().map(|p| p.join("site-packages/nvidia/cu13")));
            }
        }
    }
    roots.push(PathBuf::from("/usr/local/cuda"));
    let mut searched = Vec::new();
    for root in roots {
        for sub in [
            "lib64",
            "lib",
            "lib/x64",
            "targets/x86_64-linux/lib",
            "targets/sbsa-linux/lib",
        ] {
            let p = root.join(sub).join(file);
            if p.is_file() {
                return Ok(p);
            }
            searched.push(p);
        }
    }
    Err(searched)
}

/// `13.0.88` from nvcc's `Cuda compilation tools, release 13.0, V13.0.88`.
pub fn nvcc_version(nvcc: &Path) -> Result<String, String> {
    let out = Command::new(nvcc)
        .arg("--version")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", nvcc.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find(|l| l.starts_with("Cuda compilation tools"))
        .and_then(|l| l.rsplit(", V").next())
        .map(|v| v.trim().to_string())
        .ok_or_else(|| format!("{} --version printed no release:\n{text}", nvcc.display()))
}

/// Whether `flags` choose an architecture (`-arch`, `--gpu-architecture`, with `=` or a
/// separate value).
pub fn sets_arch(flags: &[String]) -> bool {
    flags.iter().any(|f| {
        ["-arch", "--gpu-architecture"].iter().any(|opt| {
            f == opt
                || f.strip_prefix(opt)
                    .is_some_and(|rest| rest.starts_with('='))
        })
    })
}

/// nvcc's flags for compiling to PTX: `--ptx`, `-arch=<arch>` unless `extra` sets one, then
/// `extra`.
pub fn ptx_flags(arch: &str, extra: &[String]) -> Vec<String> {
    let mut flags = vec!["--ptx".to_string()];
    if !sets_arch(extra) {
        flags.push(format!("-arch={arch}"));
    }
    flags.extend(extra.iter().cloned());
    flags
}

/// Runs `nvcc <flags> -o <out> <source>` in `dir` (so nvcc records the name it is given),
/// failing with nvcc's output.
pub fn compile_ptx(
    nvcc: &Path,
    flags: &[String],
    source: &Path,
    out: &Path,
    dir: Option<&Path>,
) -> Result<(), String> {
    let mut cmd = Command::new(nvcc);
    cmd.args(flags).arg("-o").arg(out).arg(source);
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    let output = cmd
        .output()
        .map_err(|e| format!("cannot run {}: {e}", nvcc.display()))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`{} {} -o {} {}` failed ({}):\n{}{}",
            nvcc.display(),
            flags.join(" "),
            out.display(),
            source.display(),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

/// The files `source` includes with `#include "..."`, found relative to the including file
/// or one of `include_dirs`, recursively (for `cargo:rerun-if-changed`). System headers
/// (`<...>`) are left out.
pub fn local_includes(source: &Path, include_dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    let mut todo = vec![source.to_path_buf()];
    while let Some(file) = todo.pop() {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
        for name in quoted_includes(&text) {
            let candidate = std::iter::once(&dir)
                .chain(include_dirs)
                .map(|d| d.join(name))
                .find(|p| p.is_file());
            if let Some(p) = candidate {
                if !found.contains(&p) {
                    found.push(p.clone());
                    todo.push(p);
                }
            }
        }
    }
    found
}

/// The names of a source's `#include "name"` lines.
pub fn quoted_includes(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim_start().strip_prefix('#')?.trim_start();
            let rest = l.strip_prefix("include")?.trim_start();
            let rest = rest.strip_prefix('"')?;
            rest.split('"').next()
        })
        .collect()
}

impl Error {
    pub(crate) fn nvcc(source: &Path, detail: String) -> Error {
        Error::Nvcc {
            source_file: source.to_path_buf(),
            detail,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_flags() {
        assert_eq!(ptx_flags("compute_75", &[]), ["--ptx", "-arch=compute_75"]);
        let extra = vec!["-arch=compute_90".to_string(), "-lineinfo".to_string()];
        assert_eq!(
            ptx_flags("compute_75", &extra),
            ["--ptx", "-arch=compute_90", "-lineinfo"]
        );
        assert!(sets_arch(&[
            "--gpu-architecture".into(),
            "compute_80".into()
        ]));
        assert!(!sets_arch(&["-archive".into()]));
    }

    #[test]
    fn includes() {
        let src =
            "#include <cuda_fp16.h>\n  #  include \"common.cuh\"\n#include\"a/b.h\" // x\nint x;";
        assert_eq!(quoted_includes(src), ["common.cuh", "a/b.h"]);
    }
}
