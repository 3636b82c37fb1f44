//! Owned-buffer operations: copies and launches that own what the device uses and hand it
//! back at completion.

use std::borrow::Borrow;
use std::future::Future;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use cuda_driver_macros::uses;

use super::signal::{refuse_capture, Wait};
use crate::error::{Error, Result};
use crate::handle::Handle;
use crate::memory::{DeviceBuffer, DeviceMemory, DeviceMemoryMut, PinnedBuffer};
use crate::repr::DeviceRepr;
use crate::stream::Stream;

/// The failure of an [`OwnedFuture`]: the error, and the resources handed back.
///
/// `resources` is `None` only where the crate could not tell that the device is done with
/// them (the completion callback could not be queued, and a synchronisation of the stream
/// failed too): they are leaked then, never freed or handed back under work that may still
/// use them. `?` turns it into an [`Error`] (dropping the resources).
pub struct OwnedError<R> {
    /// What failed: the queueing of the work, the work itself (a sticky error such as
    /// `CUDA_ERROR_LAUNCH_FAILED`), or the queueing of the completion callback.
    pub error: Error,
    /// The resources, the device done with them; `None` when they were leaked.
    pub resources: Option<R>,
}

impl<R> std::fmt::Debug for OwnedError<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnedError")
            .field("error", &self.error)
            .field("resources_handed_back", &self.resources.is_some())
            .finish()
    }
}

impl<R> std::fmt::Display for OwnedError<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.resources.is_some() {
            write!(f, "{}", self.error)
        } else {
            write!(
                f,
                "{} (the operation's buffers were leaked: the device may still use them)",
                self.error
            )
        }
    }
}

impl<R> std::error::Error for OwnedError<R> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl<R> From<OwnedError<R>> for Error {
    fn from(e: OwnedError<R>) -> Error {
        e.error
    }
}

/// Work queued on a stream together with the resources it uses, owned by the future until
/// the work is done, then handed back: the owned-buffer form of an asynchronous operation,
/// in the manner of io_uring's owned-buffer APIs (tokio-uring's `(result, buf)`).
///
/// Its output is `Ok(resources)` or an [`OwnedError`] with the error and (almost always) the
/// resources. The resources are boxed when the future is made and stay at that address,
/// untouched by the host, until the stream callback queued after the work has run:
///
/// * awaited, they come back out of the future;
/// * dropped early, the future gives them to its callback, which hands them to the crate's
///   release thread once the work is done (never freed inside the driver's callback, never
///   before the work is done); the GPU work is not cancelled;
/// * leaked with `mem::forget`, they are never freed (a leak, not a use after free).
///
/// What the future owns is out of reach until it hands it back:
///
/// ```compile_fail,E0382
/// # fn f(stream: &cuda_driver::Stream, dev: cuda_driver::DeviceBuffer<u32>,
/// #      mut host: cuda_driver::PinnedBuffer<u32>) {
/// let fut = stream.copy_to_host_owned(dev, host);
/// host[0] = 1; // error: `host` was moved into the future, which the device writes
/// # drop(fut); }
/// ```
///
/// Made by [`OwnedFuture::new`] (any work: a kernel launch, several copies) and the copies
/// [`OwnedFuture::copy_to_device`] / [`OwnedFuture::copy_to_host`] (or [`Stream::queue_owned`],
/// [`Stream::copy_to_device_owned`], [`Stream::copy_to_host_owned`]). See
/// [the module docs](crate::future) for the reasoning.
#[uses(cuStreamAddCallback)]
#[must_use = "dropping the future does not cancel the work; await it to get the resources back"]
pub struct OwnedFuture<S: Borrow<Stream>, R: Send + 'static> {
    stream: S,
    wait: Wait,
    /// The resources; `None` once handed back (or leaked).
    resources: Option<Box<R>>,
    /// The first error of the queueing, reported at completion.
    error: Option<Error>,
    done: bool,
}

// The resources are boxed and never pinned: the future moves freely.
impl<S: Borrow<Stream>, R: Send + 'static> Unpin for OwnedFuture<S, R> {}

impl<S: Borrow<Stream>, R: Send + 'static> std::fmt::Debug for OwnedFuture<S, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnedFuture")
            .field("stream", &self.stream.borrow().as_raw())
            .field("queued", &self.wait.is_queued())
            .field("done", &self.done)
            .finish()
    }
}

