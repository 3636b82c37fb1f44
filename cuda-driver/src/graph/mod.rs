//! Graph Management: CUDA graphs built node by node ([`Graph`]) or captured from streams
//! ([`Stream::capture`]), instantiated into executable graphs ([`GraphExec`]), updated and
//! launched.
//!
//! See [`Graph`] for what graphs keep alive, and what they cannot.

mod book;
pub(crate) mod exec;
mod exec_memory;
pub(crate) mod launch_memory;
pub(crate) mod memory;
pub(crate) mod nodes;
pub(crate) mod user_object;

use std::cell::RefCell;
use std::ffi::CString;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::path::Path;
use std::ptr;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use crate::entry_point::newer;
pub use crate::error::graph::GraphError;
use crate::error::{check, Error, Result};
use crate::handle::{give_up, Handle, OwnedHandle};
use crate::release::{release, SendRaw};

use crate::types::{GraphDebugDotFlags, GraphDependencyType, GraphNodeType};
pub(crate) mod capture;

pub use capture::{exchange_thread_capture_mode, Capture, CaptureInfo};
pub use exec::{GraphExec, GraphExecFlags, InstantiateOptions};
pub use launch_memory::GraphMemory;
pub use memory::GraphAllocation;
pub use nodes::{
    BatchMemOp, BatchMemOpNode, ChildGraphNode, ConditionalHandle, ConditionalNode,
    EventRecordNode, EventWaitNode, ExtSemSignalNode, ExtSemWaitNode, HostNode, KernelNode,
    MemAllocNode, MemFreeNode, MemcpyNode, MemsetNode, MemsetParams,
};
pub use user_object::UserObject;

#[allow(unused_imports)]
use crate::event::Event;
#[allow(unused_imports)]
use crate::library::Kernel;
#[allow(unused_imports)]
use crate::module::function::Function;
#[allow(unused_imports)]
use crate::stream::Stream;

/// A CUDA graph (`CUgraph`), destroyed on drop: nodes and the dependencies between them,
/// built node by node or captured from a stream ([`Stream::capture`]), and instantiated into
/// a [`GraphExec`] to run.
///
/// Methods take `&self`, also those that add nodes: node handles ([`GraphNode`]) borrow the
/// graph, and the graph is not `Sync`, so no two threads change it at once.
///
/// # What keeps what alive
///
/// A graph refers to kernels, host closures and events by raw handle, and every executable
/// graph instantiated from it (and every clone) runs them, possibly long after the Rust objects
/// that created the nodes are gone. The crate keeps them alive with the driver's own
/// mechanism, CUDA user objects: each kernel node's [`Function`] or [`Kernel`] (and with it the
/// module or library that holds the code), each host node's closure and each event node's
/// [`Event`] is moved into a user object owned by the graph (`cuUserObjectCreate`,
/// `cuGraphRetainUserObject`). The driver carries these references into clones, child graph
/// nodes and executable graphs, and releases them only when the last of those is destroyed
/// and its launches have finished; the destructor then drops the Rust value on a driver thread,
/// inside the host-function scope (so CUDA objects it held are released on the crate's release
/// thread). So dropping a [`Module`](crate::Module) before launching an exec is harmless:
/// the exec keeps the module loaded. A kernel launched through this crate onto a stream that
/// a capture begun by this crate records is kept alive the same way (see [`Stream::capture`]).
///
/// Per-node updates of an executable graph ([`GraphExec::set_host_node`],
/// [`GraphExec::set_kernel_node`], ...) keep their new values in the exec; an exec that holds
/// such values synchronizes the contexts it was launched in before it is destroyed.
///
/// # What the crate cannot keep alive: memory
///
/// Nodes that read or write device memory (kernels, memcpys, memsets, batch memory operations,
/// and whatever a stream capture records) hold raw device addresses. Adding them is `unsafe`:
/// the caller guarantees that the memory stays allocated while any graph or executable graph
/// that uses it can run. Memory the graph allocates itself ([`Graph::add_mem_alloc`]) follows
/// CUDA's rules, expressed in [`GraphAllocation`].
///
/// # Threads
///
/// CUDA graphs are not internally synchronized: a [`Graph`] and a [`GraphExec`] are `Send`
/// but not `Sync`. Node handles ([`GraphNode`]) borrow their graph.
///
/// ```no_run
/// use cuda_driver::{Device, graph::Graph, types::GraphInstantiateFlags, Stream, types::StreamFlags};
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
///
/// let ctx = Device::get(0)?.primary_context()?;
/// let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;
/// let calls = Arc::new(AtomicUsize::new(0));
/// let graph = Graph::new()?;
/// let first = graph.add_empty(&[])?;
/// let c = calls.clone();
/// graph.add_host(&[first], move || {
///     c.fetch_add(1, Ordering::Relaxed);
/// })?;
/// let exec = graph.instantiate(GraphInstantiateFlags::empty())?;
/// drop(graph); // the exec keeps the closure alive
/// for _ in 0..3 {
///     exec.launch(&stream)?;
/// }
/// stream.synchronize()?;
/// assert_eq!(calls.load(Ordering::Relaxed), 3);
/// # Ok::<(), cuda_driver::Error>(())
/// ```
#[doc(alias = "CUgraph")]
pub struct Graph {
    raw: sys::CUgraph,
    /// The graph that user objects (keep-alives) are retained by: `raw` itself, or, for the
    /// body of a conditional node, the graph that owns the node.
    retain: sys::CUgraph,
    /// Keys (raw handles) of the keep-alives already retained, so a kernel used by many nodes
    /// is retained once.
    kept: RefCell<Vec<usize>>,
    /// What the driver cannot be asked (conditional nodes' bodies, memory nodes), shared with
    /// the borrowed graphs reached from this one.
    book: book::SharedBook,
    /// Whether this is the graph an exec is instantiated from (an owned graph), not a body or
    /// child graph reached through a node, nor a graph borrowed by raw handle.
    root: bool,
}

