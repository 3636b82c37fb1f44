//! Memory a graph launch allocated and did not free: [`GraphMemory`], one owner per launch,
//! and the launches that hand it out or free it ([`GraphExec::launch_with_memory`]).

use std::mem::ManuallyDrop;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use cuda_driver_macros::{call, uses, wraps};
use cuda_driver_sys as sys;

use super::exec::GraphExec;
use super::exec_memory::{ExecMemory, Owners};
use crate::error::{Error, Result};
use crate::handle::Handle;
use crate::memory::pool::MoveToStreamError;
use crate::memory::pool::{check_orderable, order_after};
use crate::memory::view::stream_identity;
use crate::memory::view::{DeviceSlice, DeviceSliceMut};
use crate::repr::DeviceRepr;
use crate::stream::Stream;

/// Device memory that one launch of a graph allocated (a memory allocation node,
/// [`Graph::add_mem_alloc`], or a captured `cuMemAllocAsync`) and did not free: its owner, handed
/// out by [`GraphExec::launch_with_memory`], once per launch (CUDA allocates the memory anew at
/// each launch, at the same address).
///
/// It is stream-ordered memory, like [`AsyncDeviceBuffer`](crate::memory::pool::AsyncDeviceBuffer): ordered
/// on the stream of the launch that allocated it (every safe use of its views must be on that
/// stream, [`Error::StreamMismatch`] otherwise), movable to another stream of its context
/// ([`move_to_stream`](Self::move_to_stream)), and freed exactly once, after the work queued
/// on its stream:
///
/// * dropped or [`free_async`](Self::free_async): `cuMemFreeAsync` on its stream;
/// * [`free`](Self::free): waits for its stream, then `cuMemFree`;
/// * or given to the launch of a graph with a free node for it
///   ([`Graph::add_mem_free`] of the allocation, in another graph), which orders that launch
///   after its stream.
///
/// The exec that allocated it may be dropped first: graph memory outlives the graph (CUDA
/// frees it only when told to). While it lives, no exec of the graph is launched or updated
/// ([`Error::InvalidArgument`]; a next launch would allocate the same address again). Each
/// free records an event on the stream it was queued on (the free's stream, or that of the
/// launch that freed it), and the graph's next launch, on whatever stream, waits for it: the
/// address is allocated again only after the work that used the freed memory. A forgotten
/// owner (`mem::forget`) leaks its memory and blocks the graph's launches for good.
#[wraps(cuGraphAddMemAllocNode, cuMemFreeAsync, cuMemFree)]
#[must_use = "dropping it frees the memory on its stream"]
pub struct GraphMemory<'s> {
    ptr: sys::CUdeviceptr,
    bytes: usize,
    stream: &'s Stream,
    /// The allocating graph's owners: counted live until this one is freed, then fenced.
    owners: Arc<Owners>,
}

// SAFETY: as for AsyncDeviceBuffer: device memory is not tied to a host thread; the stream is
// Sync and never the per-thread default stream (refused at launch).
unsafe impl Send for GraphMemory<'_> {}
// SAFETY: shared access only reads device memory through the driver.
unsafe impl Sync for GraphMemory<'_> {}

impl std::fmt::Debug for GraphMemory<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphMemory")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("bytes", &self.bytes)
            .field("stream", &self.stream.as_raw())
            .finish()
    }
}

impl Drop for GraphMemory<'_> {
    fn drop(&mut self) {
        if self.ptr == 0 {
            return;
        }
        let (ptr, stream) = (self.ptr, crate::release::SendRaw(self.stream.as_raw()));
        // SAFETY: `ptr` is a graph allocation live in stream order on `stream` (the launch
        // that made it was queued there, or the memory moved there), owned by self and freed
        // once, here, on the live stream all safe work on it was queued on.
        self.stream.context().release_for_stream_call(
            self.stream.as_raw(),
            "cuMemFreeAsync",
            move || unsafe { sys::cuMemFreeAsync(ptr, stream.get()) },
        );
        if !crate::release::in_host_fn() {
            // (Inside a host function the free itself is deferred; the driver refuses a
            // relaunch until it is queued.)
            self.owners.fence(self.stream);
        }
        self.owners.live.fetch_sub(1, Ordering::AcqRel);
    }
}

impl<'s> GraphMemory<'s> {
    /// The device address (the allocation node's, the same at every launch).
    #[inline]
    pub fn as_raw(&self) -> sys::CUdeviceptr {
        self.ptr
    }

