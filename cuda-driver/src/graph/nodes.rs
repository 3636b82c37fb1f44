//! Graph nodes of every kind: adding them to a [`Graph`], their typed handles and parameters.

use std::ffi::c_void;
use std::ops::Deref;
use std::ptr;
use std::sync::Arc;

use cuda_driver_macros::wraps;
use cuda_driver_sys as sys;

use super::{ptr_or_null, raw_deps, Graph, GraphNode, GraphRef};
use crate::count::count_u32;
use crate::entry_point::newer;
use crate::error::{check, Error, Result};
use crate::launch::{KernelArgs, LaunchConfig};
use crate::memory::{DeviceSlice, DeviceSliceMut, MemsetValue};
use crate::params::KernelParams;
use crate::repr::DeviceRepr;
use crate::stream::shared_host_fn_trampoline;
use crate::types::{GraphConditionalNodeType, GraphNodeType, StreamBatchMemOpType};
use crate::{Context, Device, Event, Function, Kernel};

macro_rules! node_kind {
    ($(#[$m:meta])* $name:ident, $kind:ident, $as:ident) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name<'g>(GraphNode<'g>);

        impl<'g> Deref for $name<'g> {
            type Target = GraphNode<'g>;
            #[inline]
            fn deref(&self) -> &GraphNode<'g> {
                &self.0
            }
        }

        impl<'g> From<$name<'g>> for GraphNode<'g> {
            fn from(n: $name<'g>) -> GraphNode<'g> {
                n.0
            }
        }

        impl<'g> GraphNode<'g> {
            #[doc = concat!("This node as a [`", stringify!($name), "`], or [`Error::NodeKind`] when it is of another type.")]
            #[track_caller]
            pub fn $as(self) -> Result<$name<'g>> {
                self.expect(stringify!($as), GraphNodeType::$kind)?;
                Ok($name(self))
            }
        }
    };
}

node_kind!(
    /// A kernel node ([`Graph::add_kernel`]).
    KernelNode, KERNEL, as_kernel
);
node_kind!(
    /// A linear memcpy node ([`Graph::add_memcpy`]).
    MemcpyNode, MEMCPY, as_memcpy
);
node_kind!(
    /// A memset node ([`Graph::add_memset`]).
    MemsetNode, MEMSET, as_memset
);
node_kind!(
    /// A host node ([`Graph::add_host`]).
    HostNode, HOST, as_host
);
node_kind!(
    /// A child graph node ([`Graph::add_child_graph`]).
    ChildGraphNode, GRAPH, as_child_graph
);
node_kind!(
    /// An event record node ([`Graph::add_event_record`]).
    EventRecordNode, EVENT_RECORD, as_event_record
);
node_kind!(
    /// An event wait node ([`Graph::add_event_wait`]).
    EventWaitNode, WAIT_EVENT, as_event_wait
);
node_kind!(
    /// A memory allocation node ([`Graph::add_mem_alloc`]).
    MemAllocNode, MEM_ALLOC, as_mem_alloc
);
node_kind!(
    /// A memory free node ([`Graph::add_mem_free`]).
    MemFreeNode, MEM_FREE, as_mem_free
);
node_kind!(
    /// A batch memory operation node ([`Graph::add_batch_mem_op`]).
    BatchMemOpNode, BATCH_MEM_OP, as_batch_mem_op
);
node_kind!(
    /// An external-semaphore signal node ([`Graph::add_external_semaphores_signal`]).
    ExtSemSignalNode, EXT_SEMAS_SIGNAL, as_external_semaphores_signal
);
node_kind!(
    /// An external-semaphore wait node ([`Graph::add_external_semaphores_wait`]).
    ExtSemWaitNode, EXT_SEMAS_WAIT, as_external_semaphores_wait
);
/// A conditional node ([`Graph::add_conditional`]) with its body graphs. Derefs to its
/// [`GraphNode`].
#[doc(alias = "CUDA_CONDITIONAL_NODE_PARAMS")]
#[derive(Debug)]
pub struct ConditionalNode<'g> {
    node: GraphNode<'g>,
    bodies: Vec<sys::CUgraph>,
}

impl<'g> Deref for ConditionalNode<'g> {
    type Target = GraphNode<'g>;
    #[inline]
    fn deref(&self) -> &GraphNode<'g> {
        &self.node
    }
}

impl<'g> ConditionalNode<'g> {
    /// How many body graphs the node has.
    pub fn body_count(&self) -> usize {
        self.bodies.len()
    }

    /// The `i`-th body graph, owned by the node, to add nodes to (for an if node, body 0 runs
    /// when the condition is non-zero and body 1, if any, when it is zero; for a switch node,
    /// body `n` runs when the condition is `n`). Keep-alives of nodes added to a body go to
    /// the node's graph, which runs the body.
    #[track_caller]
    pub fn body(&self, i: usize) -> Result<GraphRef<'g>> {
        match self.bodies.get(i) {
            // SAFETY: a body graph owned by the node, alive as long as the node's graph, which
            // is borrowed for 'g; that graph runs the body, so it may hold the keep-alives.
            Some(&raw) => Ok(unsafe { GraphRef::with_retain(raw, self.node.graph.retain) }),
            None => Err(Error::OutOfBounds {
                start: i,
                end: i + 1,
                len: self.bodies.len(),
            }),
        }
    }
}

/// What a kernel node needs from a [`Function`] or a [`Kernel`].
pub(crate) trait NodeKernel: KernelParams + Clone + Send + Sync + 'static {
    /// Fills `func`/`kern`/`ctx` of the node parameters; checks the context for a Function.
    fn fill(&self, p: &mut sys::CUDA_KERNEL_NODE_PARAMS, ctx: &Context) -> Result<()>;
    fn key(&self) -> usize;
}

