//! Handing this crate's memory and streams to another CUDA library (NCCL, a BLAS, a
//! communication layer): the checks the crate's own stream operations make, for the
//! library's wrapper to make before it queues work on a view.
//!
//! An operation that queues work on a [`Stream`] and reads or writes a view is sound when
//! (see `docs/SOUNDNESS.md`, M1, M2 and M6):
//!
//! * the stream belongs to the view's context ([`Error::ContextMismatch`] otherwise);
//! * memory ordered on a stream (freed in stream order, managed memory, the device view of
//!   page-locked memory) is used on that stream only ([`Error::StreamMismatch`]): work
//!   queued elsewhere could still run when it is freed and reused;
//! * it is not made inside a host function, where CUDA calls are forbidden
//!   ([`Error::InHostCallback`]);
//! * the view is borrowed until the work is queued: memory that is not stream-ordered is
//!   released only after the work of its context (`cuMemFree` waits for it, the other
//!   releases synchronise first), stream-ordered memory is freed on its stream, after the
//!   work queued there.
//!
//! [`DeviceSlice::check_stream`] and [`DeviceSliceMut::check_stream`] make the first two
//! checks exactly as the crate's `*_async` copies do; [`check_not_in_host_function`] the third.

use std::panic::Location;

use crate::error::{Error, Result};
use crate::memory::view::{check_stream, DeviceSlice, DeviceSliceMut};
use crate::release::in_host_fn;
use crate::repr::DeviceRepr;
use crate::stream::Stream;

/// [`Error::InHostCallback`] when the calling thread runs a host function of this crate
/// ([`Stream::launch_host_fn`], a graph's host node), where CUDA calls are forbidden;
/// `Ok` otherwise. No driver call.
#[inline]
#[track_caller]
pub fn check_not_in_host_function() -> Result<()> {
    if in_host_fn() {
        Err(Error::InHostCallback {
            location: Location::caller(),
        })
    } else {
        Ok(())
    }
}

impl<T: DeviceRepr> DeviceSlice<'_, T> {
    /// The stream-order rules of an operation `what` that reads the view on `stream`: the
    /// stream belongs to the view's context ([`Error::ContextMismatch`]), and memory ordered
    /// on a stream is read on that stream only ([`Error::StreamMismatch`]). The checks of the
    /// crate's own `*_async` operations, for a library that queues work on the view (see
    /// [`external`](crate::external)). No driver call.
    #[inline]
    #[track_caller]
    pub fn check_stream(&self, what: &'static str, stream: &Stream) -> Result<()> {
        check_stream(what, self.context(), self.home(), stream)
    }
}

impl<T: DeviceRepr> DeviceSliceMut<'_, T> {
    /// As [`DeviceSlice::check_stream`], for an operation that writes the view.
    #[inline]
    #[track_caller]
    pub fn check_stream(&self, what: &'static str, stream: &Stream) -> Result<()> {
        check_stream(what, self.context(), self.home(), stream)
    }
}
