//! Driver entry points through `cuGetProcAddress`, and the run-time resolution of every
//! driver function this crate uses that is newer than CUDA 12.0.
//!
//! `cuda-driver` links directly only to functions that every driver from CUDA 12.0 on
//! exports. A newer function (such as `cuKernelGetParamInfo`, CUDA 12.4) is looked up on
//! first use with `cuGetProcAddress` at the CUDA version that introduced it, and cached; on an
//! older driver the call returns [`Error::Unsupported`] naming the function and the version it
//! needs, instead of failing to load the program.

use std::ffi::{c_void, CStr};
use std::ptr::NonNull;
use std::sync::OnceLock;

use cuda_driver_sys as sys;

use crate::error::{check, Error, Result};

c_enum! {
    /// What `cuGetProcAddress` found (`CUdriverProcAddressQueryResult`).
    #[doc(alias = "CUdriverProcAddressQueryResult")]
    ProcAddressStatus(sys::CUdriverProcAddressQueryResult)
}

c_flags! {
    /// Which flavour of a function `cuGetProcAddress` returns (`CUdriverProcAddress_flags`).
    #[doc(alias = "CUdriverProcAddress_flags")]
    ProcAddressFlags(u64) {
        /// The driver's default (`CU_GET_PROC_ADDRESS_DEFAULT`).
        const DEFAULT = sys::CU_GET_PROC_ADDRESS_DEFAULT;
        /// The legacy default stream flavour (`CU_GET_PROC_ADDRESS_LEGACY_STREAM`).
        const LEGACY_STREAM = sys::CU_GET_PROC_ADDRESS_LEGACY_STREAM;
        /// The per-thread default stream flavour, `_ptds`/`_ptsz`
        /// (`CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM`).
        const PER_THREAD_DEFAULT_STREAM = sys::CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    }
}

/// The stream flavour this crate asks for: per-thread with the `per-thread-default-stream`
/// feature, legacy otherwise, matching the symbols `cuda-driver-sys` links.
pub(crate) const CRATE_FLAGS: ProcAddressFlags = if cfg!(feature = "per-thread-default-stream") {
    ProcAddressFlags::PER_THREAD_DEFAULT_STREAM
} else {
    ProcAddressFlags::LEGACY_STREAM
};

/// Looks up a driver function by name, CUDA version and flags, returning its address.
///
/// The error tells apart a symbol the driver does not have ([`Error::EntryPoint`] with
/// [`ProcAddressStatus::SYMBOL_NOT_FOUND`]) from one it has, but not at `cuda_version`
/// ([`ProcAddressStatus::VERSION_NOT_SUFFICIENT`]).
///
/// Wraps `cuGetProcAddress_v2`.
#[doc(alias = "cuGetProcAddress")]
#[doc(alias = "cuGetProcAddress_v2")]
#[track_caller]
pub fn proc_address(
    symbol: &CStr,
    cuda_version: i32,
    flags: ProcAddressFlags,
) -> Result<NonNull<c_void>> {
    crate::init()?;
    let mut p = std::ptr::null_mut();
    let mut status = sys::CU_GET_PROC_ADDRESS_SUCCESS;
    // SAFETY: `symbol` is NUL-terminated; the driver writes one pointer and one status.
    let r = unsafe {
        sys::cuGetProcAddress_v2(
            symbol.as_ptr(),
            &mut p,
            cuda_version,
            flags.as_raw(),
            &mut status,
        )
    };
    let status = ProcAddressStatus(status);
    match (check(r, "cuGetProcAddress_v2"), NonNull::new(p)) {
        (Ok(()), Some(p)) if status == ProcAddressStatus::SUCCESS => Ok(p),
        (Err(e), _) if status == ProcAddressStatus::SUCCESS => Err(e),
        _ => Err(Error::EntryPoint {
            symbol: symbol.to_string_lossy().into_owned(),
            version: cuda_version,
            status: if status == ProcAddressStatus::SUCCESS {
                ProcAddressStatus::SYMBOL_NOT_FOUND
            } else {
                status
            },
        }),
    }
}

/// Looks up a driver function and returns it as the function pointer type `F`.
///
/// # Safety
/// `F` must be the function pointer type (the `Fn` of a `PFN_*` of `cuda_driver_sys`, such as
/// `PFN_cuStreamBeginCapture_v10010`) matching the ABI of `symbol` at `cuda_version`.
#[track_caller]
pub unsafe fn proc_address_as<F: Copy>(
    symbol: &CStr,
    cuda_version: i32,
    flags: ProcAddressFlags,
) -> Result<F> {
    const { assert!(std::mem::size_of::<F>() == std::mem::size_of::<*mut c_void>()) };
    let p = proc_address(symbol, cuda_version, flags)?;
    // SAFETY: F is pointer-sized (checked above) and the caller guarantees it is the function
    // pointer type of this symbol at this version.
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p.as_ptr()) })
}

/// The function pointer type inside a `PFN_*` typedef (`Option<unsafe extern "C" fn(..)>`).
pub trait Pfn {
    /// The function pointer type.
    type Fn: Copy;
}

