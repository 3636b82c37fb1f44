//! Driver entry points through `cuGetProcAddress`, and the run-time resolution of every
//! driver function this crate uses that is newer than CUDA 12.0.
//!
//! * [`get`] (and its cached form [`Lazy`]) looks a function up by a marker type of [`pfn`],
//!   one per `PFN_*` typedef of cudaTypedefs.h: the marker ties the function pointer type to
//!   the symbol, CUDA version and stream flavour it belongs to, so the lookup is safe and
//!   returns the typed pointer (calling it is `unsafe`, as for any C function).
//! * [`proc_address`] looks a function up by name, version and [`ProcAddressFlags`] and
//!   returns its address; [`proc_address_as`] casts it to a type the caller chooses (`unsafe`).
//!
//! Errors tell a symbol the driver does not have ([`Error::EntryPoint`] with
//! [`ProcAddressStatus::SYMBOL_NOT_FOUND`]) from one it has, but not at the version asked for
//! ([`ProcAddressStatus::VERSION_NOT_SUFFICIENT`]), and a function newer than the installed
//! driver ([`Error::Unsupported`]).
//!
//! ```no_run
//! use cuda_driver::entry_point::{self, pfn};
//!
//! // `cuStreamBeginCapture` at CUDA 10.1 is `cuStreamBeginCapture_v2(CUstream, mode)`.
//! let begin_capture = entry_point::get::<pfn::cuStreamBeginCapture_v10010>()?;
//! // The per-thread default stream flavour of `cuLaunchKernel` (`cuLaunchKernel_ptsz`).
//! let launch_ptsz = entry_point::get::<pfn::cuLaunchKernel_v7000_ptsz>()?;
//! # let _ = (begin_capture, launch_ptsz);
//! # Ok::<(), cuda_driver::Error>(())
//! ```
//!
//! # Every driver from CUDA 12.0 on
//!
//! `cuda-driver` links directly only to functions that every driver from CUDA 12.0 on
//! exports. A newer function (such as `cuKernelGetParamInfo`, CUDA 12.4) is looked up on
//! first use with `cuGetProcAddress` at the CUDA version that introduced it, and cached; on an
//! older driver the call returns [`Error::Unsupported`] naming the function and the version it
//! needs, instead of failing to load the program. [`lazy_functions`] lists them;
//! `cargo xtask check-imports` proves that nothing newer is linked directly.

use std::ffi::{c_void, CStr};
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::OnceLock;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use crate::error::{Error, Result};
use crate::types::{ErrorCode, ProcAddressStatus};

use crate::types::ProcAddressFlags;

/// The stream flavour this crate's own calls use: [`ProcAddressFlags::PER_THREAD_DEFAULT_STREAM`]
/// with the `per-thread-default-stream` feature, [`ProcAddressFlags::LEGACY_STREAM`] otherwise,
/// matching the symbols `cuda-driver-sys` links (`cuLaunchKernel_ptsz` or `cuLaunchKernel`).
pub const CRATE_FLAGS: ProcAddressFlags = if cfg!(feature = "per-thread-default-stream") {
    ProcAddressFlags::PER_THREAD_DEFAULT_STREAM
} else {
    ProcAddressFlags::LEGACY_STREAM
};

/// Looks up a driver function by name, CUDA version and flags, returning its address.
///
/// `symbol` is the base name (`c"cuMemAlloc"`, not `cuMemAlloc_v2`); `cuda_version` picks the
/// ABI (`1000 * major + 10 * minor`: 3020 for `cuMemAlloc_v2`). The error tells apart a symbol
/// the driver does not have ([`Error::EntryPoint`] with
/// [`ProcAddressStatus::SYMBOL_NOT_FOUND`]) from one it has, but not at `cuda_version`
/// ([`ProcAddressStatus::VERSION_NOT_SUFFICIENT`]); a `cuda_version` above the driver's is a
/// driver error (`CUDA_ERROR_INVALID_VALUE`).
///
/// [`ProcAddressFlags::DEFAULT`] is, like in C, the legacy default stream flavour, or the
/// per-thread one with the `per-thread-default-stream` feature (the feature makes
/// `cuGetProcAddress` add the per-thread flag, as `CUDA_API_PER_THREAD_DEFAULT_STREAM` does in C).
///
///
/// ```no_run
/// use cuda_driver::entry_point::proc_address;
/// use cuda_driver::types::ProcAddressFlags;
///
/// let v1 = proc_address(c"cuStreamBeginCapture", 10000, ProcAddressFlags::DEFAULT)?;
/// let v2 = proc_address(c"cuStreamBeginCapture", 10010, ProcAddressFlags::DEFAULT)?;
/// assert_ne!(v1, v2); // cuStreamBeginCapture and cuStreamBeginCapture_v2
/// # Ok::<(), cuda_driver::Error>(())
/// ```
#[wraps(cuGetProcAddress)]
#[track_caller]
pub fn proc_address(
    symbol: &CStr,
    cuda_version: i32,
    flags: ProcAddressFlags,
) -> Result<NonNull<c_void>> {
    crate::init()?;
    let mut p = std::ptr::null_mut();
    let mut status = sys::CU_GET_PROC_ADDRESS_SUCCESS;
    let r = call!(
        // SAFETY: `symbol` is NUL-terminated; the driver writes one pointer and one status.
        unsafe {
            sys::cuGetProcAddress_v2(
                symbol.as_ptr(),
                &mut p,
                cuda_version,
                flags.as_raw(),
                &mut status,
            )
        }
    );
    let status = ProcAddressStatus(status);
    let not_found = |status: ProcAddressStatus| Error::EntryPoint {
        symbol: symbol.to_string_lossy().into_owned(),
        version: cuda_version,
        status: if status == ProcAddressStatus::SUCCESS {
            ProcAddressStatus::SYMBOL_NOT_FOUND
        } else {
            status
        },
    };
    match r {
        Ok(()) => match NonNull::new(p) {
            Some(p) if status == ProcAddressStatus::SUCCESS => Ok(p),
            _ => Err(not_found(status)),
        },
        // Some drivers answer an unknown symbol with CUDA_ERROR_NOT_FOUND as well as the status.
        Err(e) if e.code() == Some(ErrorCode::NOT_FOUND) => Err(not_found(status)),
        Err(e) => Err(e),
    }
}

