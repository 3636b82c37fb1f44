//! Kernel nodes: kernels of a module or a library, their launch configuration, arguments and
//! attributes.

use super::*;
use crate::handle::Handle;
#[allow(unused_imports)]
use cuda_driver_macros::call;

/// What a kernel node needs from a [`Function`] or a [`Kernel`].
pub(crate) trait NodeKernel: KernelParams + Clone + Send + Sync + 'static {
    /// Fills `func`/`kern`/`ctx` of the node parameters; checks the context for a Function.
    fn fill(&self, p: &mut sys::CUDA_KERNEL_NODE_PARAMS, ctx: &Context) -> Result<()>;
    fn key(&self) -> usize;
}

impl NodeKernel for Function {
    fn fill(&self, p: &mut sys::CUDA_KERNEL_NODE_PARAMS, ctx: &Context) -> Result<()> {
        if self.context().as_raw() != ctx.as_raw() {
            return Err(Error::ContextMismatch {
                what: "kernel node",
                expected: self.context().as_raw() as usize,
                found: ctx.as_raw() as usize,
            });
        }
        p.func = self.as_raw();
        Ok(())
    }
    fn key(&self) -> usize {
        self.as_raw() as usize
    }
}

impl NodeKernel for Kernel {
    fn fill(&self, p: &mut sys::CUDA_KERNEL_NODE_PARAMS, ctx: &Context) -> Result<()> {
        p.func = ptr::null_mut();
        p.kern = self.as_raw();
        p.ctx = ctx.as_raw();
        Ok(())
    }
    fn key(&self) -> usize {
        self.as_raw() as usize
    }
}

/// Checked kernel node parameters for `k` with `args`, whose pointers live in `ptrs`.
#[inline]
#[track_caller]
pub(crate) fn kernel_params<K: NodeKernel, A: KernelArgs>(
    k: &K,
    ctx: &Context,
    cfg: &LaunchConfig,
    ptrs: &mut [*mut c_void],
) -> Result<sys::CUDA_KERNEL_NODE_PARAMS> {
    k.check_args(A::SIZES)?;
    // SAFETY: an all-zero CUDA_KERNEL_NODE_PARAMS is valid (null handles and pointers).
    let mut p: sys::CUDA_KERNEL_NODE_PARAMS = unsafe { std::mem::zeroed() };
    k.fill(&mut p, ctx)?;
    set_launch(&mut p, cfg, ptrs);
    Ok(p)
}

/// Kernel node parameters running the function `func` in `cfg` with the parameter pointers
/// `ptrs`, for arguments the caller has checked.
#[inline]
pub(crate) fn node_params(
    func: sys::CUfunction,
    cfg: &LaunchConfig,
    ptrs: &mut [*mut c_void],
) -> sys::CUDA_KERNEL_NODE_PARAMS {
    // SAFETY: an all-zero CUDA_KERNEL_NODE_PARAMS is valid (null handles and pointers).
    let mut p: sys::CUDA_KERNEL_NODE_PARAMS = unsafe { std::mem::zeroed() };
    p.func = func;
    set_launch(&mut p, cfg, ptrs);
    p
}

/// The grid, block, shared memory and parameter pointers of kernel node parameters.
#[inline(always)]
fn set_launch(p: &mut sys::CUDA_KERNEL_NODE_PARAMS, cfg: &LaunchConfig, ptrs: &mut [*mut c_void]) {
    p.gridDimX = cfg.grid.x;
    p.gridDimY = cfg.grid.y;
    p.gridDimZ = cfg.grid.z;
    p.blockDimX = cfg.block.x;
    p.blockDimY = cfg.block.y;
    p.blockDimZ = cfg.block.z;
    p.sharedMemBytes = cfg.shared_mem_bytes;
    p.kernelParams = if ptrs.is_empty() {
        ptr::null_mut()
    } else {
        ptrs.as_mut_ptr()
    };
}

impl Graph {
    /// Adds a kernel node running `f` (a kernel of a module in `f`'s context) in `cfg` with
    /// `args`, checked against the kernel's parameters as [`Function::launch`] checks them.
    /// The graph keeps `f`'s module loaded.
    ///
    /// # Safety
    /// As for [`Function::launch`] (argument types, bounds), and the memory the arguments
    /// point to stays allocated while any graph or exec with this node can run.
    #[wraps(cuGraphAddKernelNode)]
    #[track_caller]
    pub unsafe fn add_kernel<A: KernelArgs>(
        &self,
        deps: &[GraphNode<'_>],
        f: &Function,
        cfg: &LaunchConfig,
        args: A,
    ) -> Result<KernelNode<'_>> {
        // SAFETY: the caller's guarantees.
        unsafe { self.add_kernel_node(deps, f, f.context(), cfg, args) }
    }

    /// Adds a kernel node running the library kernel `k` in `ctx`; otherwise as
    /// [`add_kernel`](Self::add_kernel). The graph keeps the library loaded.
    ///
    /// # Safety
    /// As for [`add_kernel`](Self::add_kernel).
    #[wraps(cuGraphAddKernelNode)]
    #[track_caller]
    pub unsafe fn add_library_kernel<A: KernelArgs>(
        &self,
        deps: &[GraphNode<'_>],
        k: &Kernel,
        ctx: &Context,
        cfg: &LaunchConfig,
        args: A,
    ) -> Result<KernelNode<'_>> {
        // SAFETY: the caller's guarantees.
        unsafe { self.add_kernel_node(deps, k, ctx, cfg, args) }
    }

