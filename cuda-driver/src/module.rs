//! Modules: device code (PTX, cubin, fatbin) loaded into one context, its kernels
//! ([`Function`]) and its module-scope variables ([`Global`]).
//!
//! A [`Module`] is the driver's `CUmodule`: code loaded into one [`Context`], unloaded when the
//! last handle (the module, or a [`Function`] or [`Global`] taken from it) is dropped. To load
//! code once for every context and device, use a [`Library`](crate::Library) instead.
//!
//! Loading always captures the JIT's info and error logs: a failed load returns
//! [`Error::Jit`] with the compiler's error log, and [`Module::info_log`] holds the info log of a
//! successful one. [`JitOptions`] sets the compiler options.
//!
//! ```no_run
//! use cuda_driver::{Device, JitOptions, Module};
//!
//! let ctx = Device::get(0)?.primary_context()?;
//! let ptx = "...PTX text...";
//! let module = Module::load_data_with(&ctx, ptx, &JitOptions::new().max_registers(32).verbose(true))?;
//! println!("{}", module.info_log());
//! let vec_add = module.function("VecAdd")?;
//! # Ok::<(), cuda_driver::Error>(())
//! ```

use std::ffi::{c_char, c_uint, c_void, CStr, CString};
use std::marker::PhantomData;
use std::mem::size_of;
use std::path::Path;
use std::ptr;
use std::sync::Arc;

use cuda_driver_sys as sys;

use crate::error::{check, Error, Result};
use crate::launch::LaunchMeta;
use crate::library::LibraryInner;
use crate::release::SendRaw;
use crate::{
    CacheConfig, Context, DeviceMemory, DeviceMemoryMut, DeviceRepr, DeviceSlice, DeviceSliceMut,
    ErrorCode,
};

pub use crate::types::{FunctionAttribute, JitTarget};

impl JitTarget {
    /// The `compute_<major><minor>` target, such as `compute_90` for `(9, 0)`; the
    /// architecture-specific variants (`COMPUTE_90A`, ...) are named constants.
    pub const fn from_compute_capability(major: u32, minor: u32) -> JitTarget {
        JitTarget(major * 10 + minor)
    }
}

pub use crate::types::{JitCacheMode, JitFallback};

/// The default size of each JIT log buffer (info and error), in bytes.
pub const DEFAULT_JIT_LOG_SIZE: usize = 16 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    Default,
    FromContext,
    Explicit(JitTarget),
}

/// Options of the JIT compiler and linker (`CUjit_option`), for loading modules and
/// libraries and for the [`Linker`](crate::Linker).
///
/// Built with chained setters; options left unset keep the driver's default. The info and
/// error logs and the wall time are always requested (the logs in buffers of
/// [`log_buffer_size`](Self::log_buffer_size) bytes each, 16 KiB by default).
///
/// ```
/// use cuda_driver::{JitCacheMode, JitOptions, JitTarget};
/// let opts = JitOptions::new()
///     .max_registers(64)
///     .optimization_level(3)
///     .target(JitTarget::from_compute_capability(9, 0))
///     .generate_line_info(true)
///     .cache_mode(JitCacheMode::CG)
///     .verbose(true);
/// # let _ = opts;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[doc(alias = "CUjit_option")]
pub struct JitOptions {
    max_registers: Option<u32>,
    threads_per_block: Option<u32>,
    optimization_level: Option<u32>,
    target: Target,
    fallback: Option<JitFallback>,
    debug_info: Option<bool>,
    line_info: Option<bool>,
    verbose: Option<bool>,
    cache_mode: Option<JitCacheMode>,
    log_size: usize,
}

impl Default for JitOptions {
    fn default() -> Self {
        JitOptions {
            max_registers: None,
            threads_per_block: None,
            optimization_level: None,
            target: Target::Default,
            fallback: None,
            debug_info: None,
            line_info: None,
            verbose: None,
            cache_mode: None,
            log_size: DEFAULT_JIT_LOG_SIZE,
        }
    }
}

impl JitOptions {
    /// The driver's defaults, with both logs captured.
    pub fn new() -> Self {
        Self::default()
    }

    /// The most registers a thread may use (`CU_JIT_MAX_REGISTERS`).
    #[doc(alias = "CU_JIT_MAX_REGISTERS")]
    pub fn max_registers(mut self, n: u32) -> Self {
        self.max_registers = Some(n);
        self
    }

    /// Compiles so that blocks of at least `n` threads can launch, as far as registers go
    /// (`CU_JIT_THREADS_PER_BLOCK`). Cannot be combined with [`target`](Self::target).
    #[doc(alias = "CU_JIT_THREADS_PER_BLOCK")]
    pub fn threads_per_block(mut self, n: u32) -> Self {
        self.threads_per_block = Some(n);
        self
    }

    /// The optimisation level, 0 to 4 (the default) (`CU_JIT_OPTIMIZATION_LEVEL`).
    #[doc(alias = "CU_JIT_OPTIMIZATION_LEVEL")]
    pub fn optimization_level(mut self, level: u32) -> Self {
        self.optimization_level = Some(level);
        self
    }

    /// Compiles for the device of the current context (`CU_JIT_TARGET_FROM_CUCONTEXT`),
    /// which is also what the driver does when no target is given. Not for libraries, which
    /// load without a context.
    #[doc(alias = "CU_JIT_TARGET_FROM_CUCONTEXT")]
    pub fn target_from_context(mut self) -> Self {
        self.target = Target::FromContext;
        self
    }

    /// Compiles for an explicit architecture (`CU_JIT_TARGET`).
    #[doc(alias = "CU_JIT_TARGET")]
    pub fn target(mut self, target: JitTarget) -> Self {
        self.target = Target::Explicit(target);
        self
    }

    /// Whether to prefer PTX or a binary when no exactly matching cubin exists
    /// (`CU_JIT_FALLBACK_STRATEGY`; not for the linker).
    #[doc(alias = "CU_JIT_FALLBACK_STRATEGY")]
    pub fn fallback(mut self, fallback: JitFallback) -> Self {
        self.fallback = Some(fallback);
        self
    }

