//! Stream memory operations: a stream waits until a 32- or 64-bit word in device memory
//! satisfies a condition, or writes one, in stream order (`cuStreamWaitValue32`, ...,
//! `cuStreamBatchMemOp`). Each checks first the device attributes that gate it
//! ([`Error::FeatureUnsupported`]).
//!
//! Views of stream-ordered memory are used on their own stream only
//! ([`Error::StreamMismatch`]), as for copies; the driver itself may refuse memory operations
//! on pool memory (driver 580 answers `CUDA_ERROR_INVALID_VALUE`).
//!
//! A wait whose condition never comes true blocks the stream (and work that waits on it)
//! forever; nothing in memory safety depends on it.

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use crate::device::Device;
use crate::error::{check, Error, Result};
use crate::handle::Handle;
use crate::memory::view::{check_stream, stream_identity};
use crate::memory::view::{DeviceSlice, DeviceSliceMut};
use crate::repr::DeviceRepr;
use crate::stream::Stream;
use crate::types::DeviceAttribute;

use crate::types::{StreamMemoryBarrierFlags, StreamWaitValueFlags, StreamWriteValueFlags};

/// The most operations one `cuStreamBatchMemOp` takes.
pub const MAX_BATCH_MEM_OPS: usize = 256;

#[track_caller]
fn require(
    dev: Device,
    attr: DeviceAttribute,
    name: &'static str,
    what: &'static str,
) -> Result<()> {
    if dev.attribute(attr)? != 0 {
        Ok(())
    } else {
        Err(Error::FeatureUnsupported {
            what,
            attribute: name,
            device: dev.as_raw(),
        })
    }
}

#[track_caller]
fn check_wait_flags(dev: Device, flags: StreamWaitValueFlags, what: &'static str) -> Result<()> {
    if flags.contains(StreamWaitValueFlags::NOR) {
        require(
            dev,
            DeviceAttribute::CAN_USE_STREAM_WAIT_VALUE_NOR,
            "CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR",
            what,
        )?;
    }
    Ok(())
}

#[track_caller]
fn require_64(dev: Device, what: &'static str) -> Result<()> {
    require(
        dev,
        DeviceAttribute::CAN_USE_64_BIT_STREAM_MEM_OPS,
        "CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS",
        what,
    )
}

#[track_caller]
fn first<T: crate::repr::DeviceRepr>(len: usize, what: &'static str) -> Result<()> {
    if len == 0 {
        return Err(Error::OutOfBounds {
            start: 0,
            end: 1,
            len: 0,
        });
    }
    let _ = (what, std::mem::size_of::<T>());
    Ok(())
}

/// A word a stream memory operation waits on or writes, `u32` or `u64`: the one place the
/// 32- and 64-bit forms differ (the driver call, the batch operation, and whether the device
/// needs `CAN_USE_64_BIT_STREAM_MEM_OPS`).
trait MemOpWord: DeviceRepr + Into<u64> {
    /// Whether the operation needs `CAN_USE_64_BIT_STREAM_MEM_OPS`.
    const IS_64: bool;
    const WAIT_OP: sys::CUstreamBatchMemOpType;
    const WRITE_OP: sys::CUstreamBatchMemOpType;
    const WAIT_CALL: &'static str;
    const WRITE_CALL: &'static str;
    /// # Safety
    /// `addr` holds a live word of the stream's context; `stream` is alive.
    unsafe fn wait(
        stream: sys::CUstream,
        addr: sys::CUdeviceptr,
        value: Self,
        flags: u32,
    ) -> sys::CUresult;
    /// # Safety
    /// As for `wait`, and the word may be written.
    unsafe fn write(
        stream: sys::CUstream,
        addr: sys::CUdeviceptr,
        value: Self,
        flags: u32,
    ) -> sys::CUresult;
}

