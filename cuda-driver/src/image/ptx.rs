//! PTX text: kernel parameter counts from the `.entry` declarations.
//!
//! A kernel is `[.visible|.weak|.extern] .entry NAME ( .param ..., .param ... )` followed by
//! its performance directives and body; the parameter list may be left out (no
//! parameters). Only an `.entry` that starts a line (after those linking directives) is
//! read, so commented-out lines are skipped; a kernel seen twice with different counts (say,
//! inside a block comment) ends up unknown, never wrong.

use super::CountsBuilder;

/// Adds the parameter count (and layout) of every kernel declared in `text`, the bytes of
/// PTX up to its first NUL. Only the declarations are read (found with a SIMD substring
/// search), each checked as UTF-8 on its own, so a large PTX costs about one pass of
/// `memmem`; if one declaration is not UTF-8, nothing of the image is trusted.
pub(crate) fn param_counts<'a>(text: &'a [u8], out: &mut CountsBuilder<'a>) {
    param_counts_before_nul(&text[..memchr::memchr(0, text).unwrap_or(text.len())], out);
}

/// [`param_counts`] of text known to hold no NUL byte.
pub(crate) fn param_counts_before_nul<'a>(text: &'a [u8], out: &mut CountsBuilder<'a>) {
    debug_assert!(memchr::memchr(0, text).is_none());
    for at in memchr::memmem::find_iter(text, b".entry") {
        let after = at + ".entry".len();
        if !text.get(after).is_some_and(u8::is_ascii_whitespace) {
            continue;
        }
        let line = memchr::memrchr(b'\n', &text[..at]).map_or(0, |i| i + 1);
        let Ok(prefix) = std::str::from_utf8(&text[line..at]) else {
            continue;
        };
        let starts_line = prefix
            .split_ascii_whitespace()
            .all(|t| matches!(t, ".visible" | ".weak" | ".extern"));
        if !starts_line {
            continue;
        }
        // The declaration, up to its body or its end.
        let end = memchr::memchr2(b'{', b';', &text[after..]).map_or(text.len(), |i| after + i + 1);
        let Ok(decl) = std::str::from_utf8(&text[after..end]) else {
            out.poison();
            return;
        };
        let rest = decl.trim_start();
        let name_len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '%')))
            .unwrap_or(rest.len());
        let (name, rest) = rest.split_at(name_len);
        if name.is_empty() {
            continue;
        }
        let rest = skip_blank(rest);
        let (count, layout) = match rest.chars().next() {
            Some('(') => match param_layout(&rest[1..]) {
                Some(layout) => (Some(layout.len() as u32), Some(layout)),
                None => (param_list(&rest[1..]), None),
            },
            // No parameter list: a body, a performance directive, or a declaration.
            Some('{' | '.' | ';') => (Some(0), Some(Box::default())),
            _ => (None, None),
        };
        match layout {
            Some(layout) => out.insert_layout(name, layout),
            None => out.insert(name, count),
        }
    }
}

/// Byte classes of the tokenizer, one table lookup per byte (a `match` per byte compiles to a
/// jump table whose indirect branches dominated the parse).
const WS: u8 = 1;
const DELIM: u8 = 2;
const SLASH: u8 = 4;
static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    // u8::is_ascii_whitespace: space, \t, \n, \x0C, \r.
    t[b' ' as usize] = WS;
    t[b'\t' as usize] = WS;
    t[b'\n' as usize] = WS;
    t[0x0C] = WS;
    t[b'\r' as usize] = WS;
    t[b',' as usize] = DELIM;
    t[b'(' as usize] = DELIM;
    t[b')' as usize] = DELIM;
    t[b'[' as usize] = DELIM;
    t[b']' as usize] = DELIM;
    t[b'/' as usize] = SLASH;
    t
};

#[inline(always)]
fn class(c: u8) -> u8 {
    CLASS[c as usize]
}

