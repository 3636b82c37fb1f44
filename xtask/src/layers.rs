//! `cargo xtask check-layers [--deny-root-imports] [--graph]`: the layering of
//! `cuda-driver/src`, read from the source tree when xtask runs.
//!
//! * No cycles between top-level modules, and lower layers never import higher ones
//!   ([`FORBIDDEN`]): either fails the task.
//! * Imports through the crate root (`use crate::{Context, Stream}`, `crate::Error::..`, a
//!   `super::` chain that climbs to the root and names a re-export): listed with their count;
//!   they fail the task only with `--deny-root-imports`. Every such path hides the module that
//!   defines the name, and is an arrow that runs back up the layers in a drawing of the
//!   crate's structure.
//!
//! The scanner strips comments, strings and `#[cfg(test)]` items (see `scan.rs`) and collects
//! every path that starts with `crate::` (or climbs to the crate root with `super::`):
//! `crate::module::...` names a module directly; `crate::Name` is resolved through the crate
//! root's `pub use` re-exports to the module that defines `Name`. A name it cannot resolve
//! fails the task, so the scanner cannot silently miss an edge.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::scan::{code_of, first_segments, ident_at, is_ident, line_of, read, skip_path_sep};
use crate::util;

/// Edges that must not exist even without a cycle: `(from, to)`. A name that is no top-level
/// module (after a move) is reported, so the table does not rot silently.
const FORBIDDEN: &[(&[&str], &[&str])] = &[
    // The lower layers know nothing of loading or launching code.
    (
        &[
            "error", "handle", "release", "cstr", "device", "context", "memory", "stream", "event",
        ],
        &[
            "jit", "image", "params", "module", "library", "launch", "graph",
        ],
    ),
    // Loading and launching code knows nothing of graphs (graphs build on launches).
    (
        &["jit", "image", "params", "module", "library", "launch"],
        &["graph"],
    ),
    // Loading code knows nothing of launching it.
    (
        &["jit", "image", "params", "module", "library"],
        &["launch"],
    ),
    // Modules know nothing of libraries (a library keeps its modules alive, type-erased).
    (&["jit", "image", "params", "module"], &["library"]),
];

/// Names defined in `lib.rs` itself (the crate root is no module of the graph), and `sys`
/// (the raw crate, re-exported). `crate::sys` is still reported as an import through the
/// root; the others name the module that defines them.
const ROOT_ITEMS: &[&str] = &[
    "sys",
    "init",
    "driver_version",
    "driver_version_raw",
    "prelude",
];

/// The crate's macros that declare a public item named by their first identifier.
const ITEM_MACROS: &[&str] = &["c_enum", "c_flags", "vector_type"];

pub fn run(args: &[String]) -> Result<(), String> {
    let mut deny_root_imports = false;
    let mut show_graph = false;
    for a in args {
        match a.as_str() {
            "--deny-root-imports" => deny_root_imports = true,
            "--graph" => show_graph = true,
            other => {
                return Err(format!(
                    "unknown option `{other}` (expected --deny-root-imports or --graph)"
                ))
            }
        }
    }
    let root = util::root();
    let report = check(&root.join("cuda-driver/src"))?;
    let show = |p: &Path| {
        p.strip_prefix(&root)
            .unwrap_or(p)
            .display()
            .to_string()
            .replace('\\', "/")
    };

    if show_graph {
        println!("{}", report.graph_text());
    }
    for n in &report.unknown_layer_names {
        println!("check-layers: note: `{n}` of the layer table (FORBIDDEN in xtask/src/layers.rs) is no top-level module");
    }
    if !report.root_imports.is_empty() {
        println!("imports through the crate root (name the module that defines the item):");
        for r in &report.root_imports {
            let names: Vec<String> = r
                .names
                .iter()
                .map(|(n, from)| {
                    if from.is_empty() {
                        n.clone()
                    } else {
                        format!("{n} ({})", from.join(", "))
                    }
                })
                .collect();
            println!(
                "  {}:{}: crate::{}",
                show(&r.file),
                r.line,
                names.join(", crate::")
            );
        }
    }
    let names: usize = report.root_imports.iter().map(|r| r.names.len()).sum();
    let files: BTreeSet<&PathBuf> = report.root_imports.iter().map(|r| &r.file).collect();
    println!(
        "check-layers: {} top-level modules, {} edges; {} cycles; {} edges against the layers; \
         {names} imports through the crate root in {} files",
        report.graph.len(),
        report.graph.values().map(BTreeSet::len).sum::<usize>(),
        report.cycles.len(),
        report.violations.len(),
        files.len()
    );

    let mut errors = Vec::new();
    if !report.unresolved.is_empty() {
        errors.push(format!(
            "references the scanner cannot resolve (teach it, or name the module):\n{}",
            report
                .unresolved
                .iter()
                .map(|u| format!("  {}", u.replace(&format!("{}/", root.display()), "")))
                .collect::<Vec<_>>()
                .join("\n")
        ));
    }
    if !report.cycles.is_empty() {
        errors.push(format!(
            "cycles between top-level modules:\n  {}\n\nthe graph:\n{}",
            report.cycles.join("\n  "),
            report.graph_text()
        ));
    }
    if !report.violations.is_empty() {
        errors.push(format!(
            "lower layers import higher ones:\n  {}\n\nthe graph:\n{}",
            report.violations.join("\n  "),
            report.graph_text()
        ));
    }
    if deny_root_imports && names > 0 {
        errors.push(format!(
            "{names} imports through the crate root (listed above); --deny-root-imports refuses them"
        ));
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("\n\n"))
    }
}

