//! The remaining node operations: batch memory operation parameters, external-semaphore
//! signal and wait nodes, kernel node attributes, host node parameters, the generic
//! parameter setters (`cuGraphNodeSetParams`, `cuGraphExecNodeSetParams`, CUDA 12.2) and
//! user objects.

use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;

use cuda_driver_macros::wraps;
use cuda_driver_sys as sys;

use super::nodes::{BatchMemOpNode, ExtSemSignalNode, ExtSemWaitNode, HostNode, KernelNode};
use super::{ptr_or_null, raw_deps, Graph, GraphExec, GraphNode};
use crate::count::count_u32;
use crate::entry_point::newer;
use crate::error::{check, Error, Result};
use crate::interop::{
    signal_params, wait_params, ExternalSemaphore, ExternalSemaphoreSignalFlags,
    ExternalSemaphoreWaitFlags, SemaphoreValue,
};
use crate::stream::run_host_fn;
use crate::types::{StreamBatchMemOpType, UserObjectFlags};
use crate::{BatchMemOp, Context};

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
        check(
            // SAFETY: a live batch node; writes the struct, whose array the node owns.
            unsafe { sys::cuGraphBatchMemOpNodeGetParams(self.as_raw(), &mut p) },
            "cuGraphBatchMemOpNodeGetParams",
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
        check(
            // SAFETY: a live node; `p` points to `raw_ops`, alive for the call (copied).
            unsafe { sys::cuGraphBatchMemOpNodeSetParams(self.as_raw(), &p) },
            "cuGraphBatchMemOpNodeSetParams",
        )
    }
}

impl<'g> HostNode<'g> {
    /// The node's raw host function and user data (the crate's trampoline and closure).
    #[wraps(cuGraphHostNodeGetParams)]
    #[track_caller]
    pub fn params_raw(&self) -> Result<(sys::CUhostFn, *mut c_void)> {
        let mut p = sys::CUDA_HOST_NODE_PARAMS {
            fn_: None,
            userData: ptr::null_mut(),
        };
        check(
            // SAFETY: a live host node; writes one struct.
            unsafe { sys::cuGraphHostNodeGetParams(self.as_raw(), &mut p) },
            "cuGraphHostNodeGetParams",
        )?;
        Ok((p.fn_, p.userData))
    }
}

impl<'g> KernelNode<'g> {
    /// The node's launch priority (`CU_LAUNCH_ATTRIBUTE_PRIORITY`).
    #[wraps(cuGraphKernelNodeGetAttribute)]
    #[track_caller]
    pub fn priority(&self) -> Result<i32> {
        // SAFETY: the PRIORITY member is an int, read after the driver wrote it.
        Ok(unsafe {
            self.attribute_raw(sys::CU_LAUNCH_ATTRIBUTE_PRIORITY)?
                .priority
        })
    }

    /// Sets the node's launch priority (clamped by the driver to the context's range).
    #[wraps(cuGraphKernelNodeSetAttribute)]
    #[track_caller]
    pub fn set_priority(&self, priority: i32) -> Result<()> {
        // SAFETY: a plain C union; zero is valid.
        let mut v: sys::CUkernelNodeAttrValue = unsafe { std::mem::zeroed() };
        v.priority = priority;
        // SAFETY: PRIORITY takes the int member, set above.
        unsafe { self.set_attribute_raw(sys::CU_LAUNCH_ATTRIBUTE_PRIORITY, &v) }
    }

    /// A raw kernel node attribute.
    ///
    /// # Safety
    /// The caller reads only the union member that `attr` uses.
    #[wraps(cuGraphKernelNodeGetAttribute)]
    #[track_caller]
    pub unsafe fn attribute_raw(
        &self,
        attr: sys::CUkernelNodeAttrID,
    ) -> Result<sys::CUkernelNodeAttrValue> {
        // SAFETY: a plain C union; zero is valid.
        let mut v: sys::CUkernelNodeAttrValue = unsafe { std::mem::zeroed() };
        check(
            // SAFETY: a live kernel node; writes one union.
            unsafe { sys::cuGraphKernelNodeGetAttribute(self.as_raw(), attr, &mut v) },
            "cuGraphKernelNodeGetAttribute",
        )?;
        Ok(v)
    }

