//! Stream-ordered allocation: [`AsyncDeviceBuffer`] and memory pools ([`MemPool`]).
//!
//! `cuMemAllocAsync` allocates memory *in stream order*: the memory may be used by work queued
//! on the stream after the allocation, and `cuMemFreeAsync` returns it to its pool when the
//! stream reaches the free, without synchronising anything. The memory comes from a
//! [`MemPool`]: the device's current pool (by default its default pool), or one given to
//! [`MemPool::alloc_async`].

use std::marker::PhantomData;
use std::ptr;

use cuda_driver_sys as sys;

use super::device::byte_len;
use crate::error::{check, report_drop_error, Result};
use crate::{init, Device, DeviceBuffer, DeviceRepr, Stream};

/// Device memory allocated in stream order on a stream it borrows, and freed in stream order
/// on that stream when dropped.
///
/// Why a borrow: the free (`cuMemFreeAsync`) must be queued on a live stream, and [`Stream`]
/// is not `Clone`, so the buffer borrows the stream it was allocated on. The borrow checker
/// then guarantees the stream (and through it the context) outlives the buffer, and dropping
/// the buffer is the stream-ordered free: no synchronisation, no hidden reference counting.
///
/// Use the memory on its stream, or on another one ordered after the allocation (an event
/// recorded on this stream). Blocking operations ([`copy_from_host`](Self::copy_from_host),
/// ...) run on the legacy default stream, which is ordered after streams created with
/// [`StreamFlags::DEFAULT`](crate::StreamFlags::DEFAULT) but not after
/// [`NON_BLOCKING`](crate::StreamFlags::NON_BLOCKING) ones: synchronise such a stream first.
/// Work queued on other streams that uses the memory must be done before the free is reached.
///
/// ```no_run
/// use cuda_driver::{Device, DeviceBuffer, Stream, StreamFlags};
///
/// let ctx = Device::get(0)?.primary_context()?;
/// let stream = Stream::new(&ctx, StreamFlags::DEFAULT)?;
/// let mut buf = DeviceBuffer::<u32>::new_async(&stream, 1024)?;
/// buf.memset_u32_async(7, &stream)?;
/// let mut host = vec![0u32; 1024];
/// // SAFETY: `host` is not touched until the stream is synchronised below.
/// unsafe { buf.copy_to_host_async(&mut host, &stream)? };
/// drop(buf); // queues cuMemFreeAsync on `stream`
/// stream.synchronize()?;
/// assert!(host.iter().all(|&x| x == 7));
/// # Ok::<(), cuda_driver::Error>(())
/// ```
///
/// The buffer cannot outlive its stream:
///
/// ```compile_fail
/// # fn f(ctx: &cuda_driver::Context) -> cuda_driver::Result<()> {
/// let buf = {
///     let stream = cuda_driver::Stream::new(ctx, cuda_driver::StreamFlags::DEFAULT)?;
///     cuda_driver::DeviceBuffer::<f32>::new_async(&stream, 16)?
/// };
/// # drop(buf); Ok(()) }
/// ```
#[doc(alias = "cuMemAllocAsync")]
pub struct AsyncDeviceBuffer<'s, T: DeviceRepr> {
    /// Kept first and by value, as in [`DeviceBuffer`].
    pub(crate) ptr: sys::CUdeviceptr,
    pub(crate) len: usize,
    pub(crate) stream: &'s Stream,
    pub(crate) _marker: PhantomData<T>,
}

// SAFETY: as for DeviceBuffer: device memory is not tied to a host thread and T is plain data;
// the borrowed Stream is Sync.
unsafe impl<T: DeviceRepr> Send for AsyncDeviceBuffer<'_, T> {}
// SAFETY: shared access only reads device memory through the driver.
unsafe impl<T: DeviceRepr> Sync for AsyncDeviceBuffer<'_, T> {}

impl<T: DeviceRepr> Drop for AsyncDeviceBuffer<'_, T> {
    fn drop(&mut self) {
        if self.ptr == 0 {
            return;
        }
        if self.stream.context().ensure_current_for_drop() {
            // SAFETY: `ptr` came from cuMemAllocAsync / cuMemAllocFromPoolAsync, is owned by
            // self and freed once, here, on the live stream it was allocated on.
            let r = unsafe { sys::cuMemFreeAsync(self.ptr, self.stream.as_raw()) };
            report_drop_error("cuMemFreeAsync", r);
        }
    }
}

impl<T: DeviceRepr> std::fmt::Debug for AsyncDeviceBuffer<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncDeviceBuffer")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("len", &self.len)
            .field("stream", &self.stream.as_raw())
            .finish()
    }
}

