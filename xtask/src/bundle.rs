//! `cargo xtask gpu-bundle [--out DIR]`: builds everything that needs a GPU to prove itself
//! into one directory (default `target/gpu-bundle`) to copy to a GPU machine and run there
//! with `run.sh`, which needs bash and the NVIDIA driver but no Rust toolchain.
//!
//! The bundle holds, built in release (stripped):
//! * `tests/`: the test binaries of `cuda-driver-sys`, `cuda-driver`, `cuda-driver-rtc` and
//!   `cuda-driver-nccl` (the `tests/gpu` integration tests, cuda-driver-rtc's `tests/compile`,
//!   and the lib unit tests), named `<package>-<target>`; cuda-driver-rtc's find NVRTC and
//!   nvJitLink where they run (the pip wheels of `python3`, a toolkit), as its examples do;
//! * `examples/`: every example of `cuda-driver-examples`, and `first_program_dynamic_loading`,
//!   the README's first program built with cuda-driver's `dynamic-loading` feature, and
//!   `readme_first_kernels`, the README's typed-launcher program built as a new crate from the
//!   packaged crates with the pinned nvcc (`check-readme`'s build, in release);
//! * `ptx/`: a copy of the workspace's `ptx/` directory;
//! * `lib/libcudadevrt.a`: the CUDA device runtime of the pinned 13.0 wheels (the toolkit that
//!   wrote the committed PTX), which `run.sh` names in `CUDA_DRIVER_CUDADEVRT` for the programs
//!   that link device code calling it (graph conditionals set from a kernel); where the build
//!   machine has none, the programs look for it where they run (`/usr/local/cuda`, ...);
//! * `run.sh` and `info.txt` (the commit it was built from).
//!
//! The binaries link `libcuda.so.1` by its soname and carry no run path, so they load the
//! driver installed where they run. Where the build found no driver it linked the stub of
//! cuda-driver-sys, which stays in the build directory: it is not copied, and `run.sh` sets no
//! `LD_LIBRARY_PATH`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::util;

/// The most the bundle may weigh: it must travel in under 64 MiB.
const MAX_BYTES: u64 = 60 << 20;

pub fn run(args: &[String]) -> Result<(), String> {
    let mut out = util::root().join("target/gpu-bundle");
    let mut args = args.iter();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--out" => out = PathBuf::from(args.next().ok_or("--out needs a directory")?),
            other => match other.strip_prefix("--out=") {
                Some(v) => out = PathBuf::from(v),
                None => return Err(format!("unknown option `{other}` (expected --out DIR)")),
            },
        }
    }

    let tests = artifacts(
        cargo()
            .args(["test", "--release", "--no-run", "--tests"])
            .args([
                "-p",
                "cuda-driver-sys",
                "-p",
                "cuda-driver",
                "-p",
                "cuda-driver-rtc",
                "-p",
                "cuda-driver-nccl",
            ]),
        |kind| kind == "test" || kind.ends_with("lib"),
    )?;
    let examples = artifacts(
        cargo()
            .args(["build", "--release", "--examples"])
            .args(["-p", "cuda-driver-examples"]),
        |kind| kind == "example",
    )?;

    // The README's first program once more, with cuda-driver's `dynamic-loading` feature (its
    // own target directory, so that the main build keeps its features): it opens libcuda at
    // run time instead of linking it.
    let dynamic = artifacts(
        cargo()
            .args(["build", "--release", "-p", "cuda-driver-examples"])
            .args(["--example", "first_program"])
            .args(["--features", "cuda-driver/dynamic-loading", "--target-dir"])
            .arg(util::root().join("target/dynamic-loading")),
        |kind| kind == "example",
    )?;
    let [dynamic] = &dynamic[..] else {
        return Err(format!(
            "expected one first_program built with dynamic loading, got {}",
            dynamic.len()
        ));
    };
    check_not_linked_to_libcuda(&dynamic.executable)?;
    let first_kernels = crate::readme::release_first_kernels()?;

    prepare_dir(&out)?;
    for a in &tests {
        let name = if a.kind == "test" {
            format!("{}-{}", a.package, a.target)
        } else {
            format!("{}-unit", a.package)
        };
        copy(&a.executable, &out.join("tests").join(name))?;
    }
    for a in &examples {
        copy(&a.executable, &out.join("examples").join(&a.target))?;
    }
    copy(
        &dynamic.executable,
        &out.join("examples/first_program_dynamic_loading"),
    )?;
    copy(&first_kernels, &out.join("examples/readme_first_kernels"))?;
    copy_dir(&util::root().join("ptx"), &out.join("ptx"))?;
    match device_runtime() {
        Some(lib) => copy(&lib, &out.join("lib/libcudadevrt.a"))?,
        None => println!(
            "libcudadevrt.a not found in .venv or CUDA_PATH: the bundle's programs look for it \
             where they run"
        ),
    }
    write(&out.join("info.txt"), &info(), false)?;
    write(&out.join("run.sh"), RUN_SH, true)?;

    let bytes = size(&out)?;
    println!(
        "{}: {} test binaries, {} examples, {:.1} MiB; run it with {}/run.sh [--sanitize] [--bench] [test filter]",
        out.display(),
        tests.len(),
        examples.len(),
        bytes as f64 / (1 << 20) as f64,
        out.display(),
    );
    if bytes > MAX_BYTES {
        return Err(format!(
            "the bundle is {bytes} bytes, over the {} MiB limit",
            MAX_BYTES >> 20
        ));
    }
    Ok(())
}