    /// The size in bytes.
    #[inline]
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The stream the memory is ordered on.
    #[inline]
    pub fn stream(&self) -> &'s Stream {
        self.stream
    }

    fn len_of<T: DeviceRepr>(&self) -> Result<usize> {
        let size = std::mem::size_of::<T>();
        if self.ptr % std::mem::align_of::<T>() as u64 != 0 {
            return Err(Error::UnexpectedValue {
                call: "cuGraphAddMemAllocNode",
                reason: format!(
                    "the allocation at {:#x} is not aligned for a {}-byte alignment",
                    self.ptr,
                    std::mem::align_of::<T>()
                ),
            });
        }
        Ok(self.bytes.checked_div(size).unwrap_or(0))
    }

    /// A view of the memory as elements of `T` (as many as fit), ordered on its stream.
    #[track_caller]
    pub fn view<T: DeviceRepr>(&self) -> Result<DeviceSlice<'_, T>> {
        let len = self.len_of::<T>()?;
        // SAFETY: a live graph allocation of `bytes` bytes (at least `len` elements, aligned:
        // checked), owned by self and borrowed for the view's life; ordered on `stream`, the
        // live stream of its context it is freed on; no mutable view while `&self` is lent.
        Ok(unsafe {
            DeviceSlice::from_parts(
                self.ptr,
                len,
                self.stream.context(),
                stream_identity(self.stream.as_raw()),
            )
        })
    }

    /// A mutable view of the memory as elements of `T` (as many as fit), ordered on its
    /// stream.
    #[track_caller]
    pub fn view_mut<T: DeviceRepr>(&mut self) -> Result<DeviceSliceMut<'_, T>> {
        let len = self.len_of::<T>()?;
        // SAFETY: as for `view`, borrowed exclusively.
        Ok(unsafe {
            DeviceSliceMut::from_parts(
                self.ptr,
                len,
                self.stream.context(),
                stream_identity(self.stream.as_raw()),
            )
        })
    }

    /// Moves the memory to `stream`, as
    /// [`AsyncDeviceBuffer::move_to_stream`](crate::memory::pool::AsyncDeviceBuffer::move_to_stream) does:
    /// `stream` waits for an event recorded on the memory's stream; a stream of another
    /// context or the per-thread default stream is refused, and the memory given back.
    #[uses(cuEventCreate, cuEventRecord, cuStreamWaitEvent)]
    #[track_caller]
    pub fn move_to_stream<'t>(
        self,
        stream: &'t Stream,
    ) -> std::result::Result<GraphMemory<'t>, MoveToStreamError<Self>> {
        const WHAT: &str = "GraphMemory::move_to_stream";
        if let Err(error) =
            check_orderable(WHAT, stream).and_then(|()| order_after(WHAT, self.stream, stream))
        {
            return Err(MoveToStreamError {
                error,
                buffer: self,
            });
        }
        let this = ManuallyDrop::new(self);
        Ok(GraphMemory {
            ptr: this.ptr,
            bytes: this.bytes,
            stream,
            // SAFETY: `this` is never used or dropped again: its Arc moves here.
            owners: unsafe { std::ptr::read(&this.owners) },
        })
    }

    /// Queues the free on the memory's stream now (`cuMemFreeAsync`), returning the
    /// driver's error instead of counting it as dropping does.
    #[uses(cuMemFreeAsync)]
    #[track_caller]
    pub fn free_async(self) -> Result<()> {
        let _cur = self.stream.enter_for_call()?;
        let owners = self.owners.clone();
        let (ptr, stream) = self.disown();
        call!(
            // SAFETY: disowned: freed once, here, on its stream.
            unsafe { sys::cuMemFreeAsync(ptr, stream.as_raw()) },
        )?;
        owners.fence(stream);
        Ok(())
    }

    /// Gives up the memory (freed by the caller, or by a launch), counting the owner gone:
    /// its address and stream.
    fn disown(self) -> (sys::CUdeviceptr, &'s Stream) {
        let this = ManuallyDrop::new(self);
        this.owners.live.fetch_sub(1, Ordering::AcqRel);
        // SAFETY: `this` is never used or dropped again: its Arc is dropped once, here.
        drop(unsafe { std::ptr::read(&this.owners) });
        (this.ptr, this.stream)
    }

    /// Frees the memory now: waits for its stream (all work that may use it), then
    /// `cuMemFree`. When the wait fails, the free is queued on the stream instead (as dropping
    /// does) and the error returned.
    #[uses(cuStreamSynchronize, cuMemFree_v2)]
    #[track_caller]
    pub fn free(self) -> Result<()> {
        self.stream.synchronize()?;
        let _cur = self.stream.context().enter()?;
        let (ptr, _) = self.disown();
        call!(
            // SAFETY: disowned: freed once, here, after its stream (all safe work on it)
            // finished.
            unsafe { sys::cuMemFree_v2(ptr) },
        )
    }
}