impl<S: Borrow<Stream>, R: Send + 'static> OwnedFuture<S, R> {
    /// Calls `queue(&mut resources, stream)` to queue work on `stream` that uses the
    /// resources, then queues a stream callback after it; the future hands the resources back
    /// when the callback has run, so after the work (and everything queued on the stream
    /// before it).
    ///
    /// Safe on its own: what `queue` may do with the resources through safe code is sound
    /// whatever happens to them afterwards. Its guarantee is what makes `unsafe` calls
    /// inside `queue` sound: the resources stay at their (boxed) address, neither dropped,
    /// moved nor accessed by the host, until every operation queued on `stream` by `queue`
    /// is done. So an `unsafe` asynchronous copy from or into host memory owned by the
    /// resources, or a kernel launch whose arguments are views of them, has its memory kept
    /// valid, whatever becomes of the future. Work that `queue` puts on *another* stream is
    /// not waited for.
    ///
    /// Errors: a stream being captured is refused before `queue` runs (a capture would not
    /// run the work, and the callback cannot be captured); an error returned by `queue`
    /// comes out of the future (with the resources, once the work `queue` did queue is done).
    /// If `queue` panics, the callback is still queued, the resources are kept as if the
    /// future had been dropped, and the panic goes on.
    #[uses(cuStreamAddCallback)]
    #[track_caller]
    pub fn new<F>(stream: S, resources: R, queue: F) -> OwnedFuture<S, R>
    where
        F: FnOnce(&mut R, &Stream) -> Result<()>,
    {
        let mut boxed = Box::new(resources);
        if let Err(e) = refuse_capture(stream.borrow()) {
            return OwnedFuture {
                stream,
                wait: Wait::Failed(None),
                resources: Some(boxed),
                error: Some(e),
                done: false,
            };
        }
        let queued = catch_unwind(AssertUnwindSafe(|| queue(&mut boxed, stream.borrow())));
        let mut wait = Wait::enqueue(stream.borrow());
        let mut resources = Some(boxed);
        let mut error = None;
        if let Wait::Failed(e) = &mut wait {
            // No callback: the work queued may still run, and nothing will say when. Wait
            // for the stream here; when that fails too, leak the resources rather than free
            // or hand back what the device may still use.
            error = e.take();
            if stream.borrow().synchronize().is_err() {
                std::mem::forget(resources.take());
            }
        }
        let mut this = OwnedFuture {
            stream,
            wait,
            resources,
            error,
            done: false,
        };
        match queued {
            Ok(Ok(())) => {}
            Ok(Err(e)) => this.error = Some(e),
            Err(panic) => {
                // Dropping the future hands the resources to the callback.
                drop(this);
                resume_unwind(panic);
            }
        }
        this
    }

    /// The stream the work is queued on.
    pub fn stream(&self) -> &Stream {
        self.stream.borrow()
    }
}

impl<S, T> OwnedFuture<S, (PinnedBuffer<T>, DeviceBuffer<T>)>
where
    S: Borrow<Stream>,
    T: DeviceRepr + Send,
{
    /// Queues a copy of page-locked `src` into `dst` on `stream` and returns both when it is
    /// done. Lengths must agree ([`Error::LengthMismatch`]) and `dst` must be of the
    /// stream's context ([`Error::ContextMismatch`]); such errors come out of the future,
    /// with the buffers.
    #[uses(cuMemcpyHtoDAsync, cuStreamAddCallback)]
    #[track_caller]
    pub fn copy_to_device(stream: S, src: PinnedBuffer<T>, dst: DeviceBuffer<T>) -> Self {
        OwnedFuture::new(stream, (src, dst), |(src, dst), stream| {
            // SAFETY: `src` is owned by the future's boxed resources, which keep it at its
            // address and away from the host until the stream has run the copy (the callback
            // queued after it has run); it is never written meanwhile.
            unsafe { dst.as_view_mut().copy_from_host_async(src, stream) }
        })
    }
}

impl<S, T> OwnedFuture<S, (DeviceBuffer<T>, PinnedBuffer<T>)>
where
    S: Borrow<Stream>,
    T: DeviceRepr + Send,
{
    /// Queues a copy of `src` into page-locked `dst` on `stream` and returns both when it is
    /// done; `dst` holds the data then. Errors as for
    /// [`copy_to_device`](OwnedFuture::copy_to_device).
    #[uses(cuMemcpyDtoHAsync, cuStreamAddCallback)]
    #[track_caller]
    pub fn copy_to_host(stream: S, src: DeviceBuffer<T>, dst: PinnedBuffer<T>) -> Self {
        OwnedFuture::new(stream, (src, dst), |(src, dst), stream| {
            // SAFETY: `dst` is owned by the future's boxed resources, which keep it at its
            // address and neither read nor written by the host until the stream has run the
            // copy (the callback queued after it has run).
            unsafe { src.as_view().copy_to_host_async(dst, stream) }
        })
    }
}

