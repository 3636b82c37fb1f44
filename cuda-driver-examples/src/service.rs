//! The workload of the `async_service` example and of the benchmark's async-service row: a
//! batch of requests, each copying a payload to the device, running a kernel on it and copying
//! the result back, served either by async tasks on a multi-threaded tokio runtime that await
//! [`cuda_driver::future`] (no thread blocks on the GPU), or by one OS thread per request that
//! blocks on [`Stream::synchronize`].
//!
//! Each request has its own stream, page-locked payload and device buffer (a [`Slot`], made
//! once and reused from batch to batch, as a service pools them), so both ways do the same
//! driver work: `cuMemcpyHtoDAsync`, `cuLaunchKernel` of `add_u32` (`data[i] += request`),
//! `cuMemcpyDtoHAsync` and the wait, then every element is checked on the host.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cuda_driver::prelude::*;
use cuda_driver::types::{PinnedFlags, StreamFlags};
use cuda_driver::{
    Context, DeviceBuffer, Error, Function, LaunchConfig, Module, PinnedBuffer, Stream,
};

/// One request's resources: its stream, its page-locked payload and its device buffer.
pub struct Slot {
    stream: Stream,
    host: PinnedBuffer<u32>,
    dev: DeviceBuffer<u32>,
}

/// How a batch was served: its wall-clock time and how many requests came back wrong.
#[derive(Clone, Copy, Debug)]
pub struct Batch {
    /// From the first request handed out to the last result checked.
    pub elapsed: Duration,
    /// Requests whose result was wrong (0 on a sound run).
    pub wrong: usize,
}

/// The service: the kernel and one [`Slot`] per request of a batch.
pub struct Service {
    add: Arc<Function>,
    slots: Vec<Slot>,
}

/// The payload of request `i`: `j ^ i` for element `j`.
fn fill(host: &mut [u32], i: u32) {
    for (j, x) in host.iter_mut().enumerate() {
        *x = j as u32 ^ i;
    }
}

/// Whether `host` holds request `i`'s answer: its payload plus `i`.
fn correct(host: &[u32], i: u32) -> bool {
    host.iter()
        .enumerate()
        .all(|(j, &x)| x == (j as u32 ^ i).wrapping_add(i))
}

/// Queues request `i`'s kernel on `stream`.
fn launch(
    add: &Function,
    stream: &Stream,
    dev: &mut DeviceBuffer<u32>,
    i: u32,
) -> cuda_driver::Result<()> {
    let n =
        i32::try_from(dev.len()).map_err(|_| Error::InvalidArgument("too many elements".into()))?;
    let cfg = LaunchConfig::for_num_elems(dev.len())?;
    // SAFETY: add_u32(unsigned* data, unsigned v, int n) takes these three arguments and
    // writes data[j] for j < n, the buffer's length.
    unsafe { add.launch(stream, &cfg, (dev.as_view_mut(), &i, &n)) }
}

impl Service {
    /// Loads the kernel and makes `requests` slots of `elements` words in `ctx`.
    pub fn new(ctx: &Context, requests: usize, elements: usize) -> cuda_driver::Result<Service> {
        let module = Module::load_data(ctx, crate::ptx::TEST_KERNELS)?;
        let add = Arc::new(module.function("add_u32")?);
        let slots = (0..requests)
            .map(|_| {
                Ok(Slot {
                    stream: Stream::new(ctx, StreamFlags::NON_BLOCKING)?,
                    host: PinnedBuffer::zeroed(ctx, elements, PinnedFlags::empty())?,
                    dev: DeviceBuffer::new(ctx, elements)?,
                })
            })
            .collect::<cuda_driver::Result<Vec<Slot>>>()?;
        Ok(Service { add, slots })
    }

    /// Requests per batch.
    pub fn requests(&self) -> usize {
        self.slots.len()
    }

    /// Serves one batch with one async task per request on `rt`: each task awaits its copy
    /// in, its kernel and its copy out through owned-buffer futures.
    pub fn serve_async(&mut self, rt: &tokio::runtime::Runtime) -> cuda_driver::Result<Batch> {
        let slots = std::mem::take(&mut self.slots);
        let start = Instant::now();
        let tasks: Vec<_> = slots
            .into_iter()
            .enumerate()
            .map(|(i, slot)| rt.spawn(request_async(self.add.clone(), i as u32, slot)))
            .collect();
        let mut wrong = 0;
        let mut first_error = None;
        for task in tasks {
            match rt.block_on(task) {
                Ok(Ok((slot, ok))) => {
                    wrong += usize::from(!ok);
                    self.slots.push(slot);
                }
                Ok(Err(e)) => {
                    first_error.get_or_insert(e);
                }
                Err(join) => {
                    first_error.get_or_insert(Error::InvalidArgument(format!(
                        "a request task failed: {join}"
                    )));
                }
            }
        }
        let elapsed = start.elapsed();
        match first_error {
            Some(e) => Err(e),
            None => Ok(Batch { elapsed, wrong }),
        }
    }

    /// Serves one batch with one OS thread per request, each blocking on
    /// `Stream::synchronize` after queueing its copy in, kernel and copy out.
    pub fn serve_threads(&mut self) -> cuda_driver::Result<Batch> {
        let start = Instant::now();
        let add = &*self.add;
        let results: Vec<cuda_driver::Result<bool>> = std::thread::scope(|scope| {
            let threads: Vec<_> = self
                .slots
                .iter_mut()
                .enumerate()
                .map(|(i, slot)| scope.spawn(move || request_blocking(add, i as u32, slot)))
                .collect();
            threads
                .into_iter()
                .map(|t| {
                    t.join().unwrap_or_else(|_| {
                        Err(Error::InvalidArgument("a request thread panicked".into()))
                    })
                })
                .collect()
        });
        let elapsed = start.elapsed();
        let mut wrong = 0;
        for r in results {
            wrong += usize::from(!r?);
        }
        Ok(Batch { elapsed, wrong })
    }
}

/// One request, awaited: the buffers move into each operation and come back at completion.
async fn request_async(
    add: Arc<Function>,
    i: u32,
    slot: Slot,
) -> cuda_driver::Result<(Slot, bool)> {
    let Slot {
        stream,
        mut host,
        dev,
    } = slot;
    fill(&mut host, i);
    let (host, dev) = stream.copy_to_device_owned(host, dev).await?;
    let dev = stream
        .queue_owned(dev, |dev, s| launch(&add, s, dev, i))
        .await?;
    let (dev, host) = stream.copy_to_host_owned(dev, host).await?;
    let ok = correct(&host, i);
    Ok((Slot { stream, host, dev }, ok))
}

/// One request, on its own thread, blocking on the stream.
fn request_blocking(add: &Function, i: u32, slot: &mut Slot) -> cuda_driver::Result<bool> {
    fill(&mut slot.host, i);
    // SAFETY: `slot.host` is neither read nor written by the host until the stream is
    // synchronised below, after both copies.
    unsafe { slot.dev.copy_from_host_async(&slot.host, &slot.stream)? };
    launch(add, &slot.stream, &mut slot.dev, i)?;
    // SAFETY: as above.
    unsafe { slot.dev.copy_to_host_async(&mut slot.host, &slot.stream)? };
    slot.stream.synchronize()?;
    Ok(correct(&slot.host, i))
}