    #[track_caller]
    unsafe fn add_kernel_node<K: NodeKernel, A: KernelArgs>(
        &self,
        deps: &[GraphNode<'_>],
        k: &K,
        ctx: &Context,
        cfg: &LaunchConfig,
        args: A,
    ) -> Result<KernelNode<'_>> {
        let d = raw_deps(self, deps)?;
        let mut ptrs = args.pointers();
        let p = kernel_params::<K, A>(k, ctx, cfg, ptrs.as_mut())?;
        let _cur = ctx.enter()?;
        self.keep(k.key(), || k.clone())?;
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: the graph is live; `p` describes a checked launch whose argument
            // pointers (`ptrs`, borrowing `args`) are read during the call; the caller
            // guarantees the rest.
            unsafe {
                sys::cuGraphAddKernelNode_v2(&mut raw, self.raw, ptr_or_null(&d), d.len(), &p)
            },
        )?;
        Ok(KernelNode(GraphNode { raw, graph: self }))
    }
}

impl<'g> KernelNode<'g> {
    /// The node's grid, block and dynamic shared memory.
    #[wraps(cuGraphKernelNodeGetParams)]
    #[track_caller]
    pub fn launch_config(&self) -> Result<LaunchConfig> {
        // SAFETY: an all-zero CUDA_KERNEL_NODE_PARAMS is valid to be written.
        let mut p: sys::CUDA_KERNEL_NODE_PARAMS = unsafe { std::mem::zeroed() };
        call!(
            // SAFETY: the node is a live kernel node; writes the struct.
            unsafe { sys::cuGraphKernelNodeGetParams_v2(self.0.raw, &mut p) },
        )?;
        Ok(LaunchConfig {
            grid: crate::launch::config::Dim3::new(p.gridDimX, p.gridDimY, p.gridDimZ),
            block: crate::launch::config::Dim3::new(p.blockDimX, p.blockDimY, p.blockDimZ),
            shared_mem_bytes: p.sharedMemBytes,
        })
    }

    /// Changes the node's kernel (of a module in `f`'s context), configuration and arguments,
    /// checked as in [`Graph::add_kernel`]; the graph keeps `f`'s module loaded.
    ///
    /// # Safety
    /// As for [`Graph::add_kernel`].
    #[wraps(cuGraphKernelNodeSetParams)]
    #[track_caller]
    pub unsafe fn set<A: KernelArgs>(
        &self,
        f: &Function,
        cfg: &LaunchConfig,
        args: A,
    ) -> Result<()> {
        let mut ptrs = args.pointers();
        let p = kernel_params::<Function, A>(f, f.context(), cfg, ptrs.as_mut())?;
        let _cur = f.context().enter()?;
        self.0.graph.keep(f.as_raw() as usize, || f.clone())?;
        call!(
            // SAFETY: a live kernel node; checked parameters read during the call.
            unsafe { sys::cuGraphKernelNodeSetParams_v2(self.0.raw, &p) },
        )
    }
}

impl<'g> KernelNode<'g> {
    /// The node's launch priority (`CU_LAUNCH_ATTRIBUTE_PRIORITY`).
    #[wraps(cuGraphKernelNodeGetAttribute)]
    #[track_caller]
    pub fn priority(&self) -> Result<i32> {
        // SAFETY: the PRIORITY member is an int, read after the driver wrote it.
        Ok(unsafe {
            self.attribute_raw(sys::CU_LAUNCH_ATTRIBUTE_PRIORITY)?
                .priority
        })
    }

    /// Sets the node's launch priority (clamped by the driver to the context's range).
    #[wraps(cuGraphKernelNodeSetAttribute)]
    #[track_caller]
    pub fn set_priority(&self, priority: i32) -> Result<()> {
        // SAFETY: a plain C union; zero is valid.
        let mut v: sys::CUkernelNodeAttrValue = unsafe { std::mem::zeroed() };
        v.priority = priority;
        // SAFETY: PRIORITY takes the int member, set above.
        unsafe { self.set_attribute_raw(sys::CU_LAUNCH_ATTRIBUTE_PRIORITY, &v) }
    }

    /// A raw kernel node attribute.
    ///
    /// # Safety
    /// The caller reads only the union member that `attr` uses.
    #[wraps(cuGraphKernelNodeGetAttribute)]
    #[track_caller]
    pub unsafe fn attribute_raw(
        &self,
        attr: sys::CUkernelNodeAttrID,
    ) -> Result<sys::CUkernelNodeAttrValue> {
        // SAFETY: a plain C union; zero is valid.
        let mut v: sys::CUkernelNodeAttrValue = unsafe { std::mem::zeroed() };
        call!(
            // SAFETY: a live kernel node; writes one union.
            unsafe { sys::cuGraphKernelNodeGetAttribute(self.as_raw(), attr, &mut v) },
        )?;
        Ok(v)
    }

    /// Sets a raw kernel node attribute.
    ///
    /// # Safety
    /// `value` holds the member `attr` uses; an access-policy window's range stays allocated
    /// while the graph or an exec made from it can run.
    #[wraps(cuGraphKernelNodeSetAttribute)]
    #[track_caller]
    pub unsafe fn set_attribute_raw(
        &self,
        attr: sys::CUkernelNodeAttrID,
        value: &sys::CUkernelNodeAttrValue,
    ) -> Result<()> {
        call!(
            // SAFETY: a live kernel node; the caller's guarantees on `value`.
            unsafe { sys::cuGraphKernelNodeSetAttribute(self.as_raw(), attr, value) },
        )
    }

    /// Copies every attribute of `src` (a kernel node of the same context) to this node.
    #[wraps(cuGraphKernelNodeCopyAttributes)]
    #[track_caller]
    pub fn copy_attributes_from(&self, src: KernelNode<'_>) -> Result<()> {
        call!(
            // SAFETY: both are live kernel nodes.
            unsafe { sys::cuGraphKernelNodeCopyAttributes(self.as_raw(), src.as_raw()) },
        )
    }
}
