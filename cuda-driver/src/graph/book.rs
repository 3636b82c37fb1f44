//! What the crate records about a graph because the driver cannot be asked: the handles and
//! body graphs of conditional nodes (CUDA 13.0 has no `cuGraphNodeGetParams`), and the memory
//! nodes added through the crate (which allocations the graph frees, and which free nodes free
//! another graph's allocation).
//!
//! One book is shared by an owned [`Graph`](super::Graph) and every borrowed graph reached
//! from it (the bodies of its conditional nodes, the graphs of its child graph nodes), so a
//! conditional node added to a body is found again through any later borrow of that body.
//! Entries are keyed by the raw graph and node together; a clone or a graph the crate did not
//! build has a book of its own, empty at first, so no entry ever names another graph's bodies.

use std::sync::{Arc, Mutex, MutexGuard};

use cuda_driver_sys as sys;

use super::exec_memory::Owners;
use super::nodes::ConditionalHandle;
use crate::types::GraphConditionalNodeType;

/// A conditional node as it was created.
#[derive(Clone, Debug)]
pub(crate) struct ConditionalRecord {
    pub(crate) graph: sys::CUgraph,
    pub(crate) node: sys::CUgraphNode,
    pub(crate) handle: ConditionalHandle,
    pub(crate) kind: GraphConditionalNodeType,
    pub(crate) bodies: Vec<sys::CUgraph>,
}

/// The book of one graph tree.
#[derive(Debug, Default)]
pub(crate) struct Book {
    conditionals: Vec<ConditionalRecord>,
    /// Allocation nodes added to the owned graph: address and size.
    pub(crate) allocs: Vec<(sys::CUdeviceptr, usize)>,
    /// Addresses freed by free nodes of the owned graph, its own allocations or not.
    pub(crate) frees: Vec<sys::CUdeviceptr>,
    /// Addresses of another graph's allocations that free nodes of the owned graph free.
    pub(crate) foreign_frees: Vec<sys::CUdeviceptr>,
    /// Whether memory nodes may have reached the owned graph outside the crate's node calls
    /// (a capture, a raw handle): the graph's nodes are then read at instantiation.
    pub(crate) inexact: bool,
    /// The owners ([`GraphMemory`](super::GraphMemory)) of memory that launches of the owned
    /// graph left allocated: how many live, and the fences of their frees.
    pub(crate) owners: Arc<Owners>,
}

// SAFETY: the raw handles in a book are plain addresses used as keys, handed out only through
// the graph that owns them (borrowed for the graph's lifetime); nothing is dereferenced.
unsafe impl Send for Book {}

/// A shared book.
#[derive(Clone, Debug, Default)]
pub(crate) struct SharedBook(Arc<Mutex<Book>>);

impl SharedBook {
    /// A book for a graph whose nodes the crate did not all add (`inexact`).
    pub(crate) fn new(inexact: bool) -> SharedBook {
        SharedBook(Arc::new(Mutex::new(Book {
            inexact,
            ..Book::default()
        })))
    }

    /// The book, locked (a poisoned lock is taken over: the book is plain data).
    pub(crate) fn lock(&self) -> MutexGuard<'_, Book> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Book {
    /// Records a conditional node, replacing any stale entry of the same node.
    pub(crate) fn add_conditional(&mut self, rec: ConditionalRecord) {
        self.forget_node(rec.graph, rec.node);
        self.conditionals.push(rec);
    }

    /// The record of conditional node `node` of `graph`.
    pub(crate) fn conditional(
        &self,
        graph: sys::CUgraph,
        node: sys::CUgraphNode,
    ) -> Option<&ConditionalRecord> {
        self.conditionals
            .iter()
            .find(|r| r.graph == graph && r.node == node)
    }

    /// Forgets node `node` of `graph` (destroyed): its record, and the records of every node
    /// in its body graphs, which the driver destroyed with it.
    pub(crate) fn forget_node(&mut self, graph: sys::CUgraph, node: sys::CUgraphNode) {
        let mut dead_graphs = Vec::new();
        self.conditionals.retain(|r| {
            let hit = r.graph == graph && r.node == node;
            if hit {
                dead_graphs.extend(r.bodies.iter().copied());
            }
            !hit
        });
        while let Some(g) = dead_graphs.pop() {
            self.conditionals.retain(|r| {
                if r.graph == g {
                    dead_graphs.extend(r.bodies.iter().copied());
                    false
                } else {
                    true
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(graph: usize, node: usize, bodies: &[usize]) -> ConditionalRecord {
        ConditionalRecord {
            graph: graph as sys::CUgraph,
            node: node as sys::CUgraphNode,
            handle: ConditionalHandle {
                raw: 0,
                graph: graph as sys::CUgraph,
            },
            kind: GraphConditionalNodeType::IF,
            bodies: bodies.iter().map(|&b| b as sys::CUgraph).collect(),
        }
    }

    #[test]
    fn records_are_keyed_by_graph_and_node() {
        let mut b = Book::default();
        b.add_conditional(rec(1, 10, &[100]));
        assert!(b.conditional(1 as _, 10 as _).is_some());
        // The same node handle in another graph (a clone) is not found.
        assert!(b.conditional(2 as _, 10 as _).is_none());
    }

    #[test]
    fn forgetting_a_node_forgets_the_nodes_of_its_bodies() {
        let mut b = Book::default();
        b.add_conditional(rec(1, 10, &[100, 101]));
        b.add_conditional(rec(100, 20, &[200]));
        b.add_conditional(rec(200, 30, &[300]));
        b.add_conditional(rec(1, 11, &[102]));
        b.forget_node(1 as _, 10 as _);
        assert!(b.conditional(1 as _, 10 as _).is_none());
        assert!(b.conditional(100 as _, 20 as _).is_none());
        assert!(b.conditional(200 as _, 30 as _).is_none());
        assert!(b.conditional(1 as _, 11 as _).is_some());
    }

    #[test]
    fn a_new_record_of_a_node_replaces_the_stale_one() {
        let mut b = Book::default();
        b.add_conditional(rec(1, 10, &[100]));
        b.add_conditional(rec(1, 10, &[555]));
        assert_eq!(
            b.conditional(1 as _, 10 as _).unwrap().bodies,
            vec![555 as sys::CUgraph]
        );
    }
}
