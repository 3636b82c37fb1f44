//! What the compiler and the linker produce: [`Ptx`], [`Cubin`] and [`LtoIr`], and
//! [`Compiled`], one compilation's outputs with its log and lowered names.
//!
//! [`Ptx`] and [`Cubin`] are [`ModuleImage`]s: they load with `cuda_driver`'s
//! [`Module::load_data`](cuda_driver::Module::load_data) and
//! [`Library::load_data`](cuda_driver::Library::load_data) as they are (PTX NUL-terminated, so
//! the driver reads it without a copy; a CUBIN is the ELF image NVRTC or nvJitLink wrote).
//! The loaders check every image before the driver sees it. [`LtoIr`] is NVVM IR for the
//! [`Linker`](crate::Linker), which the driver does not load.

use std::fmt;

use cuda_driver::context::Context;
use cuda_driver::library::Library;
use cuda_driver::module::{Module, ModuleImage};

use crate::arch::Arch;
use crate::error::{Error, Result};
use crate::target::Target;

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

/// What one compilation produced: its outputs, its log, its lowered names.
#[derive(Clone)]
pub struct Compiled {
    pub(crate) name: String,
    pub(crate) arch: Option<Arch>,
    pub(crate) target: Option<Target>,
    pub(crate) ptx: Option<Ptx>,
    pub(crate) cubin: Option<Cubin>,
    pub(crate) lto_ir: Option<LtoIr>,
    pub(crate) log: String,
    pub(crate) lowered: Vec<(String, String)>,
    pub(crate) from_cache: bool,
}

impl fmt::Debug for Compiled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Compiled")
            .field("name", &self.name)
            .field("arch", &self.arch)
            .field("ptx", &self.ptx)
            .field("cubin", &self.cubin)
            .field("lto_ir", &self.lto_ir)
            .field("log", &self.log)
            .field("lowered", &self.lowered)
            .field("from_cache", &self.from_cache)
            .finish()
    }
}

impl Compiled {
    /// The PTX (absent with [`Options::lto`](crate::options::Options::lto)).
    pub fn ptx(&self) -> Result<&Ptx> {
        self.ptx.as_ref().ok_or_else(|| Error::NoOutput {
            name: self.name.clone(),
            kind: "PTX",
            reason: "it was compiled to LTO-IR (Options::lto): link it with Linker".into(),
        })
    }

    /// The CUBIN (present for a real architecture, [`Arch::sm`](crate::arch::Arch::sm), without [`Options::lto`](crate::options::Options::lto)).
    pub fn cubin(&self) -> Result<&Cubin> {
        self.cubin.as_ref().ok_or_else(|| Error::NoOutput {
            name: self.name.clone(),
            kind: "CUBIN",
            reason: match (self.lto_ir.is_some(), self.arch) {
                (true, _) => "it was compiled to LTO-IR (Options::lto): link it with Linker".into(),
                (false, Some(a)) => format!(
                    "it was compiled for the virtual architecture {a}: compile for Arch::sm"
                ),
                (false, None) => "it was compiled for NVRTC's default virtual architecture: \
                                  compile for Arch::sm"
                    .into(),
            },
        })
    }

    /// The LTO-IR (present with [`Options::lto`](crate::options::Options::lto)).
    pub fn lto_ir(&self) -> Result<&LtoIr> {
        self.lto_ir.as_ref().ok_or_else(|| Error::NoOutput {
            name: self.name.clone(),
            kind: "LTO-IR",
            reason: "it was compiled without Options::lto".into(),
        })
    }

    /// The output to load: the CUBIN where there is one, else the PTX.
    pub fn image(&self) -> Result<&dyn ModuleImage> {
        match (&self.cubin, &self.ptx) {
            (Some(c), _) => Ok(c),
            (None, Some(p)) => Ok(p),
            (None, None) => Err(Error::NoOutput {
                name: self.name.clone(),
                kind: "PTX or CUBIN",
                reason: "it was compiled to LTO-IR (Options::lto): link it with Linker, then \
                         load the linker's CUBIN"
                    .into(),
            }),
        }
    }

    /// Loads [`image`](Self::image) into `ctx` ([`Module::load_data`](cuda_driver::module::Module::load_data)).
    pub fn load(&self, ctx: &Context) -> Result<Module> {
        Ok(Module::load_data(ctx, self.image()?)?)
    }

    /// Loads [`image`](Self::image) as a context-independent library
    /// ([`Library::load_data`](cuda_driver::library::Library::load_data)).
    pub fn load_library(&self) -> Result<Library> {
        Ok(Library::load_data(self.image()?)?)
    }

    /// NVRTC's log (warnings; empty for a clean compilation).
    pub fn log(&self) -> &str {
        &self.log
    }

    /// The lowered (mangled) name of a name expression added with
    /// [`Program::add_name_expression`](crate::program::Program::add_name_expression): the name to look the kernel up by
    /// ([`Module::function`](cuda_driver::module::Module::function)).
    #[doc(alias = "nvrtcGetLoweredName")]
    pub fn lowered_name(&self, expression: &str) -> Result<&str> {
        self.lowered
            .iter()
            .find(|(e, _)| e == expression)
            .map(|(_, l)| l.as_str())
            .ok_or_else(|| Error::UnknownNameExpression {
                name: self.name.clone(),
                expression: expression.into(),
            })
    }

    /// Every name expression with its lowered name, in the order they were added.
    pub fn lowered_names(&self) -> impl Iterator<Item = (&str, &str)> {
        self.lowered.iter().map(|(e, l)| (e.as_str(), l.as_str()))
    }

    /// The architecture compiled for, where an option or [`Program::compile_for`](crate::program::Program::compile_for) chose it.
    pub fn arch(&self) -> Option<Arch> {
        self.arch
    }

    /// The device target [`Program::compile_for`](crate::program::Program::compile_for) chose (with the versions it compared).
    pub fn target(&self) -> Option<&Target> {
        self.target.as_ref()
    }

    /// Whether the outputs came from the [`Cache`](crate::Cache) rather than from NVRTC.
    pub fn from_cache(&self) -> bool {
        self.from_cache
    }

    /// The program's name.
    pub fn name(&self) -> &str {
        &self.name
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