    /// Sets a raw kernel node attribute.
    ///
    /// # Safety
    /// `value` holds the member `attr` uses; an access-policy window's range stays allocated
    /// while the graph or an exec made from it can run.
    #[wraps(cuGraphKernelNodeSetAttribute)]
    #[track_caller]
    pub unsafe fn set_attribute_raw(
        &self,
        attr: sys::CUkernelNodeAttrID,
        value: &sys::CUkernelNodeAttrValue,
    ) -> Result<()> {
        check(
            // SAFETY: a live kernel node; the caller's guarantees on `value`.
            unsafe { sys::cuGraphKernelNodeSetAttribute(self.as_raw(), attr, value) },
            "cuGraphKernelNodeSetAttribute",
        )
    }

    /// Copies every attribute of `src` (a kernel node of the same context) to this node.
    #[wraps(cuGraphKernelNodeCopyAttributes)]
    #[track_caller]
    pub fn copy_attributes_from(&self, src: KernelNode<'_>) -> Result<()> {
        check(
            // SAFETY: both are live kernel nodes.
            unsafe { sys::cuGraphKernelNodeCopyAttributes(self.as_raw(), src.as_raw()) },
            "cuGraphKernelNodeCopyAttributes",
        )
    }
}

impl<'g> GraphNode<'g> {
    /// Sets the node's parameters from a raw `CUgraphNodeParams` (CUDA 12.2): the type must
    /// be the node's, and not every field of every type may change (the driver checks).
    ///
    /// # Safety
    /// The parameters are valid for the node's type; memory, functions and handles they name
    /// stay valid while the graph or an exec made from it can run.
    #[wraps(cuGraphNodeSetParams)]
    #[track_caller]
    pub unsafe fn set_params_raw(&self, params: &mut sys::CUgraphNodeParams) -> Result<()> {
        let f = newer::cuGraphNodeSetParams()?;
        check(
            // SAFETY: a live node; the caller's guarantees on `params`.
            unsafe { f(self.as_raw(), params) },
            "cuGraphNodeSetParams",
        )
    }
}

/// The raw semaphores and parameters of a node, checking each semaphore's context is `ctx`.
fn sem_lists<P>(
    sems: &[(&Arc<ExternalSemaphore>, SemaphoreValue)],
    param: impl Fn(SemaphoreValue) -> P,
) -> (Vec<sys::CUexternalSemaphore>, Vec<P>) {
    sems.iter().map(|(s, v)| (s.as_raw(), param(*v))).unzip()
}

/// Reads a signal or wait node's semaphores and values from the driver's arrays.
///
/// # Safety
/// `raws` and `params` point to `n` elements (or are null with `n == 0`).
unsafe fn read_sems<P>(
    raws: *const sys::CUexternalSemaphore,
    params: *const P,
    n: u32,
    value: impl Fn(&P) -> SemaphoreValue,
) -> Vec<(sys::CUexternalSemaphore, SemaphoreValue)> {
    if n == 0 || raws.is_null() || params.is_null() {
        return Vec::new();
    }
    // SAFETY: the caller's guarantee.
    let (r, p) = unsafe {
        (
            std::slice::from_raw_parts(raws, n as usize),
            std::slice::from_raw_parts(params, n as usize),
        )
    };
    r.iter().zip(p).map(|(&s, q)| (s, value(q))).collect()
}

fn signal_value(p: &sys::CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS) -> SemaphoreValue {
    SemaphoreValue {
        fence: p.params.fence.value,
        key: p.params.keyedMutex.key,
        timeout_ms: 0,
    }
}

fn wait_value(p: &sys::CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS) -> SemaphoreValue {
    SemaphoreValue {
        fence: p.params.fence.value,
        key: p.params.keyedMutex.key,
        timeout_ms: p.params.keyedMutex.timeoutMs,
    }
}

