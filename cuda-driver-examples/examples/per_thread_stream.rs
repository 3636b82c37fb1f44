//! The per-thread default stream against the legacy default stream.
//!
//! Two host threads each launch the `spin_ns` kernel (`ptx/streams.cu`: one GPU thread
//! busy-waits on the global timer) several times on a default stream, first on their
//! per-thread default streams (`Stream::per_thread`, `CU_STREAM_PER_THREAD`), then on the
//! legacy default stream (`Stream::legacy`, `CU_STREAM_LEGACY`), which every thread of the
//! context shares. Events measure when each thread's work starts and ends on the GPU, and the
//! wall clock how long the host waits. Per-thread default streams do not synchronise with each
//! other, so the two threads' work overlaps; on the legacy stream it runs one kernel after the
//! other. The program checks that the per-thread run overlaps clearly more.
//!
//! (`cuda-driver`'s `per-thread-default-stream` feature makes the *null* stream,
//! `Stream::null`, mean the per-thread one, as `--default-stream per-thread` does in C; the
//! two named streams used here mean the same with or without it.)
//!
//! Run: `cargo run --release -p cuda-driver-examples --example per_thread_stream`

use std::process::ExitCode;
use std::sync::Barrier;
use std::time::Instant;

use cuda_driver::{
    stream::StreamRef, types::EventFlags, Context, Device, Event, Function, LaunchConfig, Module,
    Stream,
};
use cuda_driver_examples::{run_example, Failure};

/// `ptx/streams.cu`, NUL-terminated like the PTX of `cuda_driver_examples::ptx`.
const STREAMS_PTX: &str = concat!(include_str!("../../ptx/streams.ptx"), "\0");

/// How long one kernel spins.
const SPIN_NS: i64 = 20_000_000;
/// Kernels per thread.
const LAUNCHES: usize = 5;
/// Host threads.
const THREADS: usize = 2;

/// Queues `spin_ns(ns)` with one thread on `stream`.
fn launch_spin(spin: &Function, stream: &Stream, ns: i64) -> Result<(), Failure> {
    // SAFETY: spin_ns takes one `long long`, which `ns` is (the launch checks the size); it
    // touches no memory.
    unsafe { spin.launch(stream, &LaunchConfig::new(1, 1), (&ns,))? };
    Ok(())
}

#[derive(Clone, Copy, PartialEq)]
enum DefaultStream {
    PerThread,
    Legacy,
}

/// What one thread measured: its work's start and end on the GPU (ms after a reference event)
/// and on the host.
struct ThreadRun {
    gpu: (f32, f32),
    wall: (Instant, Instant),
}

/// How much the threads' work overlapped: 1 when it all ran at once, 0 when one thread's
/// work ran after the other's. Each thread queued `work_ms` of work; `span_ms` is the time
/// from the first start to the last end.
fn overlap(span_ms: f64, work_ms: f64) -> f64 {
    let threads = THREADS as f64;
    ((threads * work_ms - span_ms) / ((threads - 1.0) * work_ms)).clamp(0.0, 1.0)
}

struct Measured {
    gpu_overlap: f64,
    wall_overlap: f64,
}

