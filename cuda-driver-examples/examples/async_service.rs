//! An async service (issue 29): many concurrent requests, each copying its payload to the
//! device, running a kernel on it and copying the result back, served by async tasks on a
//! multi-threaded tokio runtime that await `cuda_driver::future` (the driver wakes them from a
//! stream callback; no thread blocks on the GPU or polls it), against one OS thread per
//! request blocking on `Stream::synchronize`. Prints the throughput of both and checks every
//! result.
//!
//! Each request owns a stream, a page-locked payload and a device buffer; the async side moves
//! the buffers into each operation (`copy_to_device_owned`, `queue_owned` for the launch,
//! `copy_to_host_owned`) and gets them back at completion, so a request dropped half-way
//! could never free memory the device still uses (see the `cuda_driver::future` docs).
//!
//! Run: `cargo run --release -p cuda-driver-examples --example async_service -- [REQUESTS] [ELEMENTS] [ROUNDS]`
//! (defaults 128 requests of 16384 words, 3 rounds).

use std::process::ExitCode;

use cuda_driver::context::wait_for_deferred_releases;
use cuda_driver::Device;
use cuda_driver_examples::service::{Batch, Service};
use cuda_driver_examples::{run_example, Failure};

fn main() -> ExitCode {
    run_example(run)
}

/// The `n`th command-line argument as a positive number, or `default`.
fn arg(n: usize, default: usize) -> Result<usize, Failure> {
    match std::env::args().nth(n) {
        None => Ok(default),
        Some(a) => a
            .parse()
            .ok()
            .filter(|&v: &usize| v > 0)
            .ok_or_else(|| format!("argument {n} ({a:?}) is not a positive number").into()),
    }
}

fn run() -> Result<(), Failure> {
    let requests = arg(1, 128)?;
    let elements = arg(2, 16 * 1024)?;
    let rounds = arg(3, 3)?;

    let device = Device::get(0)?;
    let ctx = device.primary_context()?;
    let workers = std::thread::available_parallelism().map_or(4, |n| n.get().min(8));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .build()?;
    let mut service = Service::new(&ctx, requests, elements)?;

    println!(
        "{requests} concurrent requests of {} KiB each (copy in, add_u32, copy out) on {}",
        elements * 4 / 1024,
        device.name()?
    );
    let rate = |b: &Batch| requests as f64 / b.elapsed.as_secs_f64();
    let (mut best_async, mut best_threads) = (0f64, 0f64);
    // One warm-up batch each, then `rounds` batches of each, alternating.
    service.serve_async(&rt)?;
    service.serve_threads()?;
    for round in 0..rounds {
        let a = service.serve_async(&rt)?;
        let t = service.serve_threads()?;
        if a.wrong + t.wrong > 0 {
            return Err(format!(
                "round {round}: {} async and {} threaded requests came back wrong",
                a.wrong, t.wrong
            )
            .into());
        }
        best_async = best_async.max(rate(&a));
        best_threads = best_threads.max(rate(&t));
        println!(
            "round {round}: async tasks {:>10.0} requests/s ({:?}), thread per request {:>10.0} requests/s ({:?})",
            rate(&a),
            a.elapsed,
            rate(&t),
            t.elapsed
        );
    }
    println!(
        "best of {rounds}: async tasks ({workers} worker threads) {best_async:.0} requests/s, \
         one thread per request {best_threads:.0} requests/s ({:.2}x)",
        best_async / best_threads
    );
    // Everything released before the process exits (a clean run under compute-sanitizer's
    // leak check).
    drop(service);
    drop(rt);
    wait_for_deferred_releases()?;
    Ok(())
}