/// The next token of a parameter list: one of `,()[]`, or a word up to white space, a
/// comment or one of those; `None` at the end of the text.
fn token(s: &str) -> Option<(&str, &str)> {
    let s = skip_blank(s);
    let b = s.as_bytes();
    let first = *b.first()?;
    let len = if class(first) == DELIM {
        1
    } else {
        // Byte by byte: every byte that ends a word is ASCII, so the cut is at a char
        // boundary; a word starting with a non-ASCII char takes that whole char at least.
        let end = b.iter().position(|&c| class(c) != 0).unwrap_or(b.len());
        if end == 0 || !first.is_ascii() {
            end.max(s.chars().next().map_or(1, char::len_utf8))
        } else {
            end
        }
    };
    Some(s.split_at(len))
}

/// The size in bytes of a parameter's fundamental type.
fn type_size(t: &str) -> Option<u32> {
    Some(match t {
        ".b8" | ".u8" | ".s8" => 1,
        ".b16" | ".u16" | ".s16" | ".f16" | ".bf16" => 2,
        ".b32" | ".u32" | ".s32" | ".f32" | ".f16x2" | ".bf16x2" => 4,
        ".b64" | ".u64" | ".s64" | ".f64" => 8,
        ".b128" => 16,
        _ => return None,
    })
}

/// The `(alignment, size)` of one declaration `.param [.align A] .TYPE [.ptr [.SPACE]
/// [.align P]] NAME[[N]]`: aligned to `A`, else to the type's size; `N` elements of the type.
/// `None` for anything else, so that the driver is asked instead.
fn param_decl(tokens: &[&str]) -> Option<(u32, u32)> {
    let mut t = tokens.iter().copied().peekable();
    if t.next()? != ".param" {
        return None;
    }
    let mut align = None;
    if t.peek() == Some(&".align") {
        t.next();
        align = Some(t.next()?.parse::<u32>().ok()?);
    }
    let elem = type_size(t.next()?)?;
    let mut name = None;
    while let Some(tok) = t.next() {
        match tok {
            ".ptr" | ".global" | ".const" | ".shared" | ".local" => {}
            // The alignment of what a `.ptr` parameter points to, not of the parameter.
            ".align" => {
                t.next()?.parse::<u32>().ok()?;
            }
            _ if !tok.starts_with('.') => {
                name = Some(tok);
                break;
            }
            _ => return None,
        }
    }
    name?;
    let mut count = 1u32;
    if t.peek() == Some(&"[") {
        t.next();
        count = t.next()?.parse::<u32>().ok()?;
        if t.next()? != "]" {
            return None;
        }
    }
    if t.next().is_some() {
        return None;
    }
    let align = align.unwrap_or(elem);
    // Above 16 bytes the driver's offsets depend on where the parameter space begins in the
    // constant bank (measured on an H100: a `.align 128` first parameter sits at offset 112),
    // so such a list is left to the driver.
    if !align.is_power_of_two() || align > 16 {
        return None;
    }
    Some((align, elem.checked_mul(count)?))
}

/// The parameters' `(offset, size)` of a list that starts after its `(`: each parameter at
/// the next multiple of its alignment after the previous one, as the driver lays them out.
fn param_layout(mut s: &str) -> Option<super::Layout> {
    let mut layout = Vec::new();
    // One declaration's tokens: `.param .align A .TYPE .ptr .SPACE .align P NAME [ N ]` is
    // 11 at the most; a longer one is no declaration this reads.
    let mut decl: [&str; 12] = [""; 12];
    let mut n = 0;
    let mut offset = 0u32;
    loop {
        let (tok, rest) = token(s)?;
        s = rest;
        if tok == "," || tok == ")" {
            let (align, size) = param_decl(&decl[..n])?;
            offset = offset.checked_next_multiple_of(align)?;
            layout.push((offset, size));
            offset = offset.checked_add(size)?;
            n = 0;
            if tok == ")" {
                return Some(layout.into_boxed_slice());
            }
        } else {
            *decl.get_mut(n)? = tok;
            n += 1;
        }
    }
}

/// Skips whitespace and comments.
fn skip_blank(mut s: &str) -> &str {
    loop {
        let blank = s.bytes().position(|c| class(c) != WS).unwrap_or(s.len());
        // White space is ASCII, so `blank` is a char boundary.
        s = &s[blank..];
        if let Some(r) = s.strip_prefix("//") {
            s = memchr::memchr(b'\n', r.as_bytes()).map_or("", |i| &r[i..]);
        } else if let Some(r) = s.strip_prefix("/*") {
            s = memchr::memmem::find(r.as_bytes(), b"*/").map_or("", |i| &r[i + 2..]);
        } else {
            return s;
        }
    }
}

