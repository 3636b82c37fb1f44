//! Memcpy and memset nodes.

use super::*;
use crate::handle::Handle;
#[allow(unused_imports)]
use cuda_driver_macros::call;

/// A linear device-to-device copy as a `CUDA_MEMCPY3D`.
pub(crate) fn memcpy_params(
    dst: sys::CUdeviceptr,
    src: sys::CUdeviceptr,
    bytes: usize,
) -> sys::CUDA_MEMCPY3D {
    // SAFETY: an all-zero CUDA_MEMCPY3D is valid (unused fields are zero).
    let mut p: sys::CUDA_MEMCPY3D = unsafe { std::mem::zeroed() };
    p.srcMemoryType = sys::CU_MEMORYTYPE_DEVICE;
    p.srcDevice = src;
    p.dstMemoryType = sys::CU_MEMORYTYPE_DEVICE;
    p.dstDevice = dst;
    p.WidthInBytes = bytes;
    p.Height = 1;
    p.Depth = 1;
    p
}

/// The parameters of a memset node (`CUDA_MEMSET_NODE_PARAMS`).
#[doc(alias = "CUDA_MEMSET_NODE_PARAMS")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemsetParams {
    /// Destination device address.
    pub dst: sys::CUdeviceptr,
    /// Bytes between rows (unused for one row).
    pub pitch: usize,
    /// The value, in its low `element_size` bytes.
    pub value: u32,
    /// Word size: 1, 2 or 4 bytes.
    pub element_size: u32,
    /// Words per row.
    pub width: usize,
    /// Rows.
    pub height: usize,
}

impl MemsetParams {
    fn to_raw(self) -> sys::CUDA_MEMSET_NODE_PARAMS {
        sys::CUDA_MEMSET_NODE_PARAMS {
            dst: self.dst,
            pitch: self.pitch,
            value: self.value,
            elementSize: self.element_size,
            width: self.width,
            height: self.height,
        }
    }

    /// The parameters that fill `dst` with `value`.
    #[track_caller]
    pub fn fill<T: DeviceRepr, W: MemsetValue + Into<u32>>(
        dst: &DeviceSliceMut<'_, T>,
        value: W,
    ) -> Result<MemsetParams> {
        let n = crate::memory::view::memset_count::<T, W>("memset node", dst.len())?;
        Ok(MemsetParams {
            dst: dst.as_raw(),
            pitch: 0,
            value: value.into(),
            element_size: W::WIDTH as u32,
            width: n,
            height: 1,
        })
    }
}

impl Graph {
    /// Adds a node copying `src` to `dst` (device to device, same length).
    ///
    /// # Safety
    /// Both memories stay allocated while any graph or exec with this node can run, and no
    /// host code accesses `dst` while one runs.
    #[wraps(cuGraphAddMemcpyNode)]
    #[track_caller]
    pub unsafe fn add_memcpy<T: DeviceRepr>(
        &self,
        deps: &[GraphNode<'_>],
        dst: &DeviceSliceMut<'_, T>,
        src: &DeviceSlice<'_, T>,
    ) -> Result<MemcpyNode<'_>> {
        crate::memory::view::check_len("memcpy node", dst.len(), src.len())?;
        let bytes = crate::memory::view::byte_len::<T>("memcpy node", dst.len())?;
        let p = memcpy_params(dst.as_raw(), src.as_raw(), bytes);
        // SAFETY: `p` is a linear copy of checked length; the caller guarantees the memory.
        unsafe { self.add_memcpy_raw(deps, &p, dst.context()) }
    }

    /// Adds a node running a 2D copy: rows between host memory, device memory (linear or
    /// pitched) and arrays, in any combination [`Copy2D`](crate::memory::Copy2D) builds, checked as
    /// it checks them before the driver is called. An empty copy is
    /// [`LayoutError::ZeroExtent`](crate::error::layout::LayoutError::ZeroExtent).
    ///
    /// # Safety
    /// Every operand stays allocated (host memory too: page-locked memory such as a
    /// [`PinnedBuffer`](crate::PinnedBuffer) is what the driver expects) while any graph or
    /// exec with this node can run, and no host code accesses the destination while one
    /// runs.
    #[wraps(cuGraphAddMemcpyNode)]
    #[track_caller]
    pub unsafe fn add_copy_2d<T: DeviceRepr>(
        &self,
        deps: &[GraphNode<'_>],
        copy: crate::memory::copy::Copy2D<'_, T>,
    ) -> Result<MemcpyNode<'_>> {
        let node = copy.node_params("Graph::add_copy_2d")?;
        // SAFETY: the caller's guarantees; the parameters were checked.
        unsafe { self.add_memcpy_raw(deps, &node.raw, node.ctx) }
    }

    /// Adds a node running a 3D copy ([`Copy3D`](crate::memory::Copy3D), in one context), checked
    /// as [`add_copy_2d`](Self::add_copy_2d) checks.
    ///
    /// # Safety
    /// As for [`add_copy_2d`](Self::add_copy_2d).
    #[wraps(cuGraphAddMemcpyNode)]
    #[track_caller]
    pub unsafe fn add_copy_3d<T: DeviceRepr>(
        &self,
        deps: &[GraphNode<'_>],
        copy: crate::memory::copy::Copy3D<'_, T>,
    ) -> Result<MemcpyNode<'_>> {
        let node = copy.node_params("Graph::add_copy_3d")?;
        // SAFETY: the caller's guarantees; the parameters were checked.
        unsafe { self.add_memcpy_raw(deps, &node.raw, node.ctx) }
    }

