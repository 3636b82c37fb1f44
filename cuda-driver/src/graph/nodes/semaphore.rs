//! External-semaphore signal and wait nodes.

use super::*;
use crate::handle::Handle;
#[allow(unused_imports)]
use cuda_driver_macros::call;

/// The node parameters of `sems` with `flags` (signal or wait), handed to `f` while the
/// arrays they name live: the one builder of both nodes' parameters.
#[track_caller]
fn with_node_params<F: SemaphoreOp, R>(
    sems: &[(&Arc<ExternalSemaphore>, SemaphoreValue)],
    flags: F,
    f: impl FnOnce(&F::NodeParams) -> Result<R>,
) -> Result<R> {
    let (mut raws, mut params): (Vec<_>, Vec<_>) = sems
        .iter()
        .map(|(s, v)| (s.as_raw(), flags.params(*v)))
        .unzip();
    let n = count_u32("an external semaphore node", "semaphores", raws.len())?;
    f(&F::node_params(raws.as_mut_ptr(), params.as_mut_ptr(), n))
}

/// Reads a signal or wait node's semaphores and values from the driver's arrays.
///
/// # Safety
/// `raws` and `params` point to `n` elements (or are null with `n == 0`).
unsafe fn read_sems<P>(
    raws: *const sys::CUexternalSemaphore,
    params: *const P,
    n: u32,
    value: impl Fn(&P) -> SemaphoreValue,
) -> Vec<(sys::CUexternalSemaphore, SemaphoreValue)> {
    if n == 0 || raws.is_null() || params.is_null() {
        return Vec::new();
    }
    // SAFETY: the caller's guarantee.
    let (r, p) = unsafe {
        (
            std::slice::from_raw_parts(raws, n as usize),
            std::slice::from_raw_parts(params, n as usize),
        )
    };
    r.iter().zip(p).map(|(&s, q)| (s, value(q))).collect()
}

fn signal_value(p: &sys::CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS) -> SemaphoreValue {
    SemaphoreValue {
        fence: p.params.fence.value,
        key: p.params.keyedMutex.key,
        timeout_ms: 0,
    }
}

fn wait_value(p: &sys::CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS) -> SemaphoreValue {
    SemaphoreValue {
        fence: p.params.fence.value,
        key: p.params.keyedMutex.key,
        timeout_ms: p.params.keyedMutex.timeoutMs,
    }
}

impl Graph {
    /// Adds a node signalling each semaphore with its value; the graph keeps the
    /// semaphores alive. Untested on these machines (nothing here exports a semaphore).
    #[wraps(cuGraphAddExternalSemaphoresSignalNode)]
    #[track_caller]
    pub fn add_external_semaphores_signal(
        &self,
        deps: &[GraphNode<'_>],
        sems: &[(&Arc<ExternalSemaphore>, SemaphoreValue)],
        flags: ExternalSemaphoreSignalFlags,
    ) -> Result<ExtSemSignalNode<'_>> {
        let d = raw_deps(self, deps)?;
        for (s, _) in sems {
            self.keep(s.as_raw() as usize, || Arc::clone(s))?;
        }
        let mut raw = ptr::null_mut();
        with_node_params(sems, flags, |p| {
            call!(
                // SAFETY: the graph is live; `p` points to arrays alive for the call (copied);
                // the graph keeps the semaphores.
                unsafe {
                    sys::cuGraphAddExternalSemaphoresSignalNode(
                        &mut raw,
                        self.raw,
                        ptr_or_null(&d),
                        d.len(),
                        p,
                    )
                },
            )
        })?;
        GraphNode { raw, graph: self }.as_external_semaphores_signal()
    }

    /// Adds a node waiting for each semaphore (for at least its value, for fences); the
    /// graph keeps the semaphores alive. Untested on these machines.
    #[wraps(cuGraphAddExternalSemaphoresWaitNode)]
    #[track_caller]
    pub fn add_external_semaphores_wait(
        &self,
        deps: &[GraphNode<'_>],
        sems: &[(&Arc<ExternalSemaphore>, SemaphoreValue)],
        flags: ExternalSemaphoreWaitFlags,
    ) -> Result<ExtSemWaitNode<'_>> {
        let d = raw_deps(self, deps)?;
        for (s, _) in sems {
            self.keep(s.as_raw() as usize, || Arc::clone(s))?;
        }
        let mut raw = ptr::null_mut();
        with_node_params(sems, flags, |p| {
            call!(
                // SAFETY: as in add_external_semaphores_signal.
                unsafe {
                    sys::cuGraphAddExternalSemaphoresWaitNode(
                        &mut raw,
                        self.raw,
                        ptr_or_null(&d),
                        d.len(),
                        p,
                    )
                },
            )
        })?;
        GraphNode { raw, graph: self }.as_external_semaphores_wait()
    }
}