impl NodeKernel for Function {
    fn fill(&self, p: &mut sys::CUDA_KERNEL_NODE_PARAMS, ctx: &Context) -> Result<()> {
        if self.context().as_raw() != ctx.as_raw() {
            return Err(Error::ContextMismatch {
                what: "kernel node",
                expected: self.context().as_raw() as usize,
                found: ctx.as_raw() as usize,
            });
        }
        p.func = self.as_raw();
        Ok(())
    }
    fn key(&self) -> usize {
        self.as_raw() as usize
    }
}

impl NodeKernel for Kernel {
    fn fill(&self, p: &mut sys::CUDA_KERNEL_NODE_PARAMS, ctx: &Context) -> Result<()> {
        p.func = ptr::null_mut();
        p.kern = self.as_raw();
        p.ctx = ctx.as_raw();
        Ok(())
    }
    fn key(&self) -> usize {
        self.as_raw() as usize
    }
}

/// Checked kernel node parameters for `k` with `args`, whose pointers live in `ptrs`.
#[inline]
#[track_caller]
pub(crate) fn kernel_params<K: NodeKernel, A: KernelArgs>(
    k: &K,
    ctx: &Context,
    cfg: &LaunchConfig,
    ptrs: &mut [*mut c_void],
) -> Result<sys::CUDA_KERNEL_NODE_PARAMS> {
    k.check_args(A::SIZES)?;
    // SAFETY: an all-zero CUDA_KERNEL_NODE_PARAMS is valid (null handles and pointers).
    let mut p: sys::CUDA_KERNEL_NODE_PARAMS = unsafe { std::mem::zeroed() };
    k.fill(&mut p, ctx)?;
    p.gridDimX = cfg.grid.x;
    p.gridDimY = cfg.grid.y;
    p.gridDimZ = cfg.grid.z;
    p.blockDimX = cfg.block.x;
    p.blockDimY = cfg.block.y;
    p.blockDimZ = cfg.block.z;
    p.sharedMemBytes = cfg.shared_mem_bytes;
    p.kernelParams = if ptrs.is_empty() {
        ptr::null_mut()
    } else {
        ptrs.as_mut_ptr()
    };
    Ok(p)
}

/// A linear device-to-device copy as a `CUDA_MEMCPY3D`.
pub(crate) fn memcpy_params(
    dst: sys::CUdeviceptr,
    src: sys::CUdeviceptr,
    bytes: usize,
) -> sys::CUDA_MEMCPY3D {
    // SAFETY: an all-zero CUDA_MEMCPY3D is valid (unused fields are zero).
    let mut p: sys::CUDA_MEMCPY3D = unsafe { std::mem::zeroed() };
    p.srcMemoryType = sys::CU_MEMORYTYPE_DEVICE;
    p.srcDevice = src;
    p.dstMemoryType = sys::CU_MEMORYTYPE_DEVICE;
    p.dstDevice = dst;
    p.WidthInBytes = bytes;
    p.Height = 1;
    p.Depth = 1;
    p
}

/// The parameters of a memset node (`CUDA_MEMSET_NODE_PARAMS`).
#[doc(alias = "CUDA_MEMSET_NODE_PARAMS")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemsetParams {
    /// Destination device address.
    pub dst: sys::CUdeviceptr,
    /// Bytes between rows (unused for one row).
    pub pitch: usize,
    /// The value, in its low `element_size` bytes.
    pub value: u32,
    /// Word size: 1, 2 or 4 bytes.
    pub element_size: u32,
    /// Words per row.
    pub width: usize,
    /// Rows.
    pub height: usize,
}

impl MemsetParams {
    fn to_raw(self) -> sys::CUDA_MEMSET_NODE_PARAMS {
        sys::CUDA_MEMSET_NODE_PARAMS {
            dst: self.dst,
            pitch: self.pitch,
            value: self.value,
            elementSize: self.element_size,
            width: self.width,
            height: self.height,
        }
    }

    /// The parameters that fill `dst` with `value`.
    #[track_caller]
    pub fn fill<T: DeviceRepr, W: MemsetValue + Into<u32>>(
        dst: &DeviceSliceMut<'_, T>,
        value: W,
    ) -> Result<MemsetParams> {
        let n = crate::memory::view::memset_count::<T, W>("memset node", dst.len())?;
        Ok(MemsetParams {
            dst: dst.as_raw(),
            pitch: 0,
            value: value.into(),
            element_size: W::WIDTH as u32,
            width: n,
            height: 1,
        })
    }
}

/// Memory allocated by a graph's memory allocation node ([`Graph::add_mem_alloc`]).
///
/// CUDA's rules for it: the address is fixed when the node is created and valid, in every
/// launch, from the allocation node until the memory is freed: by a memory free node of the
/// same graph ([`Graph::add_mem_free`], which consumes this value, so the memory is freed in
/// the graph exactly once), or else outside the graph after a launch (`cuMemFreeAsync` /
/// `cuMemFree`, see [`free_after_launch`](Self::free_after_launch)), or automatically before
/// the next launch of an exec instantiated with
/// [`GraphInstantiateFlags::AUTO_FREE_ON_LAUNCH`](crate::GraphInstantiateFlags). An exec
/// whose graph allocates memory that it does not free cannot be launched again until that
/// memory is freed (the driver refuses the launch).
#[doc(alias = "CUDA_MEM_ALLOC_NODE_PARAMS")]
#[derive(Debug)]
#[must_use = "free the allocation in the graph (Graph::add_mem_free) or after a launch"]
pub struct GraphAllocation {
    ptr: sys::CUdeviceptr,
    bytes: usize,
    graph: sys::CUgraph,
}

impl GraphAllocation {
    /// The device address (valid while the graph's execution has it allocated).
    pub fn as_raw(&self) -> sys::CUdeviceptr {
        self.ptr
    }

