//! What bindgen does not tell about cuda.h: its doxygen groups (`\defgroup CUDA_MEM Memory
//! Management` ... `@{` ... `@}`), where each function and type is declared, which typedefs
//! are enums, and the doc comments of `#define`s.

use std::collections::BTreeMap;

/// cuda.h, scanned once.
pub struct Header {
    /// `(start, end, group id)`: the byte ranges between a group's `@{` and its `@}`.
    groups: Vec<(usize, usize, String)>,
    /// Every function declared with `CUDAAPI` (and the `static inline` ones), at its first
    /// declaration inside a group, else its first declaration.
    functions: BTreeMap<String, usize>,
    /// Every typedef name, at its first declaration inside a group, else its first.
    typedefs: BTreeMap<String, usize>,
    /// The names of the `typedef enum { .. } NAME;` typedefs.
    pub enums: Vec<String>,
    /// The doc comment of each `#define`: the `/** .. */` just above it, or a `/**< .. */`
    /// after it on its line; whitespace collapsed to one line.
    pub define_docs: BTreeMap<String, String>,
}

impl Header {
    pub fn parse(src: &str) -> Result<Header, String> {
        let groups = groups(src)?;
        let code = strip_comments(src);
        let in_group = |at: usize| groups.iter().any(|(s, e, _)| (*s..*e).contains(&at));
        let mut functions: BTreeMap<String, usize> = BTreeMap::new();
        let mut typedefs: BTreeMap<String, usize> = BTreeMap::new();
        let keep_first_in_group =
            |map: &mut BTreeMap<String, usize>, name: &str, at: usize| match map.get(name) {
                Some(&old) if in_group(old) || !in_group(at) => {}
                _ => {
                    map.insert(name.to_string(), at);
                }
            };
        let func =
            regex::Regex::new(r"\b(?:CUDAAPI|static\s+inline\s+CUresult)\s+(\w+)\s*\(").unwrap();
        for c in func.captures_iter(&code) {
            let m = c.get(1).unwrap();
            keep_first_in_group(&mut functions, m.as_str(), m.start());
        }
        let mut enums = Vec::new();
        let typedef = regex::Regex::new(r"\btypedef\b").unwrap();
        for m in typedef.find_iter(&code) {
            let (names, is_enum) = typedef_names(&code[m.end()..])
                .ok_or_else(|| format!("cuda.h: cannot read the typedef at byte {}", m.start()))?;
            for n in &names {
                keep_first_in_group(&mut typedefs, n, m.start());
            }
            if is_enum {
                let [name] = names.as_slice() else {
                    return Err(format!("cuda.h: an enum typedef declares {names:?}"));
                };
                if !enums.contains(name) {
                    enums.push(name.clone());
                }
            }
        }
        Ok(Header {
            groups,
            functions,
            typedefs,
            enums,
            define_docs: define_docs(src),
        })
    }

    fn group_at(&self, at: usize) -> Option<&str> {
        self.groups
            .iter()
            .find(|(s, e, _)| (*s..*e).contains(&at))
            .map(|(_, _, g)| g.as_str())
    }

    /// The group whose page documents a function.
    pub fn function_group(&self, name: &str) -> Option<&str> {
        self.group_at(*self.functions.get(name)?)
    }

    /// Every typedef declared inside a group, with the group.
    pub fn grouped_types(&self) -> impl Iterator<Item = (&str, &str)> {
        self.typedefs
            .iter()
            .filter_map(|(n, at)| Some((n.as_str(), self.group_at(*at)?)))
    }
}

/// The ranges of the doxygen groups: `\defgroup ID Title`, then `@{` ... `@}`. cuda.h's groups
/// do not nest.
fn groups(src: &str) -> Result<Vec<(usize, usize, String)>, String> {
    let defgroup = regex::Regex::new(r"\\defgroup\s+(\w+)").unwrap();
    let mut out = Vec::new();
    for c in defgroup.captures_iter(src) {
        let id = c[1].to_string();
        let after = c.get(0).unwrap().end();
        let open = src[after..]
            .find("@{")
            .map(|i| after + i + 2)
            .ok_or_else(|| format!("cuda.h: group {id} has no @{{"))?;
        let close = src[open..]
            .find("@}")
            .map(|i| open + i)
            .ok_or_else(|| format!("cuda.h: group {id} has no @}}"))?;
        if let Some(next) = defgroup.find_at(src, after) {
            if next.start() < close {
                return Err(format!("cuda.h: group {id} contains another group"));
            }
        }
        out.push((open, close, id));
    }
    if out.is_empty() {
        return Err("cuda.h has no \\defgroup".into());
    }
    Ok(out)
}

