//! Seed 002 (CUDA C++ Programming Guide, appendix "Driver API", L.2 Module), ported line for
//! line to `cuda_driver_sys`: compile and link two PTX modules with cuLinkCreate (the seed's
//! six options: wall time, info and error logs, verbose), cuLinkAddData and cuLinkComplete,
//! then load the linked cubin with cuModuleLoadData.
//!
//! The inputs are relocatable device code: `ptx/link_main.ptx` has the kernel `scale_add`,
//! which calls `helper_op`, defined in `ptx/link_helper.ptx`. The port first shows that
//! link_main alone does not load, then links the two and checks what `scale_add` computes.
//!
//! Run: `cargo run -p cuda-driver-examples --example raw_link`

// The seed's C names (cuModule, linkState, PTXCode0, cubinSize) are kept.
#![allow(non_snake_case)]

use std::ffi::{c_int, c_uint, c_void};
use std::ptr::null_mut;

use cuda_driver_examples::{
    check_cuda_driver, check_driver, ensure, jit_option_f32, log_text, ptx, raw_create_context,
    raw_init_or_exit,
};
use cuda_driver_sys::*;

const BUFFER_SIZE: usize = 8192;

/// The seed's `if (err != CUDA_SUCCESS) printf("Link error:\n%s\n", error_log);`, then the
/// checkDriver report and exit: the port cannot go on without the step.
fn check_link_step(err: CUresult, op: &str, error_log: &[u8], line: u32) {
    if err != CUDA_SUCCESS {
        println!("Link error:\n{}", log_text(error_log));
        check_cuda_driver(err, op, file!(), line);
        std::process::exit(1);
    }
}

