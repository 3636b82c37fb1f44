//! Async Rust: await GPU work from any executor, soundly, without a polling thread.
//!
//! The futures here are plain [`std::future::Future`]s: no runtime is assumed (tokio, a
//! hand-written `block_on`, anything that polls and wakes works), and no thread spins or
//! sleeps in a loop. Each one queues a **stream callback** (`cuStreamAddCallback`) after the
//! work it waits for; the driver runs the callback on its own thread when that work is done,
//! and the callback wakes the task.
//!
//! | future | made by | completes when |
//! |---|---|---|
//! | [`StreamFuture`] | [`Stream::completion`], [`StreamFuture::new`] | all work queued on the stream before it is done |
//! | [`EventFuture`] | [`Event::completion`] | the event completes |
//! | [`StreamFuture`] | [`GraphExec::launch_completion`] | the graph launch is done |
//! | [`OwnedFuture`] | [`Stream::copy_to_device_owned`], [`Stream::copy_to_host_owned`], [`Stream::queue_owned`] (kernel launches, any work) | the work is done; hands back the buffers it owned |
//!
//! ```no_run
//! use cuda_driver::types::{PinnedFlags, StreamFlags};
//! use cuda_driver::{Device, DeviceBuffer, PinnedBuffer, Stream};
//!
//! async fn round_trip(stream: &Stream, data: &[f32]) -> cuda_driver::Result<Vec<f32>> {
//!     let ctx = stream.context();
//!     let host = PinnedBuffer::from_slice(ctx, data, PinnedFlags::empty())?;
//!     let dev = DeviceBuffer::<f32>::new(ctx, data.len())?;
//!     // The future owns both buffers until the copy is done, then hands them back.
//!     let (host, dev) = stream.copy_to_device_owned(host, dev).await?;
//!     // ... launch kernels on `dev` with `stream.queue_owned(dev, ..)` ...
//!     let (_dev, host) = stream.copy_to_host_owned(dev, host).await?;
//!     Ok(host.to_vec())
//! }
//! ```
//!
//! # How a completion is observed
//!
//! * **The callback makes no CUDA call.** It records the status the driver passed, takes the
//!   task's waker and wakes it. It runs inside the crate's host-function scope (see
//!   [`Stream::launch_host_fn`]): a CUDA call there would be refused, a CUDA object dropped
//!   there is released on the crate's release thread, and a panic is caught. A waker that
//!   panics is caught and counted in [`waker_panic_count`]; nothing unwinds into the driver.
//! * **Why `cuStreamAddCallback` and not `cuLaunchHostFunc`.** cuda.h says of
//!   [`cuLaunchHostFunc`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EXEC.html):
//!   "in contrast to cuStreamAddCallback, the function will not be called in the event of an
//!   error in the CUDA context". A future woken by a host function would never complete after
//!   a kernel faults. Of
//!   [`cuStreamAddCallback`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html)
//!   it says: "For each cuStreamAddCallback call, the callback will be executed exactly once
//!   ... In the event of a device error, all subsequently executed callbacks will receive an
//!   appropriate CUresult". So the callback is the waking mechanism and needs no fallback
//!   thread; the GPU tests `future::a_kernel_that_traps_while_awaited_is_a_clear_error` and
//!   `future::host_functions_and_stream_callbacks_after_a_trap` check both sentences on the
//!   driver at hand.
//! * **Errors come out of the await.** The callback's status is the work's status (a faulting
//!   kernel's `CUDA_ERROR_LAUNCH_FAILED`, `CUDA_ERROR_ILLEGAL_ADDRESS`, ...). The poll that
//!   observes the completion also asks the driver, on the executor's thread: `cuEventQuery` of
//!   a marker event recorded just before the callback (with its context entered for the call
//!   and the caller's context stack left as it was), and a sticky error it reports comes out
//!   as the crate's [`Error`](crate::Error). The marker, not `cuStreamQuery`: it is complete
//!   once the callback has started, so the query never answers `CUDA_ERROR_NOT_READY` for
//!   work queued after the future or for the callback still returning.
//! * **Made eagerly.** The callback is queued when the future is made, so a future waits for
//!   the work queued before that, not for work queued later. A stream being captured is
//!   refused (`CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`): a capture runs nothing, and a callback
//!   cannot be captured.
//!
//! # Owned buffers: why dropping or leaking a future is sound
//!
//! A future can be dropped at any await point (a `select!`, a timeout, a cancelled task) and
//! leaked with `mem::forget`; its destructor cannot block until the GPU is done (it runs on
//! the executor), and a leaked one runs no destructor at all. An API that lent the device a
//! borrowed buffer (`&mut [T]`) for the length of an await would hand the buffer back to its
//! owner the moment the future is dropped or forgotten, while the device still writes it.
//! This is the problem io_uring's Rust bindings meet with the kernel's DMA, and the answer is
//! theirs (tokio-uring's `let (res, buf) = file.read_at(buf, pos).await`): **the operation
//! owns what the device uses, and hands it back at completion.**
//!
//! * [`OwnedFuture`] takes its buffers by value ([`DeviceBuffer`](crate::DeviceBuffer),
//!   page-locked [`PinnedBuffer`](crate::PinnedBuffer), or any `Send + 'static` value for
//!   [`Stream::queue_owned`]) and boxes them: their address is fixed and no one else can reach
//!   them until the future gives them back, which it does only after its callback has run,
//!   that is after the work.
//! * **Dropped early**, the future does not cancel the GPU work (CUDA cannot cancel queued
//!   work): it hands its buffers to its callback, which gives them to the crate's release
//!   thread once the work is done ([`wait_for_deferred_releases`](crate::context::wait_for_deferred_releases)
//!   waits for them). They are not freed inside the driver's callback: freeing device memory
//!   is a CUDA call.
//! * **Leaked** with `mem::forget`, the future never frees its buffers: a leak, not a use
//!   after free. The callback still runs and frees only its own small shared state.
//! * **The stream dropped** while a future is pending: a future that borrows the stream
//!   cannot outlive it; one that owns it ([`StreamFuture::new`] with a `Stream` or an
//!   `Arc<Stream>`) destroys it with itself, which cuda.h allows with work pending (the work
//!   and the callback still run); a forgotten future holds no stream handle in its callback.
//! * **The callback never runs** (the process exits first): the buffers are leaked.
//! * **No callback could be queued** after the work was: the future synchronises the stream
//!   before handing the buffers back, and leaks them if that fails too
//!   ([`OwnedError::resources`] is then `None`). This is also what happens if another thread
//!   makes the stream join a capture between the future's check and its callback (by waiting
//!   on an event of a capturing stream): the callback and the synchronisation are refused in
//!   a capture, so the buffers the captured work names are leaked, never freed under it.
//!
//! Safe code can only queue safe operations, which are sound whatever happens to the memory
//! afterwards; the `unsafe` ones (asynchronous copies into host memory, kernel launches) are
//! made sound by the guarantee above, as [`OwnedFuture::copy_to_device`] and
//! [`OwnedFuture::copy_to_host`] do. See `docs/SOUNDNESS.md` (M12).
//!
//! [`Stream::completion`]: crate::Stream::completion
//! [`Stream::launch_host_fn`]: crate::Stream::launch_host_fn
//! [`Stream::copy_to_device_owned`]: crate::Stream::copy_to_device_owned
//! [`Stream::copy_to_host_owned`]: crate::Stream::copy_to_host_owned
//! [`Stream::queue_owned`]: crate::Stream::queue_owned
//! [`Event::completion`]: crate::Event::completion
//! [`GraphExec::launch_completion`]: crate::graph::GraphExec::launch_completion

mod event;
mod owned;
mod signal;
mod stream;

pub use event::EventFuture;
pub use owned::{OwnedError, OwnedFuture};
pub use signal::waker_panic_count;
pub use stream::StreamFuture;
