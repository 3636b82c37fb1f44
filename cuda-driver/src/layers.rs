//! The crate's layering, checked: no cycles between top-level modules, and lower layers never
//! import higher ones.
//!
//! The test reads the sources under `src/`, strips comments, strings and `#[cfg(test)]` items,
//! and collects every path that starts with `crate::` (or climbs to the crate root with
//! `super::`): `crate::module::...` names a module directly; `crate::Name` is resolved through
//! the crate root's `pub use` re-exports to the module that defines `Name`. A name the test
//! cannot resolve fails it, so the scanner cannot silently miss an edge.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Edges that must not exist even without a cycle: `(from, to)`.
const FORBIDDEN: &[(&[&str], &[&str])] = &[
    // The lower layers know nothing of loading or launching code.
    (
        &[
            "error", "release", "cstr", "device", "context", "memory", "stream", "event",
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

/// A source file with comments, literals and test-only items blanked out.
fn code_of(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if rest.starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if let Some(end) = raw_string_end(b, i) {
            out.push_str("\"\"");
            i = end;
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            let lit_end = if rest.get(1) == Some(&b'\\') {
                rest.iter().skip(2).position(|&c| c == b'\'').map(|p| p + 3)
            } else {
                let ch = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                (rest.get(1 + ch) == Some(&b'\'')).then_some(2 + ch)
            };
            match lit_end {
                Some(n) => {
                    out.push_str("' '");
                    i += n;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            let ch = text[i..].chars().next().unwrap();
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    strip_test_items(&out)
}

/// The end of a raw string literal (`r"..."`, `r#"..."#`, `br"..."`) starting at `i`.
fn raw_string_end(b: &[u8], i: usize) -> Option<usize> {
    if i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') {
        return None;
    }
    let mut j = i;
    if b.get(j) == Some(&b'b') {
        j += 1;
    }
    if b.get(j) != Some(&b'r') {
        return None;
    }
    j += 1;
    let hashes = b[j..].iter().take_while(|&&c| c == b'#').count();
    j += hashes;
    if b.get(j) != Some(&b'"') {
        return None;
    }
    j += 1;
    let close: Vec<u8> = std::iter::once(b'"')
        .chain(std::iter::repeat_n(b'#', hashes))
        .collect();
    let end = b[j..].windows(close.len()).position(|w| w == close)?;
    Some(j + end + close.len())
}

/// Removes every item that follows `#[cfg(test)]` (a `mod tests { .. }`, a `use`, a `fn`).
fn strip_test_items(code: &str) -> String {
    let mut out = code.to_owned();
    while let Some(at) = out.find("#[cfg(test)]") {
        let b = out.as_bytes();
        let mut i = at + "#[cfg(test)]".len();
        let mut depth = 0usize;
        while i < b.len() {
            match b[i] {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        i += 1;
                        break;
                    }
                }
                b';' if depth == 0 => {
                    i += 1;
                    break;
                }
                _ => {}
            }
            i += 1;
        }
        out.replace_range(at..i.min(out.len()), " ");
    }
    out
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The identifier starting at `i` (after whitespace), and the index after it.
fn ident_at(b: &[u8], mut i: usize) -> Option<(&str, usize)> {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    let start = i;
    while i < b.len() && is_ident(b[i]) {
        i += 1;
    }
    (i > start && !b[start].is_ascii_digit())
        .then(|| (std::str::from_utf8(&b[start..i]).unwrap(), i))
}

/// Skips whitespace and `::` from `i`; whether a `::` was there.
fn skip_path_sep(b: &[u8], mut i: usize) -> (bool, usize) {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    if b[i..].starts_with(b"::") {
        i += 2;
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        (true, i)
    } else {
        (false, i)
    }
}

/// The first segments named under the crate root by the path that continues at `i` (just
/// after `crate::`): one name, or every first segment of a `{ .. }` group; `*` for a glob.
fn first_segments(b: &[u8], i: usize) -> Vec<String> {
    if b.get(i) == Some(&b'*') {
        return vec!["*".into()];
    }
    if b.get(i) != Some(&b'{') {
        return ident_at(b, i)
            .map(|(s, _)| vec![s.to_owned()])
            .unwrap_or_default();
    }
    // A group: items are separated by commas at depth 1.
    let mut out = Vec::new();
    let mut depth = 0;
    let mut expect_item = true;
    let mut j = i;
    while j < b.len() {
        match b[j] {
            b'{' => {
                depth += 1;
                expect_item = depth == 1;
                j += 1;
            }
            b'}' => {
                depth -= 1;
                j += 1;
                if depth == 0 {
                    break;
                }
            }
            b',' => {
                expect_item = depth == 1;
                j += 1;
            }
            b'*' if depth == 1 && expect_item => {
                out.push("*".into());
                expect_item = false;
                j += 1;
            }
            c if depth == 1 && expect_item && is_ident(c) => {
                let (s, next) = ident_at(b, j).unwrap();
                if s != "self" {
                    out.push(s.to_owned());
                }
                expect_item = false;
                j = next;
            }
            _ => j += 1,
        }
    }
    out
}

/// Every name the code refers to under the crate root; `depth` is how many `super::` reach
/// the root from this file.
fn root_references(code: &str, depth: usize) -> BTreeSet<String> {
    let b = code.as_bytes();
    let mut out = BTreeSet::new();
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
            out.extend(first_segments(b, j));
        }
        i = next.max(i + 1);
    }
    out
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
                            if b[j..].starts_with(b"#[") {
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

/// The crate's macros that declare a public item named by their first identifier.
const ITEM_MACROS: &[&str] = &["c_enum", "c_flags", "vector_type"];

/// A top-level module: its name and its files with their `super::` depth to the root.
struct Module {
    name: String,
    files: Vec<(PathBuf, usize)>,
}

fn collect(dir: &Path, depth: usize, out: &mut Vec<(PathBuf, usize)>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            collect(&p, depth + 1, out);
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
}

fn modules(src: &Path) -> Vec<Module> {
    let mut names = BTreeSet::new();
    for e in fs::read_dir(src).unwrap() {
        let p = e.unwrap().path();
        let stem = p.file_stem().unwrap().to_str().unwrap().to_owned();
        if p.is_dir() || (p.extension().is_some_and(|e| e == "rs") && stem != "lib") {
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
            let dir = src.join(&name);
            if dir.is_dir() {
                collect(&dir, 1, &mut files);
            }
            // `m.rs` with `m/x.rs` beside it: x is one below m, as for `m/mod.rs`.
            Module { name, files }
        })
        .collect()
}

/// The module each name re-exported at the crate root comes from.
fn root_exports(src: &Path, modules: &[Module]) -> BTreeMap<String, BTreeSet<String>> {
    let lib = code_of(&fs::read_to_string(src.join("lib.rs")).unwrap());
    let defined: BTreeMap<&str, BTreeSet<String>> = modules
        .iter()
        .map(|m| {
            let names = m
                .files
                .iter()
                .flat_map(|(p, _)| top_level_pub_names(&code_of(&fs::read_to_string(p).unwrap())))
                .collect();
            (m.name.as_str(), names)
        })
        .collect();
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
    out
}

/// Names defined in `lib.rs` itself (the crate root is no module of the graph).
const ROOT_ITEMS: &[&str] = &[
    "sys",
    "init",
    "driver_version",
    "driver_version_raw",
    "prelude",
];

#[test]
fn top_level_modules_form_no_cycle_and_respect_the_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules = modules(&src);
    let names: BTreeSet<&str> = modules.iter().map(|m| m.name.as_str()).collect();
    let exports = root_exports(&src, &modules);

    let mut graph: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut unresolved = Vec::new();
    for m in &modules {
        let deps = graph.entry(m.name.as_str()).or_default();
        for (path, depth) in &m.files {
            let code = code_of(&fs::read_to_string(path).unwrap());
            for name in root_references(&code, *depth) {
                let targets: Vec<&str> = if name == "*" {
                    names.iter().copied().collect()
                } else if let Some(&n) = names.get(name.as_str()) {
                    vec![n]
                } else if let Some(from) = exports.get(&name) {
                    if from.len() > 1 {
                        unresolved.push(format!(
                            "{}: `{name}` is exported by {from:?}",
                            path.display()
                        ));
                    }
                    from.iter()
                        .map(|f| *names.get(f.as_str()).unwrap())
                        .collect()
                } else if ROOT_ITEMS.contains(&name.as_str()) {
                    vec![]
                } else {
                    unresolved.push(format!("{}: crate::{name}", path.display()));
                    vec![]
                };
                deps.extend(targets.into_iter().filter(|&t| t != m.name));
            }
        }
    }
    assert!(
        unresolved.is_empty(),
        "references the layering test cannot resolve (teach it, or name the module):\n{}",
        unresolved.join("\n")
    );

    // Cycles: a depth-first search that reports the first back edge's cycle.
    fn visit<'a>(
        n: &'a str,
        graph: &BTreeMap<&'a str, BTreeSet<&'a str>>,
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
        for &d in graph.get(n).into_iter().flatten() {
            visit(d, graph, stack, done, cycles);
        }
        stack.pop();
        done.insert(n);
    }
    let mut cycles = Vec::new();
    let mut done = BTreeSet::new();
    for &n in graph.keys() {
        visit(n, &graph, &mut Vec::new(), &mut done, &mut cycles);
    }
    let shown: Vec<String> = graph
        .iter()
        .map(|(k, v)| {
            format!(
                "  {k} -> {}",
                v.iter().copied().collect::<Vec<_>>().join(", ")
            )
        })
        .collect();
    assert!(
        cycles.is_empty(),
        "cycles between top-level modules:\n{}\n\nthe graph:\n{}",
        cycles.join("\n"),
        shown.join("\n")
    );

    let mut violations = Vec::new();
    for (from, to) in FORBIDDEN {
        for f in *from {
            for t in *to {
                if graph.get(f).is_some_and(|d| d.contains(t)) {
                    violations.push(format!("{f} -> {t}"));
                }
            }
        }
    }
    assert!(
        violations.is_empty(),
        "lower layers import higher ones:\n{}\n\nthe graph:\n{}",
        violations.join("\n"),
        shown.join("\n")
    );
}

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
