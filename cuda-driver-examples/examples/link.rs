//! Seed 002, appendix L.2 (Module), the second example, with the safe API: two PTX modules
//! compiled as relocatable device code (`ptx/link_main.cu` calls `helper_op`, defined in
//! `ptx/link_helper.cu`) linked by the JIT linker into one cubin, loaded as a module,
//! launched, and every element checked.
//!
//! The linker keeps its option arrays and log buffers alive as long as the link state, and
//! `complete` copies the cubin out of it, so the cubin outlives the linker.
//!
//! Run: `cargo run -p cuda-driver-examples --example link`

use std::process::ExitCode;

use cuda_driver::prelude::*;
use cuda_driver::{
    jit::JitOptions, module::Linker, types::JitInputType, types::StreamFlags, Device, DeviceBuffer,
    Error, LaunchConfig, Module, Stream,
};
use cuda_driver_examples::{ptx, run_example, Failure};

fn main() -> ExitCode {
    run_example(run)
}

fn run() -> Result<(), Failure> {
    let ctx = Device::get(0)?.primary_context()?;

    // link_main alone does not load: helper_op is an unresolved extern.
    match Module::load_data(&ctx, ptx::LINK_MAIN) {
        Err(e @ Error::Jit { .. }) => {
            println!("link_main.ptx alone does not load, as expected:\n{e}\n")
        }
        Err(e) => return Err(e.into()),
        Ok(_) => return Err("link_main.ptx loaded without its helper".into()),
    }

    // cuLinkCreate (wall time, logs, verbose), two cuLinkAddData, cuLinkComplete.
    let mut linker = Linker::new(&ctx, &JitOptions::new().verbose(true))?;
    linker.add_data(JitInputType::PTX, ptx::LINK_MAIN, "link_main.ptx")?;
    linker.add_data(JitInputType::PTX, ptx::LINK_HELPER, "link_helper.ptx")?;
    let cubin = linker.complete()?;
    println!(
        "Link completed in {:.3} ms, {} bytes of cubin. Linker output:\n{}",
        linker.wall_time_ms(),
        cubin.len(),
        linker.info_log()
    );
    drop(linker); // cuLinkDestroy: the cubin is our own copy

    // cuModuleLoadData of the linked image.
    let module = Module::load_data(&ctx, &cubin)?;
    let scale_add = module.function("scale_add")?;

    // out[i] = helper_op(in[i], s) = in[i] * s + 1.
    let n = 10_000usize;
    let s = 0.5f32;
    let input: Vec<f32> = (0..n).map(|i| i as f32 * 0.25 - 100.0).collect();
    let d_in = DeviceBuffer::from_slice(&ctx, &input)?;
    let mut d_out = DeviceBuffer::<f32>::new(&ctx, n)?;
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;
    // SAFETY: scale_add(float* out, const float* in, float s, int n), which the arguments
    // match; both buffers hold n floats; the host reads d_out after synchronising.
    unsafe {
        scale_add.launch(
            &stream,
            &LaunchConfig::for_num_elems(n)?,
            (&mut d_out.as_view_mut(), &d_in.as_view(), &s, &(n as i32)),
        )?
    };
    stream.synchronize()?;
    let out = d_out.to_vec()?;
    if let Some(i) = (0..n).find(|&i| out[i] != input[i] * s + 1.0) {
        return Err(format!(
            "element {i}: expected {}, got {}",
            input[i] * s + 1.0,
            out[i]
        )
        .into());
    }
    println!("scale_add through the linked helper_op: all {n} elements checked.");
    Ok(())
}