impl Graph {
    /// Adds a node signalling each semaphore with its value; the graph keeps the
    /// semaphores alive. Untested on these machines (nothing here exports a semaphore).
    #[wraps(cuGraphAddExternalSemaphoresSignalNode)]
    #[track_caller]
    pub fn add_external_semaphores_signal(
        &self,
        deps: &[GraphNode<'_>],
        sems: &[(&Arc<ExternalSemaphore>, SemaphoreValue)],
        flags: ExternalSemaphoreSignalFlags,
    ) -> Result<ExtSemSignalNode<'_>> {
        let d = raw_deps(self, deps)?;
        for (s, _) in sems {
            self.keep(s.as_raw() as usize, || Arc::clone(s))?;
        }
        let (mut raws, mut params) = sem_lists(sems, |v| signal_params(v, flags));
        let p = sys::CUDA_EXT_SEM_SIGNAL_NODE_PARAMS {
            extSemArray: raws.as_mut_ptr(),
            paramsArray: params.as_mut_ptr(),
            numExtSems: count_u32("an external semaphore node", "semaphores", raws.len())?,
        };
        let mut raw = ptr::null_mut();
        check(
            // SAFETY: the graph is live; `p` points to arrays alive for the call (copied);
            // the graph keeps the semaphores.
            unsafe {
                sys::cuGraphAddExternalSemaphoresSignalNode(
                    &mut raw,
                    self.raw,
                    ptr_or_null(&d),
                    d.len(),
                    &p,
                )
            },
            "cuGraphAddExternalSemaphoresSignalNode",
        )?;
        GraphNode { raw, graph: self }.as_external_semaphores_signal()
    }

    /// Adds a node waiting for each semaphore (for at least its value, for fences); the
    /// graph keeps the semaphores alive. Untested on these machines.
    #[wraps(cuGraphAddExternalSemaphoresWaitNode)]
    #[track_caller]
    pub fn add_external_semaphores_wait(
        &self,
        deps: &[GraphNode<'_>],
        sems: &[(&Arc<ExternalSemaphore>, SemaphoreValue)],
        flags: ExternalSemaphoreWaitFlags,
    ) -> Result<ExtSemWaitNode<'_>> {
        let d = raw_deps(self, deps)?;
        for (s, _) in sems {
            self.keep(s.as_raw() as usize, || Arc::clone(s))?;
        }
        let (mut raws, mut params) = sem_lists(sems, |v| wait_params(v, flags));
        let p = sys::CUDA_EXT_SEM_WAIT_NODE_PARAMS {
            extSemArray: raws.as_mut_ptr(),
            paramsArray: params.as_mut_ptr(),
            numExtSems: count_u32("an external semaphore node", "semaphores", raws.len())?,
        };
        let mut raw = ptr::null_mut();
        check(
            // SAFETY: as in add_external_semaphores_signal.
            unsafe {
                sys::cuGraphAddExternalSemaphoresWaitNode(
                    &mut raw,
                    self.raw,
                    ptr_or_null(&d),
                    d.len(),
                    &p,
                )
            },
            "cuGraphAddExternalSemaphoresWaitNode",
        )?;
        GraphNode { raw, graph: self }.as_external_semaphores_wait()
    }

    /// Makes this graph hold one more reference to `obj` (`cuGraphRetainUserObject`); the
    /// graph, its clones and execs made from it keep the object alive. Release it with
    /// [`release_user_object`](Self::release_user_object).
    #[wraps(cuGraphRetainUserObject)]
    #[track_caller]
    pub fn retain_user_object(&self, obj: &UserObject) -> Result<()> {
        check(
            // SAFETY: both are live; takes a new reference (no move).
            unsafe { sys::cuGraphRetainUserObject(self.raw, obj.raw, 1, 0) },
            "cuGraphRetainUserObject",
        )
    }

