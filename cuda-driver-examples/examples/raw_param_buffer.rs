//! Seed 002 (CUDA C++ Programming Guide, appendix "Driver API", L.3 Kernel Execution), ported
//! line for line to `cuda_driver_sys`: the kernel's parameters packed by hand into one buffer
//! with ALIGN_UP / ADD_TO_PARAM_BUFFER, at the device's alignments (float4 16, float2 8, a
//! device pointer 8), and passed to cuLaunchKernel through `extra` with
//! CU_LAUNCH_PARAM_BUFFER_POINTER / CU_LAUNCH_PARAM_BUFFER_SIZE / CU_LAUNCH_PARAM_END.
//!
//! The kernel (`ptx/param_buffer.cu`) takes the seed's parameter list
//! `(int i, float4 f4, char c, float f, float* out, float2 f2)` and writes every value it
//! received back to `out`, so each field of the buffer is checked.
//!
//! Run: `cargo run -p cuda-driver-examples --example raw_param_buffer`

// The seed's C names (paramBuffer, paramBufferSize, devPtr, float4) are kept.
#![allow(non_snake_case, non_camel_case_types)]

use std::ffi::{c_char, c_int, c_void};
use std::ptr::null_mut;

use cuda_driver_examples::{check_driver, ensure, ptx, raw_create_context, raw_init_or_exit};
use cuda_driver_sys::*;

/// CUDA's `float4`: four floats, 16-byte aligned in device code.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct float4 {
    x: f32,
    y: f32,
    z: f32,
    w: f32,
}

/// CUDA's `float2`: two floats, 8-byte aligned in device code.
#[repr(C, align(8))]
#[derive(Clone, Copy)]
struct float2 {
    x: f32,
    y: f32,
}

/// The seed's `ALIGN_UP(offset, alignment)`: `offset` rounded up to a multiple of
/// `alignment`, a power of two.
fn ALIGN_UP(offset: usize, alignment: usize) -> usize {
    debug_assert!(alignment.is_power_of_two());
    (offset + alignment - 1) & !(alignment - 1)
}

/// The seed's `ADD_TO_PARAM_BUFFER(value, alignment)`: aligns `*paramBufferSize` up to
/// `alignment`, copies the bytes of `value` there (the seed's `memcpy`) and advances
/// `*paramBufferSize` past them. `T` is one of the plain types above or a primitive, none of
/// which has padding. Returns the offset the value was written at.
fn ADD_TO_PARAM_BUFFER<T: Copy>(
    paramBuffer: &mut [u8],
    paramBufferSize: &mut usize,
    value: &T,
    alignment: usize,
) -> usize {
    *paramBufferSize = ALIGN_UP(*paramBufferSize, alignment);
    let offset = *paramBufferSize;
    // Panics (before any copy) if the value does not fit: the destination is in bounds.
    let dst = &mut paramBuffer[offset..offset + size_of::<T>()];
    // SAFETY: `value` is a valid T, readable for size_of::<T>() bytes; `dst` is exactly that
    // many writable bytes of a different object, so the ranges do not overlap.
    unsafe {
        std::ptr::copy_nonoverlapping(
            (value as *const T).cast::<u8>(),
            dst.as_mut_ptr(),
            dst.len(),
        );
    }
    *paramBufferSize += size_of::<T>();
    offset
}

