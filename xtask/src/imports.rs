//! `cargo xtask check-imports [--release] [--list]`: proves that programs built on
//! `cuda-driver` load on every driver from CUDA 12.0 on.
//!
//! Builds the examples of `cuda-driver-examples` that use only `cuda-driver` (not `raw_*`, not
//! `bench*`) and the test binaries of `cuda-driver`, once as they are and once with the
//! `per-thread-default-stream` feature, lists each binary's undefined dynamic `cu*` symbols
//! (`nm -D --undefined-only`) and maps each to the CUDA version that introduced it, from the
//! `PFN_*` typedefs of cudaTypedefs.h (and cudaProfilerTypedefs.h). Fails when a symbol is newer than CUDA 12.0 (such a
//! function must go through `entry_point::newer`) or cannot be mapped.
//!
//! The mapping: a symbol `cuX`, `cuX_v2`, `cuX_ptsz`, `cuX_v2_ptds` has the base `cuX`, the
//! ABI number 1, 2, 1, 2 and the legacy or per-thread flavour. cudaTypedefs.h has one
//! `PFN_cuX_v<version>` per ABI of each flavour (`_ptds`/`_ptsz` for the per-thread ones).
//! The ABIs and the typedef versions of a flavour are aligned from the newest down: the
//! newest symbol cuda.h knows (`cuCtxCreate_v4`) has the highest version (12050), the one
//! before (`_v3`) the next (11040), and so on.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::util;

/// The oldest driver `cuda-driver` supports, as a CUDA version.
const OLDEST_DRIVER: u32 = 12000;

/// The per-thread feature, in `cuda-driver` and (forwarded) in the examples.
const FEATURE: &str = "per-thread-default-stream";

pub fn run(args: &[String]) -> Result<(), String> {
    let mut release = false;
    let mut list = false;
    for a in args {
        match a.as_str() {
            "--release" => release = true,
            "--list" => list = true,
            other => {
                return Err(format!(
                    "unknown option `{other}` (expected --release or --list)"
                ))
            }
        }
    }
    let inc = util::cuda_include_dir()?;
    let map = VersionMap::from_headers(
        &util::read_headers(&inc, util::TYPEDEF_HEADERS)?,
        &util::read_headers(&inc, util::API_HEADERS)?,
    )?;

    let mut rows = Vec::new();
    let mut problems = Vec::new();
    for per_thread in [false, true] {
        let config = if per_thread {
            FEATURE
        } else {
            "default features"
        };
        for bin in build(release, per_thread)? {
            let symbols = undefined_cu_symbols(&bin.path)?;
            let mut newest: Option<(u32, String)> = None;
            for s in &symbols {
                match map.version_of(s) {
                    Ok(v) => {
                        if list {
                            println!(
                                "{:<28} {:<10} {s} (CUDA {})",
                                bin.name,
                                short(config),
                                show(v)
                            );
                        }
                        if v > OLDEST_DRIVER {
                            problems.push(format!(
                                "{} ({config}): `{s}` is CUDA {} ({v}), newer than the oldest \
                                 supported driver (CUDA {}); call it through \
                                 cuda_driver::entry_point::newer",
                                bin.name,
                                show(v),
                                show(OLDEST_DRIVER)
                            ));
                        }
                        if newest.as_ref().is_none_or(|(nv, _)| v > *nv) {
                            newest = Some((v, s.clone()));
                        }
                    }
                    Err(e) => problems.push(format!("{} ({config}): {e}", bin.name)),
                }
            }
            rows.push((bin.name, config, symbols.len(), newest));
        }
    }

    println!();
    println!(
        "{:<28} {:<10} {:>11}  newest symbol",
        "binary", "build", "cu* imports"
    );
    for (name, config, count, newest) in &rows {
        let newest = match newest {
            Some((v, s)) => format!("{s} (CUDA {}, {v})", show(*v)),
            None => "-".into(),
        };
        println!("{name:<28} {:<10} {count:>11}  {newest}", short(config));
    }
    println!();
    if problems.is_empty() {
        println!(
            "check-imports: every cu* symbol of {} binaries is CUDA {} or older",
            rows.len(),
            show(OLDEST_DRIVER)
        );
        Ok(())
    } else {
        Err(format!(
            "{} problem(s):\n  {}",
            problems.len(),
            problems.join("\n  ")
        ))
    }
}

