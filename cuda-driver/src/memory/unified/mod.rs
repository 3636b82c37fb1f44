//! Copies by unified address (`cuMemcpy`, `cuMemcpyAsync`: the driver infers the kind of each
//! pointer), batched copies (`cuMemcpyBatchAsync`, `cuMemcpy3DBatchAsync`, CUDA 12.8+) and
//! batched prefetch and discard of managed memory (CUDA 13.0), all on views.

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use crate::entry_point::newer;
use crate::error::Result;
use crate::memory::view::{blocking, check_len, check_stream, common_home};
use crate::memory::{DeviceSlice, DeviceSliceMut, MemLocation};
use crate::repr::DeviceRepr;
use crate::stream::Stream;

pub(crate) mod pointer;
pub(crate) mod range;

pub use pointer::PointerInfo;
pub use range::{pointer_attributes, PointerAttributes};

impl<T: DeviceRepr> DeviceSliceMut<'_, T> {
    /// Copies `src` into the view by unified address: the driver tells device, managed and
    /// mapped host memory apart, and either side may belong to another context. The lengths
    /// must agree.
    ///
    /// Calls `cuMemcpy` (for stream-ordered memory, `cuMemcpyAsync` on its stream and
    /// `cuStreamSynchronize`).
    #[wraps(cuMemcpy, cuMemcpyAsync)]
    #[track_caller]
    pub fn copy_from_unified(&mut self, src: &DeviceSlice<'_, T>) -> Result<()> {
        check_len("copy_from_unified", self.len(), src.len())?;
        let home = common_home(
            "copy_from_unified",
            self.as_view()
                .stream_order()
                .unwrap_or(std::ptr::null_mut()),
            src.stream_order().unwrap_or(std::ptr::null_mut()),
        )?;
        let bytes = self.bytes();
        if bytes == 0 {
            return Ok(());
        }
        let _cur = self.context().enter()?;
        let (dst, src) = (self.as_raw(), src.as_raw());
        blocking(
            home,
            ("cuMemcpy", "cuMemcpyAsync"),
            // SAFETY: both views borrow `bytes` bytes of live memory (lengths checked), the
            // destination exclusively; unified addressing identifies both.
            || unsafe { sys::cuMemcpy(dst, src, bytes) },
            // SAFETY: as above, on the stream the memory is ordered on.
            |s| unsafe { sys::cuMemcpyAsync(dst, src, bytes, s) },
        )
    }

    /// Queues a copy of `src` into the view by unified address on `stream` (a stream of the
    /// view's context; stream-ordered memory only on its own stream). The lengths must agree.
    #[wraps(cuMemcpyAsync)]
    #[track_caller]
    pub fn copy_from_unified_async(
        &mut self,
        src: &DeviceSlice<'_, T>,
        stream: &Stream,
    ) -> Result<()> {
        check_len("copy_from_unified_async", self.len(), src.len())?;
        let dst_home = self
            .as_view()
            .stream_order()
            .unwrap_or(std::ptr::null_mut());
        check_stream("copy_from_unified_async", self.context(), dst_home, stream)?;
        check_stream(
            "copy_from_unified_async",
            src.context(),
            src.stream_order().unwrap_or(std::ptr::null_mut()),
            stream,
        )?;
        let bytes = self.bytes();
        if bytes == 0 {
            return Ok(());
        }
        let _cur = self.context().enter()?;
        call!(
            // SAFETY: both views borrow `bytes` bytes of live memory of the stream's context
            // (lengths and streams checked); memory not ordered on a stream is freed by calls
            // that wait for the copy.
            unsafe { sys::cuMemcpyAsync(self.as_raw(), src.as_raw(), bytes, stream.as_raw()) },
        )
    }
}