// SAFETY: a CUgraph may be used from any thread, one at a time (Graph is not Sync); the
// handle is destroyed once, in Drop.
unsafe impl Send for Graph {}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph").field("raw", &self.raw).finish()
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        let raw = SendRaw(self.raw);
        release(move || {
            // SAFETY: created by cuGraphCreate/cuGraphClone/cuStreamEndCapture (or handed over
            // through from_raw) and owned by self; executable graphs made from it are
            // independent of it.
            let r = unsafe { sys::cuGraphDestroy(raw.get()) };
            crate::error::report_drop_error("cuGraphDestroy", r);
        });
    }
}

/// A borrowed [`Graph`]: the graph of a child graph node or the body of a conditional node,
/// owned by its node. Derefs to `Graph`; dropping it destroys nothing.
///
/// The deref is shared only (`Graph` is not `Clone`, and its `&self` methods neither destroy
/// nor give up the handle), so no owned `Graph` can be moved out of a borrowed one:
///
/// ```compile_fail,E0596
/// # fn f(
/// #     node: cuda_driver::graph::ChildGraphNode<'_>,
/// #     mine: &mut cuda_driver::graph::Graph,
/// # ) -> cuda_driver::Result<()> {
/// let mut child = node.child()?;
/// std::mem::swap(&mut *child, mine); // `mine` would then destroy the node's graph
/// # Ok(()) }
/// ```
pub struct GraphRef<'a> {
    graph: ManuallyDrop<Graph>,
    _borrow: PhantomData<&'a Graph>,
}

impl Deref for GraphRef<'_> {
    type Target = Graph;
    #[inline]
    fn deref(&self) -> &Graph {
        &self.graph
    }
}

impl Drop for GraphRef<'_> {
    fn drop(&mut self) {
        // SAFETY: the Graph inside is never used again; only its Vec and book are dropped,
        // not the handle (not ours).
        unsafe {
            ptr::drop_in_place(&mut self.graph.kept);
            ptr::drop_in_place(&mut self.graph.book);
        }
    }
}

impl std::fmt::Debug for GraphRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("GraphRef").field(&*self.graph).finish()
    }
}

