//! PTX text: the `.entry` declarations and their parameter lists.
//!
//! A kernel is `[.visible|.weak|.extern] .entry NAME ( .param ..., .param ... )` followed by
//! its performance directives and body; the list may be left out (no parameters). Only an
//! `.entry` that starts a line (after those linking directives) is read, so commented-out
//! lines are skipped. A parameter is
//! `.param [.align A] .TYPE [.ptr [.SPACE] [.align A]] NAME[\[N\]]`.

use crate::Error;

/// One `.entry` of a PTX module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PtxEntry {
    /// The entry name: a C++ kernel's mangled name, an `extern "C"` kernel's own.
    pub name: String,
    /// The parameters, in order.
    pub params: Vec<PtxParam>,
}

/// One kernel parameter as PTX declares it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PtxParam {
    /// The PTX type without its dot: `u32`, `f32`, `b8`, ...
    pub ty: String,
    /// The `.align` of the parameter, if declared.
    pub align: Option<u32>,
    /// The element count of an array parameter (`name[N]`), as for a struct passed by value.
    pub array: Option<u32>,
    /// Whether the parameter carries `.ptr` (a pointer into a state space).
    pub ptr: bool,
}

impl PtxParam {
    /// The size of one element of [`ty`](Self::ty) in bytes, if it is a PTX data type.
    pub fn elem_size(&self) -> Option<u32> {
        let bits: u32 = self.ty.get(1..)?.parse().ok()?;
        match (self.ty.as_bytes()[0], bits) {
            (b'u' | b's' | b'b', 8 | 16 | 32 | 64) | (b'f', 16 | 32 | 64) => Some(bits / 8),
            _ => None,
        }
    }

    /// The parameter's size in bytes.
    pub fn size(&self) -> Option<u32> {
        self.elem_size()?.checked_mul(self.array.unwrap_or(1))
    }

    /// The parameter's alignment in bytes: the declared `.align` (unless it belongs to a
    /// `.ptr`, where it is the pointee's), or the element size.
    pub fn alignment(&self) -> Option<u32> {
        match (self.ptr, self.align) {
            (false, Some(a)) => Some(a),
            _ => self.elem_size(),
        }
    }
}

/// Every `.entry` declared in `text`, in order.
pub fn entries(text: &str) -> Result<Vec<PtxEntry>, Error> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices(".entry") {
        let after = at + ".entry".len();
        if !text[after..].starts_with(|c: char| c.is_ascii_whitespace()) {
            continue;
        }
        let line = text[..at].rfind('\n').map_or(0, |i| i + 1);
        let starts_line = text[line..at]
            .split_ascii_whitespace()
            .all(|t| matches!(t, ".visible" | ".weak" | ".extern"));
        if !starts_line {
            continue;
        }
        let rest = text[after..].trim_start();
        let name_len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '%')))
            .unwrap_or(rest.len());
        let (name, rest) = rest.split_at(name_len);
        if name.is_empty() {
            continue;
        }
        let rest = skip_blank(rest);
        let params = match rest.chars().next() {
            Some('(') => {
                let close = rest.find(')').ok_or_else(|| Error::Ptx {
                    kernel: name.to_string(),
                    detail: "unterminated parameter list".into(),
                })?;
                param_list(&rest[1..close]).map_err(|detail| Error::Ptx {
                    kernel: name.to_string(),
                    detail,
                })?
            }
            _ => Vec::new(),
        };
        if out.iter().any(|e: &PtxEntry| e.name == name) {
            continue;
        }
        out.push(PtxEntry {
            name: name.to_string(),
            params,
        });
    }
    Ok(out)
}

/// Skips whitespace and comments.
fn skip_blank(mut s: &str) -> &str {
    loop {
        s = s.trim_start();
        if let Some(r) = s.strip_prefix("//") {
            s = r.find('\n').map_or("", |i| &r[i..]);
        } else if let Some(r) = s.strip_prefix("/*") {
            s = r.find("*/").map_or("", |i| &r[i + 2..]);
        } else {
            return s;
        }
    }
}

/// Removes comments from a parameter list.
fn strip_comments(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut s = s;
    while !s.is_empty() {
        let next = [s.find("//"), s.find("/*")].into_iter().flatten().min();
        match next {
            None => {
                out.push_str(s);
                break;
            }
            Some(i) => {
                out.push_str(&s[..i]);
                out.push(' ');
                s = skip_blank(&s[i..]);
            }
        }
    }
    out
}

/// The parameters between the parentheses of a list.
fn param_list(s: &str) -> Result<Vec<PtxParam>, String> {
    let s = strip_comments(s);
    if s.trim().is_empty() {
        return Ok(Vec::new());
    }
    s.split(',').map(param).collect()
}

