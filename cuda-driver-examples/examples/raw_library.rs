//! Seed 000 (context-independent loading, CUDA 12.0), ported line for line to
//! `cuda_driver_sys`: the library is loaded once with cuLibraryLoadData and its kernel taken
//! once with cuLibraryGetKernel, before any context exists; the same CUkernel, cast to
//! CUfunction, is then launched in the primary context of every device, and the driver loads
//! the code into each context by itself. cuLibraryGetManaged returns the library's
//! `__managed__` variables, one allocation shared by every context and device, which the host
//! reads to check that every launch ran.
//!
//! The seed loads "myModule.cubin" with cuLibraryLoadFromFile; the PTX of `ptx/library.cu`
//! is embedded here and loaded with cuLibraryLoadData.
//!
//! Run: `cargo run -p cuda-driver-examples --example raw_library`

// The C names of the seeds (deviceCount) are kept.
#![allow(non_snake_case)]

use std::ffi::{c_int, c_uint, c_void};
use std::ptr::null_mut;

use cuda_driver_examples::{check_driver, ensure, ptx, raw_init_or_exit};
use cuda_driver_sys::*;

fn main() {
    raw_init_or_exit();

    // libraryInitialize(): load the library and get the kernel, once, with no context.
    let mut library: CUlibrary = null_mut();
    let mut kernel: CUkernel = null_mut();
    // SAFETY: the code is NUL-terminated PTX text that outlives the library (a static); no
    // JIT or library options (null arrays, counts 0); the out-pointers are live; the kernel
    // name is a NUL-terminated C string.
    unsafe {
        check_driver!(cuLibraryLoadData(
            &mut library,
            ptx::LIBRARY.as_ptr().cast::<c_void>(),
            null_mut(),
            null_mut(),
            0,
            null_mut(),
            null_mut(),
            0
        ));
        check_driver!(cuLibraryGetKernel(
            &mut kernel,
            library,
            c"myKernel".as_ptr()
        ));
    }

    let mut deviceCount: c_int = 0;
    // SAFETY: `deviceCount` is a live out-pointer.
    unsafe {
        check_driver!(cuDeviceGetCount(&mut deviceCount));
    }
    println!("{deviceCount} device(s)");

    // myKernel(int* out, int n): out[i] = i, managed_data[i] += 1 for i < 256, and
    // launch_count += 1 once per launch. 4 blocks of 256 threads cover n = 1024.
    let mut n: c_int = 1024;
    let threads: c_uint = 256;
    let blocks: c_uint = (n as c_uint).div_ceil(threads);
    let bytes = n as usize * size_of::<c_int>();
    let mut retained: Vec<CUdevice> = Vec::new();
    for ordinal in 0..deviceCount {
        let mut device: CUdevice = 0;
        let mut ctx: CUcontext = null_mut();
        // SAFETY: the out-pointers are live; `ordinal` < deviceCount. The retain is recorded
        // in `retained` and released at the end.
        unsafe {
            check_driver!(cuDeviceGet(&mut device, ordinal));
            check_driver!(cuDevicePrimaryCtxRetain(&mut ctx, device));
        }
        retained.push(device);
        // SAFETY: `ctx` is the primary context retained above, alive until its release.
        unsafe {
            check_driver!(cuCtxSetCurrent(ctx));
        }

        // libraryFunc(): launch the context-independent kernel in the current context.
        let mut d_out: CUdeviceptr = 0;
        let mut h_out: Vec<c_int> = vec![-1; n as usize];
        let mut args: [*mut c_void; 2] = [(&raw mut d_out).cast(), (&raw mut n).cast()];
        // SAFETY: `ctx` is current. A CUkernel may be passed where cuLaunchKernel takes a
        // CUfunction (CUDA 12.0+); the driver launches it in the current context. myKernel is
        // (int* out, int n): `args` points to a CUdeviceptr and a c_int, alive during the
        // call; its 1024 threads write out[0..n] (n ints = `bytes`, allocated here) and
        // managed_data[0..256] (256 floats). The copy back reads `bytes` into `h_out`.
        unsafe {
            check_driver!(cuMemAlloc(&mut d_out, bytes));
            check_driver!(cuLaunchKernel(
                kernel as CUfunction,
                blocks,
                1,
                1,
                threads,
                1,
                1,
                0,
                null_mut(),
                args.as_mut_ptr(),
                null_mut()
            ));
            check_driver!(cuCtxSynchronize());
            check_driver!(cuMemcpyDtoH(
                h_out.as_mut_ptr().cast::<c_void>(),
                d_out,
                bytes
            ));
            check_driver!(cuMemFree(d_out));
        }
        let wrong = (0..n).filter(|&i| h_out[i as usize] != i).count();
        ensure!(
            wrong == 0,
            "device {ordinal}: {wrong} of {n} elements of out differ from their index"
        );
        println!("device {ordinal}: myKernel ran in its primary context {ctx:p}");
    }

    // The managed variables, shared by every context: each launch above added 1.
    let mut dptr: CUdeviceptr = 0;
    let mut size: usize = 0;
    // SAFETY: the out-pointers are live; the name is a NUL-terminated C string; the library
    // has been loaded into at least one context (the launches above).
    unsafe {
        check_driver!(cuLibraryGetManaged(
            &mut dptr,
            &mut size,
            library,
            c"launch_count".as_ptr()
        ));
    }
    ensure!(
        size == size_of::<c_int>(),
        "launch_count is an int, got {size} bytes"
    );
    // SAFETY: `dptr` is the library's managed allocation of `launch_count` (4 bytes, aligned
    // for int), accessible from the host with unified memory; every kernel has finished
    // (cuCtxSynchronize after each launch), so nothing writes it concurrently.
    let launch_count = unsafe { (dptr as *const c_int).read_volatile() };
    println!("launch_count = {launch_count} (read on the host through cuLibraryGetManaged)");
    ensure!(
        launch_count == deviceCount,
        "one launch per device, so launch_count == {deviceCount}"
    );

    // SAFETY: as for launch_count.
    unsafe {
        check_driver!(cuLibraryGetManaged(
            &mut dptr,
            &mut size,
            library,
            c"managed_data".as_ptr()
        ));
    }
    ensure!(
        size == 256 * size_of::<f32>(),
        "managed_data is 256 floats, got {size} bytes"
    );
    // SAFETY: `dptr` is the library's managed allocation of `managed_data`, `size` = 256
    // floats, aligned for f32 and host-accessible; no kernel is running, and the slice is
    // dropped before the library is unloaded.
    let managed_data = unsafe { std::slice::from_raw_parts(dptr as *const f32, 256) };
    let expected = deviceCount as f32;
    ensure!(
        managed_data.iter().all(|&v| v == expected),
        "every managed_data[i] == {expected}: {:?}",
        &managed_data[..4]
    );

    // libraryDeinitialize(): unload the library, then release the primary contexts.
    // SAFETY: the library was loaded above and is unloaded once; nothing refers to its kernel
    // or managed memory afterwards. Each device in `retained` was retained exactly once, and
    // no context is current when they are released.
    unsafe {
        check_driver!(cuLibraryUnload(library));
        check_driver!(cuCtxSetCurrent(null_mut()));
        for device in retained {
            check_driver!(cuDevicePrimaryCtxRelease(device));
        }
    }
    println!("All checks passed.");
}
