//! Seed 002, appendix L.3 (Kernel Execution) with the safe API: the kernel parameters packed
//! into one buffer at their device alignments (int 4, float4 16, char 1, float 4, device
//! pointer 8, float2 8) and passed through `CU_LAUNCH_PARAM_BUFFER_POINTER`. The kernel
//! (`ptx/param_buffer.cu`) writes back every value it received, and each is checked.
//!
//! [`ParamBuffer`] does what the seed's `ALIGN_UP` / `ADD_TO_PARAM_BUFFER` macros do, with the
//! alignment taken from the type (this crate's `Float4` is 16-byte aligned, like `float4`),
//! and the launch checks the buffer's layout against the offsets the driver reports.
//!
//! Run: `cargo run -p cuda-driver-examples --example param_buffer`

use std::process::ExitCode;

use cuda_driver::prelude::*;
use cuda_driver::{
    launch::ParamBuffer, types::StreamFlags, vector::Float2, vector::Float4, Device, DeviceBuffer,
    LaunchConfig, Module, Stream,
};
use cuda_driver_examples::{ptx, run_example, Failure};

fn main() -> ExitCode {
    run_example(run)
}

fn run() -> Result<(), Failure> {
    let ctx = Device::get(0)?.primary_context()?;
    let module = Module::load_data(&ctx, ptx::PARAM_BUFFER)?;
    let kernel = module.function("param_buffer")?;

    // The seed's values: int i, float4 f4, char c, float f, a device pointer, float2 f2.
    let i = 123_456_789i32;
    let f4 = Float4::new(1.5, -2.25, 3.0, 4.75);
    let c = -42i8;
    let f = 0.625f32;
    let f2 = Float2::new(-8.5, 9.25);
    let mut out = DeviceBuffer::<f32>::new(&ctx, 11)?;
    let out_address = out.as_raw();

    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;
    {
        let mut out_view = out.as_view_mut();
        let mut params = ParamBuffer::new();
        params
            .push(i)?
            .push(f4)?
            .push(c)?
            .push(f)?
            .push_arg(&mut out_view)?
            .push(f2)?;
        let offsets: Vec<usize> = params.params().map(|p| p.offset).collect();
        println!("parameter offsets {offsets:?}, {} bytes", params.len());
        if offsets != [0, 16, 32, 36, 40, 48] || params.len() != 56 {
            return Err("the buffer does not follow the device's alignment rules".into());
        }
        // SAFETY: the buffer holds param_buffer's six parameters at the device's offsets
        // (checked against the driver's list too); out holds the 11 floats the single thread
        // writes; the host reads out after synchronising.
        unsafe { kernel.launch_packed(&stream, &LaunchConfig::new(1, 1), &params)? };
    }
    stream.synchronize()?;

    // The kernel wrote back each parameter as 32-bit words.
    let words: Vec<u32> = out.to_vec()?.iter().map(|x| x.to_bits()).collect();
    let expected: [(&str, u32); 11] = [
        ("i", i as u32),
        ("f4.x", f4.x.to_bits()),
        ("f4.y", f4.y.to_bits()),
        ("f4.z", f4.z.to_bits()),
        ("f4.w", f4.w.to_bits()),
        ("c", c as i32 as u32),
        ("f", f.to_bits()),
        ("f2.x", f2.x.to_bits()),
        ("f2.y", f2.y.to_bits()),
        ("devPtr (low)", out_address as u32),
        ("devPtr (high)", (out_address >> 32) as u32),
    ];
    for (k, (name, want)) in expected.iter().enumerate() {
        if words[k] != *want {
            return Err(format!(
                "{name}: the kernel received {:#x}, expected {want:#x}",
                words[k]
            )
            .into());
        }
    }
    println!("Every parameter of the packed buffer reached the kernel.");
    Ok(())
}