    /// The size in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// A view of the allocation as `len` elements of `T`, for nodes that use it.
    ///
    /// # Safety
    /// The view is used only by nodes of the allocating graph ordered after the allocation
    /// node and before its free node, and `len * size_of::<T>()` is at most
    /// [`bytes`](Self::bytes).
    pub unsafe fn view_mut<'a, T: DeviceRepr>(
        &self,
        len: usize,
        ctx: &'a Context,
    ) -> DeviceSliceMut<'a, T> {
        // SAFETY: the caller's guarantees.
        unsafe { DeviceSliceMut::from_raw(self.ptr, len, ctx) }
    }

    /// Frees the allocation outside the graph, in stream order on `stream`, after a launch
    /// that allocated it.
    ///
    /// # Safety
    /// An execution of the graph that allocated the memory was launched and is ordered
    /// before `stream`'s next work, no later work uses the memory, and it is freed once.
    #[wraps(cuMemFreeAsync)]
    #[track_caller]
    pub unsafe fn free_after_launch(self, stream: &crate::Stream) -> Result<()> {
        let _cur = stream.context().enter()?;
        check(
            // SAFETY: the caller's guarantees.
            unsafe { sys::cuMemFreeAsync(self.ptr, stream.as_raw()) },
            "cuMemFreeAsync",
        )
    }
}

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

/// A conditional handle (`CUgraphConditionalHandle`, CUDA 12.3) of one graph: the value a
/// conditional node tests, set from device code (`cudaGraphSetConditional`) or to its default
/// at each launch.
#[doc(alias = "CUgraphConditionalHandle")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConditionalHandle {
    raw: sys::CUgraphConditionalHandle,
    graph: sys::CUgraph,
}

impl ConditionalHandle {
    /// The raw handle: pass it to a kernel as a `cudaGraphConditionalHandle` (a `u64`).
    pub fn as_raw(&self) -> sys::CUgraphConditionalHandle {
        self.raw
    }
}

// SAFETY: points to the `raw` field (a CUgraphConditionalHandle, 8 initialised bytes) of the
// borrowed handle, which is what a kernel's `cudaGraphConditionalHandle` parameter receives;
// the driver only reads through it. (Not DeviceRepr: the whole struct, with its graph, is
// not what the kernel takes.)
unsafe impl crate::launch::KernelArg for ConditionalHandle {
    const PARAM_SIZE: usize = std::mem::size_of::<sys::CUgraphConditionalHandle>();
    const PARAM_ALIGN: usize = std::mem::align_of::<sys::CUgraphConditionalHandle>();
    #[inline(always)]
    fn param_ptr(&self) -> *mut c_void {
        let p: *const sys::CUgraphConditionalHandle = &self.raw;
        p.cast_mut().cast()
    }
}

// SAFETY: as for the by-value impl: points to the borrowed handle's `raw` field.
unsafe impl crate::launch::KernelArg for &ConditionalHandle {
    const PARAM_SIZE: usize = std::mem::size_of::<sys::CUgraphConditionalHandle>();
    const PARAM_ALIGN: usize = std::mem::align_of::<sys::CUgraphConditionalHandle>();
    #[inline(always)]
    fn param_ptr(&self) -> *mut c_void {
        let p: *const sys::CUgraphConditionalHandle = &self.raw;
        p.cast_mut().cast()
    }
}

