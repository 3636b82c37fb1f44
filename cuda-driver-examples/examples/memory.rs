//! Seed 003 ("CUDA篇-Cuda Driver API", 1.4) with the safe API: the driver's version, the
//! device's name, device memory ([`DeviceBuffer`]), page-locked host memory
//! ([`PinnedBuffer`]) written and read on the host, and the seed's `cuMemsetD32` of 555.0f
//! into the page-locked memory through its device address, without `unsafe`.
//!
//! Run: `cargo run -p cuda-driver-examples --example memory`

use std::process::ExitCode;

use cuda_driver::prelude::*;
use cuda_driver::{
    types::ContextFlags, types::PinnedFlags, Context, Device, DeviceBuffer, PinnedBuffer, Stream,
};
use cuda_driver_examples::{check, run_example, Failure};

fn main() -> ExitCode {
    run_example(run)
}

fn run() -> Result<(), Failure> {
    // cuInit(0): every call of the crate does it once; asking explicitly reports "no driver"
    // or "no device" plainly.
    cuda_driver::init()?;
    let (major, minor) = cuda_driver::driver_version()?;
    println!("Driver version is CUDA {major}.{minor}");
    let device = Device::get(0)?;
    println!("Device 0 name is {}", device.name()?);

    // A context on device 0, like the seed's cuCtxCreate.
    let context = Context::new(device, ContextFlags::SCHED_AUTO)?;
    println!("context = {:p}", context.as_raw());

    // 100 bytes of device memory: 25 words.
    let mut device_memory = DeviceBuffer::<u32>::new(&context, 25)?;
    println!("device_memory_pointer = {:#x}", device_memory.as_raw());
    check!(device_memory.bytes() == 100, "25 words are 100 bytes");

    // 100 bytes of page-locked host memory, seen as floats, zero-initialised.
    let mut host_page_locked_memory =
        PinnedBuffer::<f32>::zeroed(&context, 25, PinnedFlags::empty())?;
    println!(
        "host_page_locked_memory = {:p}",
        host_page_locked_memory.as_ptr()
    );

    // Page-locked memory is host memory: written and read like any other.
    host_page_locked_memory[0] = 123.0;
    println!(
        "host_page_locked_memory[0] = {:.6}",
        host_page_locked_memory[0]
    );
    check!(
        host_page_locked_memory[0] == 123.0,
        "the host reads back the 123 it wrote"
    );

    // The seed's cuMemsetD32((CUdeviceptr)host_page_locked_memory, *(int*)&new_value, 1):
    // the bits of 555.0f, written by the device through the memory's device address, on the
    // default (legacy) stream, which is all the call waits for before the host reads again.
    let new_value: f32 = 555.0;
    let default_stream = Stream::legacy(&context);
    host_page_locked_memory.with_device_view_mut(&default_stream, |mut device_view| {
        device_view.memset(new_value.to_bits())
    })?;
    println!(
        "host_page_locked_memory[0] = {:.6}",
        host_page_locked_memory[0]
    );
    check!(
        host_page_locked_memory.iter().all(|&x| x == 555.0),
        "cuMemsetD32 stored the bits of 555.0f: {:?}",
        &host_page_locked_memory[..]
    );

    // The device memory: a pattern, read back into the page-locked memory (a DMA copy).
    let pattern: u32 = 0xC0DE_F00D;
    device_memory.memset(pattern)?;
    let readback = device_memory.to_vec()?;
    check!(
        readback.iter().all(|&w| w == pattern),
        "every word of the device memory holds {pattern:#x}: {readback:x?}"
    );
    let mut floats = DeviceBuffer::from_slice(&context, &host_page_locked_memory)?;
    floats.slice_mut(..1)?.copy_from_host(&[1.5])?;
    floats.copy_to_host(&mut host_page_locked_memory)?;
    check!(
        host_page_locked_memory[0] == 1.5
            && host_page_locked_memory[1..].iter().all(|&x| x == 555.0),
        "the round trip through device memory: {:?}",
        &host_page_locked_memory[..]
    );

    // Everything is freed when dropped: the buffers first, then the context they keep alive.
    println!("All checks passed.");
    Ok(())
}
