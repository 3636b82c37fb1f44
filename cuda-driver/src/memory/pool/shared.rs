//! Stream-ordered memory read by several streams at once: [`AsyncDeviceBuffer::read_on_streams`].

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

use cuda_driver_macros::uses;

use super::{check_orderable, order_after, AsyncDeviceBuffer};
use crate::error::{Error, Result};
use crate::handle::Handle;
use crate::memory::view::stream_identity;
use crate::memory::view::DeviceSlice;
use crate::repr::DeviceRepr;
use crate::stream::Stream;

impl<'s, T: DeviceRepr> AsyncDeviceBuffer<'s, T> {
    /// Lends the buffer, read-only, to several streams of its context at once for the span of
    /// `f`, which gets one view per stream of `streams` (in that order), each ordered on its
    /// stream: work that reads the buffer may be queued on all of them concurrently (as the
    /// `graphMemoryNodes` sample reads one allocation with a kernel on one stream and a copy on
    /// another).
    ///
    /// Ordering, so that the free stays after every reader (the [stream-order
    /// rule](Self#the-stream-order-rule) for several streams):
    ///
    /// * before `f` runs, every stream of `streams` other than the buffer's waits for an event
    ///   recorded on the buffer's stream: the readers see everything queued there before
    ///   (the allocation, the writes);
    /// * after `f` returned (or panicked), the buffer's stream waits for an event recorded on
    ///   each of those streams: everything queued on the buffer's stream from then on (writes,
    ///   [`move_to_stream`](Self::move_to_stream), the free) runs after all the reads that
    ///   `f` queued.
    ///
    /// The buffer is borrowed exclusively meanwhile, so nothing writes it, moves it or frees
    /// it while the readers' views live, and the views cannot leave `f` (its lifetime is the
    /// call's). A stream the buffer's own stream is listed again, or twice, is ordered once.
    ///
    /// Refused before anything is queued: a stream of another context
    /// ([`Error::ContextMismatch`]), the per-thread default stream ([`Error::InvalidStream`]).
    /// When the final ordering fails (a reader stream being captured meanwhile, a sticky
    /// error), the crate waits for that stream instead; when that fails too, the buffer is
    /// poisoned: it becomes empty and its memory is leaked, never freed under a pending read,
    /// and the error is returned.
    ///
    /// ```no_run
    /// use cuda_driver::prelude::*;
    /// use cuda_driver::types::StreamFlags;
    /// use cuda_driver::{Device, DeviceBuffer, Stream};
    ///
    /// let ctx = Device::get(0)?.primary_context()?;
    /// let s1 = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;
    /// let s2 = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;
    /// let mut a = DeviceBuffer::<u32>::new_async(&s1, 1024)?;
    /// a.memset_async(7u32, &s1)?;
    /// let mut b = DeviceBuffer::<u32>::zeroed(&ctx, 1024)?;
    /// let mut c = DeviceBuffer::<u32>::zeroed(&ctx, 1024)?;
    /// a.read_on_streams(&[&s1, &s2], |views| {
    ///     b.copy_from_device_async(&views[0], &s1)?; // on stream 1
    ///     c.copy_from_device_async(&views[1], &s2) // at the same time, on stream 2
    /// })??;
    /// drop(a); // freed on s1, after both copies
    /// # Ok::<(), cuda_driver::Error>(())
    /// ```
    ///
    /// The views cannot leave the call:
    ///
    /// ```compile_fail,E0521
    /// # fn f(a: &mut cuda_driver::memory::pool::AsyncDeviceBuffer<'_, u32>, s2: &cuda_driver::Stream)
    /// # -> cuda_driver::Result<()> {
    /// let mut kept = None;
    /// a.read_on_streams(&[s2], |views| kept = Some(views[0]))?;
    /// # drop(kept); Ok(()) }
    /// ```
    #[uses(cuEventCreate, cuEventRecord, cuStreamWaitEvent)]
    #[track_caller]
    pub fn read_on_streams<R>(
        &mut self,
        streams: &[&Stream],
        f: impl FnOnce(&[DeviceSlice<'_, T>]) -> R,
    ) -> Result<R> {
        const WHAT: &str = "AsyncDeviceBuffer::read_on_streams";
        let home = self.stream;
        for s in streams {
            check_orderable(WHAT, s)?;
            if s.context().as_raw() != home.context().as_raw() {
                return Err(Error::ContextMismatch {
                    what: WHAT,
                    expected: home.context().as_raw() as usize,
                    found: s.context().as_raw() as usize,
                });
            }
        }
        // The distinct streams other than the buffer's, by identity.
        let mut readers: Vec<&Stream> = Vec::new();
        for s in streams {
            let id = stream_identity(s.as_raw());
            if id != self.home() && !readers.iter().any(|r| stream_identity(r.as_raw()) == id) {
                readers.push(s);
            }
        }
        // Readers after everything queued on the buffer's stream so far. A failure leaves
        // nothing to undo: no reader has queued work on the buffer yet.
        for r in &readers {
            order_after(WHAT, home, r)?;
        }
        let views: Vec<DeviceSlice<'_, T>> = streams
            .iter()
            .map(|s| {
                // SAFETY: the allocation is live and exclusively borrowed by this call (no
                // mutable view, no free, no move while `f` runs); each view is ordered on its
                // stream `s`, a live stream of the buffer's context (checked) that `streams`
                // borrows for the call, which waits for the buffer's stream above; the views
                // do not outlive `f`, and every stream they may be used on is joined into the
                // buffer's stream below before anything else can be queued on the buffer
                // (its free included), or the buffer is leaked.
                unsafe {
                    DeviceSlice::from_parts(
                        self.ptr,
                        self.len,
                        home.context(),
                        stream_identity(s.as_raw()),
                    )
                }
            })
            .collect();
        let r = catch_unwind(AssertUnwindSafe(|| f(&views)));
        drop(views);
        let mut failed = None;
        for reader in &readers {
            if let Err(e) = order_after(WHAT, reader, home) {
                if reader.synchronize().is_err() {
                    // Neither ordered nor waited for: the reads may still run, so the memory
                    // is never freed (nor written) again.
                    self.ptr = 0;
                    self.len = 0;
                }
                failed.get_or_insert(e);
            }
        }
        match (r, failed) {
            (Err(panic), _) => resume_unwind(panic),
            (Ok(_), Some(e)) => Err(e),
            (Ok(r), None) => Ok(r),
        }
    }
}
