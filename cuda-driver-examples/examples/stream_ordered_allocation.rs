//! The CUDA sample streamOrderedAllocation with the safe API: vector additions whose buffers
//! are allocated and freed in stream order (cuMemAllocFromPoolAsync, cuMemFreeAsync), once from
//! the device's default pool (release threshold 0: memory goes back to the system at every
//! synchronisation) and once from a custom pool whose release threshold keeps it cached
//! (cuMemPoolSetAttribute(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)). Every result is verified; the
//! timings and the memory each pool holds afterwards are printed.
//!
//! Run: `cargo run -p cuda-driver-examples --example stream_ordered_allocation`

use std::process::ExitCode;
use std::time::Instant;

use cuda_driver::prelude::*;
use cuda_driver::{
    memory::pool::MemPool, memory::pool::MemPoolProps, types::DeviceAttribute, types::StreamFlags,
    Device, Function, LaunchConfig, Module, Stream,
};
use cuda_driver_examples::{check, ptx, run_example, Failure};

const N: usize = 1 << 20;
const ROUNDS: usize = 50;

fn main() -> ExitCode {
    run_example(run)
}

/// `ROUNDS` times: allocate A, B and C from `pool` on `stream`, copy the inputs, add, copy
/// the result back, free, synchronise; every result checked. Returns the seconds taken.
fn rounds(
    pool: &MemPool,
    stream: &Stream,
    vec_add: &Function,
    a: &[f32],
    b: &[f32],
) -> Result<f64, Failure> {
    let cfg = LaunchConfig::for_num_elems(N)?;
    let n = i32::try_from(N)?;
    let mut c = vec![0.0f32; N];
    let start = Instant::now();
    for round in 0..ROUNDS {
        let mut da = pool.alloc_async::<f32>(stream, N)?;
        let mut db = pool.alloc_async::<f32>(stream, N)?;
        let mut dc = pool.alloc_async::<f32>(stream, N)?;
        // SAFETY: the host slices are not touched until the stream is synchronised below.
        unsafe {
            da.copy_from_host_async(a, stream)?;
            db.copy_from_host_async(b, stream)?;
        }
        // SAFETY: vec_add(const float*, const float*, float*, int) matches the arguments; the
        // buffers hold N floats and are used on their own stream.
        unsafe {
            vec_add.launch(
                stream,
                &cfg,
                (da.as_view(), db.as_view(), dc.as_view_mut(), &n),
            )?
        };
        // SAFETY: `c` is read only after the synchronisation below.
        unsafe { dc.copy_to_host_async(&mut c, stream)? };
        drop((da, db, dc)); // cuMemFreeAsync on the stream
        stream.synchronize()?;
        if let Some(i) = (0..N).find(|&i| c[i] != a[i] + b[i]) {
            return Err(format!(
                "round {round}, element {i}: expected {}, found {}",
                a[i] + b[i],
                c[i]
            )
            .into());
        }
    }
    Ok(start.elapsed().as_secs_f64())
}

fn run() -> Result<(), Failure> {
    let dev = Device::get(0)?;
    check!(
        dev.attribute(DeviceAttribute::MEMORY_POOLS_SUPPORTED)? != 0,
        "device 0 does not support memory pools"
    );
    let ctx = dev.primary_context()?;
    let module = Module::load_data(&ctx, ptx::VMM_KERNELS)?;
    let vec_add = module.function("vec_add")?;
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;
    let a: Vec<f32> = (0..N).map(|i| (i % 1000) as f32).collect();
    let b: Vec<f32> = (0..N).map(|i| (i % 333) as f32 * 0.5).collect();

    let default = MemPool::device_default(dev)?;
    let t_default = rounds(&default, &stream, &vec_add, &a, &b)?;
    let default_kept = default.reserved_mem_current()?;

    let custom = MemPool::with_props(dev, &MemPoolProps::device(dev))?;
    custom.set_release_threshold(u64::MAX)?;
    let t_custom = rounds(&custom, &stream, &vec_add, &a, &b)?;
    let custom_kept = custom.reserved_mem_current()?;
    check!(
        custom_kept >= (3 * N * 4) as u64,
        "the custom pool released its memory at synchronisation: {custom_kept} bytes kept"
    );
    check!(
        custom.used_mem_current()? == 0,
        "memory of the custom pool is still in use"
    );
    println!(
        "streamOrderedAllocation: {ROUNDS} rounds of 3 x {N} floats, all correct\n  \
         default pool (release threshold {}): {:.3} ms, {default_kept} bytes kept\n  \
         custom pool (release threshold u64::MAX): {:.3} ms, {custom_kept} bytes kept",
        default.release_threshold()?,
        t_default * 1e3,
        t_custom * 1e3
    );
    custom.trim_to(0)?;
    Ok(())
}
