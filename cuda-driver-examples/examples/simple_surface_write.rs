//! simpleSurfaceWrite with the safe API: a kernel scales every element of an array in place
//! through a surface object; the result is read back through a texture object (and a copy)
//! and compared with the host.
//!
//! Run: `cargo run -p cuda-driver-examples --example simple_surface_write`

use std::process::ExitCode;

use cuda_driver::prelude::*;
use cuda_driver::{
    memory::Array, surface::SurfaceObject, texture::ResourceDesc, texture::TextureDesc,
    texture::TextureObject, types::Array3DFlags, types::StreamFlags, Device, DeviceBuffer,
    LaunchConfig, Module, Stream,
};
use cuda_driver_examples::{check, run_example, Failure};

const PTX: &str = concat!(include_str!("../../ptx/tex_kernels.ptx"), "\0");

fn main() -> ExitCode {
    run_example(run)
}

fn run() -> Result<(), Failure> {
    let (w, h, factor) = (300usize, 200usize, 2.5f32);
    let data: Vec<f32> = (0..w * h).map(|i| (i % 1000) as f32 * 0.25).collect();
    let ctx = Device::get(0)?.primary_context()?;
    let module = Module::load_data(&ctx, PTX)?;
    let scale = module.function("surf_scale_2d")?;
    let fetch = module.function("tex_fetch_2d")?;
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;
    let cfg = LaunchConfig::new(((w as u32).div_ceil(16), (h as u32).div_ceil(16)), (16, 16));
    let (wi, hi) = (i32::try_from(w)?, i32::try_from(h)?);

    let mut arr = Array::<f32>::new_2d(&ctx, w, h, Array3DFlags::SURFACE_LDST)?;
    arr.copy_from_host(&data)?;
    let surf = SurfaceObject::new(&arr)?;
    // SAFETY: surf_scale_2d(surf, int, int, float) reads and writes the w x h array.
    unsafe { scale.launch(&stream, &cfg, (&surf, &wi, &hi, &factor))? };

    let tex = TextureObject::new(&ResourceDesc::array(&arr), &TextureDesc::new(), None)?;
    let mut out = DeviceBuffer::<f32>::zeroed(&ctx, w * h)?;
    // SAFETY: tex_fetch_2d(tex, float*, int, int) writes w*h floats; ordered after the
    // surface writes on the same stream.
    unsafe { fetch.launch(&stream, &cfg, (&tex, out.as_view_mut(), &wi, &hi))? };
    stream.synchronize()?;
    let got = out.to_vec()?;
    for (i, (&g, &d)) in got.iter().zip(&data).enumerate() {
        check!(
            g == d * factor,
            "element {i}: device {g}, expected {}",
            d * factor
        );
    }
    println!("{w}x{h} array scaled by {factor} through a surface, read back through a texture, all correct");
    Ok(())
}