impl Graph {
    /// Adds an empty node (a join point).
    #[wraps(cuGraphAddEmptyNode)]
    #[track_caller]
    pub fn add_empty(&self, deps: &[GraphNode<'_>]) -> Result<GraphNode<'_>> {
        let d = raw_deps(self, deps)?;
        let mut raw = ptr::null_mut();
        check(
            // SAFETY: the graph is live; `d` holds its nodes.
            unsafe { sys::cuGraphAddEmptyNode(&mut raw, self.raw, ptr_or_null(&d), d.len()) },
            "cuGraphAddEmptyNode",
        )?;
        Ok(GraphNode { raw, graph: self })
    }

    /// Adds a kernel node running `f` (a kernel of a module in `f`'s context) in `cfg` with
    /// `args`, checked against the kernel's parameters as [`Function::launch`] checks them.
    /// The graph keeps `f`'s module loaded.
    ///
    /// # Safety
    /// As for [`Function::launch`] (argument types, bounds), and the memory the arguments
    /// point to stays allocated while any graph or exec with this node can run.
    #[wraps(cuGraphAddKernelNode)]
    #[track_caller]
    pub unsafe fn add_kernel<A: KernelArgs>(
        &self,
        deps: &[GraphNode<'_>],
        f: &Function,
        cfg: &LaunchConfig,
        args: A,
    ) -> Result<KernelNode<'_>> {
        // SAFETY: the caller's guarantees.
        unsafe { self.add_kernel_node(deps, f, f.context(), cfg, args) }
    }

    /// Adds a kernel node running the library kernel `k` in `ctx`; otherwise as
    /// [`add_kernel`](Self::add_kernel). The graph keeps the library loaded.
    ///
    /// # Safety
    /// As for [`add_kernel`](Self::add_kernel).
    #[wraps(cuGraphAddKernelNode)]
    #[track_caller]
    pub unsafe fn add_library_kernel<A: KernelArgs>(
        &self,
        deps: &[GraphNode<'_>],
        k: &Kernel,
        ctx: &Context,
        cfg: &LaunchConfig,
        args: A,
    ) -> Result<KernelNode<'_>> {
        // SAFETY: the caller's guarantees.
        unsafe { self.add_kernel_node(deps, k, ctx, cfg, args) }
    }

    #[track_caller]
    unsafe fn add_kernel_node<K: NodeKernel, A: KernelArgs>(
        &self,
        deps: &[GraphNode<'_>],
        k: &K,
        ctx: &Context,
        cfg: &LaunchConfig,
        args: A,
    ) -> Result<KernelNode<'_>> {
        let d = raw_deps(self, deps)?;
        let mut ptrs = args.pointers();
        let p = kernel_params::<K, A>(k, ctx, cfg, ptrs.as_mut())?;
        let _cur = ctx.enter()?;
        self.keep(k.key(), || k.clone())?;
        let mut raw = ptr::null_mut();
        check(
            // SAFETY: the graph is live; `p` describes a checked launch whose argument
            // pointers (`ptrs`, borrowing `args`) are read during the call; the caller
            // guarantees the rest.
            unsafe {
                sys::cuGraphAddKernelNode_v2(&mut raw, self.raw, ptr_or_null(&d), d.len(), &p)
            },
            "cuGraphAddKernelNode_v2",
        )?;
        Ok(KernelNode(GraphNode { raw, graph: self }))
    }

    /// Adds a node copying `src` to `dst` (device to device, same length).
    ///
    /// # Safety
    /// Both memories stay allocated while any graph or exec with this node can run, and no
    /// host code accesses `dst` while one runs.
    #[wraps(cuGraphAddMemcpyNode)]
    #[track_caller]
    pub unsafe fn add_memcpy<T: DeviceRepr>(
        &self,
        deps: &[GraphNode<'_>],
        dst: &DeviceSliceMut<'_, T>,
        src: &DeviceSlice<'_, T>,
    ) -> Result<MemcpyNode<'_>> {
        crate::memory::view::check_len("memcpy node", dst.len(), src.len())?;
        let bytes = crate::memory::view::byte_len::<T>("memcpy node", dst.len())?;
        let p = memcpy_params(dst.as_raw(), src.as_raw(), bytes);
        // SAFETY: `p` is a linear copy of checked length; the caller guarantees the memory.
        unsafe { self.add_memcpy_raw(deps, &p, dst.context()) }
    }

    /// Adds a node running a 2D copy: rows between host memory, device memory (linear or
    /// pitched) and arrays, in any combination [`Copy2D`](crate::Copy2D) builds, checked as
    /// it checks them before the driver is called. An empty copy is [`Error::ZeroExtent`].
    ///
    /// # Safety
    /// Every operand stays allocated (host memory too: page-locked memory such as a
    /// [`PinnedBuffer`](crate::PinnedBuffer) is what the driver expects) while any graph or
    /// exec with this node can run, and no host code accesses the destination while one
    /// runs.
    #[wraps(cuGraphAddMemcpyNode)]
    #[track_caller]
    pub unsafe fn add_copy_2d<T: DeviceRepr>(
        &self,
        deps: &[GraphNode<'_>],
        copy: crate::Copy2D<'_, T>,
    ) -> Result<MemcpyNode<'_>> {
        let node = copy.node_params("Graph::add_copy_2d")?;
        // SAFETY: the caller's guarantees; the parameters were checked.
        unsafe { self.add_memcpy_raw(deps, &node.raw, node.ctx) }
    }

    /// Adds a node running a 3D copy ([`Copy3D`](crate::Copy3D), in one context), checked
    /// as [`add_copy_2d`](Self::add_copy_2d) checks.
    ///
    /// # Safety
    /// As for [`add_copy_2d`](Self::add_copy_2d).
    #[wraps(cuGraphAddMemcpyNode)]
    #[track_caller]
    pub unsafe fn add_copy_3d<T: DeviceRepr>(
        &self,
        deps: &[GraphNode<'_>],
        copy: crate::Copy3D<'_, T>,
    ) -> Result<MemcpyNode<'_>> {
        let node = copy.node_params("Graph::add_copy_3d")?;
        // SAFETY: the caller's guarantees; the parameters were checked.
        unsafe { self.add_memcpy_raw(deps, &node.raw, node.ctx) }
    }

    /// # Safety
    /// `p` is a checked copy in `ctx` whose memory the caller keeps valid.
    #[track_caller]
    unsafe fn add_memcpy_raw(
        &self,
        deps: &[GraphNode<'_>],
        p: &sys::CUDA_MEMCPY3D,
        ctx: &Context,
    ) -> Result<MemcpyNode<'_>> {
        let d = raw_deps(self, deps)?;
        let _cur = ctx.enter()?;
        let mut raw = ptr::null_mut();
        check(
            // SAFETY: the graph is live; `p` is a checked copy; the caller guarantees the
            // memory.
            unsafe {
                sys::cuGraphAddMemcpyNode(
                    &mut raw,
                    self.raw,
                    ptr_or_null(&d),
                    d.len(),
                    p,
                    ctx.as_raw(),
                )
            },
            "cuGraphAddMemcpyNode",
        )?;
        Ok(MemcpyNode(GraphNode { raw, graph: self }))
    }

    /// Adds a node filling `dst` with the word `value` (1, 2 or 4 bytes).
    ///
    /// # Safety
    /// `dst` stays allocated while any graph or exec with this node can run, and no host code
    /// accesses it while one runs.
    #[wraps(cuGraphAddMemsetNode)]
    #[track_caller]
    pub unsafe fn add_memset<T: DeviceRepr, W: MemsetValue + Into<u32>>(
        &self,
        deps: &[GraphNode<'_>],
        dst: &DeviceSliceMut<'_, T>,
        value: W,
    ) -> Result<MemsetNode<'_>> {
        let p = MemsetParams::fill(dst, value)?.to_raw();
        let d = raw_deps(self, deps)?;
        let ctx = dst.context();
        let _cur = ctx.enter()?;
        let mut raw = ptr::null_mut();
        check(
            // SAFETY: the graph is live; `p` is a valid 1D memset; the caller guarantees the
            // memory.
            unsafe {
                sys::cuGraphAddMemsetNode(
                    &mut raw,
                    self.raw,
                    ptr_or_null(&d),
                    d.len(),
                    &p,
                    ctx.as_raw(),
                )
            },
            "cuGraphAddMemsetNode",
        )?;
        Ok(MemsetNode(GraphNode { raw, graph: self }))
    }

    /// Adds a host node running `f` on a driver thread at each execution, once per launch of
    /// every exec made from the graph. `f` is owned by a CUDA user object that the graph (and
    /// its clones and execs) holds; panics are caught and counted
    /// ([`host_fn_panic_count`](crate::host_fn_panic_count)); CUDA calls inside are refused
    /// and drops deferred as for [`Stream::launch_host_fn`](crate::Stream::launch_host_fn).
    #[wraps(cuGraphAddHostNode)]
    #[track_caller]
    pub fn add_host<F: Fn() + Send + Sync + 'static>(
        &self,
        deps: &[GraphNode<'_>],
        f: F,
    ) -> Result<HostNode<'_>> {
        let d = raw_deps(self, deps)?;
        let p = self.host_params(f)?;
        let mut raw = ptr::null_mut();
        check(
            // SAFETY: the graph is live; `p` names a trampoline and its closure, which the
            // graph's user object keeps alive.
            unsafe { sys::cuGraphAddHostNode(&mut raw, self.raw, ptr_or_null(&d), d.len(), &p) },
            "cuGraphAddHostNode",
        )?;
        Ok(HostNode(GraphNode { raw, graph: self }))
    }

    /// Host node parameters for `f`, retained by this graph.
    #[track_caller]
    pub(crate) fn host_params<F: Fn() + Send + Sync + 'static>(
        &self,
        f: F,
    ) -> Result<sys::CUDA_HOST_NODE_PARAMS> {
        crate::init()?;
        if crate::release::in_host_fn() {
            return Err(Error::InHostCallback {
                location: std::panic::Location::caller(),
            });
        }
        // SAFETY: `self.retain` is live.
        let data = unsafe { crate::stream::retain_in_graph(self.retain, f) }?;
        Ok(sys::CUDA_HOST_NODE_PARAMS {
            fn_: Some(shared_host_fn_trampoline::<F>),
            userData: data.cast_mut().cast(),
        })
    }