    /// Generates debug information, like `-G` (`CU_JIT_GENERATE_DEBUG_INFO`).
    #[doc(alias = "CU_JIT_GENERATE_DEBUG_INFO")]
    pub fn generate_debug_info(mut self, on: bool) -> Self {
        self.debug_info = Some(on);
        self
    }

    /// Generates line-number information, like `-lineinfo` (`CU_JIT_GENERATE_LINE_INFO`).
    #[doc(alias = "CU_JIT_GENERATE_LINE_INFO")]
    pub fn generate_line_info(mut self, on: bool) -> Self {
        self.line_info = Some(on);
        self
    }

    /// Writes verbose messages (register use, ...) to the info log (`CU_JIT_LOG_VERBOSE`).
    #[doc(alias = "CU_JIT_LOG_VERBOSE")]
    pub fn verbose(mut self, on: bool) -> Self {
        self.verbose = Some(on);
        self
    }

    /// The global memory caching mode, like `-dlcm` (`CU_JIT_CACHE_MODE`).
    #[doc(alias = "CU_JIT_CACHE_MODE")]
    pub fn cache_mode(mut self, mode: JitCacheMode) -> Self {
        self.cache_mode = Some(mode);
        self
    }

    /// The size of each log buffer in bytes (`CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES`,
    /// `CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES`), 16 KiB by default; longer logs are cut.
    pub fn log_buffer_size(mut self, bytes: usize) -> Self {
        self.log_size = bytes.clamp(1, u32::MAX as usize);
        self
    }
}

/// At most this many JIT options go to one driver call.
const MAX_JIT_OPTIONS: usize = 16;

/// The option arrays of one driver call with JIT options, and the log buffers they point to.
///
/// The `values` slots of the output options (wall time, log sizes) are written by the driver;
/// for the linker they are written until the link state is destroyed, so a `JitCall` given to
/// `cuLinkCreate` lives in a `Box` that does not move until then.
pub(crate) struct JitCall {
    options: [sys::CUjit_option; MAX_JIT_OPTIONS],
    values: [*mut c_void; MAX_JIT_OPTIONS],
    count: usize,
    info: Box<[u8]>,
    error: Box<[u8]>,
    wall_time_slot: usize,
}

impl JitCall {
    pub(crate) fn new(opts: &JitOptions) -> JitCall {
        let mut call = JitCall {
            options: [0; MAX_JIT_OPTIONS],
            values: [ptr::null_mut(); MAX_JIT_OPTIONS],
            count: 0,
            info: take_log_buffer(opts.log_size),
            error: take_log_buffer(opts.log_size),
            wall_time_slot: 0,
        };
        // Scalars travel in the pointer-sized slot itself, as cuda.h specifies for
        // `unsigned int` and `int` options.
        let size = opts.log_size as *mut c_void;
        let info = call.info.as_mut_ptr().cast();
        let error = call.error.as_mut_ptr().cast();
        call.push(sys::CU_JIT_INFO_LOG_BUFFER, info);
        call.push(sys::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, size);
        call.push(sys::CU_JIT_ERROR_LOG_BUFFER, error);
        call.push(sys::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, size);
        call.wall_time_slot = call.count;
        call.push(sys::CU_JIT_WALL_TIME, ptr::null_mut());
        let uint = |v: u32| v as usize as *mut c_void;
        if let Some(n) = opts.max_registers {
            call.push(sys::CU_JIT_MAX_REGISTERS, uint(n));
        }
        if let Some(n) = opts.threads_per_block {
            call.push(sys::CU_JIT_THREADS_PER_BLOCK, uint(n));
        }
        if let Some(n) = opts.optimization_level {
            call.push(sys::CU_JIT_OPTIMIZATION_LEVEL, uint(n));
        }
        match opts.target {
            Target::Default => {}
            Target::FromContext => call.push(sys::CU_JIT_TARGET_FROM_CUCONTEXT, ptr::null_mut()),
            Target::Explicit(t) => call.push(sys::CU_JIT_TARGET, uint(t.0)),
        }
        if let Some(f) = opts.fallback {
            call.push(sys::CU_JIT_FALLBACK_STRATEGY, uint(f.0));
        }
        if let Some(on) = opts.debug_info {
            call.push(sys::CU_JIT_GENERATE_DEBUG_INFO, uint(on as u32));
        }
        if let Some(on) = opts.line_info {
            call.push(sys::CU_JIT_GENERATE_LINE_INFO, uint(on as u32));
        }
        if let Some(on) = opts.verbose {
            call.push(sys::CU_JIT_LOG_VERBOSE, uint(on as u32));
        }
        if let Some(m) = opts.cache_mode {
            call.push(sys::CU_JIT_CACHE_MODE, uint(m.0));
        }
        call
    }

    fn push(&mut self, option: sys::CUjit_option, value: *mut c_void) {
        // At most 14 options exist above, within MAX_JIT_OPTIONS.
        self.options[self.count] = option;
        self.values[self.count] = value;
        self.count += 1;
    }

    pub(crate) fn len(&self) -> c_uint {
        self.count as c_uint
    }

    pub(crate) fn options_ptr(&mut self) -> *mut sys::CUjit_option {
        self.options.as_mut_ptr()
    }

    pub(crate) fn values_ptr(&mut self) -> *mut *mut c_void {
        self.values.as_mut_ptr()
    }

    pub(crate) fn info_log(&self) -> String {
        log_text(&self.info)
    }

    pub(crate) fn error_log(&self) -> String {
        log_text(&self.error)
    }

    /// Milliseconds the driver spent compiling and linking, which it writes over the first
    /// four bytes of the option's value slot.
    pub(crate) fn wall_time_ms(&self) -> f32 {
        let slot: *const *mut c_void = &self.values[self.wall_time_slot];
        // SAFETY: the slot is a live, pointer-aligned 8-byte value, aligned for f32; the driver
        // stores a float in its first four bytes (or leaves the zero we put there); any bit
        // pattern is a valid f32.
        unsafe { slot.cast::<f32>().read() }
    }
}

impl Drop for JitCall {
    fn drop(&mut self) {
        recycle_log_buffer(std::mem::take(&mut self.info));
        recycle_log_buffer(std::mem::take(&mut self.error));
    }
}

