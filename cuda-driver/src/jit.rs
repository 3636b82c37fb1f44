//! The JIT compiler's options and logs, shared by every driver call that compiles or links
//! device code: module and library loads and the linker.
//!
//! [`JitOptions`] is the caller's side. `JitCall` is one call's `CUjit_option` arrays and the
//! log buffers they point to. The driver may write the logs after the call returns (a library
//! is compiled lazily, when it is first loaded into a context; a link state until it is
//! destroyed), so a `JitCall` given to a load lives as long as what was loaded, unmoved, and is
//! read with volatile reads (the driver, not Rust, writes it).

use std::ffi::{c_uint, c_void};
use std::ptr::{self, NonNull};

use cuda_driver_macros::wraps;
use cuda_driver_sys as sys;

use crate::error::{check, Error, Result};
use crate::types::ErrorCode;
use crate::types::{JitCacheMode, JitFallback, JitTarget};

impl JitTarget {
    /// The `compute_<major><minor>` target, such as `compute_90` for `(9, 0)`; the
    /// architecture-specific variants (`COMPUTE_90A`, ...) are named constants.
    pub const fn from_compute_capability(major: u32, minor: u32) -> JitTarget {
        JitTarget::from_raw(major * 10 + minor)
    }
}

/// The default size of each JIT log buffer (info and error), in bytes.
pub const DEFAULT_JIT_LOG_SIZE: usize = 16 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    Default,
    FromContext,
    Explicit(JitTarget),
}

/// Options of the JIT compiler and linker (`CUjit_option`), for loading modules and
/// libraries and for the [`Linker`](crate::module::Linker).
///
/// Built with chained setters; options left unset keep the driver's default. The info and
/// error logs and the wall time (but by a library, which does not report it) are requested
/// (the logs in buffers of
/// [`log_buffer_size`](Self::log_buffer_size) bytes each, 16 KiB by default), but by a load
/// with no option set. A module load then ([`Module::load_data`](crate::Module::load_data))
/// passes none, as the raw call does, and asks for the error log only after a failure; a
/// library load ([`Library::load_data`](crate::Library::load_data)) passes the error log only,
/// which lazy loading may need at the library's first use in a context, where an info log
/// would cost the driver about 1 % of that first use. To keep the info log (and a module's
/// wall time) with the driver's defaults, set any option: `JitOptions::new().verbose(false)`
/// changes nothing else.
///
/// ```
/// use cuda_driver::{types::JitCacheMode, jit::JitOptions, types::JitTarget};
/// let opts = JitOptions::new()
///     .max_registers(64)
///     .optimization_level(3)
///     .target(JitTarget::from_compute_capability(9, 0))
///     .generate_line_info(true)
///     .cache_mode(JitCacheMode::CG)
///     .verbose(true);
/// # let _ = opts;
/// ```
#[wraps(CUjit_option)]
#[derive(Clone, Debug, PartialEq, Eq)]
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
    /// The driver's defaults, with the logs captured as the type's documentation says.
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
    ///
    /// The buffers of a load live as long as the module or library loaded (the driver may
    /// write them when it compiles lazily), and are reused by a later load on the same thread
    /// once it is unloaded.
    pub fn log_buffer_size(mut self, bytes: usize) -> Self {
        self.log_size = bytes.clamp(1, u32::MAX as usize);
        self
    }
}

/// At most this many JIT options go to one driver call.
const MAX_JIT_OPTIONS: usize = 16;

/// The option arrays of one driver call with JIT options, and the log buffers they point to.
///
/// The driver writes the `values` slots of the output options (wall time, log sizes) and the
/// log buffers during the call, and for lazily compiled code (libraries) or a link state, later
/// too. So the `JitCall` of a load is boxed (it never moves) and kept by what was loaded until
/// that is unloaded; then a call with default-size log buffers goes back to a per-thread pool.
pub(crate) struct JitCall {
    options: [sys::CUjit_option; MAX_JIT_OPTIONS],
    values: [*mut c_void; MAX_JIT_OPTIONS],
    count: usize,
    info: LogBuffer,
    error: LogBuffer,
    /// The slot of `CU_JIT_WALL_TIME`, when it was asked for.
    wall_time_slot: Option<usize>,
}

// SAFETY: the raw pointers point into the JitCall's own heap buffers (owned, freed once in
// Drop); moving it to another thread moves that ownership with it.
unsafe impl Send for JitCall {}

impl JitCall {
    /// The option arrays for `opts` and the wall time, in a box that does not move.
    pub(crate) fn new(opts: &JitOptions) -> Box<JitCall> {
        Self::build(opts, true, true)
    }

