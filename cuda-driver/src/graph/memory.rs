//! Graph memory: memory allocation and free nodes, the allocations they make, and the device's
//! pool for memory allocated by graphs.

#[allow(unused_imports)]
use super::nodes::*;
use crate::context::Context;
use crate::device::Device;
use crate::error::graph::GraphError;
use crate::error::Error;
use crate::error::Result;
use crate::graph::ptr_or_null;
use crate::graph::raw_deps;
use crate::graph::Graph;
use crate::graph::GraphNode;
use crate::handle::Handle;
use crate::memory::DeviceSliceMut;
use crate::repr::DeviceRepr;
use cuda_driver_macros::{call, uses, wraps};
use cuda_driver_sys as sys;
use std::ptr;

use crate::types::GraphMemAttribute;

impl Device {
    /// A graph memory attribute of the device, in bytes: memory currently used by or
    /// reserved for graph allocations, or their high watermarks.
    #[wraps(cuDeviceGetGraphMemAttribute)]
    #[track_caller]
    pub fn graph_mem_attribute(self, attr: GraphMemAttribute) -> Result<u64> {
        crate::init()?;
        let mut v: u64 = 0;
        call!(
            // SAFETY: every graph memory attribute is a cuuint64_t; writes one.
            unsafe {
                sys::cuDeviceGetGraphMemAttribute(
                    self.as_raw(),
                    attr.as_raw(),
                    (&mut v as *mut u64).cast(),
                )
            },
        )?;
        Ok(v)
    }

    /// Resets a high watermark ([`GraphMemAttribute::USED_MEM_HIGH`] or
    /// [`GraphMemAttribute::RESERVED_MEM_HIGH`]) to zero; the driver refuses other attributes.
    #[wraps(cuDeviceSetGraphMemAttribute)]
    #[track_caller]
    pub fn reset_graph_mem_high_watermark(self, attr: GraphMemAttribute) -> Result<()> {
        crate::init()?;
        let mut v: u64 = 0;
        call!(
            // SAFETY: the watermarks are cuuint64_t and may only be set to 0.
            unsafe {
                sys::cuDeviceSetGraphMemAttribute(
                    self.as_raw(),
                    attr.as_raw(),
                    (&mut v as *mut u64).cast(),
                )
            },
        )
    }

    /// Frees unused memory of the device's graph memory pool back to the system.
    #[wraps(cuDeviceGraphMemTrim)]
    #[track_caller]
    pub fn graph_mem_trim(self) -> Result<()> {
        crate::init()?;
        call!(
            // SAFETY: a valid device ordinal.
            unsafe { sys::cuDeviceGraphMemTrim(self.as_raw()) },
        )
    }
}

/// Memory allocated by a graph's memory allocation node ([`Graph::add_mem_alloc`]).
///
/// CUDA's rules for it: the address is fixed when the node is created and valid, in every
/// launch, from the allocation node until the memory is freed (CUDA allocates it anew at each
/// launch). It is freed:
///
/// * by a memory free node of the same graph ([`Graph::add_mem_free`], which consumes this
///   value, so the memory is freed in the graph exactly once);
/// * or by a free node of another graph (`add_mem_free` of that graph): each launch of that
///   graph then takes the [`GraphMemory`](crate::graph::GraphMemory) of one launch of this one and
///   frees it;
/// * or outside the graph after each launch:
///   [`GraphExec::launch_with_memory`](crate::graph::GraphExec::launch_with_memory) hands out one
///   owner per launch, which frees it when dropped (in stream order), by
///   [`GraphMemory::free`](crate::graph::GraphMemory::free) (synchronously) or by the launch of a
///   graph that frees it;
/// * or automatically before the next launch of an exec instantiated with
///   [`GraphInstantiateFlags::AUTO_FREE_ON_LAUNCH`](crate::types::GraphInstantiateFlags).
///
/// An exec whose graph allocates memory that it does not free cannot be launched again until
/// that memory is freed (the driver refuses the launch, and the crate refuses it while a
/// [`GraphMemory`](crate::graph::GraphMemory) of it lives).
#[doc(alias = "CUDA_MEM_ALLOC_NODE_PARAMS")]
#[derive(Debug)]
#[must_use = "free the allocation in the graph (Graph::add_mem_free) or after a launch"]
pub struct GraphAllocation {
    ptr: sys::CUdeviceptr,
    bytes: usize,
    graph: sys::CUgraph,
}

impl GraphAllocation {
    /// The device address (valid while the graph's execution has it allocated).
    pub fn as_raw(&self) -> sys::CUdeviceptr {
        self.ptr
    }