/// Names under the crate root that one line imports: each with the modules that define it
/// (empty for `*` and `sys`).
#[derive(Debug, PartialEq, Eq)]
pub struct RootImport {
    pub file: PathBuf,
    pub line: usize,
    pub names: Vec<(String, Vec<String>)>,
}

#[derive(Debug, Default)]
pub struct Report {
    /// Each top-level module and the top-level modules it refers to.
    pub graph: BTreeMap<String, BTreeSet<String>>,
    pub cycles: Vec<String>,
    pub violations: Vec<String>,
    pub unresolved: Vec<String>,
    pub root_imports: Vec<RootImport>,
    pub unknown_layer_names: Vec<&'static str>,
}

impl Report {
    fn graph_text(&self) -> String {
        self.graph
            .iter()
            .map(|(k, v)| {
                format!(
                    "  {k} -> {}",
                    v.iter().map(String::as_str).collect::<Vec<_>>().join(", ")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Checks the crate whose sources are in `src` (with `lib.rs` at its root).
pub fn check(src: &Path) -> Result<Report, String> {
    let modules = modules(src)?;
    let names: BTreeSet<&str> = modules.iter().map(|m| m.name.as_str()).collect();
    let exports = root_exports(src, &modules)?;

    let mut report = Report::default();
    for m in &modules {
        let mut deps = BTreeSet::new();
        for (path, depth) in &m.files {
            let code = code_of(&read(path)?);
            let mut by_line: BTreeMap<usize, Vec<(String, Vec<String>)>> = BTreeMap::new();
            for (at, name) in root_reference_sites(&code, *depth) {
                let targets: Vec<String> = if name == "*" {
                    names.iter().map(|s| s.to_string()).collect()
                } else if let Some(&n) = names.get(name.as_str()) {
                    vec![n.to_owned()]
                } else if let Some(from) = exports.get(&name) {
                    if from.len() > 1 {
                        report.unresolved.push(format!(
                            "{}: `{name}` is exported by {from:?}",
                            path.display()
                        ));
                    }
                    from.iter().cloned().collect()
                } else if ROOT_ITEMS.contains(&name.as_str()) {
                    vec![]
                } else {
                    report
                        .unresolved
                        .push(format!("{}: crate::{name}", path.display()));
                    vec![]
                };
                // Through the root: anything but a module or an item of lib.rs itself.
                let through_root = name == "*"
                    || name == "sys"
                    || (!names.contains(name.as_str()) && exports.contains_key(&name));
                if through_root {
                    let from = if name == "*" { vec![] } else { targets.clone() };
                    let entry = by_line.entry(line_of(&code, at)).or_default();
                    if !entry.iter().any(|(n, _)| *n == name) {
                        entry.push((name.clone(), from));
                    }
                }
                deps.extend(targets.into_iter().filter(|t| *t != m.name));
            }
            for (line, names) in by_line {
                report.root_imports.push(RootImport {
                    file: path.clone(),
                    line,
                    names,
                });
            }
        }
        report.graph.insert(m.name.clone(), deps);
    }

    report.cycles = cycles(&report.graph);
    for (from, to) in FORBIDDEN {
        for f in *from {
            for t in *to {
                if report.graph.get(*f).is_some_and(|d| d.contains(*t)) {
                    report.violations.push(format!("{f} -> {t}"));
                }
            }
        }
    }
    let mut unknown: Vec<&'static str> = FORBIDDEN
        .iter()
        .flat_map(|(f, t)| f.iter().chain(t.iter()).copied())
        .filter(|n| !names.contains(n))
        .collect();
    unknown.sort();
    unknown.dedup();
    report.unknown_layer_names = unknown;
    Ok(report)
}

/// Every cycle that a depth-first search finds (one per back edge).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    fn visit<'a>(
        n: &'a str,
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
        cycles: &mut Vec<String>,
    ) {
        if done.contains(n) {
            return;
        }
        if let Some(pos) = stack.iter().position(|&s| s == n) {
            let mut cycle: Vec<&str> = stack[pos..].to_vec();
            cycle.push(n);
            cycles.push(cycle.join(" -> "));
            return;
        }
        stack.push(n);
        for d in graph.get(n).into_iter().flatten() {
            visit(d, graph, stack, done, cycles);
        }
        stack.pop();
        done.insert(n);
    }
    let mut out = Vec::new();
    let mut done = BTreeSet::new();
    for n in graph.keys() {
        visit(n, graph, &mut Vec::new(), &mut done, &mut out);
    }
    out
}

/// Every name the code refers to under the crate root, with its offset; `depth` is how many
/// `super::` reach the root from this file.
fn root_reference_sites(code: &str, depth: usize) -> Vec<(usize, String)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !is_ident(b[i]) || (i > 0 && (is_ident(b[i - 1]) || b[i - 1] == b'$')) {
            i += 1;
            continue;
        }
        let (word, next) = ident_at(b, i).map_or(("", i + 1), |(w, n)| (w, n));
        let mut at_root = None;
        if word == "crate" {
            let (sep, j) = skip_path_sep(b, next);
            if sep {
                at_root = Some(j);
            }
        } else if word == "super" && depth > 0 {
            // Count `super::super::...`.
            let mut supers = 1;
            let (mut sep, mut j) = skip_path_sep(b, next);
            while sep {
                match ident_at(b, j) {
                    Some(("super", n)) => {
                        supers += 1;
                        (sep, j) = skip_path_sep(b, n);
                    }
                    _ => break,
                }
            }
            if sep && supers >= depth {
                at_root = Some(j);
            }
        }
        if let Some(j) = at_root {
            out.extend(first_segments(b, j).into_iter().map(|s| (i, s)));
        }
        i = next.max(i + 1);
    }
    out
}

/// Every name the code refers to under the crate root.
#[cfg(test)]
fn root_references(code: &str, depth: usize) -> BTreeSet<String> {
    root_reference_sites(code, depth)
        .into_iter()
        .map(|(_, n)| n)
        .collect()
}

/// Names defined at the top level of a file: `pub` items and the items the crate's item
/// macros ([`ITEM_MACROS`]) declare.
fn top_level_pub_names(code: &str) -> BTreeSet<String> {
    let b = code.as_bytes();
    let mut out = BTreeSet::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'{' | b'(' | b'[' => {
                depth += 1;
                i += 1;
            }
            b'}' | b')' | b']' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            c if depth == 0 && is_ident(c) && (i == 0 || !is_ident(b[i - 1])) => {
                let (word, next) = ident_at(b, i).unwrap_or(("", i + 1));
                i = next.max(i + 1);
                if word == "pub" && b.get(i) != Some(&b'(') {
                    // `pub struct X`, `pub unsafe trait X`, `pub const fn X` ...
                    let mut j = i;
                    while let Some((w, n)) = ident_at(b, j) {
                        j = n;
                        let next = ident_at(b, j).map(|(n, _)| n);
                        if w == "const" && matches!(next, Some("fn" | "unsafe" | "extern")) {
                            continue;
                        }
                        if matches!(
                            w,
                            "struct"
                                | "enum"
                                | "trait"
                                | "fn"
                                | "type"
                                | "const"
                                | "static"
                                | "union"
                                | "mod"
                        ) {
                            out.extend(next.map(str::to_owned));
                            break;
                        }
                        if !matches!(w, "unsafe" | "extern" | "async") {
                            break;
                        }
                    }
                } else if b.get(i) == Some(&b'!') && ITEM_MACROS.contains(&word) {
                    // An item macro: the first identifier inside, after attributes.
                    let mut j = i + 1;
                    while j < b.len() && b[j].is_ascii_whitespace() {
                        j += 1;
                    }
                    if matches!(b.get(j), Some(b'{' | b'(')) {
                        j += 1;
                        loop {
                            while j < b.len() && b[j].is_ascii_whitespace() {
                                j += 1;
                            }
                            if b[j.min(b.len())..].starts_with(b"#[") {
                                let mut d = 0;
                                while j < b.len() {
                                    if b[j] == b'[' {
                                        d += 1;
                                    } else if b[j] == b']' {
                                        d -= 1;
                                        if d == 0 {
                                            j += 1;
                                            break;
                                        }
                                    }
                                    j += 1;
                                }
                            } else {
                                break;
                            }
                        }
                        if let Some((name, _)) = ident_at(b, j) {
                            if name.as_bytes()[0].is_ascii_uppercase() {
                                out.insert(name.to_owned());
                            }
                        }
                    }
                }
            }
            _ => i += 1,
        }
    }
    out
}

