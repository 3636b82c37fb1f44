//! A tensor-map tile copy with the safe API (compute capability 9.0+): a 2D float tensor in
//! device memory, a tiled tensor map encoded over it (its rules checked in Rust first), and
//! a kernel loading tiles with `cp.async.bulk.tensor` (TMA) into shared memory and writing
//! them out; every tile is compared with the host's copy of the data, including one that
//! hangs over the tensor's edge (zero-filled).
//!
//! Run: `cargo run -p cuda-driver-examples --example tensor_map_tile`

use std::process::ExitCode;

use cuda_driver::prelude::*;
use cuda_driver::{
    tensor_map::TensorMapTiled, types::StreamFlags, types::TensorMapDataType, Device, DeviceBuffer,
    LaunchConfig, Module, Stream,
};
use cuda_driver_examples::{check, run_example, Failure};

const PTX: &str = concat!(include_str!("../../ptx/tma_kernels.ptx"), "\0");

fn main() -> ExitCode {
    run_example(run)
}

fn run() -> Result<(), Failure> {
    let (w, h, bw, bh) = (1000usize, 700usize, 64usize, 32usize);
    let device = Device::get(0)?;
    let (major, minor) = device.compute_capability()?;
    check!(
        major >= 9,
        "TMA needs compute capability 9.0, {} has {major}.{minor}",
        device.name()?
    );
    let ctx = device.primary_context()?;
    let host: Vec<f32> = (0..w * h).map(|i| (i % 4093) as f32 + 0.5).collect();
    let tensor = DeviceBuffer::from_slice(&ctx, &host)?;
    // Rows of 1000 floats are 4000 bytes: a multiple of 16, as the strides must be.
    let map = TensorMapTiled::new(
        TensorMapDataType::FLOAT32,
        &[w as u64, h as u64],
        &[(w * 4) as u64],
        &[bw as u32, bh as u32],
    )
    .encode(&tensor.as_view())?;

    let module = Module::load_data(&ctx, PTX)?;
    let load = module.function("tma_load_tile")?;
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;
    let mut tile = DeviceBuffer::<f32>::zeroed(&ctx, bw * bh)?;
    let (bwi, bhi) = (bw as i32, bh as i32);
    for (x0, y0) in [(0i32, 0i32), (128, 64), (960, 680)] {
        // SAFETY: tma_load_tile(const __grid_constant__ CUtensorMap, float*, int x0, int y0,
        // int box_w, int box_h) writes box_w*box_h floats; the map's tensor lives until the
        // stream is synchronised.
        unsafe {
            load.launch(
                &stream,
                &LaunchConfig::new(1, 128),
                (&map, tile.as_view_mut(), &x0, &y0, &bwi, &bhi),
            )?
        };
        stream.synchronize()?;
        let got = tile.to_vec()?;
        for ty in 0..bh {
            for tx in 0..bw {
                let (x, y) = (x0 as usize + tx, y0 as usize + ty);
                let want = if x < w && y < h { host[y * w + x] } else { 0.0 };
                let g = got[ty * bw + tx];
                check!(
                    g == want,
                    "tile at ({x0}, {y0}), element ({tx}, {ty}): {g}, expected {want}"
                );
            }
        }
    }
    println!("3 tiles of {bw}x{bh} loaded with TMA from a {w}x{h} tensor, all correct");
    Ok(())
}
