//! What the compiler and the linker produce: [`Ptx`], [`Cubin`] and [`LtoIr`].
//!
//! [`Ptx`] and [`Cubin`] are [`ModuleImage`]s: they load with `cuda_driver`'s
//! [`Module::load_data`](cuda_driver::Module::load_data) and
//! [`Library::load_data`](cuda_driver::Library::load_data) as they are (PTX NUL-terminated, so
//! the driver reads it without a copy; a CUBIN is the ELF image NVRTC or nvJitLink wrote).
//! The loaders check every image before the driver sees it. [`LtoIr`] is NVVM IR for the
//! [`Linker`](crate::Linker), which the driver does not load.

use std::fmt;

use cuda_driver::module::ModuleImage;

/// PTX text, as NVRTC or nvJitLink wrote it, NUL-terminated.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Ptx {
    /// The text and one NUL byte after it.
    text: String,
}

impl Ptx {
    /// PTX from text (a NUL byte is appended; text with a NUL byte inside is cut there, as the
    /// driver would read it).
    pub fn from_text(text: &str) -> Ptx {
        let end = text.find('\0').unwrap_or(text.len());
        let mut t = String::with_capacity(end + 1);
        t.push_str(&text[..end]);
        t.push('\0');
        Ptx { text: t }
    }

    /// From the bytes NVRTC or nvJitLink wrote (NUL-terminated, or not); `None` when they are
    /// not UTF-8 (PTX is ASCII).
    pub(crate) fn from_nul_terminated(mut bytes: Vec<u8>) -> Option<Ptx> {
        if let Some(end) = bytes.iter().position(|&b| b == 0) {
            bytes.truncate(end);
        }
        bytes.push(0);
        String::from_utf8(bytes).ok().map(|text| Ptx { text })
    }

    /// The text, without the NUL byte.
    pub fn as_str(&self) -> &str {
        &self.text[..self.text.len() - 1]
    }

    /// The text and its NUL byte.
    pub fn as_bytes_with_nul(&self) -> &[u8] {
        self.text.as_bytes()
    }
}

impl ModuleImage for Ptx {
    fn image_bytes(&self) -> &[u8] {
        self.text.as_bytes()
    }
}

impl fmt::Debug for Ptx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Ptx({} bytes)", self.as_str().len())
    }
}

impl fmt::Display for Ptx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

macro_rules! binary {
    ($(#[$m:meta])* $name:ident, $what:literal) => {
        $(#[$m])*
        #[derive(Clone, PartialEq, Eq, Hash)]
        pub struct $name {
            bytes: Vec<u8>,
        }

        impl $name {
            #[doc = concat!("A ", $what, " from its bytes (say, read from a file).")]
            pub fn from_bytes(bytes: Vec<u8>) -> $name {
                $name { bytes }
            }

            /// The bytes.
            pub fn as_bytes(&self) -> &[u8] {
                &self.bytes
            }

            /// The bytes, owned.
            pub fn into_bytes(self) -> Vec<u8> {
                self.bytes
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($name), "({} bytes)"), self.bytes.len())
            }
        }
    };
}

binary!(
    /// A CUBIN: machine code for one GPU architecture, an ELF image.
    Cubin,
    "CUBIN"
);

binary!(
    /// LTO-IR: NVVM IR that [`Linker`](crate::Linker) links with link-time optimisation
    /// (compiled with [`Options::lto`](crate::Options::lto)). The driver does not load it.
    LtoIr,
    "LTO-IR"
);

impl ModuleImage for Cubin {
    fn image_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptx_is_nul_terminated_once_and_cut_at_a_nul() {
        let p = Ptx::from_text(".version 9.0");
        assert_eq!(p.as_str(), ".version 9.0");
        assert_eq!(p.image_bytes(), b".version 9.0\0");
        assert_eq!(Ptx::from_text("a\0b").as_bytes_with_nul(), b"a\0");
        let q = Ptx::from_nul_terminated(b"x\0\0".to_vec()).unwrap();
        assert_eq!(q.image_bytes(), b"x\0");
        assert!(Ptx::from_nul_terminated(vec![0xff, 0]).is_none());
        assert_eq!(Ptx::from_nul_terminated(Vec::new()).unwrap().as_str(), "");
    }
}
