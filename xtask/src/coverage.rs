//! `cargo xtask coverage [--min PERCENT] [--missing]`: how many functions of cuda.h 13.0 (and
//! of cudaProfiler.h, the Profiler Control group) a safe wrapper in `cuda-driver/src` calls, per
//! group of the CUDA Driver API reference.
//!
//! The functions and their groups come from the `#[wraps]` table that `cargo xtask bindgen`
//! generates from the headers' doxygen groups (`cuda-driver-macros/src/names.rs`). A function is
//! one name of the reference: the per-thread flavours (`_ptsz`, `_ptds`), the symbols a name
//! stands for (`cuMemAlloc` is `cuMemAlloc_v2`) and the older ABIs cuda.h still declares
//! (`cuCtxCreate_v3` beside `cuCtxCreate`, which is `cuCtxCreate_v4`) are not counted apart;
//! a `_vN` name that is a function of its own (`cuCtxGetDevice_v2` beside `cuCtxGetDevice`) is.
//!
//! Out of scope and not counted: multicast objects (never called on shared machines), graphics
//! interop (no display), the deprecated groups and the functions cuda.h marks
//! `__CUDA_DEPRECATED`, and `cuGetExportTable` (undocumented).
//!
//! A function counts as called when `sys::NAME` appears in a source file of `cuda-driver/src`
//! (outside comments) for its name or one of its symbols, or when a wrapper calls the run-time
//! resolved accessor `newer::ACCESSOR` whose symbol is the name.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::util;

/// Functions that cuda.h 13.0 marks `__CUDA_DEPRECATED` (most sit in the deprecated groups
/// anyway; `cuLaunchCooperativeKernelMultiDevice` and `cuFuncSetSharedMemConfig` do not).
const DEPRECATED: &[&str] = &[
    "cuCtxAttach",
    "cuCtxDetach",
    "cuCtxGetSharedMemConfig",
    "cuCtxSetSharedMemConfig",
    "cuDeviceComputeCapability",
    "cuDeviceGetProperties",
    "cuFuncSetBlockShape",
    "cuFuncSetSharedMemConfig",
    "cuFuncSetSharedSize",
    "cuLaunch",
    "cuLaunchCooperativeKernelMultiDevice",
    "cuLaunchGrid",
    "cuLaunchGridAsync",
    "cuModuleGetSurfRef",
    "cuModuleGetTexRef",
    "cuParamSetSize",
    "cuParamSetTexRef",
    "cuParamSetf",
    "cuParamSeti",
    "cuParamSetv",
];

/// Older ABIs that cuda.h 13.0 declares only for the driver's own build
/// (`__CUDA_API_VERSION_INTERNAL`) under a name of their own, with the function they are an
/// old form of: counted as called when that function is.
const OLD_ABI: &[(&str, &str)] = &[
    // `cuGraphInstantiate_v2(exec, graph, errorNode, log, size)`, the CUDA 11 ABI of
    // `cuGraphInstantiate`, which cuda.h 13.0 maps to `cuGraphInstantiateWithFlags`.
    ("cuGraphInstantiate_v2", "cuGraphInstantiateWithFlags"),
];

/// Groups left out of the count (see the module docs).
fn group_excluded(group: &str) -> bool {
    group.is_empty()
        || group.ends_with("_DEPRECATED")
        || group == "CUDA_MULTICAST"
        || group == "CUDA_GRAPHICS"
        || group == "CUDA_TYPES"
}

/// One row of the `#[wraps]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub group: String,
    pub symbols: Vec<String>,
}