fn measure(ctx: &Context, spin: &Function, which: DefaultStream) -> Result<Measured, Failure> {
    // A reference point every thread's events are measured from.
    let t0 = Event::new(ctx, EventFlags::DEFAULT)?;
    t0.record(&Stream::legacy(ctx))?;
    t0.synchronize()?;

    let barrier = Barrier::new(THREADS);
    let runs: Vec<Result<ThreadRun, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                s.spawn(|| {
                    // Make the context current on this thread for its whole run (operations
                    // would otherwise push and pop it around every call), set up, then start
                    // together; wait at the barrier even on failure so no thread hangs.
                    let current = ctx.push();
                    let setup = (|| -> Result<(StreamRef<'_>, Event, Event), Failure> {
                        let stream = match which {
                            DefaultStream::PerThread => Stream::per_thread(ctx),
                            DefaultStream::Legacy => Stream::legacy(ctx),
                        };
                        Ok((
                            stream,
                            Event::new(ctx, EventFlags::DEFAULT)?,
                            Event::new(ctx, EventFlags::DEFAULT)?,
                        ))
                    })();
                    barrier.wait();
                    let run = || -> Result<ThreadRun, Failure> {
                        let _current = current?;
                        let (stream, start, end) = setup?;
                        let wall_start = Instant::now();
                        start.record(&stream)?;
                        for _ in 0..LAUNCHES {
                            launch_spin(spin, &stream, SPIN_NS)?;
                        }
                        end.record(&stream)?;
                        end.synchronize()?;
                        let wall_end = Instant::now();
                        Ok(ThreadRun {
                            gpu: (t0.elapsed_ms(&start)?, t0.elapsed_ms(&end)?),
                            wall: (wall_start, wall_end),
                        })
                    };
                    run().map_err(|e| e.to_string())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a thread panicked".into())))
            .collect()
    });
    let runs: Vec<ThreadRun> = runs.into_iter().collect::<Result<_, _>>()?;

    let work_ms = LAUNCHES as f64 * SPIN_NS as f64 / 1e6;
    let name = match which {
        DefaultStream::PerThread => "per-thread default streams",
        DefaultStream::Legacy => "legacy default stream",
    };
    println!(
        "{name}: {THREADS} threads x {LAUNCHES} kernels x {} ms",
        SPIN_NS / 1_000_000
    );
    for (i, r) in runs.iter().enumerate() {
        println!("  thread {i}: GPU {:8.2} .. {:8.2} ms", r.gpu.0, r.gpu.1);
    }
    let first = runs.iter().map(|r| r.gpu.0).fold(f32::INFINITY, f32::min);
    let last = runs
        .iter()
        .map(|r| r.gpu.1)
        .fold(f32::NEG_INFINITY, f32::max);
    let gpu_span = f64::from(last - first);
    let wall_first = runs.iter().map(|r| r.wall.0).min().expect("threads ran");
    let wall_last = runs.iter().map(|r| r.wall.1).max().expect("threads ran");
    let wall_span = (wall_last - wall_first).as_secs_f64() * 1e3;
    let m = Measured {
        gpu_overlap: overlap(gpu_span, work_ms),
        wall_overlap: overlap(wall_span, work_ms),
    };
    println!(
        "  span {gpu_span:.1} ms on the GPU (events), {wall_span:.1} ms wall clock, for \
         {work_ms:.0} ms of work per thread: overlap {:.0}% (events), {:.0}% (wall clock)",
        100.0 * m.gpu_overlap,
        100.0 * m.wall_overlap
    );
    Ok(m)
}

fn main() -> ExitCode {
    run_example(run)
}

fn run() -> Result<(), Failure> {
    let ctx = Device::get(0)?.primary_context()?;
    let module = Module::load_data(&ctx, STREAMS_PTX)?;
    let spin = module.function("spin_ns")?;
    // Warm up: the first launch pays for loading the kernel onto the device.
    let legacy = Stream::legacy(&ctx);
    launch_spin(&spin, &legacy, 1_000)?;
    legacy.synchronize()?;

    let per_thread = measure(&ctx, &spin, DefaultStream::PerThread)?;
    let legacy = measure(&ctx, &spin, DefaultStream::Legacy)?;

    if per_thread.gpu_overlap < legacy.gpu_overlap + 0.5 {
        return Err(format!(
            "per-thread default streams should overlap clearly more than the legacy one: \
             {:.0}% against {:.0}%",
            100.0 * per_thread.gpu_overlap,
            100.0 * legacy.gpu_overlap
        )
        .into());
    }
    println!(
        "per-thread default streams overlap {:.0}%, the legacy default stream {:.0}%: as expected",
        100.0 * per_thread.gpu_overlap,
        100.0 * legacy.gpu_overlap
    );
    Ok(())
}
