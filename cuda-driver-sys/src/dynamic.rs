//! Dynamic loading of the driver: the `dynamic-loading` feature, and Windows builds that find
//! no `cuda.lib` to link.
//!
//! Instead of the `extern "C"` declarations of `bindings.rs`, every function of cuda.h is a Rust
//! function of the same name and signature (generated into `dynamic/functions.rs` by
//! `cargo xtask bindgen`) that looks its symbol up in the driver library the first time it is
//! called, caches the address in a static of its own, and calls it:
//!
//! * The library is `libcuda.so.1` (`nvcuda.dll` on Windows), opened once, on the first call
//!   of any function, and never closed.
//! * When it cannot be opened (no NVIDIA driver), every function returns
//!   `CUDA_ERROR_STUB_LIBRARY`, as the stub library of a build without a driver does.
//! * When the driver lacks a function's symbol (a driver older than the function), that
//!   function returns `CUDA_ERROR_NOT_FOUND`; the others work.
//! * After the first call, a call costs one atomic load (`Acquire`, a plain load on x86-64 and
//!   a load-acquire on AArch64) and an indirect call: no lock.

use core::ffi::{c_void, CStr};
use core::sync::atomic::{AtomicPtr, Ordering};
use std::sync::OnceLock;

use crate::bindings::{CUresult, CUDA_ERROR_NOT_FOUND, CUDA_ERROR_STUB_LIBRARY};

#[rustfmt::skip]
pub(crate) mod functions;



/// The file name of the driver library, as the system's loader searches for it.
#[cfg(windows)]
const LIBRARY: &str = "nvcuda.dll";
/// The file name of the driver library, as the system's loader searches for it.
#[cfg(not(windows))]
const LIBRARY: &str = "libcuda.so.1";

/// [`Symbol::address`] values that are no address.
const UNRESOLVED: usize = 0;
const NO_SYMBOL: usize = 1;
const NO_LIBRARY: usize = 2;

/// The driver library, opened on first use; `None` when it cannot be opened.
fn library() -> Option<&'static libloading::Library> {
    static LIB: OnceLock<Option<libloading::Library>> = OnceLock::new();
    LIB.get_or_init(|| {
        // SAFETY: the driver library's initialisers are safe to run on any thread; it is
        // never unloaded (the static is never dropped), so no symbol outlives it.
        unsafe { libloading::Library::new(LIBRARY) }.ok()
    })
    .as_ref()
}

/// One function's symbol and its cached address.
pub(crate) struct Symbol {
    name: &'static CStr,
    /// [`UNRESOLVED`] until the first call, then the symbol's address, or [`NO_SYMBOL`] or
    /// [`NO_LIBRARY`].
    address: AtomicPtr<c_void>,
}

impl Symbol {
    pub(crate) const fn new(name: &'static CStr) -> Symbol {
        Symbol {
            name,
            address: AtomicPtr::new(UNRESOLVED as *mut c_void),
        }
    }

    /// The symbol's address, or the code the function returns instead.
    #[inline(always)]
    pub(crate) fn get(&self) -> Result<*mut c_void, CUresult> {
        let p = self.address.load(Ordering::Acquire);
        if p as usize > NO_LIBRARY {
            Ok(p)
        } else {
            self.resolve()
        }
    }

    #[cold]
    #[inline(never)]
    fn resolve(&self) -> Result<*mut c_void, CUresult> {
        let mut p = self.address.load(Ordering::Acquire);
        if p as usize == UNRESOLVED {
            p = self.lookup();
        }
        match p as usize {
            NO_SYMBOL => Err(CUDA_ERROR_NOT_FOUND),
            NO_LIBRARY => Err(CUDA_ERROR_STUB_LIBRARY),
            _ => Ok(p),
        }
    }

    /// Looks the symbol up in the driver library and stores the outcome. Threads racing here
    /// store the same value.
    fn lookup(&self) -> *mut c_void {
        let p = address_in(library(), self.name);
        self.address.store(p, Ordering::Release);
        p
    }
}