fn main() {
    raw_init_or_exit();

    let (_cuDevice, cuContext) = raw_create_context();
    let mut cuModule: CUmodule = null_mut();
    let mut cuFunction: CUfunction = null_mut();
    // SAFETY: the out-pointers are live; the image is NUL-terminated PTX text; the kernel name
    // is a NUL-terminated C string; `cuContext` is current.
    unsafe {
        check_driver!(cuModuleLoadData(
            &mut cuModule,
            ptx::PARAM_BUFFER.as_ptr().cast::<c_void>()
        ));
        check_driver!(cuModuleGetFunction(
            &mut cuFunction,
            cuModule,
            c"param_buffer".as_ptr()
        ));
    }

    // The kernel writes 11 words to `out`.
    const OUT_WORDS: usize = 11;
    let mut devPtr: CUdeviceptr = 0;
    // SAFETY: `devPtr` is a live out-pointer; `cuContext` is current.
    unsafe {
        check_driver!(cuMemAlloc(&mut devPtr, OUT_WORDS * size_of::<u32>()));
    }

    // The parameter values, each distinct so a misplaced one shows.
    let i: c_int = -123_456_789;
    let f4 = float4 {
        x: 1.5,
        y: -2.25,
        z: 3.0e10,
        w: -0.0,
    };
    // A positive char: `char` is signed on x86-64 and unsigned on aarch64, host and device
    // alike, and 'Z' reads the same either way.
    let c = b'Z' as c_char;
    let f: f32 = 1234.5678;
    let f2 = float2 {
        x: -1.0e-3,
        y: 42.0,
    };

    let mut paramBuffer = [0u8; 1024];
    let mut paramBufferSize: usize = 0;
    let offsets = [
        ADD_TO_PARAM_BUFFER(
            &mut paramBuffer,
            &mut paramBufferSize,
            &i,
            align_of::<c_int>(),
        ),
        // float4's alignment is 16
        ADD_TO_PARAM_BUFFER(&mut paramBuffer, &mut paramBufferSize, &f4, 16),
        ADD_TO_PARAM_BUFFER(
            &mut paramBuffer,
            &mut paramBufferSize,
            &c,
            align_of::<c_char>(),
        ),
        ADD_TO_PARAM_BUFFER(
            &mut paramBuffer,
            &mut paramBufferSize,
            &f,
            align_of::<f32>(),
        ),
        // CUdeviceptr is an integer that stands for a pointer: `__alignof(void*)`, 8
        ADD_TO_PARAM_BUFFER(
            &mut paramBuffer,
            &mut paramBufferSize,
            &devPtr,
            align_of::<*mut c_void>(),
        ),
        // float2's alignment is 8
        ADD_TO_PARAM_BUFFER(&mut paramBuffer, &mut paramBufferSize, &f2, 8),
    ];
    // The device layout of (int, float4, char, float, float*, float2), as in the kernel's PTX
    // (`.param .align 16 .b8 param_1[16]`, ...).
    println!("parameter offsets {offsets:?}, {paramBufferSize} bytes");
    ensure!(
        offsets == [0, 16, 32, 36, 40, 48] && paramBufferSize == 56,
        "the packed layout is the device's: offsets {offsets:?}, size {paramBufferSize}"
    );

    let mut extra: [*mut c_void; 5] = [
        CU_LAUNCH_PARAM_BUFFER_POINTER,
        paramBuffer.as_mut_ptr().cast::<c_void>(),
        CU_LAUNCH_PARAM_BUFFER_SIZE,
        (&raw mut paramBufferSize).cast::<c_void>(),
        CU_LAUNCH_PARAM_END,
    ];
    // SAFETY: `extra` is CU_LAUNCH_PARAM_END-terminated; the buffer holds the kernel's six
    // parameters at the device's offsets (checked above), `paramBufferSize` bytes, and both
    // stay alive during the call (the driver copies them at launch). kernelParams is null,
    // as `extra` carries the parameters. One thread writes out[0..11], inside the
    // OUT_WORDS-word allocation `devPtr`.
    unsafe {
        check_driver!(cuLaunchKernel(
            cuFunction,
            1,
            1,
            1,
            1,
            1,
            1,
            0,
            null_mut(),
            null_mut(),
            extra.as_mut_ptr()
        ));
    }

    let mut out = [0u32; OUT_WORDS];
    // SAFETY: `out` holds OUT_WORDS u32 = the bytes copied; the copy waits for the kernel on
    // the legacy default stream.
    unsafe {
        check_driver!(cuMemcpyDtoH(
            out.as_mut_ptr().cast::<c_void>(),
            devPtr,
            size_of_val(&out)
        ));
    }

    // What the kernel wrote: bits of i, f4, bits of (int)c, f, f2, the low and high halves
    // of out's own address.
    let expected: [(&str, u32); OUT_WORDS] = [
        ("i", i as u32),
        ("f4.x", f4.x.to_bits()),
        ("f4.y", f4.y.to_bits()),
        ("f4.z", f4.z.to_bits()),
        ("f4.w", f4.w.to_bits()),
        ("c", c as c_int as u32),
        ("f", f.to_bits()),
        ("f2.x", f2.x.to_bits()),
        ("f2.y", f2.y.to_bits()),
        ("out (low 32 bits)", devPtr as u32),
        ("out (high 32 bits)", (devPtr >> 32) as u32),
    ];
    let mut wrong = 0;
    for (k, ((name, want), got)) in expected.iter().zip(out).enumerate() {
        let ok = got == *want;
        wrong += usize::from(!ok);
        println!(
            "out[{k:2}] {name:18} {got:#010x} {}",
            if ok {
                "ok".to_string()
            } else {
                format!("expected {want:#010x}")
            }
        );
    }
    ensure!(
        wrong == 0,
        "{wrong} of {OUT_WORDS} parameters came through wrong"
    );
    println!("Every parameter of the packed buffer reached the kernel.");

    // SAFETY: each handle was created above, is released once and not used afterwards.
    unsafe {
        check_driver!(cuMemFree(devPtr));
        check_driver!(cuModuleUnload(cuModule));
        check_driver!(cuCtxDestroy(cuContext));
    }
}
