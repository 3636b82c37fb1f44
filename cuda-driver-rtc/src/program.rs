//! Compiling CUDA C++ with NVRTC: [`Program`] and [`CancelHandle`]; what a compilation
//! produced is a [`Compiled`].

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::fmt;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use cuda_driver::Device;

use crate::arch::Arch;
use crate::cache::Key;
use crate::cstring::c_string;
use crate::error::{check_nvrtc, Error, NvrtcResult, Result};
use crate::library::Nvrtc;
use crate::options::{refuse_arch, Options};
use crate::output::{Compiled, Cubin, LtoIr, Ptx};
use crate::report::report_drop_failure;
use crate::sys::nvrtc;
use crate::target::Target;

/// A CUDA C++ program for NVRTC: its source, its headers in memory, the name expressions
/// whose lowered (mangled) names it reports.
///
/// Wraps an `nvrtcProgram`
/// ([`nvrtcCreateProgram`](https://docs.nvidia.com/cuda/nvrtc/index.html#group__compilation),
/// destroyed on drop). It may be moved to and shared with other threads: NVRTC allows any
/// calls on one program from several threads but compiling and adding name expressions,
/// which take `&mut self`.
///
/// ```no_run
/// use cuda_driver_rtc::{Options, Program};
///
/// let mut p = Program::with_headers(
///     "scale.cu",
///     r#"#include "factor.h"
///        template <typename T>
///        __global__ void scale(T* x, int n) {
///            int i = blockIdx.x * blockDim.x + threadIdx.x;
///            if (i < n) x[i] *= FACTOR;
///        }"#,
///     &[("factor.h", "#define FACTOR 3")],
/// )?;
/// p.add_name_expression("scale<float>")?;
/// let compiled = p.compile(&Options::new())?;
/// assert_eq!(compiled.lowered_name("scale<float>")?, "_Z5scaleIfEvPT_i");
/// println!("{}", compiled.ptx()?);
/// # Ok::<(), cuda_driver_rtc::Error>(())
/// ```
///
/// A program cannot be dropped, or compiled twice at once, while it compiles on another
/// thread: compiling borrows it exclusively.
///
/// ```compile_fail,E0505
/// # fn f(mut p: cuda_driver_rtc::Program) {
/// std::thread::scope(|s| {
///     let h = s.spawn(|| p.compile(&cuda_driver_rtc::Options::new()));
///     drop(p); // error: `p` is borrowed by the compiling thread
///     let _ = h.join();
/// });
/// # }
/// ```
pub struct Program {
    raw: nvrtc::nvrtcProgram,
    nvrtc: &'static Nvrtc,
    name: String,
    /// What the program was created from, kept for its lifetime (NVRTC needs it only during
    /// the create call) and for the cache's key.
    source: CString,
    headers: Vec<(CString, CString)>,
    name_expressions: Vec<String>,
    /// Read by [`flow_callback`] while the program compiles; the `Arc`'s pointer is the
    /// callback's payload.
    cancel: Arc<AtomicBool>,
}

// SAFETY: an nvrtcProgram is not tied to the thread that created it. NVRTC's thread-safety
// rule ("Thread Safety" in the NVRTC guide) allows concurrent calls on one program except
// nvrtcCompileProgram and nvrtcAddNameExpression, which take `&mut self` here, so no other
// call on the same program can run alongside them.
unsafe impl Send for Program {}
// SAFETY: as for Send: every `&self` method reads (the log) and may run concurrently.
unsafe impl Sync for Program {}

impl fmt::Debug for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Program")
            .field("name", &self.name)
            .field("headers", &self.headers.len())
            .field("name_expressions", &self.name_expressions)
            .finish_non_exhaustive()
    }
}

impl Program {
    /// A program named `name` (the file name its messages give, `saxpy.cu`) from `source`,
    /// with NVRTC found by [`Nvrtc::load`].
    #[doc(alias = "nvrtcCreateProgram")]
    pub fn new(name: &str, source: &str) -> Result<Program> {
        Program::with_library(Nvrtc::load()?, name, source, &[])
    }