/// The address of `name` in `lib`, or [`NO_SYMBOL`], or [`NO_LIBRARY`] without a library.
fn address_in(lib: Option<&libloading::Library>, name: &CStr) -> *mut c_void {
    let Some(lib) = lib else {
        return NO_LIBRARY as *mut c_void;
    };
    // SAFETY: the symbol is only read as an address here; `functions.rs` calls it with the type
    // cuda.h declares for it.
    match unsafe { lib.get::<*mut c_void>(name.to_bytes_with_nul()) } {
        Ok(sym) if !(*sym).is_null() => *sym,
        _ => NO_SYMBOL as *mut c_void,
    }
}

/// The driver's `cuGetProcAddress_v2`, which the port of cuda.h's inline
/// `cuGetProcAddress_v2_ptsz` in lib.rs calls whatever the `per-thread-default-stream` feature
/// makes of the name `cuGetProcAddress_v2`.
///
/// # Safety
/// As for `cuGetProcAddress_v2`.
pub(crate) unsafe extern "C" fn driver_cuGetProcAddress_v2(
    symbol: *const core::ffi::c_char,
    pfn: *mut *mut c_void,
    cudaVersion: core::ffi::c_int,
    flags: crate::cuuint64_t,
    symbolStatus: *mut crate::CUdriverProcAddressQueryResult,
) -> CUresult {
    type F = unsafe extern "C" fn(
        *const core::ffi::c_char,
        *mut *mut c_void,
        core::ffi::c_int,
        crate::cuuint64_t,
        *mut crate::CUdriverProcAddressQueryResult,
    ) -> CUresult;
    static SYMBOL: Symbol = Symbol::new(c"cuGetProcAddress_v2");
    match SYMBOL.get() {
        // SAFETY: the symbol is the driver's cuGetProcAddress_v2, of this type; the caller
        // upholds its contract.
        Ok(f) => unsafe {
            core::mem::transmute::<*mut c_void, F>(f)(symbol, pfn, cudaVersion, flags, symbolStatus)
        },
        Err(code) => code,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A library that is always there, and a function it exports.
    #[cfg(windows)]
    const SYSTEM_LIBRARY: (&str, &CStr) = ("kernel32.dll", c"GetTickCount");
    #[cfg(target_os = "macos")]
    const SYSTEM_LIBRARY: (&str, &CStr) = ("libSystem.B.dylib", c"strlen");
    #[cfg(all(unix, not(target_os = "macos")))]
    const SYSTEM_LIBRARY: (&str, &CStr) = ("libc.so.6", c"strlen");

    /// The outcome of one lookup, as [`Symbol::get`] reports it.
    fn outcome(p: *mut c_void) -> Result<(), CUresult> {
        let symbol = Symbol::new(c"unused");
        symbol.address.store(p, Ordering::Release);
        symbol.get().map(|_| ())
    }

    #[test]
    fn without_the_library_every_function_is_the_stub() {
        assert_eq!(
            outcome(address_in(None, c"cuInit")),
            Err(CUDA_ERROR_STUB_LIBRARY)
        );
    }

    #[test]
    fn a_missing_symbol_is_not_found_and_a_present_one_resolves() {
        // Any library will do for the lookup itself.
        let (name, present) = SYSTEM_LIBRARY;
        // SAFETY: a system library the process has loaded already: no initialiser runs.
        let lib = unsafe { libloading::Library::new(name) }.expect("a system library");
        assert_eq!(
            outcome(address_in(Some(&lib), c"cuNoSuchFunction_v42")),
            Err(CUDA_ERROR_NOT_FOUND)
        );
        let p = address_in(Some(&lib), present);
        assert!(p as usize > NO_LIBRARY);
        assert_eq!(outcome(p), Ok(()));
    }

    #[test]
    fn an_unresolved_symbol_resolves_once_and_keeps_the_outcome() {
        let symbol = Symbol::new(c"cuNoSuchFunction_v42");
        let first = symbol.get();
        let stored = symbol.address.load(Ordering::Acquire) as usize;
        assert!(stored == NO_SYMBOL || stored == NO_LIBRARY);
        assert_eq!(symbol.get(), first);
        assert!(matches!(
            first,
            Err(CUDA_ERROR_NOT_FOUND | CUDA_ERROR_STUB_LIBRARY)
        ));
    }
}