impl<'a> GraphRef<'a> {
    /// Borrows a graph by its raw handle; dropping the borrow destroys nothing.
    ///
    /// # Safety
    /// `raw` is a live graph that stays alive for `'a`, and nothing else uses it from another
    /// thread meanwhile.
    ///
    /// The crate's records of the owner (see [`GraphNode::as_conditional`]) are not shared
    /// with it: a conditional node added through it is found again only through it, and a
    /// memory free node of another graph's allocation is refused on it.
    pub unsafe fn borrow_raw(raw: sys::CUgraph) -> GraphRef<'a> {
        // SAFETY: the caller's guarantees.
        unsafe { GraphRef::with_retain(raw, raw, book::SharedBook::new(true)) }
    }

    /// A borrowed graph whose keep-alives go to `retain`, recording in `book`.
    ///
    /// # Safety
    /// As for `borrow_raw`; `retain` is a live graph that runs `raw` whenever `raw` runs.
    pub(crate) unsafe fn with_retain(
        raw: sys::CUgraph,
        retain: sys::CUgraph,
        book: book::SharedBook,
    ) -> GraphRef<'a> {
        GraphRef {
            graph: ManuallyDrop::new(Graph {
                raw,
                retain,
                kept: RefCell::new(Vec::new()),
                book,
                root: false,
            }),
            _borrow: PhantomData,
        }
    }
}

/// A node of a graph (`CUgraphNode`), borrowed from it: a plain handle, `Copy`. The
/// kind-specific wrappers ([`KernelNode`], [`HostNode`], ...) deref to it; a `GraphNode`
/// becomes one with the `as_*` methods, which check the node's type.
#[doc(alias = "CUgraphNode")]
#[derive(Clone, Copy)]
pub struct GraphNode<'g> {
    raw: sys::CUgraphNode,
    graph: &'g Graph,
}

impl std::fmt::Debug for GraphNode<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphNode")
            .field("raw", &self.raw)
            .field("graph", &self.graph.raw)
            .finish()
    }
}

impl PartialEq for GraphNode<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw
    }
}
impl Eq for GraphNode<'_> {}

/// Data on a dependency edge (`CUgraphEdgeData`, CUDA 12.3): ports and the dependency type.
#[doc(alias = "CUgraphEdgeData")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EdgeData {
    /// When the dependency triggers (0: full completion of the upstream node).
    pub from_port: u8,
    /// Which part of the downstream node depends (must be 0 today).
    pub to_port: u8,
    /// The dependency type.
    pub kind: GraphDependencyType,
}

impl Default for GraphDependencyType {
    fn default() -> Self {
        GraphDependencyType::DEFAULT
    }
}

impl EdgeData {
    fn to_raw(self) -> sys::CUgraphEdgeData {
        sys::CUgraphEdgeData {
            from_port: self.from_port,
            to_port: self.to_port,
            type_: self.kind.as_raw() as u8,
            reserved: [0; 5],
        }
    }

    fn from_raw(raw: &sys::CUgraphEdgeData) -> EdgeData {
        EdgeData {
            from_port: raw.from_port,
            to_port: raw.to_port,
            kind: GraphDependencyType::from_raw(raw.type_ as _),
        }
    }
}

/// The raw handles of `deps`, checking that they belong to `graph`.
#[track_caller]
fn raw_deps(graph: &Graph, deps: &[GraphNode<'_>]) -> Result<Vec<sys::CUgraphNode>> {
    deps.iter()
        .map(|d| {
            if d.graph.raw == graph.raw {
                Ok(d.raw)
            } else {
                Err(Error::Graph(GraphError::Mismatch {
                    what: "node dependency",
                    expected: d.graph.raw as usize,
                    found: graph.raw as usize,
                }))
            }
        })
        .collect()
}

/// Reads a driver-sized list: `get(null, &mut n)` for the length, then `get(buf, &mut n)`.
#[track_caller]
fn read_list<T: Copy>(
    call: &'static str,
    null: T,
    mut get: impl FnMut(*mut T, *mut usize) -> sys::CUresult,
) -> Result<Vec<T>> {
    let mut n = 0usize;
    check(get(ptr::null_mut(), &mut n), call)?;
    let mut v = vec![null; n];
    if n > 0 {
        check(get(v.as_mut_ptr(), &mut n), call)?;
        v.truncate(n);
    }
    Ok(v)
}

impl Handle for Graph {
    type Raw = sys::CUgraph;

    /// The raw `CUgraph`, valid while `self` lives.
    #[inline]
    fn as_raw(&self) -> sys::CUgraph {
        self.raw
    }
}

impl Handle for GraphRef<'_> {
    type Raw = sys::CUgraph;

    /// The raw `CUgraph`, valid for the borrow.
    #[inline]
    fn as_raw(&self) -> sys::CUgraph {
        self.graph.raw
    }
}