macro_rules! mem_op_word {
    ($t:ty, $is_64:literal, $wait_op:ident, $write_op:ident, $wait:ident, $write:ident) => {
        impl MemOpWord for $t {
            const IS_64: bool = $is_64;
            const WAIT_OP: sys::CUstreamBatchMemOpType = sys::$wait_op;
            const WRITE_OP: sys::CUstreamBatchMemOpType = sys::$write_op;
            const WAIT_CALL: &'static str = ::core::stringify!($wait);
            const WRITE_CALL: &'static str = ::core::stringify!($write);
            #[inline(always)]
            unsafe fn wait(
                stream: sys::CUstream,
                addr: sys::CUdeviceptr,
                value: Self,
                flags: u32,
            ) -> sys::CUresult {
                // SAFETY: the caller's guarantees.
                unsafe { sys::$wait(stream, addr, value, flags) }
            }
            #[inline(always)]
            unsafe fn write(
                stream: sys::CUstream,
                addr: sys::CUdeviceptr,
                value: Self,
                flags: u32,
            ) -> sys::CUresult {
                // SAFETY: the caller's guarantees.
                unsafe { sys::$write(stream, addr, value, flags) }
            }
        }
    };
}

mem_op_word!(
    u32,
    false,
    CU_STREAM_MEM_OP_WAIT_VALUE_32,
    CU_STREAM_MEM_OP_WRITE_VALUE_32,
    cuStreamWaitValue32_v2,
    cuStreamWriteValue32_v2
);
mem_op_word!(
    u64,
    true,
    CU_STREAM_MEM_OP_WAIT_VALUE_64,
    CU_STREAM_MEM_OP_WRITE_VALUE_64,
    cuStreamWaitValue64_v2,
    cuStreamWriteValue64_v2
);

impl Stream {
    /// Makes the stream wait until the first `u32` of `word` satisfies `flags` against
    /// `value` (`GEQ`, `EQ`, `AND`, `NOR`; `FLUSH`).
    #[wraps(cuStreamWaitValue32)]
    #[inline]
    #[track_caller]
    pub fn wait_value_u32(
        &self,
        word: &DeviceSlice<'_, u32>,
        value: u32,
        flags: StreamWaitValueFlags,
    ) -> Result<()> {
        self.wait_value(word, value, flags, "Stream::wait_value_u32")
    }

    /// [`wait_value_u32`](Self::wait_value_u32) on a `u64`; needs
    /// `CAN_USE_64_BIT_STREAM_MEM_OPS`.
    #[wraps(cuStreamWaitValue64)]
    #[inline]
    #[track_caller]
    pub fn wait_value_u64(
        &self,
        word: &DeviceSlice<'_, u64>,
        value: u64,
        flags: StreamWaitValueFlags,
    ) -> Result<()> {
        self.wait_value(word, value, flags, "Stream::wait_value_u64")
    }

    /// Writes `value` to the first `u32` of `word` in stream order.
    #[wraps(cuStreamWriteValue32)]
    #[inline]
    #[track_caller]
    pub fn write_value_u32(
        &self,
        word: &mut DeviceSliceMut<'_, u32>,
        value: u32,
        flags: StreamWriteValueFlags,
    ) -> Result<()> {
        self.write_value(word, value, flags, "Stream::write_value_u32")
    }

    /// Writes `value` to the first `u64` of `word` in stream order; needs
    /// `CAN_USE_64_BIT_STREAM_MEM_OPS`.
    #[wraps(cuStreamWriteValue64)]
    #[inline]
    #[track_caller]
    pub fn write_value_u64(
        &self,
        word: &mut DeviceSliceMut<'_, u64>,
        value: u64,
        flags: StreamWriteValueFlags,
    ) -> Result<()> {
        self.write_value(word, value, flags, "Stream::write_value_u64")
    }

    /// The one body of the `wait_value_*` twins.
    #[track_caller]
    fn wait_value<W: MemOpWord>(
        &self,
        word: &DeviceSlice<'_, W>,
        value: W,
        flags: StreamWaitValueFlags,
        what: &'static str,
    ) -> Result<()> {
        first::<W>(word.len(), what)?;
        check_stream(what, word.context(), word.home(), self)?;
        let dev = self.context().device();
        if W::IS_64 {
            require_64(dev, what)?;
        }
        check_wait_flags(dev, flags, what)?;
        let _cur = self.context().enter()?;
        check(
            // SAFETY: the view borrows at least one live word of the stream's context; the
            // wait only reads it.
            unsafe { W::wait(self.as_raw(), word.as_raw(), value, flags.as_raw()) },
            W::WAIT_CALL,
        )
    }