/// Looks up a driver function and returns it as the function pointer type `F`.
///
/// Prefer [`get`], which takes the type from a marker of [`pfn`] and needs no `unsafe`.
///
/// # Safety
/// `F` must be the function pointer type (the `Fn` of a `PFN_*` of `cuda_driver_sys`, such as
/// `PFN_cuStreamBeginCapture_v10010`) matching the ABI of `symbol` at `cuda_version`.
#[wraps(cuGetProcAddress)]
#[track_caller]
pub unsafe fn proc_address_as<F: Copy>(
    symbol: &CStr,
    cuda_version: i32,
    flags: ProcAddressFlags,
) -> Result<F> {
    let p = proc_address(symbol, cuda_version, flags)?;
    // SAFETY: the caller guarantees F is the function pointer type of this symbol at this
    // version; `cast` checks it is pointer-sized.
    Ok(unsafe { cast::<F>(p.as_ptr()) })
}

/// Reinterprets a function's address as the function pointer type `F`.
///
/// # Safety
/// `F` is the function pointer type of the function at `p`.
#[inline(always)]
unsafe fn cast<F: Copy>(p: *mut c_void) -> F {
    const { assert!(std::mem::size_of::<F>() == std::mem::size_of::<*mut c_void>()) };
    // SAFETY: F is pointer-sized (checked above); the caller guarantees it is the type of the
    // function at `p`.
    unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p) }
}

/// A driver function at one CUDA version and stream flavour, with its function pointer type:
/// the markers of [`pfn`], one per `PFN_*` of cudaTypedefs.h, implement it.
///
/// # Safety
/// `Pfn` is the function pointer type of the function `cuGetProcAddress` returns for
/// `SYMBOL`, `VERSION` and `FLAGS`.
pub unsafe trait EntryPoint {
    /// The function pointer type (`unsafe extern "C" fn(..) -> CUresult`).
    type Pfn: Copy;
    /// The base name of the function, such as `c"cuStreamBeginCapture"`.
    const SYMBOL: &'static CStr;
    /// The CUDA version of this ABI, such as 10010 for `cuStreamBeginCapture_v2`.
    const VERSION: i32;
    /// The stream flavour: [`ProcAddressFlags::LEGACY_STREAM`], or
    /// [`ProcAddressFlags::PER_THREAD_DEFAULT_STREAM`] for the `_ptds`/`_ptsz` typedefs.
    const FLAGS: ProcAddressFlags;
}

/// Looks up the driver function `P` names (a marker of [`pfn`]) and returns it typed.
///
/// Calls `cuGetProcAddress` every time; keep the result, or use a [`Lazy`].
///
/// # Errors
/// [`Error::Unsupported`] when the driver is older than `P::VERSION`, [`Error::EntryPoint`]
/// when the driver does not provide the function (a symbol a platform lacks), or the error
/// of `cuInit`.
///
///
/// ```no_run
/// use cuda_driver::entry_point::{self, pfn};
///
/// let get_version = entry_point::get::<pfn::cuDriverGetVersion_v2020>()?;
/// let mut version = 0;
/// // SAFETY: writes one int.
/// let r = unsafe { get_version(&mut version) };
/// assert_eq!(r, cuda_driver::sys::CUDA_SUCCESS);
/// # Ok::<(), cuda_driver::Error>(())
/// ```
#[wraps(cuGetProcAddress)]
#[track_caller]
pub fn get<P: EntryPoint>() -> Result<P::Pfn> {
    let p = lookup(P::SYMBOL, P::VERSION, P::FLAGS)?;
    // SAFETY: `P: EntryPoint` guarantees P::Pfn is the type of this symbol at this version
    // and flavour.
    Ok(unsafe { cast::<P::Pfn>(p.as_ptr()) })
}

