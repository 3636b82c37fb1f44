//! Tests of cuda-driver-sys: what the bindings declare (on every machine) and raw driver calls
//! (on a GPU machine; reported `ignored, <reason>` elsewhere, failed instead when
//! `CUDA_DRIVER_REQUIRE_GPU=1`). Tests are marked `#[gpu_test]` and run by
//! cuda-driver-test-harness (`harness = false`; see its documentation).

// `#[gpu_test]` (and `#[test]` made an error: it would never run here).
#[macro_use]
extern crate cuda_driver_test_harness;

use std::ffi::{c_void, CStr};
use std::mem::{align_of, size_of};
use std::ptr;

use cuda_driver_sys::*;
use cuda_driver_test_harness::skip;

fn main() -> std::process::ExitCode {
    cuda_driver_test_harness::main()
}

/// Initialises the driver; without a driver or a device the test skips.
fn driver_or_skip() {
    // SAFETY: cuInit may be called any number of times from any thread.
    let r = unsafe { cuInit(0) };
    if r == CUDA_SUCCESS {
        return;
    }
    if r == CUDA_ERROR_STUB_LIBRARY {
        skip("no GPU: CUDA_ERROR_STUB_LIBRARY from cuInit");
    } else if r == CUDA_ERROR_NO_DEVICE {
        skip("no GPU: CUDA_ERROR_NO_DEVICE from cuInit");
    }
    panic!("cuInit failed with {r}")
}

macro_rules! ck {
    ($e:expr) => {{
        // SAFETY: each call site passes valid pointers to locals, as the driver API requires.
        let r = unsafe { $e };
        assert_eq!(r, CUDA_SUCCESS, "{} returned {}", stringify!($e), r);
    }};
}

fn addr<T>(f: T) -> usize {
    assert_eq!(size_of::<T>(), size_of::<usize>());
    // SAFETY: T is a function pointer (checked size above); reading its bits as usize.
    unsafe { std::mem::transmute_copy(&f) }
}

#[gpu_test]
fn c_names_link_to_the_versioned_symbols() {
    // The name C code writes and the symbol cuda.h maps it to are the same function.
    assert_eq!(
        addr(cuMemAlloc as unsafe extern "C" fn(_, _) -> _),
        addr(cuMemAlloc_v2 as unsafe extern "C" fn(_, _) -> _)
    );
    assert_eq!(
        addr(cuCtxDestroy as unsafe extern "C" fn(_) -> _),
        addr(cuCtxDestroy_v2 as unsafe extern "C" fn(_) -> _)
    );
    assert_eq!(
        addr(cuLinkCreate as unsafe extern "C" fn(_, _, _, _) -> _),
        addr(cuLinkCreate_v2 as unsafe extern "C" fn(_, _, _, _) -> _)
    );
    assert_eq!(
        addr(cuCtxCreate as unsafe extern "C" fn(_, _, _, _) -> _),
        addr(cuCtxCreate_v4 as unsafe extern "C" fn(_, _, _, _) -> _)
    );
    // Older versions keep their own symbols.
    assert_ne!(
        addr(cuCtxCreate_v2 as unsafe extern "C" fn(_, _, _) -> _),
        addr(cuCtxCreate_v3 as unsafe extern "C" fn(_, _, _, _, _) -> _)
    );
}

#[cfg(not(feature = "per-thread-default-stream"))]
#[gpu_test]
fn without_the_feature_c_names_use_the_legacy_stream_symbols() {
    assert_eq!(
        addr(cuMemcpyHtoD as unsafe extern "C" fn(_, _, _) -> _),
        addr(cuMemcpyHtoD_v2 as unsafe extern "C" fn(_, _, _) -> _)
    );
    assert_ne!(
        addr(cuLaunchKernel as unsafe extern "C" fn(_, _, _, _, _, _, _, _, _, _, _) -> _),
        addr(cuLaunchKernel_ptsz as unsafe extern "C" fn(_, _, _, _, _, _, _, _, _, _, _) -> _)
    );
}