/// The number of parameters in a list that starts after its `(`: one `.param` per
/// parameter, separated by commas, up to the closing `)`.
fn param_list(mut s: &str) -> Option<u32> {
    let (mut params, mut commas) = (0u32, 0u32);
    loop {
        s = skip_blank(s);
        let c = s.chars().next()?;
        match c {
            ')' => break,
            ',' => {
                commas += 1;
                s = &s[1..];
            }
            '(' => return None,
            _ => {
                let word_len = s
                    .find(|c: char| c.is_ascii_whitespace() || matches!(c, ',' | ')' | '/' | '('))
                    .unwrap_or(s.len())
                    .max(c.len_utf8());
                if &s[..word_len] == ".param" {
                    params += 1;
                }
                s = &s[word_len..];
            }
        }
    }
    match params {
        0 if commas == 0 => Some(0),
        n if n == commas + 1 => Some(n),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::or_few_under_miri;
    use super::super::CountsBuilder;
    use super::*;
    use proptest::prelude::*;

    fn counts(text: &str) -> Vec<(String, u32)> {
        let mut out = CountsBuilder::default();
        param_counts(text.as_bytes(), &mut out);
        out.build().map(|c| c.entries()).unwrap_or_default()
    }

    #[test]
    fn entries_with_and_without_parameters() {
        let ptx = r#"
//
// Generated by NVIDIA NVVM Compiler
.version 8.0
.target sm_75
.address_size 64

	// .globl	saxpy
.global .align 4 .u32 dev_counter;

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
.visible .entry increment_counter()
{
	ret;
}
.entry plain (.param .align 16 .b8 plain_param_0[32], // a struct
              .param .u32 plain_param_1 /* n */)
{ ret; }
.weak .entry no_list
{ ret; }
.visible .entry _Z6kernelPfi(.param .u64 _Z6kernelPfi_param_0, .param .u32 _Z6kernelPfi_param_1) { ret; }
.func helper(.param .u32 a) { ret; }
"#;
        assert_eq!(
            counts(ptx),
            [
                ("_Z6kernelPfi".into(), 2),
                ("increment_counter".into(), 0),
                ("no_list".into(), 0),
                ("plain".into(), 2),
                ("saxpy".into(), 4),
            ]
        );
    }

    #[test]
    fn comments_and_disagreements_are_not_trusted() {
        // A commented-out line is not read.
        assert_eq!(counts("// .entry k(.param .u32 a)\n"), []);
        // A kernel seen twice with different counts is unknown.
        let ptx = "/*\n.entry k(.param .u32 a)\n*/\n.entry k(.param .u32 a, .param .u32 b)\n{}";
        assert_eq!(counts(ptx), []);
        // The same count twice is fine (a declaration and a definition).
        let ptx = ".extern .entry k(.param .u32 a);\n.entry k(.param .u32 a)\n{}";
        assert_eq!(counts(ptx), [("k".into(), 1)]);
        // Malformed lists are unknown.
        assert_eq!(counts(".entry k(.param .u32 a,, .param .u32 b)\n{}"), []);
        assert_eq!(counts(".entry k(.param .u32 a"), []);
        assert_eq!(counts(".entry k(.param .u32 a (b))"), []);
        // `.entry` inside another word or mid-line.
        assert_eq!(counts(".entryx k()\n add .entry k(.param .u32 a)"), []);
    }

    fn layouts(text: &str) -> Vec<(String, Vec<(u32, u32)>)> {
        let mut b = CountsBuilder::default();
        param_counts(text.as_bytes(), &mut b);
        let counts = b.build().unwrap();
        counts
            .entries()
            .into_iter()
            .filter_map(|(n, _)| {
                let l = counts.layout(&n)?.to_vec();
                Some((n, l))
            })
            .collect()
    }

    #[test]
    fn layouts_align_each_parameter_as_declared() {
        let text = include_str!("../../tests/ptx/param_buffer.ptx");
        // int, float4 (.align 16), char, float, pointer, float2 (.align 8).
        assert_eq!(
            layouts(text),
            [(
                "param_buffer".to_string(),
                vec![(0, 4), (16, 16), (32, 1), (36, 4), (40, 8), (48, 8)]
            )]
        );
        // A parameter aligned to more than 16 bytes: the layout is the driver's to tell.
        let text = include_str!("../../tests/ptx/tma_kernels.ptx");
        assert_eq!(layouts(text), []);
        let text = ".visible .entry k(\n.param .u64 .ptr .global .align 4 a, // x\n\
                    .param .u8 b, /* y */ .param .align 8 .b8 c[12], .param .f64 d\n) {}";
        assert_eq!(
            layouts(text),
            [("k".to_string(), vec![(0, 8), (8, 1), (16, 12), (32, 8)])]
        );
        assert_eq!(layouts(".entry e {}"), [("e".to_string(), vec![])]);
    }

    #[test]
    fn declarations_it_cannot_read_leave_the_layout_unknown() {
        for text in [
            ".entry k(.param .pred p) {}",
            ".entry k(.param .align 3 .b8 p[4]) {}",
            ".entry k(.param .u32 p[x]) {}",
            ".entry k(.param .u32 .weird p) {}",
            ".entry k(.param .u32 p q) {}",
        ] {
            let mut b = CountsBuilder::default();
            param_counts(text.as_bytes(), &mut b);
            let counts = b.build();
            assert!(
                counts.as_ref().is_none_or(|c| c.layout("k").is_none()),
                "{text}"
            );
        }
        // Two declarations that disagree: no layout, though the count agrees.
        let text = ".entry k(.param .u32 a) ;\n.entry k(.param .u64 a) {}";
        let mut b = CountsBuilder::default();
        param_counts(text.as_bytes(), &mut b);
        let c = b.build().unwrap();
        assert_eq!(c.get("k"), Some(1));
        assert_eq!(c.layout("k"), None);
    }

    #[test]
    fn the_repository_kernels_count_as_their_c_signatures() {
        let all = [
            include_str!("../../tests/ptx/test_kernels.ptx"),
            include_str!("../../tests/ptx/library.ptx"),
            include_str!("../../tests/ptx/link_main.ptx"),
            include_str!("../../tests/ptx/param_buffer.ptx"),
            include_str!("../../tests/ptx/bench.ptx"),
            include_str!("../../tests/ptx/cluster.ptx"),
            include_str!("../../tests/ptx/streams.ptx"),
            include_str!("../../tests/ptx/vector_add.ptx"),
        ]
        .concat();
        let expected = [
            ("VecAdd", 4),
            ("add4", 4),
            ("add_u32", 3),
            ("args1", 1),
            ("cluster_info", 1),
            ("empty", 0),
            ("fill_u32", 3),
            ("grid_sync_sum", 4),
            ("increment_counter", 0),
            ("myKernel", 2),
            ("param_buffer", 6),
            ("read_globals", 1),
            ("saxpy", 4),
            ("scale_add", 4),
            ("sleep_ns", 1),
            ("spin_ns", 1),
            ("struct_param", 2),
            ("use_dyn_shared", 2),
            ("vector_types", 5),
        ];
        let expected: Vec<(String, u32)> =
            expected.iter().map(|&(n, c)| (n.to_string(), c)).collect();
        assert_eq!(counts(&all), expected);
    }

    proptest! {
        #![proptest_config(or_few_under_miri(ProptestConfig::default()))]

        #[test]
        fn any_text_parses_without_panicking(s in "\\PC{0,200}") {
            let _ = counts(&s);
            let _ = counts(&format!(".entry k({s}"));
            let _ = counts(&format!(".visible .entry {s}"));
        }

        #[test]
        fn generated_lists_count_their_parameters(
            n in 0usize..40,
            types in proptest::collection::vec(proptest::sample::select(&[
                ".u32", ".u64 .ptr .global .align 8", ".align 16 .b8", ".f64",
            ][..]), 40),
        ) {
            let list: Vec<String> = (0..n)
                .map(|i| format!(".param {} k_param_{i}", types[i]))
                .collect();
            let text = format!(".visible .entry k(\n\t{}\n)\n{{\n}}\n", list.join(",\n\t"));
            prop_assert_eq!(counts(&text), [("k".to_string(), n as u32)]);
        }
    }
}
