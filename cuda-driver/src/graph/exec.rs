//! Executable graphs: instantiate, launch, upload, update.

use std::any::Any;
use std::cell::RefCell;
use std::ptr;
use std::sync::Arc;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use super::nodes::{memcpy_params, node_params, MemsetParams, NodeKernel};
use super::{
    ChildGraphNode, EventRecordNode, EventWaitNode, Graph, GraphNode, HostNode, KernelNode,
    MemcpyNode, MemsetNode,
};
use crate::context::Context;
use crate::entry_point::newer;
use crate::error::graph::GraphError;
use crate::error::{report_drop_error, Error, Result};
use crate::event::Event;
use crate::handle::{give_up, Handle, OwnedHandle};
use crate::launch::{KernelArgs, LaunchConfig};
use crate::memory::{DeviceSlice, DeviceSliceMut};
use crate::module::function::Function;
use crate::params::KernelParams;
use crate::release::{release, SendRaw};
use crate::repr::DeviceRepr;
use crate::stream::Stream;
use crate::types::{GraphExecUpdateResult, GraphInstantiateFlags, GraphInstantiateResult};

/// The flags an executable graph was instantiated with (`cuGraphExecGetFlags`).
pub type GraphExecFlags = GraphInstantiateFlags;

/// Options of [`Graph::instantiate_with`] (`CUDA_GRAPH_INSTANTIATE_PARAMS`).
#[doc(alias = "CUDA_GRAPH_INSTANTIATE_PARAMS")]
#[derive(Clone, Copy, Debug, Default)]
pub struct InstantiateOptions<'s> {
    /// Instantiation flags.
    pub flags: GraphInstantiateFlags,
    /// The stream the upload of [`GraphInstantiateFlags::UPLOAD`] is queued on.
    pub upload_stream: Option<&'s Stream>,
}

/// An executable graph (`CUgraphExec`), destroyed on drop: a graph instantiated to launch.
///
/// It keeps alive what its nodes use (see [`Graph`](Graph#what-keeps-what-alive)): the user objects of its
/// graph, held by the driver, and the values of per-node updates, held here; an exec holding
/// such values synchronizes the contexts it was launched in before it is destroyed, so that no
/// launch still uses them; where that synchronization fails (a stream of the context being
/// captured meanwhile, a sticky error), the values are leaked, never freed early. `Send`, not `Sync` (the driver does not synchronize concurrent use
/// of one exec); launches of one exec are ordered by the driver.
#[doc(alias = "CUgraphExec")]
pub struct GraphExec {
    raw: sys::CUgraphExec,
    /// Values of per-node updates (functions, closures, events), kept until destruction.
    /// Keyed by raw handle (0: a closure, never deduplicated).
    kept: Vec<(usize, Box<dyn Any + Send + Sync>)>,
    /// Contexts the exec was launched in (to synchronize before releasing `kept`).
    launched: RefCell<Vec<Context>>,
    /// What its launches allocate and free (graph memory nodes), if anything.
    pub(super) memory: Option<Box<super::exec_memory::ExecMemory>>,
    /// Adopted through `from_raw`: its memory nodes are unknown.
    pub(super) adopted: bool,
    /// The last checked kernel-node update through a [`Function`] (see `set_kernel_node`).
    last_update: UpdateMemo,
}

/// What a checked kernel-node update established: that arguments of the sizes `sizes`
/// (`KernelArgs::SIZES`, by address and length) fit the parameters of `func`, whose context is
/// `ctx`, and that `func` is in the exec's `kept`. `kept` holds the function (and so its
/// module and context) until the exec is destroyed, so `func` names the same kernel for as
/// long as the memo lives, and a repeated update with equal fields needs neither the check
/// nor the lookup again. Two argument lists with equal sizes pass the same check, so equal
/// addresses and lengths of `SIZES` (even of different argument types) give the same answer.
#[derive(Clone, Copy)]
struct UpdateMemo {
    func: sys::CUfunction,
    sizes: *const usize,
    len: usize,
    ctx: sys::CUcontext,
}

impl UpdateMemo {
    const NONE: UpdateMemo = UpdateMemo {
        func: ptr::null_mut(),
        sizes: ptr::null(),
        len: 0,
        ctx: ptr::null_mut(),
    };
}

// SAFETY: a CUgraphExec may be used from any thread, one at a time (not Sync); destroyed once.
unsafe impl Send for GraphExec {}

