//! NVIDIA's threadMigration sample with the safe API: contexts created on the main thread
//! (floating: `Context::new` leaves the caller's stack alone), handed to worker threads,
//! each worker running VecAdd in the context it was given and verifying the result; then the
//! same contexts used again by other threads, since a context is not tied to the thread that
//! created it. No raw calls.
//!
//! Run: `cargo run -p cuda-driver-examples --example thread_migration`

use std::process::ExitCode;

use cuda_driver::prelude::*;
use cuda_driver::{
    types::ContextFlags, types::StreamFlags, Context, Device, DeviceBuffer, LaunchConfig, Stream,
};
use cuda_driver_examples::typed::vector_add::Kernels;
use cuda_driver_examples::{check, run_example, Failure};

/// Contexts per device, and rounds of workers over them.
const CONTEXTS_PER_DEVICE: usize = 2;
const ROUNDS: usize = 2;
/// Spreads the workers' data seeds over rounds.
const SEEDS_PER_ROUND: usize = 64;

fn main() -> ExitCode {
    run_example(run)
}

/// One worker's job: VecAdd of `n` elements in `ctx`, verified on the host.
fn worker(ctx: &Context, seed: usize) -> Result<(), Failure> {
    let n = 10_000 + seed;
    let a: Vec<f32> = (0..n).map(|i| (i + seed) as f32).collect();
    let b: Vec<f32> = (0..n).map(|i| (2 * i) as f32).collect();
    let kernels = Kernels::load(ctx)?;
    let da = DeviceBuffer::from_slice(ctx, &a)?;
    let db = DeviceBuffer::from_slice(ctx, &b)?;
    let mut dc = DeviceBuffer::<f32>::new(ctx, n)?;
    let stream = Stream::new(ctx, StreamFlags::NON_BLOCKING)?;
    // SAFETY: VecAdd(const float* A, const float* B, float* C, int N) with three buffers of N
    // floats; the kernel skips i >= N; dc is read after the stream is synchronised.
    unsafe {
        kernels.vec_add.launch(
            &stream,
            &LaunchConfig::for_num_elems(n)?,
            da.as_view(),
            db.as_view(),
            dc.as_view_mut(),
            i32::try_from(n)?,
        )?
    };
    stream.synchronize()?;
    let c = dc.to_vec()?;
    check!(
        c.iter().enumerate().all(|(i, &x)| x == a[i] + b[i]),
        "worker {seed}: VecAdd computed a wrong sum"
    );
    Ok(())
}

fn run() -> Result<(), Failure> {
    let devices = Device::all()?;
    let mut contexts = Vec::new();
    for &device in &devices {
        for _ in 0..CONTEXTS_PER_DEVICE {
            contexts.push(Context::new(device, ContextFlags::SCHED_AUTO)?);
        }
    }
    check!(
        Context::current_raw()?.is_none(),
        "creating contexts left the main thread's stack empty"
    );
    println!(
        "{} contexts on {} device(s), migrated to worker threads for {ROUNDS} rounds",
        contexts.len(),
        devices.len()
    );
    for round in 0..ROUNDS {
        // A new thread per context and round: each context runs on threads other than the one
        // that created it, and other than the one that used it in the previous round.
        let results: Vec<Result<(), String>> = std::thread::scope(|s| {
            let handles: Vec<_> = contexts
                .iter()
                .enumerate()
                .map(|(i, ctx)| {
                    s.spawn(move || {
                        worker(ctx, round * SEEDS_PER_ROUND + i).map_err(|e| e.to_string())
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err("a worker panicked".into())))
                .collect()
        });
        for (i, r) in results.into_iter().enumerate() {
            if let Err(e) = r {
                return Err(format!("round {round}, context {i}: {e}").into());
            }
        }
        println!("round {round}: every worker verified its result");
    }
    println!("All checks passed.");
    Ok(())
}
