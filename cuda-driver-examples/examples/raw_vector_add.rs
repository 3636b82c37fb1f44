//! Seed 002 (CUDA C++ Programming Guide, appendix "Driver API", the host code of vectorAddDrv),
//! ported line for line to `cuda_driver_sys`: a context, the VecAdd module from PTX, three
//! device vectors, a launch through `cuLaunchKernel`'s argument array, and every element of
//! the result checked.
//!
//! The seed loads "VecAdd.ptx" from a file with cuModuleLoad; the PTX is embedded here
//! (`ptx/vector_add.ptx`) and loaded with cuModuleLoadData.
//!
//! Run: `cargo run -p cuda-driver-examples --example raw_vector_add`

// The seed's C names (N, h_A, d_A, cuContext, vecAdd) are kept.
#![allow(non_snake_case)]

use std::ffi::{c_int, c_uint, c_void};
use std::ptr::null_mut;

use cuda_driver_examples::{check_driver, ensure, ptx, raw_init_or_exit};
use cuda_driver_sys::*;

fn main() {
    let mut N: c_int = 50000;
    let size = N as usize * size_of::<f32>();

    // Input vectors h_A and h_B in host memory, with values whose sums are exact.
    let h_A: Vec<f32> = (0..N).map(|i| i as f32 * 0.5).collect();
    let h_B: Vec<f32> = (0..N).map(|i| (N - i) as f32 * 0.25).collect();
    let mut h_C: Vec<f32> = vec![0.0; N as usize];

    // Initialize
    raw_init_or_exit();

    // Get number of devices supporting CUDA
    let mut deviceCount: c_int = 0;
    // SAFETY: `deviceCount` is a live out-pointer.
    unsafe {
        check_driver!(cuDeviceGetCount(&mut deviceCount));
    }
    if deviceCount == 0 {
        // The seed exits with 0 here; a port that checks its results fails instead.
        eprintln!("There is no device supporting CUDA.");
        std::process::exit(1);
    }

    // Get handle for device 0
    let mut cuDevice: CUdevice = 0;
    // SAFETY: `cuDevice` is a live out-pointer; ordinal 0 < deviceCount.
    unsafe {
        check_driver!(cuDeviceGet(&mut cuDevice, 0));
    }

    // Create context (CUDA 13's cuCtxCreate takes a CUctxCreateParams*, null here)
    let mut cuContext: CUcontext = null_mut();
    // SAFETY: `cuContext` is a live out-pointer; null CUctxCreateParams is allowed.
    unsafe {
        check_driver!(cuCtxCreate(&mut cuContext, null_mut(), 0, cuDevice));
    }

    // Create module from the embedded PTX
    let mut cuModule: CUmodule = null_mut();
    // SAFETY: the image is NUL-terminated PTX text (`ptx::VECTOR_ADD`), alive for the whole
    // program; `cuModule` is a live out-pointer; `cuContext` is current.
    unsafe {
        check_driver!(cuModuleLoadData(
            &mut cuModule,
            ptx::VECTOR_ADD.as_ptr().cast::<c_void>()
        ));
    }

    // Allocate vectors in device memory
    let mut d_A: CUdeviceptr = 0;
    let mut d_B: CUdeviceptr = 0;
    let mut d_C: CUdeviceptr = 0;
    // SAFETY: the out-pointers are live; `cuContext` is current.
    unsafe {
        check_driver!(cuMemAlloc(&mut d_A, size));
        check_driver!(cuMemAlloc(&mut d_B, size));
        check_driver!(cuMemAlloc(&mut d_C, size));
    }

    // Copy vectors from host memory to device memory
    // SAFETY: h_A and h_B hold N floats = `size` bytes, as do d_A and d_B.
    unsafe {
        check_driver!(cuMemcpyHtoD(d_A, h_A.as_ptr().cast::<c_void>(), size));
        check_driver!(cuMemcpyHtoD(d_B, h_B.as_ptr().cast::<c_void>(), size));
    }

    // Get function handle from module
    let mut vecAdd: CUfunction = null_mut();
    // SAFETY: `cuModule` is loaded; the name is a NUL-terminated C string.
    unsafe {
        check_driver!(cuModuleGetFunction(
            &mut vecAdd,
            cuModule,
            c"VecAdd".as_ptr()
        ));
    }

    // Invoke kernel
    let threadsPerBlock: c_uint = 256;
    let blocksPerGrid: c_uint = (N as c_uint).div_ceil(threadsPerBlock);
    let mut args: [*mut c_void; 4] = [
        (&raw mut d_A).cast(),
        (&raw mut d_B).cast(),
        (&raw mut d_C).cast(),
        (&raw mut N).cast(),
    ];
    // SAFETY: VecAdd is (const float* A, const float* B, float* C, int N): `args` points to
    // three CUdeviceptr (64-bit device pointers) and a c_int, in that order, all alive until
    // the call returns (the driver copies them at launch). The grid covers N threads and the
    // kernel skips i >= N, so it stays inside the three N-float buffers.
    unsafe {
        check_driver!(cuLaunchKernel(
            vecAdd,
            blocksPerGrid,
            1,
            1,
            threadsPerBlock,
            1,
            1,
            0,
            null_mut(),
            args.as_mut_ptr(),
            null_mut()
        ));
    }

    // Copy the result back (cuMemcpyDtoH waits for the kernel on the legacy default stream)
    // SAFETY: h_C and d_C hold N floats = `size` bytes.
    unsafe {
        check_driver!(cuMemcpyDtoH(h_C.as_mut_ptr().cast::<c_void>(), d_C, size));
    }

    // Check every element: the kernel's single-precision addition is the host's.
    let mismatches: Vec<usize> = (0..N as usize)
        .filter(|&i| h_C[i] != h_A[i] + h_B[i])
        .collect();
    if let Some(&i) = mismatches.first() {
        eprintln!(
            "h_C[{i}] = {}, expected {} + {} = {}",
            h_C[i],
            h_A[i],
            h_B[i],
            h_A[i] + h_B[i]
        );
    }
    ensure!(
        mismatches.is_empty(),
        "{} of {N} elements differ",
        mismatches.len()
    );
    println!("VecAdd of {N} elements: every element checked.");

    // Free device memory, the module and the context
    // SAFETY: each handle was created above, is released once and not used afterwards.
    unsafe {
        check_driver!(cuMemFree(d_A));
        check_driver!(cuMemFree(d_B));
        check_driver!(cuMemFree(d_C));
        check_driver!(cuModuleUnload(cuModule));
        check_driver!(cuCtxDestroy(cuContext));
    }
}