impl std::fmt::Debug for GraphExec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphExec").field("raw", &self.raw).finish()
    }
}

impl Drop for GraphExec {
    fn drop(&mut self) {
        let raw = SendRaw(self.raw);
        let kept = std::mem::take(&mut self.kept);
        let launched = std::mem::take(self.launched.get_mut());
        release(move || {
            // Launches may still run closures or kernels that only `kept` holds: wait for
            // them. Where that fails (a context that cannot be entered, a synchronization
            // refused because a stream of the context is being captured, a sticky error),
            // `kept` is leaked rather than freed under a launch that may still use it.
            let mut all_done = true;
            if !kept.is_empty() {
                for ctx in &launched {
                    all_done &= match ctx.enter_for_drop() {
                        Some(_cur) => {
                            // SAFETY: the context is current; waits for its work.
                            let r = unsafe { sys::cuCtxSynchronize() };
                            report_drop_error("cuCtxSynchronize", r);
                            r == sys::CUDA_SUCCESS
                        }
                        None => false,
                    };
                }
            }
            // SAFETY: created by cuGraphInstantiate* and owned by self; in-flight launches
            // complete before the driver frees it.
            report_drop_error("cuGraphExecDestroy", unsafe {
                sys::cuGraphExecDestroy(raw.get())
            });
            if all_done {
                // The closures' captures are user code: a panicking Drop among them is
                // caught and counted, never unwound out of this Drop.
                crate::stream::drop_kept(kept);
            } else {
                std::mem::forget(kept);
            }
            drop(launched);
        });
    }
}

impl Graph {
    /// Instantiates the graph into an executable graph.
    #[wraps(cuGraphInstantiateWithFlags)]
    #[track_caller]
    pub fn instantiate(&self, flags: GraphInstantiateFlags) -> Result<GraphExec> {
        // Instantiation happens in the current context (the caller's, else device 0's
        // primary context for the span of the call).
        let _cur = crate::context::AnyCurrent::enter()?;
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: the graph is live; writes one handle, wrapped in the next statement.
            unsafe { sys::cuGraphInstantiateWithFlags(&mut raw, self.raw, flags.as_raw() as _) },
        )?;
        // SAFETY: just created.
        let mut exec = unsafe { GraphExec::from_raw(raw, ()) };
        exec.memory = self.exec_memory(flags)?.map(Box::new);
        exec.adopted = false;
        Ok(exec)
    }

    /// Instantiates the graph with parameters (flags, an upload stream);
    /// [`GraphError::Instantiate`] says why the driver refused.
    #[wraps(cuGraphInstantiateWithParams)]
    #[track_caller]
    pub fn instantiate_with(&self, options: &InstantiateOptions<'_>) -> Result<GraphExec> {
        let _cur = match options.upload_stream {
            Some(s) => Some(s.context().enter()?),
            None => None,
        };
        let _any = crate::context::AnyCurrent::enter()?;
        let mut p = sys::CUDA_GRAPH_INSTANTIATE_PARAMS {
            flags: options.flags.as_raw() as _,
            hUploadStream: options
                .upload_stream
                .map_or(ptr::null_mut(), |s| s.as_raw()),
            hErrNode_out: ptr::null_mut(),
            result_out: sys::CUDA_GRAPH_INSTANTIATE_SUCCESS,
        };
        let mut raw = ptr::null_mut();
        // SAFETY: the graph is live; `p` is valid and receives the result.
        let r = call!(unsafe { sys::cuGraphInstantiateWithParams(&mut raw, self.raw, &mut p) });
        if r.is_err() && p.result_out != sys::CUDA_GRAPH_INSTANTIATE_SUCCESS {
            return Err(Error::Graph(GraphError::Instantiate {
                reason: GraphInstantiateResult::from_raw(p.result_out),
                node: p.hErrNode_out as usize,
            }));
        }
        r?;
        // SAFETY: just created.
        let mut exec = unsafe { GraphExec::from_raw(raw, ()) };
        exec.memory = self.exec_memory(options.flags)?.map(Box::new);
        exec.adopted = false;
        Ok(exec)
    }
}

impl Handle for GraphExec {
    type Raw = sys::CUgraphExec;

    /// The raw `CUgraphExec`, valid while `self` lives.
    #[inline]
    fn as_raw(&self) -> sys::CUgraphExec {
        self.raw
    }
}

impl OwnedHandle for GraphExec {
    type Parent<'p> = ();