    /// Adds a node recording `event`; the graph keeps the event alive.
    #[wraps(cuGraphAddEventRecordNode)]
    #[track_caller]
    pub fn add_event_record(
        &self,
        deps: &[GraphNode<'_>],
        event: &Arc<Event>,
    ) -> Result<EventRecordNode<'_>> {
        let d = raw_deps(self, deps)?;
        let _cur = event.context().enter()?;
        self.keep(event.as_raw() as usize, || event.clone())?;
        let mut raw = ptr::null_mut();
        check(
            // SAFETY: graph and event are live (the graph keeps the event).
            unsafe {
                sys::cuGraphAddEventRecordNode(
                    &mut raw,
                    self.raw,
                    ptr_or_null(&d),
                    d.len(),
                    event.as_raw(),
                )
            },
            "cuGraphAddEventRecordNode",
        )?;
        Ok(EventRecordNode(GraphNode { raw, graph: self }))
    }

    /// Adds a node waiting for `event`; the graph keeps the event alive.
    #[wraps(cuGraphAddEventWaitNode)]
    #[track_caller]
    pub fn add_event_wait(
        &self,
        deps: &[GraphNode<'_>],
        event: &Arc<Event>,
    ) -> Result<EventWaitNode<'_>> {
        let d = raw_deps(self, deps)?;
        let _cur = event.context().enter()?;
        self.keep(event.as_raw() as usize, || event.clone())?;
        let mut raw = ptr::null_mut();
        check(
            // SAFETY: graph and event are live (the graph keeps the event).
            unsafe {
                sys::cuGraphAddEventWaitNode(
                    &mut raw,
                    self.raw,
                    ptr_or_null(&d),
                    d.len(),
                    event.as_raw(),
                )
            },
            "cuGraphAddEventWaitNode",
        )?;
        Ok(EventWaitNode(GraphNode { raw, graph: self }))
    }

    /// Adds a node running a clone of `child` (with the child's keep-alives). A graph with
    /// memory allocation or conditional nodes cannot be a child (the driver refuses).
    #[wraps(cuGraphAddChildGraphNode)]
    #[track_caller]
    pub fn add_child_graph(
        &self,
        deps: &[GraphNode<'_>],
        child: &Graph,
    ) -> Result<ChildGraphNode<'_>> {
        let d = raw_deps(self, deps)?;
        let mut raw = ptr::null_mut();
        check(
            // SAFETY: both graphs are live; the driver clones `child`.
            unsafe {
                sys::cuGraphAddChildGraphNode(
                    &mut raw,
                    self.raw,
                    ptr_or_null(&d),
                    d.len(),
                    child.raw,
                )
            },
            "cuGraphAddChildGraphNode",
        )?;
        Ok(ChildGraphNode(GraphNode { raw, graph: self }))
    }