impl GraphExec {
    /// Launches the graph on `stream`, handing out the memory the launch allocates and does
    /// not free, and taking `frees`, memory of another graph's launches that this graph's
    /// free nodes free ([`Graph::add_mem_free`] of another graph's allocation).
    ///
    /// Returns one [`GraphMemory`] per allocation the graph does not free, ordered on
    /// `stream`, in the order the allocation nodes were added (or, for a captured graph, the
    /// order of [`Graph::nodes`]). `frees` must hold exactly one owner for each address the
    /// graph frees for another graph, in any order; the launch is ordered after each owner's
    /// stream (same context), and the owners are consumed: the launch frees them.
    ///
    /// Refused ([`Error::InvalidArgument`]) before anything is launched: a missing, extra or
    /// repeated owner in `frees`; an exec instantiated with
    /// [`GraphInstantiateFlags::AUTO_FREE_ON_LAUNCH`] whose graph allocates memory it does
    /// not free (its next launch would free that memory under its owner); an exec adopted
    /// through [`GraphExec::from_raw`] whose graph the crate did not see. The per-thread default
    /// stream is [`Error::InvalidStream`]. On any error the owners in `frees` are dropped (each
    /// freed on its stream).
    ///
    /// ```no_run
    /// use cuda_driver::graph::Graph;
    /// use cuda_driver::types::{GraphInstantiateFlags, StreamFlags};
    /// use cuda_driver::{Device, Stream};
    ///
    /// let dev = Device::get(0)?;
    /// let ctx = dev.primary_context()?;
    /// let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;
    /// let alloc_graph = Graph::new()?;
    /// let (_node, alloc) = alloc_graph.add_mem_alloc(&[], dev, 1024)?;
    /// let free_graph = Graph::new()?;
    /// free_graph.add_mem_free(&[], alloc)?; // another graph frees it
    /// let alloc_exec = alloc_graph.instantiate(GraphInstantiateFlags::empty())?;
    /// let free_exec = free_graph.instantiate(GraphInstantiateFlags::empty())?;
    /// for _ in 0..3 {
    ///     let mut mem = alloc_exec.launch_with_memory(&s, Vec::new())?;
    ///     mem[0].view_mut::<u32>()?.memset_async(7u32, &s)?;
    ///     assert!(mem[0].view::<u32>()?.to_vec()?.iter().all(|&x| x == 7));
    ///     free_exec.launch_with_memory(&s, mem)?; // frees this launch's memory
    /// }
    /// # Ok::<(), cuda_driver::Error>(())
    /// ```
    #[wraps(cuGraphLaunch)]
    #[track_caller]
    pub fn launch_with_memory<'s>(
        &self,
        stream: &'s Stream,
        frees: Vec<GraphMemory<'_>>,
    ) -> Result<Vec<GraphMemory<'s>>> {
        const WHAT: &str = "GraphExec::launch_with_memory";
        check_orderable(WHAT, stream)?;
        let empty = ExecMemory::default();
        let m = match (&self.memory, self.adopted) {
            (Some(m), _) => m,
            (None, false) => &empty,
            (None, true) => {
                return Err(Error::InvalidArgument(
                    "GraphExec::launch_with_memory: the exec was adopted by raw handle; the \
                     crate does not know what its launches allocate and free"
                        .into(),
                ))
            }
        };
        if m.auto_free && !m.unfreed.is_empty() {
            return Err(Error::InvalidArgument(
                "GraphExec::launch_with_memory: the exec frees its allocations at its next \
                 launch (AUTO_FREE_ON_LAUNCH), so they cannot be handed out; use launch"
                    .into(),
            ));
        }
        let mut want = m.foreign.clone();
        for f in &frees {
            match want.iter().position(|&p| p == f.ptr) {
                Some(i) => {
                    want.swap_remove(i);
                }
                None => {
                    return Err(Error::InvalidArgument(format!(
                        "GraphExec::launch_with_memory: the graph has no free node for the \
                         memory at {:#x} (or it is given twice)",
                        f.ptr
                    )))
                }
            }
        }
        if let Some(p) = want.first() {
            return Err(Error::InvalidArgument(format!(
                "GraphExec::launch_with_memory: the graph frees the memory at {p:#x}, but no \
                 owner of it was given"
            )));
        }
        for f in &frees {
            order_after(WHAT, f.stream, stream)?;
        }
        m.before_launch(WHAT, stream)?;
        self.launch_unchecked(stream)?;
        for f in frees {
            // Freed by the launch's free node, after everything queued on its stream; the
            // allocating graph's next launch waits for this launch.
            let owners = f.owners.clone();
            f.disown();
            owners.fence(stream);
        }
        Ok(m.unfreed
            .iter()
            .map(|&(ptr, bytes)| {
                m.owners.live.fetch_add(1, Ordering::AcqRel);
                GraphMemory {
                    ptr,
                    bytes,
                    stream,
                    owners: m.owners.clone(),
                }
            })
            .collect())
    }
}
