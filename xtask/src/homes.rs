//! `cargo xtask check-homes [--list] [--warn-only]`: every wrapper of a driver function stands
//! in the home of its group of the CUDA Driver API reference, so the layout of
//! `cuda-driver/src` follows the reference and cannot drift.
//!
//! Reads the `#[wraps]` table of `cuda-driver-macros/src/names.rs` (the group of every
//! function of cuda.h) and every `#[wraps(cuX, ..)]` in `cuda-driver/src` when xtask runs: the
//! first name of each must stand in a file that [`HOMES`] allows for its group. A home written
//! `x/` is the module `x` as a file or a folder (`x.rs` and everything under `x/`); one
//! written `x.rs` is that file. Prints every misplaced wrapper (file:line, name, group, the
//! expected home) and fails when there is one, or a wrapped function whose group has no home
//! in the table; `--warn-only` prints the same and succeeds. Names that are types (group
//! `CUDA_TYPES`, not in the functions' table) and a macro's parameter (`#[wraps($name)]`) are
//! skipped and counted. `--list` prints the table.

use std::collections::BTreeMap;
use std::path::Path;

use crate::coverage::parse_names;
use crate::scan::{code_of, ident_at, line_of, read, rust_files};
use crate::util;

/// Where a group's wrappers live: paths under `cuda-driver/src`.
pub struct Home {
    pub group: &'static str,
    /// Allowed homes (`x/`: `x.rs` or `x/**`; `x.rs`: that file).
    pub homes: &'static [&'static str],
    /// Parts of those homes that belong to other groups.
    pub except: &'static [&'static str],
}

