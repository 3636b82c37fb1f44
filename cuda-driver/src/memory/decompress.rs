//! Hardware decompression (of the reference's memory management group): a batch of
//! decompressions queued on a stream, for GPUs with a decompression engine.

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use crate::entry_point::newer;
use crate::error::{Error, Result};
use crate::handle::Handle;
use crate::memory::view::{check_stream, DeviceSlice, DeviceSliceMut};
use crate::stream::Stream;
use crate::types::{DeviceAttribute, MemDecompressAlgorithm};

/// One decompression of a batch (`CUmemDecompressParams`): the compressed bytes `src`, the
/// room `dst` for the result, and `actual`, where the device writes how many bytes it wrote.
///
/// The memory of all three must be usable by the decompression engine: allocated with
/// `cuMemAlloc` ([`DeviceBuffer`](crate::memory::DeviceBuffer)), or from a pool or physical
/// allocation created with the hardware-decompress usage flag; anything else is refused by
/// the driver.
#[wraps(CUmemDecompressParams)]
#[derive(Debug)]
pub struct Decompression<'a> {
    /// The compressed bytes.
    pub src: DeviceSlice<'a, u8>,
    /// Where the decompressed bytes go.
    pub dst: DeviceSliceMut<'a, u8>,
    /// One `u32`: the number of bytes written to `dst`, once the batch has run.
    pub actual: DeviceSliceMut<'a, u32>,
    /// The compression format of `src` (one algorithm).
    pub algo: MemDecompressAlgorithm,
}

impl Stream {
    /// Queues a batch of independent decompressions on this stream; the stream treats the
    /// batch as one unit of work.
    ///
    /// Every view must be usable on this stream (as for any queued operation), each `actual`
    /// must hold at least one `u32`, and each `algo` one algorithm that this GPU's
    /// decompression engine supports (`CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK`); a
    /// GPU without the engine (any before Blackwell) is [`Error::FeatureUnsupported`] before
    /// the driver is called. An empty batch does nothing.
    #[wraps(cuMemBatchDecompressAsync)]
    #[track_caller]
    pub fn decompress_batch(&self, ops: &mut [Decompression<'_>]) -> Result<()> {
        const WHAT: &str = "Stream::decompress_batch";
        if ops.is_empty() {
            return Ok(());
        }
        let device = self.context().device();
        let mask = device.attribute(DeviceAttribute::MEM_DECOMPRESS_ALGORITHM_MASK)?;
        let supported = MemDecompressAlgorithm::from_raw(mask as sys::CUmemDecompressAlgorithm);
        let mut params = Vec::with_capacity(ops.len());
        for op in ops.iter_mut() {
            if supported.is_empty() {
                return Err(Error::FeatureUnsupported {
                    what: WHAT,
                    attribute: "CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK",
                    device: device.as_raw(),
                });
            }
            if op.algo.bits().count_ones() != 1 || !supported.contains(op.algo) {
                return Err(Error::InvalidArgument(format!(
                    "{WHAT}: algorithm {:?} is not one this device supports ({supported:?})",
                    op.algo
                )));
            }
            if op.actual.is_empty() {
                return Err(Error::InvalidArgument(format!(
                    "{WHAT}: `actual` holds no u32 for the decompressed size"
                )));
            }
            for (ctx, home) in [
                (op.src.context(), op.src.stream_order()),
                (op.dst.context(), op.dst.as_view().stream_order()),
                (op.actual.context(), op.actual.as_view().stream_order()),
            ] {
                check_stream(WHAT, ctx, home.unwrap_or(std::ptr::null_mut()), self)?;
            }
            params.push(sys::CUmemDecompressParams {
                srcNumBytes: op.src.len(),
                dstNumBytes: op.dst.len(),
                dstActBytes: op.actual.as_raw() as *mut sys::cuuint32_t,
                src: op.src.as_raw() as *const std::ffi::c_void,
                dst: op.dst.as_raw() as *mut std::ffi::c_void,
                algo: op.algo.as_raw(),
                padding: [0; 20],
            });
        }
        let mut error_index = usize::MAX;
        let _cur = self.context().enter()?;
        call!(
            // SAFETY: `params` describes live views of this stream's order (checked above): the
            // sources borrowed shared, the destinations and size words exclusively, for as long
            // as device memory of the crate lives (freed only after the work queued before the
            // free, see docs/SOUNDNESS.md); flags must be 0; writes one index.
            unsafe {
                newer::cuMemBatchDecompressAsync()?(
                    params.as_mut_ptr(),
                    params.len(),
                    0,
                    &mut error_index,
                    self.as_raw(),
                )
            },
        )
    }
}