impl<T: DeviceRepr> DeviceBuffer<T> {
    /// Allocates room for `len` elements in stream order on `stream`, from the device's
    /// current memory pool; see [`AsyncDeviceBuffer`]. The contents are unspecified.
    ///
    /// Wraps `cuMemAllocAsync` (CUDA 11.2).
    #[doc(alias = "cuMemAllocAsync")]
    #[track_caller]
    pub fn new_async(stream: &Stream, len: usize) -> Result<AsyncDeviceBuffer<'_, T>> {
        let bytes = byte_len::<T>("DeviceBuffer::new_async", len)?;
        stream.context().ensure_current()?;
        let mut ptr = 0;
        if bytes > 0 {
            check(
                // SAFETY: writes one CUdeviceptr; the allocation is owned by the buffer built in
                // the next statement.
                unsafe { sys::cuMemAllocAsync(&mut ptr, bytes, stream.as_raw()) },
                "cuMemAllocAsync",
            )?;
        }
        Ok(AsyncDeviceBuffer {
            ptr,
            len,
            stream,
            _marker: PhantomData,
        })
    }
}

impl<'s, T: DeviceRepr> AsyncDeviceBuffer<'s, T> {
    /// Takes ownership of `len` elements at `ptr`, allocated in stream order and to be freed
    /// on `stream`.
    ///
    /// # Safety
    /// `ptr` came from `cuMemAllocAsync`/`cuMemAllocFromPoolAsync` for at least
    /// `len * size_of::<T>()` bytes (or is 0 with a zero-byte length), may be freed on
    /// `stream`, and nothing else frees it.
    pub unsafe fn from_raw(stream: &'s Stream, ptr: sys::CUdeviceptr, len: usize) -> Self {
        AsyncDeviceBuffer {
            ptr,
            len,
            stream,
            _marker: PhantomData,
        }
    }

    /// Gives up ownership; the caller frees the pointer with `cuMemFreeAsync` (or `cuMemFree`).
    pub fn into_raw(self) -> sys::CUdeviceptr {
        std::mem::ManuallyDrop::new(self).ptr
    }

    /// Queues the free on the stream now, returning the driver's error instead of counting
    /// it in [`drop_error_count`](crate::drop_error_count) as dropping does.
    ///
    /// Wraps `cuMemFreeAsync`.
    #[doc(alias = "cuMemFreeAsync")]
    #[track_caller]
    pub fn free_async(self) -> Result<()> {
        let this = std::mem::ManuallyDrop::new(self);
        if this.ptr == 0 {
            return Ok(());
        }
        this.stream.context().ensure_current()?;
        check(
            // SAFETY: `ptr` is owned by `this`, which is never dropped, so it is freed once, here,
            // on the stream it was allocated on.
            unsafe { sys::cuMemFreeAsync(this.ptr, this.stream.as_raw()) },
            "cuMemFreeAsync",
        )
    }

    /// The stream the buffer was allocated on and will be freed on.
    #[inline]
    pub fn stream(&self) -> &'s Stream {
        self.stream
    }
}

device_memory_accessors! {
    impl<'s, T> AsyncDeviceBuffer<'s, T>, "buffer" {
        /// The device address, valid until the stream reaches the free (0 for zero bytes).
        fn as_raw;
        /// The stream's context.
        fn context(buf) -> &'s Context { buf.stream.context() }
    }
}

delegate_to_views!(impl<'s, T> AsyncDeviceBuffer<'s, T>);

/// A memory pool (`CUmemoryPool`) for stream-ordered allocations on one device.
///
/// [`MemPool::new`] creates a pool, destroyed on drop (the driver keeps its memory until the
/// last allocation from it is freed); [`MemPool::device_default`] and
/// [`MemPool::device_current`] are borrowed handles of pools the driver owns. A pool may be
/// used from any thread (`Send + Sync`).
///
/// ```no_run
/// use cuda_driver::{Device, MemPool, Stream, StreamFlags};
///
/// let dev = Device::get(0)?;
/// let ctx = dev.primary_context()?;
/// let pool = MemPool::new(dev)?;
/// pool.set_release_threshold(64 << 20)?; // keep up to 64 MiB cached between syncs
/// let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;
/// let buf = pool.alloc_async::<f32>(&stream, 1 << 20)?;
/// drop(buf);
/// stream.synchronize()?;
/// pool.trim_to(0)?;
/// # Ok::<(), cuda_driver::Error>(())
/// ```
#[doc(alias = "CUmemoryPool")]
pub struct MemPool {
    raw: sys::CUmemoryPool,
    device: Device,
    owned: bool,
}

