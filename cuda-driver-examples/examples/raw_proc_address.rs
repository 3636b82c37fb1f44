//! Seed 002 (CUDA C++ Programming Guide, appendix "Driver API", L.5 Driver Entry Point
//! Access), ported line for line to `cuda_driver_sys`: cuGetProcAddress by CUDA version
//! (`cuStreamBeginCapture` at 10000 and at 10010, typed with the `PFN_*_v10000` /
//! `PFN_*_v10010` typedefs of cudaTypedefs.h), the newest version through
//! cuDriverGetVersion, the per-thread default stream flavour against the legacy one, and the
//! statuses of a version too old and of a symbol that does not exist.
//!
//! The v2 pointer is called on a real stream (begin capture, then cuStreamEndCapture) to show
//! it is the function its type says.
//!
//! Run: `cargo run -p cuda-driver-examples --example raw_proc_address`

// The C names of the seed (pfn_cuStreamBeginCapture_v1, driverVersion, hStream) are kept.
#![allow(non_snake_case)]

use std::ffi::{c_int, c_void, CStr};
use std::ptr::null_mut;

use cuda_driver_examples::{check_driver, ensure, raw_create_context, raw_init_or_exit};
use cuda_driver_sys::*;

/// The names of CUdriverProcAddressQueryResult's values.
fn status_name(status: CUdriverProcAddressQueryResult) -> &'static str {
    match status {
        CU_GET_PROC_ADDRESS_SUCCESS => "CU_GET_PROC_ADDRESS_SUCCESS",
        CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND => "CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND",
        CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT => "CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT",
        _ => "(unknown CUdriverProcAddressQueryResult)",
    }
}

/// cuGetProcAddress into a `PFN_*` variable, returning the CUresult and the symbol status.
///
/// # Safety
/// `P` is a `PFN_*` type: `Option<unsafe extern "C" fn(..)>`, which has the size and layout
/// of a nullable C function pointer, so the driver's `void*` store into `*pfn` is a valid
/// `P` (null is `None`). The caller calls the result only if `P` is the typedef of the
/// version that `symbol` resolves to at `cudaVersion`.
unsafe fn get_proc_address<P>(
    symbol: &CStr,
    pfn: &mut Option<P>,
    cudaVersion: c_int,
    flags: CUdriverProcAddress_flags,
) -> (CUresult, CUdriverProcAddressQueryResult) {
    const { assert!(size_of::<Option<P>>() == size_of::<*mut c_void>()) };
    let mut symbolStatus: CUdriverProcAddressQueryResult = CU_GET_PROC_ADDRESS_SUCCESS;
    // SAFETY: `symbol` is NUL-terminated; `pfn` is valid for a pointer-sized write, which is
    // a valid `Option<P>` (see the function's contract); `symbolStatus` is live.
    let err = unsafe {
        cuGetProcAddress(
            symbol.as_ptr(),
            (pfn as *mut Option<P>).cast::<*mut c_void>(),
            cudaVersion,
            cuuint64_t::from(flags),
            &mut symbolStatus,
        )
    };
    (err, symbolStatus)
}