impl OwnedHandle for Graph {
    type Parent<'p> = ();

    /// Takes ownership of a graph; it is destroyed on drop.
    ///
    /// # Safety
    /// `raw` is a live graph that nothing else destroys or uses from another thread.
    unsafe fn from_raw(raw: sys::CUgraph, (): ()) -> Graph {
        Graph {
            raw,
            retain: raw,
            kept: RefCell::new(Vec::new()),
            // Its memory nodes, if any, were not added through the crate.
            book: book::SharedBook::new(true),
            root: true,
        }
    }

    /// Gives up ownership: the caller destroys the graph with `cuGraphDestroy`. What the
    /// graph kept alive for its nodes is released now.
    fn into_raw(self) -> sys::CUgraph {
        give_up!(self, raw; drop(kept, book); forget(retain, root))
    }
}

impl Graph {
    /// Creates an empty graph.
    #[wraps(cuGraphCreate)]
    #[track_caller]
    pub fn new() -> Result<Graph> {
        crate::init()?;
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: writes one CUgraph; wrapped in the next statement.
            unsafe { sys::cuGraphCreate(&mut raw, 0) },
        )?;
        // SAFETY: just created, owned by nobody else.
        let g = unsafe { Graph::from_raw(raw, ()) };
        // Empty: every node it will have is added through the crate, or marks it inexact.
        g.book.lock().inexact = false;
        Ok(g)
    }

    /// Clones the graph with all its nodes, edges and keep-alives. A graph with conditional
    /// nodes cannot be cloned (the driver refuses).
    #[wraps(cuGraphClone)]
    #[track_caller]
    pub fn try_clone(&self) -> Result<Graph> {
        crate::init()?;
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: self is live; writes one CUgraph, wrapped in the next statement.
            unsafe { sys::cuGraphClone(&mut raw, self.raw) },
        )?;
        // SAFETY: just created.
        Ok(unsafe { Graph::from_raw(raw, ()) })
    }

    /// The node of `clone` (a clone of this graph made by [`try_clone`](Self::try_clone))
    /// that corresponds to `node` of this graph.
    #[wraps(cuGraphNodeFindInClone)]
    #[track_caller]
    pub fn find_in_clone<'c>(
        &self,
        node: GraphNode<'_>,
        clone: &'c Graph,
    ) -> Result<GraphNode<'c>> {
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: both graphs are live; writes one node handle.
            unsafe { sys::cuGraphNodeFindInClone(&mut raw, node.raw, clone.raw) },
        )?;
        Ok(GraphNode { raw, graph: clone })
    }

    /// Moves `value` into a user object that this graph (and its clones and execs) owns.
    /// `key` (a raw handle) retains a value once per graph; 0 always retains.
    #[track_caller]
    pub(crate) fn keep<T: Send + Sync + 'static>(
        &self,
        key: usize,
        value: impl FnOnce() -> T,
    ) -> Result<()> {
        if key != 0 && self.kept.borrow().contains(&key) {
            return Ok(());
        }
        // SAFETY: `self.retain` is live: this graph, or the graph owning it.
        unsafe { crate::stream::retain_in_graph(self.retain, value()) }?;
        if key != 0 {
            self.kept.borrow_mut().push(key);
        }
        Ok(())
    }

    /// The graph's nodes, in the driver's order.
    #[wraps(cuGraphGetNodes)]
    #[track_caller]
    pub fn nodes(&self) -> Result<Vec<GraphNode<'_>>> {
        let raw = read_list("cuGraphGetNodes", ptr::null_mut(), |p, n| {
            // SAFETY: self is live; `p` is null or has room for `*n` nodes.
            unsafe { sys::cuGraphGetNodes(self.raw, p, n) }
        })?;
        Ok(self.wrap_nodes(raw))
    }

    /// How many nodes the graph has.
    #[wraps(cuGraphGetNodes)]
    #[track_caller]
    pub fn node_count(&self) -> Result<usize> {
        let mut n = 0;
        call!(
            // SAFETY: self is live; a null array asks for the count only.
            unsafe { sys::cuGraphGetNodes(self.raw, ptr::null_mut(), &mut n) },
        )?;
        Ok(n)
    }

    /// The nodes without dependencies.
    #[wraps(cuGraphGetRootNodes)]
    #[track_caller]
    pub fn root_nodes(&self) -> Result<Vec<GraphNode<'_>>> {
        let raw = read_list("cuGraphGetRootNodes", ptr::null_mut(), |p, n| {
            // SAFETY: self is live; `p` is null or has room for `*n` nodes.
            unsafe { sys::cuGraphGetRootNodes(self.raw, p, n) }
        })?;
        Ok(self.wrap_nodes(raw))
    }

    /// The nodes without dependents (computed from [`nodes`](Self::nodes) and
    /// [`GraphNode::dependents`]; the driver has no call for it).
    #[track_caller]
    pub fn leaf_nodes(&self) -> Result<Vec<GraphNode<'_>>> {
        let mut leaves = Vec::new();
        for n in self.nodes()? {
            if n.dependents()?.is_empty() {
                leaves.push(n);
            }
        }
        Ok(leaves)
    }

    fn wrap_nodes(&self, raw: Vec<sys::CUgraphNode>) -> Vec<GraphNode<'_>> {
        raw.into_iter()
            .map(|raw| GraphNode { raw, graph: self })
            .collect()
    }

    /// Every edge `(from, to)` of the graph.
    #[wraps(cuGraphGetEdges)]
    #[track_caller]
    pub fn edges(&self) -> Result<Vec<(GraphNode<'_>, GraphNode<'_>)>> {
        let mut n = 0;
        call!(
            // SAFETY: self is live; null arrays ask for the count.
            unsafe {
                newer::cuGraphGetEdges_v1()?(self.raw, ptr::null_mut(), ptr::null_mut(), &mut n)
            },
        )?;
        let (mut from, mut to) = (vec![ptr::null_mut(); n], vec![ptr::null_mut(); n]);
        if n > 0 {
            call!(
                // SAFETY: both arrays have room for n nodes.
                unsafe {
                    newer::cuGraphGetEdges_v1()?(
                        self.raw,
                        from.as_mut_ptr(),
                        to.as_mut_ptr(),
                        &mut n,
                    )
                },
            )?;
        }
        Ok(from
            .into_iter()
            .zip(to)
            .take(n)
            .map(|(a, b)| {
                (
                    GraphNode {
                        raw: a,
                        graph: self,
                    },
                    GraphNode {
                        raw: b,
                        graph: self,
                    },
                )
            })
            .collect())
    }

    /// Every edge with its data (CUDA 12.3; [`Error::Unsupported`] before).
    #[wraps(cuGraphGetEdges_v2)]
    #[track_caller]
    pub fn edges_with_data(&self) -> Result<Vec<(GraphNode<'_>, GraphNode<'_>, EdgeData)>> {
        let mut n = 0;
        call!(
            // SAFETY: self is live; null arrays ask for the count.
            unsafe {
                newer::cuGraphGetEdges_v2()?(
                    self.raw,
                    ptr::null_mut(),
                    ptr::null_mut(),
                    ptr::null_mut(),
                    &mut n,
                )
            },
        )?;
        let (mut from, mut to) = (vec![ptr::null_mut(); n], vec![ptr::null_mut(); n]);
        let mut data = vec![EdgeData::default().to_raw(); n];
        if n > 0 {
            call!(
                // SAFETY: the three arrays have room for n entries.
                unsafe {
                    newer::cuGraphGetEdges_v2()?(
                        self.raw,
                        from.as_mut_ptr(),
                        to.as_mut_ptr(),
                        data.as_mut_ptr(),
                        &mut n,
                    )
                },
            )?;
        }
        Ok((0..n.min(from.len()))
            .map(|i| {
                (
                    GraphNode {
                        raw: from[i],
                        graph: self,
                    },
                    GraphNode {
                        raw: to[i],
                        graph: self,
                    },
                    EdgeData::from_raw(&data[i]),
                )
            })
            .collect())
    }

    /// Adds the edges `from[i] -> to[i]`.
    #[wraps(cuGraphAddDependencies)]
    #[track_caller]
    pub fn add_dependencies(&self, edges: &[(GraphNode<'_>, GraphNode<'_>)]) -> Result<()> {
        let (from, to) = self.split_edges(edges)?;
        call!(
            // SAFETY: both arrays hold `len` nodes of this graph.
            unsafe {
                newer::cuGraphAddDependencies_v1()?(
                    self.raw,
                    from.as_ptr(),
                    to.as_ptr(),
                    from.len(),
                )
            },
        )
    }

    /// Adds edges with data (CUDA 12.3; [`Error::Unsupported`] before).
    #[wraps(cuGraphAddDependencies_v2)]
    #[track_caller]
    pub fn add_dependencies_with_data(
        &self,
        edges: &[(GraphNode<'_>, GraphNode<'_>, EdgeData)],
    ) -> Result<()> {
        let pairs: Vec<_> = edges.iter().map(|e| (e.0, e.1)).collect();
        let (from, to) = self.split_edges(&pairs)?;
        let data: Vec<_> = edges.iter().map(|e| e.2.to_raw()).collect();
        call!(
            // SAFETY: the three arrays hold `len` entries.
            unsafe {
                newer::cuGraphAddDependencies_v2()?(
                    self.raw,
                    from.as_ptr(),
                    to.as_ptr(),
                    data.as_ptr(),
                    from.len(),
                )
            },
        )
    }

    /// Removes the edges `from[i] -> to[i]`.
    #[wraps(cuGraphRemoveDependencies)]
    #[track_caller]
    pub fn remove_dependencies(&self, edges: &[(GraphNode<'_>, GraphNode<'_>)]) -> Result<()> {
        let (from, to) = self.split_edges(edges)?;
        call!(
            // SAFETY: both arrays hold `len` nodes of this graph.
            unsafe {
                newer::cuGraphRemoveDependencies_v1()?(
                    self.raw,
                    from.as_ptr(),
                    to.as_ptr(),
                    from.len(),
                )
            },
        )
    }

    /// Removes edges that carry data (CUDA 12.3; [`Error::Unsupported`] before).
    #[wraps(cuGraphRemoveDependencies_v2)]
    #[track_caller]
    pub fn remove_dependencies_with_data(
        &self,
        edges: &[(GraphNode<'_>, GraphNode<'_>, EdgeData)],
    ) -> Result<()> {
        let pairs: Vec<_> = edges.iter().map(|e| (e.0, e.1)).collect();
        let (from, to) = self.split_edges(&pairs)?;
        let data: Vec<_> = edges.iter().map(|e| e.2.to_raw()).collect();
        call!(
            // SAFETY: the three arrays hold `len` entries.
            unsafe {
                newer::cuGraphRemoveDependencies_v2()?(
                    self.raw,
                    from.as_ptr(),
                    to.as_ptr(),
                    data.as_ptr(),
                    from.len(),
                )
            },
        )
    }

    #[track_caller]
    fn split_edges(
        &self,
        edges: &[(GraphNode<'_>, GraphNode<'_>)],
    ) -> Result<(Vec<sys::CUgraphNode>, Vec<sys::CUgraphNode>)> {
        let from: Vec<_> = edges.iter().map(|e| e.0).collect();
        let to: Vec<_> = edges.iter().map(|e| e.1).collect();
        Ok((raw_deps(self, &from)?, raw_deps(self, &to)?))
    }

    /// Writes the graph in the DOT language (Graphviz) to `path`.
    #[wraps(cuGraphDebugDotPrint)]
    #[track_caller]
    pub fn debug_dot_to_file(
        &self,
        path: impl AsRef<Path>,
        flags: GraphDebugDotFlags,
    ) -> Result<()> {
        let path = path.as_ref();
        let s = path.to_str().ok_or_else(|| Error::InvalidString {
            what: "path",
            value: path.to_string_lossy().into_owned(),
            reason: "not valid UTF-8",
        })?;
        let c = CString::new(s).map_err(|_| Error::InvalidString {
            what: "path",
            value: s.to_owned(),
            reason: "contains a NUL byte",
        })?;
        call!(
            // SAFETY: self is live; `c` is a NUL-terminated path alive for the call.
            unsafe { sys::cuGraphDebugDotPrint(self.raw, c.as_ptr(), flags.as_raw()) },
        )
    }

    /// The graph in the DOT language (Graphviz), through a temporary file.
    #[wraps(cuGraphDebugDotPrint)]
    #[track_caller]
    pub fn debug_dot_string(&self, flags: GraphDebugDotFlags) -> Result<String> {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "cuda-driver-graph-{}-{}.dot",
            std::process::id(),
            N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        self.debug_dot_to_file(&path, flags)?;
        let text = std::fs::read_to_string(&path);
        let _ = std::fs::remove_file(&path);
        text.map_err(|e| Error::UnexpectedValue {
            call: "cuGraphDebugDotPrint",
            reason: format!("cannot read the DOT file back: {e}"),
        })
    }
}

