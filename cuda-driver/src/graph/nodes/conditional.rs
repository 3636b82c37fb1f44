//! Conditional nodes (if, while, switch) and their handles.

use super::*;
#[allow(unused_imports)]
use cuda_driver_macros::call;

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

/// A conditional handle (`CUgraphConditionalHandle`, CUDA 12.3) of one graph: the value a
/// conditional node tests, set from device code (`cudaGraphSetConditional`) or to its default
/// at each launch.
#[doc(alias = "CUgraphConditionalHandle")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConditionalHandle {
    pub(in crate::graph) raw: sys::CUgraphConditionalHandle,
    pub(in crate::graph) graph: sys::CUgraph,
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
        let _cur = ctx.enter()?;
        let mut raw = 0;
        call!(
            // SAFETY: graph and context are live; writes one handle.
            unsafe {
                newer::cuGraphConditionalHandleCreate()?(
                    &mut raw,
                    self.retain,
                    ctx.as_raw(),
                    default,
                    flags.as_raw(),
                )
            },
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
        call!(
            // SAFETY: the graph is live; `p` is a conditional node's parameters; the driver
            // fills phGraph_out with an array it owns.
            unsafe {
                newer::cuGraphAddNode_v2()?(
                    &mut raw,
                    self.raw,
                    ptr_or_null(&d),
                    ptr::null(),
                    d.len(),
                    &mut p,
                )
            },
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