fn param(decl: &str) -> Result<PtxParam, String> {
    let mut words = decl.split_ascii_whitespace().peekable();
    if words.next() != Some(".param") {
        return Err(format!("`{}` is not a .param", decl.trim()));
    }
    let (mut ty, mut align, mut ptr) = (None, None, false);
    let mut name = None;
    while let Some(w) = words.next() {
        match w {
            ".align" => {
                let a = words
                    .next()
                    .and_then(|a| a.parse::<u32>().ok())
                    .ok_or_else(|| format!("`{}`: .align without a number", decl.trim()))?;
                align = Some(a);
            }
            ".ptr" => ptr = true,
            ".global" | ".const" | ".local" | ".shared" => {}
            w if w.starts_with('.') && ty.is_none() => ty = Some(w[1..].to_string()),
            w if !w.starts_with('.') => {
                name = Some(w.to_string());
                break;
            }
            w => return Err(format!("`{}`: unexpected `{w}`", decl.trim())),
        }
    }
    let ty = ty.ok_or_else(|| format!("`{}` has no type", decl.trim()))?;
    let mut name = name.ok_or_else(|| format!("`{}` has no name", decl.trim()))?;
    for w in words {
        name.push_str(w);
    }
    let array = match name.split_once('[') {
        None => None,
        Some((_, n)) => Some(
            n.trim_end_matches(']')
                .trim()
                .parse::<u32>()
                .map_err(|_| format!("`{}`: bad array length", decl.trim()))?,
        ),
    };
    let p = PtxParam {
        ty,
        align,
        array,
        ptr,
    };
    if p.elem_size().is_none() {
        return Err(format!("`{}`: unknown type .{}", decl.trim(), p.ty));
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const PTX: &str = r#"
.version 8.0
.target sm_75
.address_size 64

	// .globl	saxpy
.visible .entry saxpy(
	.param .f32 saxpy_param_0,
	.param .u64 .ptr .global .align 4 saxpy_param_1,
	.param .u64 saxpy_param_2,
	.param .u32 saxpy_param_3
)
.maxntid 256, 1, 1
{
	ret;
}
.visible .entry none()
{
	ret;
}
// .visible .entry commented(.param .u32 x)
.entry plain (.param .align 16 .b8 plain_param_0[32], // a struct
              .param .u32 plain_param_1 /* n */)
{
}
.visible .entry bare
{
}
"#;

    #[test]
    fn entries_and_parameters() {
        let e = entries(PTX).unwrap();
        let names: Vec<_> = e.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["saxpy", "none", "plain", "bare"]);
        let s = &e[0].params;
        assert_eq!(s.len(), 4);
        assert_eq!((s[0].ty.as_str(), s[0].size()), ("f32", Some(4)));
        assert!(s[1].ptr);
        assert_eq!((s[1].size(), s[1].alignment()), (Some(8), Some(8)));
        assert_eq!((s[3].ty.as_str(), s[3].size()), ("u32", Some(4)));
        assert!(e[1].params.is_empty() && e[3].params.is_empty());
        let p = &e[2].params;
        assert_eq!(
            p[0],
            PtxParam {
                ty: "b8".into(),
                align: Some(16),
                array: Some(32),
                ptr: false
            }
        );
        assert_eq!((p[0].size(), p[0].alignment()), (Some(32), Some(16)));
        assert_eq!(p[1].size(), Some(4));
    }

    #[test]
    fn malformed_parameters_name_the_kernel() {
        let err = entries(".entry k(.param .q32 x)").unwrap_err();
        assert!(err.to_string().contains("`k`"), "{err}");
        assert!(entries(".entry k(.param .u32 x").is_err());
    }

    fn ty() -> impl Strategy<Value = (&'static str, u32)> {
        prop::sample::select(vec![
            ("u8", 1),
            ("s16", 2),
            ("u32", 4),
            ("s32", 4),
            ("f32", 4),
            ("u64", 8),
            ("f64", 8),
            ("b32", 4),
        ])
    }

    proptest! {
        #[test]
        fn generated_lists_parse_back(
            params in prop::collection::vec((ty(), prop::option::of(0u32..5), 1u32..64), 0..12),
            comments in any::<bool>(),
        ) {
            let mut decl = String::new();
            for (i, ((t, _), align, len)) in params.iter().enumerate() {
                if i > 0 {
                    decl.push_str(if comments { ", // next\n" } else { ",\n" });
                }
                match align {
                    Some(a) => decl.push_str(&format!(
                        "\t.param .align {} .b8 k_param_{i}[{len}]", 1 << a
                    )),
                    None => decl.push_str(&format!("\t.param .{t} k_param_{i}")),
                }
            }
            let text = format!(".visible .entry k(\n{decl}\n)\n{{\n}}\n");
            let e = entries(&text).unwrap();
            prop_assert_eq!(e.len(), 1);
            prop_assert_eq!(e[0].params.len(), params.len());
            for (p, ((t, size), align, len)) in e[0].params.iter().zip(&params) {
                match align {
                    Some(a) => {
                        prop_assert_eq!(p.size(), Some(*len));
                        prop_assert_eq!(p.alignment(), Some(1 << a));
                    }
                    None => {
                        prop_assert_eq!(p.ty.as_str(), *t);
                        prop_assert_eq!(p.size(), Some(*size));
                    }
                }
            }
        }
    }
}
