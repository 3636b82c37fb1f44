//! Graph nodes: the typed handles of every node kind, the generic node operations, and one
//! file per node kind (adding it to a [`Graph`], reading and changing its parameters, and its
//! updates in an executable graph).

//! Graph nodes of every kind: adding them to a [`Graph`], their typed handles and parameters.

use crate::context::Context;
use crate::count::count_u32;
use crate::entry_point::newer;
use crate::error::Error;
use crate::error::Result;
use crate::event::Event;
use crate::graph::ptr_or_null;
use crate::graph::raw_deps;
use crate::graph::Graph;
use crate::graph::GraphExec;
use crate::graph::GraphNode;
use crate::graph::GraphRef;
use crate::handle::Handle;
use crate::interop::ExternalSemaphore;
use crate::interop::SemaphoreOp;
use crate::types::ExternalSemaphoreSignalFlags;
use crate::types::ExternalSemaphoreWaitFlags;

use crate::interop::SemaphoreValue;
use crate::launch::KernelArgs;
use crate::launch::LaunchConfig;
use crate::library::Kernel;
use crate::memory::DeviceSlice;
use crate::memory::DeviceSliceMut;
use crate::memory::MemsetValue;
use crate::module::function::Function;
use crate::params::KernelParams;
use crate::repr::DeviceRepr;
use crate::stream::shared_host_fn_trampoline;
use crate::types::GraphConditionalNodeType;
use crate::types::GraphNodeType;
use crate::types::StreamBatchMemOpType;
use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;
use std::ffi::c_void;
use std::ops::Deref;
use std::ptr;
use std::sync::Arc;

pub(crate) mod child;
pub(crate) mod conditional;
pub(crate) mod copy;
pub(crate) mod event;
pub(crate) mod host;
pub(crate) mod host_data;
pub(crate) mod kernel;
pub(crate) mod memop;
pub(crate) mod semaphore;

pub(crate) use kernel::*;

pub use copy::*;
pub use memop::*;

pub use conditional::*;

macro_rules! node_kind {
    ($(#[$m:meta])* $name:ident, $kind:ident, $as:ident) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name<'g>(pub(in crate::graph) GraphNode<'g>);

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
            #[doc = concat!(
                "This node as a [`", stringify!($name), "`], or ",
                "[`GraphError::NodeKind`](crate::error::graph::GraphError::NodeKind) ",
                "when it is of another type."
            )]
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

impl Graph {
    /// Adds an empty node (a join point).
    #[wraps(cuGraphAddEmptyNode)]
    #[track_caller]
    pub fn add_empty(&self, deps: &[GraphNode<'_>]) -> Result<GraphNode<'_>> {
        let d = raw_deps(self, deps)?;
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: the graph is live; `d` holds its nodes.
            unsafe { sys::cuGraphAddEmptyNode(&mut raw, self.raw, ptr_or_null(&d), d.len()) },
        )?;
        Ok(GraphNode { raw, graph: self })
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
        call!(
            // SAFETY: a live node; the caller's guarantees on `params`.
            unsafe { newer::cuGraphNodeSetParams()?(self.as_raw(), params) },
        )
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
