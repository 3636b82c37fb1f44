//! Awaiting a stream's work and a graph launch.

use std::borrow::Borrow;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use cuda_driver_macros::uses;

use super::signal::Wait;
use crate::error::Result;
use crate::graph::GraphExec;
use crate::handle::Handle;
use crate::stream::Stream;

/// A future that completes when all work queued on a stream before it was made is done: the
/// awaitable form of [`Stream::synchronize`]. Made by [`Stream::completion`] (which borrows
/// the stream) or [`StreamFuture::new`] (which takes the stream as any
/// [`Borrow<Stream>`]: `&Stream`, `Arc<Stream>`, or the `Stream` itself, destroyed with the
/// future).
///
/// The callback is queued when the future is made, so work queued afterwards is not waited
/// for. Its output is `Ok(())`, or the error of the work (a faulting kernel's sticky error,
/// such as `CUDA_ERROR_LAUNCH_FAILED`), or the error that kept the callback from being queued
/// (a stream being captured is refused with `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`).
/// Dropping the future cancels nothing. See [the module docs](crate::future).
///
/// A future made by [`Stream::completion`] borrows its stream, which cannot be dropped while
/// the future lives (own the stream in the future, or share it through an `Arc`, for that):
///
/// ```compile_fail,E0505
/// # fn f(ctx: &cuda_driver::Context) -> cuda_driver::Result<()> {
/// let stream = cuda_driver::Stream::new(ctx, cuda_driver::types::StreamFlags::NON_BLOCKING)?;
/// let done = stream.completion();
/// drop(stream); // error: `stream` is borrowed by the future
/// drop(done);
/// # Ok(()) }
/// ```
#[uses(cuEventRecord, cuStreamAddCallback, cuEventQuery)]
#[must_use = "a future does nothing unless polled; the stream's work runs either way"]
pub struct StreamFuture<S: Borrow<Stream>> {
    stream: S,
    wait: Wait,
}

// The fields are never pinned: the future moves freely.
impl<S: Borrow<Stream>> Unpin for StreamFuture<S> {}

impl<S: Borrow<Stream>> std::fmt::Debug for StreamFuture<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamFuture")
            .field("stream", &self.stream.borrow().as_raw())
            .field("queued", &self.wait.is_queued())
            .finish()
    }
}

impl<S: Borrow<Stream>> StreamFuture<S> {
    /// Queues a stream callback after the work queued on `stream` so far; the future
    /// completes when it runs.
    #[uses(cuStreamAddCallback)]
    #[track_caller]
    pub fn new(stream: S) -> StreamFuture<S> {
        let wait = Wait::enqueue(stream.borrow());
        StreamFuture { stream, wait }
    }

    /// A future that completes with `error` at its first poll (a launch that failed).
    pub(crate) fn failed(stream: S, error: crate::error::Error) -> StreamFuture<S> {
        StreamFuture {
            stream,
            wait: Wait::failed(error),
        }
    }

    /// The stream awaited.
    pub fn stream(&self) -> &Stream {
        self.stream.borrow()
    }
}

impl<S: Borrow<Stream>> Future for StreamFuture<S> {
    type Output = Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Result<()>> {
        let this = self.get_mut();
        this.wait.poll(cx)
    }
}

impl Stream {
    /// A future that completes when all work queued on this stream so far is done: the
    /// awaitable [`synchronize`](Stream::synchronize), woken by a stream callback, never by a
    /// polling thread. See [`StreamFuture`] and [the module docs](crate::future).
    ///
    /// ```no_run
    /// # async fn f(stream: &cuda_driver::Stream) -> cuda_driver::Result<()> {
    /// // ... queue copies and launches on `stream` ...
    /// stream.completion().await?;
    /// # Ok(()) }
    /// ```
    #[uses(cuStreamAddCallback)]
    #[track_caller]
    pub fn completion(&self) -> StreamFuture<&Stream> {
        StreamFuture::new(self)
    }
}

impl GraphExec {
    /// Launches the graph on `stream` ([`launch`](GraphExec::launch)) and returns a future
    /// that completes when the launch (and the work queued on `stream` before it) is done; a
    /// failed launch comes out of the future. See [`StreamFuture`].
    #[uses(cuGraphLaunch, cuStreamAddCallback)]
    #[track_caller]
    pub fn launch_completion<'s>(&self, stream: &'s Stream) -> StreamFuture<&'s Stream> {
        match self.launch(stream) {
            Ok(()) => StreamFuture::new(stream),
            Err(e) => StreamFuture::failed(stream, e),
        }
    }
}