impl<F: Copy> Pfn for Option<F> {
    type Fn = F;
}

/// A driver function resolved on first use and cached (see the module docs).
pub(crate) struct LazyFn {
    symbol: &'static CStr,
    version: i32,
    cell: OnceLock<std::result::Result<usize, Error>>,
}

impl LazyFn {
    pub(crate) const fn new(symbol: &'static CStr, version: i32) -> LazyFn {
        LazyFn {
            symbol,
            version,
            cell: OnceLock::new(),
        }
    }

    /// The function, or why the driver cannot provide it.
    ///
    /// # Safety
    /// `F` is the function pointer type of `symbol` at `version`.
    #[inline]
    #[track_caller]
    pub(crate) unsafe fn get<F: Copy>(&self) -> Result<F> {
        const { assert!(std::mem::size_of::<F>() == std::mem::size_of::<usize>()) };
        match self.cell.get_or_init(|| self.resolve()) {
            // SAFETY: the address came from cuGetProcAddress for this symbol and version, and
            // the caller guarantees F is that function's pointer type.
            Ok(p) => Ok(unsafe { std::mem::transmute_copy::<usize, F>(p) }),
            Err(e) => Err(e.clone()),
        }
    }

    #[track_caller]
    fn resolve(&self) -> std::result::Result<usize, Error> {
        match proc_address(self.symbol, self.version, CRATE_FLAGS) {
            Ok(p) => Ok(p.as_ptr() as usize),
            Err(Error::EntryPoint { .. }) => Err(Error::Unsupported {
                function: self.symbol.to_str().unwrap_or("?"),
                needs: self.version,
                driver: crate::driver_version_raw().unwrap_or(0),
            }),
            Err(e) => Err(e),
        }
    }
}

/// Declares crate-internal accessors for driver functions newer than CUDA 12.0:
/// `fn name() -> Result<fn pointer>`, resolved through `cuGetProcAddress` and cached.
macro_rules! lazy_driver_fns {
    ($($(#[$m:meta])* $vis:vis fn $name:ident = $pfn:ident ($sym:literal, $ver:literal);)*) => {
        $(
            $(#[$m])*
            #[allow(non_snake_case, dead_code)]
            #[track_caller]
            $vis fn $name() -> $crate::Result<<cuda_driver_sys::$pfn as $crate::entry_point::Pfn>::Fn> {
                static F: $crate::entry_point::LazyFn = $crate::entry_point::LazyFn::new($sym, $ver);
                // SAFETY: $pfn is cudaTypedefs.h's typedef of this symbol at this version.
                unsafe { F.get() }
            }
        )*
    };
}

/// The driver functions newer than CUDA 12.0 that this crate uses. Each is resolved on first
/// use; `cargo xtask check-imports` proves nothing newer is linked directly.
pub(crate) mod newer {
    lazy_driver_fns! {
        /// CUDA 12.4.
        pub(crate) fn cuKernelGetParamInfo = PFN_cuKernelGetParamInfo_v12040(c"cuKernelGetParamInfo", 12040);
        /// CUDA 12.4.
        pub(crate) fn cuFuncGetParamInfo = PFN_cuFuncGetParamInfo_v12040(c"cuFuncGetParamInfo", 12040);
        /// CUDA 12.4.
        pub(crate) fn cuLibraryGetKernelCount = PFN_cuLibraryGetKernelCount_v12040(c"cuLibraryGetKernelCount", 12040);
        /// CUDA 12.4.
        pub(crate) fn cuLibraryEnumerateKernels = PFN_cuLibraryEnumerateKernels_v12040(c"cuLibraryEnumerateKernels", 12040);
        /// CUDA 12.3.
        pub(crate) fn cuKernelGetName = PFN_cuKernelGetName_v12030(c"cuKernelGetName", 12030);
        /// CUDA 12.3.
        pub(crate) fn cuFuncGetName = PFN_cuFuncGetName_v12030(c"cuFuncGetName", 12030);
        /// CUDA 12.2.
        pub(crate) fn cuMemAdvise_v2 = PFN_cuMemAdvise_v12020(c"cuMemAdvise", 12020);
        /// CUDA 12.2 (the `_ptsz` flavour with the `per-thread-default-stream` feature).
        pub(crate) fn cuMemPrefetchAsync_v2 = PFN_cuMemPrefetchAsync_v12020(c"cuMemPrefetchAsync", 12020);
        /// The first `cuEventElapsedTime`, which every driver has: cuda.h 13.0 maps the name to
        /// `cuEventElapsedTime_v2` (CUDA 12.8), and does not expose the first under it.
        pub(crate) fn cuEventElapsedTime_v1 = PFN_cuEventElapsedTime_v2000(c"cuEventElapsedTime", 2000);
        /// CUDA 12.5.
        pub(crate) fn cuCtxCreate_v4 = PFN_cuCtxCreate_v12050(c"cuCtxCreate", 12050);
    }
}
