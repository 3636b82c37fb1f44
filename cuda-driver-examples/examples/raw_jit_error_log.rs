//! Seed 002 (CUDA C++ Programming Guide, appendix "Driver API", L.2 Module), ported line for
//! line to `cuda_driver_sys`: cuModuleLoadDataEx compiling PTX with the JIT options
//! CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES and
//! CU_JIT_TARGET_FROM_CUCONTEXT, printing the error log when the compile fails.
//!
//! The PTX here is broken on purpose: the load must fail and leave a non-empty log. Then the
//! same options load good PTX (`ptx/vector_add.ptx`) without complaint.
//!
//! Run: `cargo run -p cuda-driver-examples --example raw_jit_error_log`

// The seed's C names (cuModule, PTXCode) are kept.
#![allow(non_snake_case)]

use std::ffi::{c_uint, c_void};
use std::ptr::null_mut;

use cuda_driver_examples::{
    check_driver, ensure, jit_option_u32, log_text, ptx, raw_create_context, raw_init_or_exit,
};
use cuda_driver_sys::*;

const BUFFER_SIZE: usize = 8192;

/// PTX that the JIT rejects: `%r7` is outside the declared registers `%r0`, `%r1`, and
/// `frobnicate` is not an instruction.
const BROKEN_PTX: &str = "\
.version 9.0
.target sm_75
.address_size 64

.visible .entry broken(
\t.param .u64 broken_param_0
)
{
\t.reg .b32 \t%r<2>;
\tmov.u32 \t%r7, 42;
\tfrobnicate.u32 \t%r1, %r1;
\tret;
}
\0";

fn main() {
    raw_init_or_exit();

    // CU_JIT_TARGET_FROM_CUCONTEXT compiles for the device of the current context.
    let (_cuDevice, cuContext) = raw_create_context();

    let mut cuModule: CUmodule = null_mut();
    let mut error_log = [0u8; BUFFER_SIZE];
    let mut options: [CUjit_option; 3] = [0; 3];
    let mut values: [*mut c_void; 3] = [null_mut(); 3];
    options[0] = CU_JIT_ERROR_LOG_BUFFER;
    values[0] = error_log.as_mut_ptr().cast::<c_void>();
    options[1] = CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES;
    values[1] = BUFFER_SIZE as *mut c_void;
    options[2] = CU_JIT_TARGET_FROM_CUCONTEXT;
    values[2] = null_mut();

    let PTXCode = BROKEN_PTX;
    // SAFETY: the image is NUL-terminated PTX text; `options` and `values` hold 3 entries
    // each; values[0] points to `error_log`, which is valid for writes of BUFFER_SIZE bytes,
    // the size given in values[1]; `cuModule` is a live out-pointer; `cuContext` is current.
    let err = unsafe {
        cuModuleLoadDataEx(
            &mut cuModule,
            PTXCode.as_ptr().cast::<c_void>(),
            options.len() as c_uint,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
        )
    };
    if err != CUDA_SUCCESS {
        println!("Link error:\n{}", log_text(&error_log));
    }
    ensure!(err != CUDA_SUCCESS, "the broken PTX must not load");
    ensure!(
        !log_text(&error_log).trim().is_empty(),
        "the failed load left a message in the error log"
    );
    // CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES is also an output: the bytes of log written.
    println!(
        "(the load returned CUresult {err}; {} bytes of error log)",
        jit_option_u32(&values[1])
    );

    // Good PTX through the same options. The size option was overwritten by the output
    // above, so it is set again; the log is cleared, and its pointer taken again after that
    // write.
    error_log.fill(0);
    values[0] = error_log.as_mut_ptr().cast::<c_void>();
    values[1] = BUFFER_SIZE as *mut c_void;
    let PTXCode = ptx::VECTOR_ADD;
    // SAFETY: as above, with the NUL-terminated PTX of ptx/vector_add.ptx.
    unsafe {
        check_driver!(cuModuleLoadDataEx(
            &mut cuModule,
            PTXCode.as_ptr().cast::<c_void>(),
            options.len() as c_uint,
            options.as_mut_ptr(),
            values.as_mut_ptr()
        ));
    }
    let mut vecAdd: CUfunction = null_mut();
    // SAFETY: `cuModule` was loaded by the successful call; the name is NUL-terminated.
    unsafe {
        check_driver!(cuModuleGetFunction(
            &mut vecAdd,
            cuModule,
            c"VecAdd".as_ptr()
        ));
    }
    ensure!(!vecAdd.is_null(), "the good module has its kernel VecAdd");
    println!("Good PTX loaded; VecAdd found.");

    // SAFETY: the module and the context were created above, are released once and not used
    // afterwards.
    unsafe {
        check_driver!(cuModuleUnload(cuModule));
        check_driver!(cuCtxDestroy(cuContext));
    }
}