    /// Takes ownership of an executable graph; destroyed on drop.
    ///
    /// # Safety
    /// `raw` is a live executable graph that nothing else destroys.
    unsafe fn from_raw(raw: sys::CUgraphExec, (): ()) -> GraphExec {
        GraphExec {
            raw,
            kept: Vec::new(),
            launched: RefCell::new(Vec::new()),
            memory: None,
            adopted: true,
            last_update: UpdateMemo::NONE,
        }
    }

    /// Gives up ownership: the caller destroys the exec. What per-node updates made it use
    /// (functions, closures, events) is leaked, since the raw exec may run it at any later
    /// time.
    fn into_raw(self) -> sys::CUgraphExec {
        give_up!(self, raw; drop(launched, memory); forget(kept, adopted, last_update))
    }
}

impl GraphExec {
    #[inline]
    fn note_launch(&self, stream: &Stream) {
        let ctx = stream.context();
        let mut l = self.launched.borrow_mut();
        if !l.iter().any(|c| c.as_raw() == ctx.as_raw()) {
            l.push(ctx.clone());
        }
    }

    /// Launches the graph on `stream`; launches of one exec run one after another.
    ///
    /// Memory the launch allocates and does not free is not handed out (the exec cannot be
    /// launched again until it is freed, unless instantiated with
    /// [`GraphInstantiateFlags::AUTO_FREE_ON_LAUNCH`]): see
    /// [`launch_with_memory`](Self::launch_with_memory). A graph that frees another graph's
    /// allocation is launched only by `launch_with_memory`, which takes that memory's owner
    /// ([`Error::InvalidArgument`] here).
    #[wraps(cuGraphLaunch)]
    #[inline]
    #[track_caller]
    pub fn launch(&self, stream: &Stream) -> Result<()> {
        if let Some(m) = &self.memory {
            if !m.foreign.is_empty() {
                return Err(Error::InvalidArgument(
                    "GraphExec::launch: the graph frees memory of another graph's launch; \
                     launch it with launch_with_memory, giving that memory's owner"
                        .into(),
                ));
            }
            m.before_launch("GraphExec::launch", stream)?;
        }
        self.launch_unchecked(stream)
    }

    /// `cuGraphLaunch`, without the memory checks of `launch`.
    #[inline]
    #[track_caller]
    pub(super) fn launch_unchecked(&self, stream: &Stream) -> Result<()> {
        let _cur = stream.context().enter()?;
        self.note_launch(stream);
        call!(
            // SAFETY: exec and stream are live; everything the nodes use is kept alive.
            unsafe { sys::cuGraphLaunch(self.raw, stream.as_raw()) },
        )
    }

    /// Uploads the graph to the device on `stream` ahead of its first launch.
    #[wraps(cuGraphUpload)]
    #[track_caller]
    pub fn upload(&self, stream: &Stream) -> Result<()> {
        let _cur = stream.context().enter()?;
        call!(
            // SAFETY: exec and stream are live.
            unsafe { sys::cuGraphUpload(self.raw, stream.as_raw()) },
        )
    }

    /// The flags the exec was instantiated with.
    #[wraps(cuGraphExecGetFlags)]
    #[track_caller]
    pub fn flags(&self) -> Result<GraphExecFlags> {
        let mut f = 0;
        call!(
            // SAFETY: the exec is live; writes one value.
            unsafe { sys::cuGraphExecGetFlags(self.raw, &mut f) },
        )?;
        Ok(GraphInstantiateFlags::from_raw(f as _))
    }