impl Handle for GraphNode<'_> {
    type Raw = sys::CUgraphNode;

    /// The raw `CUgraphNode`, valid while the node is in its graph.
    #[inline]
    fn as_raw(&self) -> sys::CUgraphNode {
        self.raw
    }
}

impl<'g> GraphNode<'g> {
    /// Borrows a node of `graph` by its raw handle (a node is never released on its own).
    ///
    /// # Safety
    /// `raw` is a node of `graph`.
    pub unsafe fn borrow_raw(raw: sys::CUgraphNode, graph: &'g Graph) -> GraphNode<'g> {
        GraphNode { raw, graph }
    }

    /// The graph the node belongs to.
    #[inline]
    pub fn graph(&self) -> &'g Graph {
        self.graph
    }

    /// The node's type.
    #[wraps(cuGraphNodeGetType)]
    #[track_caller]
    pub fn node_type(&self) -> Result<GraphNodeType> {
        let mut t = 0;
        call!(
            // SAFETY: the node is live; writes one enum value.
            unsafe { sys::cuGraphNodeGetType(self.raw, &mut t) },
        )?;
        Ok(GraphNodeType::from_raw(t))
    }

    /// The node's type, or [`GraphError::NodeKind`] when it is not `expected`.
    #[track_caller]
    pub(crate) fn expect(&self, what: &'static str, expected: GraphNodeType) -> Result<()> {
        let found = self.node_type()?;
        if found == expected {
            Ok(())
        } else {
            Err(Error::Graph(GraphError::NodeKind {
                what,
                expected,
                found,
            }))
        }
    }

