//! Linking with nvJitLink: [`Linker`] and [`LinkOptions`].

use std::ffi::{c_char, CString};
use std::fmt;
use std::ptr;

use cuda_driver::Device;

use crate::arch::Arch;
use crate::cstring::c_string;
use crate::error::{check_nvjitlink, Error, Result};
use crate::library::NvJitLink;
use crate::output::{Cubin, LtoIr, Ptx};
use crate::report::report_drop_failure;
use crate::sys::nvjitlink;
use crate::target::Target;

/// How to link: the architecture (required: nvJitLink writes machine code for one),
/// link-time optimisation, raw options. See nvJitLink's
/// [options](https://docs.nvidia.com/cuda/nvjitlink/index.html#supported-link-options).
///
/// ```
/// use cuda_driver_rtc::{Arch, LinkOptions};
/// let o = LinkOptions::new().arch(Arch::sm(9, 0)).lto(true).raw("-O3");
/// assert_eq!(o.to_strings(), ["-arch=sm_90", "-lto", "-O3"]);
/// ```
#[derive(Clone, Debug, Default)]
pub struct LinkOptions {
    arch: Option<Arch>,
    lto: bool,
    raw: Vec<String>,
}

impl LinkOptions {
    /// No options (an architecture must still be given, or chosen by
    /// [`Linker::for_device`]).
    pub fn new() -> LinkOptions {
        LinkOptions::default()
    }

    /// The architecture to link for (`-arch=sm_XX`); nvJitLink needs a real one.
    pub fn arch(mut self, arch: Arch) -> LinkOptions {
        self.arch = Some(arch);
        self
    }

    /// Link-time optimisation of LTO-IR inputs (`-lto`).
    pub fn lto(mut self, on: bool) -> LinkOptions {
        self.lto = on;
        self
    }

    /// Any nvJitLink option, passed as it is, after the typed ones.
    pub fn raw(mut self, option: &str) -> LinkOptions {
        self.raw.push(option.into());
        self
    }

    /// The options as nvJitLink gets them.
    pub fn to_strings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(a) = self.arch {
            // nvJitLink spells it `-arch=sm_90` (or `compute_90` for PTX output).
            out.push(format!("-arch={a}"));
        }
        if self.lto {
            out.push("-lto".into());
        }
        out.extend(self.raw.iter().cloned());
        out
    }

    fn sets_arch(&self) -> bool {
        self.arch.is_some()
            || self
                .raw
                .iter()
                .any(|o| o.trim_start_matches('-').starts_with("arch"))
    }
}

/// Links LTO-IR, PTX, CUBINs and fatbins into one CUBIN with nvJitLink.
///
/// Wraps an `nvJitLinkHandle`
/// ([`nvJitLinkCreate`](https://docs.nvidia.com/cuda/nvjitlink/index.html#linking),
/// destroyed on drop). Inputs are copied into the linker and kept until it is dropped.
///
/// ```no_run
/// use cuda_driver_rtc::{Arch, LinkOptions, Linker, Options, Program};
///
/// let lto = Options::new().arch(Arch::sm(8, 0)).lto(true).relocatable(true);
/// let helper = Program::new("helper.cu", "__device__ float twice(float x) { return 2 * x; }")?
///     .compile(&lto)?;
/// let main = Program::new(
///     "main.cu",
///     r#"__device__ float twice(float);
///        extern "C" __global__ void k(float* x) { x[threadIdx.x] = twice(x[threadIdx.x]); }"#,
/// )?
/// .compile(&lto)?;
/// let mut linker = Linker::new(&LinkOptions::new().arch(Arch::sm(8, 0)).lto(true))?;
/// linker.add_lto_ir(helper.lto_ir()?, "helper")?;
/// linker.add_lto_ir(main.lto_ir()?, "main")?;
/// let cubin = linker.complete()?; // loads with Module::load_data
/// # Ok::<(), cuda_driver_rtc::Error>(())
/// ```
pub struct Linker {
    raw: nvjitlink::nvJitLinkHandle,
    lib: &'static NvJitLink,
    /// Every input's bytes, alive until the handle is destroyed.
    inputs: Vec<Vec<u8>>,
}

// SAFETY: an nvJitLinkHandle is not tied to the thread that created it; every call that uses
// it takes `&mut self` or (the logs) `&self` of a linker that is not `Sync`, so calls on one
// handle never overlap.
unsafe impl Send for Linker {}

impl fmt::Debug for Linker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Linker")
            .field("inputs", &self.inputs.len())
            .finish_non_exhaustive()
    }
}