    /// Updates the exec to run `graph`, which must have the exec's topology; the refusal is
    /// [`GraphError::Update`], naming the reason and the node. The exec then holds `graph`'s
    /// keep-alives (the driver clones its user object references). Refused
    /// ([`Error::InvalidArgument`]) while memory a launch of the exec left allocated is owned
    /// ([`GraphMemory`](crate::graph::GraphMemory)).
    #[wraps(cuGraphExecUpdate)]
    #[track_caller]
    pub fn update(&mut self, graph: &Graph) -> Result<()> {
        // Memory a launch left allocated stays counted against the graph that made it: no
        // update while it is owned (the updated exec's next launch would not see the owner).
        if let Some(m) = &self.memory {
            m.check_unowned("GraphExec::update")?;
        }
        let mut info = sys::CUgraphExecUpdateResultInfo {
            result: sys::CU_GRAPH_EXEC_UPDATE_SUCCESS,
            errorNode: ptr::null_mut(),
            errorFromNode: ptr::null_mut(),
        };
        // SAFETY: exec and graph are live; writes the result info.
        let r = call!(unsafe { sys::cuGraphExecUpdate_v2(self.raw, graph.as_raw(), &mut info) });
        if r.is_err() && info.result != sys::CU_GRAPH_EXEC_UPDATE_SUCCESS {
            return Err(Error::Graph(GraphError::Update {
                reason: GraphExecUpdateResult::from_raw(info.result),
                node: info.errorNode as usize,
                from_node: info.errorFromNode as usize,
            }));
        }
        r?;
        // The exec runs `graph` now: its memory nodes are the ones that count.
        if !self.adopted {
            let auto_free = self.memory.as_ref().is_some_and(|m| m.auto_free);
            let flags = if auto_free {
                GraphInstantiateFlags::AUTO_FREE_ON_LAUNCH
            } else {
                GraphInstantiateFlags::empty()
            };
            self.memory = graph.exec_memory(flags)?.map(Box::new);
        }
        Ok(())
    }

    /// Changes a kernel node's function, configuration and arguments in this exec only,
    /// checked as in [`Graph::add_kernel`]; the exec keeps `f`'s module loaded.
    ///
    /// # Safety
    /// As for [`Graph::add_kernel`].
    #[wraps(cuGraphExecKernelNodeSetParams)]
    #[inline]
    #[track_caller]
    pub unsafe fn set_kernel_node<A: KernelArgs>(
        &mut self,
        node: KernelNode<'_>,
        f: &Function,
        cfg: &LaunchConfig,
        args: A,
    ) -> Result<()> {
        let mut ptrs = args.pointers();
        let memo = self.last_update;
        if memo.func != f.as_raw() || memo.sizes != A::SIZES.as_ptr() || memo.len != A::SIZES.len()
        {
            self.first_update::<A>(f)?;
        }
        let p = node_params(f.as_raw(), cfg, ptrs.as_mut());
        // The driver needs a current context here even though the parameters name the
        // function: on driver 580 (H100) both this call and cuGraphExecNodeSetParams end the
        // process with SIGSEGV when no context is current, and succeed with any context
        // current. Entering the function's context costs one cuCtxGetCurrent when it is.
        let _cur = f.context().enter_raw(self.last_update.ctx)?;
        call!(
            // SAFETY: a kernel node of the exec's graph; parameters checked for `f` and
            // arguments of these sizes (now or by the update the memo records).
            unsafe { sys::cuGraphExecKernelNodeSetParams_v2(self.raw, node.as_raw(), &p) },
        )
    }

    /// The checks of a kernel-node update through `f` with arguments `A` that the memo does
    /// not cover: the arguments against `f`'s parameters; then `f` is kept and the memo set.
    #[cold]
    #[inline(never)]
    #[track_caller]
    fn first_update<A: KernelArgs>(&mut self, f: &Function) -> Result<()> {
        f.check_args(A::SIZES)?;
        self.keep_value(f.key(), || f.clone());
        self.last_update = UpdateMemo {
            func: f.as_raw(),
            sizes: A::SIZES.as_ptr(),
            len: A::SIZES.len(),
            ctx: f.context().as_raw(),
        };
        Ok(())
    }

    /// Changes a memcpy node's copy in this exec only.
    ///
    /// # Safety
    /// As for [`Graph::add_memcpy`].
    #[wraps(cuGraphExecMemcpyNodeSetParams)]
    #[track_caller]
    pub unsafe fn set_memcpy_node<T: DeviceRepr>(
        &mut self,
        node: MemcpyNode<'_>,
        dst: &DeviceSliceMut<'_, T>,
        src: &DeviceSlice<'_, T>,
    ) -> Result<()> {
        crate::memory::view::check_len("memcpy node", dst.len(), src.len())?;
        let bytes = crate::memory::view::byte_len::<T>("memcpy node", dst.len())?;
        let p = memcpy_params(dst.as_raw(), src.as_raw(), bytes);
        // SAFETY: a one-dimensional copy of checked length; the caller guarantees the memory.
        unsafe { self.set_memcpy_raw(node, &p, dst.context()) }
    }