/// A top-level module: its name and its files with their `super::` depth to the root.
struct Module {
    name: String,
    files: Vec<(PathBuf, usize)>,
}

fn collect(dir: &Path, depth: usize, out: &mut Vec<(PathBuf, usize)>) -> Result<(), String> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            collect(&p, depth + 1, out)?;
        } else if p.extension().is_some_and(|e| e == "rs") {
            // `m/mod.rs` sits at the module's own depth, `m/x.rs` one deeper.
            let d = if p.file_name().unwrap() == "mod.rs" {
                depth
            } else {
                depth + 1
            };
            out.push((p, d));
        }
    }
    Ok(())
}

/// The top-level modules: those `lib.rs` declares (a `#[cfg(test)]` module is no part of the
/// crate's structure).
fn modules(src: &Path) -> Result<Vec<Module>, String> {
    let lib = code_of(&read(&src.join("lib.rs"))?);
    let declared = declared_modules(&lib);
    let mut names = BTreeSet::new();
    for e in std::fs::read_dir(src).map_err(|e| format!("{}: {e}", src.display()))? {
        let p = e.map_err(|e| format!("{}: {e}", src.display()))?.path();
        let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
        if (p.is_dir() || (p.extension().is_some_and(|e| e == "rs") && stem != "lib"))
            && declared.contains(&stem)
        {
            names.insert(stem);
        }
    }
    names
        .into_iter()
        .map(|name| {
            let mut files = Vec::new();
            let file = src.join(format!("{name}.rs"));
            if file.exists() {
                files.push((file, 1));
            }
            // `m.rs` with `m/x.rs` beside it: x is one below m, as for `m/mod.rs`.
            let dir = src.join(&name);
            if dir.is_dir() {
                collect(&dir, 1, &mut files)?;
            }
            Ok(Module { name, files })
        })
        .collect()
}

