//! The benchmark's rows of `cuda_driver::future` (issue 29), stated rather than judged (no
//! target):
//!
//! * the latency of a wait: a launch of `empty()` followed by a blocking
//!   `cuStreamSynchronize` (raw) against the same launch followed by awaiting
//!   `Stream::completion()` on a minimal executor (a thread-park waker; ours), p50 and p99 of
//!   the iterations of each sample, in microseconds: what an await adds over a blocking
//!   synchronise;
//! * the throughput of the `async_service` example's workload (`cuda_driver_examples::service`):
//!   one OS thread per request blocking on `Stream::synchronize` (raw column) against async
//!   tasks on a multi-threaded tokio runtime awaiting owned-buffer futures (ours), in
//!   requests per second.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll, Wake, Waker};
use std::thread::Thread;

use cuda_driver::context::wait_for_deferred_releases;
use cuda_driver_examples::bench::quantile;
use cuda_driver_examples::service::Service;

use super::*;

/// What the notes say about these rows.
pub const NOTE: &str = "cuda_driver::future (stated rows, no target): 'stream wait' = host \
    time of (raw cuLaunchKernel of empty(); wait) per iteration, the wait being \
    cuStreamSynchronize (raw) or awaiting Stream::completion() on a one-thread block_on with a \
    thread-park waker (ours: cuEventCreate + cuEventRecord of a marker, cuStreamAddCallback, \
    the driver's callback thread wakes the waiting thread, then cuEventQuery of the marker and \
    cuEventDestroy); p50 and p99 over the iterations of a sample, the \
    row's value the median over the rounds. 'async service' = requests per second of the \
    async_service example's batch (each request: copy in, add_u32, copy out, every element \
    checked, its own stream and buffers): raw column = one OS thread per request blocking on \
    Stream::synchronize, ours = one tokio task per request awaiting owned-buffer futures on a \
    multi-threaded runtime.";

/// Wakes a parked thread.
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// The minimal executor: polls `f` on this thread, parking between polls.
fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = TaskContext::from_waker(&waker);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}

/// The rows.
pub fn rows(r: &mut Runner, cfg: &Config, ctx: &Context, stream: &Stream) -> Res<()> {
    let module = Module::load_data(ctx, ptx::BENCH)?;
    let empty = module.function("empty")?;
    let (f, st) = (empty.as_raw(), stream.as_raw());
    let iters = if cfg.quick { 200 } else { 2_000 };
    for (q, label) in [(0.5, "p50"), (0.99, "p99")] {
        let row = Row::new(
            format!("stream wait, sync (raw) vs await (ours), {label}"),
            "us/wait",
            false,
            None,
        );
        r.measure(row, TWO, |who, _| {
            let mut lat = Vec::with_capacity(iters);
            for _ in 0..iters {
                let start = Instant::now();
                // SAFETY: `empty` takes no parameters; `f` and `st` are live in the current
                // context (the device's primary context, current throughout).
                unsafe { raw_launch(f, 1, 1, st, null_mut(), null_mut())? };
                match who {
                    Who::Raw => {
                        // SAFETY: `st` is a live stream of the current context.
                        unsafe { raw!(cuStreamSynchronize(st)) };
                    }
                    _ => block_on(stream.completion())?,
                }
                lat.push(start.elapsed().as_secs_f64() * 1e6);
            }
            quantile(&lat, q).ok_or_else(|| Failure::Wrong("no latency samples".into()))
        })?;
    }

    let (requests, elements) = if cfg.quick {
        (64, 16 * 1024)
    } else {
        (256, 64 * 1024)
    };
    let name = format!(
        "async service, thread per request (raw) vs async tasks (ours), {requests} requests of {}",
        size_name(elements * 4)
    );
    // The service's streams and buffers are made only when its row is measured.
    if r.only
        .as_ref()
        .is_some_and(|o| !format!("{name} [requests/s]").contains(o.as_str()))
    {
        return Ok(());
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(std::thread::available_parallelism().map_or(4, |n| n.get().min(8)))
        .build()
        .map_err(|e| Failure::Usage(format!("cannot start the tokio runtime: {e}")))?;
    let mut service = Service::new(ctx, requests, elements)?;
    let row = Row::new(name, "requests/s", true, None);
    r.measure(row, TWO, |who, _| {
        let batch = match who {
            Who::Raw => service.serve_threads()?,
            _ => service.serve_async(&rt)?,
        };
        check!(
            batch.wrong == 0,
            "{} requests of the async service came back wrong",
            batch.wrong
        );
        Ok(service.requests() as f64 / batch.elapsed.as_secs_f64())
    })?;
    drop(service);
    drop(rt);
    wait_for_deferred_releases()?;
    // The tokio workers and the request threads made nothing current here; the raw rows
    // after these still find the primary context current on this thread.
    ctx.set_current()?;
    Ok(())
}