/// [`proc_address`], but a version newer than the driver is [`Error::Unsupported`].
#[track_caller]
fn lookup(symbol: &'static CStr, version: i32, flags: ProcAddressFlags) -> Result<NonNull<c_void>> {
    let driver = crate::init::driver_version_raw()?;
    if version > driver {
        return Err(Error::Unsupported {
            function: symbol.to_str().unwrap_or("?"),
            needs: version,
            driver,
        });
    }
    proc_address(symbol, version, flags)
}

/// A driver function looked up on first use with [`get`] and cached, for a `static`.
///
/// ```no_run
/// use cuda_driver::entry_point::{pfn, Lazy};
///
/// static BEGIN_CAPTURE: Lazy<pfn::cuStreamBeginCapture_v10010> = Lazy::new();
///
/// let begin_capture = BEGIN_CAPTURE.get()?;
/// # let _ = begin_capture;
/// # Ok::<(), cuda_driver::Error>(())
/// ```
pub struct Lazy<P: EntryPoint> {
    cell: OnceLock<Result<usize>>,
    marker: PhantomData<fn() -> P>,
}

impl<P: EntryPoint> Lazy<P> {
    /// A lookup that has not happened yet.
    pub const fn new() -> Self {
        Lazy {
            cell: OnceLock::new(),
            marker: PhantomData,
        }
    }

    /// The function, looked up on the first call; later calls return the first result (also
    /// an error).
    #[track_caller]
    pub fn get(&self) -> Result<P::Pfn> {
        let p = self
            .cell
            .get_or_init(|| lookup(P::SYMBOL, P::VERSION, P::FLAGS).map(|p| p.as_ptr() as usize));
        match p {
            // SAFETY: the address came from cuGetProcAddress for P's symbol, version and
            // flags, and `P: EntryPoint` guarantees P::Pfn is that function's type.
            Ok(p) => Ok(unsafe { cast::<P::Pfn>(*p as *mut c_void) }),
            Err(e) => Err(e.clone()),
        }
    }
}

impl<P: EntryPoint> Default for Lazy<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P: EntryPoint> std::fmt::Debug for Lazy<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lazy")
            .field("symbol", &P::SYMBOL)
            .field("version", &P::VERSION)
            .field("flags", &P::FLAGS)
            .field("resolved", &self.cell.get().map(|r| r.is_ok()))
            .finish()
    }
}

/// The function pointer type inside a `PFN_*` typedef (`Option<unsafe extern "C" fn(..)>`).
pub trait Pfn {
    /// The function pointer type.
    type Fn: Copy;
}

impl<F: Copy> Pfn for Option<F> {
    type Fn = F;
}

/// Declares one marker of [`pfn`] per line `marker = PFN_x(symbol, version, FLAGS);`.
macro_rules! entry_points {
    ($($marker:ident = $pfn:ident($sym:literal, $ver:literal, $flags:ident);)*) => {
        $(
            #[doc = concat!(
                "`", $sym, "` at CUDA version ", stringify!($ver), ", ",
                stringify!($flags), " flavour: [`", stringify!($pfn), "`](cuda_driver_sys::",
                stringify!($pfn), ")."
            )]
            pub enum $marker {}

            // SAFETY: `$pfn` is cudaTypedefs.h's typedef of `$sym` at `$ver`; `$flags` is the
            // flavour its suffix names (none: legacy; `_ptds`/`_ptsz`: per-thread).
            unsafe impl $crate::entry_point::EntryPoint for $marker {
                type Pfn = <cuda_driver_sys::$pfn as $crate::entry_point::Pfn>::Fn;
                const SYMBOL: &'static ::std::ffi::CStr =
                    match ::std::ffi::CStr::from_bytes_with_nul(concat!($sym, "\0").as_bytes()) {
                        Ok(s) => s,
                        Err(_) => panic!("a symbol name contains NUL"),
                    };
                const VERSION: i32 = $ver;
                const FLAGS: $crate::types::ProcAddressFlags = $crate::types::ProcAddressFlags::$flags;
            }
        )*
    };
}

/// Declares the unversioned aliases of [`pfn`]: `name = newest_marker;`.
macro_rules! latest_entry_points {
    ($($name:ident = $marker:ident;)*) => {
        $(
            #[doc = concat!(
                "The newest ABI of `", stringify!($name), "` that cuda.h 13.0 knows: [`",
                stringify!($marker), "`]."
            )]
            pub type $name = $marker;
        )*
    };
}

