//! simpleTextureDrv with the safe API: an image (generated, no PGM file) in a 2D array, read
//! through a texture object with normalised coordinates, linear filtering and wrap
//! addressing by a kernel that rotates it; the result is compared with a host reference
//! computing the same bilinear interpolation.
//!
//! Run: `cargo run -p cuda-driver-examples --example simple_texture_drv`

use std::process::ExitCode;

use cuda_driver::prelude::*;
use cuda_driver::{
    memory::Array, texture::ResourceDesc, texture::TextureDesc, texture::TextureObject,
    types::AddressMode, types::Array3DFlags, types::FilterMode, types::StreamFlags, Device,
    DeviceBuffer, LaunchConfig, Module, Stream,
};
use cuda_driver_examples::{check, run_example, Failure};

const PTX: &str = concat!(include_str!("../../ptx/tex_kernels.ptx"), "\0");

fn main() -> ExitCode {
    run_example(run)
}

/// The image: smooth waves in [0, 1].
fn image(w: usize, h: usize) -> Vec<f32> {
    (0..w * h)
        .map(|i| {
            let (x, y) = ((i % w) as f32, (i / w) as f32);
            0.5 + 0.25 * (x * 0.11).sin() + 0.25 * (y * 0.07).cos()
        })
        .collect()
}

/// tex2D with normalised coordinates, linear filtering and wrap, on the host.
fn sample(img: &[f32], w: usize, h: usize, u: f32, v: f32) -> f32 {
    let (x, y) = (u * w as f32 - 0.5, v * h as f32 - 0.5);
    let (x0, y0) = (x.floor(), y.floor());
    let (a, b) = (x - x0, y - y0);
    let at = |xi: f32, yi: f32| {
        let xi = (xi as i64).rem_euclid(w as i64) as usize;
        let yi = (yi as i64).rem_euclid(h as i64) as usize;
        img[yi * w + xi]
    };
    (1.0 - a) * (1.0 - b) * at(x0, y0)
        + a * (1.0 - b) * at(x0 + 1.0, y0)
        + (1.0 - a) * b * at(x0, y0 + 1.0)
        + a * b * at(x0 + 1.0, y0 + 1.0)
}

fn run() -> Result<(), Failure> {
    let (w, h, theta) = (512usize, 384usize, 0.5f32);
    let img = image(w, h);
    let ctx = Device::get(0)?.primary_context()?;
    let module = Module::load_data(&ctx, PTX)?;
    let rotate = module.function("tex_rotate")?;

    let mut arr = Array::<f32>::new_2d(&ctx, w, h, Array3DFlags::empty())?;
    arr.copy_from_host(&img)?;
    let tex = TextureObject::new(
        &ResourceDesc::array(&arr),
        &TextureDesc::new()
            .address_mode(AddressMode::WRAP)
            .filter(FilterMode::LINEAR)
            .normalized_coords(true),
        None,
    )?;
    let mut out = DeviceBuffer::<f32>::zeroed(&ctx, w * h)?;
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;
    let cfg = LaunchConfig::new(((w as u32).div_ceil(16), (h as u32).div_ceil(16)), (16, 16));
    let (wi, hi) = (i32::try_from(w)?, i32::try_from(h)?);
    // SAFETY: tex_rotate(cudaTextureObject_t, float*, int, int, float) writes w*h floats.
    unsafe { rotate.launch(&stream, &cfg, (&tex, out.as_view_mut(), &wi, &hi, &theta))? };
    stream.synchronize()?;
    let got = out.to_vec()?;

    // The texture unit's weights have 8 fractional bits: allow 1/128 of the value range.
    let mut worst = 0.0f32;
    for y in 0..h {
        for x in 0..w {
            let u = x as f32 / w as f32 - 0.5;
            let v = y as f32 / h as f32 - 0.5;
            let tu = u * theta.cos() - v * theta.sin() + 0.5;
            let tv = v * theta.cos() + u * theta.sin() + 0.5;
            let want = sample(&img, w, h, tu, tv);
            let err = (got[y * w + x] - want).abs();
            worst = worst.max(err);
            check!(
                err < 1.0 / 128.0,
                "pixel ({x}, {y}): device {}, host {want}",
                got[y * w + x]
            );
        }
    }
    println!("rotated a {w}x{h} image by {theta} rad through a texture; largest difference from the host reference {worst:.2e}");
    Ok(())
}