const fn home(group: &'static str, homes: &'static [&'static str]) -> Home {
    Home {
        group,
        homes,
        except: &[],
    }
}

/// One home per group of the reference.
pub const HOMES: &[Home] = &[
    home("CUDA_INITIALIZE", &["init.rs"]),
    home("CUDA_VERSION", &["init.rs"]),
    home("CUDA_ERROR", &["error/mod.rs"]),
    home("CUDA_DEVICE", &["device/"]),
    home("CUDA_DEVICE_DEPRECATED", &["device/"]),
    home("CUDA_PRIMARY_CTX", &["context/"]),
    home("CUDA_CTX", &["context/"]),
    home("CUDA_CTX_DEPRECATED", &["context/"]),
    home("CUDA_MODULE", &["module/"]),
    home("CUDA_MODULE_DEPRECATED", &["module/"]),
    home("CUDA_LIBRARY", &["library/"]),
    Home {
        group: "CUDA_MEM",
        homes: &["memory/"],
        except: &["memory/vmm/", "memory/pool/", "memory/unified/"],
    },
    home("CUDA_VA", &["memory/vmm/"]),
    home("CUDA_MALLOC_ASYNC", &["memory/pool/"]),
    home("CUDA_UNIFIED", &["memory/unified/"]),
    home("CUDA_STREAM", &["stream/"]),
    // Every call of the group takes device memory (a view), and `memory/` stands above
    // `stream/` in the layers (copies take streams): the group is a module of its own.
    home("CUDA_MEMOP", &["stream_memop.rs"]),
    home("CUDA_EVENT", &["event/"]),
    home("CUDA_EXTRES_INTEROP", &["interop/"]),
    Home {
        group: "CUDA_EXEC",
        homes: &["launch/"],
        except: &["launch/occupancy.rs"],
    },
    Home {
        group: "CUDA_EXEC_DEPRECATED",
        homes: &["launch/"],
        except: &["launch/occupancy.rs"],
    },
    home("CUDA_OCCUPANCY", &["launch/occupancy.rs"]),
    home("CUDA_GRAPH", &["graph/"]),
    home("CUDA_TEXOBJECT", &["texture/"]),
    home("CUDA_SURFOBJECT", &["surface/"]),
    home("CUDA_TENSOR_MEMORY", &["tensor_map/"]),
    home("CUDA_PEER_ACCESS", &["peer/"]),
    home("CUDA_GREEN_CONTEXTS", &["green/"]),
    home("CUDA_COREDUMP", &["coredump/"]),
    home("CUDA_CHECKPOINT", &["checkpoint/"]),
    home("CUDA_LOGS", &["logs/"]),
    home("CUDA_PROFILER", &["profiler/"]),
    home("CUDA_DRIVER_ENTRY_POINT", &["entry_point/"]),
];

/// Wrappers that stand outside their group's home because their signature names a type of a
/// higher layer, which the home cannot name without an import cycle (`cargo xtask
/// check-layers`): `(function, file, why)`. A wrapper lives with the highest type it takes.
pub const BY_LAYER: &[(&str, &str, &str)] = &[
    (
        "cuStreamWaitEvent",
        "event.rs",
        "takes an Event; event/ stands above stream/",
    ),
    (
        "cuCtxRecordEvent",
        "event.rs",
        "takes an Event; event/ stands above context/",
    ),
    (
        "cuCtxWaitEvent",
        "event.rs",
        "takes an Event; event/ stands above context/",
    ),
    (
        "cuStreamBeginCapture_v2",
        "graph/capture.rs",
        "makes a Graph; graph/ stands above stream/",
    ),
    (
        "cuStreamEndCapture",
        "graph/capture.rs",
        "returns a Graph; graph/ stands above stream/",
    ),
    (
        "cuStreamBeginCaptureToGraph",
        "graph/capture.rs",
        "takes a Graph; graph/ stands above stream/",
    ),
    (
        "cuStreamIsCapturing",
        "graph/capture.rs",
        "a capture's state, beside the capture",
    ),
    (
        "cuStreamGetCaptureInfo",
        "graph/capture.rs",
        "returns the Graph and its nodes; graph/ stands above stream/",
    ),
    (
        "cuStreamUpdateCaptureDependencies",
        "graph/capture.rs",
        "takes GraphNodes; graph/ stands above stream/",
    ),
    (
        "cuThreadExchangeStreamCaptureMode",
        "graph/capture.rs",
        "the capture mode, beside the capture",
    ),
    (
        "cuDeviceGetDefaultMemPool",
        "memory/pool/mod.rs",
        "returns a MemPool; memory/ stands above device/",
    ),
    (
        "cuDeviceGetMemPool",
        "memory/pool/mod.rs",
        "returns a MemPool; memory/ stands above device/",
    ),
    (
        "cuDeviceSetMemPool",
        "memory/pool/mod.rs",
        "takes a MemPool; memory/ stands above device/",
    ),
    (
        "cuStreamAttachMemAsync",
        "memory/managed.rs",
        "takes a memory view; memory/ stands above stream/",
    ),
    (
        "cuFlushGPUDirectRDMAWrites",
        "context/mod.rs",
        "acts on a Context; context/ stands above device/",
    ),
];

/// Whether `path` (relative to `cuda-driver/src`, `/`-separated) is in `pattern`.
fn in_home(pattern: &str, path: &str) -> bool {
    match pattern.strip_suffix('/') {
        Some(module) => path == format!("{module}.rs") || path.starts_with(pattern),
        None => path == pattern,
    }
}

impl Home {
    /// Whether a wrapper of this group may stand in `path`.
    pub fn allows(&self, path: &str) -> bool {
        self.homes.iter().any(|h| in_home(h, path)) && !self.except.iter().any(|e| in_home(e, path))
    }

    fn describe(&self) -> String {
        let mut s = self.homes.join(" or ");
        if !self.except.is_empty() {
            s += &format!(" (not {})", self.except.join(", "));
        }
        s
    }
}

/// The first name of every `#[wraps(..)]` in `code` (as [`code_of`] leaves it), with its line;
/// a macro's parameter keeps its `$`.
pub fn wraps_in(code: &str) -> Vec<(usize, String)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("wraps") {
        let start = from + at;
        from = start + "wraps".len();
        // `#[wraps(` or `#[cuda_driver_macros::wraps(`, spaces allowed.
        let before = code[..start].trim_end();
        let attr = before.ends_with("#[")
            || before
                .strip_suffix("::")
                .map(str::trim_end)
                .and_then(|s| s.strip_suffix("cuda_driver_macros"))
                .is_some_and(|s| s.trim_end().ends_with("#["));
        if !attr || (start > 0 && (b[start - 1].is_ascii_alphanumeric() || b[start - 1] == b'_')) {
            continue;
        }
        let mut i = from;
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if b.get(i) != Some(&b'(') {
            continue;
        }
        i += 1;
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        let dollar = b.get(i) == Some(&b'$');
        if let Some((name, _)) = ident_at(b, i + usize::from(dollar)) {
            let name = if dollar {
                format!("${name}")
            } else {
                name.to_owned()
            };
            out.push((line_of(code, start), name));
        }
    }
    out
}