thread_local! {
    /// Log buffers of the default size, kept for the next load on this thread: a load then
    /// neither allocates nor zeroes 2 x 16 KiB (measurable against a raw load from the JIT
    /// cache, which takes tens of microseconds).
    static LOG_BUFFERS: std::cell::RefCell<Vec<Box<[u8]>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// An all-zero log buffer of `size` bytes: a recycled one for the default size.
fn take_log_buffer(size: usize) -> Box<[u8]> {
    if size == DEFAULT_JIT_LOG_SIZE {
        if let Some(b) = LOG_BUFFERS.with(|p| p.borrow_mut().pop()) {
            return b;
        }
    }
    vec![0u8; size].into_boxed_slice()
}

/// Returns a default-size log buffer to this thread's pool, all zero again. The driver writes
/// a NUL-terminated log at its start, so zeroing up to the first NUL restores it (and even
/// were bytes past that NUL written, `log_text` stops at the first NUL, which is now at 0).
fn recycle_log_buffer(mut b: Box<[u8]>) {
    if b.len() != DEFAULT_JIT_LOG_SIZE {
        return;
    }
    let end = b.iter().position(|&x| x == 0).unwrap_or(b.len());
    b[..end].fill(0);
    let _ = LOG_BUFFERS.try_with(|p| {
        let mut p = p.borrow_mut();
        if p.len() < 4 {
            p.push(b);
        }
    });
}

/// The text of a log buffer: the bytes before the first NUL, without trailing whitespace.
pub(crate) fn log_text(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).trim_end().to_owned()
}

/// Turns a failed load or link into [`Error::Jit`] carrying the JIT's log.
#[track_caller]
pub(crate) fn check_jit(
    code: sys::CUresult,
    call: &'static str,
    log: impl FnOnce() -> String,
) -> Result<()> {
    match check(code, call) {
        Err(Error::Driver {
            call,
            code,
            location,
        }) => Err(Error::Jit {
            call,
            code,
            log: log(),
            location,
        }),
        r => r,
    }
}

/// Turns `CUDA_ERROR_NOT_FOUND` from a lookup by name into [`Error::NotFound`].
#[track_caller]
pub(crate) fn check_lookup(
    code: sys::CUresult,
    call: &'static str,
    kind: &'static str,
    name: &str,
) -> Result<()> {
    match check(code, call) {
        Err(e) if e.code() == Some(ErrorCode::NOT_FOUND) => Err(Error::NotFound {
            kind,
            name: name.to_owned(),
            code: ErrorCode::NOT_FOUND,
        }),
        r => r,
    }
}

/// Calls `f` with `s` as a NUL-terminated C string: copied to the stack when short, to the
/// heap otherwise. A string with a NUL byte inside is an error.
#[track_caller]
pub(crate) fn with_c_str<R>(s: &str, f: impl FnOnce(*const c_char) -> R) -> Result<R> {
    if s.as_bytes().contains(&0) {
        return Err(Error::InvalidArgument(format!(
            "the name {s:?} contains a NUL byte"
        )));
    }
    let mut stack = [0u8; 256];
    if s.len() < stack.len() {
        stack[..s.len()].copy_from_slice(s.as_bytes());
        Ok(f(stack.as_ptr().cast()))
    } else {
        let owned = CString::new(s).map_err(|e| Error::InvalidArgument(e.to_string()))?;
        Ok(f(owned.as_ptr()))
    }
}

/// A path as a NUL-terminated C string.
#[track_caller]
pub(crate) fn path_to_c_string(path: &Path) -> Result<CString> {
    #[cfg(unix)]
    let bytes = {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str().as_bytes().to_vec()
    };
    #[cfg(not(unix))]
    let bytes = path
        .to_str()
        .ok_or_else(|| Error::InvalidArgument(format!("the path {} is not UTF-8", path.display())))?
        .as_bytes()
        .to_vec();
    CString::new(bytes).map_err(|_| {
        Error::InvalidArgument(format!("the path {} contains a NUL byte", path.display()))
    })
}

/// Device code in memory that the driver can load: PTX text, a cubin (ELF) or a fatbin.
///
/// Implemented for `str`, `String`, `[u8]`, `Vec<u8>`, `[u8; N]` and `CStr`. What the bytes
/// are is told by their first bytes: the ELF magic (a cubin), the fatbin magic, or else
/// PTX text.
pub trait ModuleImage {
    /// The image's bytes.
    fn image_bytes(&self) -> &[u8];
}

impl ModuleImage for str {
    fn image_bytes(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl ModuleImage for String {
    fn image_bytes(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl ModuleImage for [u8] {
    fn image_bytes(&self) -> &[u8] {
        self
    }
}

impl ModuleImage for Vec<u8> {
    fn image_bytes(&self) -> &[u8] {
        self
    }
}

impl<const N: usize> ModuleImage for [u8; N] {
    fn image_bytes(&self) -> &[u8] {
        self
    }
}

impl ModuleImage for CStr {
    fn image_bytes(&self) -> &[u8] {
        self.to_bytes_with_nul()
    }
}

/// What kind of image a byte string holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ImageKind {
    /// A cubin: an ELF file whose header and section table lie within the bytes.
    Elf,
    /// A fatbin whose header's size lies within the bytes.
    FatBinary,
    /// Anything else, loaded as NUL-terminated PTX text.
    Text,
}

const FATBIN_MAGIC: u32 = 0xBA55_ED50;
const SHT_NOBITS: u64 = 8;

fn read_u16(b: &[u8], at: usize) -> Option<u64> {
    Some(u16::from_le_bytes(b.get(at..at.checked_add(2)?)?.try_into().ok()?) as u64)
}

fn read_u32(b: &[u8], at: usize) -> Option<u64> {
    Some(u32::from_le_bytes(b.get(at..at.checked_add(4)?)?.try_into().ok()?) as u64)
}

fn read_u64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        b.get(at..at.checked_add(8)?)?.try_into().ok()?,
    ))
}

/// Whether `offset + size` lies within `len`.
fn within(offset: u64, size: u64, len: usize) -> bool {
    offset
        .checked_add(size)
        .is_some_and(|end| end <= len as u64)
}