    /// The one body of the `write_value_*` twins.
    #[track_caller]
    fn write_value<W: MemOpWord>(
        &self,
        word: &mut DeviceSliceMut<'_, W>,
        value: W,
        flags: StreamWriteValueFlags,
        what: &'static str,
    ) -> Result<()> {
        first::<W>(word.len(), what)?;
        check_stream(what, word.context(), word.home(), self)?;
        if W::IS_64 {
            require_64(self.context().device(), what)?;
        }
        let _cur = self.context().enter()?;
        check(
            // SAFETY: the view borrows at least one live word of the stream's context mutably.
            unsafe { W::write(self.as_raw(), word.as_raw(), value, flags.as_raw()) },
            W::WRITE_CALL,
        )
    }

    /// Queues a batch of memory operations in one call (at most [`MAX_BATCH_MEM_OPS`]).
    #[wraps(cuStreamBatchMemOp)]
    #[track_caller]
    pub fn batch_mem_ops(&self, batch: &mut MemOpBatch<'_>) -> Result<()> {
        if batch.ops.is_empty() {
            return Ok(());
        }
        batch.check_stream(self, "Stream::batch_mem_ops")?;
        batch.check(self.context().device(), "Stream::batch_mem_ops")?;
        let _cur = self.context().enter()?;
        call!(
            // SAFETY: every address in the batch comes from a view the batch borrows for its
            // lifetime (writes mutably); the array holds `len` initialised operations.
            unsafe {
                sys::cuStreamBatchMemOp_v2(
                    self.as_raw(),
                    batch.ops.len() as u32,
                    batch.ops.as_mut_ptr(),
                    0,
                )
            },
        )
    }
}

/// A batch of stream memory operations for [`Stream::batch_mem_ops`], borrowing the words it
/// reads (shared) and writes (mutably) for `'a`. Its views belong to one context, and those
/// of stream-ordered memory to one stream, on which alone the batch runs
/// ([`Error::StreamMismatch`]).
pub struct MemOpBatch<'a> {
    ops: Vec<sys::CUstreamBatchMemOpParams>,
    /// The context of the views added (null: none yet).
    ctx: sys::CUcontext,
    /// The stream the views' stream-ordered memory is ordered on (null: none).
    home: sys::CUstream,
    needs_64: bool,
    needs_nor: bool,
    needs_flush: bool,
    _views: std::marker::PhantomData<&'a mut ()>,
}

impl std::fmt::Debug for MemOpBatch<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemOpBatch")
            .field("len", &self.ops.len())
            .finish()
    }
}

fn zero_op() -> sys::CUstreamBatchMemOpParams {
    sys::CUstreamBatchMemOpParams { pad: [0; 6] }
}

impl Default for MemOpBatch<'_> {
    fn default() -> Self {
        MemOpBatch {
            ops: Vec::new(),
            ctx: std::ptr::null_mut(),
            home: std::ptr::null_mut(),
            needs_64: false,
            needs_nor: false,
            needs_flush: false,
            _views: std::marker::PhantomData,
        }
    }
}

// SAFETY: the raw context and stream are only compared, never used to call the driver.
unsafe impl Send for MemOpBatch<'_> {}
// SAFETY: as above; `&MemOpBatch` gives no access to the raw handles.
unsafe impl Sync for MemOpBatch<'_> {}

impl<'a> MemOpBatch<'a> {
    /// Records the context and stream order of a view the batch is to use: one context,
    /// and at most one stream for stream-ordered memory.
    #[track_caller]
    fn note_view(
        &mut self,
        ctx: &crate::context::Context,
        home: sys::CUstream,
        what: &'static str,
    ) -> Result<()> {
        if !self.ctx.is_null() && self.ctx != ctx.as_raw() {
            return Err(Error::ContextMismatch {
                what,
                expected: self.ctx as usize,
                found: ctx.as_raw() as usize,
            });
        }
        if !home.is_null() && !self.home.is_null() && self.home != home {
            return Err(Error::StreamMismatch {
                what,
                expected: self.home as usize,
                found: home as usize,
            });
        }
        self.ctx = ctx.as_raw();
        if !home.is_null() {
            self.home = home;
        }
        Ok(())
    }