/// The modules declared by `mod name;` at the top level of `code`.
fn declared_modules(code: &str) -> BTreeSet<String> {
    let b = code.as_bytes();
    let mut out = BTreeSet::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'{' => depth += 1,
            b'}' => depth = depth.saturating_sub(1),
            c if depth == 0 && is_ident(c) && (i == 0 || !is_ident(b[i - 1])) => {
                let (word, next) = ident_at(b, i).unwrap_or(("", i + 1));
                if word == "mod" {
                    if let Some((name, after)) = ident_at(b, next) {
                        let rest = code[after..].trim_start();
                        if rest.starts_with(';') {
                            out.insert(name.to_owned());
                        }
                    }
                }
                i = next.max(i + 1);
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// The modules each name re-exported at the crate root comes from.
fn root_exports(
    src: &Path,
    modules: &[Module],
) -> Result<BTreeMap<String, BTreeSet<String>>, String> {
    let lib = code_of(&read(&src.join("lib.rs"))?);
    let mut defined: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for m in modules {
        let mut names = BTreeSet::new();
        for (p, _) in &m.files {
            names.extend(top_level_pub_names(&code_of(&read(p)?)));
        }
        defined.insert(m.name.as_str(), names);
    }
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let b = lib.as_bytes();
    let mut i = 0;
    while let Some(at) = lib[i..].find("pub use ") {
        let j = i + at + "pub use ".len();
        i = j;
        let Some((module, next)) = ident_at(b, j) else {
            continue;
        };
        if !defined.contains_key(module) {
            continue;
        }
        let (_, k) = skip_path_sep(b, next);
        for name in first_segments(b, k) {
            if name == "*" {
                for n in &defined[module] {
                    out.entry(n.clone()).or_default().insert(module.to_owned());
                }
            } else {
                out.entry(name).or_default().insert(module.to_owned());
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scanner_sees_paths_groups_and_globs_but_not_comments_or_strings() {
        let code = code_of(
            r##"
        use crate::error::{check, Error};
        use crate::{Context, memory::view::stream_identity};
        // use crate::commented;
        /* crate::blocked */
        let s = "crate::in_a_string";
        let c = '"'; let l: &'a str = r#"crate::raw"#;
        fn f() { crate::library::kernel_name(x); }
        #[cfg(test)]
        mod tests { use crate::launch::*; }
        use crate::*;
        "##,
        );
        let refs = root_references(&code, 1);
        let got: Vec<&str> = refs.iter().map(String::as_str).collect();
        assert_eq!(got, ["*", "Context", "error", "library", "memory"]);
        assert_eq!(
            root_references("use super::super::Stream; use super::X;", 2)
                .into_iter()
                .collect::<Vec<_>>(),
            ["Stream"]
        );
        let names = top_level_pub_names(&code_of(
            "pub struct A; pub(crate) struct B; impl A { pub fn c() {} } pub unsafe trait D {}\n\
             c_enum! { #[doc(alias = \"x\")] E(u32) } pub const fn f() {} mod m { pub struct G; }",
        ));
        assert_eq!(names.into_iter().collect::<Vec<_>>(), ["A", "D", "E", "f"]);
    }

    /// A crate in a fresh directory: `(relative path, text)` per file.
    fn tree(tag: &str, files: &[(&str, &str)]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "xtask-layers-{tag}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        for (p, text) in files {
            let p = dir.join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        dir
    }

    #[test]
    fn a_cycle_and_an_edge_against_the_layers_are_found() {
        let src = tree(
            "cycle",
            &[
                ("lib.rs", "mod error; mod graph; pub use graph::Graph;"),
                ("error.rs", "use crate::Graph; pub struct Error;"),
                ("graph/mod.rs", "use crate::error::Error; pub struct Graph;"),
            ],
        );
        let r = check(&src).unwrap();
        assert_eq!(r.cycles, ["error -> graph -> error"]);
        assert_eq!(r.violations, ["error -> graph"]);
        assert!(r.unresolved.is_empty(), "{:?}", r.unresolved);
        std::fs::remove_dir_all(&src).unwrap();
    }

    #[test]
    fn imports_through_the_root_are_listed_by_line_with_their_modules() {
        let src = tree(
            "root",
            &[
                (
                    "lib.rs",
                    "mod error; mod stream; pub use error::Error; pub use stream::*;\n\
                     pub use cuda_driver_sys as sys;\npub fn init() {}",
                ),
                ("error.rs", "pub struct Error;"),
                ("stream/mod.rs", "mod attr;\npub struct Stream;"),
                (
                    "stream/attr.rs",
                    "use super::Stream;\nuse crate::{Error, init};\n\
                     fn f() -> crate::error::Error { crate::sys::x(); super::super::Error }",
                ),
            ],
        );
        let r = check(&src).unwrap();
        assert!(r.cycles.is_empty() && r.violations.is_empty());
        type Line = (String, usize, Vec<(String, Vec<String>)>);
        let got: Vec<Line> = r
            .root_imports
            .iter()
            .map(|i| {
                (
                    i.file.file_name().unwrap().to_string_lossy().into_owned(),
                    i.line,
                    i.names.clone(),
                )
            })
            .collect();
        let error = || ("Error".to_owned(), vec!["error".to_owned()]);
        assert_eq!(
            got,
            [
                ("attr.rs".to_owned(), 2, vec![error()]),
                (
                    "attr.rs".to_owned(),
                    3,
                    vec![("sys".to_owned(), vec![]), error()]
                ),
            ]
        );
        assert_eq!(r.graph["stream"], BTreeSet::from(["error".to_owned()]));
        std::fs::remove_dir_all(&src).unwrap();
    }

    #[test]
    fn modules_are_those_lib_rs_declares_outside_tests() {
        let lib = code_of(
            "mod a;\npub mod b;\n#[cfg(test)]\nmod c;\n#[cfg(feature = \"x\")]\nmod d;\n\
             pub mod prelude { pub use crate::a::A; }\nmod inline { mod e; }",
        );
        assert_eq!(
            declared_modules(&lib).into_iter().collect::<Vec<_>>(),
            ["a", "b", "d"]
        );
    }

    #[test]
    fn a_name_the_scanner_cannot_resolve_is_reported() {
        let src = tree(
            "unresolved",
            &[("lib.rs", "mod a;"), ("a.rs", "use crate::Nowhere;")],
        );
        let r = check(&src).unwrap();
        assert_eq!(r.unresolved.len(), 1, "{:?}", r.unresolved);
        assert!(r.unresolved[0].ends_with("crate::Nowhere"));
        std::fs::remove_dir_all(&src).unwrap();
    }
}
