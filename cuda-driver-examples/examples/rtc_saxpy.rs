//! SAXPY (`y = a * x + y`) whose kernel is compiled at run time with NVRTC
//! (cuda-driver-rtc): no nvcc and no PTX at build time. `Program::compile_for` compiles for
//! device 0 and its driver (PTX where the driver can JIT-compile it, a CUBIN for the device
//! where NVRTC is newer than the driver), the output loads with `Module::load_data`, and the
//! kernel launches through a typed launcher declared with `typed_kernel!`, whose parameters
//! are checked against the compiled kernel when it is looked up. Every element is verified.
//!
//! NVRTC is found at run time: `CUDA_DRIVER_RTC_NVRTC`, a CUDA toolkit (`CUDA_PATH`,
//! `CUDA_HOME`), the pip wheel `nvidia-cuda-nvrtc` (a `.venv`, `python3`'s site-packages) or the
//! system's loader; without it the program says where it looked.
//!
//! Run: `cargo run -p cuda-driver-examples --example rtc_saxpy`

use std::process::ExitCode;

use cuda_driver::prelude::*;
use cuda_driver::{
    types::StreamFlags, Device, DeviceBuffer, DeviceSlice, DeviceSliceMut, LaunchConfig, Stream,
};
use cuda_driver_examples::{run_example, Failure};
use cuda_driver_rtc::{Nvrtc, Options, Program};

/// The kernel, compiled when the program runs.
const SAXPY: &str = r#"
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

cuda_driver_rtc::typed_kernel! {
    /// `saxpy(float a, const float* x, float* y, int n)`
    struct Saxpy(a: f32, x: DeviceSlice<'_, f32>, y: DeviceSliceMut<'_, f32>, n: i32);
}

fn main() -> ExitCode {
    run_example(run)
}

fn run() -> Result<(), Failure> {
    let n = 1 << 20;
    let a = 2.5f32;
    let h_x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.25).collect();
    let h_y: Vec<f32> = (0..n).map(|i| (i % 77) as f32).collect();

    let device = Device::get(0)?;
    let ctx = device.primary_context()?;

    // NVRTC, found at run time; the program, compiled for this device and driver.
    let nvrtc = Nvrtc::load()?;
    let mut program = Program::new("saxpy.cu", SAXPY)?;
    let compiled = program.compile_for(&device, &Options::new().fast_math(false))?;
    let target = compiled.target().expect("compile_for chose a target");
    println!(
        "NVRTC {} ({}), driver CUDA {}: compiled for {} ({})",
        nvrtc.version(),
        nvrtc.location(),
        target.driver_version(),
        target.arch(),
        if target.arch().is_real() {
            "a CUBIN: machine code, no JIT at load"
        } else {
            "PTX, JIT-compiled by the driver at load"
        }
    );

    // Module::load_data of the PTX or CUBIN; the kernel's parameters checked against Saxpy.
    let module = compiled.load(&ctx)?;
    let saxpy = Saxpy::new(&module, "saxpy")?;

    let d_x = DeviceBuffer::from_slice(&ctx, &h_x)?;
    let mut d_y = DeviceBuffer::from_slice(&ctx, &h_y)?;
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;
    let cfg = LaunchConfig::for_num_elems(n)?;
    // SAFETY: Saxpy is saxpy's signature; the kernel reads x[..n] and writes y[..n], both of n
    // elements; y is read after the stream is synchronised.
    unsafe {
        saxpy.launch(
            &stream,
            &cfg,
            a,
            d_x.as_view(),
            d_y.as_view_mut(),
            i32::try_from(n)?,
        )?
    };
    stream.synchronize()?;

    let y = d_y.to_vec()?;
    if let Some(i) = (0..n).find(|&i| y[i] != a * h_x[i] + h_y[i]) {
        return Err(format!(
            "element {i}: {a} * {} + {} = {}, but the device computed {}",
            h_x[i],
            h_y[i],
            a * h_x[i] + h_y[i],
            y[i]
        )
        .into());
    }
    println!("saxpy on {}: {n} elements, all correct", device.name()?);
    Ok(())
}