fn short(config: &str) -> &str {
    if config == FEATURE {
        "per-thread"
    } else {
        "default"
    }
}

/// 12050 -> "12.5".
fn show(v: u32) -> String {
    format!("{}.{}", v / 1000, v % 1000 / 10)
}

struct Binary {
    /// "example proc_address", "cuda-driver unit tests", "cuda-driver tests/gpu".
    name: String,
    path: PathBuf,
}

/// Builds the binaries to check and returns their paths.
fn build(release: bool, per_thread: bool) -> Result<Vec<Binary>, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut out = Vec::new();
    let mut examples = Command::new(&cargo);
    examples.args(["build", "-p", "cuda-driver-examples", "--examples"]);
    let mut tests = Command::new(&cargo);
    tests.args(["test", "-p", "cuda-driver", "--no-run"]);
    if per_thread {
        examples.args(["--features", &format!("cuda-driver/{FEATURE}")]);
        tests.args(["--features", FEATURE]);
    }
    for cmd in [&mut examples, &mut tests] {
        cmd.arg("--message-format=json").current_dir(util::root());
        if release {
            cmd.arg("--release");
        }
        eprintln!("xtask check-imports: {}", show_command(cmd));
        for a in artifacts(cmd)? {
            let name = match a.kind.as_str() {
                "example" if a.name.starts_with("raw_") || a.name.starts_with("bench") => continue,
                "example" => format!("example {}", a.name),
                "lib" => format!("{} unit tests", a.name.replace('_', "-")),
                "test" => format!("cuda-driver tests/{}", a.name),
                _ => continue,
            };
            out.push(Binary {
                name,
                path: a.executable,
            });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    if !out.iter().any(|b| b.name.starts_with("example ")) {
        return Err("cargo built no cuda-driver example to check".into());
    }
    Ok(out)
}

fn show_command(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

struct Artifact {
    kind: String,
    name: String,
    executable: PathBuf,
}

/// Runs a cargo command with `--message-format=json` and returns the executables it built.
fn artifacts(cmd: &mut Command) -> Result<Vec<Artifact>, String> {
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", show_command(cmd)))?;
    if !out.status.success() {
        return Err(format!("{} failed ({})", show_command(cmd), out.status));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    Ok(parse_artifacts(&stdout))
}

/// The executables of cargo's `compiler-artifact` messages (one JSON object per line).
fn parse_artifacts(json_lines: &str) -> Vec<Artifact> {
    let target =
        regex::Regex::new(r#""target":\{"kind":\["([^"]*)"[^\]]*\],.*?"name":"([^"]*)""#).unwrap();
    let exe = regex::Regex::new(r#""executable":"((?:[^"\\]|\\.)*)""#).unwrap();
    let mut out = Vec::new();
    for line in json_lines.lines() {
        if !line.contains(r#""reason":"compiler-artifact""#) {
            continue;
        }
        let (Some(t), Some(e)) = (target.captures(line), exe.captures(line)) else {
            continue;
        };
        out.push(Artifact {
            kind: t[1].to_string(),
            name: t[2].to_string(),
            executable: PathBuf::from(e[1].replace(r"\\", r"\").replace(r#"\""#, "\"")),
        });
    }
    out
}

/// The undefined dynamic symbols of `path` that are CUDA driver functions, sorted.
fn undefined_cu_symbols(path: &Path) -> Result<Vec<String>, String> {
    let nm = std::env::var("NM").unwrap_or_else(|_| "nm".into());
    let out = util::run_capture(Command::new(&nm).args(["-D", "--undefined-only"]).arg(path))?;
    Ok(parse_nm(&out))
}

/// `nm -D --undefined-only` lines (`                 U cuInit`, `U memcpy@GLIBC_2.14`) to the
/// sorted, deduplicated `cu*` names.
fn parse_nm(out: &str) -> Vec<String> {
    let mut symbols: Vec<String> = out
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .map(|s| s.split('@').next().unwrap_or(s))
        .filter(|s| {
            s.strip_prefix("cu")
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_uppercase()))
        })
        .map(str::to_string)
        .collect();
    symbols.sort();
    symbols.dedup();
    symbols
}

/// A driver symbol split into its parts: `cuMemcpyHtoD_v2_ptds` is
/// `("cuMemcpyHtoD", 2, true)`; a name without `_v` is ABI 1.
fn split_symbol(symbol: &str) -> Option<(String, u32, bool)> {
    let re = regex::Regex::new(r"^(cu[A-Za-z0-9]+)(?:_v(\d+))?(_ptds|_ptsz)?$").unwrap();
    let c = re.captures(symbol)?;
    let abi = match c.get(2) {
        Some(n) => n.as_str().parse().ok()?,
        None => 1,
    };
    Some((c[1].to_string(), abi, c.get(3).is_some()))
}

/// What cudaTypedefs.h and cuda.h say about the versions of every driver symbol.
#[derive(Debug)]
pub struct VersionMap {
    /// `(base, per-thread)` -> the versions of its `PFN_*` typedefs, ascending.
    pfns: BTreeMap<(String, bool), Vec<u32>>,
    /// `(base, per-thread)` -> the newest ABI number of the symbols cuda.h names.
    newest_abi: BTreeMap<(String, bool), u32>,
}

impl VersionMap {
    pub fn from_headers(typedefs_h: &str, cuda_h: &str) -> Result<VersionMap, String> {
        let pfn = regex::Regex::new(r"\bPFN_(cu[A-Za-z0-9]+)_v(\d+)(_ptds|_ptsz)?\b").unwrap();
        let mut pfns: BTreeMap<(String, bool), Vec<u32>> = BTreeMap::new();
        for c in pfn.captures_iter(typedefs_h) {
            let v: u32 = c[2]
                .parse()
                .map_err(|e| format!("PFN_{}_v{}: {e}", &c[1], &c[2]))?;
            pfns.entry((c[1].to_string(), c.get(3).is_some()))
                .or_default()
                .push(v);
        }
        if pfns.is_empty() {
            return Err("cudaTypedefs.h has no PFN_* typedefs".into());
        }
        for v in pfns.values_mut() {
            v.sort_unstable();
            v.dedup();
        }

        // The symbols cuda.h declares (`CUresult CUDAAPI cuCtxCreate_v3(`) and maps names to
        // (`#define cuCtxCreate cuCtxCreate_v4`, `#define cuMemcpyHtoD
        // __CUDA_API_PTDS(cuMemcpyHtoD_v2)`, which is `cuMemcpyHtoD_v2_ptds` per thread).
        let decl = regex::Regex::new(r"\bCUDAAPI\s+(cu[A-Za-z0-9_]+)\s*\(").unwrap();
        let define =
            regex::Regex::new(r"(?m)^[ \t]*#[ \t]*define[ \t]+cu[A-Za-z0-9_]+[ \t]+(.*)$").unwrap();
        let ptds = regex::Regex::new(r"__CUDA_API_(PTDS|PTSZ)\(\s*(cu[A-Za-z0-9_]+)\s*\)").unwrap();
        let plain = regex::Regex::new(r"^(cu[A-Za-z0-9_]+)\s*$").unwrap();
        let mut names: Vec<String> = decl
            .captures_iter(cuda_h)
            .map(|c| c[1].to_string())
            .collect();
        for d in define.captures_iter(cuda_h) {
            let target = d[1].trim();
            if let Some(c) = ptds.captures(target) {
                names.push(c[2].to_string());
                names.push(format!("{}_{}", &c[2], c[1].to_ascii_lowercase()));
            } else if let Some(c) = plain.captures(target) {
                names.push(c[1].to_string());
            }
        }
        let mut newest_abi: BTreeMap<(String, bool), u32> = BTreeMap::new();
        for n in &names {
            if let Some((base, abi, pt)) = split_symbol(n) {
                let e = newest_abi.entry((base, pt)).or_insert(abi);
                *e = (*e).max(abi);
            }
        }
        if newest_abi.is_empty() {
            return Err("cuda.h declares no cu* functions".into());
        }
        Ok(VersionMap { pfns, newest_abi })
    }

    /// The CUDA version that introduced `symbol` (`cuCtxCreate_v4` -> 12050).
    pub fn version_of(&self, symbol: &str) -> Result<u32, String> {
        let (base, abi, pt) = split_symbol(symbol)
            .ok_or_else(|| format!("`{symbol}` is not a driver symbol name"))?;
        let flavour = if pt { "per-thread " } else { "" };
        let key = (base, pt);
        let versions = self.pfns.get(&key).ok_or_else(|| {
            format!(
                "`{symbol}`: cudaTypedefs.h has no {flavour}PFN_{}_v* typedef to date it",
                key.0
            )
        })?;
        // A base cuda.h does not name at all: take the symbol for its newest ABI.
        let newest = self.newest_abi.get(&key).copied().unwrap_or(abi);
        if abi > newest {
            return Err(format!(
                "`{symbol}`: cannot date it: cuda.h's newest {flavour}ABI of `{}` is _v{newest}",
                key.0
            ));
        }
        // From the newest down: ABI `newest` is the last version, `newest - 1` the one before.
        let back = (newest - abi) as usize;
        if back >= versions.len() {
            return Err(format!(
                "`{symbol}`: cannot date it: cuda.h's newest {flavour}ABI of `{}` is _v{newest}, \
                 but cudaTypedefs.h has only {} {flavour}version(s) of it ({versions:?})",
                key.0,
                versions.len()
            ));
        }
        Ok(versions[versions.len() - 1 - back])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines of cudaTypedefs.h and cuda.h 13.0 that the examples of the brief need.
    const TYPEDEFS: &str = r#"
typedef CUresult (CUDAAPI *PFN_cuCtxCreate_v3020)(CUcontext *pctx, unsigned int flags, CUdevice_v1 dev);
typedef CUresult (CUDAAPI *PFN_cuCtxCreate_v11040)(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams, unsigned int flags, CUdevice_v1 dev);
typedef CUresult (CUDAAPI *PFN_cuCtxCreate_v12050)(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags, CUdevice dev);
typedef CUresult (CUDAAPI *PFN_cuMemAlloc_v3020)(CUdeviceptr_v2 *dptr, size_t bytesize);
typedef CUresult (CUDAAPI *PFN_cuMemcpyHtoD_v3020)(CUdeviceptr_v2 dstDevice, const void *srcHost, size_t ByteCount);
typedef CUresult (CUDAAPI *PFN_cuMemcpyHtoD_v7000_ptds)(CUdeviceptr_v2 dstDevice, const void *srcHost, size_t ByteCount);
typedef CUresult (CUDAAPI *PFN_cuEventElapsedTime_v2000)(float *pMilliseconds, CUevent hStart, CUevent hEnd);
typedef CUresult (CUDAAPI *PFN_cuEventElapsedTime_v12080)(float *pMilliseconds, CUevent hStart, CUevent hEnd);
typedef CUresult (CUDAAPI *PFN_cuLaunchKernel_v7000_ptsz)(CUfunction f, unsigned int gridDimX);
typedef CUresult (CUDAAPI *PFN_cuLaunchKernel_v4000)(CUfunction f, unsigned int gridDimX);
typedef CUresult (CUDAAPI *PFN_cuStreamBeginCapture_v10010_ptsz)(CUstream hStream, CUstreamCaptureMode mode);
typedef CUresult (CUDAAPI *PFN_cuStreamBeginCapture_v10010)(CUstream hStream, CUstreamCaptureMode mode);
typedef CUresult (CUDAAPI *PFN_cuInit_v2000)(unsigned int Flags);
#if defined(__CUDA_API_VERSION_INTERNAL)
    typedef CUresult (CUDAAPI *PFN_cuCtxCreate_v2000)(CUcontext *pctx, unsigned int flags, CUdevice_v1 dev);
    typedef CUresult (CUDAAPI *PFN_cuMemAlloc_v2000)(CUdeviceptr_v1 *dptr, unsigned int bytesize);
    typedef CUresult (CUDAAPI *PFN_cuStreamBeginCapture_v10000)(CUstream hStream);
    typedef CUresult (CUDAAPI *PFN_cuStreamBeginCapture_v10000_ptsz)(CUstream hStream);
#endif
"#;

    const CUDA_H: &str = r#"
#define cuCtxCreate                         cuCtxCreate_v4
#define cuMemAlloc                          cuMemAlloc_v2
#define cuMemcpyHtoD                        __CUDA_API_PTDS(cuMemcpyHtoD_v2)
#define cuStreamBeginCapture                __CUDA_API_PTSZ(cuStreamBeginCapture_v2)
#define cuEventElapsedTime                  cuEventElapsedTime_v2
    #define cuLaunchKernel                      __CUDA_API_PTSZ(cuLaunchKernel)
CUresult CUDAAPI cuInit(unsigned int Flags);
CUresult CUDAAPI cuCtxCreate(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags, CUdevice dev);
CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd);
#if defined(__CUDA_API_VERSION_INTERNAL)
    CUresult CUDAAPI cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev);
    CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
    CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams, unsigned int flags, CUdevice dev);
    CUresult CUDAAPI cuStreamBeginCapture(CUstream hStream);
    CUresult CUDAAPI cuStreamBeginCapture_ptsz(CUstream hStream);
#endif
"#;

    fn versions(map: &VersionMap) -> Vec<(&'static str, u32)> {
        [
            ("cuCtxCreate_v4", 12050),
            ("cuCtxCreate_v3", 11040),
            ("cuCtxCreate_v2", 3020),
            ("cuMemAlloc_v2", 3020),
            ("cuEventElapsedTime_v2", 12080),
            ("cuEventElapsedTime", 2000),
            ("cuInit", 2000),
            ("cuLaunchKernel", 4000),
            ("cuLaunchKernel_ptsz", 7000),
            ("cuMemcpyHtoD_v2", 3020),
            ("cuMemcpyHtoD_v2_ptds", 7000),
            ("cuStreamBeginCapture_v2", 10010),
            ("cuStreamBeginCapture", 10000),
            ("cuStreamBeginCapture_v2_ptsz", 10010),
            ("cuStreamBeginCapture_ptsz", 10000),
        ]
        .into_iter()
        .map(|(s, want)| {
            assert_eq!(map.version_of(s), Ok(want), "{s}");
            (s, want)
        })
        .collect()
    }

    #[test]
    fn maps_symbols_newest_down() {
        let map = VersionMap::from_headers(TYPEDEFS, CUDA_H).unwrap();
        versions(&map);
        // The first cuCtxCreate is in the versioning section of both headers.
        assert_eq!(map.version_of("cuCtxCreate"), Ok(2000));
    }

    #[test]
    fn refuses_what_it_cannot_date() {
        let map = VersionMap::from_headers(TYPEDEFS, CUDA_H).unwrap();
        // No typedef at all.
        let e = map.version_of("cuNoSuchFunction").unwrap_err();
        assert!(e.contains("no PFN_cuNoSuchFunction_v*"), "{e}");
        // A per-thread flavour the typedefs do not have.
        let e = map.version_of("cuInit_ptsz").unwrap_err();
        assert!(e.contains("per-thread"), "{e}");
        // An ABI newer than cuda.h knows.
        let e = map.version_of("cuMemAlloc_v5").unwrap_err();
        assert!(e.contains("newest ABI of `cuMemAlloc` is _v2"), "{e}");
        // More ABIs than typedefs: cuda.h names cuFoo_v3, cudaTypedefs.h dates only two.
        let map = VersionMap::from_headers(
            "typedef int (*PFN_cuFoo_v11000)(void);\ntypedef int (*PFN_cuFoo_v12000)(void);",
            "#define cuFoo cuFoo_v3\nCUresult CUDAAPI cuFoo(void);",
        )
        .unwrap();
        assert_eq!(map.version_of("cuFoo_v3"), Ok(12000));
        assert_eq!(map.version_of("cuFoo_v2"), Ok(11000));
        let e = map.version_of("cuFoo").unwrap_err();
        assert!(e.contains("cannot date"), "{e}");
        assert!(map.version_of("memcpy").is_err());
    }

    #[test]
    fn maps_the_real_headers() {
        let Ok(inc) = util::cuda_include_dir() else {
            eprintln!("SKIP maps_the_real_headers: no CUDA include directory");
            return;
        };
        let map = VersionMap::from_headers(
            &util::read_headers(&inc, util::TYPEDEF_HEADERS).unwrap(),
            &util::read_headers(&inc, util::API_HEADERS).unwrap(),
        )
        .unwrap();
        versions(&map);
        // Every function cuda-driver-sys declares, and every symbol it links, dates.
        let bindings =
            std::fs::read_to_string(util::root().join("cuda-driver-sys/src/bindings.rs")).unwrap();
        let link = regex::Regex::new(r#"(?:link_name = "|pub fn )(cu[A-Za-z0-9_]+)"#).unwrap();
        let mut n = 0;
        for c in link.captures_iter(&bindings) {
            let s = &c[1];
            let v = map
                .version_of(s)
                .unwrap_or_else(|e| panic!("cannot date {s}: {e}"));
            assert!((2000..=13000).contains(&v), "{s}: {v}");
            n += 1;
        }
        assert!(n > 500, "only {n} names");
        assert_eq!(map.version_of("cuGetProcAddress_v2"), Ok(12000));
        assert_eq!(map.version_of("cuKernelGetParamInfo"), Ok(12040));
        assert_eq!(map.version_of("cuMemAdvise_v2"), Ok(12020));
        assert_eq!(map.version_of("cuProfilerStart"), Ok(4000));
    }

    #[test]
    fn parses_nm_output() {
        let out = "                 U __libc_start_main@GLIBC_2.34\n\
                   \x20                U cuCtxCreate_v2\n\
                   \x20                U cuInit\n\
                   \x20                U cuInit\n\
                   \x20                U cudaMalloc\n\
                   \x20                U memcpy@GLIBC_2.14\n\
                   \x20                U cuLaunchKernel_ptsz\n";
        assert_eq!(
            parse_nm(out),
            ["cuCtxCreate_v2", "cuInit", "cuLaunchKernel_ptsz"]
        );
    }

    #[test]
    fn parses_cargo_artifacts() {
        let json = r#"{"reason":"compiler-artifact","package_id":"path+file:///w/cuda-driver-examples#0.1.0","target":{"kind":["example"],"crate_types":["bin"],"name":"proc_address","src_path":"/w/x.rs","edition":"2021","doc":false,"doctest":false,"test":false},"profile":{"test":false},"features":[],"filenames":["/t/debug/examples/proc_address"],"executable":"/t/debug/examples/proc_address","fresh":true}
{"reason":"compiler-artifact","package_id":"path+file:///w/cuda-driver#0.1.0","target":{"kind":["lib"],"crate_types":["lib"],"name":"cuda_driver","src_path":"/w/lib.rs"},"executable":null,"fresh":true}
{"reason":"build-finished","success":true}"#;
        let a = parse_artifacts(json);
        assert_eq!(a.len(), 1);
        assert_eq!(
            (a[0].kind.as_str(), a[0].name.as_str()),
            ("example", "proc_address")
        );
        assert_eq!(
            a[0].executable,
            PathBuf::from("/t/debug/examples/proc_address")
        );
    }
}