    /// Checks that the batch may run on `stream`: its context, and the stream its
    /// stream-ordered memory is ordered on.
    #[track_caller]
    pub(crate) fn check_stream(&self, stream: &Stream, what: &'static str) -> Result<()> {
        if !self.ctx.is_null() && self.ctx != stream.context().as_raw() {
            return Err(Error::ContextMismatch {
                what,
                expected: self.ctx as usize,
                found: stream.context().as_raw() as usize,
            });
        }
        if !self.home.is_null() && self.home != stream_identity(stream.as_raw()) {
            return Err(Error::StreamMismatch {
                what,
                expected: self.home as usize,
                found: stream.as_raw() as usize,
            });
        }
        Ok(())
    }

    /// The context of the batch's views, if any (raw).
    pub(crate) fn context_raw(&self) -> sys::CUcontext {
        self.ctx
    }

    /// Whether the batch uses stream-ordered memory.
    pub(crate) fn is_stream_ordered(&self) -> bool {
        !self.home.is_null()
    }

    /// Checks the batch for `dev`: at most [`MAX_BATCH_MEM_OPS`] operations, and the device
    /// attributes its operations need.
    #[track_caller]
    pub(crate) fn check(&self, dev: Device, what: &'static str) -> Result<()> {
        if self.ops.len() > MAX_BATCH_MEM_OPS {
            return Err(Error::ResourceExhausted {
                what,
                asked: self.ops.len(),
                available: MAX_BATCH_MEM_OPS,
            });
        }
        if self.needs_64 {
            require_64(dev, what)?;
        }
        if self.needs_nor {
            check_wait_flags(dev, StreamWaitValueFlags::NOR, what)?;
        }
        if self.needs_flush {
            require(
                dev,
                DeviceAttribute::CAN_FLUSH_REMOTE_WRITES,
                "CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES",
                what,
            )?;
        }
        Ok(())
    }

    /// The operations, as the driver takes them.
    pub(crate) fn raw_ops(&mut self) -> &mut [sys::CUstreamBatchMemOpParams] {
        &mut self.ops
    }

    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of operations.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    fn wait(
        &mut self,
        op: sys::CUstreamBatchMemOpType,
        addr: sys::CUdeviceptr,
        value: u64,
        flags: StreamWaitValueFlags,
    ) {
        let mut p = zero_op();
        // Writing union fields of plain data is safe.
        p.waitValue.operation = op;
        p.waitValue.address = addr;
        p.waitValue.__bindgen_anon_1.value64 = value;
        p.waitValue.flags = flags.as_raw();
        if op == sys::CU_STREAM_MEM_OP_WAIT_VALUE_32 {
            p.waitValue.__bindgen_anon_1.value = value as u32;
        }
        self.needs_nor |= flags.contains(StreamWaitValueFlags::NOR);
        self.ops.push(p);
    }

    fn write(
        &mut self,
        op: sys::CUstreamBatchMemOpType,
        addr: sys::CUdeviceptr,
        value: u64,
        flags: StreamWriteValueFlags,
    ) {
        let mut p = zero_op();
        // Writing union fields of plain data is safe.
        p.writeValue.operation = op;
        p.writeValue.address = addr;
        p.writeValue.__bindgen_anon_1.value64 = value;
        p.writeValue.flags = flags.as_raw();
        if op == sys::CU_STREAM_MEM_OP_WRITE_VALUE_32 {
            p.writeValue.__bindgen_anon_1.value = value as u32;
        }
        self.ops.push(p);
    }

    /// Adds a wait on the first `u32` of `word`.
    #[inline]
    #[track_caller]
    pub fn wait_u32(
        &mut self,
        word: &'a DeviceSlice<'_, u32>,
        value: u32,
        flags: StreamWaitValueFlags,
    ) -> Result<&mut Self> {
        self.add_wait(word, value, flags, "MemOpBatch::wait_u32")
    }