// SAFETY: memory pools are device-level driver objects usable from any host thread; an owned
// pool is destroyed once, in Drop.
unsafe impl Send for MemPool {}
// SAFETY: every pool operation is thread-safe in the driver.
unsafe impl Sync for MemPool {}

impl Drop for MemPool {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: `raw` was created by cuMemPoolCreate and is owned by self. Allocations
            // still outstanding keep the pool's memory until they are freed (the driver
            // defers the release).
            let r = unsafe { sys::cuMemPoolDestroy(self.raw) };
            report_drop_error("cuMemPoolDestroy", r);
        }
    }
}

impl std::fmt::Debug for MemPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemPool")
            .field("raw", &self.raw)
            .field("device", &self.device)
            .field("owned", &self.owned)
            .finish()
    }
}

impl MemPool {
    /// Creates a pool of device memory on `device` (pinned allocation type, no export handle
    /// types, system-dependent maximum size). Destroyed when dropped.
    ///
    /// Wraps `cuMemPoolCreate`.
    #[doc(alias = "cuMemPoolCreate")]
    #[track_caller]
    pub fn new(device: Device) -> Result<MemPool> {
        init()?;
        let props = sys::CUmemPoolProps {
            allocType: sys::CU_MEM_ALLOCATION_TYPE_PINNED,
            handleTypes: sys::CU_MEM_HANDLE_TYPE_NONE,
            location: super::MemLocation::device(device).as_raw(),
            ..Default::default()
        };
        let mut raw = ptr::null_mut();
        check(
            // SAFETY: `props` is a fully initialised CUmemPoolProps (reserved bytes zero); writes
            // one handle, owned by the MemPool built in the next statement.
            unsafe { sys::cuMemPoolCreate(&mut raw, &props) },
            "cuMemPoolCreate",
        )?;
        Ok(MemPool {
            raw,
            device,
            owned: true,
        })
    }

    /// The device's default pool, which the driver owns: a borrowed handle.
    ///
    /// Wraps `cuDeviceGetDefaultMemPool`.
    #[doc(alias = "cuDeviceGetDefaultMemPool")]
    #[track_caller]
    pub fn device_default(device: Device) -> Result<MemPool> {
        init()?;
        let mut raw = ptr::null_mut();
        check(
            // SAFETY: writes one handle, which the driver keeps alive for the process.
            unsafe { sys::cuDeviceGetDefaultMemPool(&mut raw, device.as_raw()) },
            "cuDeviceGetDefaultMemPool",
        )?;
        Ok(MemPool {
            raw,
            device,
            owned: false,
        })
    }

    /// The device's current pool, the one `cuMemAllocAsync` ([`DeviceBuffer::new_async`])
    /// takes memory from: a borrowed handle.
    ///
    /// Wraps `cuDeviceGetMemPool`.
    #[doc(alias = "cuDeviceGetMemPool")]
    #[track_caller]
    pub fn device_current(device: Device) -> Result<MemPool> {
        init()?;
        let mut raw = ptr::null_mut();
        check(
            // SAFETY: writes one handle; the pool is the default one or one the user set, which
            // this handle does not own.
            unsafe { sys::cuDeviceGetMemPool(&mut raw, device.as_raw()) },
            "cuDeviceGetMemPool",
        )?;
        Ok(MemPool {
            raw,
            device,
            owned: false,
        })
    }

    /// Takes ownership of a pool created with `cuMemPoolCreate` on `device`.
    ///
    /// # Safety
    /// `raw` is a live pool of `device` that nothing else destroys.
    pub unsafe fn from_raw(raw: sys::CUmemoryPool, device: Device) -> MemPool {
        MemPool {
            raw,
            device,
            owned: true,
        }
    }

    /// Gives up ownership: the caller destroys the pool (if this handle owned it).
    pub fn into_raw(self) -> sys::CUmemoryPool {
        std::mem::ManuallyDrop::new(self).raw
    }

    /// The raw `CUmemoryPool`, valid while `self` lives.
    #[inline]
    pub fn as_raw(&self) -> sys::CUmemoryPool {
        self.raw
    }

    /// The pool's device.
    #[inline]
    pub fn device(&self) -> Device {
        self.device
    }

