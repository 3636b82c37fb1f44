//! simpleLayeredTexture with the safe API: a layered 2D array of generated data, read
//! layer by layer through one texture object by a kernel that writes `-texel + layer`,
//! compared with the same transform on the host.
//!
//! Run: `cargo run -p cuda-driver-examples --example simple_layered_texture`

use std::process::ExitCode;

use cuda_driver::prelude::*;
use cuda_driver::{
    memory::Array, texture::ResourceDesc, texture::TextureDesc, texture::TextureObject,
    types::Array3DFlags, types::StreamFlags, Device, DeviceBuffer, LaunchConfig, Module, Stream,
};
use cuda_driver_examples::{check, run_example, Failure};

const PTX: &str = concat!(include_str!("../../ptx/tex_kernels.ptx"), "\0");

fn main() -> ExitCode {
    run_example(run)
}

fn run() -> Result<(), Failure> {
    let (w, h, layers) = (512usize, 512usize, 5usize);
    let data: Vec<f32> = (0..w * h * layers).map(|i| (i % 997) as f32).collect();
    let ctx = Device::get(0)?.primary_context()?;
    let module = Module::load_data(&ctx, PTX)?;
    let kernel = module.function("tex_layered")?;

    let mut arr = Array::<f32>::new_layered_2d(&ctx, w, h, layers, Array3DFlags::empty())?;
    arr.copy_from_host(&data)?;
    let tex = TextureObject::new(
        &ResourceDesc::array(&arr),
        &TextureDesc::new().normalized_coords(true),
        None,
    )?;
    let mut out = DeviceBuffer::<f32>::zeroed(&ctx, w * h * layers)?;
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;
    let cfg = LaunchConfig::new(((w as u32).div_ceil(8), (h as u32).div_ceil(8)), (8, 8));
    let (wi, hi, li) = (i32::try_from(w)?, i32::try_from(h)?, i32::try_from(layers)?);
    // SAFETY: tex_layered(tex, float*, int w, int h, int layers) writes w*h*layers floats.
    unsafe { kernel.launch(&stream, &cfg, (&tex, out.as_view_mut(), &wi, &hi, &li))? };
    stream.synchronize()?;
    let got = out.to_vec()?;
    for (i, (&g, &d)) in got.iter().zip(&data).enumerate() {
        let layer = (i / (w * h)) as f32;
        check!(
            g == -d + layer,
            "element {i}: device {g}, expected {}",
            -d + layer
        );
    }
    println!("{layers} layers of {w}x{h} transformed through one layered texture, all correct");
    Ok(())
}