    /// # Safety
    /// `p` is a checked copy in `ctx` whose memory the caller keeps valid.
    #[track_caller]
    unsafe fn add_memcpy_raw(
        &self,
        deps: &[GraphNode<'_>],
        p: &sys::CUDA_MEMCPY3D,
        ctx: &Context,
    ) -> Result<MemcpyNode<'_>> {
        let d = raw_deps(self, deps)?;
        let _cur = ctx.enter()?;
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: the graph is live; `p` is a checked copy; the caller guarantees the
            // memory.
            unsafe {
                sys::cuGraphAddMemcpyNode(
                    &mut raw,
                    self.raw,
                    ptr_or_null(&d),
                    d.len(),
                    p,
                    ctx.as_raw(),
                )
            },
        )?;
        Ok(MemcpyNode(GraphNode { raw, graph: self }))
    }

    /// Adds a node filling `dst` with the word `value` (1, 2 or 4 bytes).
    ///
    /// # Safety
    /// `dst` stays allocated while any graph or exec with this node can run, and no host code
    /// accesses it while one runs.
    #[wraps(cuGraphAddMemsetNode)]
    #[track_caller]
    pub unsafe fn add_memset<T: DeviceRepr, W: MemsetValue + Into<u32>>(
        &self,
        deps: &[GraphNode<'_>],
        dst: &DeviceSliceMut<'_, T>,
        value: W,
    ) -> Result<MemsetNode<'_>> {
        let p = MemsetParams::fill(dst, value)?.to_raw();
        let d = raw_deps(self, deps)?;
        let ctx = dst.context();
        let _cur = ctx.enter()?;
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: the graph is live; `p` is a valid 1D memset; the caller guarantees the
            // memory.
            unsafe {
                sys::cuGraphAddMemsetNode(
                    &mut raw,
                    self.raw,
                    ptr_or_null(&d),
                    d.len(),
                    &p,
                    ctx.as_raw(),
                )
            },
        )?;
        Ok(MemsetNode(GraphNode { raw, graph: self }))
    }
}

impl<'g> MemsetNode<'g> {
    /// The node's parameters.
    #[wraps(cuGraphMemsetNodeGetParams)]
    #[track_caller]
    pub fn params(&self) -> Result<MemsetParams> {
        // SAFETY: all-zero is a valid CUDA_MEMSET_NODE_PARAMS to be written.
        let mut p: sys::CUDA_MEMSET_NODE_PARAMS = unsafe { std::mem::zeroed() };
        call!(
            // SAFETY: a live memset node; writes the struct.
            unsafe { sys::cuGraphMemsetNodeGetParams(self.0.raw, &mut p) },
        )?;
        Ok(MemsetParams {
            dst: p.dst,
            pitch: p.pitch,
            value: p.value,
            element_size: p.elementSize,
            width: p.width,
            height: p.height,
        })
    }

    /// Changes the node's parameters.
    ///
    /// # Safety
    /// As for [`Graph::add_memset`], for the memory `params` describe.
    #[wraps(cuGraphMemsetNodeSetParams)]
    #[track_caller]
    pub unsafe fn set_params(&self, params: MemsetParams) -> Result<()> {
        let p = params.to_raw();
        call!(
            // SAFETY: a live memset node; the caller guarantees the memory.
            unsafe { sys::cuGraphMemsetNodeSetParams(self.0.raw, &p) },
        )
    }
}

impl<'g> MemcpyNode<'g> {
    /// The node's copy parameters, raw.
    #[wraps(cuGraphMemcpyNodeGetParams)]
    #[track_caller]
    pub fn params_raw(&self) -> Result<sys::CUDA_MEMCPY3D> {
        // SAFETY: all-zero is a valid CUDA_MEMCPY3D to be written.
        let mut p: sys::CUDA_MEMCPY3D = unsafe { std::mem::zeroed() };
        call!(
            // SAFETY: a live memcpy node; writes the struct.
            unsafe { sys::cuGraphMemcpyNodeGetParams(self.0.raw, &mut p) },
        )?;
        Ok(p)
    }

    /// Makes the node copy `src` to `dst` (device to device, same length).
    ///
    /// # Safety
    /// As for [`Graph::add_memcpy`].
    #[wraps(cuGraphMemcpyNodeSetParams)]
    #[track_caller]
    pub unsafe fn set<T: DeviceRepr>(
        &self,
        dst: &DeviceSliceMut<'_, T>,
        src: &DeviceSlice<'_, T>,
    ) -> Result<()> {
        crate::memory::view::check_len("memcpy node", dst.len(), src.len())?;
        let bytes = crate::memory::view::byte_len::<T>("memcpy node", dst.len())?;
        let p = memcpy_params(dst.as_raw(), src.as_raw(), bytes);
        let _cur = dst.context().enter()?;
        call!(
            // SAFETY: a live memcpy node; the caller guarantees the memory.
            unsafe { sys::cuGraphMemcpyNodeSetParams(self.0.raw, &p) },
        )
    }
}
