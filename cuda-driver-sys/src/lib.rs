//! Raw bindings to the CUDA Driver API: `cuda.h` and `cudaProfiler.h` (and the `PFN_*`
//! typedefs of `cudaTypedefs.h` and `cudaProfilerTypedefs.h`) of CUDA 13.0, in Rust, and
//! nothing more.
//!
//! * Every function is declared under the name C code writes and linked to the symbol cuda.h
//!   maps that name to: [`cuMemAlloc`] is the symbol `cuMemAlloc_v2`, [`cuCtxCreate`] is
//!   `cuCtxCreate_v4`. The versioned symbols are there under their own names too
//!   ([`cuMemAlloc_v2`], [`cuCtxCreate_v3`]), and so are the `_ptds`/`_ptsz` per-thread
//!   default stream variants.
//! * With the `per-thread-default-stream` feature, the C names link to the `_ptds`/`_ptsz`
//!   symbols exactly as defining `CUDA_API_PER_THREAD_DEFAULT_STREAM` does in C.
//! * Every enumerator is a constant under its C name, typed by the enum's typedef
//!   ([`CUDA_SUCCESS`]`: `[`CUresult`]). There are no Rust enums: a newer driver may return a
//!   value these bindings do not know.
//! * `#define` constants are here too, including the pointer-valued ones
//!   ([`CU_LAUNCH_PARAM_BUFFER_POINTER`], [`CU_STREAM_PER_THREAD`], [`CU_DEVICE_CPU`]).
//!
//! By default the library links against `libcuda.so.1`. On a machine without the NVIDIA driver
//! the build script compiles a stub whose every function returns `CUDA_ERROR_STUB_LIBRARY`, so
//! programs build anywhere and the same binary runs against the real driver where one is
//! installed (a binary started outside cargo on a machine without the driver finds neither, and
//! the system's loader refuses to start it).
//!
//! With the `dynamic-loading` feature nothing is linked: the same functions, under the same
//! names and signatures, open `libcuda.so.1` (`nvcuda.dll` on Windows) with `libloading` at
//! their first call and look up the symbol the name means (`cuMemAlloc_v2` for [`cuMemAlloc`],
//! the `_ptds`/`_ptsz` one under `per-thread-default-stream`), once. Without the library every
//! function returns `CUDA_ERROR_STUB_LIBRARY`, as the stub does; a function the installed driver
//! does not export returns `CUDA_ERROR_NOT_FOUND`. A Windows build that finds no `cuda.lib`
//! (neither `CUDA_DRIVER_LIB_DIR` nor `CUDA_PATH` is set) loads `nvcuda.dll` the same way.
//!
//! ```no_run
//! use cuda_driver_sys::*;
//! unsafe {
//!     assert_eq!(cuInit(0), CUDA_SUCCESS);
//!     let mut version = 0;
//!     cuDriverGetVersion(&mut version);
//!     println!("CUDA driver {}.{}", version / 1000, version % 1000 / 10);
//! }
//! ```
#![no_std]
#![allow(
    non_upper_case_globals,
    non_camel_case_types,
    non_snake_case,
    clippy::all,
    clippy::undocumented_unsafe_blocks,
    rustdoc::broken_intra_doc_links,
    rustdoc::invalid_html_tags,
    rustdoc::bare_urls,
    rustdoc::invalid_rust_codeblocks
)]

#[cfg(cuda_dynamic_loading)]
extern crate std;

#[rustfmt::skip]
mod bindings;
#[cfg(cuda_dynamic_loading)]
mod dynamic;

pub use bindings::*;
#[cfg(cuda_dynamic_loading)]
use dynamic::driver_cuGetProcAddress_v2;
#[cfg(cuda_dynamic_loading)]
pub use dynamic::functions::*;

/// `CUDA_VERSION` of the cuda.h these bindings were generated from, also published to
/// dependent build scripts as `DEP_CUDA_VERSION`.
pub const HEADER_VERSION: u32 = CUDA_VERSION;

/// `cuGetProcAddress_v2_ptsz`, which cuda.h defines as a `static inline` function (not a
/// driver symbol) when `CUDA_API_PER_THREAD_DEFAULT_STREAM` is defined: `cuGetProcAddress_v2`
/// asking for the per-thread default stream flavour unless `flags` names a stream flavour.
///
/// # Safety
/// As for [`cuGetProcAddress_v2`](fn@cuGetProcAddress_v2): `symbol` is a NUL-terminated string, `funcPtr` is valid for
/// a write, and `symbolStatus` is null or valid for a write.
pub unsafe extern "C" fn cuGetProcAddress_v2_ptsz(
    symbol: *const core::ffi::c_char,
    funcPtr: *mut *mut core::ffi::c_void,
    driverVersion: core::ffi::c_int,
    mut flags: cuuint64_t,
    symbolStatus: *mut CUdriverProcAddressQueryResult,
) -> CUresult {
    let mask = (CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
        as cuuint64_t;
    if flags & mask == 0 {
        flags |= CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM as cuuint64_t;
    }
    // SAFETY: the caller upholds cuGetProcAddress_v2's contract; only `flags` changed.
    unsafe { driver_cuGetProcAddress_v2(symbol, funcPtr, driverVersion, flags, symbolStatus) }
}

#[cfg(not(cuda_dynamic_loading))]
unsafe extern "C" {
    // The driver's symbol, which the inline calls whatever the feature says the name means.
    #[link_name = "cuGetProcAddress_v2"]
    fn driver_cuGetProcAddress_v2(
        symbol: *const core::ffi::c_char,
        pfn: *mut *mut core::ffi::c_void,
        cudaVersion: core::ffi::c_int,
        flags: cuuint64_t,
        symbolStatus: *mut CUdriverProcAddressQueryResult,
    ) -> CUresult;
}

/// With the `per-thread-default-stream` feature, cuda.h maps `cuGetProcAddress` and
/// `cuGetProcAddress_v2` to the inline [`cuGetProcAddress_v2_ptsz`].
#[cfg(feature = "per-thread-default-stream")]
pub use cuGetProcAddress_v2_ptsz as cuGetProcAddress;
/// See [`cuGetProcAddress`].
#[cfg(feature = "per-thread-default-stream")]
pub use cuGetProcAddress_v2_ptsz as cuGetProcAddress_v2;