#[cfg(feature = "per-thread-default-stream")]
#[gpu_test]
fn with_the_feature_c_names_use_the_per_thread_symbols() {
    assert_eq!(
        addr(cuMemcpyHtoD as unsafe extern "C" fn(_, _, _) -> _),
        addr(cuMemcpyHtoD_v2_ptds as unsafe extern "C" fn(_, _, _) -> _)
    );
    assert_eq!(
        addr(cuLaunchKernel as unsafe extern "C" fn(_, _, _, _, _, _, _, _, _, _, _) -> _),
        addr(cuLaunchKernel_ptsz as unsafe extern "C" fn(_, _, _, _, _, _, _, _, _, _, _) -> _)
    );
}

#[gpu_test]
fn enumerators_are_constants_typed_by_their_typedef() {
    let _: CUresult = CUDA_SUCCESS;
    let _: CUctx_flags = CU_CTX_SCHED_AUTO;
    let _: CUjit_option = CU_JIT_ERROR_LOG_BUFFER;
    let _: CUdriverProcAddress_flags = CU_GET_PROC_ADDRESS_DEFAULT;
    let _: CUdriverProcAddressQueryResult = CU_GET_PROC_ADDRESS_SUCCESS;
    let _: CUoutput_mode = CU_OUT_CSV; // cudaProfiler.h's
    assert_eq!(CUDA_ERROR_OUT_OF_MEMORY, 2);
    assert_eq!(CUDA_ERROR_STUB_LIBRARY, 34);
    assert_eq!(CUDA_VERSION, 13000);
    assert_eq!(HEADER_VERSION, 13000);
}

#[gpu_test]
fn pointer_valued_defines() {
    assert_eq!(CU_LAUNCH_PARAM_END as usize, 0);
    assert_eq!(CU_LAUNCH_PARAM_BUFFER_POINTER as usize, 1);
    assert_eq!(CU_LAUNCH_PARAM_BUFFER_SIZE as usize, 2);
    assert_eq!(CU_STREAM_LEGACY as usize, 1);
    assert_eq!(CU_STREAM_PER_THREAD as usize, 2);
    assert_eq!(CU_DEVICE_CPU, -1);
    assert_eq!(CU_DEVICE_INVALID, -2);
}

#[gpu_test]
fn pfn_typedefs_are_at_the_root() {
    let _: PFN_cuMemAlloc_v3020 = None;
    let _: PFN_cuLaunchKernel_v7000_ptsz = None;
    let _: PFN_cuStreamBeginCapture_v10000 = None;
    let _: PFN_cuStreamBeginCapture_v10010 = None;
    // cudaProfilerTypedefs.h's.
    let _: PFN_cuProfilerStart_v4000 = None;
    let _: PFN_cuProfilerStop_v4000 = None;
}

#[gpu_test]
fn struct_layouts_match_the_64_bit_c_abi() {
    // bindgen's own layout assertions are compile-time; these pin a few that programs
    // build by hand (the sizes of CUDA 13.0's cuda.h on x86-64 and aarch64).
    assert_eq!(size_of::<CUdeviceptr>(), 8);
    assert_eq!(size_of::<CUuuid>(), 16);
    assert_eq!(size_of::<CUlaunchAttribute>(), 72);
    assert_eq!(align_of::<CUlaunchAttribute>(), 8);
    assert_eq!(size_of::<CUlaunchConfig>(), 56);
    assert_eq!(size_of::<CUDA_MEMCPY2D>(), 128);
    assert_eq!(size_of::<CUmemLocation>(), 8);
}