/// What the check found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Findings {
    /// `(file, line, name, group)`: a wrapper outside its group's home.
    pub misplaced: Vec<(String, usize, String, String)>,
    /// `(file, line, name, group)`: a wrapped function whose group has no home in [`HOMES`].
    pub homeless: Vec<(String, usize, String, String)>,
    /// `(file, line, name)`: skipped (a type, or a macro's parameter).
    pub skipped: Vec<(String, usize, String)>,
    /// How many wrappers were checked.
    pub checked: usize,
    /// How many stand where [`BY_LAYER`] places them.
    pub by_layer: usize,
}

/// Checks `files`: `(path relative to cuda-driver/src, text)`, against the group of every
/// function (`groups`: name -> group).
pub fn check(files: &[(String, String)], groups: &BTreeMap<String, String>) -> Findings {
    let mut f = Findings::default();
    for (path, text) in files {
        for (line, name) in wraps_in(&code_of(text)) {
            let Some(group) = groups.get(&name) else {
                f.skipped.push((path.clone(), line, name));
                continue;
            };
            f.checked += 1;
            match HOMES.iter().find(|h| h.group == group) {
                None => f.homeless.push((path.clone(), line, name, group.clone())),
                Some(h) if !h.allows(path) => {
                    if BY_LAYER.iter().any(|(n, p, _)| *n == name && *p == path) {
                        f.by_layer += 1;
                    } else {
                        f.misplaced.push((path.clone(), line, name, group.clone()))
                    }
                }
                Some(_) => {}
            }
        }
    }
    f
}

pub fn run(args: &[String]) -> Result<(), String> {
    let mut list = false;
    let mut warn_only = false;
    for a in args {
        match a.as_str() {
            "--list" => list = true,
            "--warn-only" => warn_only = true,
            other => {
                return Err(format!(
                    "unknown option `{other}` (expected --list or --warn-only)"
                ))
            }
        }
    }
    if list {
        for h in HOMES {
            println!("{:<24} {}", h.group, h.describe());
        }
        return Ok(());
    }
    let root = util::root();
    let names = read(&root.join("cuda-driver-macros/src/names.rs"))?;
    let groups: BTreeMap<String, String> = parse_names(&names)
        .into_iter()
        .map(|e| (e.name, e.group))
        .collect();
    let src = root.join("cuda-driver/src");
    let mut files = Vec::new();
    for p in rust_files(&src)? {
        let rel = relative(&src, &p);
        files.push((rel, read(&p)?));
    }
    let f = check(&files, &groups);

    let home_of = |g: &str| {
        HOMES
            .iter()
            .find(|h| h.group == g)
            .map_or_else(String::new, Home::describe)
    };
    for (file, line, name, group) in &f.misplaced {
        println!(
            "cuda-driver/src/{file}:{line}: {name} ({group}) belongs in {}",
            home_of(group)
        );
    }
    for (file, line, name, group) in &f.homeless {
        println!(
            "cuda-driver/src/{file}:{line}: {name} ({group}): the group has no home in \
             xtask/src/homes.rs"
        );
    }
    let macros = f.skipped.iter().filter(|s| s.2.starts_with('$')).count();
    for (file, line, name) in f.skipped.iter().filter(|s| s.2.starts_with('$')) {
        println!("cuda-driver/src/{file}:{line}: {name}: a macro's parameter, not checked");
    }
    println!(
        "check-homes: {} #[wraps] checked, {} misplaced, {} in a group without a home, {} placed by \
         layer (BY_LAYER); skipped: {} types, {macros} macro parameters",
        f.checked,
        f.misplaced.len(),
        f.homeless.len(),
        f.by_layer,
        f.skipped.len() - macros
    );
    let bad = f.misplaced.len() + f.homeless.len();
    if bad > 0 && !warn_only {
        return Err(format!(
            "{bad} wrappers stand outside the home of their reference group (listed above)"
        ));
    }
    Ok(())
}