    /// Adds a node allocating `bytes` of device memory on `device` in the graph's memory
    /// pool; see [`GraphAllocation`] for who frees it.
    #[wraps(cuGraphAddMemAllocNode)]
    #[track_caller]
    pub fn add_mem_alloc(
        &self,
        deps: &[GraphNode<'_>],
        device: Device,
        bytes: usize,
    ) -> Result<(MemAllocNode<'_>, GraphAllocation)> {
        let d = raw_deps(self, deps)?;
        crate::init()?;
        // SAFETY: an all-zero CUDA_MEM_ALLOC_NODE_PARAMS is valid (no access descriptors).
        let mut p: sys::CUDA_MEM_ALLOC_NODE_PARAMS = unsafe { std::mem::zeroed() };
        p.poolProps.allocType = sys::CU_MEM_ALLOCATION_TYPE_PINNED;
        p.poolProps.location.type_ = sys::CU_MEM_LOCATION_TYPE_DEVICE;
        p.poolProps.location.id = device.as_raw();
        p.bytesize = bytes;
        let mut raw = ptr::null_mut();
        check(
            // SAFETY: the graph is live; `p` is valid and receives the address.
            unsafe {
                sys::cuGraphAddMemAllocNode(&mut raw, self.raw, ptr_or_null(&d), d.len(), &mut p)
            },
            "cuGraphAddMemAllocNode",
        )?;
        Ok((
            MemAllocNode(GraphNode { raw, graph: self }),
            GraphAllocation {
                ptr: p.dptr,
                bytes,
                graph: self.raw,
            },
        ))
    }

    /// Adds a node freeing `alloc`, memory allocated by this graph
    /// ([`Error::GraphMismatch`] otherwise).
    #[wraps(cuGraphAddMemFreeNode)]
    #[track_caller]
    pub fn add_mem_free(
        &self,
        deps: &[GraphNode<'_>],
        alloc: GraphAllocation,
    ) -> Result<MemFreeNode<'_>> {
        if alloc.graph != self.raw {
            return Err(Error::GraphMismatch {
                what: "memory free node",
                expected: alloc.graph as usize,
                found: self.raw as usize,
            });
        }
        let d = raw_deps(self, deps)?;
        let mut raw = ptr::null_mut();
        check(
            // SAFETY: the graph is live; the address was allocated by its allocation node.
            unsafe {
                sys::cuGraphAddMemFreeNode(&mut raw, self.raw, ptr_or_null(&d), d.len(), alloc.ptr)
            },
            "cuGraphAddMemFreeNode",
        )?;
        Ok(MemFreeNode(GraphNode { raw, graph: self }))
    }

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
        check(
            // SAFETY: the graph is live; `p` points to `ops`, alive for the call; the caller
            // guarantees the memory they name.
            unsafe {
                sys::cuGraphAddBatchMemOpNode(&mut raw, self.raw, ptr_or_null(&d), d.len(), &p)
            },
            "cuGraphAddBatchMemOpNode",
        )?;
        Ok(BatchMemOpNode(GraphNode { raw, graph: self }))
    }

    /// Adds a batch memory operation node running `batch` (32- and 64-bit waits and writes,
    /// barriers, remote-write flushes; see [`MemOpBatch`](crate::MemOpBatch)) in `ctx`. The
    /// device attributes the operations need are checked first
    /// ([`Error::FeatureUnsupported`]); an empty batch is [`Error::ZeroExtent`].
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
        batch: &mut crate::MemOpBatch<'_>,
    ) -> Result<BatchMemOpNode<'_>> {
        if batch.is_empty() {
            return Err(Error::ZeroExtent {
                what: "Graph::add_mem_op_batch",
                axis: "operations",
            });
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

    /// Creates a conditional handle for this graph in `ctx` (CUDA 12.3), with
    /// `default` applied at each launch when `flags` contain
    /// [`GraphCondAssignFlags::DEFAULT`](crate::types::GraphCondAssignFlags).
    #[wraps(cuGraphConditionalHandleCreate)]
    #[track_caller]
    pub fn conditional_handle(
        &self,
        ctx: &Context,
        default: u32,
        flags: crate::types::GraphCondAssignFlags,
    ) -> Result<ConditionalHandle> {
        let f = newer::cuGraphConditionalHandleCreate()?;
        let _cur = ctx.enter()?;
        let mut raw = 0;
        check(
            // SAFETY: graph and context are live; writes one handle.
            unsafe { f(&mut raw, self.retain, ctx.as_raw(), default, flags.as_raw()) },
            "cuGraphConditionalHandleCreate",
        )?;
        Ok(ConditionalHandle {
            raw,
            graph: self.retain,
        })
    }

    /// Adds a conditional node (CUDA 12.3) of `kind` testing `handle`, a handle of this graph
    /// ([`Error::GraphMismatch`] otherwise), with `bodies` body graphs (1 for while, 1 or 2
    /// for if, any positive number for switch), which [`ConditionalNode::body`] returns to
    /// fill.
    #[wraps(cuGraphAddNode)]
    #[track_caller]
    pub fn add_conditional(
        &self,
        deps: &[GraphNode<'_>],
        ctx: &Context,
        handle: ConditionalHandle,
        kind: GraphConditionalNodeType,
        bodies: u32,
    ) -> Result<ConditionalNode<'_>> {
        if handle.graph != self.retain {
            return Err(Error::GraphMismatch {
                what: "conditional node",
                expected: handle.graph as usize,
                found: self.retain as usize,
            });
        }
        let f = newer::cuGraphAddNode_v2()?;
        let d = raw_deps(self, deps)?;
        let _cur = ctx.enter()?;
        // SAFETY: an all-zero CUgraphNodeParams is valid.
        let mut p: sys::CUgraphNodeParams = unsafe { std::mem::zeroed() };
        p.type_ = sys::CU_GRAPH_NODE_TYPE_CONDITIONAL;
        p.__bindgen_anon_1.conditional = sys::CUDA_CONDITIONAL_NODE_PARAMS {
            handle: handle.raw,
            type_: kind.as_raw(),
            size: bodies,
            phGraph_out: ptr::null_mut(),
            ctx: ctx.as_raw(),
        };
        let mut raw = ptr::null_mut();
        check(
            // SAFETY: the graph is live; `p` is a conditional node's parameters; the driver
            // fills phGraph_out with an array it owns.
            unsafe {
                f(
                    &mut raw,
                    self.raw,
                    ptr_or_null(&d),
                    ptr::null(),
                    d.len(),
                    &mut p,
                )
            },
            "cuGraphAddNode_v2",
        )?;
        // SAFETY: written by the driver for a conditional node.
        let out = unsafe { p.__bindgen_anon_1.conditional.phGraph_out };
        let bodies = if out.is_null() {
            Vec::new()
        } else {
            // SAFETY: the driver's array of `bodies` graphs, valid for the node's lifetime.
            unsafe { std::slice::from_raw_parts(out, bodies as usize) }.to_vec()
        };
        Ok(ConditionalNode {
            node: GraphNode { raw, graph: self },
            bodies,
        })
    }
}