    /// Drops one reference this graph holds to `obj`.
    ///
    /// # Safety
    /// The graph holds a reference to `obj` taken with
    /// [`retain_user_object`](Self::retain_user_object) and not yet released.
    #[wraps(cuGraphReleaseUserObject)]
    #[track_caller]
    pub unsafe fn release_user_object(&self, obj: &UserObject) -> Result<()> {
        check(
            // SAFETY: the caller's guarantee: the graph holds the reference released.
            unsafe { sys::cuGraphReleaseUserObject(self.raw, obj.raw, 1) },
            "cuGraphReleaseUserObject",
        )
    }
}

impl<'g> ExtSemSignalNode<'g> {
    /// The node's raw semaphores and values.
    #[wraps(cuGraphExternalSemaphoresSignalNodeGetParams)]
    #[track_caller]
    pub fn params(&self) -> Result<Vec<(sys::CUexternalSemaphore, SemaphoreValue)>> {
        // SAFETY: a plain C struct; zero is valid.
        let mut p: sys::CUDA_EXT_SEM_SIGNAL_NODE_PARAMS = unsafe { std::mem::zeroed() };
        check(
            // SAFETY: a live node; writes one struct naming arrays the node owns.
            unsafe { sys::cuGraphExternalSemaphoresSignalNodeGetParams(self.as_raw(), &mut p) },
            "cuGraphExternalSemaphoresSignalNodeGetParams",
        )?;
        // SAFETY: the node's arrays of `numExtSems` elements, copied out at once.
        Ok(unsafe { read_sems(p.extSemArray, p.paramsArray, p.numExtSems, signal_value) })
    }

    /// Replaces the node's semaphores and values; the graph keeps the new semaphores alive.
    #[wraps(cuGraphExternalSemaphoresSignalNodeSetParams)]
    #[track_caller]
    pub fn set(
        &self,
        sems: &[(&Arc<ExternalSemaphore>, SemaphoreValue)],
        flags: ExternalSemaphoreSignalFlags,
    ) -> Result<()> {
        for (s, _) in sems {
            self.graph.keep(s.as_raw() as usize, || Arc::clone(s))?;
        }
        let (mut raws, mut params) = sem_lists(sems, |v| signal_params(v, flags));
        let p = sys::CUDA_EXT_SEM_SIGNAL_NODE_PARAMS {
            extSemArray: raws.as_mut_ptr(),
            paramsArray: params.as_mut_ptr(),
            numExtSems: count_u32("an external semaphore node", "semaphores", raws.len())?,
        };
        check(
            // SAFETY: a live node; `p` points to arrays alive for the call (copied).
            unsafe { sys::cuGraphExternalSemaphoresSignalNodeSetParams(self.as_raw(), &p) },
            "cuGraphExternalSemaphoresSignalNodeSetParams",
        )
    }
}

impl<'g> ExtSemWaitNode<'g> {
    /// The node's raw semaphores and values.
    #[wraps(cuGraphExternalSemaphoresWaitNodeGetParams)]
    #[track_caller]
    pub fn params(&self) -> Result<Vec<(sys::CUexternalSemaphore, SemaphoreValue)>> {
        // SAFETY: a plain C struct; zero is valid.
        let mut p: sys::CUDA_EXT_SEM_WAIT_NODE_PARAMS = unsafe { std::mem::zeroed() };
        check(
            // SAFETY: a live node; writes one struct naming arrays the node owns.
            unsafe { sys::cuGraphExternalSemaphoresWaitNodeGetParams(self.as_raw(), &mut p) },
            "cuGraphExternalSemaphoresWaitNodeGetParams",
        )?;
        // SAFETY: the node's arrays of `numExtSems` elements, copied out at once.
        Ok(unsafe { read_sems(p.extSemArray, p.paramsArray, p.numExtSems, wait_value) })
    }

