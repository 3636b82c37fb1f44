//! Seed 002 (CUDA C++ Programming Guide, appendix "Driver API": the host code of
//! vectorAddDrv) with the safe API: the VecAdd kernel loaded from PTX into device 0's primary
//! context, two input vectors copied to the device, a launch through the typed launcher that
//! cuda-driver-build generated from the PTX (`VecAdd::launch` takes
//! `(DeviceSlice<f32>, DeviceSlice<f32>, DeviceSliceMut<f32>, i32)`: a wrong argument does not
//! compile, and the launch still checks the arguments against the loaded kernel), and every
//! element of the result verified.
//!
//! Run: `cargo run -p cuda-driver-examples --example vector_add`

use std::process::ExitCode;

use cuda_driver::prelude::*;
use cuda_driver::{types::StreamFlags, Device, DeviceBuffer, LaunchConfig, Stream};
use cuda_driver_examples::typed::vector_add::Kernels;
use cuda_driver_examples::{run_example, Failure};

fn main() -> ExitCode {
    run_example(run)
}

fn run() -> Result<(), Failure> {
    let n = 50_000usize;

    // Input vectors in host memory, with values whose sums are exact in f32.
    let h_a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let h_b: Vec<f32> = (0..n).map(|i| (n - i) as f32 * 0.25).collect();

    // cuInit, cuDeviceGet and the device's primary context (the one the runtime uses).
    let device = Device::get(0)?;
    let ctx = device.primary_context()?;

    // cuModuleLoadData of the embedded PTX (JIT-compiled for this device), cuModuleGetFunction.
    let kernels = Kernels::load(&ctx)?;

    // cuMemAlloc + cuMemcpyHtoD; d_c is written by the kernel.
    let d_a = DeviceBuffer::from_slice(&ctx, &h_a)?;
    let d_b = DeviceBuffer::from_slice(&ctx, &h_b)?;
    let mut d_c = DeviceBuffer::<f32>::new(&ctx, n)?;

    // 256 threads per block, (N + 255) / 256 blocks.
    let cfg = LaunchConfig::for_num_elems(n)?;
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;
    let n_param = i32::try_from(n)?;
    // SAFETY: the launcher's types are VecAdd's (const float* A, const float* B, float* C,
    // int N); A, B and C hold N floats and the kernel skips i >= N; the host touches d_c only
    // after the stream is synchronised.
    unsafe {
        kernels.vec_add.launch(
            &stream,
            &cfg,
            d_a.as_view(),
            d_b.as_view(),
            d_c.as_view_mut(),
            n_param,
        )?
    };
    stream.synchronize()?;

    // cuMemcpyDtoH, and every element checked.
    let h_c = d_c.to_vec()?;
    if let Some(i) = (0..n).find(|&i| h_c[i] != h_a[i] + h_b[i]) {
        return Err(format!(
            "element {i}: {} + {} = {}, but the device computed {}",
            h_a[i],
            h_b[i],
            h_a[i] + h_b[i],
            h_c[i]
        )
        .into());
    }
    println!(
        "VecAdd on {}: {n} elements in {} blocks of {} threads, all correct",
        device.name()?,
        cfg.grid.x,
        cfg.block.x
    );
    Ok(())
}