/// The driver loads a cubin or fatbin from a bare pointer, reading as far as the headers say.
/// A safe load therefore checks first that everything the headers point to lies within the
/// slice: the ELF header, program headers and sections of a cubin; the header and payload
/// size of a fatbin.
pub(crate) fn classify_image(b: &[u8]) -> Result<ImageKind> {
    let bad = |what: &str| Err(Error::InvalidArgument(format!("malformed {what}")));
    if b.starts_with(b"\x7fELF") {
        match check_elf(b) {
            Some(true) => Ok(ImageKind::Elf),
            Some(false) => bad("cubin: not a little-endian 64-bit ELF file"),
            None => bad("cubin: its ELF headers point past the end of the image"),
        }
    } else if read_u32(b, 0) == Some(FATBIN_MAGIC as u64) {
        let header = read_u16(b, 6);
        let payload = read_u64(b, 8);
        match (header, payload) {
            (Some(h), Some(p)) if h >= 16 && within(h, p, b.len()) => Ok(ImageKind::FatBinary),
            _ => bad("fatbin: its header's sizes point past the end of the image"),
        }
    } else {
        Ok(ImageKind::Text)
    }
}

/// `Some(true)` for a 64-bit little-endian ELF image whose tables lie within `b`, `Some(false)`
/// for another ELF class or byte order, `None` when something points outside.
fn check_elf(b: &[u8]) -> Option<bool> {
    if b.get(4) != Some(&2) || b.get(5) != Some(&1) {
        return Some(false);
    }
    let ehsize = read_u16(b, 0x34)?;
    if ehsize < 0x40 || !within(0, ehsize, b.len()) {
        return None;
    }
    let (phoff, phentsize, phnum) = (read_u64(b, 0x20)?, read_u16(b, 0x36)?, read_u16(b, 0x38)?);
    let (shoff, shentsize, mut shnum) =
        (read_u64(b, 0x28)?, read_u16(b, 0x3A)?, read_u16(b, 0x3C)?);
    if phnum > 0 {
        if phentsize < 0x38 || !within(phoff, phentsize * phnum, b.len()) {
            return None;
        }
        for i in 0..phnum {
            let at = usize::try_from(phoff + i * phentsize).ok()?;
            if !within(read_u64(b, at + 0x08)?, read_u64(b, at + 0x20)?, b.len()) {
                return None;
            }
        }
    }
    if shoff != 0 {
        if shentsize < 0x40 || !within(shoff, shentsize, b.len()) {
            return None;
        }
        if shnum == 0 {
            // Extended numbering: the count is the size field of section 0.
            shnum = read_u64(b, usize::try_from(shoff).ok()? + 0x20)?;
        }
        if !within(shoff, shentsize.checked_mul(shnum)?, b.len()) {
            return None;
        }
        for i in 0..shnum {
            let at = usize::try_from(shoff + i * shentsize).ok()?;
            let kind = read_u32(b, at + 0x04)?;
            if kind != SHT_NOBITS
                && kind != 0
                && !within(read_u64(b, at + 0x18)?, read_u64(b, at + 0x20)?, b.len())
            {
                return None;
            }
        }
    }
    Some(true)
}

/// Calls `f` with a pointer to `bytes` that the driver can load without reading past them:
/// checked binaries as they are, text NUL-terminated (copied only when it is not already, on
/// the stack when short).
#[track_caller]
pub(crate) fn with_image<R>(bytes: &[u8], f: impl FnOnce(*const c_void) -> R) -> Result<R> {
    match classify_image(bytes)? {
        ImageKind::Elf | ImageKind::FatBinary => Ok(f(bytes.as_ptr().cast())),
        ImageKind::Text => Ok(with_nul_terminated(bytes, |p| f(p.cast()))),
    }
}

/// Calls `f` with `bytes` NUL-terminated, copying them only when the last byte is not NUL.
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

/// A module loaded into a context (`CUmodule`). Cloning is cheap and shares it.
///
/// The module keeps its [`Context`] alive, and is unloaded (`cuModuleUnload`) when the last
/// handle to it is dropped: the module, its clones, and every [`Function`] and [`Global`]
/// taken from it (they hold it through an `Arc`, so they cannot dangle). A module returned by
/// [`Library::module`](crate::Library::module) belongs to its library and is never unloaded by
/// this handle.
///
/// `Send + Sync`: a module may be used from any thread.
#[derive(Clone)]
#[doc(alias = "CUmodule")]
pub struct Module {
    inner: Arc<ModuleInner>,
}

pub(crate) struct ModuleInner {
    raw: sys::CUmodule,
    ctx: Context,
    owner: ModuleOwner,
    info_log: String,
    wall_time_ms: Option<f32>,
}

enum ModuleOwner {
    /// Loaded by this crate (or handed over): unloaded on drop.
    Loaded,
    /// A library's module in one context: the library owns it.
    Library(#[allow(dead_code)] Arc<LibraryInner>),
}

// SAFETY: a CUmodule may be used from any host thread; ModuleInner unloads it once, in Drop,
// with its context made current.
unsafe impl Send for ModuleInner {}
// SAFETY: no method mutates ModuleInner; the driver's module calls are thread-safe.
unsafe impl Sync for ModuleInner {}

impl Drop for ModuleInner {
    fn drop(&mut self) {
        if matches!(self.owner, ModuleOwner::Loaded) {
            let raw = SendRaw(self.raw);
            // SAFETY: `raw` was loaded into `ctx` and is owned by this inner, the last holder;
            // every Function and Global of it held this Arc and is gone.
            self.ctx.release("cuModuleUnload", move || unsafe {
                sys::cuModuleUnload(raw.get())
            });
        }
    }
}

impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Module")
            .field("raw", &self.inner.raw)
            .field("ctx", &self.inner.ctx.as_raw())
            .finish()
    }
}

impl Module {
    fn wrap(raw: sys::CUmodule, ctx: &Context, call: Option<&JitCall>) -> Module {
        Module {
            inner: Arc::new(ModuleInner {
                raw,
                ctx: ctx.clone(),
                owner: ModuleOwner::Loaded,
                info_log: call.map(JitCall::info_log).unwrap_or_default(),
                wall_time_ms: call.map(JitCall::wall_time_ms),
            }),
        }
    }

