//! Batch memory operation nodes (the graph form of stream memory operations).

use super::*;
use crate::error::layout::LayoutError;
use crate::handle::Handle;
#[allow(unused_imports)]
use cuda_driver_macros::call;

/// One operation of a batch memory operation node ([`Graph::add_batch_mem_op`]).
#[doc(alias = "CUstreamBatchMemOpParams")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BatchMemOp {
    /// Writes a 32-bit value to a device address (`CU_STREAM_MEM_OP_WRITE_VALUE_32`).
    WriteValue32 {
        /// The address (4-byte aligned).
        address: sys::CUdeviceptr,
        /// The value.
        value: u32,
    },
    /// Waits until a 32-bit value at a device address is at least `value`
    /// (`CU_STREAM_MEM_OP_WAIT_VALUE_32` with `CU_STREAM_WAIT_VALUE_GEQ`).
    WaitValue32Geq {
        /// The address (4-byte aligned).
        address: sys::CUdeviceptr,
        /// The value.
        value: u32,
    },
}

impl BatchMemOp {
    pub(super) fn to_raw(self) -> sys::CUstreamBatchMemOpParams {
        // SAFETY: an all-zero union is valid.
        let mut p: sys::CUstreamBatchMemOpParams = unsafe { std::mem::zeroed() };
        match self {
            BatchMemOp::WriteValue32 { address, value } => {
                p.writeValue.operation = StreamBatchMemOpType::WRITE_VALUE_32.as_raw();
                p.writeValue.address = address;
                p.writeValue.__bindgen_anon_1.value = value;
                p.writeValue.flags = 0;
            }
            BatchMemOp::WaitValue32Geq { address, value } => {
                p.waitValue.operation = StreamBatchMemOpType::WAIT_VALUE_32.as_raw();
                p.waitValue.address = address;
                p.waitValue.__bindgen_anon_1.value = value;
                p.waitValue.flags = sys::CU_STREAM_WAIT_VALUE_GEQ;
            }
        }
        p
    }
}

impl Graph {
    /// Adds a batch memory operation node running `ops` in `ctx`: 32-bit writes and waits by
    /// raw address. [`add_mem_op_batch`](Self::add_mem_op_batch) takes every operation kind,
    /// by view, with the device attributes they need checked.
    ///
    /// # Safety
    /// The addresses are valid device memory of `ctx`, allocated while any graph or exec with
    /// this node can run; a wait can be satisfied (or the graph hangs).
    #[wraps(cuGraphAddBatchMemOpNode)]
    #[track_caller]
    pub unsafe fn add_batch_mem_op(
        &self,
        deps: &[GraphNode<'_>],
        ctx: &Context,
        ops: &[BatchMemOp],
    ) -> Result<GraphNode<'_>> {
        let mut raw_ops: Vec<_> = ops.iter().map(|o| o.to_raw()).collect();
        // SAFETY: the caller's guarantees for the addresses.
        unsafe { self.add_batch_raw(deps, ctx, &mut raw_ops) }.map(|n| n.0)
    }

    /// # Safety
    /// `ops` name memory of `ctx` the caller keeps valid while the node can run.
    #[track_caller]
    unsafe fn add_batch_raw(
        &self,
        deps: &[GraphNode<'_>],
        ctx: &Context,
        ops: &mut [sys::CUstreamBatchMemOpParams],
    ) -> Result<BatchMemOpNode<'_>> {
        let d = raw_deps(self, deps)?;
        let p = sys::CUDA_BATCH_MEM_OP_NODE_PARAMS {
            ctx: ctx.as_raw(),
            count: count_u32("a batch memory operation node", "operations", ops.len())?,
            paramArray: ops.as_mut_ptr(),
            flags: 0,
        };
        let _cur = ctx.enter()?;
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: the graph is live; `p` points to `ops`, alive for the call; the caller
            // guarantees the memory they name.
            unsafe {
                sys::cuGraphAddBatchMemOpNode(&mut raw, self.raw, ptr_or_null(&d), d.len(), &p)
            },
        )?;
        Ok(BatchMemOpNode(GraphNode { raw, graph: self }))
    }

    /// Adds a batch memory operation node running `batch` (32- and 64-bit waits and writes,
    /// barriers, remote-write flushes; see [`MemOpBatch`](crate::stream_memop::MemOpBatch)) in `ctx`. The
    /// device attributes the operations need are checked first
    /// ([`Error::FeatureUnsupported`]); an empty batch is [`LayoutError::ZeroExtent`].
    ///
    /// # Safety
    /// The words the batch names stay allocated while any graph or exec with this node can
    /// run (the batch borrows them only until this call returns), and every wait can be
    /// satisfied (or the graph hangs).
    #[wraps(cuGraphAddBatchMemOpNode)]
    #[track_caller]
    pub unsafe fn add_mem_op_batch(
        &self,
        deps: &[GraphNode<'_>],
        ctx: &Context,
        batch: &mut crate::stream_memop::MemOpBatch<'_>,
    ) -> Result<BatchMemOpNode<'_>> {
        if batch.is_empty() {
            return Err(Error::Layout(LayoutError::ZeroExtent {
                what: "Graph::add_mem_op_batch",
                axis: "operations",
            }));
        }
        let views_ctx = batch.context_raw();
        if !views_ctx.is_null() && views_ctx != ctx.as_raw() {
            return Err(Error::ContextMismatch {
                what: "Graph::add_mem_op_batch",
                expected: ctx.as_raw() as usize,
                found: views_ctx as usize,
            });
        }
        if batch.is_stream_ordered() {
            // A graph runs on whatever stream it is launched on, later: memory ordered on one
            // stream has no place in it.
            return Err(Error::InvalidArgument(
                "Graph::add_mem_op_batch: a view of stream-ordered memory cannot go into a graph \
                 node"
                    .into(),
            ));
        }
        batch.check(ctx.device(), "Graph::add_mem_op_batch")?;
        // SAFETY: the caller's guarantees for the words the batch names.
        unsafe { self.add_batch_raw(deps, ctx, batch.raw_ops()) }
    }
}