    /// Changes a memcpy node's copy in this exec only, to a copy checked as
    /// [`Graph::add_copy_2d`] checks it. CUDA updates only one-dimensional copies (one row,
    /// no array operand) in a node that copied one dimension too, between memory of the same
    /// contexts: another copy is [`Error::InvalidArgument`] before the driver is asked.
    ///
    /// # Safety
    /// As for [`Graph::add_copy_2d`].
    #[wraps(cuGraphExecMemcpyNodeSetParams)]
    #[track_caller]
    pub unsafe fn set_copy_node_2d<T: DeviceRepr>(
        &mut self,
        node: MemcpyNode<'_>,
        copy: crate::memory::copy::Copy2D<'_, T>,
    ) -> Result<()> {
        let p = copy.node_params("GraphExec::set_copy_node_2d")?;
        // SAFETY: the caller's guarantees; checked parameters.
        unsafe { self.set_memcpy_raw(node, &p.raw, p.ctx) }
    }

    /// Changes a memcpy node's copy in this exec only, to a copy given as a 3D one (see
    /// [`Graph::add_copy_3d`]), with the restrictions of
    /// [`set_copy_node_2d`](Self::set_copy_node_2d).
    ///
    /// # Safety
    /// As for [`Graph::add_copy_3d`].
    #[wraps(cuGraphExecMemcpyNodeSetParams)]
    #[track_caller]
    pub unsafe fn set_copy_node_3d<T: DeviceRepr>(
        &mut self,
        node: MemcpyNode<'_>,
        copy: crate::memory::copy::Copy3D<'_, T>,
    ) -> Result<()> {
        let p = copy.node_params("GraphExec::set_copy_node_3d")?;
        // SAFETY: the caller's guarantees; checked parameters.
        unsafe { self.set_memcpy_raw(node, &p.raw, p.ctx) }
    }

    /// # Safety
    /// `p` is a checked copy in `ctx` whose memory the caller keeps valid.
    #[track_caller]
    unsafe fn set_memcpy_raw(
        &mut self,
        node: MemcpyNode<'_>,
        p: &sys::CUDA_MEMCPY3D,
        ctx: &Context,
    ) -> Result<()> {
        let one_dimensional = p.Height == 1
            && p.Depth == 1
            && p.srcMemoryType != sys::CU_MEMORYTYPE_ARRAY
            && p.dstMemoryType != sys::CU_MEMORYTYPE_ARRAY;
        if !one_dimensional {
            return Err(Error::InvalidArgument(
                "GraphExec::set_copy_node: an executable graph's memcpy node takes only \
                 one-dimensional copies (one row, no array)"
                    .into(),
            ));
        }
        let _cur = ctx.enter()?;
        call!(
            // SAFETY: a memcpy node of the exec's graph; checked parameters.
            unsafe {
                sys::cuGraphExecMemcpyNodeSetParams(self.raw, node.as_raw(), p, ctx.as_raw())
            },
        )
    }

    /// Changes a memset node's parameters in this exec only.
    ///
    /// # Safety
    /// As for [`Graph::add_memset`], for the memory `params` describe.
    #[wraps(cuGraphExecMemsetNodeSetParams)]
    #[track_caller]
    pub unsafe fn set_memset_node(
        &mut self,
        node: MemsetNode<'_>,
        ctx: &Context,
        params: MemsetParams,
    ) -> Result<()> {
        let p = sys::CUDA_MEMSET_NODE_PARAMS {
            dst: params.dst,
            pitch: params.pitch,
            value: params.value,
            elementSize: params.element_size,
            width: params.width,
            height: params.height,
        };
        let _cur = ctx.enter()?;
        call!(
            // SAFETY: a memset node of the exec's graph; the caller guarantees the memory.
            unsafe {
                sys::cuGraphExecMemsetNodeSetParams(self.raw, node.as_raw(), &p, ctx.as_raw())
            },
        )
    }