    pub(crate) fn from_library(
        raw: sys::CUmodule,
        ctx: &Context,
        lib: Arc<LibraryInner>,
    ) -> Module {
        Module {
            inner: Arc::new(ModuleInner {
                raw,
                ctx: ctx.clone(),
                owner: ModuleOwner::Library(lib),
                info_log: String::new(),
                wall_time_ms: None,
            }),
        }
    }

    /// Loads PTX text, a cubin or a fatbin into `ctx` with the driver's default JIT options.
    ///
    /// See [`load_data_with`](Self::load_data_with).
    #[track_caller]
    pub fn load_data<I: ModuleImage + ?Sized>(ctx: &Context, image: &I) -> Result<Module> {
        Self::load_data_with(ctx, image, &JitOptions::default())
    }

    /// Loads PTX text, a cubin or a fatbin into `ctx`, compiling PTX with `options`.
    ///
    /// PTX needs no NUL terminator (`"...\0"` avoids a copy). A cubin or fatbin is checked
    /// first: the driver reads it through a bare pointer as far as its headers say, so a
    /// header that points past the end of `image` is refused with
    /// [`Error::InvalidArgument`] instead. A failed compile is [`Error::Jit`] with the
    /// compiler's error log; the info log of a successful one is [`Module::info_log`].
    ///
    /// Wraps `cuModuleLoadDataEx`.
    ///
    /// ```no_run
    /// # let ctx = cuda_driver::Device::get(0)?.primary_context()?;
    /// use cuda_driver::{Error, JitOptions, Module};
    /// match Module::load_data_with(&ctx, "not PTX", &JitOptions::new()) {
    ///     Err(Error::Jit { log, .. }) => eprintln!("the JIT says:\n{log}"),
    ///     other => panic!("{other:?}"),
    /// }
    /// # Ok::<(), cuda_driver::Error>(())
    /// ```
    #[doc(alias = "cuModuleLoadDataEx")]
    #[track_caller]
    pub fn load_data_with<I: ModuleImage + ?Sized>(
        ctx: &Context,
        image: &I,
        options: &JitOptions,
    ) -> Result<Module> {
        let _cur = ctx.enter()?;
        let mut call = JitCall::new(options);
        let mut raw = ptr::null_mut();
        let r = with_image(image.image_bytes(), |p| {
            // SAFETY: `p` points to an image the driver reads within its bounds (checked
            // binary or NUL-terminated text) and that lives for the call; the option arrays
            // hold `call.len()` entries whose buffers live in `call` for the call; writes one
            // CUmodule.
            unsafe {
                sys::cuModuleLoadDataEx(
                    &mut raw,
                    p,
                    call.len(),
                    call.options_ptr(),
                    call.values_ptr(),
                )
            }
        })?;
        check_jit(r, "cuModuleLoadDataEx", || call.error_log())?;
        Ok(Self::wrap(raw, ctx, Some(&call)))
    }

    /// Loads a module from a bare pointer with no options and no checks.
    ///
    /// Wraps `cuModuleLoadData`.
    ///
    /// # Safety
    /// `image` points to a cubin, a fatbin or NUL-terminated PTX that stays readable for the
    /// call, and whose headers describe only memory that is part of it.
    #[doc(alias = "cuModuleLoadData")]
    #[track_caller]
    pub unsafe fn load_data_unchecked(ctx: &Context, image: *const c_void) -> Result<Module> {
        let _cur = ctx.enter()?;
        let mut raw = ptr::null_mut();
        check(
            // SAFETY: the caller guarantees `image`; writes one CUmodule.
            unsafe { sys::cuModuleLoadData(&mut raw, image) },
            "cuModuleLoadData",
        )?;
        Ok(Self::wrap(raw, ctx, None))
    }

    /// Loads a fatbin (as output by `nvcc -fatbin`), after checking that its header's sizes
    /// lie within `fatbin`.
    ///
    /// Wraps `cuModuleLoadFatBinary`.
    #[doc(alias = "cuModuleLoadFatBinary")]
    #[track_caller]
    pub fn load_fat_binary<I: ModuleImage + ?Sized>(ctx: &Context, fatbin: &I) -> Result<Module> {
        let bytes = fatbin.image_bytes();
        if classify_image(bytes)? != ImageKind::FatBinary {
            return Err(Error::InvalidArgument(
                "load_fat_binary: the image does not start with the fatbin magic 0xBA55ED50".into(),
            ));
        }
        let _cur = ctx.enter()?;
        let mut raw = ptr::null_mut();
        check(
            // SAFETY: a fatbin whose header and payload lie within `bytes`, alive for the call;
            // writes one CUmodule.
            unsafe { sys::cuModuleLoadFatBinary(&mut raw, bytes.as_ptr().cast()) },
            "cuModuleLoadFatBinary",
        )?;
        Ok(Self::wrap(raw, ctx, None))
    }

    /// Loads a module from a file: a cubin, PTX or fatbin.
    ///
    /// `cuModuleLoad` takes no options, so a PTX file that fails to compile gives a plain
    /// driver error without the JIT log; to get the log, read the file and use
    /// [`load_data_with`](Self::load_data_with).
    ///
    /// Wraps `cuModuleLoad`.
    #[doc(alias = "cuModuleLoad")]
    #[track_caller]
    pub fn load_file(ctx: &Context, path: impl AsRef<Path>) -> Result<Module> {
        let path = path_to_c_string(path.as_ref())?;
        let _cur = ctx.enter()?;
        let mut raw = ptr::null_mut();
        check(
            // SAFETY: a NUL-terminated path alive for the call; writes one CUmodule.
            unsafe { sys::cuModuleLoad(&mut raw, path.as_ptr()) },
            "cuModuleLoad",
        )?;
        Ok(Self::wrap(raw, ctx, None))
    }

    /// Takes ownership of a module loaded into `ctx`; it is unloaded when the last handle
    /// is dropped.
    ///
    /// # Safety
    /// `raw` is a live module of `ctx` that nothing else unloads.
    pub unsafe fn from_raw(raw: sys::CUmodule, ctx: &Context) -> Module {
        Self::wrap(raw, ctx, None)
    }