/// The device runtime library of the pinned CUDA 13.0 wheels in the workspace's `.venv` (the
/// toolkit of the committed PTX), else of the toolkit at `CUDA_PATH`.
fn device_runtime() -> Option<PathBuf> {
    let mut candidates = Vec::new();
    if let Ok(rd) = std::fs::read_dir(util::root().join(".venv/lib")) {
        for py in rd.flatten() {
            candidates.push(
                py.path()
                    .join("site-packages/nvidia/cu13/lib/libcudadevrt.a"),
            );
        }
    }
    if let Some(root) = std::env::var_os("CUDA_PATH").filter(|v| !v.is_empty()) {
        let root = PathBuf::from(root);
        candidates.push(root.join("lib64/libcudadevrt.a"));
        candidates.push(root.join("lib/libcudadevrt.a"));
    }
    candidates.into_iter().find(|p| p.is_file())
}

/// Refuses a binary that names libcuda among its needed libraries (`readelf -d`; skipped with
/// a note where readelf is missing).
fn check_not_linked_to_libcuda(path: &Path) -> Result<(), String> {
    let out = match Command::new("readelf").arg("-d").arg(path).output() {
        Ok(out) if out.status.success() => out,
        _ => {
            println!("readelf not found: not checking that the dynamic-loading build leaves libcuda unlinked");
            return Ok(());
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);
    if let Some(line) = text
        .lines()
        .find(|l| l.contains("(NEEDED)") && l.contains("libcuda"))
    {
        return Err(format!(
            "{} was built with dynamic-loading but links libcuda: {}",
            path.display(),
            line.trim()
        ));
    }
    Ok(())
}

fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(util::root()).stderr(Stdio::inherit());
    cmd
}

/// An executable that cargo built.
struct Artifact {
    package: String,
    /// The target's name (`gpu`, `vector_add`, `cuda_driver`).
    target: String,
    /// The target's first kind (`test`, `lib`, `example`).
    kind: String,
    executable: PathBuf,
}

/// Runs a cargo build with `--message-format=json-render-diagnostics` (diagnostics go to the
/// terminal) and returns the executables of the targets whose kind `keep` accepts.
fn artifacts(cmd: &mut Command, keep: fn(&str) -> bool) -> Result<Vec<Artifact>, String> {
    let stdout = util::run_capture(cmd.arg("--message-format=json-render-diagnostics"))?;
    let mut found = Vec::new();
    for line in stdout.lines() {
        if !line.starts_with("{\"reason\":\"compiler-artifact\"") {
            continue;
        }
        let Some(executable) = json_string(line, "executable") else {
            continue;
        };
        let kind = json_string(line, "kind").unwrap_or_default();
        if !keep(&kind) {
            continue;
        }
        let package_id = json_string(line, "package_id")
            .ok_or_else(|| format!("cargo printed an artifact without package_id: {line}"))?;
        found.push(Artifact {
            package: package_name(&package_id),
            target: json_string(line, "name")
                .ok_or_else(|| format!("cargo printed an artifact without a name: {line}"))?,
            kind,
            executable: PathBuf::from(executable),
        });
    }
    Ok(found)
}