impl<'g> KernelNode<'g> {
    /// The node's grid, block and dynamic shared memory.
    #[wraps(cuGraphKernelNodeGetParams)]
    #[track_caller]
    pub fn launch_config(&self) -> Result<LaunchConfig> {
        // SAFETY: an all-zero CUDA_KERNEL_NODE_PARAMS is valid to be written.
        let mut p: sys::CUDA_KERNEL_NODE_PARAMS = unsafe { std::mem::zeroed() };
        check(
            // SAFETY: the node is a live kernel node; writes the struct.
            unsafe { sys::cuGraphKernelNodeGetParams_v2(self.0.raw, &mut p) },
            "cuGraphKernelNodeGetParams_v2",
        )?;
        Ok(LaunchConfig {
            grid: crate::Dim3::new(p.gridDimX, p.gridDimY, p.gridDimZ),
            block: crate::Dim3::new(p.blockDimX, p.blockDimY, p.blockDimZ),
            shared_mem_bytes: p.sharedMemBytes,
        })
    }

    /// Changes the node's kernel (of a module in `f`'s context), configuration and arguments,
    /// checked as in [`Graph::add_kernel`]; the graph keeps `f`'s module loaded.
    ///
    /// # Safety
    /// As for [`Graph::add_kernel`].
    #[wraps(cuGraphKernelNodeSetParams)]
    #[track_caller]
    pub unsafe fn set<A: KernelArgs>(
        &self,
        f: &Function,
        cfg: &LaunchConfig,
        args: A,
    ) -> Result<()> {
        let mut ptrs = args.pointers();
        let p = kernel_params::<Function, A>(f, f.context(), cfg, ptrs.as_mut())?;
        let _cur = f.context().enter()?;
        self.0.graph.keep(f.as_raw() as usize, || f.clone())?;
        check(
            // SAFETY: a live kernel node; checked parameters read during the call.
            unsafe { sys::cuGraphKernelNodeSetParams_v2(self.0.raw, &p) },
            "cuGraphKernelNodeSetParams_v2",
        )
    }
}

impl<'g> MemsetNode<'g> {
    /// The node's parameters.
    #[wraps(cuGraphMemsetNodeGetParams)]
    #[track_caller]
    pub fn params(&self) -> Result<MemsetParams> {
        // SAFETY: all-zero is a valid CUDA_MEMSET_NODE_PARAMS to be written.
        let mut p: sys::CUDA_MEMSET_NODE_PARAMS = unsafe { std::mem::zeroed() };
        check(
            // SAFETY: a live memset node; writes the struct.
            unsafe { sys::cuGraphMemsetNodeGetParams(self.0.raw, &mut p) },
            "cuGraphMemsetNodeGetParams",
        )?;
        Ok(MemsetParams {
            dst: p.dst,
            pitch: p.pitch,
            value: p.value,
            element_size: p.elementSize,
            width: p.width,
            height: p.height,
        })
    }

    /// Changes the node's parameters.
    ///
    /// # Safety
    /// As for [`Graph::add_memset`], for the memory `params` describe.
    #[wraps(cuGraphMemsetNodeSetParams)]
    #[track_caller]
    pub unsafe fn set_params(&self, params: MemsetParams) -> Result<()> {
        let p = params.to_raw();
        check(
            // SAFETY: a live memset node; the caller guarantees the memory.
            unsafe { sys::cuGraphMemsetNodeSetParams(self.0.raw, &p) },
            "cuGraphMemsetNodeSetParams",
        )
    }
}

impl<'g> MemcpyNode<'g> {
    /// The node's copy parameters, raw.
    #[wraps(cuGraphMemcpyNodeGetParams)]
    #[track_caller]
    pub fn params_raw(&self) -> Result<sys::CUDA_MEMCPY3D> {
        // SAFETY: all-zero is a valid CUDA_MEMCPY3D to be written.
        let mut p: sys::CUDA_MEMCPY3D = unsafe { std::mem::zeroed() };
        check(
            // SAFETY: a live memcpy node; writes the struct.
            unsafe { sys::cuGraphMemcpyNodeGetParams(self.0.raw, &mut p) },
            "cuGraphMemcpyNodeGetParams",
        )?;
        Ok(p)
    }

    /// Makes the node copy `src` to `dst` (device to device, same length).
    ///
    /// # Safety
    /// As for [`Graph::add_memcpy`].
    #[wraps(cuGraphMemcpyNodeSetParams)]
    #[track_caller]
    pub unsafe fn set<T: DeviceRepr>(
        &self,
        dst: &DeviceSliceMut<'_, T>,
        src: &DeviceSlice<'_, T>,
    ) -> Result<()> {
        crate::memory::view::check_len("memcpy node", dst.len(), src.len())?;
        let bytes = crate::memory::view::byte_len::<T>("memcpy node", dst.len())?;
        let p = memcpy_params(dst.as_raw(), src.as_raw(), bytes);
        let _cur = dst.context().enter()?;
        check(
            // SAFETY: a live memcpy node; the caller guarantees the memory.
            unsafe { sys::cuGraphMemcpyNodeSetParams(self.0.raw, &p) },
            "cuGraphMemcpyNodeSetParams",
        )
    }
}

