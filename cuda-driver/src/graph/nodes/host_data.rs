//! Host nodes over page-locked memory the program shares with them
//! ([`SharedPinnedBuffer`]), instead of an address smuggled into the closure.

use cuda_driver_macros::wraps;

use crate::error::Result;
use crate::graph::{Graph, GraphNode, HostNode};
use crate::memory::SharedPinnedBuffer;
use crate::repr::DeviceRepr;

impl Graph {
    /// Adds a host node that runs `f` with the elements of `data` at each execution, as
    /// [`add_host`](Self::add_host) does; the node holds a handle of `data`, so the memory
    /// lives as long as the graph, its clones and execs.
    ///
    /// The graph's launches are not ordered with `data`'s other uses, so the node checks at
    /// run time: `f` runs only when no use queued through `data` is pending and no guard or
    /// other node has the memory, and the run is skipped (counted in
    /// [`SharedPinnedBuffer::skipped_host_nodes`]) otherwise; see
    /// [When who may touch it](SharedPinnedBuffer#when-who-may-touch-it). A device-to-host copy
    /// node writing `data` in the same graph is not offered safely (its address would be
    /// raw): queue such copies with [`SharedPinnedBuffer::copy_from_device_async`].
    #[wraps(cuGraphAddHostNode)]
    #[track_caller]
    pub fn add_host_with<T, F>(
        &self,
        deps: &[GraphNode<'_>],
        data: &SharedPinnedBuffer<T>,
        f: F,
    ) -> Result<HostNode<'_>>
    where
        T: DeviceRepr + Send,
        F: Fn(&mut [T]) + Send + Sync + 'static,
    {
        self.add_host(deps, data.node_closure(f))
    }
}