impl BatchMemOp {
    /// The operation a raw parameter union holds, when it is one of the kinds this enum
    /// names.
    fn from_raw(p: &sys::CUstreamBatchMemOpParams) -> Option<BatchMemOp> {
        // SAFETY: every member starts with the operation tag; the member read is the one
        // the tag names.
        unsafe {
            let op = StreamBatchMemOpType::from_raw(p.operation);
            if op == StreamBatchMemOpType::WRITE_VALUE_32 {
                Some(BatchMemOp::WriteValue32 {
                    address: p.writeValue.address,
                    value: p.writeValue.__bindgen_anon_1.value,
                })
            } else if op == StreamBatchMemOpType::WAIT_VALUE_32
                && p.waitValue.flags == sys::CU_STREAM_WAIT_VALUE_GEQ
            {
                Some(BatchMemOp::WaitValue32Geq {
                    address: p.waitValue.address,
                    value: p.waitValue.__bindgen_anon_1.value,
                })
            } else {
                None
            }
        }
    }
}

impl<'g> BatchMemOpNode<'g> {
    /// The node's operations (an operation of a kind [`BatchMemOp`] does not name is
    /// [`Error::UnexpectedValue`]).
    #[wraps(cuGraphBatchMemOpNodeGetParams)]
    #[track_caller]
    pub fn ops(&self) -> Result<Vec<BatchMemOp>> {
        // SAFETY: a plain C struct; zero is valid.
        let mut p: sys::CUDA_BATCH_MEM_OP_NODE_PARAMS = unsafe { std::mem::zeroed() };
        call!(
            // SAFETY: a live batch node; writes the struct, whose array the node owns.
            unsafe { sys::cuGraphBatchMemOpNodeGetParams(self.as_raw(), &mut p) },
        )?;
        if p.count == 0 || p.paramArray.is_null() {
            return Ok(Vec::new());
        }
        // SAFETY: the driver's array of `count` operations, alive while the node is unchanged
        // (copied out before anything else runs).
        let raw = unsafe { std::slice::from_raw_parts(p.paramArray, p.count as usize) };
        raw.iter()
            .map(|r| {
                BatchMemOp::from_raw(r).ok_or_else(|| Error::UnexpectedValue {
                    call: "cuGraphBatchMemOpNodeGetParams",
                    reason: "an operation kind BatchMemOp does not name".into(),
                })
            })
            .collect()
    }

    /// Replaces the node's operations, run in `ctx`.
    ///
    /// # Safety
    /// As for [`Graph::add_batch_mem_op`].
    #[wraps(cuGraphBatchMemOpNodeSetParams)]
    #[track_caller]
    pub unsafe fn set_ops(&self, ctx: &Context, ops: &[BatchMemOp]) -> Result<()> {
        let mut raw_ops: Vec<_> = ops.iter().map(|o| o.to_raw()).collect();
        let p = sys::CUDA_BATCH_MEM_OP_NODE_PARAMS {
            ctx: ctx.as_raw(),
            count: count_u32("a batch memory operation node", "operations", raw_ops.len())?,
            paramArray: raw_ops.as_mut_ptr(),
            flags: 0,
        };
        let _cur = ctx.enter()?;
        call!(
            // SAFETY: a live node; `p` points to `raw_ops`, alive for the call (copied).
            unsafe { sys::cuGraphBatchMemOpNodeSetParams(self.as_raw(), &p) },
        )
    }
}

impl GraphExec {
    /// Replaces a batch memory operation node's operations in this exec only.
    ///
    /// # Safety
    /// As for [`Graph::add_batch_mem_op`].
    #[wraps(cuGraphExecBatchMemOpNodeSetParams)]
    #[track_caller]
    pub unsafe fn set_batch_mem_op_node(
        &mut self,
        node: BatchMemOpNode<'_>,
        ctx: &Context,
        ops: &[BatchMemOp],
    ) -> Result<()> {
        let mut raw_ops: Vec<_> = ops.iter().map(|o| o.to_raw()).collect();
        let p = sys::CUDA_BATCH_MEM_OP_NODE_PARAMS {
            ctx: ctx.as_raw(),
            count: count_u32("a batch memory operation node", "operations", raw_ops.len())?,
            paramArray: raw_ops.as_mut_ptr(),
            flags: 0,
        };
        let _cur = ctx.enter()?;
        call!(
            // SAFETY: a node of the exec's graph; `p` points to `raw_ops`, alive for the call.
            unsafe { sys::cuGraphExecBatchMemOpNodeSetParams(self.as_raw(), node.as_raw(), &p) },
        )
    }
}