    /// Replaces the node's semaphores and values; the graph keeps the new semaphores alive.
    #[wraps(cuGraphExternalSemaphoresWaitNodeSetParams)]
    #[track_caller]
    pub fn set(
        &self,
        sems: &[(&Arc<ExternalSemaphore>, SemaphoreValue)],
        flags: ExternalSemaphoreWaitFlags,
    ) -> Result<()> {
        for (s, _) in sems {
            self.graph.keep(s.as_raw() as usize, || Arc::clone(s))?;
        }
        let (mut raws, mut params) = sem_lists(sems, |v| wait_params(v, flags));
        let p = sys::CUDA_EXT_SEM_WAIT_NODE_PARAMS {
            extSemArray: raws.as_mut_ptr(),
            paramsArray: params.as_mut_ptr(),
            numExtSems: count_u32("an external semaphore node", "semaphores", raws.len())?,
        };
        check(
            // SAFETY: a live node; `p` points to arrays alive for the call (copied).
            unsafe { sys::cuGraphExternalSemaphoresWaitNodeSetParams(self.as_raw(), &p) },
            "cuGraphExternalSemaphoresWaitNodeSetParams",
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
        check(
            // SAFETY: a node of the exec's graph; `p` points to `raw_ops`, alive for the call.
            unsafe { sys::cuGraphExecBatchMemOpNodeSetParams(self.as_raw(), node.as_raw(), &p) },
            "cuGraphExecBatchMemOpNodeSetParams",
        )
    }

    /// Replaces a signal node's semaphores and values in this exec only; the exec keeps
    /// them alive.
    #[wraps(cuGraphExecExternalSemaphoresSignalNodeSetParams)]
    #[track_caller]
    pub fn set_external_semaphores_signal_node(
        &mut self,
        node: ExtSemSignalNode<'_>,
        sems: &[(&Arc<ExternalSemaphore>, SemaphoreValue)],
        flags: ExternalSemaphoreSignalFlags,
    ) -> Result<()> {
        let (mut raws, mut params) = sem_lists(sems, |v| signal_params(v, flags));
        let p = sys::CUDA_EXT_SEM_SIGNAL_NODE_PARAMS {
            extSemArray: raws.as_mut_ptr(),
            paramsArray: params.as_mut_ptr(),
            numExtSems: count_u32("an external semaphore node", "semaphores", raws.len())?,
        };
        check(
            // SAFETY: a node of the exec's graph; arrays alive for the call; the exec keeps
            // the semaphores (below).
            unsafe {
                sys::cuGraphExecExternalSemaphoresSignalNodeSetParams(
                    self.as_raw(),
                    node.as_raw(),
                    &p,
                )
            },
            "cuGraphExecExternalSemaphoresSignalNodeSetParams",
        )?;
        for (s, _) in sems {
            self.keep_value(s.as_raw() as usize, || Arc::clone(s));
        }
        Ok(())
    }

    /// Replaces a wait node's semaphores and values in this exec only; the exec keeps them
    /// alive.
    #[wraps(cuGraphExecExternalSemaphoresWaitNodeSetParams)]
    #[track_caller]
    pub fn set_external_semaphores_wait_node(
        &mut self,
        node: ExtSemWaitNode<'_>,
        sems: &[(&Arc<ExternalSemaphore>, SemaphoreValue)],
        flags: ExternalSemaphoreWaitFlags,
    ) -> Result<()> {
        let (mut raws, mut params) = sem_lists(sems, |v| wait_params(v, flags));
        let p = sys::CUDA_EXT_SEM_WAIT_NODE_PARAMS {
            extSemArray: raws.as_mut_ptr(),
            paramsArray: params.as_mut_ptr(),
            numExtSems: count_u32("an external semaphore node", "semaphores", raws.len())?,
        };
        check(
            // SAFETY: as in set_external_semaphores_signal_node.
            unsafe {
                sys::cuGraphExecExternalSemaphoresWaitNodeSetParams(
                    self.as_raw(),
                    node.as_raw(),
                    &p,
                )
            },
            "cuGraphExecExternalSemaphoresWaitNodeSetParams",
        )?;
        for (s, _) in sems {
            self.keep_value(s.as_raw() as usize, || Arc::clone(s));
        }
        Ok(())
    }

    /// Sets a node's parameters in this exec only from a raw `CUgraphNodeParams` (CUDA
    /// 12.2).
    ///
    /// # Safety
    /// As for [`GraphNode::set_params_raw`]; `node` belongs to the graph the exec was made
    /// from.
    #[wraps(cuGraphExecNodeSetParams)]
    #[track_caller]
    pub unsafe fn set_node_params_raw(
        &mut self,
        node: GraphNode<'_>,
        params: &mut sys::CUgraphNodeParams,
    ) -> Result<()> {
        let f = newer::cuGraphExecNodeSetParams()?;
        check(
            // SAFETY: the caller's guarantees.
            unsafe { f(self.as_raw(), node.as_raw(), params) },
            "cuGraphExecNodeSetParams",
        )
    }
}

/// A CUDA user object (`CUuserObject`): a Rust value with a reference count the driver
/// shares with graphs, dropped (on a driver thread, under the host-function rules: crate
/// calls refused, CUDA objects released on the release thread, panics caught) when the last
/// reference, this handle's or a graph's, is gone. Cloning takes a new reference
/// (`cuUserObjectRetain`); dropping releases one (`cuUserObjectRelease`).
#[wraps(CUuserObject)]
pub struct UserObject {
    raw: sys::CUuserObject,
}

// SAFETY: user object references may be taken and dropped from any thread; the value is
// Send + Sync.
unsafe impl Send for UserObject {}
// SAFETY: as above.
unsafe impl Sync for UserObject {}

impl std::fmt::Debug for UserObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("UserObject").field(&self.raw).finish()
    }
}