    /// The nodes this one depends on.
    #[wraps(cuGraphNodeGetDependencies)]
    #[track_caller]
    pub fn dependencies(&self) -> Result<Vec<GraphNode<'g>>> {
        let f = newer::cuGraphNodeGetDependencies_v1()?;
        let raw = read_list("cuGraphNodeGetDependencies", ptr::null_mut(), |p, n| {
            // SAFETY: the node is live; `p` is null or has room for `*n` nodes.
            unsafe { f(self.raw, p, n) }
        })?;
        Ok(self.graph.wrap_nodes(raw))
    }

    /// The nodes that depend on this one.
    #[wraps(cuGraphNodeGetDependentNodes)]
    #[track_caller]
    pub fn dependents(&self) -> Result<Vec<GraphNode<'g>>> {
        let f = newer::cuGraphNodeGetDependentNodes_v1()?;
        let raw = read_list("cuGraphNodeGetDependentNodes", ptr::null_mut(), |p, n| {
            // SAFETY: the node is live; `p` is null or has room for `*n` nodes.
            unsafe { f(self.raw, p, n) }
        })?;
        Ok(self.graph.wrap_nodes(raw))
    }

    /// Removes the node and its edges from the graph.
    ///
    /// # Safety
    /// No copy of this handle (nor a wrapper of it) is used afterwards.
    #[wraps(cuGraphDestroyNode)]
    #[track_caller]
    pub unsafe fn destroy(self) -> Result<()> {
        call!(
            // SAFETY: the node is live; the caller does not use it again.
            unsafe { sys::cuGraphDestroyNode(self.raw) },
        )?;
        // A later node may get the same handle: forget this one's records (and its bodies').
        self.graph.book.lock().forget_node(self.graph.raw, self.raw);
        Ok(())
    }
}

/// The raw pointer of a slice, or null when it is empty (as the driver wants for "none").
fn ptr_or_null<T>(v: &[T]) -> *const T {
    if v.is_empty() {
        ptr::null()
    } else {
        v.as_ptr()
    }
}

#[cfg(test)]
pub(crate) mod tests;