    /// A program with headers in memory: each `(include name, text)` is what
    /// `#include "<include name>"` finds, before any file on disk.
    #[doc(alias = "nvrtcCreateProgram")]
    pub fn with_headers(name: &str, source: &str, headers: &[(&str, &str)]) -> Result<Program> {
        Program::with_library(Nvrtc::load()?, name, source, headers)
    }

    /// A program for a given NVRTC (one from [`Nvrtc::open`]).
    ///
    /// Errors: [`Error::EmptyProgram`] for a blank source, [`Error::InteriorNul`] for a
    /// string with a NUL byte.
    #[doc(alias = "nvrtcCreateProgram")]
    pub fn with_library(
        nvrtc: &'static Nvrtc,
        name: &str,
        source: &str,
        headers: &[(&str, &str)],
    ) -> Result<Program> {
        if source.trim().is_empty() {
            return Err(Error::EmptyProgram { name: name.into() });
        }
        let c_name = c_string(name.into(), || format!("name of program `{name}`"))?;
        let c_source = c_string(source.into(), || format!("source of program `{name}`"))?;
        let c_headers = headers
            .iter()
            .map(|(include, text)| {
                Ok((
                    c_string((*include).into(), || {
                        format!("include name `{}`", include.escape_debug())
                    })?,
                    c_string((*text).into(), || format!("text of header `{include}`"))?,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let count = c_int::try_from(c_headers.len())
            .map_err(|_| Error::InvalidOptions(format!("{} headers", c_headers.len())))?;
        let texts: Vec<*const c_char> = c_headers.iter().map(|(_, t)| t.as_ptr()).collect();
        let includes: Vec<*const c_char> = c_headers.iter().map(|(i, _)| i.as_ptr()).collect();
        let mut raw = ptr::null_mut();
        // SAFETY: every pointer is a NUL-terminated string alive for the call (and after:
        // the program keeps them); `texts` and `includes` hold `count` pointers each; `raw`
        // is written on success only.
        let code = unsafe {
            nvrtc.as_raw().nvrtcCreateProgram(
                &mut raw,
                c_source.as_ptr(),
                c_name.as_ptr(),
                count,
                if count == 0 {
                    ptr::null()
                } else {
                    texts.as_ptr()
                },
                if count == 0 {
                    ptr::null()
                } else {
                    includes.as_ptr()
                },
            )
        };
        check_nvrtc(code, "nvrtcCreateProgram")?;
        // Owned from here: dropped (destroyed) on any error below.
        let program = Program {
            raw,
            nvrtc,
            name: name.into(),
            source: c_source,
            headers: c_headers,
            name_expressions: Vec::new(),
            cancel: Arc::new(AtomicBool::new(false)),
        };
        let payload = Arc::as_ptr(&program.cancel).cast_mut().cast::<c_void>();
        // SAFETY: the program is alive; the callback only reads the AtomicBool behind
        // `payload`, which the program owns (an Arc) and so outlives every compilation,
        // the only time NVRTC calls it.
        let code = unsafe {
            nvrtc
                .as_raw()
                .nvrtcSetFlowCallback(program.raw, Some(flow_callback), payload)
        };
        check_nvrtc(code, "nvrtcSetFlowCallback")?;
        Ok(program)
    }

    /// Adds a name expression (`"scale<float>"`, `"&my_global"`), whose lowered (mangled)
    /// name [`Compiled::lowered_name`] reports after compiling: the name the driver looks
    /// a templated kernel up by. Name expressions are added before compiling
    /// ([`Error::NameExpressionAfterCompile`] after).
    #[doc(alias = "nvrtcAddNameExpression")]
    pub fn add_name_expression(&mut self, expression: &str) -> Result<()> {
        let c = c_string(expression.into(), || {
            format!("name expression `{}`", expression.escape_debug())
        })?;
        // SAFETY: the program is alive and borrowed exclusively (no compilation runs); `c`
        // is NUL-terminated and NVRTC copies it.
        let code = unsafe {
            self.nvrtc
                .as_raw()
                .nvrtcAddNameExpression(self.raw, c.as_ptr())
        };
        match check_nvrtc(code, "nvrtcAddNameExpression") {
            Ok(()) => {
                self.name_expressions.push(expression.into());
                Ok(())
            }
            Err(Error::Nvrtc { code, .. })
                if code == NvrtcResult::NO_NAME_EXPRESSIONS_AFTER_COMPILATION =>
            {
                Err(Error::NameExpressionAfterCompile {
                    name: self.name.clone(),
                    expression: expression.into(),
                })
            }
            Err(e) => Err(e),
        }
    }

    /// Compiles with `options` and returns every output NVRTC produced: PTX (unless
    /// [`Options::lto`]), a CUBIN for a real architecture ([`Arch::sm`]), LTO-IR with
    /// [`Options::lto`], the log and the lowered names.
    ///
    /// Errors: [`Error::Compile`] with the log when NVRTC rejects the source,
    /// [`Error::InvalidOption`] for an option it does not know, [`Error::Cancelled`] after
    /// [`CancelHandle::cancel`].
    ///
    /// What loads on a given device's driver depends on the versions: use
    /// [`compile_for`](Self::compile_for) to compile for a device.
    ///
    /// With [`Options::cache`], a hit returns the stored outputs and log without running
    /// NVRTC ([`Compiled::from_cache`]); the program's own [`log`](Self::log) then stays that
    /// of its last real compilation.
    #[doc(alias = "nvrtcCompileProgram")]
    pub fn compile(&mut self, options: &Options) -> Result<Compiled> {
        self.compile_arch(options, None)
    }

    /// Compiles for `device` and its driver: chooses the architecture by the rule of
    /// [`Target`] (PTX where the driver can JIT-compile it, a CUBIN for the device where it
    /// cannot, an error naming both versions where nothing would load), so what it returns
    /// loads ([`Compiled::load`]). With [`Options::lto`], LTO-IR for the device's
    /// architecture, for [`Linker::for_device`](crate::Linker::for_device).
    ///
    /// The options must not set the architecture ([`Error::InvalidOptions`]).
    #[doc(alias = "nvrtcCompileProgram")]
    pub fn compile_for(&mut self, device: &Device, options: &Options) -> Result<Compiled> {
        refuse_arch(options)?;
        let target = Target::for_device(
            device,
            "NVRTC",
            self.nvrtc.version(),
            self.nvrtc.supported_archs(),
            options.prefers_cubin() || options.is_lto(),
        )?;
        let mut c = self.compile_arch(options, Some(target.arch()))?;
        c.target = Some(target);
        Ok(c)
    }

    fn compile_arch(&mut self, options: &Options, arch: Option<Arch>) -> Result<Compiled> {
        let c_options = options.to_c_strings(arch)?;
        let key = options.get_cache().map(|_| self.key(&c_options));
        if let (Some(cache), Some(key)) = (options.get_cache(), &key) {
            if let Some(c) = cache.get(key) {
                return Ok(c);
            }
        }
        let count = c_int::try_from(c_options.len())
            .map_err(|_| Error::InvalidOptions(format!("{} options", c_options.len())))?;
        let pointers: Vec<*const c_char> = c_options.iter().map(|o| o.as_ptr()).collect();
        // SAFETY: the program is alive and borrowed exclusively; `pointers` holds `count`
        // NUL-terminated strings that live for the call.
        let code = unsafe {
            self.nvrtc
                .as_raw()
                .nvrtcCompileProgram(self.raw, count, pointers.as_ptr())
        };
        if let Err(e) = check_nvrtc(code, "nvrtcCompileProgram") {
            let name = self.name.clone();
            return Err(match e {
                Error::Nvrtc { code, .. } if code == NvrtcResult::COMPILATION => Error::Compile {
                    name,
                    log: self.log()?,
                },
                Error::Nvrtc { code, .. } if code == NvrtcResult::INVALID_OPTION => {
                    Error::InvalidOption {
                        name,
                        log: self.log()?,
                    }
                }
                Error::Nvrtc { code, .. } if code == NvrtcResult::CANCELLED => {
                    Error::Cancelled { name }
                }
                e => e,
            });
        }
        let arch = arch.or(options.get_arch());
        let ptx = self
            .output(Output::Ptx)?
            // NVRTC reports one byte (the NUL) where there is no PTX (an LTO build).
            .filter(|b| b.len() > 1)
            .map(|b| {
                Ptx::from_nul_terminated(b).ok_or_else(|| Error::NoOutput {
                    name: self.name.clone(),
                    kind: "PTX",
                    reason: "NVRTC wrote PTX that is not UTF-8".into(),
                })
            })
            .transpose()?;
        let cubin = self
            .output(Output::Cubin)?
            .filter(|b| !b.is_empty())
            .map(Cubin::from_bytes);
        let lto_ir = self
            .output(Output::LtoIr)?
            .filter(|b| !b.is_empty())
            .map(LtoIr::from_bytes);
        let mut lowered = Vec::with_capacity(self.name_expressions.len());
        for expr in &self.name_expressions {
            lowered.push((expr.clone(), self.lowered_name(expr)?));
        }
        let compiled = Compiled {
            name: self.name.clone(),
            arch,
            target: None,
            ptx,
            cubin,
            lto_ir,
            log: self.log()?,
            lowered,
            from_cache: false,
        };
        if let (Some(cache), Some(key)) = (options.get_cache(), &key) {
            cache.put(key, &compiled);
        }
        Ok(compiled)
    }

    /// An output of the last compilation, `None` where NVRTC reports a size of 0.
    fn output(&self, which: Output) -> Result<Option<Vec<u8>>> {
        let n = self.nvrtc.as_raw();
        let mut size = 0usize;
        // SAFETY: the program is alive; each call writes one size_t.
        let (code, call) = unsafe {
            match which {
                Output::Ptx => (n.nvrtcGetPTXSize(self.raw, &mut size), "nvrtcGetPTXSize"),
                Output::Cubin => (
                    n.nvrtcGetCUBINSize(self.raw, &mut size),
                    "nvrtcGetCUBINSize",
                ),
                Output::LtoIr => (
                    n.nvrtcGetLTOIRSize(self.raw, &mut size),
                    "nvrtcGetLTOIRSize",
                ),
                Output::Log => (
                    n.nvrtcGetProgramLogSize(self.raw, &mut size),
                    "nvrtcGetProgramLogSize",
                ),
            }
        };
        check_nvrtc(code, call)?;
        if size == 0 {
            return Ok(None);
        }
        let mut buf = vec![0u8; size];
        let p = buf.as_mut_ptr();
        // SAFETY: the program is alive and not compiling (compiling takes `&mut self`, so
        // the size just read is current); `buf` holds the `size` bytes each call writes.
        let (code, call) = unsafe {
            match which {
                Output::Ptx => (n.nvrtcGetPTX(self.raw, p.cast()), "nvrtcGetPTX"),
                Output::Cubin => (n.nvrtcGetCUBIN(self.raw, p.cast()), "nvrtcGetCUBIN"),
                Output::LtoIr => (n.nvrtcGetLTOIR(self.raw, p.cast()), "nvrtcGetLTOIR"),
                Output::Log => (
                    n.nvrtcGetProgramLog(self.raw, p.cast()),
                    "nvrtcGetProgramLog",
                ),
            }
        };
        check_nvrtc(code, call)?;
        Ok(Some(buf))
    }

    fn lowered_name(&self, expr: &str) -> Result<String> {
        let c = c_string(expr.into(), || format!("name expression `{expr}`"))?;
        let mut p: *const c_char = ptr::null();
        // SAFETY: the program is alive; `c` is NUL-terminated; NVRTC writes a pointer to a
        // string it owns, valid while the program is and not compiled again (it is copied
        // at once, and compiling takes `&mut self`).
        let code = unsafe {
            self.nvrtc
                .as_raw()
                .nvrtcGetLoweredName(self.raw, c.as_ptr(), &mut p)
        };
        check_nvrtc(code, "nvrtcGetLoweredName")?;
        if p.is_null() {
            return Err(Error::UnknownNameExpression {
                name: self.name.clone(),
                expression: expr.into(),
            });
        }
        // SAFETY: NVRTC returned a NUL-terminated string it owns (see above).
        Ok(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }

    /// The log of the last compilation (empty before the first, and for a compilation
    /// without messages).
    #[doc(alias = "nvrtcGetProgramLog")]
    pub fn log(&self) -> Result<String> {
        let bytes = self.output(Output::Log)?.unwrap_or_default();
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        Ok(String::from_utf8_lossy(&bytes[..end]).into_owned())
    }

    /// A handle that cancels the program's compilation from any thread (through
    /// [`nvrtcSetFlowCallback`](https://docs.nvidia.com/cuda/nvrtc/index.html#group__compilation)):
    /// the running or next [`compile`](Self::compile) returns [`Error::Cancelled`], and so does
    /// every later one.
    #[doc(alias = "nvrtcSetFlowCallback")]
    pub fn cancel_handle(&self) -> CancelHandle {
        CancelHandle(self.cancel.clone())
    }

    /// The program's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The NVRTC the program compiles with.
    pub fn nvrtc(&self) -> &'static Nvrtc {
        self.nvrtc
    }

    /// The raw `nvrtcProgram`, owned by `self`.
    pub fn as_raw(&self) -> nvrtc::nvrtcProgram {
        self.raw
    }

    /// The cache key of a compilation with these options.
    fn key(&self, c_options: &[CString]) -> Key {
        let mut k = Key::new(self.nvrtc);
        k.field(self.name.as_bytes());
        k.field(self.source.as_bytes());
        k.count(self.headers.len());
        for (include, text) in &self.headers {
            k.field(include.as_bytes());
            k.field(text.as_bytes());
        }
        k.count(self.name_expressions.len());
        for e in &self.name_expressions {
            k.field(e.as_bytes());
        }
        k.count(c_options.len());
        for o in c_options {
            k.field(o.as_bytes());
        }
        k
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        let mut raw = self.raw;
        // SAFETY: the program is owned by `self` and destroyed once, here; no compilation
        // runs (`drop` has `&mut self`).
        let code = unsafe { self.nvrtc.as_raw().nvrtcDestroyProgram(&mut raw) };
        if let Err(e) = check_nvrtc(code, "nvrtcDestroyProgram") {
            report_drop_failure(&format!("program `{}`: {e}", self.name));
        }
    }
}

/// The outputs of a compilation, each read with a size call and a copy call.
#[derive(Clone, Copy)]
enum Output {
    Ptx,
    Cubin,
    LtoIr,
    Log,
}

/// NVRTC's flow callback: 1 (cancel) once the program's [`CancelHandle`] fired.
///
/// Only reads an atomic: it cannot panic, and NVRTC may call it from any thread.
unsafe extern "C" fn flow_callback(payload: *mut c_void, _reserved: *mut c_void) -> c_int {
    // SAFETY: the payload is the `AtomicBool` of a live program's `Arc` (set in
    // `with_library`, the program outlives its compilations).
    let cancel = unsafe { &*payload.cast_const().cast::<AtomicBool>() };
    c_int::from(cancel.load(Ordering::Relaxed))
}

/// Cancels a [`Program`]'s compilation from any thread ([`Program::cancel_handle`]).
#[derive(Clone, Debug)]
pub struct CancelHandle(Arc<AtomicBool>);

impl CancelHandle {
    /// Cancels the running compilation, if any, and every later one of the program.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether [`cancel`](Self::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Compiles `source` (a program named `kernel.cu`) to PTX with `options`.
///
/// ```no_run
/// let ptx = cuda_driver_rtc::compile_ptx(
///     r#"extern "C" __global__ void twice(float* x) { x[threadIdx.x] *= 2; }"#,
///     &cuda_driver_rtc::Options::new(),
/// )?;
/// assert!(ptx.as_str().contains(".entry twice"));
/// # Ok::<(), cuda_driver_rtc::Error>(())
/// ```
pub fn compile_ptx(source: &str, options: &Options) -> Result<Ptx> {
    let mut p = Program::new("kernel.cu", source)?;
    let c = p.compile(options)?;
    c.ptx().cloned()
}