/// The first string value after `"key":` in a line of cargo's JSON, or the first element when
/// the value is an array of strings; `None` for `null`. Enough for cargo's messages, whose
/// keys are unique until `"target"` ends, not a JSON parser.
fn json_string(line: &str, key: &str) -> Option<String> {
    let pat = format!("\"{key}\":");
    let rest = &line[line.find(&pat)? + pat.len()..];
    let rest = rest.strip_prefix('[').unwrap_or(rest);
    let mut chars = rest.strip_prefix('"')?.chars();
    let mut s = String::new();
    loop {
        match chars.next()? {
            '"' => return Some(s),
            '\\' => match chars.next()? {
                'n' => s.push('\n'),
                't' => s.push('\t'),
                'u' => {
                    let hex: String = chars.by_ref().take(4).collect();
                    s.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                }
                c => s.push(c),
            },
            c => s.push(c),
        }
    }
}

/// The package name in a package id: `path+file:///w/cuda-driver#0.1.0` (the directory
/// names the package), `path+file:///w/dir#name@0.1.0`, or the older `name 0.1.0 (path+...)`.
fn package_name(id: &str) -> String {
    match id.split_once('#') {
        Some((url, frag)) => match frag.split_once('@') {
            Some((name, _)) => name.to_string(),
            None => url.rsplit('/').next().unwrap_or(url).to_string(),
        },
        None => id.split(' ').next().unwrap_or(id).to_string(),
    }
}

/// Empties `dir` for a new bundle, refusing to delete anything that is not one.
fn prepare_dir(dir: &Path) -> Result<(), String> {
    if dir.exists() {
        let empty = std::fs::read_dir(dir)
            .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
            .next()
            .is_none();
        if !empty && !dir.join("run.sh").is_file() {
            return Err(format!(
                "{} exists and is not a GPU bundle (no run.sh); choose another --out",
                dir.display()
            ));
        }
        std::fs::remove_dir_all(dir)
            .map_err(|e| format!("cannot remove the old bundle {}: {e}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))
}

fn copy(from: &Path, to: &Path) -> Result<(), String> {
    if let Some(dir) = to.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    std::fs::copy(from, to)
        .map(drop)
        .map_err(|e| format!("cannot copy {} to {}: {e}", from.display(), to.display()))
}

fn copy_dir(from: &Path, to: &Path) -> Result<(), String> {
    let entries =
        std::fs::read_dir(from).map_err(|e| format!("cannot read {}: {e}", from.display()))?;
    for e in entries {
        let path = e
            .map_err(|e| format!("cannot read {}: {e}", from.display()))?
            .path();
        let dest = to.join(path.file_name().expect("a directory entry has a name"));
        if path.is_dir() {
            copy_dir(&path, &dest)?;
        } else {
            copy(&path, &dest)?;
        }
    }
    Ok(())
}

fn write(path: &Path, contents: &str, executable: bool) -> Result<(), String> {
    std::fs::write(path, contents).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    #[cfg(unix)]
    if executable {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| format!("cannot make {} executable: {e}", path.display()))?;
    }
    #[cfg(not(unix))]
    let _ = executable;
    Ok(())
}

/// `info.txt`: the commit the bundle was built from, and whether the tree had changes.
fn info() -> String {
    let git = |args: &[&str]| {
        util::run_capture(Command::new("git").args(args).current_dir(util::root()))
            .map(|s| s.trim().to_string())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|e| {
        eprintln!("xtask gpu-bundle: warning: no commit recorded: {e}");
        "unknown".into()
    });
    let dirty = match git(&["status", "--porcelain", "--untracked-files=normal"]) {
        Ok(s) if s.is_empty() => "",
        Ok(_) => " with uncommitted changes",
        Err(_) => " (tree state unknown)",
    };
    format!("built from commit {commit}{dirty}\n")
}

/// The total size of the files under `dir`.
fn size(dir: &Path) -> Result<u64, String> {
    let mut total = 0;
    for e in std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))? {
        let e = e.map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        let meta = e
            .metadata()
            .map_err(|err| format!("cannot stat {}: {err}", e.path().display()))?;
        total += if meta.is_dir() {
            size(&e.path())?
        } else {
            meta.len()
        };
    }
    Ok(total)
}

const RUN_SH: &str = r#"#!/usr/bin/env bash
# Runs the GPU bundle built by `cargo xtask gpu-bundle`: every test binary, then every example
# but `bench`, then `bench` with --bench or RUN_BENCH=1 (writing $OUT/bench.json when OUT is
# set). With --sanitize, every example but `bench` runs once more under
# `compute-sanitizer --tool memcheck --leak-check full` (child processes included): it fails
# on any memory error or leak, and on any driver API error but those an example provokes on
# purpose (listed below, with their count, each the seed program's demonstration of an
# error report) and the CUDA_ERROR_INVALID_VALUE that ends a kernel's parameter list at its
# first checked launch (cu{Func,Kernel}GetParamInfo, counted apart). Other arguments go to the test binaries (libtest filters and
# options). Each program is stopped after GPU_BUNDLE_TIMEOUT seconds (default 300), and counts
# as failed.
# The last line is `gpu-bundle: N passed, M failed`; the exit status is non-zero when M > 0 or
# when nothing ran.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")" || exit 2

