//! Helpers shared by the tasks: paths, the CUDA toolkit, child processes, generated files.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root (the parent of `xtask/`).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_path_buf()
}

/// Candidate roots of a CUDA toolkit, in the order they are tried:
/// `CUDA_PATH`, `CUDA_HOME`, then a pip-installed toolkit (`nvidia/cu13` in the site-packages
/// of `$VIRTUAL_ENV`, of the repository's `.venv`, or of `python3`).
pub fn toolkit_roots() -> Vec<PathBuf> {
    let mut roots = Vec::new();
    for var in ["CUDA_PATH", "CUDA_HOME"] {
        if let Some(v) = std::env::var_os(var) {
            roots.push(PathBuf::from(v));
        }
    }
    let mut venvs = Vec::new();
    if let Some(v) = std::env::var_os("VIRTUAL_ENV") {
        venvs.push(PathBuf::from(v));
    }
    venvs.push(root().join(".venv"));
    for venv in venvs {
        if let Ok(entries) = std::fs::read_dir(venv.join("lib")) {
            for e in entries.flatten() {
                roots.push(e.path().join("site-packages/nvidia/cu13"));
            }
        }
    }
    if let Ok(out) = Command::new("python3")
        .args([
            "-c",
            "import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], 'cu13'))",
        ])
        .output()
    {
        if out.status.success() {
            let p = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if !p.is_empty() {
                roots.push(PathBuf::from(p));
            }
        }
    }
    roots
}

/// The include directory holding `cuda.h` and `cudaTypedefs.h`.
pub fn cuda_include_dir() -> Result<PathBuf, String> {
    for r in toolkit_roots() {
        let inc = r.join("include");
        if inc.join("cuda.h").is_file() && inc.join("cudaTypedefs.h").is_file() {
            return Ok(inc);
        }
    }
    Err(
        "cuda.h not found: set CUDA_PATH to a CUDA 13.0 toolkit, or install the pinned wheels \
         into .venv (see .ci/run)"
            .into(),
    )
}

/// The driver API headers the bindings mirror, in the order C code includes them: cuda.h and
/// cudaProfiler.h (profiler control, whose functions libcuda exports too; the pip package
/// `nvidia-cuda-profiler-api` of `.ci/run`).
pub const API_HEADERS: &[&str] = &["cuda.h", "cudaProfiler.h"];

/// The `PFN_*` typedefs of [`API_HEADERS`], one header each.
pub const TYPEDEF_HEADERS: &[&str] = &["cudaTypedefs.h", "cudaProfilerTypedefs.h"];

/// The text of `headers` in `inc`, one after the other.
pub fn read_headers(inc: &Path, headers: &[&str]) -> Result<String, String> {
    let mut out = String::new();
    for h in headers {
        let path = inc.join(h);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            let hint = if h.starts_with("cudaProfiler") {
                " (install the pinned wheel nvidia-cuda-profiler-api into .venv, see .ci/run)"
            } else {
                ""
            };
            format!("cannot read {}: {e}{hint}", path.display())
        })?;
        out.push_str(&text);
        out.push('\n');
    }
    Ok(out)
}

/// Runs a command, failing with its stderr when it does not exit successfully.
pub fn run_capture(cmd: &mut Command) -> Result<String, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {:?}: {e}", cmd.get_program()))?;
    if !out.status.success() {
        return Err(format!(
            "{:?} failed ({}):\n{}",
            cmd,
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    String::from_utf8(out.stdout).map_err(|e| format!("{:?} printed non-UTF-8: {e}", cmd))
}

/// Writes a generated file, or with `check` compares it with what is on disk.
///
/// `normalize` is applied to both sides before comparing (to ignore volatile lines).
pub fn write_or_check(
    path: &Path,
    contents: &str,
    check: bool,
    normalize: fn(&str) -> String,
) -> Result<(), String> {
    let rel = path
        .strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string();
    if check {
        let old = std::fs::read_to_string(path)
            .map_err(|e| format!("{rel} is missing ({e}); run the task without --check"))?;
        if normalize(&old) != normalize(contents) {
            let first = normalize(&old)
                .lines()
                .zip(normalize(contents).lines())
                .position(|(a, b)| a != b)
                .map(|i| format!(" (first difference at line {})", i + 1))
                .unwrap_or_default();
            return Err(format!(
                "{rel} is stale{first}; regenerate it without --check and commit"
            ));
        }
        println!("{rel}: up to date");
    } else {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        std::fs::write(path, contents).map_err(|e| format!("cannot write {rel}: {e}"))?;
        println!("wrote {rel}");
    }
    Ok(())
}

/// The identity normalisation for [`write_or_check`].
pub fn exact(s: &str) -> String {
    s.to_string()
}

/// The version of a package as locked in the workspace's `Cargo.lock`.
pub fn locked_version(package: &str) -> Option<String> {
    let lock = std::fs::read_to_string(root().join("Cargo.lock")).ok()?;
    let mut lines = lock.lines();
    while let Some(l) = lines.next() {
        if l == format!("name = \"{package}\"") {
            let v = lines.next()?;
            return Some(
                v.trim_start_matches("version = \"")
                    .trim_end_matches('"')
                    .to_string(),
            );
        }
    }
    None
}
