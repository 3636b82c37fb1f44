//! Copies by unified address (`cuMemcpy`, `cuMemcpyAsync`: the driver infers the kind of each
//! pointer), batched copies (`cuMemcpyBatchAsync`, `cuMemcpy3DBatchAsync`, CUDA 12.8+) and
//! batched prefetch and discard of managed memory (CUDA 13.0), all on views.

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use crate::entry_point::newer;
use crate::error::Result;
use crate::handle::Handle;
use crate::memory::owner::DeviceMemory;
use crate::memory::view::check_stream;
use crate::memory::{DeviceSlice, DeviceSliceMut, MemLocation};
use crate::repr::DeviceRepr;
use crate::stream::Stream;
use crate::types::MemAdvice;

pub(crate) mod pointer;
pub(crate) mod range;

pub use pointer::PointerInfo;
pub use range::{pointer_attributes, PointerAttributes};

impl<T: DeviceRepr> DeviceSliceMut<'_, T> {}

impl Stream {
    /// Prefetches the ranges of managed memory `ranges` to `location` on this stream, as one
    /// batch (CUDA 13.0; a hint). Ranges of memory ordered on a stream must be ordered on this
    /// one ([`Error::StreamMismatch`](crate::Error::StreamMismatch)).
    #[wraps(cuMemPrefetchBatchAsync)]
    #[track_caller]
    pub fn prefetch_batch<T: DeviceRepr>(
        &self,
        ranges: &[DeviceSlice<'_, T>],
        location: MemLocation,
    ) -> Result<()> {
        check_ranges("Stream::prefetch_batch", ranges.iter().copied(), self)?;
        let (mut p, mut n) = ranges_of(ranges.iter().map(|r| (r.as_raw(), r.bytes())));
        if p.is_empty() {
            return Ok(());
        }
        let (mut loc, mut idx) = (location.as_raw(), 0usize);
        let _cur = self.context().enter()?;
        call!(
            // SAFETY: `p`/`n` describe live views; a prefetch changes no contents; one
            // location applies from range 0; flags must be 0.
            unsafe {
                newer::cuMemPrefetchBatchAsync()?(
                    p.as_mut_ptr(),
                    n.as_mut_ptr(),
                    p.len(),
                    &mut loc,
                    &mut idx,
                    1,
                    0,
                    self.as_raw(),
                )
            },
        )
    }

    /// Discards the contents of the managed-memory ranges `ranges` in stream order (CUDA
    /// 13.0): the pages stop being migrated, and reading them afterwards gives unspecified
    /// (but defined, not uninitialised-memory UB for plain data) values until written.
    /// Ranges of memory ordered on a stream must be ordered on this one
    /// ([`Error::StreamMismatch`](crate::Error::StreamMismatch)).
    #[wraps(cuMemDiscardBatchAsync)]
    #[track_caller]
    pub fn discard_batch<T: DeviceRepr>(&self, ranges: &mut [DeviceSliceMut<'_, T>]) -> Result<()> {
        check_ranges(
            "Stream::discard_batch",
            ranges.iter().map(|r| r.as_view()),
            self,
        )?;
        let (mut p, mut n) = ranges_of(ranges.iter().map(|r| (r.as_raw(), r.bytes())));
        if p.is_empty() {
            return Ok(());
        }
        let _cur = self.context().enter()?;
        call!(
            // SAFETY: `p`/`n` describe live views borrowed exclusively; flags must be 0.
            unsafe {
                newer::cuMemDiscardBatchAsync()?(
                    p.as_mut_ptr(),
                    n.as_mut_ptr(),
                    p.len(),
                    0,
                    self.as_raw(),
                )
            },
        )
    }

    /// Discards the contents of `ranges` and prefetches them to `location` in one batch
    /// (CUDA 13.0), as [`discard_batch`](Self::discard_batch) then
    /// [`prefetch_batch`](Self::prefetch_batch), with their stream rule.
    #[wraps(cuMemDiscardAndPrefetchBatchAsync)]
    #[track_caller]
    pub fn discard_and_prefetch_batch<T: DeviceRepr>(
        &self,
        ranges: &mut [DeviceSliceMut<'_, T>],
        location: MemLocation,
    ) -> Result<()> {
        check_ranges(
            "Stream::discard_and_prefetch_batch",
            ranges.iter().map(|r| r.as_view()),
            self,
        )?;
        let (mut p, mut n) = ranges_of(ranges.iter().map(|r| (r.as_raw(), r.bytes())));
        if p.is_empty() {
            return Ok(());
        }
        let (mut loc, mut idx) = (location.as_raw(), 0usize);
        let _cur = self.context().enter()?;
        call!(
            // SAFETY: as in discard_batch and prefetch_batch.
            unsafe {
                newer::cuMemDiscardAndPrefetchBatchAsync()?(
                    p.as_mut_ptr(),
                    n.as_mut_ptr(),
                    p.len(),
                    &mut loc,
                    &mut idx,
                    1,
                    0,
                    self.as_raw(),
                )
            },
        )
    }
}

/// The stream-order rule for each range of a batched prefetch or discard on `stream`.
#[track_caller]
fn check_ranges<'v, T: DeviceRepr + 'v>(
    what: &'static str,
    ranges: impl Iterator<Item = DeviceSlice<'v, T>>,
    stream: &Stream,
) -> Result<()> {
    for r in ranges {
        check_stream(what, r.context(), r.home(), stream)?;
    }
    Ok(())
}

/// The non-empty ranges' addresses and sizes.
fn ranges_of(
    it: impl Iterator<Item = (sys::CUdeviceptr, usize)>,
) -> (Vec<sys::CUdeviceptr>, Vec<usize>) {
    it.filter(|&(_, n)| n > 0).unzip()
}

impl<T: DeviceRepr> crate::memory::managed::ManagedBuffer<'_, T> {
    /// Queues a migration of the whole buffer to `location` (a device, or the host) on the
    /// buffer's stream: a performance hint, which changes no contents.
    ///
    /// Calls `cuMemPrefetchAsync_v2` (CUDA 12.2; [`Error::Unsupported`] on older drivers).
    #[wraps(cuMemPrefetchAsync)]
    #[track_caller]
    pub fn prefetch(&self, location: MemLocation) -> Result<()> {
        if self.as_raw() == 0 {
            return Ok(());
        }
        let _cur = self.home_stream().context().enter()?;
        call!(
            // SAFETY: the buffer is a live managed allocation of `bytes()` bytes; a prefetch
            // moves pages without changing their contents; flags must be 0. Queued on the
            // buffer's stream, so host access waits for it.
            unsafe {
                crate::entry_point::newer::cuMemPrefetchAsync_v2()?(
                    self.as_raw(),
                    self.bytes(),
                    location.as_raw(),
                    0,
                    self.home_stream().as_raw(),
                )
            },
        )
    }
}

impl<T: DeviceRepr> crate::memory::managed::ManagedBuffer<'_, T> {
    /// Advises the driver how the whole buffer will be used (read mostly, preferred location,
    /// accessed by a device); a hint that changes no contents. `location` is the device or
    /// host the advice names (ignored by the read-mostly advice).
    ///
    /// Calls `cuMemAdvise_v2` (CUDA 12.2; [`Error::Unsupported`] on older drivers).
    #[wraps(cuMemAdvise)]
    #[track_caller]
    pub fn advise(&self, advice: MemAdvice, location: MemLocation) -> Result<()> {
        if self.as_raw() == 0 {
            return Ok(());
        }
        let _cur = self.context().enter()?;
        call!(
            // SAFETY: the buffer is a live managed allocation of `bytes()` bytes; advice changes
            // no contents.
            unsafe {
                crate::entry_point::newer::cuMemAdvise_v2()?(
                    self.as_raw(),
                    self.bytes(),
                    advice.as_raw(),
                    location.as_raw(),
                )
            },
        )
    }
}