    /// Adds a wait on the first `u64` of `word`.
    #[inline]
    #[track_caller]
    pub fn wait_u64(
        &mut self,
        word: &'a DeviceSlice<'_, u64>,
        value: u64,
        flags: StreamWaitValueFlags,
    ) -> Result<&mut Self> {
        self.add_wait(word, value, flags, "MemOpBatch::wait_u64")
    }

    /// Adds a write of the first `u32` of `word`.
    #[inline]
    #[track_caller]
    pub fn write_u32(
        &mut self,
        word: &'a mut DeviceSliceMut<'_, u32>,
        value: u32,
        flags: StreamWriteValueFlags,
    ) -> Result<&mut Self> {
        self.add_write(word, value, flags, "MemOpBatch::write_u32")
    }

    /// Adds a write of the first `u64` of `word`.
    #[inline]
    #[track_caller]
    pub fn write_u64(
        &mut self,
        word: &'a mut DeviceSliceMut<'_, u64>,
        value: u64,
        flags: StreamWriteValueFlags,
    ) -> Result<&mut Self> {
        self.add_write(word, value, flags, "MemOpBatch::write_u64")
    }

    /// The one body of the `wait_*` twins.
    #[track_caller]
    fn add_wait<W: MemOpWord>(
        &mut self,
        word: &'a DeviceSlice<'_, W>,
        value: W,
        flags: StreamWaitValueFlags,
        what: &'static str,
    ) -> Result<&mut Self> {
        first::<W>(word.len(), what)?;
        self.note_view(word.context(), word.home(), what)?;
        self.needs_64 |= W::IS_64;
        self.wait(W::WAIT_OP, word.as_raw(), value.into(), flags);
        Ok(self)
    }

    /// The one body of the `write_*` twins.
    #[track_caller]
    fn add_write<W: MemOpWord>(
        &mut self,
        word: &'a mut DeviceSliceMut<'_, W>,
        value: W,
        flags: StreamWriteValueFlags,
        what: &'static str,
    ) -> Result<&mut Self> {
        first::<W>(word.len(), what)?;
        self.note_view(word.context(), word.home(), what)?;
        self.needs_64 |= W::IS_64;
        self.write(W::WRITE_OP, word.as_raw(), value.into(), flags);
        Ok(self)
    }

    /// Adds a memory barrier (`SYS` or `GPU` scope).
    pub fn barrier(&mut self, flags: StreamMemoryBarrierFlags) -> &mut Self {
        let mut p = zero_op();
        p.memoryBarrier = sys::CUstreamBatchMemOpParams_union_CUstreamMemOpMemoryBarrierParams_st {
            operation: sys::CU_STREAM_MEM_OP_BARRIER,
            flags: flags.as_raw(),
        };
        self.ops.push(p);
        self
    }

    /// Adds a flush of remote (RDMA) writes; needs `CAN_FLUSH_REMOTE_WRITES`.
    pub fn flush_remote_writes(&mut self) -> &mut Self {
        let mut p = zero_op();
        p.flushRemoteWrites =
            sys::CUstreamBatchMemOpParams_union_CUstreamMemOpFlushRemoteWritesParams_st {
                operation: sys::CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES,
                flags: 0,
            };
        self.needs_flush = true;
        self.ops.push(p);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_packs_operations() {
        let mut b = MemOpBatch::new();
        b.barrier(StreamMemoryBarrierFlags::empty())
            .flush_remote_writes();
        assert_eq!(b.len(), 2);
        assert!(b.needs_flush && !b.needs_64);
        // SAFETY: reading the operation member every variant starts with.
        assert_eq!(unsafe { b.ops[0].operation }, sys::CU_STREAM_MEM_OP_BARRIER);
        b.write(
            sys::CU_STREAM_MEM_OP_WRITE_VALUE_32,
            0x1000,
            7,
            StreamWriteValueFlags::empty(),
        );
        // SAFETY: as above, and the write member was written.
        unsafe {
            assert_eq!(b.ops[2].writeValue.address, 0x1000);
            assert_eq!(b.ops[2].writeValue.__bindgen_anon_1.value, 7);
        }
    }
}