fn main() {
    raw_init_or_exit();

    let (_cuDevice, cuContext) = raw_create_context();

    // link_main alone is not a program: helper_op is an unresolved extern.
    let mut cuModule: CUmodule = null_mut();
    // SAFETY: the image is NUL-terminated PTX text; `cuModule` is a live out-pointer.
    let err = unsafe { cuModuleLoadData(&mut cuModule, ptx::LINK_MAIN.as_ptr().cast::<c_void>()) };
    ensure!(
        err != CUDA_SUCCESS,
        "link_main.ptx calls an extern function, so it only loads once linked"
    );
    println!("link_main.ptx alone does not load (CUresult {err}), as expected.");

    let mut options: [CUjit_option; 6] = [0; 6];
    let mut values: [*mut c_void; 6] = [null_mut(); 6];
    let mut error_log = [0u8; BUFFER_SIZE];
    let mut info_log = [0u8; BUFFER_SIZE];
    let PTXCode0 = ptx::LINK_MAIN;
    let PTXCode1 = ptx::LINK_HELPER;
    let mut linkState: CUlinkState = null_mut();
    let mut cubin: *mut c_void = null_mut();
    let mut cubinSize: usize = 0;
    let mut walltime: f32 = 0.0;
    // CU_JIT_WALL_TIME: cuda.h says the driver "overwrites the option value" with the float,
    // that is values[0] itself, while the seed (like the ptxjit sample) passes `&walltime` and
    // prints `walltime`. The port passes `&walltime` too and reads whichever was written.
    options[0] = CU_JIT_WALL_TIME;
    values[0] = (&raw mut walltime).cast::<c_void>();
    options[1] = CU_JIT_INFO_LOG_BUFFER;
    values[1] = info_log.as_mut_ptr().cast::<c_void>();
    options[2] = CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES;
    values[2] = BUFFER_SIZE as *mut c_void;
    options[3] = CU_JIT_ERROR_LOG_BUFFER;
    values[3] = error_log.as_mut_ptr().cast::<c_void>();
    options[4] = CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES;
    values[4] = BUFFER_SIZE as *mut c_void;
    options[5] = CU_JIT_LOG_VERBOSE;
    values[5] = 1 as *mut c_void;
    // SAFETY: `options` and `values` hold 6 entries each, and they, `walltime` and the two log
    // buffers (BUFFER_SIZE bytes each, the sizes given) stay alive and unmoved until
    // cuLinkDestroy below, as output options require; `linkState` is a live out-pointer.
    unsafe {
        check_driver!(cuLinkCreate(
            options.len() as c_uint,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
            &mut linkState
        ));
    }

    // The two PTX inputs, NUL-terminated: `len()` is the seed's `strlen(PTXCode) + 1`.
    for (PTXCode, op) in [
        (
            PTXCode0,
            "cuLinkAddData(linkState, CU_JIT_INPUT_PTX, PTXCode0, ...)",
        ),
        (
            PTXCode1,
            "cuLinkAddData(linkState, CU_JIT_INPUT_PTX, PTXCode1, ...)",
        ),
    ] {
        // SAFETY: `linkState` is a live link state; the input is NUL-terminated PTX text of
        // exactly the size given, only read by the driver (the `void*` parameter is not
        // written); no name, no per-input options.
        let err = unsafe {
            cuLinkAddData(
                linkState,
                CU_JIT_INPUT_PTX,
                PTXCode.as_ptr().cast_mut().cast::<c_void>(),
                PTXCode.len(),
                std::ptr::null(),
                0,
                null_mut(),
                null_mut(),
            )
        };
        check_link_step(err, op, &error_log, line!());
    }

    // SAFETY: `linkState` holds both inputs; `cubin` and `cubinSize` are live out-pointers.
    // The cubin is owned by the link state: it stays valid until cuLinkDestroy.
    let err = unsafe { cuLinkComplete(linkState, &mut cubin, &mut cubinSize) };
    check_link_step(
        err,
        "cuLinkComplete(linkState, &cubin, &cubinSize)",
        &error_log,
        line!(),
    );
    if values[0] != (&raw mut walltime).cast::<c_void>() {
        walltime = jit_option_f32(&values[0]);
    }
    println!(
        "Link completed in {walltime:.6}ms. Linker Output:\n{}",
        log_text(&info_log)
    );
    ensure!(
        !cubin.is_null() && cubinSize > 0,
        "cuLinkComplete returns a cubin, got {cubinSize} bytes at {cubin:p}"
    );

    // SAFETY: `cubin` is the link state's cubin image, alive until cuLinkDestroy, which comes
    // after the load (the driver copies the image); `cuModule` is a live out-pointer.
    unsafe {
        check_driver!(cuModuleLoadData(&mut cuModule, cubin));
        check_driver!(cuLinkDestroy(linkState));
    }

    // Launch scale_add(out, in, s, n): out[i] = helper_op(in[i], s) = in[i] * s + 1.
    // With in[i] = i and s = 3 every value is exact, whether or not the JIT fuses the
    // multiply-add.
    let mut n: c_int = 1000;
    let mut s: f32 = 3.0;
    let h_in: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut h_out: Vec<f32> = vec![0.0; n as usize];
    let bytes = n as usize * size_of::<f32>();
    let mut d_in: CUdeviceptr = 0;
    let mut d_out: CUdeviceptr = 0;
    let mut scale_add: CUfunction = null_mut();
    // SAFETY: the out-pointers are live; `h_in` holds n floats = `bytes`, as does d_in.
    unsafe {
        check_driver!(cuModuleGetFunction(
            &mut scale_add,
            cuModule,
            c"scale_add".as_ptr()
        ));
        check_driver!(cuMemAlloc(&mut d_in, bytes));
        check_driver!(cuMemAlloc(&mut d_out, bytes));
        check_driver!(cuMemcpyHtoD(d_in, h_in.as_ptr().cast::<c_void>(), bytes));
    }
    let threads: c_uint = 256;
    let blocks: c_uint = (n as c_uint).div_ceil(threads);
    let mut args: [*mut c_void; 4] = [
        (&raw mut d_out).cast(),
        (&raw mut d_in).cast(),
        (&raw mut s).cast(),
        (&raw mut n).cast(),
    ];
    // SAFETY: scale_add is (float* out, const float* in, float s, int n): `args` points to two
    // CUdeviceptr, an f32 and a c_int, in that order, alive during the call. The grid covers
    // n threads and the kernel skips i >= n, so it stays inside the two n-float buffers. The
    // copy back reads `bytes` into `h_out`, which holds n floats.
    unsafe {
        check_driver!(cuLaunchKernel(
            scale_add,
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
        check_driver!(cuMemcpyDtoH(
            h_out.as_mut_ptr().cast::<c_void>(),
            d_out,
            bytes
        ));
    }
    let wrong = (0..n as usize)
        .filter(|&i| h_out[i] != h_in[i] * s + 1.0)
        .count();
    ensure!(
        wrong == 0,
        "{wrong} of {n} elements differ from in[i] * {s} + 1 (out[1] = {})",
        h_out[1]
    );
    println!("scale_add through the linked helper_op: all {n} elements checked.");

    // SAFETY: each handle was created above, is released once and not used afterwards.
    unsafe {
        check_driver!(cuMemFree(d_in));
        check_driver!(cuMemFree(d_out));
        check_driver!(cuModuleUnload(cuModule));
        check_driver!(cuCtxDestroy(cuContext));
    }
}