    /// The raw `CUmodule`, valid while `self` lives.
    pub fn as_raw(&self) -> sys::CUmodule {
        self.inner.raw
    }

    /// The context the module is loaded in.
    pub fn context(&self) -> &Context {
        &self.inner.ctx
    }

    /// The JIT's info log of the load (empty for binaries and for loads without a log).
    /// [`JitOptions::verbose`] adds register and memory use of each kernel.
    pub fn info_log(&self) -> &str {
        &self.inner.info_log
    }

    /// Milliseconds the driver spent compiling and linking the module (`CU_JIT_WALL_TIME`),
    /// for loads with options.
    pub fn wall_time_ms(&self) -> Option<f32> {
        self.inner.wall_time_ms
    }

    /// The kernel `name` (its PTX name: `extern "C"` names are the C names, others are
    /// mangled). A missing name is [`Error::NotFound`] naming it.
    ///
    /// Wraps `cuModuleGetFunction`.
    #[doc(alias = "cuModuleGetFunction")]
    #[track_caller]
    pub fn function(&self, name: &str) -> Result<Function> {
        let _cur = self.inner.ctx.enter()?;
        let mut raw = ptr::null_mut();
        let r = with_c_str(name, |p| {
            // SAFETY: the module is alive; `p` is NUL-terminated; writes one CUfunction.
            unsafe { sys::cuModuleGetFunction(&mut raw, self.inner.raw, p) }
        })?;
        check_lookup(r, "cuModuleGetFunction", "kernel", name)?;
        Ok(Function {
            raw,
            owner: FunctionOwner::Module(self.inner.clone()),
            meta: LaunchMeta::named(name),
        })
    }

    /// The module-scope variable `name` (`__device__` or `__constant__`) as `len` elements of
    /// `T`, where the variable's size must be a whole number of `T`s.
    ///
    /// Wraps `cuModuleGetGlobal_v2`.
    ///
    /// ```no_run
    /// # let ctx = cuda_driver::Device::get(0)?.primary_context()?;
    /// # let module = cuda_driver::Module::load_data(&ctx, "")?;
    /// // __constant__ float const_table[16];
    /// let mut table = module.global::<f32>("const_table")?;
    /// table.copy_from_host(&[1.0; 16])?;
    /// # Ok::<(), cuda_driver::Error>(())
    /// ```
    #[doc(alias = "cuModuleGetGlobal")]
    #[doc(alias = "cuModuleGetGlobal_v2")]
    #[track_caller]
    pub fn global<T: DeviceRepr>(&self, name: &str) -> Result<Global<T>> {
        let _cur = self.inner.ctx.enter()?;
        let (mut ptr, mut bytes) = (0, 0);
        let r = with_c_str(name, |p| {
            // SAFETY: the module is alive; `p` is NUL-terminated; writes a pointer and a size.
            unsafe { sys::cuModuleGetGlobal_v2(&mut ptr, &mut bytes, self.inner.raw, p) }
        })?;
        check_lookup(r, "cuModuleGetGlobal_v2", "global", name)?;
        Global::new(
            ptr,
            bytes,
            name,
            &self.inner.ctx,
            Keep::Module(self.inner.clone()),
        )
    }
}

/// What keeps the memory of a [`Global`] alive.
#[derive(Clone)]
pub(crate) enum Keep {
    Module(#[allow(dead_code)] Arc<ModuleInner>),
    Library(#[allow(dead_code)] Arc<LibraryInner>),
}

/// A module-scope variable (`__device__` or `__constant__`) of a module or library in one
/// context, viewed as `len` elements of `T`: copy to and from it, or pass it to a kernel as
/// a pointer. It keeps its module (or library) and context alive.
pub struct Global<T: DeviceRepr> {
    /// Kept first and by value: a kernel argument is a pointer to this field.
    pub(crate) ptr: sys::CUdeviceptr,
    len: usize,
    ctx: Context,
    _keep: Keep,
    _marker: PhantomData<T>,
}

// SAFETY: a device address of a loaded module; the driver's copies are thread-safe, T is
// plain data.
unsafe impl<T: DeviceRepr> Send for Global<T> {}
// SAFETY: as above; `&self` methods only read device memory through the driver.
unsafe impl<T: DeviceRepr> Sync for Global<T> {}

impl<T: DeviceRepr> std::fmt::Debug for Global<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Global")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("len", &self.len)
            .field("type", &std::any::type_name::<T>())
            .finish()
    }
}

impl<T: DeviceRepr> Global<T> {
    #[track_caller]
    pub(crate) fn new(
        ptr: sys::CUdeviceptr,
        bytes: usize,
        name: &str,
        ctx: &Context,
        keep: Keep,
    ) -> Result<Global<T>> {
        let size = size_of::<T>();
        if size == 0 || bytes % size != 0 {
            return Err(Error::InvalidArgument(format!(
                "the variable `{name}` is {bytes} bytes, not a whole number of {} ({size} bytes)",
                std::any::type_name::<T>()
            )));
        }
        Ok(Global {
            ptr,
            len: bytes / size,
            ctx: ctx.clone(),
            _keep: keep,
            _marker: PhantomData,
        })
    }

    /// The variable's device address in its context.
    #[inline]
    pub fn as_raw(&self) -> sys::CUdeviceptr {
        self.ptr
    }

    /// Number of `T` elements.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the variable holds no elements (never, for a variable the driver found).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size in bytes.
    #[inline]
    pub fn bytes(&self) -> usize {
        self.len * size_of::<T>()
    }

    /// The context the variable lives in.
    #[inline]
    pub fn context(&self) -> &Context {
        &self.ctx
    }
}

// SAFETY: the view covers the variable (`len` elements, checked at lookup), which stays loaded
// while `self` lives; not stream-ordered.
unsafe impl<T: DeviceRepr> DeviceMemory for Global<T> {
    type Elem = T;
    #[inline]
    fn as_view(&self) -> DeviceSlice<'_, T> {
        DeviceSlice {
            ptr: self.ptr,
            len: self.len,
            ctx: &self.ctx,
            home: ptr::null_mut(),
            _marker: PhantomData,
        }
    }
}