    /// Allocates room for `len` elements from this pool in stream order on `stream`; see
    /// [`AsyncDeviceBuffer`]. The stream's device must be able to access the pool.
    ///
    /// Wraps `cuMemAllocFromPoolAsync`.
    #[doc(alias = "cuMemAllocFromPoolAsync")]
    #[track_caller]
    pub fn alloc_async<'s, T: DeviceRepr>(
        &self,
        stream: &'s Stream,
        len: usize,
    ) -> Result<AsyncDeviceBuffer<'s, T>> {
        let bytes = byte_len::<T>("MemPool::alloc_async", len)?;
        stream.context().ensure_current()?;
        let mut ptr = 0;
        if bytes > 0 {
            check(
                // SAFETY: the pool and stream are alive; writes one CUdeviceptr, owned by the
                // buffer built in the next statement (freeing it does not need the pool handle).
                unsafe { sys::cuMemAllocFromPoolAsync(&mut ptr, bytes, self.raw, stream.as_raw()) },
                "cuMemAllocFromPoolAsync",
            )?;
        }
        Ok(AsyncDeviceBuffer {
            ptr,
            len,
            stream,
            _marker: PhantomData,
        })
    }

    #[track_caller]
    fn get_u64(&self, attr: sys::CUmemPool_attribute) -> Result<u64> {
        let mut v: sys::cuuint64_t = 0;
        check(
            // SAFETY: every attribute read through this helper is a cuuint64_t; writes one.
            unsafe { sys::cuMemPoolGetAttribute(self.raw, attr, (&mut v as *mut u64).cast()) },
            "cuMemPoolGetAttribute",
        )?;
        Ok(v)
    }

    /// Bytes of reserved memory the pool keeps cached instead of releasing it to the system
    /// when a stream, event or context is synchronised (`CU_MEMPOOL_ATTR_RELEASE_THRESHOLD`).
    ///
    /// Wraps `cuMemPoolGetAttribute`.
    #[doc(alias = "cuMemPoolGetAttribute")]
    #[doc(alias = "CU_MEMPOOL_ATTR_RELEASE_THRESHOLD")]
    #[track_caller]
    pub fn release_threshold(&self) -> Result<u64> {
        self.get_u64(sys::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
    }

    /// Sets the release threshold (`u64::MAX`: never release on synchronisation).
    ///
    /// Wraps `cuMemPoolSetAttribute` with `CU_MEMPOOL_ATTR_RELEASE_THRESHOLD`.
    #[doc(alias = "cuMemPoolSetAttribute")]
    #[track_caller]
    pub fn set_release_threshold(&self, bytes: u64) -> Result<()> {
        let mut v: sys::cuuint64_t = bytes;
        check(
            // SAFETY: the attribute's value is a cuuint64_t, read by the driver from `v`.
            unsafe {
                sys::cuMemPoolSetAttribute(
                    self.raw,
                    sys::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                    (&mut v as *mut u64).cast(),
                )
            },
            "cuMemPoolSetAttribute",
        )
    }

    /// Bytes of memory the pool currently holds from the system
    /// (`CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT`).
    #[doc(alias = "CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT")]
    #[track_caller]
    pub fn reserved_mem_current(&self) -> Result<u64> {
        self.get_u64(sys::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)
    }

    /// The most bytes the pool has held since the high-water mark was last reset
    /// (`CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH`).
    #[doc(alias = "CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH")]
    #[track_caller]
    pub fn reserved_mem_high(&self) -> Result<u64> {
        self.get_u64(sys::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)
    }

    /// Bytes currently allocated from the pool (`CU_MEMPOOL_ATTR_USED_MEM_CURRENT`).
    #[doc(alias = "CU_MEMPOOL_ATTR_USED_MEM_CURRENT")]
    #[track_caller]
    pub fn used_mem_current(&self) -> Result<u64> {
        self.get_u64(sys::CU_MEMPOOL_ATTR_USED_MEM_CURRENT)
    }

    /// The most bytes allocated from the pool since the high-water mark was last reset
    /// (`CU_MEMPOOL_ATTR_USED_MEM_HIGH`).
    #[doc(alias = "CU_MEMPOOL_ATTR_USED_MEM_HIGH")]
    #[track_caller]
    pub fn used_mem_high(&self) -> Result<u64> {
        self.get_u64(sys::CU_MEMPOOL_ATTR_USED_MEM_HIGH)
    }

    /// Releases cached memory back to the system until the pool holds at most
    /// `min_bytes_to_keep` bytes of unused memory (memory in use is never released).
    ///
    /// Wraps `cuMemPoolTrimTo`.
    #[doc(alias = "cuMemPoolTrimTo")]
    #[track_caller]
    pub fn trim_to(&self, min_bytes_to_keep: usize) -> Result<()> {
        check(
            // SAFETY: the pool is alive; plain value argument.
            unsafe { sys::cuMemPoolTrimTo(self.raw, min_bytes_to_keep) },
            "cuMemPoolTrimTo",
        )
    }
}