impl<S: Borrow<Stream>, R: Send + 'static> Future for OwnedFuture<S, R> {
    type Output = std::result::Result<R, OwnedError<R>>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        assert!(!this.done, "OwnedFuture polled after it completed");
        let status = match this.wait.poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(status) => status,
        };
        this.done = true;
        let resources = this.resources.take().map(|b| *b);
        Poll::Ready(match (this.error.take().or(status.err()), resources) {
            (None, Some(r)) => Ok(r),
            (Some(error), resources) => Err(OwnedError { error, resources }),
            // Resources are taken only with an error; kept for completeness.
            (None, None) => Err(OwnedError {
                error: Error::InvalidArgument("the resources were leaked".into()),
                resources: None,
            }),
        })
    }
}

impl<S: Borrow<Stream>, R: Send + 'static> Drop for OwnedFuture<S, R> {
    fn drop(&mut self) {
        if let Some(resources) = self.resources.take() {
            // Pending: the callback keeps them and has them released after the work. Without
            // a callback, the constructor has waited for the stream already (or leaked them).
            drop(self.wait.orphan(resources));
        }
    }
}

impl Stream {
    /// Queues work that uses `resources` on this stream and returns a future that hands them
    /// back once it is done: see [`OwnedFuture::new`]. The form for kernel launches:
    ///
    /// ```no_run
    /// # async fn f(stream: &cuda_driver::Stream, add: &cuda_driver::Function,
    /// #            buf: cuda_driver::DeviceBuffer<u32>) -> cuda_driver::Result<()> {
    /// use cuda_driver::prelude::*;
    /// use cuda_driver::LaunchConfig;
    /// let n = buf.len() as i32;
    /// let cfg = LaunchConfig::for_num_elems(buf.len())?;
    /// let buf = stream
    ///     .queue_owned(buf, |buf, stream| {
    ///         // SAFETY: add_u32(unsigned*, unsigned, int) matches the arguments and stays in
    ///         // bounds; the future keeps `buf` alive until the launch is done.
    ///         unsafe { add.launch(stream, &cfg, (buf.as_view_mut(), &1u32, &n)) }
    ///     })
    ///     .await?;
    /// # drop(buf); Ok(()) }
    /// ```
    #[uses(cuLaunchKernel, cuStreamAddCallback)]
    #[track_caller]
    pub fn queue_owned<R, F>(&self, resources: R, queue: F) -> OwnedFuture<&Stream, R>
    where
        R: Send + 'static,
        F: FnOnce(&mut R, &Stream) -> Result<()>,
    {
        OwnedFuture::new(self, resources, queue)
    }

    /// Queues a copy of page-locked `src` into `dst` on this stream; the future hands both
    /// back when it is done. See [`OwnedFuture::copy_to_device`].
    #[uses(cuMemcpyHtoDAsync, cuStreamAddCallback)]
    #[track_caller]
    pub fn copy_to_device_owned<T: DeviceRepr + Send>(
        &self,
        src: PinnedBuffer<T>,
        dst: DeviceBuffer<T>,
    ) -> OwnedFuture<&Stream, (PinnedBuffer<T>, DeviceBuffer<T>)> {
        OwnedFuture::copy_to_device(self, src, dst)
    }

    /// Queues a copy of `src` into page-locked `dst` on this stream; the future hands both
    /// back when it is done. See [`OwnedFuture::copy_to_host`].
    #[uses(cuMemcpyDtoHAsync, cuStreamAddCallback)]
    #[track_caller]
    pub fn copy_to_host_owned<T: DeviceRepr + Send>(
        &self,
        src: DeviceBuffer<T>,
        dst: PinnedBuffer<T>,
    ) -> OwnedFuture<&Stream, (DeviceBuffer<T>, PinnedBuffer<T>)> {
        OwnedFuture::copy_to_host(self, src, dst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owned_error_says_whether_the_buffers_came_back_and_converts_to_the_error() {
        let back = OwnedError {
            error: Error::InvalidArgument("queueing failed".into()),
            resources: Some(vec![1u8, 2, 3]),
        };
        assert!(!back.to_string().contains("leaked"), "{back}");
        assert!(format!("{back:?}").contains("resources_handed_back: true"));
        assert!(std::error::Error::source(&back).is_some());
        let leaked = OwnedError::<Vec<u8>> {
            error: Error::InvalidArgument("no callback".into()),
            resources: None,
        };
        assert!(leaked.to_string().contains("leaked"), "{leaked}");
        let e: Error = leaked.into();
        assert!(matches!(e, Error::InvalidArgument(_)));
    }
}
