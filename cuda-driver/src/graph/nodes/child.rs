//! Child graph nodes.

use super::*;
#[allow(unused_imports)]
use cuda_driver_macros::call;

impl Graph {
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
        call!(
            // SAFETY: both graphs are live; the driver clones `child` (GPU test
            // graph::nodes::every_node_kind_runs drops the child after adding it, then runs the
            // graph).
            unsafe {
                sys::cuGraphAddChildGraphNode(
                    &mut raw,
                    self.raw,
                    ptr_or_null(&d),
                    d.len(),
                    child.raw,
                )
            },
        )?;
        Ok(ChildGraphNode(GraphNode { raw, graph: self }))
    }
}

impl<'g> ChildGraphNode<'g> {
    /// The node's graph (the clone it runs), borrowed; nodes added to it run in the parent.
    #[wraps(cuGraphChildGraphNodeGetGraph)]
    #[track_caller]
    pub fn child(&self) -> Result<GraphRef<'g>> {
        let mut g = ptr::null_mut();
        call!(
            // SAFETY: a live child graph node; writes one handle owned by the node.
            unsafe { sys::cuGraphChildGraphNodeGetGraph(self.0.raw, &mut g) },
        )?;
        // SAFETY: owned by the node, alive while its graph (borrowed for 'g) is; it shares
        // the parent's book, so conditional nodes added to it are found again.
        Ok(unsafe { GraphRef::with_retain(g, g, self.0.graph.book.clone()) })
    }
}