// SAFETY: as above, borrowed exclusively.
unsafe impl<T: DeviceRepr> DeviceMemoryMut for Global<T> {
    #[inline]
    fn as_view_mut(&mut self) -> DeviceSliceMut<'_, T> {
        DeviceSliceMut {
            ptr: self.ptr,
            len: self.len,
            ctx: &self.ctx,
            home: ptr::null_mut(),
            _marker: PhantomData,
        }
    }
}

/// Who keeps a [`Function`]'s code loaded.
#[derive(Clone)]
pub(crate) enum FunctionOwner {
    /// A kernel of a module.
    Module(Arc<ModuleInner>),
    /// A kernel of a library's module in one context.
    Library(#[allow(dead_code)] Arc<LibraryInner>, Context),
    /// A handle given to [`Function::from_raw`]: the caller keeps the module loaded.
    Borrowed(Context),
}

/// A kernel of a module in one context (`CUfunction`), ready to launch.
///
/// A `Function` holds its [`Module`] (or library) and context through an `Arc`, so it can
/// never outlive the code it refers to: there is no lifetime to track, and a function can be
/// stored and sent anywhere (`Send + Sync`). It caches its name and, on the first checked
/// launch, its parameter list, against which every [`launch`](Function::launch) checks its
/// arguments.
///
/// Launching methods are documented with [`launch`](Function::launch); occupancy queries
/// with [`max_active_blocks_per_multiprocessor`](Function::max_active_blocks_per_multiprocessor).
#[doc(alias = "CUfunction")]
#[derive(Clone)]
pub struct Function {
    pub(crate) raw: sys::CUfunction,
    pub(crate) owner: FunctionOwner,
    pub(crate) meta: LaunchMeta,
}

// SAFETY: a CUfunction may be used from any host thread; the owner keeps its module loaded.
unsafe impl Send for Function {}
// SAFETY: attribute setters and launches are thread-safe in the driver; the caches are
// OnceLocks.
unsafe impl Sync for Function {}

impl std::fmt::Debug for Function {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Function")
            .field("raw", &self.raw)
            .field("name", &self.meta.known_name())
            .finish()
    }
}

impl Function {
    /// Wraps a function of a module of `ctx` that the caller keeps loaded.
    ///
    /// # Safety
    /// `raw` is a function of a module loaded into `ctx` that stays loaded while the returned
    /// `Function` (or a clone) lives.
    pub unsafe fn from_raw(raw: sys::CUfunction, ctx: &Context) -> Function {
        Function {
            raw,
            owner: FunctionOwner::Borrowed(ctx.clone()),
            meta: LaunchMeta::unnamed(),
        }
    }

    /// The raw `CUfunction`, valid while `self` lives.
    #[inline]
    pub fn as_raw(&self) -> sys::CUfunction {
        self.raw
    }

    /// The context the function belongs to; it launches only on streams of this context.
    #[inline]
    pub fn context(&self) -> &Context {
        match &self.owner {
            FunctionOwner::Module(m) => &m.ctx,
            FunctionOwner::Library(_, ctx) | FunctionOwner::Borrowed(ctx) => ctx,
        }
    }

    /// An attribute of the kernel (registers, static shared memory, maximum block size, ...).
    ///
    /// Wraps `cuFuncGetAttribute`.
    #[doc(alias = "cuFuncGetAttribute")]
    #[track_caller]
    pub fn attribute(&self, attr: FunctionAttribute) -> Result<i32> {
        let _cur = self.context().enter()?;
        let mut v = 0;
        check(
            // SAFETY: the function is alive; writes one int.
            unsafe { sys::cuFuncGetAttribute(&mut v, attr.0, self.raw) },
            "cuFuncGetAttribute",
        )?;
        Ok(v)
    }

    /// Sets an attribute, such as
    /// [`MAX_DYNAMIC_SHARED_SIZE_BYTES`](FunctionAttribute::MAX_DYNAMIC_SHARED_SIZE_BYTES)
    /// to allow more than 48 KiB of dynamic shared memory, or
    /// [`NON_PORTABLE_CLUSTER_SIZE_ALLOWED`](FunctionAttribute::NON_PORTABLE_CLUSTER_SIZE_ALLOWED).
    ///
    /// Wraps `cuFuncSetAttribute`.
    #[doc(alias = "cuFuncSetAttribute")]
    #[track_caller]
    pub fn set_attribute(&self, attr: FunctionAttribute, value: i32) -> Result<()> {
        let _cur = self.context().enter()?;
        check(
            // SAFETY: the function is alive; plain values.
            unsafe { sys::cuFuncSetAttribute(self.raw, attr.0, value) },
            "cuFuncSetAttribute",
        )
    }

    /// Sets the preferred L1/shared memory split for this kernel.
    ///
    /// Wraps `cuFuncSetCacheConfig`.
    #[doc(alias = "cuFuncSetCacheConfig")]
    #[track_caller]
    pub fn set_cache_config(&self, config: CacheConfig) -> Result<()> {
        let _cur = self.context().enter()?;
        check(
            // SAFETY: the function is alive; a plain value.
            unsafe { sys::cuFuncSetCacheConfig(self.raw, config.as_raw()) },
            "cuFuncSetCacheConfig",
        )
    }

    /// The most threads a block of this kernel may have on its device
    /// ([`FunctionAttribute::MAX_THREADS_PER_BLOCK`]).
    #[track_caller]
    pub fn max_threads_per_block(&self) -> Result<u32> {
        Ok(self.attribute(FunctionAttribute::MAX_THREADS_PER_BLOCK)? as u32)
    }

    /// Registers used by each thread ([`FunctionAttribute::NUM_REGS`]).
    #[track_caller]
    pub fn num_registers(&self) -> Result<u32> {
        Ok(self.attribute(FunctionAttribute::NUM_REGS)? as u32)
    }