# The device runtime the bundle carries (from the pinned CUDA 13.0 wheels), for programs that
# link device code calling it (graph conditionals set from a kernel); without it they look
# for one where they run (/usr/local/cuda, CUDA_PATH, ...).
if [ -f lib/libcudadevrt.a ] && [ -z "${CUDA_DRIVER_CUDADEVRT:-}" ]; then
    export CUDA_DRIVER_CUDADEVRT="$PWD/lib/libcudadevrt.a"
fi

# NVLink multicast (NVLS) stays off in NCCL: on shared hosts a multicast call gone wrong can put
# the GPUs out of service. Every NCCL test and example inherits this (the crate sets it too).
export NCCL_NVLS_ENABLE=0

# Skips are failures, but for tests that need more GPUs than this machine has.
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
export CUDA_DRIVER_REQUIRE_GPU=$((gpus > 0 ? gpus : 1))
bench=0
[ "${RUN_BENCH:-0}" = 1 ] && bench=1
args=()
sanitize=0
for a in "$@"; do
    case $a in
        --bench) bench=1 ;;
        --sanitize) sanitize=1 ;;
        *) args+=("$a") ;;
    esac
done

passed=0
failed=0
failures=()

cat info.txt 2>/dev/null
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi -L
else
    echo "nvidia-smi not found"
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT

# run NAME CMD...: runs one program with its output shown; leaves its status in $status.
run() {
    local name=$1
    shift
    echo
    echo "=== $name"
    local start=$SECONDS
    if command -v timeout >/dev/null 2>&1; then
        timeout --kill-after=10 "${GPU_BUNDLE_TIMEOUT:-300}" "$@" 2>&1 | tee "$log"
    else
        "$@" 2>&1 | tee "$log"
    fi
    status=${PIPESTATUS[0]}
    case $status in
        124 | 137) echo "=== $name: stopped after ${GPU_BUNDLE_TIMEOUT:-300} s" ;;
    esac
    echo "=== $name: exit status $status ($((SECONDS - start)) s)"
}