    /// The arrays of a library load: [`new`](Self::new) without `CU_JIT_WALL_TIME` (a library
    /// does not report it), and with no option set (`opts` is the default) the error log
    /// only, which the driver may write at the library's first use in a context (lazy
    /// loading): an info log buffer costs the driver about 1 % of that first use (the
    /// benchmark's library round trip), for a log that the default options leave empty.
    pub(crate) fn for_library(opts: &JitOptions) -> Box<JitCall> {
        Self::build(opts, false, *opts != JitOptions::default())
    }

    fn build(opts: &JitOptions, wall_time: bool, info_log: bool) -> Box<JitCall> {
        let mut call = Self::take(opts.log_size);
        // Scalars travel in the pointer-sized slot itself, as cuda.h specifies for
        // `unsigned int` and `int` options.
        let size = opts.log_size as *mut c_void;
        let info = call.info.as_mut_ptr().cast();
        let error = call.error.as_mut_ptr().cast();
        if info_log {
            call.push(sys::CU_JIT_INFO_LOG_BUFFER, info);
            call.push(sys::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, size);
        }
        call.push(sys::CU_JIT_ERROR_LOG_BUFFER, error);
        call.push(sys::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, size);
        if wall_time {
            call.wall_time_slot = Some(call.count);
            call.push(sys::CU_JIT_WALL_TIME, ptr::null_mut());
        }
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

    /// An empty call with all-zero log buffers of `log_size` bytes: one from this thread's
    /// pool for the default size (see [`LiveJit::free`]), a new one otherwise.
    fn take(log_size: usize) -> Box<JitCall> {
        let pooled = if log_size == DEFAULT_JIT_LOG_SIZE {
            CALLS.try_with(|p| p.borrow_mut().pop()).ok().flatten()
        } else {
            None
        };
        match pooled {
            Some(mut call) => {
                // The arrays past `count` are never read; the buffers were zeroed when the
                // call was pooled.
                call.count = 0;
                call.wall_time_slot = None;
                call
            }
            None => Box::new(JitCall {
                options: [0; MAX_JIT_OPTIONS],
                values: [ptr::null_mut(); MAX_JIT_OPTIONS],
                count: 0,
                info: LogBuffer::zeroed(log_size),
                error: LogBuffer::zeroed(log_size),
                wall_time_slot: None,
            }),
        }
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

    /// The info log as the driver has written it so far.
    pub(crate) fn info_log(&self) -> String {
        self.info.text()
    }

    /// The error log as the driver has written it so far.
    pub(crate) fn error_log(&self) -> String {
        self.error.text()
    }

    /// Milliseconds the driver spent compiling and linking, which it writes over the first
    /// four bytes of the option's value slot (0 when the wall time was not asked for).
    pub(crate) fn wall_time_ms(&self) -> f32 {
        let Some(at) = self.wall_time_slot else {
            return 0.0;
        };
        let slot: *const *mut c_void = &self.values[at];
        // SAFETY: the slot is a live, pointer-aligned 8-byte value, aligned for f32; the driver
        // stores a float in its first four bytes (or leaves the zero we put there); any bit
        // pattern is a valid f32. Volatile: the driver, not Rust, writes it.
        unsafe { slot.cast::<f32>().read_volatile() }
    }
}

/// The [`JitCall`] of a load, kept while the driver may still write its logs (until what was
/// loaded is unloaded). Dropping it leaks the call; only [`free`](Self::free), after the
/// unload, gives its buffers back.
pub(crate) struct LiveJit(std::mem::ManuallyDrop<Box<JitCall>>);

impl LiveJit {
    pub(crate) fn new(call: Box<JitCall>) -> LiveJit {
        LiveJit(std::mem::ManuallyDrop::new(call))
    }

    pub(crate) fn get(&self) -> &JitCall {
        &self.0
    }

    /// Frees the call's buffers.
    ///
    /// # Safety
    /// The driver no longer writes them: what they were given to is unloaded (or was never
    /// loaded).
    pub(crate) unsafe fn free(self) {
        let LiveJit(call) = self;
        // SAFETY: the caller guarantees the driver is done with the buffers.
        unsafe { recycle(std::mem::ManuallyDrop::into_inner(call)) };
    }
}

thread_local! {
    /// Calls with default-size log buffers, kept for the next load on this thread: a load then
    /// neither allocates the call nor allocates and zeroes 2 x 16 KiB of logs (measurable
    /// against a raw load from the JIT cache, which takes tens of microseconds).
    // Boxed: a call's slots stay where the driver was told they are (see `JitCall`).
    #[allow(clippy::vec_box)]
    static CALLS: std::cell::RefCell<Vec<Box<JitCall>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Keeps a call whose driver use is over for the next load on this thread, its logs all zero
/// again; a call with other log sizes, or beyond the pool's four, is freed. The driver writes
/// a NUL-terminated log at a buffer's start, so zeroing up to the first NUL restores it (and
/// were bytes past that NUL written, the text would still stop at the first NUL, now at 0).
///
/// # Safety
/// The driver no longer writes the call's buffers.
unsafe fn recycle(mut call: Box<JitCall>) {
    if call.info.len != DEFAULT_JIT_LOG_SIZE || call.error.len != DEFAULT_JIT_LOG_SIZE {
        return;
    }
    // SAFETY: the caller guarantees that the driver is done with both buffers.
    unsafe {
        call.info.clear();
        call.error.clear();
    }
    let _ = CALLS.try_with(|p| {
        let mut p = p.borrow_mut();
        if p.len() < 4 {
            p.push(call);
        }
    });
}

/// One zero-initialised log buffer that the driver writes through a raw pointer. It is never
/// borrowed as a Rust slice while the driver may write it: reads are volatile.
struct LogBuffer {
    ptr: NonNull<u8>,
    len: usize,
}

impl LogBuffer {
    /// A new all-zero buffer of `size` bytes.
    fn zeroed(size: usize) -> LogBuffer {
        let b = vec![0u8; size].into_boxed_slice();
        let len = b.len();
        LogBuffer {
            ptr: NonNull::new(Box::into_raw(b).cast::<u8>()).unwrap_or(NonNull::dangling()),
            len,
        }
    }

    fn as_mut_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Zeroes the buffer up to its first NUL (all of it when there is none).
    ///
    /// # Safety
    /// The driver no longer writes the buffer.
    unsafe fn clear(&mut self) {
        // SAFETY: `ptr` and `len` are the live allocation this buffer owns; `&mut self` and
        // the caller's promise (the driver is done with it) make the slice exclusive.
        let b = unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) };
        let end = b.iter().position(|&x| x == 0).unwrap_or(b.len());
        b[..end].fill(0);
    }

    /// The text before the first NUL, without trailing whitespace.
    fn text(&self) -> String {
        let mut bytes = Vec::new();
        for i in 0..self.len {
            // SAFETY: `i < len`, within the live allocation this buffer owns; volatile because
            // the driver may write it through the pointer it was given (every byte value is a
            // valid u8, so a racing write can only make the text stale).
            let b = unsafe { self.ptr.as_ptr().add(i).read_volatile() };
            if b == 0 {
                break;
            }
            bytes.push(b);
        }
        String::from_utf8_lossy(&bytes).trim_end().to_owned()
    }
}

impl Drop for LogBuffer {
    fn drop(&mut self) {
        // SAFETY: `ptr` and `len` come from Box::into_raw of a boxed slice in `zeroed`; the
        // driver no longer writes it (what it was given to is unloaded or destroyed before the
        // JitCall drops).
        drop(unsafe { Box::from_raw(ptr::slice_from_raw_parts_mut(self.ptr.as_ptr(), self.len)) });
    }
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

/// The result of a lookup by name (a kernel, a global, a library's module): `CUDA_ERROR_NOT_FOUND`
/// is [`Error::NotFound`] naming it; another failure is [`Error::Jit`] when the JIT's error log
/// has something to say (code loaded lazily fails at its first use), a plain driver error
/// otherwise.
#[track_caller]
pub(crate) fn check_lookup(
    code: sys::CUresult,
    call: &'static str,
    kind: &'static str,
    name: &str,
    error_log: impl FnOnce() -> String,
) -> Result<()> {
    match check(code, call) {
        Err(e) if e.code() == Some(ErrorCode::NOT_FOUND) => Err(Error::NotFound {
            kind,
            name: name.to_owned(),
            code: ErrorCode::NOT_FOUND,
        }),
        Err(Error::Driver {
            call,
            code,
            location,
        }) => {
            let log = error_log();
            if log.is_empty() {
                Err(Error::Driver {
                    call,
                    code,
                    location,
                })
            } else {
                Err(Error::Jit {
                    call,
                    code,
                    log,
                    location,
                })
            }
        }
        r => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `text` at the start of a log buffer, as the driver does.
    fn write_log(b: &LogBuffer, text: &[u8]) {
        assert!(text.len() <= b.len);
        // SAFETY: within the buffer, which nothing else writes in the test.
        unsafe { ptr::copy_nonoverlapping(text.as_ptr(), b.as_mut_ptr(), text.len()) };
    }

    #[test]
    fn recycled_calls_come_back_empty_with_all_zero_logs() {
        let opts = JitOptions::new().max_registers(32).verbose(true);
        let call = JitCall::new(&opts);
        write_log(&call.info, b"hello\0");
        write_log(&call.error, b"err");
        assert_eq!(call.info_log(), "hello");
        assert_eq!(call.error_log(), "err");
        let (info, error) = (call.info.as_mut_ptr(), call.error.as_mut_ptr());
        // SAFETY: no driver ever saw this call.
        unsafe { LiveJit::new(call).free() };
        // The next default-size call on this thread is the same one, reset: for a module
        // (both logs and the wall time), then, given back again, for a library with no option
        // set (the error log only).
        let buffers = |c: &JitCall| (c.info.as_mut_ptr(), c.error.as_mut_ptr());
        let call = JitCall::new(&JitOptions::new());
        assert_eq!(buffers(&call), (info, error));
        assert_eq!((call.count, call.wall_time_slot), (5, Some(4)));
        // SAFETY: no driver ever saw this call.
        unsafe { LiveJit::new(call).free() };
        let call = JitCall::for_library(&JitOptions::new());
        assert_eq!(buffers(&call), (info, error));
        assert_eq!((call.count, call.wall_time_slot), (2, None));
        assert!(!call.options[..call.count].contains(&sys::CU_JIT_MAX_REGISTERS));
        for b in [&call.info, &call.error] {
            // SAFETY: the buffer's own bytes; the driver never saw this call.
            let bytes = unsafe { std::slice::from_raw_parts(b.as_mut_ptr(), b.len) };
            assert!(bytes.iter().all(|&x| x == 0));
        }
        assert_eq!(call.info_log(), "");
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
        assert!(pairs.contains(&(sys::CU_JIT_INFO_LOG_BUFFER, call.info.as_mut_ptr() as usize)));
        assert_eq!(call.info.len, 100);
        assert_eq!(call.wall_time_ms(), 0.0);
        assert!(pairs.contains(&(sys::CU_JIT_WALL_TIME, 0)));
        // A library's call asks for no wall time.
        let lib = JitCall::for_library(&opts);
        assert_eq!(lib.count, call.count - 1);
        assert!(!lib.options[..lib.count].contains(&sys::CU_JIT_WALL_TIME));
        assert_eq!(lib.wall_time_ms(), 0.0);
        // With no option set, the error log only (its buffer and size).
        let lib = JitCall::for_library(&JitOptions::new());
        assert_eq!(
            &lib.options[..lib.count],
            [
                sys::CU_JIT_ERROR_LOG_BUFFER,
                sys::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
            ]
        );
        assert_eq!(
            (lib.values[0], lib.values[1] as usize),
            (lib.error.as_mut_ptr().cast(), DEFAULT_JIT_LOG_SIZE)
        );
        // Any option set keeps the info log too.
        let lib = JitCall::for_library(&JitOptions::new().verbose(false));
        assert!(lib.options[..lib.count].contains(&sys::CU_JIT_INFO_LOG_BUFFER));
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
        let b = LogBuffer::zeroed(32);
        write_log(&b, b"error: x\n\0garbage");
        assert_eq!(b.text(), "error: x");
        let b = LogBuffer::zeroed(6);
        write_log(&b, b"no nul");
        assert_eq!(b.text(), "no nul");
        assert_eq!(LogBuffer::zeroed(8).text(), "");
    }

    #[test]
    fn lookups_carry_the_error_log_when_there_is_one() {
        let e = check_lookup(
            sys::CUDA_ERROR_NOT_FOUND,
            "cuLibraryGetKernel",
            "kernel",
            "k",
            || "unused".into(),
        )
        .unwrap_err();
        assert!(matches!(e, Error::NotFound { kind: "kernel", .. }), "{e:?}");
        let e = check_lookup(
            sys::CUDA_ERROR_INVALID_PTX,
            "cuLibraryGetKernel",
            "kernel",
            "k",
            || "ptxas fatal: bad".into(),
        )
        .unwrap_err();
        match e {
            Error::Jit {
                call, code, log, ..
            } => {
                assert_eq!((call, code), ("cuLibraryGetKernel", ErrorCode::INVALID_PTX));
                assert_eq!(log, "ptxas fatal: bad");
            }
            e => panic!("{e:?}"),
        }
        let e = check_lookup(
            sys::CUDA_ERROR_INVALID_VALUE,
            "cuLibraryGetKernel",
            "kernel",
            "k",
            String::new,
        )
        .unwrap_err();
        assert!(matches!(e, Error::Driver { .. }), "{e:?}");
        assert!(check_lookup(sys::CUDA_SUCCESS, "x", "kernel", "k", String::new).is_ok());
    }
}