impl Linker {
    /// A linker with `options`, with nvJitLink found by [`NvJitLink::load`].
    #[doc(alias = "nvJitLinkCreate")]
    pub fn new(options: &LinkOptions) -> Result<Linker> {
        Linker::with_library(NvJitLink::load()?, options)
    }

    /// A linker for `device` and its driver: the architecture is `sm_XX` of the device (the
    /// output is machine code, which needs no JIT), and where nvJitLink is of a newer major
    /// version than the driver the error names both ([`Target`]). The options must not set
    /// the architecture.
    #[doc(alias = "nvJitLinkCreate")]
    pub fn for_device(device: &Device, options: &LinkOptions) -> Result<Linker> {
        if options.sets_arch() {
            return Err(Error::InvalidOptions(
                "Linker::for_device chooses the architecture: leave LinkOptions::arch and raw \
                 -arch options out, or call Linker::new"
                    .into(),
            ));
        }
        let lib = NvJitLink::load()?;
        let target = Target::for_device(device, "nvJitLink", lib.version(), &[], true)?;
        Linker::with_library(lib, &options.clone().arch(target.arch()))
    }

    /// A linker for a given nvJitLink (one from [`NvJitLink::open`]).
    #[doc(alias = "nvJitLinkCreate")]
    pub fn with_library(lib: &'static NvJitLink, options: &LinkOptions) -> Result<Linker> {
        let c_options: Vec<CString> = options
            .to_strings()
            .into_iter()
            .map(|o| {
                let what = format!("link option `{}`", o.escape_debug());
                c_string(o.into_bytes(), || what)
            })
            .collect::<Result<_>>()?;
        let count = u32::try_from(c_options.len())
            .map_err(|_| Error::InvalidOptions(format!("{} link options", c_options.len())))?;
        let pointers: Vec<*const c_char> = c_options.iter().map(|o| o.as_ptr()).collect();
        let mut raw = ptr::null_mut();
        // SAFETY: `pointers` holds `count` NUL-terminated strings alive for the call; `raw` is
        // written on success only.
        let code = unsafe {
            lib.as_raw()
                .nvJitLinkCreate(&mut raw, count, pointers.as_ptr())
        };
        check_nvjitlink(code, "nvJitLinkCreate")?;
        Ok(Linker {
            raw,
            lib,
            inputs: Vec::new(),
        })
    }

    /// Adds LTO-IR (from [`Options::lto`](crate::Options::lto)); `name` appears in the logs.
    #[doc(alias = "nvJitLinkAddData")]
    pub fn add_lto_ir(&mut self, ir: &LtoIr, name: &str) -> Result<()> {
        self.add(
            nvjitlink::NVJITLINK_INPUT_LTOIR,
            ir.as_bytes().to_vec(),
            name,
        )
    }

    /// Adds PTX, which nvJitLink compiles.
    #[doc(alias = "nvJitLinkAddData")]
    pub fn add_ptx(&mut self, ptx: &Ptx, name: &str) -> Result<()> {
        self.add(
            nvjitlink::NVJITLINK_INPUT_PTX,
            ptx.as_bytes_with_nul().to_vec(),
            name,
        )
    }

    /// Adds a CUBIN (compiled with relocatable device code to link with others).
    #[doc(alias = "nvJitLinkAddData")]
    pub fn add_cubin(&mut self, cubin: &Cubin, name: &str) -> Result<()> {
        self.add(
            nvjitlink::NVJITLINK_INPUT_CUBIN,
            cubin.as_bytes().to_vec(),
            name,
        )
    }

    /// Adds a fatbin (`nvcc --fatbin`): nvJitLink takes what fits the architecture.
    #[doc(alias = "nvJitLinkAddData")]
    pub fn add_fatbin(&mut self, fatbin: &[u8], name: &str) -> Result<()> {
        self.add(nvjitlink::NVJITLINK_INPUT_FATBIN, fatbin.to_vec(), name)
    }

    fn add(
        &mut self,
        kind: nvjitlink::nvJitLinkInputType,
        bytes: Vec<u8>,
        name: &str,
    ) -> Result<()> {
        let c_name = c_string(name.into(), || {
            format!("linker input name `{}`", name.escape_debug())
        })?;
        if bytes.is_empty() {
            return Err(Error::InvalidOptions(format!(
                "linker input `{name}` is empty"
            )));
        }
        // SAFETY: the handle is alive and borrowed exclusively; `bytes` holds `len` bytes
        // and is kept (moved into `inputs`) until the handle is destroyed, whether or not
        // nvJitLink copies it; `c_name` is NUL-terminated for the call.
        let code = unsafe {
            self.lib.as_raw().nvJitLinkAddData(
                self.raw,
                kind,
                bytes.as_ptr().cast(),
                bytes.len(),
                c_name.as_ptr(),
            )
        };
        self.inputs.push(bytes);
        self.with_log(check_nvjitlink(code, "nvJitLinkAddData"))
    }

