//! C strings for the libraries' `const char*` parameters: a NUL byte inside is an error
//! naming the string, never a truncation.

use std::ffi::CString;

use crate::error::{Error, Result};

/// `bytes` as a C string, or [`Error::InteriorNul`] naming `what` and the first NUL's offset.
pub(crate) fn c_string(bytes: Vec<u8>, what: impl FnOnce() -> String) -> Result<CString> {
    CString::new(bytes).map_err(|e| Error::InteriorNul {
        offset: e.nul_position(),
        what: what(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nul_byte_is_an_error_with_its_offset() {
        assert_eq!(
            c_string(b"abc".to_vec(), || "x".into()).unwrap().as_bytes(),
            b"abc"
        );
        let e = c_string(b"ab\0c".to_vec(), || "source of program `p`".into()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the source of program `p` holds a NUL byte at offset 2, where its C string would end"
        );
    }
}