/// Checks the pairs of a batch: equal counts, equal lengths, streams allowed.
#[track_caller]
fn batch_pairs<T: DeviceRepr>(
    what: &'static str,
    dsts: &[DeviceSliceMut<'_, T>],
    srcs: &[DeviceSlice<'_, T>],
    stream: &Stream,
) -> Result<(Vec<sys::CUdeviceptr>, Vec<sys::CUdeviceptr>, Vec<usize>)> {
    check_len(what, dsts.len(), srcs.len())?;
    let (mut d, mut s, mut n) = (Vec::new(), Vec::new(), Vec::new());
    for (dst, src) in dsts.iter().zip(srcs) {
        check_len(what, dst.len(), src.len())?;
        let dh = dst.as_view().stream_order().unwrap_or(std::ptr::null_mut());
        check_stream(what, dst.context(), dh, stream)?;
        let sh = src.stream_order().unwrap_or(std::ptr::null_mut());
        check_stream(what, src.context(), sh, stream)?;
        if dst.bytes() > 0 {
            d.push(dst.as_raw());
            s.push(src.as_raw());
            n.push(dst.bytes());
        }
    }
    Ok((d, s, n))
}

impl Stream {
    /// Queues the copies `srcs[i]` → `dsts[i]` as one batch on this stream (CUDA 12.8+): the
    /// driver may run them concurrently; each source is read in stream order. The counts and
    /// each pair's lengths must agree.
    #[wraps(cuMemcpyBatchAsync)]
    #[track_caller]
    pub fn copy_batch<T: DeviceRepr>(
        &self,
        dsts: &mut [DeviceSliceMut<'_, T>],
        srcs: &[DeviceSlice<'_, T>],
    ) -> Result<()> {
        let (mut d, mut s, mut n) = batch_pairs("Stream::copy_batch", dsts, srcs, self)?;
        if d.is_empty() {
            return Ok(());
        }
        let mut attrs = sys::CUmemcpyAttributes {
            srcAccessOrder: sys::CU_MEMCPY_SRC_ACCESS_ORDER_STREAM,
            ..Default::default()
        };
        let mut idx = 0usize;
        let _cur = self.context().enter()?;
        call!(
            // SAFETY: `d`, `s`, `n` hold `d.len()` pointer pairs of live views (lengths and
            // streams checked, destinations borrowed exclusively); one attribute set applies
            // from copy 0.
            unsafe {
                newer::cuMemcpyBatchAsync_v2()?(
                    d.as_mut_ptr(),
                    s.as_mut_ptr(),
                    n.as_mut_ptr(),
                    d.len(),
                    &mut attrs,
                    &mut idx,
                    1,
                    self.as_raw(),
                )
            },
        )
    }

    /// [`copy_batch`](Self::copy_batch) through the 3D batch API (`cuMemcpy3DBatchAsync`,
    /// CUDA 12.8+), each copy a one-row box of pointer operands.
    #[wraps(cuMemcpy3DBatchAsync)]
    #[track_caller]
    pub fn copy_batch_3d<T: DeviceRepr>(
        &self,
        dsts: &mut [DeviceSliceMut<'_, T>],
        srcs: &[DeviceSlice<'_, T>],
    ) -> Result<()> {
        let (d, s, n) = batch_pairs("Stream::copy_batch_3d", dsts, srcs, self)?;
        if d.is_empty() {
            return Ok(());
        }
        let operand = |ptr: sys::CUdeviceptr, bytes: usize| sys::CUmemcpy3DOperand {
            type_: sys::CU_MEMCPY_OPERAND_TYPE_POINTER,
            op: sys::CUmemcpy3DOperand_st__bindgen_ty_1 {
                ptr: sys::CUmemcpy3DOperand_st__bindgen_ty_1__bindgen_ty_1 {
                    ptr,
                    rowLength: bytes,
                    layerHeight: 1,
                    // No hint (the views are not required to be managed memory).
                    locHint: sys::CUmemLocation {
                        type_: sys::CU_MEM_LOCATION_TYPE_INVALID,
                        id: 0,
                    },
                },
            },
        };
        let mut ops: Vec<sys::CUDA_MEMCPY3D_BATCH_OP> = (0..d.len())
            .map(|i| sys::CUDA_MEMCPY3D_BATCH_OP {
                src: operand(s[i], n[i]),
                dst: operand(d[i], n[i]),
                extent: sys::CUextent3D {
                    width: n[i],
                    height: 1,
                    depth: 1,
                },
                srcAccessOrder: sys::CU_MEMCPY_SRC_ACCESS_ORDER_STREAM,
                flags: 0,
            })
            .collect();
        let _cur = self.context().enter()?;
        call!(
            // SAFETY: `ops` holds `ops.len()` copies between live views (as in copy_batch),
            // each a box of `n[i]` one-byte elements in one row.
            unsafe {
                newer::cuMemcpy3DBatchAsync_v2()?(ops.len(), ops.as_mut_ptr(), 0, self.as_raw())
            },
        )
    }

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
