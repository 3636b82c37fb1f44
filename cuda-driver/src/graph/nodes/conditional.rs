//! Conditional nodes (if, while, switch) and their handles.

use super::*;
use crate::error::graph::GraphError;
use crate::graph::book::ConditionalRecord;
use crate::handle::Handle;
#[allow(unused_imports)]
use cuda_driver_macros::call;

/// A conditional node ([`Graph::add_conditional`]) with its body graphs. Derefs to its
/// [`GraphNode`].
#[doc(alias = "CUDA_CONDITIONAL_NODE_PARAMS")]
#[derive(Debug)]
pub struct ConditionalNode<'g> {
    node: GraphNode<'g>,
    handle: ConditionalHandle,
    kind: GraphConditionalNodeType,
    bodies: Vec<sys::CUgraph>,
}

impl<'g> Deref for ConditionalNode<'g> {
    type Target = GraphNode<'g>;
    #[inline]
    fn deref(&self) -> &GraphNode<'g> {
        &self.node
    }
}

impl<'g> GraphNode<'g> {
    /// This node as a [`ConditionalNode`], with its handle and body graphs, so that its bodies
    /// can be filled where the node is found (among [`Graph::nodes`], a node's dependents, a
    /// stream capture's dependencies), not only where it was created.
    ///
    /// The driver cannot be asked for a conditional node's bodies (CUDA 13.0 has no
    /// `cuGraphNodeGetParams`), so the crate records every conditional node it creates
    /// ([`Graph::add_conditional`]) with its handle and bodies, in a book shared by the owned
    /// graph and every body and child graph borrowed from it. [`GraphError::NodeKind`] when
    /// the node is not a conditional node; [`Error::NotFound`] when it is one the crate did
    /// not create in this graph tree: a node of a clone ([`Graph::try_clone`]) or of a graph
    /// made outside the crate (the record names the graph it was created in, never the
    /// original's bodies for a clone's node), or a node added through a
    /// [`GraphRef::borrow_raw`] borrow.
    ///
    /// ```no_run
    /// # use cuda_driver::types::{GraphCondAssignFlags, GraphConditionalNodeType};
    /// # use cuda_driver::{graph::Graph, Context};
    /// # fn f(ctx: &Context) -> cuda_driver::Result<()> {
    /// let g = Graph::new()?;
    /// let h = g.conditional_handle(ctx, 1, GraphCondAssignFlags::DEFAULT)?;
    /// g.add_conditional(&[], ctx, h, GraphConditionalNodeType::IF, 1)?;
    /// // Later, elsewhere: find the node again and fill its body.
    /// let node = g.root_nodes()?[0].as_conditional()?;
    /// assert_eq!(node.handle(), h);
    /// let body = node.body(0)?;
    /// body.add_empty(&[])?;
    /// # Ok(()) }
    /// ```
    #[wraps(cuGraphNodeGetType)]
    #[track_caller]
    pub fn as_conditional(self) -> Result<ConditionalNode<'g>> {
        self.expect("as_conditional", GraphNodeType::CONDITIONAL)?;
        let book = self.graph.book.lock();
        match book.conditional(self.graph.raw, self.raw) {
            Some(rec) => Ok(ConditionalNode {
                node: self,
                handle: rec.handle,
                kind: rec.kind,
                bodies: rec.bodies.clone(),
            }),
            None => Err(Error::NotFound {
                kind: "conditional node created by this crate in this graph",
                name: format!("{:p}", self.raw),
                code: crate::types::ErrorCode::NOT_FOUND,
            }),
        }
    }
}

impl<'g> ConditionalNode<'g> {
    /// The handle the node tests.
    pub fn handle(&self) -> ConditionalHandle {
        self.handle
    }

    /// The node's kind (if, while, switch).
    pub fn kind(&self) -> GraphConditionalNodeType {
        self.kind
    }

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
            Some(&raw) => Ok(unsafe {
                GraphRef::with_retain(raw, self.node.graph.retain, self.node.graph.book.clone())
            }),
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
    /// ([`GraphError::Mismatch`] otherwise), with `bodies` body graphs (1 for while, 1 or 2
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
            return Err(Error::Graph(GraphError::Mismatch {
                what: "conditional node",
                expected: handle.graph as usize,
                found: self.retain as usize,
            }));
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
        self.book.lock().add_conditional(ConditionalRecord {
            graph: self.raw,
            node: raw,
            handle,
            kind,
            bodies: bodies.clone(),
        });
        Ok(ConditionalNode {
            node: GraphNode { raw, graph: self },
            handle,
            kind,
            bodies,
        })
    }
}