fn main() {
    raw_init_or_exit();

    // The entry points for cuStreamBeginCapture: _v1 (CUDA 10.0) takes only the stream, _v2
    // (CUDA 10.1) also the capture mode.
    let mut pfn_cuStreamBeginCapture_v1: PFN_cuStreamBeginCapture_v10000 = None;
    let mut pfn_cuStreamBeginCapture_v2: PFN_cuStreamBeginCapture_v10010 = None;

    // SAFETY: each PFN variable is the typedef of the version asked for (10000: _v1,
    // 10010: _v2).
    let (err1, status1) = unsafe {
        get_proc_address(
            c"cuStreamBeginCapture",
            &mut pfn_cuStreamBeginCapture_v1,
            10000,
            CU_GET_PROC_ADDRESS_DEFAULT,
        )
    };
    // SAFETY: as above.
    let (err2, status2) = unsafe {
        get_proc_address(
            c"cuStreamBeginCapture",
            &mut pfn_cuStreamBeginCapture_v2,
            10010,
            CU_GET_PROC_ADDRESS_DEFAULT,
        )
    };
    check_driver!(err1);
    check_driver!(err2);
    let v1 = pfn_cuStreamBeginCapture_v1.map_or(null_mut(), |f| f as *mut c_void);
    let v2 = pfn_cuStreamBeginCapture_v2.map_or(null_mut(), |f| f as *mut c_void);
    println!(
        "cuStreamBeginCapture at 10000: {v1:p} ({})",
        status_name(status1)
    );
    println!(
        "cuStreamBeginCapture at 10010: {v2:p} ({})",
        status_name(status2)
    );
    ensure!(
        status1 == CU_GET_PROC_ADDRESS_SUCCESS && status2 == CU_GET_PROC_ADDRESS_SUCCESS,
        "both versions are found"
    );
    ensure!(!v1.is_null() && !v2.is_null(), "both pointers are set");
    ensure!(
        v1 != v2,
        "10000 gives cuStreamBeginCapture, 10010 cuStreamBeginCapture_v2: two functions"
    );

    // Call the v2 pointer on a real stream: begin a capture, see it active, end it.
    let (_cuDevice, cuContext) = raw_create_context();
    let mut hStream: CUstream = null_mut();
    // SAFETY: `hStream` is a live out-pointer; `cuContext` is current.
    unsafe {
        check_driver!(cuStreamCreate(&mut hStream, CU_STREAM_NON_BLOCKING));
    }
    let begin_capture = pfn_cuStreamBeginCapture_v2.expect("checked non-null above");
    let mut captureStatus: CUstreamCaptureStatus = CU_STREAM_CAPTURE_STATUS_NONE;
    let mut hGraph: CUgraph = null_mut();
    // SAFETY: `begin_capture` came from cuGetProcAddress at 10010, the version whose
    // signature PFN_cuStreamBeginCapture_v10010 is (CUstream, CUstreamCaptureMode);
    // `hStream` is a live stream of the current context, not the legacy default stream
    // (which cannot be captured); the out-pointers are live.
    unsafe {
        check_driver!(begin_capture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL));
        check_driver!(cuStreamIsCapturing(hStream, &mut captureStatus));
        check_driver!(cuStreamEndCapture(hStream, &mut hGraph));
    }
    ensure!(
        captureStatus == CU_STREAM_CAPTURE_STATUS_ACTIVE,
        "the stream is capturing after the call through the v2 pointer"
    );
    ensure!(
        !hGraph.is_null(),
        "cuStreamEndCapture returns the (empty) graph"
    );
    println!("Called the v2 pointer: capture began, cuStreamEndCapture returned a graph.");
    // SAFETY: the graph, stream and context were created above, are destroyed once and not
    // used afterwards.
    unsafe {
        check_driver!(cuGraphDestroy(hGraph));
        check_driver!(cuStreamDestroy(hStream));
        check_driver!(cuCtxDestroy(cuContext));
    }

    // The newest version the installed driver has: ask at the driver's own version. A driver
    // newer than these bindings may return a version newer than any typedef here, so the
    // pointer is only compared, never called. Asking at CUDA_VERSION, the version of the
    // headers these bindings come from, gives the newest version they know: _v2 (cuda.h maps
    // cuStreamBeginCapture to cuStreamBeginCapture_v2; cudaTypedefs.h's unversioned
    // PFN_cuStreamBeginCapture is PFN_cuStreamBeginCapture_v10010).
    let mut driverVersion: c_int = 0;
    // SAFETY: `driverVersion` is a live out-pointer.
    unsafe {
        check_driver!(cuDriverGetVersion(&mut driverVersion));
    }
    let mut pfn_newest: PFN_cuStreamBeginCapture_v10010 = None;
    // SAFETY: the result is only compared, not called.
    let (err, status) = unsafe {
        get_proc_address(
            c"cuStreamBeginCapture",
            &mut pfn_newest,
            driverVersion,
            CU_GET_PROC_ADDRESS_DEFAULT,
        )
    };
    check_driver!(err);
    let newest = pfn_newest.map_or(null_mut(), |f| f as *mut c_void);
    println!(
        "cuStreamBeginCapture at the driver's version {driverVersion}: {newest:p} ({}){}",
        status_name(status),
        if newest == v2 { ", the _v2 symbol" } else { "" }
    );
    ensure!(
        status == CU_GET_PROC_ADDRESS_SUCCESS && !newest.is_null(),
        "the driver has cuStreamBeginCapture at its own version"
    );
    let mut pfn_latest: PFN_cuStreamBeginCapture_v10010 = None;
    // SAFETY: the typedef is that of _v2, the newest version at CUDA_VERSION (13000).
    let (err, status) = unsafe {
        get_proc_address(
            c"cuStreamBeginCapture",
            &mut pfn_latest,
            CUDA_VERSION as c_int,
            CU_GET_PROC_ADDRESS_DEFAULT,
        )
    };
    check_driver!(err);
    let latest = pfn_latest.map_or(null_mut(), |f| f as *mut c_void);
    println!(
        "cuStreamBeginCapture at CUDA_VERSION {CUDA_VERSION}: {latest:p} ({})",
        status_name(status)
    );
    ensure!(
        latest == v2,
        "at CUDA_VERSION the newest cuStreamBeginCapture is _v2, as at 10010"
    );

    // The per-thread default stream flavour (cuLaunchKernel_ptsz) against the legacy one.
    let mut pfn_launch_legacy: PFN_cuLaunchKernel_v4000 = None;
    let mut pfn_launch_ptsz: PFN_cuLaunchKernel_v7000_ptsz = None;
    // SAFETY: the pointers are only compared, not called.
    let (err_legacy, status_legacy) = unsafe {
        get_proc_address(
            c"cuLaunchKernel",
            &mut pfn_launch_legacy,
            CUDA_VERSION as c_int,
            CU_GET_PROC_ADDRESS_LEGACY_STREAM,
        )
    };
    // SAFETY: as above.
    let (err_ptsz, status_ptsz) = unsafe {
        get_proc_address(
            c"cuLaunchKernel",
            &mut pfn_launch_ptsz,
            CUDA_VERSION as c_int,
            CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
        )
    };
    check_driver!(err_legacy);
    check_driver!(err_ptsz);
    let legacy = pfn_launch_legacy.map_or(null_mut(), |f| f as *mut c_void);
    let ptsz = pfn_launch_ptsz.map_or(null_mut(), |f| f as *mut c_void);
    println!(
        "cuLaunchKernel, legacy stream: {legacy:p} ({})",
        status_name(status_legacy)
    );
    println!(
        "cuLaunchKernel, per-thread default stream: {ptsz:p} ({})",
        status_name(status_ptsz)
    );
    ensure!(
        !legacy.is_null() && !ptsz.is_null(),
        "both flavours of cuLaunchKernel are found"
    );
    ensure!(
        legacy != ptsz,
        "cuLaunchKernel and cuLaunchKernel_ptsz are two functions"
    );

    // A version too old: cuLibraryLoadData came with CUDA 12.0, so 11000 finds the symbol but
    // no version of it. cuda.h says the call returns CUDA_SUCCESS with a null pointer; some
    // drivers return CUDA_ERROR_NOT_FOUND instead. The status says why.
    let mut pfn_library: PFN_cuLibraryLoadData_v12000 = None;
    // SAFETY: the pointer is only inspected, not called.
    let (err, status) = unsafe {
        get_proc_address(
            c"cuLibraryLoadData",
            &mut pfn_library,
            11000,
            CU_GET_PROC_ADDRESS_DEFAULT,
        )
    };
    println!(
        "cuLibraryLoadData at 11000: CUresult {err}, {}",
        status_name(status)
    );
    ensure!(
        err == CUDA_SUCCESS || err == CUDA_ERROR_NOT_FOUND,
        "a version too old is not an invalid request"
    );
    ensure!(
        status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT && pfn_library.is_none(),
        "at 11000 cuLibraryLoadData is found but its version is not sufficient"
    );

    // The seed's cuFoo: a function this driver does not have.
    let mut pfn_cuFoo: Option<unsafe extern "C" fn() -> CUresult> = None;
    // SAFETY: the pointer is only inspected, not called.
    let (err, status) = unsafe {
        get_proc_address(
            c"cuFoo",
            &mut pfn_cuFoo,
            driverVersion,
            CU_GET_PROC_ADDRESS_DEFAULT,
        )
    };
    println!("cuFoo: CUresult {err}, {}", status_name(status));
    ensure!(
        err == CUDA_SUCCESS || err == CUDA_ERROR_NOT_FOUND,
        "an unknown symbol is not an invalid request"
    );
    ensure!(
        status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND && pfn_cuFoo.is_none(),
        "cuFoo does not exist"
    );
    println!("All checks passed.");
}
