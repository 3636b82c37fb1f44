//! A templated kernel specialised at run time: a block sum `block_sum<T, BLOCK>` whose block
//! size is chosen from device 0 (its largest power of two of threads per block, up to 512)
//! and instantiated for `float` and `int` with NVRTC (cuda-driver-rtc). The name expressions
//! (`block_sum<float, 512>`) give the lowered (mangled) names the kernels are looked up by;
//! the block size also reaches the source through a header given in memory (`config.h`, which
//! a `static_assert` checks). Both sums are checked against the host's.
//!
//! Run: `cargo run -p cuda-driver-examples --example rtc_template`

use std::process::ExitCode;

use cuda_driver::prelude::*;
use cuda_driver::{
    types::DeviceAttribute, types::StreamFlags, Device, DeviceBuffer, DeviceRepr, Function,
    LaunchConfig, Stream,
};
use cuda_driver_examples::{run_example, Failure};
use cuda_driver_rtc::{Options, Program};

/// Sums each block of `BLOCK` elements of `x` into `partial[block]`.
const BLOCK_SUM: &str = r#"
#include "config.h"

template <typename T, int BLOCK>
__global__ void block_sum(const T* x, T* partial, int n) {
    __shared__ T s[BLOCK];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : T(0);
    __syncthreads();
    for (int stride = BLOCK / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}

static_assert((CHOSEN_BLOCK & (CHOSEN_BLOCK - 1)) == 0, "the block size is a power of two");
"#;

fn main() -> ExitCode {
    run_example(run)
}

fn run() -> Result<(), Failure> {
    let device = Device::get(0)?;
    let ctx = device.primary_context()?;

    // Specialise on the device: the largest power of two of threads per block, up to 512.
    let max = device.attribute(DeviceAttribute::MAX_THREADS_PER_BLOCK)?;
    let block = (1..=512u32)
        .rev()
        .find(|b| b.is_power_of_two() && *b as i32 <= max)
        .ok_or("the device allows no block of threads")?;
    let header = format!("#define CHOSEN_BLOCK {block}\n");
    let float_sum = format!("block_sum<float, {block}>");
    let int_sum = format!("block_sum<int, {block}>");

    let mut program =
        Program::with_headers("block_sum.cu", BLOCK_SUM, &[("config.h", header.as_str())])?;
    program.add_name_expression(&float_sum)?;
    program.add_name_expression(&int_sum)?;
    let compiled = program.compile_for(&device, &Options::new())?;
    let module = compiled.load(&ctx)?;
    println!(
        "block size {block}: {float_sum} is {}, {int_sum} is {}",
        compiled.lowered_name(&float_sum)?,
        compiled.lowered_name(&int_sum)?
    );
    let f_sum = module.function(compiled.lowered_name(&float_sum)?)?;
    let i_sum = module.function(compiled.lowered_name(&int_sum)?)?;

    let n = 1_000_003usize;
    let floats: Vec<f32> = (0..n).map(|i| (i % 16) as f32 * 0.5).collect();
    let ints: Vec<i32> = (0..n).map(|i| (i % 201) as i32 - 100).collect();
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;
    let f_total: f64 = sum_on_device(&ctx, &stream, &f_sum, &floats, block)?
        .iter()
        .map(|&v| f64::from(v))
        .sum();
    let i_total: i64 = sum_on_device(&ctx, &stream, &i_sum, &ints, block)?
        .iter()
        .map(|&v| i64::from(v))
        .sum();

    // Every float is a multiple of 0.5 below 8 and every partial sum stays below 2^24: exact.
    let f_want: f64 = floats.iter().map(|&v| f64::from(v)).sum();
    let i_want: i64 = ints.iter().map(|&v| i64::from(v)).sum();
    if f_total != f_want || i_total != i_want {
        return Err(format!(
            "sums differ: float {f_total} (want {f_want}), int {i_total} (want {i_want})"
        )
        .into());
    }
    println!(
        "block_sum on {}: {n} floats sum to {f_total}, {n} ints to {i_total}, both correct",
        device.name()?
    );
    Ok(())
}

/// Runs `kernel` (a `block_sum<T, block>`) over `host` and returns the partial sums.
fn sum_on_device<T: DeviceRepr + Default + Clone>(
    ctx: &cuda_driver::Context,
    stream: &Stream,
    kernel: &Function,
    host: &[T],
    block: u32,
) -> Result<Vec<T>, Failure> {
    let blocks = host.len().div_ceil(block as usize);
    let x = DeviceBuffer::from_slice(ctx, host)?;
    let mut partial = DeviceBuffer::<T>::new(ctx, blocks)?;
    let cfg = LaunchConfig::new(u32::try_from(blocks)?, block);
    let n = i32::try_from(host.len())?;
    // SAFETY: block_sum<T, block>(const T*, T*, int) with `block` threads per block reads
    // x[..n] and writes partial[..blocks]; partial is read after the stream is synchronised.
    unsafe { kernel.launch(stream, &cfg, (&x.as_view(), &mut partial.as_view_mut(), &n))? };
    stream.synchronize()?;
    Ok(partial.to_vec()?)
}