    /// Statically allocated shared memory per block in bytes
    /// ([`FunctionAttribute::SHARED_SIZE_BYTES`]).
    #[track_caller]
    pub fn static_shared_bytes(&self) -> Result<usize> {
        Ok(self.attribute(FunctionAttribute::SHARED_SIZE_BYTES)? as usize)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn recycled_log_buffers_come_back_all_zero() {
        let opts = JitOptions::new();
        let mut call = JitCall::new(&opts);
        call.info[..6].copy_from_slice(b"hello\0");
        call.error[..3].copy_from_slice(b"err");
        assert_eq!(call.info_log(), "hello");
        drop(call);
        let call = JitCall::new(&opts);
        assert!(call.info.iter().all(|&b| b == 0));
        assert!(call.error.iter().all(|&b| b == 0));
        assert_eq!(call.info_log(), "");
    }

    use super::*;

    fn elf_with_section(offset: u64, size: u64, total: usize) -> Vec<u8> {
        let mut b = vec![0u8; total];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 2; // ELFCLASS64
        b[5] = 1; // little-endian
        b[0x34..0x36].copy_from_slice(&0x40u16.to_le_bytes());
        // One section header at 0x40, 0x40 bytes, of type PROGBITS.
        b[0x28..0x30].copy_from_slice(&0x40u64.to_le_bytes());
        b[0x3A..0x3C].copy_from_slice(&0x40u16.to_le_bytes());
        b[0x3C..0x3E].copy_from_slice(&1u16.to_le_bytes());
        b[0x44..0x48].copy_from_slice(&1u32.to_le_bytes());
        b[0x58..0x60].copy_from_slice(&offset.to_le_bytes());
        b[0x60..0x68].copy_from_slice(&size.to_le_bytes());
        b
    }

    #[test]
    fn elf_images_are_checked_against_their_length() {
        assert_eq!(
            classify_image(&elf_with_section(0x80, 0x20, 0xA0)).unwrap(),
            ImageKind::Elf
        );
        // A section past the end.
        assert!(classify_image(&elf_with_section(0x80, 0x21, 0xA0)).is_err());
        // An offset that overflows.
        assert!(classify_image(&elf_with_section(u64::MAX, 2, 0xA0)).is_err());
        // A truncated header.
        assert!(classify_image(b"\x7fELF\x02\x01").is_err());
        // 32-bit ELF is refused.
        let mut b = elf_with_section(0x80, 0x20, 0xA0);
        b[4] = 1;
        let e = classify_image(&b).unwrap_err();
        assert!(e.to_string().contains("64-bit"), "{e}");
        // A section table past the end.
        let mut b = elf_with_section(0x80, 0x20, 0xA0);
        b[0x3C..0x3E].copy_from_slice(&3u16.to_le_bytes());
        assert!(classify_image(&b).is_err());
    }

    #[test]
    fn fatbins_are_checked_against_their_length() {
        let mut b = vec![0u8; 64];
        b[..4].copy_from_slice(&FATBIN_MAGIC.to_le_bytes());
        b[6..8].copy_from_slice(&16u16.to_le_bytes());
        b[8..16].copy_from_slice(&48u64.to_le_bytes());
        assert_eq!(classify_image(&b).unwrap(), ImageKind::FatBinary);
        b[8..16].copy_from_slice(&49u64.to_le_bytes());
        assert!(classify_image(&b).is_err());
        assert!(classify_image(&b[..10]).is_err());
    }

    #[test]
    fn anything_else_is_text() {
        assert_eq!(classify_image(b".version 8.0\n").unwrap(), ImageKind::Text);
        assert_eq!(classify_image(b"").unwrap(), ImageKind::Text);
    }

    #[test]
    fn text_is_nul_terminated_without_a_copy_when_it_already_is() {
        let s = b"abc\0";
        with_nul_terminated(s, |p| assert_eq!(p, s.as_ptr()));
        for len in [3usize, 1023, 1024, 5000] {
            let text = vec![b'x'; len];
            with_nul_terminated(&text, |p| {
                assert_ne!(p, text.as_ptr());
                // SAFETY: the callee made a NUL-terminated copy of `text`.
                let c = unsafe { CStr::from_ptr(p.cast()) };
                assert_eq!(c.to_bytes(), &text[..]);
            });
        }
    }

    #[test]
    fn names_become_c_strings() {
        with_c_str("VecAdd", |p| {
            // SAFETY: with_c_str passes a NUL-terminated copy.
            assert_eq!(unsafe { CStr::from_ptr(p) }, c"VecAdd");
        })
        .unwrap();
        let long = "k".repeat(300);
        with_c_str(&long, |p| {
            // SAFETY: as above.
            assert_eq!(unsafe { CStr::from_ptr(p) }.to_bytes(), long.as_bytes());
        })
        .unwrap();
        assert!(matches!(
            with_c_str("a\0b", |_| ()),
            Err(Error::InvalidArgument(_))
        ));
    }

    #[test]
    fn jit_options_fill_the_option_arrays() {
        let opts = JitOptions::new()
            .max_registers(40)
            .optimization_level(2)
            .target(JitTarget::COMPUTE_90)
            .verbose(true)
            .log_buffer_size(100);
        let call = JitCall::new(&opts);
        let pairs: Vec<_> = (0..call.count)
            .map(|i| (call.options[i], call.values[i] as usize))
            .collect();
        assert!(pairs.contains(&(sys::CU_JIT_MAX_REGISTERS, 40)));
        assert!(pairs.contains(&(sys::CU_JIT_OPTIMIZATION_LEVEL, 2)));
        assert!(pairs.contains(&(sys::CU_JIT_TARGET, 90)));
        assert!(pairs.contains(&(sys::CU_JIT_LOG_VERBOSE, 1)));
        assert!(pairs.contains(&(sys::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, 100)));
        assert!(pairs.contains(&(sys::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, 100)));
        assert!(pairs.contains(&(sys::CU_JIT_INFO_LOG_BUFFER, call.info.as_ptr() as usize)));
        assert_eq!(call.info.len(), 100);
        assert_eq!(call.wall_time_ms(), 0.0);
        // Nothing unasked for.
        assert!(!pairs
            .iter()
            .any(|p| p.0 == sys::CU_JIT_TARGET_FROM_CUCONTEXT));
        assert_eq!(
            JitTarget::from_compute_capability(8, 6),
            JitTarget::COMPUTE_86
        );
    }

    #[test]
    fn logs_stop_at_the_first_nul() {
        assert_eq!(log_text(b"error: x\n\0garbage"), "error: x");
        assert_eq!(log_text(b"no nul"), "no nul");
        assert_eq!(log_text(&[0; 8]), "");
    }
}