impl<'g> ExtSemSignalNode<'g> {
    /// The node's raw semaphores and values.
    #[wraps(cuGraphExternalSemaphoresSignalNodeGetParams)]
    #[track_caller]
    pub fn params(&self) -> Result<Vec<(sys::CUexternalSemaphore, SemaphoreValue)>> {
        // SAFETY: a plain C struct; zero is valid.
        let mut p: sys::CUDA_EXT_SEM_SIGNAL_NODE_PARAMS = unsafe { std::mem::zeroed() };
        call!(
            // SAFETY: a live node; writes one struct naming arrays the node owns.
            unsafe { sys::cuGraphExternalSemaphoresSignalNodeGetParams(self.as_raw(), &mut p) },
        )?;
        // SAFETY: the node's arrays of `numExtSems` elements, copied out at once.
        Ok(unsafe { read_sems(p.extSemArray, p.paramsArray, p.numExtSems, signal_value) })
    }

    /// Replaces the node's semaphores and values; the graph keeps the new semaphores alive.
    #[wraps(cuGraphExternalSemaphoresSignalNodeSetParams)]
    #[track_caller]
    pub fn set(
        &self,
        sems: &[(&Arc<ExternalSemaphore>, SemaphoreValue)],
        flags: ExternalSemaphoreSignalFlags,
    ) -> Result<()> {
        for (s, _) in sems {
            self.graph.keep(s.as_raw() as usize, || Arc::clone(s))?;
        }
        with_node_params(sems, flags, |p| {
            call!(
                // SAFETY: a live node; `p` points to arrays alive for the call (copied).
                unsafe { sys::cuGraphExternalSemaphoresSignalNodeSetParams(self.as_raw(), p) },
            )
        })
    }
}

impl<'g> ExtSemWaitNode<'g> {
    /// The node's raw semaphores and values.
    #[wraps(cuGraphExternalSemaphoresWaitNodeGetParams)]
    #[track_caller]
    pub fn params(&self) -> Result<Vec<(sys::CUexternalSemaphore, SemaphoreValue)>> {
        // SAFETY: a plain C struct; zero is valid.
        let mut p: sys::CUDA_EXT_SEM_WAIT_NODE_PARAMS = unsafe { std::mem::zeroed() };
        call!(
            // SAFETY: a live node; writes one struct naming arrays the node owns.
            unsafe { sys::cuGraphExternalSemaphoresWaitNodeGetParams(self.as_raw(), &mut p) },
        )?;
        // SAFETY: the node's arrays of `numExtSems` elements, copied out at once.
        Ok(unsafe { read_sems(p.extSemArray, p.paramsArray, p.numExtSems, wait_value) })
    }

    /// Replaces the node's semaphores and values; the graph keeps the new semaphores alive.
    #[wraps(cuGraphExternalSemaphoresWaitNodeSetParams)]
    #[track_caller]
    pub fn set(
        &self,
        sems: &[(&Arc<ExternalSemaphore>, SemaphoreValue)],
        flags: ExternalSemaphoreWaitFlags,
    ) -> Result<()> {
        for (s, _) in sems {
            self.graph.keep(s.as_raw() as usize, || Arc::clone(s))?;
        }
        with_node_params(sems, flags, |p| {
            call!(
                // SAFETY: a live node; `p` points to arrays alive for the call (copied).
                unsafe { sys::cuGraphExternalSemaphoresWaitNodeSetParams(self.as_raw(), p) },
            )
        })
    }
}

impl GraphExec {
    /// Replaces a signal node's semaphores and values in this exec only; the exec keeps
    /// them alive.
    #[wraps(cuGraphExecExternalSemaphoresSignalNodeSetParams)]
    #[track_caller]
    pub fn set_external_semaphores_signal_node(
        &mut self,
        node: ExtSemSignalNode<'_>,
        sems: &[(&Arc<ExternalSemaphore>, SemaphoreValue)],
        flags: ExternalSemaphoreSignalFlags,
    ) -> Result<()> {
        with_node_params(sems, flags, |p| {
            call!(
                // SAFETY: a node of the exec's graph; arrays alive for the call; the exec
                // keeps the semaphores (below).
                unsafe {
                    sys::cuGraphExecExternalSemaphoresSignalNodeSetParams(
                        self.as_raw(),
                        node.as_raw(),
                        p,
                    )
                },
            )
        })?;
        for (s, _) in sems {
            self.keep_value(s.as_raw() as usize, || Arc::clone(s));
        }
        Ok(())
    }

    /// Replaces a wait node's semaphores and values in this exec only; the exec keeps them
    /// alive.
    #[wraps(cuGraphExecExternalSemaphoresWaitNodeSetParams)]
    #[track_caller]
    pub fn set_external_semaphores_wait_node(
        &mut self,
        node: ExtSemWaitNode<'_>,
        sems: &[(&Arc<ExternalSemaphore>, SemaphoreValue)],
        flags: ExternalSemaphoreWaitFlags,
    ) -> Result<()> {
        with_node_params(sems, flags, |p| {
            call!(
                // SAFETY: as in set_external_semaphores_signal_node.
                unsafe {
                    sys::cuGraphExecExternalSemaphoresWaitNodeSetParams(
                        self.as_raw(),
                        node.as_raw(),
                        p,
                    )
                },
            )
        })?;
        for (s, _) in sems {
            self.keep_value(s.as_raw() as usize, || Arc::clone(s));
        }
        Ok(())
    }
}