fn relative(src: &Path, p: &Path) -> String {
    p.strip_prefix(src)
        .unwrap_or(p)
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn home_of(group: &str) -> &'static Home {
        HOMES.iter().find(|h| h.group == group).unwrap()
    }

    #[test]
    fn a_folder_home_is_the_module_as_a_file_or_a_folder() {
        let mem = home_of("CUDA_MEM");
        for ok in [
            "memory.rs",
            "memory/mod.rs",
            "memory/copy.rs",
            "memory/array/view.rs",
        ] {
            assert!(mem.allows(ok), "{ok}");
        }
        for no in [
            "memory_more.rs",
            "memoryx/a.rs",
            "memory/vmm.rs",
            "memory/vmm/map.rs",
            "memory/pool/mod.rs",
            "memory/unified.rs",
            "lib.rs",
        ] {
            assert!(!mem.allows(no), "{no}");
        }
        assert!(home_of("CUDA_VA").allows("memory/vmm/mod.rs"));
        assert!(home_of("CUDA_VA").allows("memory/vmm.rs"));
        let stream = home_of("CUDA_STREAM");
        assert!(stream.allows("stream/capture.rs") && stream.allows("stream.rs"));
        assert!(!stream.allows("stream_memop.rs"));
        assert!(home_of("CUDA_MEMOP").allows("stream_memop.rs"));
        assert!(!home_of("CUDA_MEMOP").allows("stream/memop.rs"));
        assert!(home_of("CUDA_INITIALIZE").allows("init.rs"));
        assert!(!home_of("CUDA_INITIALIZE").allows("init/mod.rs"));
        assert!(!home_of("CUDA_EXEC").allows("launch/occupancy.rs"));
        assert!(home_of("CUDA_OCCUPANCY").allows("launch/occupancy.rs"));
    }

    #[test]
    fn a_wrapper_placed_by_layer_is_not_misplaced_elsewhere() {
        let groups: BTreeMap<String, String> = [("cuStreamWaitEvent", "CUDA_STREAM")]
            .into_iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        let code = "#[wraps(cuStreamWaitEvent)]\nfn f() {}\n".to_string();
        let f = check(&[("event.rs".to_string(), code.clone())], &groups);
        assert_eq!((f.misplaced.len(), f.by_layer), (0, 1));
        let f = check(&[("graph/mod.rs".to_string(), code)], &groups);
        assert_eq!((f.misplaced.len(), f.by_layer), (1, 0));
    }

    #[test]
    fn every_group_has_one_entry() {
        let mut groups: Vec<&str> = HOMES.iter().map(|h| h.group).collect();
        groups.sort();
        let n = groups.len();
        groups.dedup();
        assert_eq!(groups.len(), n, "a group listed twice");
    }

    #[test]
    fn the_first_name_of_each_wraps_is_found_outside_comments_and_strings() {
        let code = code_of(
            "/// #[wraps(cuInDocs)]\n#[wraps(cuMemAlloc, cuMemAlloc_v2)]\nfn a() {}\n\
             // #[wraps(cuCommented)]\nlet s = \"#[wraps(cuInString)]\";\n\
             #[cuda_driver_macros::wraps(\n    cuMemFree\n)]\nfn b() {}\n\
             macro_rules! m { ($e:ident) => { #[wraps($e)] fn c() {} } }\n\
             fn unwraps(x: u32) {}\n#[cfg(test)]\nmod t { #[wraps(cuInTests)] fn d() {} }\n",
        );
        assert_eq!(
            wraps_in(&code),
            [
                (2, "cuMemAlloc".to_owned()),
                (6, "cuMemFree".to_owned()),
                (10, "$e".to_owned())
            ]
        );
    }

    #[test]
    fn misplaced_homeless_and_skipped_wrappers_are_reported() {
        let groups: BTreeMap<String, String> = [
            ("cuMemAlloc", "CUDA_MEM"),
            ("cuMemCreate", "CUDA_VA"),
            ("cuGraphicsMapResources", "CUDA_GRAPHICS"),
        ]
        .into_iter()
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
        .collect();
        let files = [
            ("memory/device.rs", "#[wraps(cuMemAlloc)] fn a() {}"),
            ("memory/more.rs", "#[wraps(cuMemCreate)] fn b() {}"),
            ("graphics.rs", "#[wraps(cuGraphicsMapResources)] fn c() {}"),
            ("stream.rs", "#[wraps(CUstream)] struct S;"),
        ]
        .map(|(p, t)| (p.to_owned(), t.to_owned()));
        let f = check(&files, &groups);
        assert_eq!(f.checked, 3);
        assert_eq!(
            f.misplaced,
            [(
                "memory/more.rs".to_owned(),
                1,
                "cuMemCreate".to_owned(),
                "CUDA_VA".to_owned()
            )]
        );
        assert_eq!(f.homeless.len(), 1);
        assert_eq!(
            f.skipped,
            [("stream.rs".to_owned(), 1, "CUstream".to_owned())]
        );
    }
}