extern "C" fn user_object_drop<T: Send + Sync + 'static>(data: *mut c_void) {
    run_host_fn(|| {
        // SAFETY: `data` is the Box<T> leaked by UserObject::new; the driver calls the
        // destructor once, after the last reference is gone.
        drop(unsafe { Box::from_raw(data.cast::<T>()) });
    });
}

impl UserObject {
    /// Moves `value` into a new user object holding one reference (this handle's).
    #[wraps(cuUserObjectCreate)]
    #[track_caller]
    pub fn new<T: Send + Sync + 'static>(value: T) -> Result<UserObject> {
        crate::init()?;
        let data = Box::into_raw(Box::new(value));
        let mut raw = ptr::null_mut();
        // SAFETY: `data` is a live Box<T>; the destructor takes it back once.
        let r = unsafe {
            sys::cuUserObjectCreate(
                &mut raw,
                data.cast(),
                Some(user_object_drop::<T>),
                1,
                UserObjectFlags::NO_DESTRUCTOR_SYNC.as_raw(),
            )
        };
        if r != sys::CUDA_SUCCESS {
            // SAFETY: no user object owns the box: it is still ours.
            drop(unsafe { Box::from_raw(data) });
        }
        check(r, "cuUserObjectCreate")?;
        Ok(UserObject { raw })
    }

    /// The raw `CUuserObject`, valid while `self` lives.
    pub fn as_raw(&self) -> sys::CUuserObject {
        self.raw
    }

    /// Takes ownership of one reference to a raw user object.
    ///
    /// # Safety
    /// The caller owns one reference to the live object `raw`, which moves into the value.
    pub unsafe fn from_raw(raw: sys::CUuserObject) -> UserObject {
        UserObject { raw }
    }

    /// Gives up this handle's reference without releasing it.
    pub fn into_raw(self) -> sys::CUuserObject {
        std::mem::ManuallyDrop::new(self).raw
    }

    /// A new handle with its own reference.
    #[wraps(cuUserObjectRetain)]
    #[track_caller]
    pub fn try_clone(&self) -> Result<UserObject> {
        check(
            // SAFETY: the object is alive (self holds a reference); takes one more.
            unsafe { sys::cuUserObjectRetain(self.raw, 1) },
            "cuUserObjectRetain",
        )?;
        Ok(UserObject { raw: self.raw })
    }
}

impl Drop for UserObject {
    fn drop(&mut self) {
        let raw = crate::release::SendRaw(self.raw);
        crate::release::release(move || {
            // SAFETY: releases the one reference this handle owns; the destructor runs on a
            // driver thread once the last reference is gone.
            let r = unsafe { sys::cuUserObjectRelease(raw.get(), 1) };
            crate::error::report_drop_error("cuUserObjectRelease", r);
        });
    }
}
