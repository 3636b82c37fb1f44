//! Errors of graphs and stream capture: a graph's objects used with another graph, a node
//! of the wrong kind, an instantiation or update the driver refused, a capture that failed.
//!
//! Re-exported as [`crate::graph::GraphError`]; an [`Error`](super::Error) holds one as
//! [`Error::Graph`](super::Error::Graph).

use std::fmt;
use std::panic::Location;

use crate::types::GraphExecUpdateResult;
use crate::types::GraphInstantiateResult;
use crate::types::GraphNodeType;

/// A graph or a stream capture refused an operation (see the [module docs](self)).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum GraphError {
    /// An object of one graph used with another graph (a conditional handle created for
    /// another graph, a node of another graph as a dependency).
    #[error(
        "{what}: the object belongs to graph {expected:#x}, but is used with graph {found:#x}"
    )]
    Mismatch {
        /// The operation.
        what: &'static str,
        /// The raw `CUgraph` the object belongs to.
        expected: usize,
        /// The raw `CUgraph` it was used with.
        found: usize,
    },

    /// `cuGraphExecUpdate` refused the graph; the result info says why and where.
    #[error("{}", GraphUpdateDisplay { reason: *reason, node: *node, from_node: *from_node })]
    Update {
        /// Why (`CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED`, ...).
        reason: GraphExecUpdateResult,
        /// The raw `CUgraphNode` the error is about (the "to" node of a mismatching edge), or
        /// 0 when the error is not about one node.
        node: usize,
        /// The "from" node of a mismatching edge, or 0.
        from_node: usize,
    },

    /// `cuGraphInstantiateWithParams` refused the graph.
    #[error("cannot instantiate the graph: {reason:?} (error node {node:#x})")]
    Instantiate {
        /// Why (`CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE`, ...).
        reason: GraphInstantiateResult,
        /// The raw `CUgraphNode` at fault, or 0.
        node: usize,
    },

    /// A node of one kind where another kind is needed (the parameters of a memset asked of a
    /// kernel node).
    #[error("{what} needs a node of type {expected:?}, but the node is {found:?}")]
    NodeKind {
        /// The operation.
        what: &'static str,
        /// The kind it needs.
        expected: GraphNodeType,
        /// The node's kind.
        found: GraphNodeType,
    },

    /// [`Stream::launch_host_fn`](crate::Stream::launch_host_fn) on a stream being captured:
    /// its `FnOnce` would be freed by the first of the graph's replays. Nothing was queued and
    /// the capture is still valid; use
    /// [`Stream::launch_host_fn_repeatable`](crate::Stream::launch_host_fn_repeatable).
    #[error(
        "{what}: the stream is being captured, and a captured host function may run many \
         times, but this closure is FnOnce; use Stream::launch_host_fn_repeatable"
    )]
    HostFnNotReplayable {
        /// The operation.
        what: &'static str,
    },

    /// A stream capture was invalidated, typically by a call not allowed during capture (a
    /// synchronizing call during a global-mode capture); `cuStreamEndCapture` returned
    /// `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED` and no graph was made.
    #[error("the stream capture was invalidated (an operation not allowed during capture was made while it ran), at {location}")]
    CaptureInvalidated {
        /// Where the capture was ended.
        location: &'static Location<'static>,
    },

    /// A capture was ended on another thread than the one that began it, in the global or
    /// thread-local mode (`CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD`).
    #[error("the stream capture was begun on another thread (global or thread-local mode), at {location}")]
    CaptureWrongThread {
        /// Where the capture was ended.
        location: &'static Location<'static>,
    },
}

struct GraphUpdateDisplay {
    reason: GraphExecUpdateResult,
    node: usize,
    from_node: usize,
}

impl fmt::Display for GraphUpdateDisplay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why = match self.reason {
            GraphExecUpdateResult::ERROR_TOPOLOGY_CHANGED => {
                "the graph's topology differs from the executable graph's"
            }
            GraphExecUpdateResult::ERROR_NODE_TYPE_CHANGED => "a node's type changed",
            GraphExecUpdateResult::ERROR_FUNCTION_CHANGED
            | GraphExecUpdateResult::ERROR_UNSUPPORTED_FUNCTION_CHANGE => {
                "a kernel node's function changed in a way that cannot be updated"
            }
            GraphExecUpdateResult::ERROR_PARAMETERS_CHANGED => {
                "a node's parameters changed in a way that cannot be updated"
            }
            GraphExecUpdateResult::ERROR_NOT_SUPPORTED => {
                "something about a node cannot be updated"
            }
            GraphExecUpdateResult::ERROR_ATTRIBUTES_CHANGED => {
                "a node's attributes changed in a way that cannot be updated"
            }
            _ => "the update failed",
        };
        write!(
            f,
            "cannot update the executable graph: {why} ({:?}",
            self.reason
        )?;
        if self.node != 0 {
            write!(f, ", node {:#x}", self.node)?;
        }
        if self.from_node != 0 {
            write!(f, ", edge from node {:#x}", self.from_node)?;
        }
        write!(f, ")")
    }
}