    /// Links the inputs and returns the CUBIN (`nvJitLinkComplete`,
    /// `nvJitLinkGetLinkedCubin`); a failure is [`Error::Link`] with the error log.
    #[doc(alias = "nvJitLinkComplete")]
    #[doc(alias = "nvJitLinkGetLinkedCubin")]
    pub fn complete(&mut self) -> Result<Cubin> {
        // SAFETY: the handle is alive and borrowed exclusively; its inputs are alive.
        let code = unsafe { self.lib.as_raw().nvJitLinkComplete(self.raw) };
        self.with_log(check_nvjitlink(code, "nvJitLinkComplete"))?;
        let mut size = 0usize;
        // SAFETY: writes one size_t.
        let code = unsafe {
            self.lib
                .as_raw()
                .nvJitLinkGetLinkedCubinSize(self.raw, &mut size)
        };
        self.with_log(check_nvjitlink(code, "nvJitLinkGetLinkedCubinSize"))?;
        let mut cubin = vec![0u8; size];
        // SAFETY: `cubin` holds the `size` bytes nvJitLinkGetLinkedCubinSize reported.
        let code = unsafe {
            self.lib
                .as_raw()
                .nvJitLinkGetLinkedCubin(self.raw, cubin.as_mut_ptr().cast())
        };
        self.with_log(check_nvjitlink(code, "nvJitLinkGetLinkedCubin"))?;
        Ok(Cubin::from_bytes(cubin))
    }

    /// The error log (why an input or the link failed).
    #[doc(alias = "nvJitLinkGetErrorLog")]
    pub fn error_log(&self) -> Result<String> {
        self.log(true)
    }

    /// The info log (with `-verbose`, what nvJitLink did).
    #[doc(alias = "nvJitLinkGetInfoLog")]
    pub fn info_log(&self) -> Result<String> {
        self.log(false)
    }

    fn log(&self, error: bool) -> Result<String> {
        let n = self.lib.as_raw();
        let mut size = 0usize;
        // SAFETY: the handle is alive; writes one size_t.
        let (code, call) = unsafe {
            if error {
                (
                    n.nvJitLinkGetErrorLogSize(self.raw, &mut size),
                    "nvJitLinkGetErrorLogSize",
                )
            } else {
                (
                    n.nvJitLinkGetInfoLogSize(self.raw, &mut size),
                    "nvJitLinkGetInfoLogSize",
                )
            }
        };
        check_nvjitlink(code, call)?;
        if size == 0 {
            return Ok(String::new());
        }
        let mut buf = vec![0u8; size];
        let p = buf.as_mut_ptr().cast();
        // SAFETY: `buf` holds the `size` bytes just reported (nothing else uses the handle:
        // it is not `Sync`).
        let (code, call) = unsafe {
            if error {
                (n.nvJitLinkGetErrorLog(self.raw, p), "nvJitLinkGetErrorLog")
            } else {
                (n.nvJitLinkGetInfoLog(self.raw, p), "nvJitLinkGetInfoLog")
            }
        };
        check_nvjitlink(code, call)?;
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        Ok(String::from_utf8_lossy(&buf[..end]).into_owned())
    }

    /// Adds the error log to a failure.
    fn with_log(&self, r: Result<()>) -> Result<()> {
        match r {
            Err(Error::Link { call, code, .. }) => Err(Error::Link {
                call,
                code,
                log: self.error_log().unwrap_or_default(),
            }),
            r => r,
        }
    }

    /// The nvJitLink the linker uses.
    pub fn library(&self) -> &'static NvJitLink {
        self.lib
    }

    /// The raw `nvJitLinkHandle`, owned by `self`.
    pub fn as_raw(&self) -> nvjitlink::nvJitLinkHandle {
        self.raw
    }
}

impl Drop for Linker {
    fn drop(&mut self) {
        let mut raw = self.raw;
        // SAFETY: the handle is owned by `self` and destroyed once, here.
        let code = unsafe { self.lib.as_raw().nvJitLinkDestroy(&mut raw) };
        if let Err(e) = check_nvjitlink(code, "nvJitLinkDestroy") {
            report_drop_failure(&format!("linker: {e}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_architecture_in_the_options_is_refused_where_the_device_chooses() {
        assert!(LinkOptions::new().arch(Arch::sm(8, 0)).sets_arch());
        assert!(LinkOptions::new().raw("-arch=sm_80").sets_arch());
        assert!(!LinkOptions::new().lto(true).raw("-O3").sets_arch());
    }
}