#[gpu_test]
fn without_a_driver_every_call_reports_the_stub() {
    // On a machine with a driver this checks nothing; with the stub, the one answer is
    // CUDA_ERROR_STUB_LIBRARY.
    // SAFETY: cuInit takes a flags value.
    let r = unsafe { cuInit(0) };
    if r == CUDA_ERROR_STUB_LIBRARY {
        let mut n = -1;
        // SAFETY: writes one int.
        assert_eq!(unsafe { cuDeviceGetCount(&mut n) }, CUDA_ERROR_STUB_LIBRARY);
        assert_eq!(n, -1);
        // cudaProfiler.h's functions are in the stub too.
        // SAFETY: no arguments.
        assert_eq!(unsafe { cuProfilerStart() }, CUDA_ERROR_STUB_LIBRARY);
        // SAFETY: no arguments.
        assert_eq!(unsafe { cuProfilerStop() }, CUDA_ERROR_STUB_LIBRARY);
    }
}

#[gpu_test]
fn raw_device_memory_round_trip() {
    driver_or_skip();
    let mut dev = 0;
    ck!(cuDeviceGet(&mut dev, 0));
    let mut ctx = ptr::null_mut();
    ck!(cuDevicePrimaryCtxRetain(&mut ctx, dev));
    ck!(cuCtxSetCurrent(ctx));
    let host: Vec<u32> = (0..4096u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let bytes = host.len() * 4;
    let mut d = 0;
    ck!(cuMemAlloc(&mut d, bytes));
    ck!(cuMemcpyHtoD(d, host.as_ptr().cast::<c_void>(), bytes));
    let mut back = vec![0u32; host.len()];
    ck!(cuMemcpyDtoH(back.as_mut_ptr().cast::<c_void>(), d, bytes));
    assert_eq!(back, host);
    ck!(cuMemsetD32(d, 0xdead_beef, host.len()));
    ck!(cuMemcpyDtoH(back.as_mut_ptr().cast::<c_void>(), d, bytes));
    assert!(back.iter().all(|&v| v == 0xdead_beef));
    ck!(cuMemFree(d));
    ck!(cuDevicePrimaryCtxRelease(dev));
}

#[gpu_test]
fn raw_error_strings() {
    let mut name = ptr::null();
    let mut desc = ptr::null();
    driver_or_skip();
    ck!(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &mut name));
    ck!(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &mut desc));
    // SAFETY: on success both point to static NUL-terminated strings of the driver.
    let (name, desc) = unsafe { (CStr::from_ptr(name), CStr::from_ptr(desc)) };
    assert_eq!(name.to_str().unwrap(), "CUDA_ERROR_OUT_OF_MEMORY");
    assert_eq!(desc.to_str().unwrap(), "out of memory");
}

#[gpu_test]
fn raw_get_proc_address_matches_direct_link() {
    driver_or_skip();
    let mut version = 0;
    ck!(cuDriverGetVersion(&mut version));
    assert!(version >= 12000, "driver {version}");
    let mut p: *mut c_void = ptr::null_mut();
    let mut status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    ck!(cuGetProcAddress(
        c"cuMemAlloc".as_ptr(),
        &mut p,
        3020,
        CU_GET_PROC_ADDRESS_DEFAULT as u64,
        &mut status
    ));
    assert_eq!(status, CU_GET_PROC_ADDRESS_SUCCESS);
    assert!(!p.is_null());
    // SAFETY: cudaTypedefs.h gives this PFN for cuMemAlloc at 3020 (cuMemAlloc_v2).
    let f: PFN_cuMemAlloc_v3020 = unsafe { std::mem::transmute(p) };
    let mut dev = 0;
    ck!(cuDeviceGet(&mut dev, 0));
    let mut ctx = ptr::null_mut();
    ck!(cuDevicePrimaryCtxRetain(&mut ctx, dev));
    ck!(cuCtxSetCurrent(ctx));
    let mut d = 0;
    ck!(f.unwrap()(&mut d, 256));
    assert_ne!(d, 0);
    ck!(cuMemFree(d));
    ck!(cuDevicePrimaryCtxRelease(dev));
}
