//! Seed 002, appendix L.2 (Module) with the safe API: PTX that does not compile, and the JIT
//! compiler's error log that explains why, carried by the error itself
//! ([`Error::Jit`]); then good PTX, loaded with verbose logging, whose info log is printed and
//! whose kernel is run and checked.
//!
//! The logs are always captured (16 KiB buffers by default): there is no buffer to declare and
//! no option to remember.
//!
//! Run: `cargo run -p cuda-driver-examples --example jit_error_log`

use std::process::ExitCode;

use cuda_driver::prelude::*;
use cuda_driver::{
    jit::JitOptions, types::StreamFlags, Device, DeviceBuffer, Error, LaunchConfig, Module, Stream,
};
use cuda_driver_examples::{ptx, run_example, Failure};

/// PTX with a valid header and an instruction that does not exist.
const BROKEN_PTX: &str = "\
.version 7.0
.target sm_75
.address_size 64

.visible .entry broken(.param .u64 out)
{
    .reg .u32 %r<2>;
    frobnicate.u32 %r1, 42;
    ret;
}
";

fn main() -> ExitCode {
    run_example(run)
}

fn run() -> Result<(), Failure> {
    let ctx = Device::get(0)?.primary_context()?;

    // cuModuleLoadDataEx with CU_JIT_ERROR_LOG_BUFFER: the log comes back in the error.
    match Module::load_data_with(&ctx, BROKEN_PTX, &JitOptions::new().target_from_context()) {
        Err(Error::Jit {
            call, code, log, ..
        }) => {
            if log.is_empty() {
                return Err("the JIT failed without an error log".into());
            }
            println!("{call} failed with {code}. Link error:\n{log}");
        }
        Err(e) => return Err(e.into()),
        Ok(_) => return Err("the broken PTX loaded".into()),
    }

    // The same context loads good PTX; the verbose info log reports each kernel's resources.
    let module = Module::load_data_with(&ctx, ptx::VECTOR_ADD, &JitOptions::new().verbose(true))?;
    println!(
        "Good PTX loaded in {:.3} ms. JIT info log:\n{}",
        module.wall_time_ms().unwrap_or(0.0),
        module.info_log()
    );
    let vec_add = module.function("VecAdd")?;

    // And runs it: C = A + B on a few elements.
    let n = 1000usize;
    let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..n).map(|i| 2.0 * i as f32 + 1.0).collect();
    let (da, db) = (
        DeviceBuffer::from_slice(&ctx, &a)?,
        DeviceBuffer::from_slice(&ctx, &b)?,
    );
    let mut dc = DeviceBuffer::<f32>::new(&ctx, n)?;
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;
    // SAFETY: VecAdd(const float* A, const float* B, float* C, int N) with three buffers of
    // N floats; the host reads dc after the stream is synchronised.
    unsafe {
        vec_add.launch(
            &stream,
            &LaunchConfig::for_num_elems(n)?,
            (
                &da.as_view(),
                &db.as_view(),
                &mut dc.as_view_mut(),
                &(n as i32),
            ),
        )?
    };
    stream.synchronize()?;
    let c = dc.to_vec()?;
    if let Some(i) = (0..n).find(|&i| c[i] != a[i] + b[i]) {
        return Err(format!("element {i}: expected {}, got {}", a[i] + b[i], c[i]).into());
    }
    println!("VecAdd from the good module: all {n} elements checked.");
    Ok(())
}
