//! Strings for the driver: names and paths as NUL-terminated C strings, and text made
//! NUL-terminated without a copy when it already is.

use std::ffi::{c_char, CString};
use std::path::Path;

use crate::error::{Error, Result};

/// Calls `f` with `s` as a NUL-terminated C string: copied to the stack when short, to the
/// heap otherwise. A string with a NUL byte inside is [`Error::InvalidString`] naming `what`
/// ("kernel name", "global name", ...).
#[inline]
#[track_caller]
pub(crate) fn with_c_str<R>(
    what: &'static str,
    s: &str,
    f: impl FnOnce(*const c_char) -> R,
) -> Result<R> {
    if s.as_bytes().contains(&0) {
        return Err(nul_inside(what, s));
    }
    let mut stack = [0u8; 256];
    if s.len() < stack.len() {
        stack[..s.len()].copy_from_slice(s.as_bytes());
        Ok(f(stack.as_ptr().cast()))
    } else {
        let owned = CString::new(s).map_err(|_| nul_inside(what, s))?;
        Ok(f(owned.as_ptr()))
    }
}

#[cold]
fn nul_inside(what: &'static str, s: &str) -> Error {
    Error::InvalidString {
        what,
        value: s.to_owned(),
        reason: "it contains a NUL byte",
    }
}

/// A path as a NUL-terminated C string: its bytes on Unix, its UTF-8 text elsewhere. A NUL
/// byte inside (or, off Unix, a path that is not UTF-8) is [`Error::InvalidString`].
#[track_caller]
pub(crate) fn path_to_c_string(path: &Path) -> Result<CString> {
    let shown = || path.to_string_lossy().into_owned();
    #[cfg(unix)]
    let bytes = {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str().as_bytes().to_vec()
    };
    #[cfg(not(unix))]
    let bytes = path
        .to_str()
        .ok_or_else(|| Error::InvalidString {
            what: "path",
            value: shown(),
            reason: "it is not valid UTF-8",
        })?
        .as_bytes()
        .to_vec();
    CString::new(bytes).map_err(|_| Error::InvalidString {
        what: "path",
        value: shown(),
        reason: "it contains a NUL byte",
    })
}

/// Calls `f` with `bytes` NUL-terminated, copying them only when the last byte is not NUL
/// (to the stack when short).
pub(crate) fn with_nul_terminated<R>(bytes: &[u8], f: impl FnOnce(*const u8) -> R) -> R {
    if bytes.last() == Some(&0) {
        return f(bytes.as_ptr());
    }
    let mut stack = [0u8; 1024];
    if bytes.len() < stack.len() {
        stack[..bytes.len()].copy_from_slice(bytes);
        f(stack.as_ptr())
    } else {
        let mut owned = Vec::with_capacity(bytes.len() + 1);
        owned.extend_from_slice(bytes);
        owned.push(0);
        f(owned.as_ptr())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn names_become_c_strings() {
        with_c_str("kernel name", "VecAdd", |p| {
            // SAFETY: with_c_str passes a NUL-terminated copy.
            assert_eq!(unsafe { CStr::from_ptr(p) }, c"VecAdd");
        })
        .unwrap();
        let long = "k".repeat(300);
        with_c_str("kernel name", &long, |p| {
            // SAFETY: as above.
            assert_eq!(unsafe { CStr::from_ptr(p) }.to_bytes(), long.as_bytes());
        })
        .unwrap();
        for s in ["a\0b", &format!("{long}\0")] {
            match with_c_str("kernel name", s, |_| ()) {
                Err(Error::InvalidString { what, value, .. }) => {
                    assert_eq!((what, value.as_str()), ("kernel name", s))
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn paths_with_nul_are_invalid_strings() {
        assert_eq!(
            path_to_c_string(Path::new("/tmp/x.ptx"))
                .unwrap()
                .as_bytes(),
            b"/tmp/x.ptx"
        );
        let e = path_to_c_string(Path::new("/tmp/a\0b")).unwrap_err();
        assert!(
            matches!(e, Error::InvalidString { what: "path", .. }),
            "{e:?}"
        );
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            // Not UTF-8, but a valid Unix path: passed as it is.
            let p = Path::new(std::ffi::OsStr::from_bytes(b"/tmp/\xff.ptx"));
            assert_eq!(path_to_c_string(p).unwrap().as_bytes(), b"/tmp/\xff.ptx");
        }
    }

    #[test]
    fn text_is_nul_terminated_without_a_copy_when_it_already_is() {
        let s = b"abc\0";
        with_nul_terminated(s, |p| assert_eq!(p, s.as_ptr()));
        for len in [0usize, 3, 1023, 1024, 5000] {
            let text = vec![b'x'; len];
            with_nul_terminated(&text, |p| {
                assert_ne!(p, text.as_ptr());
                // SAFETY: the callee made a NUL-terminated copy of `text`.
                let c = unsafe { CStr::from_ptr(p.cast()) };
                assert_eq!(c.to_bytes(), &text[..]);
            });
        }
    }
}