impl<'g> HostNode<'g> {
    /// Replaces the node's closure; the graph keeps the new one alive (and the old one for as
    /// long as execs made before still use it).
    #[wraps(cuGraphHostNodeSetParams)]
    #[track_caller]
    pub fn set<F: Fn() + Send + Sync + 'static>(&self, f: F) -> Result<()> {
        let p = self.0.graph.host_params(f)?;
        check(
            // SAFETY: a live host node; the closure is kept alive by the graph.
            unsafe { sys::cuGraphHostNodeSetParams(self.0.raw, &p) },
            "cuGraphHostNodeSetParams",
        )
    }
}

impl<'g> EventRecordNode<'g> {
    /// The raw event the node records.
    #[wraps(cuGraphEventRecordNodeGetEvent)]
    #[track_caller]
    pub fn event_raw(&self) -> Result<sys::CUevent> {
        let mut e = ptr::null_mut();
        check(
            // SAFETY: a live event record node; writes one handle.
            unsafe { sys::cuGraphEventRecordNodeGetEvent(self.0.raw, &mut e) },
            "cuGraphEventRecordNodeGetEvent",
        )?;
        Ok(e)
    }

    /// Makes the node record `event`; the graph keeps it alive.
    #[wraps(cuGraphEventRecordNodeSetEvent)]
    #[track_caller]
    pub fn set_event(&self, event: &Arc<Event>) -> Result<()> {
        let _cur = event.context().enter()?;
        self.0
            .graph
            .keep(event.as_raw() as usize, || event.clone())?;
        check(
            // SAFETY: a live node; the graph keeps the event.
            unsafe { sys::cuGraphEventRecordNodeSetEvent(self.0.raw, event.as_raw()) },
            "cuGraphEventRecordNodeSetEvent",
        )
    }
}

impl<'g> EventWaitNode<'g> {
    /// The raw event the node waits for.
    #[wraps(cuGraphEventWaitNodeGetEvent)]
    #[track_caller]
    pub fn event_raw(&self) -> Result<sys::CUevent> {
        let mut e = ptr::null_mut();
        check(
            // SAFETY: a live event wait node; writes one handle.
            unsafe { sys::cuGraphEventWaitNodeGetEvent(self.0.raw, &mut e) },
            "cuGraphEventWaitNodeGetEvent",
        )?;
        Ok(e)
    }

    /// Makes the node wait for `event`; the graph keeps it alive.
    #[wraps(cuGraphEventWaitNodeSetEvent)]
    #[track_caller]
    pub fn set_event(&self, event: &Arc<Event>) -> Result<()> {
        let _cur = event.context().enter()?;
        self.0
            .graph
            .keep(event.as_raw() as usize, || event.clone())?;
        check(
            // SAFETY: a live node; the graph keeps the event.
            unsafe { sys::cuGraphEventWaitNodeSetEvent(self.0.raw, event.as_raw()) },
            "cuGraphEventWaitNodeSetEvent",
        )
    }
}

impl<'g> ChildGraphNode<'g> {
    /// The node's graph (the clone it runs), borrowed; nodes added to it run in the parent.
    #[wraps(cuGraphChildGraphNodeGetGraph)]
    #[track_caller]
    pub fn child(&self) -> Result<GraphRef<'g>> {
        let mut g = ptr::null_mut();
        check(
            // SAFETY: a live child graph node; writes one handle owned by the node.
            unsafe { sys::cuGraphChildGraphNodeGetGraph(self.0.raw, &mut g) },
            "cuGraphChildGraphNodeGetGraph",
        )?;
        // SAFETY: owned by the node, alive while its graph (borrowed for 'g) is.
        Ok(unsafe { GraphRef::from_raw(g) })
    }
}

impl<'g> MemAllocNode<'g> {
    /// The address and size the node allocates.
    #[wraps(cuGraphMemAllocNodeGetParams)]
    #[track_caller]
    pub fn allocation(&self) -> Result<(sys::CUdeviceptr, usize)> {
        // SAFETY: all-zero is a valid struct to be written.
        let mut p: sys::CUDA_MEM_ALLOC_NODE_PARAMS = unsafe { std::mem::zeroed() };
        check(
            // SAFETY: a live allocation node; writes the struct.
            unsafe { sys::cuGraphMemAllocNodeGetParams(self.0.raw, &mut p) },
            "cuGraphMemAllocNodeGetParams",
        )?;
        Ok((p.dptr, p.bytesize))
    }
}

impl<'g> MemFreeNode<'g> {
    /// The address the node frees.
    #[wraps(cuGraphMemFreeNodeGetParams)]
    #[track_caller]
    pub fn address(&self) -> Result<sys::CUdeviceptr> {
        let mut p = 0;
        check(
            // SAFETY: a live free node; writes one address.
            unsafe { sys::cuGraphMemFreeNodeGetParams(self.0.raw, &mut p) },
            "cuGraphMemFreeNodeGetParams",
        )?;
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conditional_handle_is_passed_as_its_64_bit_value() {
        let h = ConditionalHandle {
            raw: 0x1234_5678_9abc_def0,
            graph: ptr::null_mut(),
        };
        assert_eq!(<(ConditionalHandle,) as KernelArgs>::SIZES, &[8]);
        assert_eq!(<(&ConditionalHandle,) as KernelArgs>::SIZES, &[8]);
        let args = (h, &h);
        let p = args.pointers();
        for q in p {
            // SAFETY: each pointer points to the 8-byte raw value of a handle in `args`.
            assert_eq!(unsafe { *q.cast::<u64>() }, 0x1234_5678_9abc_def0);
        }
    }
}
