//! Seed 000 (context-independent loading, CUDA 12.0) with the safe API: a library loaded
//! once, before any context exists; its kernel launched in the primary context of every
//! device through one context-independent handle; the library's `__managed__` variables read
//! on the host; and the library unloaded once at the end.
//!
//! Run: `cargo run -p cuda-driver-examples --example library`

use std::process::ExitCode;

use cuda_driver::prelude::*;
use cuda_driver::{types::StreamFlags, Device, DeviceBuffer, LaunchConfig, Library, Stream};
use cuda_driver_examples::{ptx, run_example, Failure};

fn main() -> ExitCode {
    run_example(run)
}

fn run() -> Result<(), Failure> {
    // libraryInitialize(): cuLibraryLoadData and cuLibraryGetKernel, no context needed.
    cuda_driver::init()?;
    let library = Library::load_data(ptx::LIBRARY)?;
    let kernel = library.kernel("myKernel")?;
    let devices = Device::all()?;
    println!("{} device(s)", devices.len());
    if devices.is_empty() {
        return Err("no CUDA device".into());
    }

    // libraryFunc() on each device's primary context: the same Kernel launches in the
    // context of the stream it is given.
    let n = 1024usize;
    let mut contexts = Vec::new();
    for device in &devices {
        let ctx = device.primary_context()?;
        let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;
        let mut out = DeviceBuffer::<i32>::new(&ctx, n)?;
        // SAFETY: myKernel(int* out, int n) writes out[0..n) and, with at least 256 threads,
        // increments the library's managed variables; out holds n ints; the host reads out
        // after synchronising.
        unsafe {
            kernel.launch(
                &stream,
                &LaunchConfig::for_num_elems(n)?,
                (&mut out.as_view_mut(), &(n as i32)),
            )?
        };
        stream.synchronize()?;
        let got = out.to_vec()?;
        if let Some(i) = (0..n).find(|&i| got[i] != i as i32) {
            return Err(format!("device {}: out[{i}] = {}", device.as_raw(), got[i]).into());
        }
        println!(
            "device {} ({}): myKernel ran in its primary context {:p}",
            device.as_raw(),
            device.name()?,
            ctx.as_raw()
        );
        contexts.push(ctx);
    }

    // One managed allocation across every context: launch_count counts all launches.
    let launches = devices.len() as i32;
    let launch_count = library.managed::<i32>("launch_count")?;
    let managed_data = library.managed::<f32>("managed_data")?;
    let counted = launch_count.view(&contexts[0]).to_vec()?[0];
    println!("launch_count = {counted} (read on the host through cuLibraryGetManaged)");
    if counted != launches {
        return Err(format!("launch_count is {counted}, expected {launches}").into());
    }
    for ctx in &contexts {
        ctx.synchronize()?;
    }
    // SAFETY: every context that ran the library's kernel is synchronised and nothing is
    // launched while the slice is in use; managed memory is host-accessible on the devices
    // this runs on.
    let data = unsafe { managed_data.as_host_slice() };
    if let Some(i) = data.iter().position(|&x| x != launches as f32) {
        return Err(format!("managed_data[{i}] = {}, expected {launches}", data[i]).into());
    }
    println!("managed_data: all 256 elements are {launches}.0, read in place on the host");

    // libraryDeinitialize(): the library unloads when its last holder goes.
    drop((launch_count, managed_data, kernel));
    drop(library);
    println!("Library unloaded. All checks passed.");
    Ok(())
}
