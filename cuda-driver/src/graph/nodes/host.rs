//! Host nodes: Rust closures the graph runs on a driver thread.

use super::*;
use crate::handle::Handle;
#[allow(unused_imports)]
use cuda_driver_macros::call;

impl Graph {
    /// Adds a host node running `f` on a driver thread at each execution, once per launch of
    /// every exec made from the graph. `f` is owned by a CUDA user object that the graph (and
    /// its clones and execs) holds; panics are caught and counted
    /// ([`host_fn_panic_count`](crate::stream::host_fn_panic_count)); CUDA calls inside are refused
    /// and drops deferred as for [`Stream::launch_host_fn`](crate::Stream::launch_host_fn).
    #[wraps(cuGraphAddHostNode)]
    #[track_caller]
    pub fn add_host<F: Fn() + Send + Sync + 'static>(
        &self,
        deps: &[GraphNode<'_>],
        f: F,
    ) -> Result<HostNode<'_>> {
        let d = raw_deps(self, deps)?;
        let p = self.host_params(f)?;
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: the graph is live; `p` names a trampoline and its closure, which the
            // graph's user object keeps alive.
            unsafe { sys::cuGraphAddHostNode(&mut raw, self.raw, ptr_or_null(&d), d.len(), &p) },
        )?;
        Ok(HostNode(GraphNode { raw, graph: self }))
    }

    /// Host node parameters for `f`, retained by this graph.
    #[track_caller]
    pub(crate) fn host_params<F: Fn() + Send + Sync + 'static>(
        &self,
        f: F,
    ) -> Result<sys::CUDA_HOST_NODE_PARAMS> {
        crate::init()?;
        if crate::release::in_host_fn() {
            return Err(Error::InHostCallback {
                location: std::panic::Location::caller(),
            });
        }
        // SAFETY: `self.retain` is live.
        let data = unsafe { crate::stream::retain_in_graph(self.retain, f) }?;
        Ok(sys::CUDA_HOST_NODE_PARAMS {
            fn_: Some(shared_host_fn_trampoline::<F>),
            userData: data.cast_mut().cast(),
        })
    }
}

impl<'g> HostNode<'g> {
    /// Replaces the node's closure; the graph keeps the new one alive (and the old one for as
    /// long as execs made before still use it).
    #[wraps(cuGraphHostNodeSetParams)]
    #[track_caller]
    pub fn set<F: Fn() + Send + Sync + 'static>(&self, f: F) -> Result<()> {
        let p = self.0.graph.host_params(f)?;
        call!(
            // SAFETY: a live host node; the closure is kept alive by the graph.
            unsafe { sys::cuGraphHostNodeSetParams(self.0.raw, &p) },
        )
    }
}

impl<'g> HostNode<'g> {
    /// The node's raw host function and user data (the crate's trampoline and closure).
    #[wraps(cuGraphHostNodeGetParams)]
    #[track_caller]
    pub fn params_raw(&self) -> Result<(sys::CUhostFn, *mut c_void)> {
        let mut p = sys::CUDA_HOST_NODE_PARAMS {
            fn_: None,
            userData: ptr::null_mut(),
        };
        call!(
            // SAFETY: a live host node; writes one struct.
            unsafe { sys::cuGraphHostNodeGetParams(self.as_raw(), &mut p) },
        )?;
        Ok((p.fn_, p.userData))
    }
}