pub mod pfn;

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
        match self.cell.get_or_init(|| self.resolve()) {
            // SAFETY: the address came from cuGetProcAddress for this symbol and version, and
            // the caller guarantees F is that function's pointer type.
            Ok(p) => Ok(unsafe { cast::<F>(*p as *mut c_void) }),
            Err(e) => Err(e.clone()),
        }
    }

    #[track_caller]
    fn resolve(&self) -> std::result::Result<usize, Error> {
        match lookup(self.symbol, self.version, CRATE_FLAGS) {
            Ok(p) => Ok(p.as_ptr() as usize),
            Err(Error::EntryPoint { .. }) => Err(Error::Unsupported {
                function: self.symbol.to_str().unwrap_or("?"),
                needs: self.version,
                driver: crate::init::driver_version_raw().unwrap_or(0),
            }),
            Err(e) => Err(e),
        }
    }
}

/// A driver function this crate resolves at run time rather than linking it (see
/// [`lazy_functions`]).
#[derive(Clone, Copy)]
pub struct LazyFunction {
    name: &'static str,
    symbol: &'static CStr,
    version: i32,
    resolve: fn() -> Result<()>,
}

impl LazyFunction {
    /// The function as the crate calls it, such as `"cuMemAdvise_v2"`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The base name `cuGetProcAddress` is asked for, such as `c"cuMemAdvise"`.
    pub fn symbol(&self) -> &'static CStr {
        self.symbol
    }

    /// The CUDA version of the ABI asked for (12020 for 12.2): the oldest driver that has it.
    pub fn version(&self) -> i32 {
        self.version
    }

    /// Resolves the function now (once per process; later calls return the first result):
    /// `Ok` when the installed driver has it, [`Error::Unsupported`] naming the function and
    /// the version it needs when the driver is older.
    #[track_caller]
    pub fn resolve(&self) -> Result<()> {
        (self.resolve)()
    }
}

impl std::fmt::Debug for LazyFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyFunction")
            .field("name", &self.name)
            .field("symbol", &self.symbol)
            .field("version", &self.version)
            .finish()
    }
}

/// The driver functions this crate resolves at run time with `cuGetProcAddress` instead of
/// linking them: those newer than CUDA 12.0, and older ABIs that cuda.h 13.0 no longer
/// declares. The crate's operations that need one return [`Error::Unsupported`] on a driver
/// that lacks it; [`LazyFunction::resolve`] tells in advance.
///
/// ```no_run
/// for f in cuda_driver::entry_point::lazy_functions() {
///     let ok = f.resolve().is_ok();
///     println!("{} (CUDA {}): {}", f.name(), f.version(), if ok { "available" } else { "no" });
/// }
/// ```
pub fn lazy_functions() -> &'static [LazyFunction] {
    newer::ALL
}

