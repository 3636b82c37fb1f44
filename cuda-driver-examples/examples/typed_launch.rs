//! Typed launchers for C++ kernels: the template `affine<T>(Affine p, const T* in, T* out)` of
//! `ptx/typed_kernels.cu`, instantiated for `float` and `double`, launched through the handles
//! cuda-driver-build generated from the mangled PTX names (`AffineF32`, `AffineF64`). The
//! struct `Affine` is passed by value as a `#[repr(C)]` Rust struct whose size and alignment the
//! launcher checks against the PTX parameter. Every element of both results is verified.
//!
//! Run: `cargo run -p cuda-driver-examples --example typed_launch`

use std::process::ExitCode;

use cuda_driver::prelude::*;
use cuda_driver::{types::StreamFlags, Device, DeviceBuffer, DeviceRepr, LaunchConfig, Stream};
use cuda_driver_examples::typed::typed_kernels::Kernels;
use cuda_driver_examples::{check, run_example, Failure};

/// The kernel's `struct Affine { float scale; float offset; int n; int stride; }`.
#[repr(C)]
#[derive(Clone, Copy, DeviceRepr)]
struct Affine {
    scale: f32,
    offset: f32,
    n: i32,
    stride: i32,
}

fn main() -> ExitCode {
    run_example(run)
}

fn run() -> Result<(), Failure> {
    let n = 10_000usize;
    let device = Device::get(0)?;
    let ctx = device.primary_context()?;
    let kernels = Kernels::load(&ctx)?;
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;
    let cfg = LaunchConfig::for_num_elems(n)?;
    let p = Affine {
        scale: 2.0,
        offset: 0.5,
        n: i32::try_from(n)?,
        stride: 1,
    };

    // float: out[i] = in[i] * 2 + 0.5, exact in f32 for these inputs.
    let h32: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let in32 = DeviceBuffer::from_slice(&ctx, &h32)?;
    let mut out32 = DeviceBuffer::<f32>::new(&ctx, n)?;
    // double: the same map over other values.
    let h64: Vec<f64> = (0..n).map(|i| i as f64 * -0.25).collect();
    let in64 = DeviceBuffer::from_slice(&ctx, &h64)?;
    let mut out64 = DeviceBuffer::<f64>::new(&ctx, n)?;

    // SAFETY: the launchers' types are affine<float>'s and affine<double>'s; `p.n` is the
    // element count of every buffer with stride 1, and the kernel skips i >= p.n; the outputs
    // are read only after the stream is synchronised.
    unsafe {
        kernels
            .affine_f32
            .launch(&stream, &cfg, p, in32.as_view(), out32.as_view_mut())?;
        kernels
            .affine_f64
            .launch(&stream, &cfg, p, in64.as_view(), out64.as_view_mut())?;
    }
    stream.synchronize()?;

    let r32 = out32.to_vec()?;
    if let Some(i) = (0..n).find(|&i| r32[i] != h32[i] * 2.0 + 0.5) {
        return Err(format!(
            "affine<float>: element {i} is {}, expected {}",
            r32[i],
            h32[i] * 2.0 + 0.5
        )
        .into());
    }
    let r64 = out64.to_vec()?;
    if let Some(i) = (0..n).find(|&i| r64[i] != h64[i] * 2.0 + 0.5) {
        return Err(format!(
            "affine<double>: element {i} is {}, expected {}",
            r64[i],
            h64[i] * 2.0 + 0.5
        )
        .into());
    }
    check!(
        kernels
            .affine_f32
            .function()
            .params()?
            .is_none_or(|ps| ps.len() == 3),
        "affine<float> does not have 3 parameters"
    );
    println!(
        "affine<float> and affine<double> on {}: {n} elements each, all correct",
        device.name()?
    );
    Ok(())
}