/// The source with every comment replaced by spaces (newlines kept), so byte offsets stay.
fn strip_comments(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"/*") {
            let end = src[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
            for c in &mut out[i..end] {
                if *c != b'\n' {
                    *c = b' ';
                }
            }
            i = end;
        } else if b[i..].starts_with(b"//") {
            let end = src[i..].find('\n').map_or(b.len(), |e| i + e);
            for c in &mut out[i..end] {
                *c = b' ';
            }
            i = end;
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else {
            i += 1;
        }
    }
    // Each comment became spaces as a whole, so every character outside them is intact.
    String::from_utf8(out).expect("comments start and end at ASCII characters")
}

/// The names a typedef declares (the text after `typedef`, without comments) and whether it is
/// an enum: `struct X { .. } A, *B;` -> `[A, B]`, `void (CUDA_CB *F)(..);` -> `[F]`.
fn typedef_names(rest: &str) -> Option<(Vec<String>, bool)> {
    let is_enum = rest.trim_start().starts_with("enum")
        && rest.trim_start()["enum".len()..]
            .starts_with(|c: char| !c.is_alphanumeric() && c != '_');
    let mut depth = 0usize;
    let mut end = None;
    let mut last_close = None;
    for (i, c) in rest.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    last_close = Some(i);
                }
            }
            ';' if depth == 0 => {
                end = Some(i);
                break;
            }
            _ => {}
        }
    }
    let stmt = &rest[..end?];
    let ident = regex::Regex::new(r"[A-Za-z_]\w*").unwrap();
    if let Some(c) = regex::Regex::new(r"\(\s*(?:CUDA_CB\s*)?\*\s*(\w+)\s*\)\s*\(")
        .unwrap()
        .captures(stmt)
    {
        if last_close.is_none() {
            return Some((vec![c[1].to_string()], false));
        }
    }
    let declarators = match last_close {
        Some(i) => &stmt[i + 1..],
        None => stmt,
    };
    let mut names = Vec::new();
    for d in declarators.split(',') {
        // The declarator's name is its last identifier (`*PFOO`, `CUfoo`, `CUarr[4]` -> `CUarr`).
        let d = d.split('[').next().unwrap_or(d);
        if let Some(m) = ident.find_iter(d).last() {
            names.push(m.as_str().to_string());
        }
    }
    if names.is_empty() {
        return None;
    }
    Some((names, is_enum))
}

/// The doc comments of the `#define`s (see [`Header::define_docs`]).
fn define_docs(src: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let above = regex::Regex::new(r"/\*\*((?:[^*]|\*+[^*/])*)\*+/\s*#define\s+(\w+)").unwrap();
    for c in above.captures_iter(src) {
        out.insert(c[2].to_string(), one_line(&c[1]));
    }
    let after =
        regex::Regex::new(r"(?m)^#define\s+(\w+)[^\n]*?/\*\*<((?:[^*]|\*+[^*/])*)\*+/").unwrap();
    for c in after.captures_iter(src) {
        out.insert(c[1].to_string(), one_line(&c[2]));
    }
    out
}

/// A comment's text on one line: the leading `*` of each line and runs of whitespace go.
pub fn one_line(comment: &str) -> String {
    comment
        .lines()
        .map(|l| l.trim().trim_start_matches('*'))
        .collect::<Vec<_>>()
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = "\
/**
 * \\defgroup CUDA_TYPES Data types
 * @{
 */
typedef struct CUctx_st *CUcontext; /**< A context */
typedef enum CUfoo_enum {
    CU_FOO_A = 1, /**< a */
} CUfoo;
typedef void (CUDA_CB *CUhostFn)(void *userData);
typedef struct CUbar_st { int x; } CUbar_v1, *PCUbar;
/**
 * A flag
 * for things.
 */
#define CU_THING_A 0x01
#define CU_THING_B 0x02 /**< B. */
/** @} */
/**
 * \\defgroup CUDA_MEM Memory Management
 * @{
 */
CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr, size_t bytesize);
/** @} */
CUresult CUDAAPI cuMemAlloc_v1(unsigned int *dptr, unsigned int bytesize);
";

    #[test]
    fn reads_groups_typedefs_enums_and_define_docs() {
        let h = Header::parse(SRC).unwrap();
        assert_eq!(h.function_group("cuMemAlloc"), Some("CUDA_MEM"));
        assert_eq!(h.function_group("cuMemAlloc_v1"), None);
        let types: Vec<_> = h.grouped_types().collect();
        for name in ["CUcontext", "CUfoo", "CUhostFn", "CUbar_v1", "PCUbar"] {
            assert!(types.contains(&(name, "CUDA_TYPES")), "{name}: {types:?}");
        }
        assert_eq!(h.enums, ["CUfoo"]);
        assert_eq!(h.define_docs["CU_THING_A"], "A flag for things.");
        assert_eq!(h.define_docs["CU_THING_B"], "B.");
    }
}