    /// Replaces a host node's closure in this exec only; the exec keeps it alive.
    #[wraps(cuGraphExecHostNodeSetParams)]
    #[track_caller]
    pub fn set_host_node<F: Fn() + Send + Sync + 'static>(
        &mut self,
        node: HostNode<'_>,
        f: F,
    ) -> Result<()> {
        crate::init()?;
        if crate::release::in_host_fn() {
            return Err(Error::InHostCallback {
                location: std::panic::Location::caller(),
            });
        }
        let boxed: Box<F> = Box::new(f);
        let data: *const F = &*boxed;
        let p = sys::CUDA_HOST_NODE_PARAMS {
            fn_: Some(crate::stream::shared_host_fn_trampoline::<F>),
            userData: data.cast_mut().cast(),
        };
        call!(
            // SAFETY: a host node of the exec's graph; the closure is kept in `self.kept`
            // (a Box: its address is stable) until the exec is destroyed after its launches.
            unsafe { sys::cuGraphExecHostNodeSetParams(self.raw, node.as_raw(), &p) },
        )?;
        self.kept.push((0, boxed));
        Ok(())
    }

    /// Replaces a child graph node's graph in this exec only (same topology); the exec holds
    /// the new graph's keep-alives.
    #[wraps(cuGraphExecChildGraphNodeSetParams)]
    #[track_caller]
    pub fn set_child_graph_node(&mut self, node: ChildGraphNode<'_>, child: &Graph) -> Result<()> {
        call!(
            // SAFETY: a child graph node of the exec's graph; the driver clones `child`
            // (with its user object references; GPU test
            // graph::exec::exec_child_graph_update_runs_the_new_child drops the new child after
            // the update, then launches).
            unsafe {
                sys::cuGraphExecChildGraphNodeSetParams(self.raw, node.as_raw(), child.as_raw())
            },
        )
    }

    /// Makes an event record node record `event` in this exec only; the exec keeps it alive.
    #[wraps(cuGraphExecEventRecordNodeSetEvent)]
    #[track_caller]
    pub fn set_event_record_node(
        &mut self,
        node: EventRecordNode<'_>,
        event: &Arc<Event>,
    ) -> Result<()> {
        let _cur = event.context().enter()?;
        call!(
            // SAFETY: an event record node of the exec's graph; the exec keeps the event.
            unsafe {
                sys::cuGraphExecEventRecordNodeSetEvent(self.raw, node.as_raw(), event.as_raw())
            },
        )?;
        self.keep_value(event.as_raw() as usize, || event.clone());
        Ok(())
    }

    /// Makes an event wait node wait for `event` in this exec only; the exec keeps it alive.
    #[wraps(cuGraphExecEventWaitNodeSetEvent)]
    #[track_caller]
    pub fn set_event_wait_node(
        &mut self,
        node: EventWaitNode<'_>,
        event: &Arc<Event>,
    ) -> Result<()> {
        let _cur = event.context().enter()?;
        call!(
            // SAFETY: an event wait node of the exec's graph; the exec keeps the event.
            unsafe {
                sys::cuGraphExecEventWaitNodeSetEvent(self.raw, node.as_raw(), event.as_raw())
            },
        )?;
        self.keep_value(event.as_raw() as usize, || event.clone());
        Ok(())
    }

    /// Enables or disables a node (kernel, memcpy, memset) in this exec; a disabled node
    /// runs as an empty node.
    #[wraps(cuGraphNodeSetEnabled)]
    #[track_caller]
    pub fn set_node_enabled(&mut self, node: GraphNode<'_>, enabled: bool) -> Result<()> {
        call!(
            // SAFETY: a node of the exec's graph.
            unsafe { sys::cuGraphNodeSetEnabled(self.raw, node.as_raw(), enabled as u32) },
        )
    }

    /// Whether a node is enabled in this exec.
    #[wraps(cuGraphNodeGetEnabled)]
    #[track_caller]
    pub fn node_enabled(&self, node: GraphNode<'_>) -> Result<bool> {
        let mut v = 0;
        call!(
            // SAFETY: a node of the exec's graph; writes one value.
            unsafe { sys::cuGraphNodeGetEnabled(self.raw, node.as_raw(), &mut v) },
        )?;
        Ok(v != 0)
    }

    /// Keeps `value()` until the exec is destroyed, once per `key` (a raw handle).
    #[inline]
    pub(super) fn keep_value<T: Send + Sync + 'static>(
        &mut self,
        key: usize,
        value: impl FnOnce() -> T,
    ) {
        if !self.kept.iter().any(|(k, _)| *k == key) {
            self.keep_new(key, Box::new(value()));
        }
    }

    #[cold]
    #[inline(never)]
    fn keep_new(&mut self, key: usize, value: Box<dyn Any + Send + Sync>) {
        self.kept.push((key, value));
    }
}

// `NodeKernel::key` is used above through `f.key()`.
#[allow(unused_imports)]
use NodeKernel as _;

impl GraphExec {
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
        call!(
            // SAFETY: the caller's guarantees.
            unsafe { newer::cuGraphExecNodeSetParams()?(self.as_raw(), node.as_raw(), params) },
        )
    }
}
