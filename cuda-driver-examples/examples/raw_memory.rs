//! Seed 003 ("CUDA篇-Cuda Driver API", 1.4), ported line for line to `cuda_driver_sys`:
//! device memory from cuMemAlloc, page-locked host memory from cuMemAllocHost, and
//! cuMemsetD32 writing the bits of 555.0f into the page-locked memory through its address
//! (with unified addressing a page-locked host pointer is also a device pointer).
//!
//! The seed frees only the page-locked memory; this port frees everything and checks what it
//! wrote: 123 then 555 in the page-locked memory, and a cuMemsetD32 pattern in the device
//! memory read back with cuMemcpyDtoH.
//!
//! Run: `cargo run -p cuda-driver-examples --example raw_memory`

use std::ffi::c_void;
use std::ptr::null_mut;

use cuda_driver_examples::{check_driver, ensure, raw_init_or_exit};
use cuda_driver_sys::*;

fn main() {
    // checkDriver(cuInit(0))
    raw_init_or_exit();

    // A context on device 0 (CUDA 13's cuCtxCreate takes a CUctxCreateParams*, null here).
    let mut context: CUcontext = null_mut();
    let device: CUdevice = 0;
    // SAFETY: `context` is a live out-pointer; null CUctxCreateParams is allowed; device 0
    // exists, as cuInit succeeded.
    unsafe {
        check_driver!(cuCtxCreate(
            &mut context,
            null_mut(),
            CU_CTX_SCHED_AUTO,
            device
        ));
    }
    println!("context = {context:p}");

    // 100 bytes of linear device memory. CUdeviceptr is an integer holding a device address.
    let mut device_memory_pointer: CUdeviceptr = 0;
    // SAFETY: `device_memory_pointer` is a live out-pointer; `context` is current.
    unsafe {
        check_driver!(cuMemAlloc(&mut device_memory_pointer, 100));
    }
    println!("device_memory_pointer = {device_memory_pointer:#x}");
    ensure!(device_memory_pointer != 0, "cuMemAlloc returns an address");

    // 100 bytes of page-locked host memory, seen here as floats.
    let mut host_page_locked_memory: *mut f32 = null_mut();
    // SAFETY: the out-pointer is a live `*mut f32` slot, written as a `void*` (same size and
    // representation); `context` is current.
    unsafe {
        check_driver!(cuMemAllocHost(
            (&mut host_page_locked_memory as *mut *mut f32).cast::<*mut c_void>(),
            100
        ));
    }
    println!("host_page_locked_memory = {host_page_locked_memory:p}");
    ensure!(
        !host_page_locked_memory.is_null() && host_page_locked_memory.is_aligned(),
        "cuMemAllocHost returns an address aligned for f32"
    );

    // Data in page-locked memory is still in host memory: written and read like any other.
    // SAFETY: the allocation holds 100 bytes, so element 0 (bytes 0..4) is in bounds, and the
    // pointer is aligned (checked above); no device work touches it now.
    let first = unsafe {
        host_page_locked_memory.write(123.0);
        host_page_locked_memory.read()
    };
    println!("host_page_locked_memory[0] = {first:.6}");
    ensure!(first == 123.0, "the host reads back the 123 it wrote");

    // cuMemsetD32 sets 32-bit words, given as an unsigned int: the seed's `*(int*)&new_value`
    // is `new_value.to_bits()`. The destination is the page-locked memory, its host address
    // used as a device address (unified addressing).
    let new_value: f32 = 555.0;
    // SAFETY: the page-locked allocation is at least 4 bytes and 4-byte aligned, and with
    // unified addressing its host address is a valid device address for the current context.
    // cuMemsetD32 is synchronous for pinned host memory; cuCtxSynchronize makes sure of it
    // before the host reads.
    unsafe {
        check_driver!(cuMemsetD32(
            host_page_locked_memory as CUdeviceptr,
            new_value.to_bits(),
            1
        ));
        check_driver!(cuCtxSynchronize());
    }
    // SAFETY: as above: element 0 is in bounds and aligned; the memset has completed.
    let first = unsafe { host_page_locked_memory.read() };
    println!("host_page_locked_memory[0] = {first:.6}");
    ensure!(
        first == 555.0,
        "cuMemsetD32 stored the bits of 555.0f, read back {first}"
    );

    // The device memory: fill its 25 words with a pattern and read them back.
    let pattern: u32 = 0xC0DE_F00D;
    let mut readback = [0u32; 25];
    // SAFETY: the allocation is 100 bytes = 25 words, 256-byte aligned (cuMemAlloc); the copy
    // writes exactly size_of_val(&readback) = 100 bytes into `readback`.
    unsafe {
        check_driver!(cuMemsetD32(device_memory_pointer, pattern, readback.len()));
        check_driver!(cuMemcpyDtoH(
            readback.as_mut_ptr().cast::<c_void>(),
            device_memory_pointer,
            size_of_val(&readback)
        ));
    }
    ensure!(
        readback.iter().all(|&w| w == pattern),
        "every word of the device memory holds {pattern:#x}: {readback:x?}"
    );

    // Free everything (the seed frees only the page-locked memory).
    // SAFETY: each allocation came from this context's cuMemAllocHost / cuMemAlloc, is freed
    // once and not used afterwards; the context is destroyed last, by its only user.
    unsafe {
        check_driver!(cuMemFreeHost(host_page_locked_memory.cast::<c_void>()));
        check_driver!(cuMemFree(device_memory_pointer));
        check_driver!(cuCtxDestroy(context));
    }
    println!("All checks passed.");
}