# One program counts as one result, by its exit status.
count_one() {
    if [ "$status" -eq 0 ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        failures+=("$1")
    fi
}

for t in tests/*; do
    [ -x "$t" ] || continue
    run "$t" "./$t" ${args[@]+"${args[@]}"}
    p=0 f=0 results=0
    while IFS= read -r line; do
        if [[ $line =~ ^test\ result:.*\ ([0-9]+)\ passed\;\ ([0-9]+)\ failed ]]; then
            p=$((p + BASH_REMATCH[1]))
            f=$((f + BASH_REMATCH[2]))
            results=$((results + 1))
        fi
    done <"$log"
    if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then
        # It did not get to report a failed test: it did not start, crashed or timed out.
        echo "=== $t: failed without a test result"
        f=1
    elif [ "$results" -eq 0 ]; then
        echo "=== $t: printed no test result"
        f=1
    fi
    passed=$((passed + p))
    failed=$((failed + f))
    [ "$f" -eq 0 ] || failures+=("$t")
done

for e in examples/*; do
    [ -x "$e" ] || continue
    [ "$(basename "$e")" = bench ] && continue
    run "$e" "./$e"
    count_one "$e"
done

if [ "$sanitize" = 1 ]; then
    sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
    if [ -z "$sanitizer" ]; then
        echo "=== compute-sanitizer not found"
        failed=$((failed + 1))
        failures+=(compute-sanitizer)
    else
        # The driver API errors an example provokes on purpose: invalid PTX shown with its
        # JIT log (jit_error_log, link and their raw twins), a device ordinal past the last
        # (raw_device_query).
        # `link` loads with the default options: a plain cuModuleLoadData, retried once with
        # log buffers (cuModuleLoadDataEx) when it fails, so that the error carries the JIT log.
        declare -A provoked=([jit_error_log]=1 [raw_jit_error_log]=1 [link]=2 [raw_link]=1
            [raw_device_query]=1)
        for e in examples/*; do
            [ -x "$e" ] || continue
            name=$(basename "$e")
            [ "$name" = bench ] && continue
            # compute-sanitizer sometimes garbles the reports of errors raised on several
            # threads at once (async_service's first checked launches): the error and the call
            # are named by file paths ("Program hit /path/to/program (error 1) due to
            # \"/lib/.../libc.so.6\" on CUDA API call to /.../libcuda.so.1"), so they cannot
            # be told apart. Such a run is run once more, and said so; the second run counts.
            for attempt in 1 2; do
                run "memcheck $e" "$sanitizer" --tool memcheck --leak-check full \
                    --target-processes all "./$e"
                garbled=$(grep -c '^========= Program hit /' "$log")
                [ "$garbled" -eq 0 ] && break
                echo "=== memcheck $e: $garbled error report(s) garbled by the sanitizer (named by file paths); run again"
            done
            errors=$(sed -n 's/^========= ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "$log" | awk '{s += $1} END {print s + 0}')
            api=$(grep -c '^========= Program hit CUDA_ERROR' "$log")
            # Runtime API errors (cudaError*): the crates call the driver API only, so these
            # come from a library the program loads that uses the CUDA runtime, NCCL, which
            # raises and handles them itself (probing its kernels' images at initialisation:
            # cudaErrorNoKernelImageForDevice from cudaFuncGetAttributes). Counted apart and
            # printed; they fail nothing. Memory errors and leaks still do.
            lib_api=$(grep -c '^========= Program hit cudaError' "$log")
            # The end of a kernel's parameter list: a checked launch asks the driver for
            # parameters by index until CUDA_ERROR_INVALID_VALUE, once per kernel handle
            # (cuda_driver::ParamSource::Driver, the default; threads racing to a kernel's first
            # launch may each read it). Counted apart and printed.
            probes=$(grep -cE '^========= Program hit CUDA_ERROR_INVALID_VALUE .*on CUDA API call to cu(Func|Kernel)GetParamInfo' "$log")
            api=$((api - probes))
            want=${provoked[$name]:-0}
            leaks=$(grep -c '^========= Leaked [0-9]' "$log")
            if [ "$status" -eq 0 ] && [ "$errors" -eq $((api + probes + lib_api)) ] && [ "$api" -eq "$want" ] \
                && [ "$leaks" -eq 0 ] && grep -q '^========= ERROR SUMMARY' "$log"; then
                echo "=== memcheck $e: clean ($api driver API error(s), all provoked on purpose; $probes parameter-list end(s) of checked launches; $lib_api runtime API error(s) raised and handled inside a loaded library)"
            else
                echo "=== memcheck $e: $errors error(s), $api driver API error(s) ($want expected), $probes parameter-list end(s), $lib_api runtime API error(s) inside a loaded library, $leaks leak(s), exit status $status"
                status=1
            fi
            count_one "memcheck $e"
        done
    fi
fi

if [ "$bench" = 1 ]; then
    if [ -x examples/bench ]; then
        bench_args=()
        [ -n "${OUT:-}" ] && bench_args=(--json "$OUT/bench.json")
        # About 2 to 3 minutes on an H100; GPU_BUNDLE_BENCH_TIMEOUT (default 480 s) bounds it.
        GPU_BUNDLE_TIMEOUT=${GPU_BUNDLE_BENCH_TIMEOUT:-480} \
            run examples/bench ./examples/bench ${bench_args[@]+"${bench_args[@]}"}
        count_one examples/bench
    else
        echo "=== examples/bench is not in the bundle"
        failed=$((failed + 1))
        failures+=(examples/bench)
    fi
fi

echo
[ "${#failures[@]}" -eq 0 ] || echo "failed: ${failures[*]}"
echo "gpu-bundle: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ $((passed + failed)) -gt 0 ]
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_sh_names_the_bundled_device_runtime_before_running_anything() {
        let export = RUN_SH
            .find("export CUDA_DRIVER_CUDADEVRT=\"$PWD/lib/libcudadevrt.a\"")
            .expect("run.sh exports CUDA_DRIVER_CUDADEVRT");
        let cd = RUN_SH
            .find("cd \"$(dirname")
            .expect("run.sh changes to its folder");
        let first_run = RUN_SH
            .find("\nfor t in tests/*")
            .expect("run.sh runs the tests");
        assert!(cd < export && export < first_run);
    }

    #[test]
    fn run_sh_keeps_nvlink_multicast_off_before_running_anything() {
        let export = RUN_SH
            .find("\nexport NCCL_NVLS_ENABLE=0\n")
            .expect("run.sh exports NCCL_NVLS_ENABLE=0");
        let first_run = RUN_SH
            .find("\nfor t in tests/*")
            .expect("run.sh runs the tests");
        assert!(export < first_run);
    }
}
