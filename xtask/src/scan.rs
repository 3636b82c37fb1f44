//! A small scanner of Rust sources for the checks that read `cuda-driver/src` when xtask runs
//! (`check-layers`, `check-homes`): comments, string and char literals and `#[cfg(test)]`
//! items blanked out, line breaks kept (so an offset in the result still gives the line), and
//! the identifiers and paths of what is left.

use std::fs;
use std::path::{Path, PathBuf};

/// A source file with comments, literals and test-only items blanked out; every line break
/// stays where it was.
pub fn code_of(text: &str) -> String {
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
            let start = i;
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
            push_line_breaks(&mut out, &text[start..i]);
        } else if let Some(end) = raw_string_end(b, i) {
            out.push_str("\"\"");
            push_line_breaks(&mut out, &text[i..end]);
            i = end;
        } else if b[i] == b'"' {
            let start = i;
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(b.len());
            out.push_str("\"\"");
            push_line_breaks(&mut out, &text[start..i]);
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

fn push_line_breaks(out: &mut String, blanked: &str) {
    out.extend(blanked.chars().filter(|&c| c == '\n'));
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

/// Removes every item that follows `#[cfg(test)]` (a `mod tests { .. }`, a `use`, a `fn`),
/// keeping its line breaks.
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
                    depth = depth.saturating_sub(1);
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
        let end = i.min(out.len());
        let breaks: String = out[at..end].chars().filter(|&c| c == '\n').collect();
        out.replace_range(at..end, &format!(" {breaks}"));
    }
    out
}

/// The 1-based line of byte `offset` in `code`.
pub fn line_of(code: &str, offset: usize) -> usize {
    code.as_bytes()[..offset.min(code.len())]
        .iter()
        .filter(|&&c| c == b'\n')
        .count()
        + 1
}

pub fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The identifier starting at `i` (after whitespace), and the index after it.
pub fn ident_at(b: &[u8], mut i: usize) -> Option<(&str, usize)> {
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
pub fn skip_path_sep(b: &[u8], mut i: usize) -> (bool, usize) {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    if b[i.min(b.len())..].starts_with(b"::") {
        i += 2;
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        (true, i)
    } else {
        (false, i)
    }
}

/// The first segments named by the path that continues at `i` (just after `crate::`): one
/// name, or every first segment of a `{ .. }` group; `*` for a glob.
pub fn first_segments(b: &[u8], i: usize) -> Vec<String> {
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

/// Every `.rs` file under `dir`, sorted.
pub fn rust_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    collect(dir, &mut out)?;
    out.sort();
    Ok(out)
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries = fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for e in entries {
        let p = e.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        if p.is_dir() {
            collect(&p, out)?;
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
    Ok(())
}

/// The text of `path`, or an error naming it.
pub fn read(path: &Path) -> Result<String, String> {
    fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blanking_keeps_every_line_break() {
        let text = "a /* one\ntwo */ b\n\"x\ny\" c r#\"p\nq\"# d\n#[cfg(test)]\nmod t {\n}\ne";
        let code = code_of(text);
        assert_eq!(code.lines().count(), text.lines().count(), "{code:?}");
        let at = code.find('e').unwrap();
        assert_eq!(line_of(&code, at), 9);
        assert!(!code.contains("one") && !code.contains('x') && !code.contains('p'));
        assert!(!code.contains("mod t"));
    }

    #[test]
    fn an_unterminated_string_does_not_run_past_the_end() {
        assert_eq!(code_of("let s = \"abc"), "let s = \"\"");
        assert_eq!(code_of("let s = \"ab\\"), "let s = \"\"");
    }
}