    /// The size in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// A view of the allocation as `len` elements of `T`, for nodes that use it.
    ///
    /// # Safety
    /// The view is used only by nodes of the allocating graph ordered after the allocation
    /// node and before its free node, and `len * size_of::<T>()` is at most
    /// [`bytes`](Self::bytes).
    pub unsafe fn view_mut<'a, T: DeviceRepr>(
        &self,
        len: usize,
        ctx: &'a Context,
    ) -> DeviceSliceMut<'a, T> {
        // SAFETY: the caller's guarantees.
        unsafe { DeviceSliceMut::borrow_raw(self.ptr, len, ctx) }
    }

    /// Frees the allocation outside the graph, in stream order on `stream`, after a launch
    /// that allocated it.
    ///
    /// # Safety
    /// An execution of the graph that allocated the memory was launched and is ordered
    /// before `stream`'s next work, no later work uses the memory, and it is freed once.
    #[uses(cuMemFreeAsync)]
    #[track_caller]
    pub unsafe fn free_after_launch(self, stream: &crate::stream::Stream) -> Result<()> {
        let _cur = stream.context().enter()?;
        call!(
            // SAFETY: the caller's guarantees.
            unsafe { sys::cuMemFreeAsync(self.ptr, stream.as_raw()) },
        )
    }
}

impl Graph {
    /// Adds a node allocating `bytes` of device memory on `device` in the graph's memory
    /// pool; see [`GraphAllocation`] for who frees it.
    #[wraps(cuGraphAddMemAllocNode)]
    #[track_caller]
    pub fn add_mem_alloc(
        &self,
        deps: &[GraphNode<'_>],
        device: Device,
        bytes: usize,
    ) -> Result<(MemAllocNode<'_>, GraphAllocation)> {
        let d = raw_deps(self, deps)?;
        crate::init()?;
        // SAFETY: an all-zero CUDA_MEM_ALLOC_NODE_PARAMS is valid (no access descriptors).
        let mut p: sys::CUDA_MEM_ALLOC_NODE_PARAMS = unsafe { std::mem::zeroed() };
        p.poolProps.allocType = sys::CU_MEM_ALLOCATION_TYPE_PINNED;
        p.poolProps.location.type_ = sys::CU_MEM_LOCATION_TYPE_DEVICE;
        p.poolProps.location.id = device.as_raw();
        p.bytesize = bytes;
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: the graph is live; `p` is valid and receives the address.
            unsafe {
                sys::cuGraphAddMemAllocNode(&mut raw, self.raw, ptr_or_null(&d), d.len(), &mut p)
            },
        )?;
        if self.root {
            self.book.lock().allocs.push((p.dptr, bytes));
        }
        Ok((
            MemAllocNode(GraphNode { raw, graph: self }),
            GraphAllocation {
                ptr: p.dptr,
                bytes,
                graph: self.raw,
            },
        ))
    }

    /// Adds a node freeing `alloc`: memory allocated by this graph (freed in each launch), or
    /// by another graph, as CUDA allows: then this graph's launches free the memory of that
    /// graph's launches, one each, and are made with
    /// [`GraphExec::launch_with_memory`](crate::graph::GraphExec::launch_with_memory), which takes
    /// the [`GraphMemory`](crate::graph::GraphMemory) to free (a plain
    /// [`launch`](crate::graph::GraphExec::launch) is refused). Another graph's allocation is
    /// refused ([`GraphError::Mismatch`]) on a borrowed graph (a body or child graph, or one
    /// borrowed by raw handle).
    #[wraps(cuGraphAddMemFreeNode)]
    #[track_caller]
    pub fn add_mem_free(
        &self,
        deps: &[GraphNode<'_>],
        alloc: GraphAllocation,
    ) -> Result<MemFreeNode<'_>> {
        let foreign = alloc.graph != self.raw;
        if foreign && !self.root {
            return Err(Error::Graph(GraphError::Mismatch {
                what: "memory free node",
                expected: alloc.graph as usize,
                found: self.raw as usize,
            }));
        }
        let d = raw_deps(self, deps)?;
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: the graph is live; the address was allocated by an allocation node, of
            // this graph or of another one (launches of this graph then free one launch's
            // memory each, taking its owner: `GraphExec::launch_with_memory`).
            unsafe {
                sys::cuGraphAddMemFreeNode(&mut raw, self.raw, ptr_or_null(&d), d.len(), alloc.ptr)
            },
        )?;
        if self.root {
            let mut book = self.book.lock();
            if foreign {
                book.foreign_frees.push(alloc.ptr);
            } else {
                book.frees.push(alloc.ptr);
            }
        }
        Ok(MemFreeNode(GraphNode { raw, graph: self }))
    }
}

impl<'g> MemAllocNode<'g> {
    /// The address and size the node allocates.
    #[wraps(cuGraphMemAllocNodeGetParams)]
    #[track_caller]
    pub fn allocation(&self) -> Result<(sys::CUdeviceptr, usize)> {
        // SAFETY: all-zero is a valid struct to be written.
        let mut p: sys::CUDA_MEM_ALLOC_NODE_PARAMS = unsafe { std::mem::zeroed() };
        call!(
            // SAFETY: a live allocation node; writes the struct.
            unsafe { sys::cuGraphMemAllocNodeGetParams(self.0.raw, &mut p) },
        )?;
        Ok((p.dptr, p.bytesize))
    }
}

impl<'g> MemFreeNode<'g> {
    /// The address the node frees.
    #[wraps(cuGraphMemFreeNodeGetParams)]
    #[track_caller]
    pub fn address(&self) -> Result<sys::CUdeviceptr> {
        let mut p = 0;
        call!(
            // SAFETY: a live free node; writes one address.
            unsafe { sys::cuGraphMemFreeNodeGetParams(self.0.raw, &mut p) },
        )?;
        Ok(p)
    }
}