/// Parses the `NAMES` table of `cuda-driver-macros/src/names.rs`.
pub fn parse_names(src: &str) -> Vec<Entry> {
    let re = regex::Regex::new(r#"\("(\w+)", "(\w*)", &\[([^\]]*)\]\)"#).expect("valid regex");
    let sym = regex::Regex::new(r#""(\w+)""#).expect("valid regex");
    re.captures_iter(src)
        .filter(|c| c[1].starts_with("cu"))
        .map(|c| Entry {
            name: c[1].to_string(),
            group: c[2].to_string(),
            symbols: sym.captures_iter(&c[3]).map(|s| s[1].to_string()).collect(),
        })
        .collect()
}

/// The functions of the reference that count: one per documented name (see the module docs).
pub fn counted_functions(entries: &[Entry]) -> Vec<&Entry> {
    let by_name: BTreeMap<&str, &Entry> = entries.iter().map(|e| (e.name.as_str(), e)).collect();
    entries
        .iter()
        .filter(|e| !group_excluded(&e.group) && !DEPRECATED.contains(&e.name.as_str()))
        .filter(|e| !e.name.ends_with("_ptsz") && !e.name.ends_with("_ptds"))
        .filter(|e| {
            // `base_vN`: a symbol of `base`, or an older ABI of it, is not a function of its own.
            let Some((base, v)) = e.name.rsplit_once("_v") else {
                return true;
            };
            let Ok(n) = v.parse::<u32>() else {
                return true;
            };
            let Some(b) = by_name.get(base) else {
                return true;
            };
            let newest = b
                .symbols
                .iter()
                .filter_map(|s| {
                    s.strip_prefix(base)?
                        .strip_prefix("_v")?
                        .parse::<u32>()
                        .ok()
                })
                .max();
            match newest {
                // `base` stands for `base_vM`: `base_vN` with N <= M is it or an older ABI.
                Some(m) => n > m,
                // `base` is its own symbol: `base_vN` is a newer function of its own.
                None => true,
            }
        })
        .collect()
}

/// Removes `//` comments (line and doc comments) from Rust source, keeping string literals
/// intact enough for the identifier scan.
fn strip_comments(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    for line in src.lines() {
        let code = match line.find("//") {
            // A `//` inside a string literal (`"http://"`) is rare in this crate; the scan
            // only looks for `sys::cu` and `newer::cu`, which never follow one.
            Some(i) => &line[..i],
            None => line,
        };
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// The names the sources call: `sys::NAME` and the symbols of the `newer::ACCESSOR`s they use.
pub fn called_names(sources: &[(String, String)], newer_list: &str) -> BTreeSet<String> {
    let sys_re = regex::Regex::new(r"\bsys::(cu\w+)").expect("valid regex");
    let newer_re = regex::Regex::new(r"\bnewer::(cu\w+)").expect("valid regex");
    let decl = regex::Regex::new(r#"fn (cu\w+) = PFN_\w+\(c"(cu\w+)""#).expect("valid regex");
    let accessors: BTreeMap<String, String> = decl
        .captures_iter(newer_list)
        .map(|c| (c[1].to_string(), c[2].to_string()))
        .collect();
    let strings = regex::Regex::new(r#""[^"\n]*""#).expect("valid regex");
    let bare = regex::Regex::new(r"\bcu[A-Z]\w*").expect("valid regex");
    // `sys::$f` in a macro body; not `cuda_driver_sys::$pfn` (the entry point macros, whose
    // arguments are resolved accessors, not calls).
    let macro_call = regex::Regex::new(r"\bsys::\$").expect("valid regex");
    let mut called = BTreeSet::new();
    for (_, src) in sources {
        let code = strip_comments(src);
        if macro_call.is_match(&code) {
            // A macro calls `sys::$f` with the names passed to it: every bare `cuXxx`
            // identifier of the file (outside string literals) is such an argument.
            let code = strings.replace_all(&code, "\"\"");
            for m in bare.find_iter(&code) {
                called.insert(m.as_str().to_string());
            }
        }
        for c in sys_re.captures_iter(&code) {
            called.insert(c[1].to_string());
        }
        for c in newer_re.captures_iter(&code) {
            if let Some(sym) = accessors.get(&c[1]) {
                called.insert(sym.clone());
                called.insert(c[1].to_string());
            }
        }
    }
    called
}

/// Whether `e` is called: its name, one of its symbols, or its per-thread flavour.
fn is_called(e: &Entry, called: &BTreeSet<String>) -> bool {
    if let Some((_, current)) = OLD_ABI.iter().find(|(old, _)| *old == e.name) {
        return called.contains(*current);
    }
    called.contains(&e.name)
        || e.symbols.iter().any(|s| called.contains(s))
        || called.contains(&format!("{}_ptsz", e.name))
        || called.contains(&format!("{}_ptds", e.name))
}

/// Per group: (called, total, missing names).
pub type Table = BTreeMap<String, (usize, usize, Vec<String>)>;

/// Counts the functions of each group that `called` covers.
pub fn table(entries: &[Entry], called: &BTreeSet<String>) -> Table {
    let mut t = Table::new();
    for e in counted_functions(entries) {
        let row = t.entry(e.group.clone()).or_default();
        row.1 += 1;
        if is_called(e, called) {
            row.0 += 1;
        } else {
            row.2.push(e.name.clone());
        }
    }
    t
}

fn rust_sources(dir: &Path, out: &mut Vec<(String, String)>) -> Result<(), String> {
    let rd = std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut paths: Vec<_> = rd.flatten().map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            rust_sources(&p, out)?;
        } else if p.extension().is_some_and(|x| x == "rs") {
            let name = p.display().to_string();
            // Generated marker and type files name functions without calling them.
            if name.ends_with("entry_point/pfn.rs") || name.ends_with("src/types.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&p)
                .map_err(|e| format!("cannot read {}: {e}", p.display()))?;
            out.push((name, text));
        }
    }
    Ok(())
}

pub fn run(args: &[String]) -> Result<(), String> {
    let mut min = None;
    let mut missing = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--missing" => missing = true,
            "--min" => {
                let v = it.next().ok_or("--min needs a percentage")?;
                min = Some(v.parse::<f64>().map_err(|e| format!("--min {v}: {e}"))?);
            }
            other => return Err(format!("unknown option `{other}`")),
        }
    }
    let root = util::root();
    let names_path = root.join("cuda-driver-macros/src/names.rs");
    let names = std::fs::read_to_string(&names_path)
        .map_err(|e| format!("cannot read {}: {e}", names_path.display()))?;
    let entries = parse_names(&names);
    let mut sources = Vec::new();
    rust_sources(&root.join("cuda-driver/src"), &mut sources)?;
    let newer_list = sources
        .iter()
        .find(|(p, _)| p.ends_with("src/entry_point.rs"))
        .map(|(_, s)| s.clone())
        .ok_or("cuda-driver/src/entry_point.rs not found")?;
    let called = called_names(&sources, &newer_list);
    let t = table(&entries, &called);

    println!(
        "{:<28} {:>6} {:>6} {:>7}",
        "group", "called", "total", "percent"
    );
    let (mut all_c, mut all_t) = (0, 0);
    let mut below = Vec::new();
    for (group, (c, n, miss)) in &t {
        let pct = 100.0 * *c as f64 / *n as f64;
        println!("{group:<28} {c:>6} {n:>6} {pct:>6.1}%");
        if missing && !miss.is_empty() {
            println!("    missing: {}", miss.join(", "));
        }
        if min.is_some_and(|m| pct < m) {
            below.push(group.clone());
        }
        all_c += c;
        all_t += n;
    }
    println!(
        "{:<28} {all_c:>6} {all_t:>6} {:>6.1}%",
        "all",
        100.0 * all_c as f64 / all_t as f64
    );
    if below.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "groups below {}%: {}",
            min.unwrap_or_default(),
            below.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: &str = r#"
    ("CUstream", "CUDA_TYPES", &[]),
    ("cuCtxCreate", "CUDA_CTX", &["cuCtxCreate_v4"]),
    ("cuCtxCreate_v3", "CUDA_CTX", &[]),
    ("cuCtxCreate_v4", "CUDA_CTX", &[]),
    ("cuCtxGetDevice", "CUDA_CTX", &[]),
    ("cuCtxGetDevice_v2", "CUDA_CTX", &[]),
    ("cuCtxAttach", "CUDA_CTX_DEPRECATED", &[]),
    ("cuLaunchCooperativeKernelMultiDevice", "CUDA_EXEC", &[]),
    ("cuLaunchKernel", "CUDA_EXEC", &["cuLaunchKernel_ptsz"]),
    ("cuLaunchKernel_ptsz", "CUDA_EXEC", &[]),
    ("cuMulticastCreate", "CUDA_MULTICAST", &[]),
    ("cuGetExportTable", "", &[]),
    ("cuMemAdvise", "CUDA_UNIFIED", &["cuMemAdvise_v2"]),
    ("cuMemAdvise_v2", "CUDA_UNIFIED", &[]),
"#;

    #[test]
    fn counts_one_function_per_documented_name() {
        let entries = parse_names(NAMES);
        assert_eq!(entries.len(), 13);
        let names: Vec<_> = counted_functions(&entries)
            .iter()
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(
            names,
            [
                "cuCtxCreate",
                "cuCtxGetDevice",
                "cuCtxGetDevice_v2",
                "cuLaunchKernel",
                "cuMemAdvise"
            ]
        );
    }

    #[test]
    fn the_profiler_group_counts_without_its_deprecated_half() {
        // cudaProfiler.h has two groups: `CUDA_PROFILER` (start, stop) and
        // `CUDA_PROFILER_DEPRECATED` (cuProfilerInitialize, CUDA_ERROR_NOT_SUPPORTED since 12.0).
        let entries = parse_names(
            r#"("cuProfilerInitialize", "CUDA_PROFILER_DEPRECATED", &[]),
               ("cuProfilerStart", "CUDA_PROFILER", &[]),
               ("cuProfilerStop", "CUDA_PROFILER", &[]),"#,
        );
        let src = "fn a() { unsafe { sys::cuProfilerStart() }; unsafe { sys::cuProfilerStop() }; }";
        let called = called_names(&[("p.rs".into(), src.into())], "");
        let t = table(&entries, &called);
        assert_eq!(t.len(), 1);
        assert_eq!(t["CUDA_PROFILER"], (2, 2, vec![]));
    }

    #[test]
    fn calls_through_sys_symbols_and_newer_accessors_count() {
        let entries = parse_names(NAMES);
        let newer =
            r#"pub(crate) fn cuMemAdvise_v2 = PFN_cuMemAdvise_v12020(c"cuMemAdvise", 12020);"#;
        let src = "fn a() { unsafe { sys::cuCtxGetDevice(&mut d) }; newer::cuMemAdvise_v2()?; }\n\
                   // sys::cuCtxCreate_v4 in a comment does not count\n\
                   fn b() { cuda_driver_sys::cuLaunchKernel(); }\n";
        let called = called_names(&[("a.rs".into(), src.into())], newer);
        let t = table(&entries, &called);
        assert_eq!(t["CUDA_CTX"].0, 1);
        assert_eq!(t["CUDA_CTX"].1, 3);
        assert_eq!(t["CUDA_CTX"].2, ["cuCtxCreate", "cuCtxGetDevice_v2"]);
        assert_eq!(t["CUDA_UNIFIED"], (1, 1, vec![]));
        // `cuda_driver_sys::` is not `sys::`, and nothing else calls cuLaunchKernel.
        assert_eq!(t["CUDA_EXEC"].0, 0);
        let src = "sys::cuLaunchKernel_ptsz(); sys::cuCtxCreate_v4();";
        let called = called_names(&[("b.rs".into(), src.into())], newer);
        let t = table(&entries, &called);
        assert_eq!(t["CUDA_EXEC"].0, 1);
        assert_eq!(t["CUDA_CTX"].0, 1);
        // Names handed to a macro that calls `sys::$f` count; names in its strings do not.
        let src = "macro_rules! m { ($f:ident) => { sys::$f() } }\nm!(cuLaunchKernel, \"cuCtxGetDevice_v2\");";
        let called = called_names(&[("c.rs".into(), src.into())], newer);
        assert!(called.contains("cuLaunchKernel"));
        assert!(!called.contains("cuCtxGetDevice_v2"));
        // The entry point macros (`cuda_driver_sys::$pfn`) declare, they do not call.
        let src = "macro_rules! l { ($p:ident) => { cuda_driver_sys::$p } }\nl!(cuLaunchKernel);";
        let called = called_names(&[("d.rs".into(), src.into())], newer);
        assert!(!called.contains("cuLaunchKernel"));
    }
}
