//! What an exec's launches allocate and free ([`ExecMemory`]), recorded when a graph with
//! memory nodes is instantiated, and the owners of memory launches left allocated
//! ([`Owners`]), shared with the graph's book. The launches that hand such memory out are in
//! [`launch_memory`](super::launch_memory).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use cuda_driver_sys as sys;

use super::{Graph, GraphNodeType};
use crate::error::{Error, Result};
use crate::event::Event;
use crate::stream::Stream;
use crate::types::EventFlags;
use crate::types::GraphInstantiateFlags;

/// What an exec's launches allocate and free, recorded at instantiation.
#[derive(Debug, Default, Clone)]
pub(crate) struct ExecMemory {
    /// Allocations of the graph it does not free: each launch makes them anew.
    pub(crate) unfreed: Vec<(sys::CUdeviceptr, usize)>,
    /// Addresses of another graph's allocations that the graph's free nodes free.
    pub(crate) foreign: Vec<sys::CUdeviceptr>,
    /// Instantiated with `AUTO_FREE_ON_LAUNCH`: each launch frees the previous one's memory.
    pub(crate) auto_free: bool,
    /// The owners of memory left allocated by launches of the graph (the graph's book's).
    pub(crate) owners: Arc<Owners>,
}

/// The owners of memory that launches of one graph left allocated: how many are alive, and
/// the events recorded after the frees of earlier ones.
#[derive(Debug, Default)]
pub(crate) struct Owners {
    /// How many owners ([`GraphMemory`](super::GraphMemory)) are alive.
    pub(super) live: AtomicUsize,
    /// Events recorded after frees of such memory (on the stream each free was queued on),
    /// which the next launch of the graph waits for, so that it allocates the same address
    /// again only after the work that used the freed memory.
    fences: Mutex<Vec<Event>>,
}

impl Owners {
    pub(super) fn fences(&self) -> std::sync::MutexGuard<'_, Vec<Event>> {
        self.fences.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Fences a free just queued on `stream` (or a launch there that frees): an event
    /// recorded there for the next launch of the graph to wait for; where that fails, waits
    /// for the stream instead (and counts a failure of that).
    pub(super) fn fence(&self, stream: &Stream) {
        let event = Event::new(stream.context(), EventFlags::DISABLE_TIMING)
            .and_then(|e| e.record(stream).map(|()| e));
        match event {
            Ok(e) => self.fences().push(e),
            Err(_) => {
                if let Err(e) = stream.synchronize() {
                    crate::error::report_drop_problem(&format_args!(
                        "graph memory freed on a stream that can be neither fenced nor waited \
                         for: {e}"
                    ));
                }
            }
        }
    }
}

impl ExecMemory {
    /// Prepares a launch on `stream` of an exec of the graph: refuses it while memory an
    /// earlier launch left allocated is owned (the launch would allocate it again at the same
    /// address under its owner), and makes `stream` wait for the frees of earlier owners.
    #[track_caller]
    pub(crate) fn before_launch(&self, what: &'static str, stream: &Stream) -> Result<()> {
        if self.auto_free || self.unfreed.is_empty() {
            return Ok(());
        }
        self.check_unowned(what)?;
        let mut fences = self.owners.fences();
        while let Some(e) = fences.last() {
            stream.wait_event(e)?;
            fences.pop();
        }
        Ok(())
    }

    /// Refuses a launch or change of the exec while memory an earlier launch left allocated
    /// is owned.
    #[track_caller]
    pub(crate) fn check_unowned(&self, what: &'static str) -> Result<()> {
        if !self.unfreed.is_empty() && self.owners.live.load(Ordering::Acquire) != 0 {
            return Err(Error::InvalidArgument(format!(
                "{what}: memory that an earlier launch of the graph left allocated is still \
                 owned (a GraphMemory): free it first"
            )));
        }
        Ok(())
    }
}

impl Graph {
    /// What an exec of this graph, instantiated with `flags`, allocates and frees at each
    /// launch (none when the graph has no memory nodes).
    #[track_caller]
    pub(crate) fn exec_memory(&self, flags: GraphInstantiateFlags) -> Result<Option<ExecMemory>> {
        let (mut allocs, mut frees, foreign, inexact, owners) = {
            let b = self.book.lock();
            (
                b.allocs.clone(),
                b.frees.clone(),
                b.foreign_frees.clone(),
                b.inexact,
                b.owners.clone(),
            )
        };
        if inexact {
            // Captured or adopted graphs: read the memory nodes themselves.
            allocs.clear();
            frees.clear();
            for n in self.nodes()? {
                match n.node_type()? {
                    GraphNodeType::MEM_ALLOC => allocs.push(n.as_mem_alloc()?.allocation()?),
                    GraphNodeType::MEM_FREE => frees.push(n.as_mem_free()?.address()?),
                    _ => {}
                }
            }
        }
        if allocs.is_empty() && foreign.is_empty() {
            return Ok(None);
        }
        let unfreed = allocs
            .into_iter()
            .filter(|(p, _)| !frees.contains(p))
            .collect();
        Ok(Some(ExecMemory {
            unfreed,
            foreign,
            auto_free: flags.contains(GraphInstantiateFlags::AUTO_FREE_ON_LAUNCH),
            owners,
        }))
    }
}