/// Declares crate-internal accessors for driver functions newer than CUDA 12.0:
/// `fn name() -> Result<fn pointer>`, resolved through `cuGetProcAddress` and cached, and the
/// list `ALL` of them for [`lazy_functions`]. Use it once, in [`newer`].
macro_rules! lazy_driver_fns {
    ($($(#[$m:meta])* $vis:vis fn $name:ident = $pfn:ident ($sym:literal, $ver:literal);)*) => {
        $(
            $(#[$m])*
            #[allow(non_snake_case, dead_code)]
            #[track_caller]
            $vis fn $name() -> $crate::error::Result<<cuda_driver_sys::$pfn as $crate::entry_point::Pfn>::Fn> {
                static F: $crate::entry_point::LazyFn = $crate::entry_point::LazyFn::new($sym, $ver);
                // SAFETY: $pfn is cudaTypedefs.h's typedef of this symbol at this version (the
                // unit test `newer_entries_match_their_typedefs` checks the names agree).
                unsafe { F.get() }
            }
        )*

        /// Every function above, for `lazy_functions`.
        pub(crate) static ALL: &[$crate::entry_point::LazyFunction] = &[
            $($crate::entry_point::LazyFunction {
                name: stringify!($name),
                symbol: $sym,
                version: $ver,
                resolve: || $name().map(|_| ()),
            },)*
        ];

        /// `(accessor, PFN typedef, symbol, version)` of every function above.
        #[cfg(test)]
        pub(crate) const ENTRIES: &[(&str, &str, &::std::ffi::CStr, i32)] =
            &[$((stringify!($name), stringify!($pfn), $sym, $ver),)*];
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
        /// The CUDA 11.3 ABI (no edge data), which every driver has; cuda.h 13.0 maps the
        /// name to the CUDA 12.3 one.
        pub(crate) fn cuStreamGetCaptureInfo_v2 = PFN_cuStreamGetCaptureInfo_v11030(c"cuStreamGetCaptureInfo", 11030);
        /// The CUDA 11.3 ABI (no edge data), which every driver has.
        pub(crate) fn cuStreamUpdateCaptureDependencies_v1 = PFN_cuStreamUpdateCaptureDependencies_v11030(c"cuStreamUpdateCaptureDependencies", 11030);
        /// The first ABI (no edge data), which every driver has.
        pub(crate) fn cuGraphGetEdges_v1 = PFN_cuGraphGetEdges_v10000(c"cuGraphGetEdges", 10000);
        /// CUDA 12.3 (edge data).
        pub(crate) fn cuGraphGetEdges_v2 = PFN_cuGraphGetEdges_v12030(c"cuGraphGetEdges", 12030);
        /// The first ABI (no edge data), which every driver has.
        pub(crate) fn cuGraphNodeGetDependencies_v1 = PFN_cuGraphNodeGetDependencies_v10000(c"cuGraphNodeGetDependencies", 10000);
        /// The first ABI (no edge data), which every driver has.
        pub(crate) fn cuGraphNodeGetDependentNodes_v1 = PFN_cuGraphNodeGetDependentNodes_v10000(c"cuGraphNodeGetDependentNodes", 10000);
        /// The first ABI (no edge data), which every driver has.
        pub(crate) fn cuGraphAddDependencies_v1 = PFN_cuGraphAddDependencies_v10000(c"cuGraphAddDependencies", 10000);
        /// CUDA 12.3 (edge data).
        pub(crate) fn cuGraphAddDependencies_v2 = PFN_cuGraphAddDependencies_v12030(c"cuGraphAddDependencies", 12030);
        /// The first ABI (no edge data), which every driver has.
        pub(crate) fn cuGraphRemoveDependencies_v1 = PFN_cuGraphRemoveDependencies_v10000(c"cuGraphRemoveDependencies", 10000);
        /// CUDA 12.3 (edge data).
        pub(crate) fn cuGraphRemoveDependencies_v2 = PFN_cuGraphRemoveDependencies_v12030(c"cuGraphRemoveDependencies", 12030);
        /// CUDA 12.3 (`cuGraphAddNode` with edge data).
        pub(crate) fn cuGraphAddNode_v2 = PFN_cuGraphAddNode_v12030(c"cuGraphAddNode", 12030);
        /// CUDA 12.3.
        pub(crate) fn cuGraphConditionalHandleCreate = PFN_cuGraphConditionalHandleCreate_v12030(c"cuGraphConditionalHandleCreate", 12030);
        // Issue #14: contexts, streams, events, execution control, green contexts,
        // coredump, checkpoint, logs, memory leftovers.
        /// CUDA 12.1.
        pub(crate) fn cuCtxSetFlags = PFN_cuCtxSetFlags_v12010(c"cuCtxSetFlags", 12010);
        /// CUDA 12.5.
        pub(crate) fn cuCtxRecordEvent = PFN_cuCtxRecordEvent_v12050(c"cuCtxRecordEvent", 12050);
        /// CUDA 12.5.
        pub(crate) fn cuCtxWaitEvent = PFN_cuCtxWaitEvent_v12050(c"cuCtxWaitEvent", 12050);
        /// CUDA 13.0.
        pub(crate) fn cuCtxGetDevice_v2 = PFN_cuCtxGetDevice_v13000(c"cuCtxGetDevice", 13000);
        /// CUDA 13.0.
        pub(crate) fn cuCtxSynchronize_v2 = PFN_cuCtxSynchronize_v13000(c"cuCtxSynchronize", 13000);
        /// CUDA 12.5.
        pub(crate) fn cuStreamGetCtx_v2 = PFN_cuStreamGetCtx_v12050(c"cuStreamGetCtx", 12050);
        /// CUDA 12.8.
        pub(crate) fn cuStreamGetDevice = PFN_cuStreamGetDevice_v12080(c"cuStreamGetDevice", 12080);
        /// CUDA 12.4.
        pub(crate) fn cuFuncIsLoaded = PFN_cuFuncIsLoaded_v12040(c"cuFuncIsLoaded", 12040);
        /// CUDA 12.4.
        pub(crate) fn cuFuncLoad = PFN_cuFuncLoad_v12040(c"cuFuncLoad", 12040);
        /// CUDA 12.5.
        pub(crate) fn cuKernelGetLibrary = PFN_cuKernelGetLibrary_v12050(c"cuKernelGetLibrary", 12050);
        /// CUDA 12.4.
        pub(crate) fn cuModuleGetFunctionCount = PFN_cuModuleGetFunctionCount_v12040(c"cuModuleGetFunctionCount", 12040);
        /// CUDA 12.4.
        pub(crate) fn cuModuleEnumerateFunctions = PFN_cuModuleEnumerateFunctions_v12040(c"cuModuleEnumerateFunctions", 12040);
        /// CUDA 12.8.
        pub(crate) fn cuEventElapsedTime_v2 = PFN_cuEventElapsedTime_v12080(c"cuEventElapsedTime", 12080);
        /// CUDA 12.1.
        pub(crate) fn cuCoredumpGetAttribute = PFN_cuCoredumpGetAttribute_v12010(c"cuCoredumpGetAttribute", 12010);
        /// CUDA 12.1.
        pub(crate) fn cuCoredumpGetAttributeGlobal = PFN_cuCoredumpGetAttributeGlobal_v12010(c"cuCoredumpGetAttributeGlobal", 12010);
        /// CUDA 12.1.
        pub(crate) fn cuCoredumpSetAttribute = PFN_cuCoredumpSetAttribute_v12010(c"cuCoredumpSetAttribute", 12010);
        /// CUDA 12.1.
        pub(crate) fn cuCoredumpSetAttributeGlobal = PFN_cuCoredumpSetAttributeGlobal_v12010(c"cuCoredumpSetAttributeGlobal", 12010);
        /// CUDA 12.8.
        pub(crate) fn cuCheckpointProcessGetState = PFN_cuCheckpointProcessGetState_v12080(c"cuCheckpointProcessGetState", 12080);
        /// CUDA 12.8.
        pub(crate) fn cuCheckpointProcessGetRestoreThreadId = PFN_cuCheckpointProcessGetRestoreThreadId_v12080(c"cuCheckpointProcessGetRestoreThreadId", 12080);
        /// CUDA 12.8.
        pub(crate) fn cuCheckpointProcessLock = PFN_cuCheckpointProcessLock_v12080(c"cuCheckpointProcessLock", 12080);
        /// CUDA 12.8.
        pub(crate) fn cuCheckpointProcessCheckpoint = PFN_cuCheckpointProcessCheckpoint_v12080(c"cuCheckpointProcessCheckpoint", 12080);
        /// CUDA 12.8.
        pub(crate) fn cuCheckpointProcessRestore = PFN_cuCheckpointProcessRestore_v12080(c"cuCheckpointProcessRestore", 12080);
        /// CUDA 12.8.
        pub(crate) fn cuCheckpointProcessUnlock = PFN_cuCheckpointProcessUnlock_v12080(c"cuCheckpointProcessUnlock", 12080);
        /// CUDA 12.9.
        pub(crate) fn cuLogsRegisterCallback = PFN_cuLogsRegisterCallback_v12090(c"cuLogsRegisterCallback", 12090);
        /// CUDA 12.9.
        pub(crate) fn cuLogsUnregisterCallback = PFN_cuLogsUnregisterCallback_v12090(c"cuLogsUnregisterCallback", 12090);
        /// CUDA 12.9.
        pub(crate) fn cuLogsCurrent = PFN_cuLogsCurrent_v12090(c"cuLogsCurrent", 12090);
        /// CUDA 12.9.
        pub(crate) fn cuLogsDumpToFile = PFN_cuLogsDumpToFile_v12090(c"cuLogsDumpToFile", 12090);
        /// CUDA 12.9.
        pub(crate) fn cuLogsDumpToMemory = PFN_cuLogsDumpToMemory_v12090(c"cuLogsDumpToMemory", 12090);
        /// CUDA 12.4.
        pub(crate) fn cuGreenCtxCreate = PFN_cuGreenCtxCreate_v12040(c"cuGreenCtxCreate", 12040);
        /// CUDA 12.4.
        pub(crate) fn cuGreenCtxDestroy = PFN_cuGreenCtxDestroy_v12040(c"cuGreenCtxDestroy", 12040);
        /// CUDA 12.4.
        pub(crate) fn cuCtxFromGreenCtx = PFN_cuCtxFromGreenCtx_v12040(c"cuCtxFromGreenCtx", 12040);
        /// CUDA 12.4.
        pub(crate) fn cuDeviceGetDevResource = PFN_cuDeviceGetDevResource_v12040(c"cuDeviceGetDevResource", 12040);
        /// CUDA 12.4.
        pub(crate) fn cuCtxGetDevResource = PFN_cuCtxGetDevResource_v12040(c"cuCtxGetDevResource", 12040);
        /// CUDA 12.4.
        pub(crate) fn cuGreenCtxGetDevResource = PFN_cuGreenCtxGetDevResource_v12040(c"cuGreenCtxGetDevResource", 12040);
        /// CUDA 12.4.
        pub(crate) fn cuDevSmResourceSplitByCount = PFN_cuDevSmResourceSplitByCount_v12040(c"cuDevSmResourceSplitByCount", 12040);
        /// CUDA 12.4.
        pub(crate) fn cuDevResourceGenerateDesc = PFN_cuDevResourceGenerateDesc_v12040(c"cuDevResourceGenerateDesc", 12040);
        /// CUDA 12.4.
        pub(crate) fn cuGreenCtxRecordEvent = PFN_cuGreenCtxRecordEvent_v12040(c"cuGreenCtxRecordEvent", 12040);
        /// CUDA 12.4.
        pub(crate) fn cuGreenCtxWaitEvent = PFN_cuGreenCtxWaitEvent_v12040(c"cuGreenCtxWaitEvent", 12040);
        /// CUDA 12.4.
        pub(crate) fn cuStreamGetGreenCtx = PFN_cuStreamGetGreenCtx_v12040(c"cuStreamGetGreenCtx", 12040);
        /// CUDA 12.5.
        pub(crate) fn cuGreenCtxStreamCreate = PFN_cuGreenCtxStreamCreate_v12050(c"cuGreenCtxStreamCreate", 12050);
        /// CUDA 12.9.
        pub(crate) fn cuGreenCtxGetId = PFN_cuGreenCtxGetId_v12090(c"cuGreenCtxGetId", 12090);
        /// CUDA 13.0.
        pub(crate) fn cuDeviceGetHostAtomicCapabilities = PFN_cuDeviceGetHostAtomicCapabilities_v13000(c"cuDeviceGetHostAtomicCapabilities", 13000);
        /// CUDA 13.0.
        pub(crate) fn cuDeviceGetP2PAtomicCapabilities = PFN_cuDeviceGetP2PAtomicCapabilities_v13000(c"cuDeviceGetP2PAtomicCapabilities", 13000);
        /// CUDA 13.0.
        pub(crate) fn cuMemPrefetchBatchAsync = PFN_cuMemPrefetchBatchAsync_v13000(c"cuMemPrefetchBatchAsync", 13000);
        /// CUDA 13.0.
        pub(crate) fn cuMemDiscardBatchAsync = PFN_cuMemDiscardBatchAsync_v13000(c"cuMemDiscardBatchAsync", 13000);
        /// CUDA 13.0.
        pub(crate) fn cuMemDiscardAndPrefetchBatchAsync = PFN_cuMemDiscardAndPrefetchBatchAsync_v13000(c"cuMemDiscardAndPrefetchBatchAsync", 13000);
        /// CUDA 12.8.
        pub(crate) fn cuTensorMapEncodeIm2colWide = PFN_cuTensorMapEncodeIm2colWide_v12080(c"cuTensorMapEncodeIm2colWide", 12080);
        /// CUDA 12.3.
        pub(crate) fn cuStreamBeginCaptureToGraph = PFN_cuStreamBeginCaptureToGraph_v12030(c"cuStreamBeginCaptureToGraph", 12030);
        /// CUDA 12.2.
        pub(crate) fn cuGraphNodeSetParams = PFN_cuGraphNodeSetParams_v12020(c"cuGraphNodeSetParams", 12020);
        /// CUDA 12.2.
        pub(crate) fn cuGraphExecNodeSetParams = PFN_cuGraphExecNodeSetParams_v12020(c"cuGraphExecNodeSetParams", 12020);
        /// CUDA 13.0 ABI (`cuMemcpyBatchAsync_v2`, without `failIdx`).
        pub(crate) fn cuMemcpyBatchAsync_v2 = PFN_cuMemcpyBatchAsync_v13000(c"cuMemcpyBatchAsync", 13000);
        /// CUDA 13.0 ABI (`cuMemcpy3DBatchAsync_v2`, without `failIdx`).
        pub(crate) fn cuMemcpy3DBatchAsync_v2 = PFN_cuMemcpy3DBatchAsync_v13000(c"cuMemcpy3DBatchAsync", 13000);
        /// CUDA 12.6.
        pub(crate) fn cuMemBatchDecompressAsync = PFN_cuMemBatchDecompressAsync_v12060(c"cuMemBatchDecompressAsync", 12060);
        /// CUDA 13.0.
        pub(crate) fn cuMemGetDefaultMemPool = PFN_cuMemGetDefaultMemPool_v13000(c"cuMemGetDefaultMemPool", 13000);
        /// CUDA 13.0.
        pub(crate) fn cuMemGetMemPool = PFN_cuMemGetMemPool_v13000(c"cuMemGetMemPool", 13000);
        /// CUDA 13.0.
        pub(crate) fn cuMemSetMemPool = PFN_cuMemSetMemPool_v13000(c"cuMemSetMemPool", 13000);
        /// CUDA 12.4.
        pub(crate) fn cuDeviceRegisterAsyncNotification = PFN_cuDeviceRegisterAsyncNotification_v12040(c"cuDeviceRegisterAsyncNotification", 12040);
        /// CUDA 12.4.
        pub(crate) fn cuDeviceUnregisterAsyncNotification = PFN_cuDeviceUnregisterAsyncNotification_v12040(c"cuDeviceUnregisterAsyncNotification", 12040);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_carry_symbol_version_and_flavour() {
        assert_eq!(
            pfn::cuStreamBeginCapture_v10010::SYMBOL,
            c"cuStreamBeginCapture"
        );
        assert_eq!(
            <pfn::cuStreamBeginCapture_v10010 as EntryPoint>::VERSION,
            10010
        );
        assert_eq!(
            <pfn::cuStreamBeginCapture_v10010 as EntryPoint>::FLAGS,
            ProcAddressFlags::LEGACY_STREAM
        );
        assert_eq!(
            <pfn::cuLaunchKernel_v7000_ptsz as EntryPoint>::FLAGS,
            ProcAddressFlags::PER_THREAD_DEFAULT_STREAM
        );
        assert_eq!(<pfn::cuMemcpyHtoD_v7000_ptds as EntryPoint>::VERSION, 7000);
        // The versioning section's typedefs are there too.
        assert_eq!(
            <pfn::cuStreamBeginCapture_v10000 as EntryPoint>::VERSION,
            10000
        );
        assert_eq!(<pfn::cuMemAlloc_v2000 as EntryPoint>::VERSION, 2000);
        // Unversioned names are the newest ABI.
        assert_eq!(<pfn::cuStreamBeginCapture as EntryPoint>::VERSION, 10010);
        assert_eq!(<pfn::cuCtxCreate as EntryPoint>::VERSION, 12050);
        assert_eq!(<pfn::cuMemAlloc as EntryPoint>::VERSION, 3020);
    }

    #[test]
    fn marker_types_are_the_typedefs() {
        // Compiles only if the types agree.
        let _: fn(
            Option<<pfn::cuStreamBeginCapture_v10010 as EntryPoint>::Pfn>,
        ) -> sys::PFN_cuStreamBeginCapture_v10010 = |f| f;
        let _: fn(
            Option<<pfn::cuStreamBeginCapture_v10000 as EntryPoint>::Pfn>,
        ) -> sys::PFN_cuStreamBeginCapture_v10000 = |f| f;
        let _: fn(
            Option<<pfn::cuLaunchKernel_v7000_ptsz as EntryPoint>::Pfn>,
        ) -> sys::PFN_cuLaunchKernel_v7000_ptsz = |f| f;
    }

    #[test]
    fn crate_flags_follow_the_feature() {
        if cfg!(feature = "per-thread-default-stream") {
            assert_eq!(CRATE_FLAGS, ProcAddressFlags::PER_THREAD_DEFAULT_STREAM);
        } else {
            assert_eq!(CRATE_FLAGS, ProcAddressFlags::LEGACY_STREAM);
        }
    }

    #[test]
    fn newer_entries_match_their_typedefs() {
        assert_eq!(newer::ENTRIES.len(), lazy_functions().len());
        for (&(name, pfn, symbol, version), f) in newer::ENTRIES.iter().zip(lazy_functions()) {
            let symbol = symbol.to_str().unwrap();
            assert_eq!(pfn, format!("PFN_{symbol}_v{version}"), "newer::{name}");
            assert!(
                name == symbol
                    || name
                        .strip_prefix(symbol)
                        .is_some_and(|v| v.starts_with("_v")),
                "newer::{name} resolves {symbol}"
            );
            assert_eq!((f.name(), f.version()), (name, version));
            assert_eq!(f.symbol().to_str().unwrap(), symbol);
        }
    }

    #[test]
    fn entry_point_errors_say_which_case() {
        let e = Error::EntryPoint {
            symbol: "cuLibraryLoadData".into(),
            version: 11000,
            status: ProcAddressStatus::VERSION_NOT_SUFFICIENT,
        };
        assert_eq!(
            e.to_string(),
            "the driver has `cuLibraryLoadData`, but not at CUDA 11.0 (version 11000): \
             CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT"
        );
        let e = Error::EntryPoint {
            symbol: "cuNoSuchFunction".into(),
            version: 12000,
            status: ProcAddressStatus::SYMBOL_NOT_FOUND,
        };
        let s = e.to_string();
        assert!(
            s.starts_with("the driver has no symbol `cuNoSuchFunction` at CUDA 12.0"),
            "{s}"
        );
        assert!(s.contains("CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND"), "{s}");
        assert!(!e.is_no_gpu());
        assert_eq!(e.code(), None);
    }

    #[test]
    fn lookups_without_a_driver_say_so() {
        // On a machine with a driver these succeed; without one (the stub) they must fail
        // with the plain "no driver" error, never crash.
        if crate::init().is_ok() {
            return;
        }
        let e = get::<pfn::cuDriverGetVersion_v2020>().unwrap_err();
        assert!(e.is_no_gpu(), "{e}");
        static L: Lazy<pfn::cuDriverGetVersion_v2020> = Lazy::new();
        assert!(L.get().unwrap_err().is_no_gpu());
        let e = proc_address(c"cuInit", 2000, ProcAddressFlags::DEFAULT).unwrap_err();
        assert!(e.is_no_gpu(), "{e}");
        for f in lazy_functions() {
            assert!(f.resolve().unwrap_err().is_no_gpu(), "{}", f.name());
        }
    }

    #[test]
    fn flags_debug_names_the_flavour() {
        assert_eq!(
            format!("{:?}", ProcAddressFlags::PER_THREAD_DEFAULT_STREAM),
            "ProcAddressFlags(PER_THREAD_DEFAULT_STREAM)"
        );
        assert_eq!(
            format!("{:?}", ProcAddressStatus::VERSION_NOT_SUFFICIENT),
            "CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT"
        );
    }
}
