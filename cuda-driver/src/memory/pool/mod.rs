//! Stream Ordered Memory Allocator: [`AsyncDeviceBuffer`] and memory pools ([`MemPool`],
//! [`MemPoolRef`]).
//!
//! `cuMemAllocAsync` allocates memory *in stream order*: the memory may be used by work queued
//! on the stream after the allocation, and `cuMemFreeAsync` returns it to its pool when the
//! stream reaches the free, without synchronising anything. The memory comes from a pool:
//! the device's current pool (by default its default pool), or one given to
//! [`MemPool::alloc_async`].

use std::marker::PhantomData;
use std::ops::Deref;
use std::ptr;

use cuda_driver_macros::{call, uses, wraps};
use cuda_driver_sys as sys;

#[cfg(unix)]
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use crate::context::Context;
use crate::device::Device;
use crate::error::{report_drop_error, Error, Result};
use crate::handle::{give_up, Handle, OwnedHandle};
use crate::init;
use crate::memory::device::DeviceBuffer;
use crate::memory::owner::device_memory;
use crate::memory::view::{byte_len, stream_identity};
use crate::memory::vmm::check_handle_types;
use crate::memory::vmm::MemAccessDesc;
use crate::memory::MemLocation;
use crate::release::{release, SendRaw};
use crate::repr::DeviceRepr;
use crate::stream::Stream;
use crate::types::{MemAccessFlags, MemAllocationHandleType, MemAllocationType};

use crate::types::MemPoolCreateUsageFlags;

pub(crate) mod location;
mod shared;

/// Device memory allocated in stream order on a stream it borrows, and freed in stream order
/// on that stream when dropped.
///
/// # The stream-order rule
///
/// The free (`cuMemFreeAsync`) is queued on the buffer's stream and runs as soon as the
/// stream reaches it; the pool may then hand the memory to the next allocation. Work on any
/// *other* stream that still uses the memory would then corrupt the new owner's data. So the
/// buffer is used on its own stream only, and the crate enforces it in safe code:
///
/// * every operation with a stream (`copy_*_async`, `memset_async`, and checked kernel
///   launches) on the buffer or its views must use the buffer's stream, or fails with
///   [`Error::StreamMismatch`] before anything is queued (and the copies and memsets also
///   require a stream of the buffer's context, [`Error::ContextMismatch`]);
/// * the operations without a stream run on the buffer's stream and wait for it;
/// * to use the memory on another stream of its context, move the buffer there first with
///   [`move_to_stream`](Self::move_to_stream): it records an event on the old stream and
///   makes the new one wait for it, so everything queued before on the old stream is ordered
///   before everything queued after on the new one, the free included; a stream of another
///   context (its null stream included) is refused;
/// * the per-thread default stream ([`Stream::per_thread`]) names a different stream on each
///   thread, so it cannot order memory that may be dropped on another thread: allocating on
///   it is [`Error::InvalidStream`].
///
/// An unchecked kernel launch on another stream with the buffer's views as arguments is
/// outside these checks; its `# Safety` contract includes this rule.
///
/// Why a borrow: the free must be queued on a live stream, and [`Stream`] is not `Clone`,
/// so the buffer borrows the stream it is ordered on. The borrow checker then guarantees the
/// stream (and through it the context) outlives the buffer.
///
/// ```no_run
/// use cuda_driver::prelude::*;
/// use cuda_driver::{Device, DeviceBuffer, Stream, types::StreamFlags};
///
/// let ctx = Device::get(0)?.primary_context()?;
/// let stream = Stream::new(&ctx, StreamFlags::DEFAULT)?;
/// let mut buf = DeviceBuffer::<u32>::new_async(&stream, 1024)?;
/// buf.memset_async(7u32, &stream)?;
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
///     let stream = cuda_driver::Stream::new(ctx, cuda_driver::types::StreamFlags::DEFAULT)?;
///     cuda_driver::DeviceBuffer::<f32>::new_async(&stream, 16)?
/// };
/// # drop(buf); Ok(()) }
/// ```
#[wraps(cuMemAllocAsync)]
pub struct AsyncDeviceBuffer<'s, T: DeviceRepr> {
    ptr: sys::CUdeviceptr,
    len: usize,
    stream: &'s Stream,
    _marker: PhantomData<T>,
}

// SAFETY: as for DeviceBuffer: device memory is not tied to a host thread and T is plain data;
// the borrowed Stream is Sync. The stream is never the per-thread default stream (refused at
// allocation), so the free is queued on the same stream from any thread.
unsafe impl<T: DeviceRepr> Send for AsyncDeviceBuffer<'_, T> {}
// SAFETY: shared access only reads device memory through the driver.
unsafe impl<T: DeviceRepr> Sync for AsyncDeviceBuffer<'_, T> {}

impl<T: DeviceRepr> Drop for AsyncDeviceBuffer<'_, T> {
    fn drop(&mut self) {
        if self.ptr == 0 {
            return;
        }
        let (ptr, stream) = (self.ptr, SendRaw(self.stream.as_raw()));
        // SAFETY: `ptr` came from cuMemAllocAsync / cuMemAllocFromPoolAsync, is owned by self
        // and freed once, here, on the live stream all safe work on it was queued on (the
        // stream-order rule), so the free is ordered after that work.
        self.stream.context().release_for_stream_call(
            self.stream.as_raw(),
            "cuMemFreeAsync",
            move || unsafe { sys::cuMemFreeAsync(ptr, stream.get()) },
        );
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

/// Refuses the per-thread default stream as the stream memory is ordered on (stream-ordered,
/// managed, and the device views of page-locked memory).
#[track_caller]
pub(crate) fn check_orderable(what: &'static str, stream: &Stream) -> Result<()> {
    if stream_identity(stream.as_raw()) == sys::CU_STREAM_PER_THREAD {
        return Err(Error::InvalidStream {
            what,
            reason: "the per-thread default stream names a different stream on every thread, \
                     so it cannot order memory used, waited for or freed on another thread; use \
                     a created stream or the legacy default stream",
        });
    }
    Ok(())
}

/// Orders `new` after the work queued on `old` so far (an event recorded on `old` that `new`
/// waits for), for memory ordered on `old` that is to be ordered on `new` from now on.
///
/// The two streams must belong to one context ([`Error::ContextMismatch`]), checked first and
/// whatever their handles: the null and legacy handles name a different stream in each
/// context, so equal handles do not make one stream. Nothing is queued when they are the same
/// stream.
#[track_caller]
pub(crate) fn order_after(what: &'static str, old: &Stream, new: &Stream) -> Result<()> {
    if new.context().as_raw() != old.context().as_raw() {
        return Err(Error::ContextMismatch {
            what,
            expected: old.context().as_raw() as usize,
            found: new.context().as_raw() as usize,
        });
    }
    if stream_identity(new.as_raw()) != stream_identity(old.as_raw()) {
        // The old stream's hand-off event, recorded there and waited for on `new`.
        old.hand_off_to(new)?;
    }
    Ok(())
}

/// A refused or failed `move_to_stream` ([`AsyncDeviceBuffer::move_to_stream`],
/// [`ManagedBuffer::move_to_stream`](crate::memory::ManagedBuffer::move_to_stream)): why, and the
/// buffer `B`, unchanged, still ordered on its old stream.
///
/// It converts into its [`Error`] (so `?` works in functions returning
/// [`Result`]); that drops the buffer, which is then released as dropping it
/// always is: on, or after, its old stream, where all its work was queued.
pub struct MoveToStreamError<B> {
    /// Why the buffer was not moved.
    pub error: Error,
    /// The buffer, still ordered on its old stream.
    pub buffer: B,
}

impl<B: std::fmt::Debug> std::fmt::Debug for MoveToStreamError<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MoveToStreamError")
            .field("error", &self.error)
            .field("buffer", &self.buffer)
            .finish()
    }
}

impl<B> std::fmt::Display for MoveToStreamError<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (the buffer was not moved; it stays on its stream)",
            self.error
        )
    }
}

impl<B: std::fmt::Debug> std::error::Error for MoveToStreamError<B> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl<B> From<MoveToStreamError<B>> for Error {
    /// The error; the buffer is dropped (released on, or after, its old stream).
    fn from(e: MoveToStreamError<B>) -> Error {
        e.error
    }
}

impl<T: DeviceRepr> DeviceBuffer<T> {
    /// Allocates room for `len` elements in stream order on `stream`, from the device's
    /// current memory pool; see [`AsyncDeviceBuffer`] for the rules. The contents are
    /// unspecified.
    ///
    /// Calls `cuMemAllocAsync` (CUDA 11.2).
    #[wraps(cuMemAllocAsync)]
    #[track_caller]
    pub fn new_async(stream: &Stream, len: usize) -> Result<AsyncDeviceBuffer<'_, T>> {
        let bytes = byte_len::<T>("DeviceBuffer::new_async", len)?;
        check_orderable("DeviceBuffer::new_async", stream)?;
        let _cur = stream.enter_for_call()?;
        let mut ptr = 0;
        if bytes > 0 {
            call!(
                // SAFETY: writes one CUdeviceptr; the allocation is owned by the buffer built in
                // the next statement.
                unsafe { sys::cuMemAllocAsync(&mut ptr, bytes, stream.as_raw()) },
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
    /// `len * size_of::<T>()` bytes (or is 0 with a zero-byte length), is ordered on `stream`
    /// (no work on another stream may still use it), `stream` is not the per-thread default
    /// stream, and nothing else frees it.
    pub unsafe fn from_raw(ptr: sys::CUdeviceptr, len: usize, stream: &'s Stream) -> Self {
        AsyncDeviceBuffer {
            ptr,
            len,
            stream,
            _marker: PhantomData,
        }
    }

    /// Gives up ownership; the caller frees the pointer with `cuMemFreeAsync` (or
    /// `cuMemFree`).
    pub fn into_raw(self) -> sys::CUdeviceptr {
        std::mem::ManuallyDrop::new(self).ptr
    }

    /// The device address, valid until the stream reaches the free (0 for zero bytes).
    #[inline]
    pub fn as_raw(&self) -> sys::CUdeviceptr {
        self.ptr
    }

    /// The stream the buffer is ordered on and will be freed on.
    #[inline]
    pub fn stream(&self) -> &'s Stream {
        self.stream
    }

    /// Moves the buffer to `stream`: records an event on the buffer's stream (that stream's
    /// own, created at its first hand-off and reused, see [`Stream::wait_stream`]) and makes
    /// `stream` wait for it, so that work queued on `stream` from now on (the free included)
    /// runs after everything queued on the old stream so far. From then on the buffer
    /// belongs to `stream` (see the [stream-order rule](Self#the-stream-order-rule)). Moving
    /// to the stream it is on queues nothing.
    ///
    /// Both streams must be of the same context ([`Error::ContextMismatch`]), checked first
    /// whatever the streams' handles: every context has its own null (legacy) stream, so the
    /// null stream of another context is another stream. The per-thread default stream is
    /// [`Error::InvalidStream`]. On any failure nothing has been moved: the error gives the
    /// buffer back ([`MoveToStreamError::buffer`]), still on its old stream; converted into
    /// an [`Error`] (`?`) it drops the buffer, freed on its old stream after its work there.
    #[uses(cuEventCreate, cuEventRecord, cuStreamWaitEvent, cuEventDestroy_v2)]
    #[track_caller]
    pub fn move_to_stream<'t>(
        self,
        stream: &'t Stream,
    ) -> std::result::Result<AsyncDeviceBuffer<'t, T>, MoveToStreamError<Self>> {
        const WHAT: &str = "AsyncDeviceBuffer::move_to_stream";
        if let Err(error) =
            check_orderable(WHAT, stream).and_then(|()| order_after(WHAT, self.stream, stream))
        {
            return Err(MoveToStreamError {
                error,
                buffer: self,
            });
        }
        let this = std::mem::ManuallyDrop::new(self);
        Ok(AsyncDeviceBuffer {
            ptr: this.ptr,
            len: this.len,
            stream,
            _marker: PhantomData,
        })
    }

    /// Queues the free on the stream now, returning the driver's error instead of counting
    /// it in [`drop_error_count`](crate::error::drop_error_count) as dropping does.
    #[wraps(cuMemFreeAsync)]
    #[track_caller]
    pub fn free_async(self) -> Result<()> {
        let this = std::mem::ManuallyDrop::new(self);
        if this.ptr == 0 {
            return Ok(());
        }
        let _cur = this.stream.enter_for_call()?;
        call!(
            // SAFETY: `ptr` is owned by `this`, which is never dropped, so it is freed once,
            // here, on the stream it is ordered on.
            unsafe { sys::cuMemFreeAsync(this.ptr, this.stream.as_raw()) },
        )
    }

    /// The export data of this allocation, for a process that imported its pool
    /// ([`MemPool::import_pointer`]). The pool must have been created with an export handle
    /// type ([`MemPoolProps::with_handle_types`]).
    #[wraps(cuMemPoolExportPointer)]
    #[track_caller]
    pub fn export_pointer(&self) -> Result<PoolPtrExportData> {
        let _cur = self.stream.context().enter()?;
        let mut data = sys::CUmemPoolPtrExportData { reserved: [0; 64] };
        call!(
            // SAFETY: the allocation is alive; writes one CUmemPoolPtrExportData.
            unsafe { sys::cuMemPoolExportPointer(&mut data, self.ptr) },
        )?;
        Ok(PoolPtrExportData(data.reserved))
    }

    #[inline]
    fn home(&self) -> sys::CUstream {
        stream_identity(self.stream.as_raw())
    }
}

// SAFETY: the view covers the allocation, borrowed from `self`, ordered on the buffer's stream
// (freed on it); mutable views borrow `self` exclusively.
device_memory!(
    impl[T: DeviceRepr] AsyncDeviceBuffer<'_, T>, mut impl[T: DeviceRepr] AsyncDeviceBuffer<'_, T>;
    |this| (this.ptr, this.len, this.stream.context(), this.home())
);

/// A memory pool (`CUmemoryPool`) for stream-ordered allocations on one device.
///
/// [`MemPool::new`] creates a pool, destroyed on drop (the driver keeps its memory until the
/// last allocation from it is freed). [`MemPool::device_default`] and
/// [`MemPool::device_current`] return a [`MemPoolRef`], a borrowed handle of a pool the
/// driver owns, which derefs to `MemPool` and never destroys it. A pool may be used from any
/// thread (`Send + Sync`).
///
/// ```no_run
/// use cuda_driver::{Device, memory::pool::MemPool, Stream, types::StreamFlags};
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
#[wraps(CUmemoryPool)]
pub struct MemPool {
    raw: sys::CUmemoryPool,
    device: Device,
}

/// The properties of a new memory pool (`CUmemPoolProps`), built from a location:
/// [`device`](Self::device), [`host`](Self::host), [`host_numa`](Self::host_numa), then the
/// `with_*` methods. Every field of `CUmemPoolProps` has one (the Windows security
/// attributes excepted: always null; Windows handle types are not supported, see
/// [`AllocationProps`](crate::memory::vmm::AllocationProps)).
///
/// ```no_run
/// use cuda_driver::{Device, types::MemAllocationHandleType, memory::pool::MemPool, memory::pool::MemPoolProps};
///
/// let dev = Device::get(0)?;
/// let props = MemPoolProps::device(dev)
///     .with_handle_types(MemAllocationHandleType::POSIX_FILE_DESCRIPTOR)
///     .with_max_size(1 << 30);
/// let pool = MemPool::with_props(dev, &props)?;
/// let fd = pool.export_fd()?; // send it to another process
/// # drop(fd);
/// # Ok::<(), cuda_driver::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[doc(alias = "CUmemPoolProps")]
pub struct MemPoolProps {
    alloc_type: MemAllocationType,
    handle_types: MemAllocationHandleType,
    location: MemLocation,
    max_size: usize,
    usage: MemPoolCreateUsageFlags,
}

impl MemPoolProps {
    /// A pool of pinned memory at `location`, with no export handle types, the system's
    /// maximum size and no usage flags.
    pub const fn at(location: MemLocation) -> MemPoolProps {
        MemPoolProps {
            alloc_type: MemAllocationType::PINNED,
            handle_types: MemAllocationHandleType::NONE,
            location,
            max_size: 0,
            usage: MemPoolCreateUsageFlags::empty(),
        }
    }

    /// A pool of memory of `device`.
    pub const fn device(device: Device) -> MemPoolProps {
        Self::at(MemLocation::device(device))
    }

    /// A pool of host memory (needs `CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED`).
    ///
    /// Its allocations are host memory that kernels reach through their views: the
    /// device-to-host and host-to-device copies refuse them (`CUDA_ERROR_INVALID_VALUE`), the
    /// unified copies ([`DeviceSliceMut::copy_from_unified`](crate::DeviceSliceMut::copy_from_unified))
    /// move them.
    pub const fn host() -> MemPoolProps {
        Self::at(MemLocation::host())
    }

    /// A pool of host memory on NUMA node `node` (needs
    /// `CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED`).
    pub const fn host_numa(node: i32) -> MemPoolProps {
        Self::at(MemLocation::host_numa(node))
    }

    /// The allocation type (`PINNED` by default).
    pub const fn with_alloc_type(mut self, alloc_type: MemAllocationType) -> Self {
        self.alloc_type = alloc_type;
        self
    }

    /// The handle types the pool may be exported as ([`MemPool::export_fd`]).
    pub const fn with_handle_types(mut self, types: MemAllocationHandleType) -> Self {
        self.handle_types = types;
        self
    }

    /// The most bytes the pool may reserve (0: a system-dependent default).
    pub const fn with_max_size(mut self, bytes: usize) -> Self {
        self.max_size = bytes;
        self
    }

    /// The intended uses of the pool's allocations.
    pub const fn with_usage(mut self, usage: MemPoolCreateUsageFlags) -> Self {
        self.usage = usage;
        self
    }

    /// Where the pool's memory lives.
    pub const fn location(&self) -> MemLocation {
        self.location
    }

    /// The export handle types.
    pub const fn handle_types(&self) -> MemAllocationHandleType {
        self.handle_types
    }

    /// The maximum size (0: the system's default).
    pub const fn max_size(&self) -> usize {
        self.max_size
    }

    /// The allocation type.
    pub const fn alloc_type(&self) -> MemAllocationType {
        self.alloc_type
    }

    /// The usage flags.
    pub const fn usage(&self) -> MemPoolCreateUsageFlags {
        self.usage
    }

    /// The raw `CUmemPoolProps` (reserved bytes and the Windows attributes zero).
    pub fn as_raw(&self) -> sys::CUmemPoolProps {
        sys::CUmemPoolProps {
            allocType: self.alloc_type.as_raw(),
            handleTypes: self.handle_types.as_raw(),
            location: self.location.as_raw(),
            win32SecurityAttributes: ptr::null_mut(),
            maxSize: self.max_size,
            usage: self.usage.as_raw() as u16,
            reserved: [0; 54],
        }
    }
}

/// The data that identifies one allocation of an exported pool
/// (`CUmemPoolPtrExportData`): 64 opaque bytes, `Copy`, to send to the process that imported
/// the pool ([`MemPool::import_pointer`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[doc(alias = "CUmemPoolPtrExportData")]
pub struct PoolPtrExportData([u8; 64]);

impl PoolPtrExportData {
    /// The data's bytes, to send to another process.
    pub const fn to_bytes(self) -> [u8; 64] {
        self.0
    }

    /// Data from bytes received from another process.
    pub const fn from_bytes(bytes: [u8; 64]) -> PoolPtrExportData {
        PoolPtrExportData(bytes)
    }
}

impl std::fmt::Debug for PoolPtrExportData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PoolPtrExportData(")?;
        for b in &self.0[..8] {
            write!(f, "{b:02x}")?;
        }
        write!(f, "..)")
    }
}

/// A borrowed [`MemPool`]: a pool the driver owns (a device's default or current pool), or
/// one passed in as a raw handle. Derefs to `MemPool`; dropping it destroys nothing.
///
/// The deref is shared only (`MemPool` is not `Clone`, and its `&self` methods neither
/// destroy nor give up the handle), so no owned `MemPool` can be moved out of a borrowed one:
///
/// ```compile_fail,E0596
/// # fn f(dev: cuda_driver::Device, mine: &mut cuda_driver::memory::pool::MemPool) -> cuda_driver::Result<()> {
/// let mut default = cuda_driver::memory::pool::MemPool::device_default(dev)?;
/// std::mem::swap(&mut *default, mine); // `mine` would then destroy the driver's pool
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct MemPoolRef<'a> {
    pool: std::mem::ManuallyDrop<MemPool>,
    _borrow: PhantomData<&'a MemPool>,
}

impl Deref for MemPoolRef<'_> {
    type Target = MemPool;
    #[inline]
    fn deref(&self) -> &MemPool {
        &self.pool
    }
}

impl Handle for MemPoolRef<'_> {
    type Raw = sys::CUmemoryPool;

    /// The raw `CUmemoryPool`, valid for the borrow.
    #[inline]
    fn as_raw(&self) -> sys::CUmemoryPool {
        self.pool.raw
    }
}

impl MemPoolRef<'_> {
    /// Borrows a pool by its raw handle; dropping the borrow destroys nothing.
    ///
    /// # Safety
    /// `raw` is a live pool of `device` that stays alive for the returned lifetime.
    pub unsafe fn borrow_raw<'a>(raw: sys::CUmemoryPool, device: Device) -> MemPoolRef<'a> {
        MemPoolRef {
            pool: std::mem::ManuallyDrop::new(MemPool { raw, device }),
            _borrow: PhantomData,
        }
    }
}

// SAFETY: memory pools are device-level driver objects usable from any host thread; an owned
// pool is destroyed once, in Drop.
unsafe impl Send for MemPool {}
// SAFETY: every pool operation is thread-safe in the driver.
unsafe impl Sync for MemPool {}

impl Drop for MemPool {
    fn drop(&mut self) {
        let raw = SendRaw(self.raw);
        release(move || {
            // SAFETY: `raw` was created by cuMemPoolCreate and is owned by self (borrowed pools
            // are MemPoolRefs, which never drop their MemPool). Allocations still outstanding
            // keep the pool's memory until they are freed (the driver defers the release).
            let r = unsafe { sys::cuMemPoolDestroy(raw.get()) };
            report_drop_error("cuMemPoolDestroy", r);
        });
    }
}

impl std::fmt::Debug for MemPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemPool")
            .field("raw", &self.raw)
            .field("device", &self.device)
            .finish()
    }
}

impl Handle for MemPool {
    type Raw = sys::CUmemoryPool;

    /// The raw `CUmemoryPool`, valid while `self` lives.
    #[inline]
    fn as_raw(&self) -> sys::CUmemoryPool {
        self.raw
    }
}

impl OwnedHandle for MemPool {
    type Parent<'p> = Device;

    /// Takes ownership of a pool created with `cuMemPoolCreate` on `device`.
    ///
    /// # Safety
    /// `raw` is a live pool of `device` that nothing else destroys.
    unsafe fn from_raw(raw: sys::CUmemoryPool, device: Device) -> MemPool {
        MemPool { raw, device }
    }

    /// Gives up ownership: the caller destroys the pool.
    fn into_raw(self) -> sys::CUmemoryPool {
        give_up!(self, raw; drop(); forget(device))
    }
}

impl MemPool {
    /// Creates a pool of device memory on `device` (pinned allocation type, no export handle
    /// types, system-dependent maximum size). Destroyed when dropped.
    #[wraps(cuMemPoolCreate)]
    #[track_caller]
    pub fn new(device: Device) -> Result<MemPool> {
        // The default properties of `device`: the location is the device's and no handle
        // types are asked for, so `with_props` refuses nothing and queries no attribute.
        Self::with_props(device, &MemPoolProps::device(device))
    }

    /// The device's default pool, which the driver owns: a borrowed handle.
    #[wraps(cuDeviceGetDefaultMemPool)]
    #[track_caller]
    pub fn device_default(device: Device) -> Result<MemPoolRef<'static>> {
        init()?;
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: writes one handle, which the driver keeps alive for the process.
            unsafe { sys::cuDeviceGetDefaultMemPool(&mut raw, device.as_raw()) },
        )?;
        // SAFETY: the default pool lives as long as the process.
        Ok(unsafe { MemPoolRef::borrow_raw(raw, device) })
    }

    /// The raw handle of the device's current pool, the one `cuMemAllocAsync`
    /// ([`DeviceBuffer::new_async`]) takes memory from: compare it with
    /// [`MemPool::as_raw`] or [`device_default`](Self::device_default). It is no borrowed
    /// pool: the current pool may be one of the caller's, which may be dropped while the
    /// handle is kept (to use it, [`MemPoolRef::borrow_raw`] states what must hold).
    #[wraps(cuDeviceGetMemPool)]
    #[track_caller]
    pub fn device_current(device: Device) -> Result<sys::CUmemoryPool> {
        init()?;
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: writes one handle; the pool is the default one or one the user set, which
            // this handle does not own.
            unsafe { sys::cuDeviceGetMemPool(&mut raw, device.as_raw()) },
        )?;
        Ok(raw)
    }

    /// The pool's device.
    #[inline]
    pub fn device(&self) -> Device {
        self.device
    }

    /// Allocates room for `len` elements from this pool in stream order on `stream`; see
    /// [`AsyncDeviceBuffer`]. The stream's device must be able to access the pool.
    #[wraps(cuMemAllocFromPoolAsync)]
    #[track_caller]
    pub fn alloc_async<'s, T: DeviceRepr>(
        &self,
        stream: &'s Stream,
        len: usize,
    ) -> Result<AsyncDeviceBuffer<'s, T>> {
        let bytes = byte_len::<T>("MemPool::alloc_async", len)?;
        check_orderable("MemPool::alloc_async", stream)?;
        let _cur = stream.enter_for_call()?;
        let mut ptr = 0;
        if bytes > 0 {
            call!(
                // SAFETY: the pool and stream are alive; writes one CUdeviceptr, owned by the
                // buffer built in the next statement (freeing it does not need the pool handle).
                unsafe { sys::cuMemAllocFromPoolAsync(&mut ptr, bytes, self.raw, stream.as_raw()) },
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
        call!(
            // SAFETY: every attribute read through this helper is a cuuint64_t; writes one.
            unsafe { sys::cuMemPoolGetAttribute(self.raw, attr, (&mut v as *mut u64).cast()) },
        )?;
        Ok(v)
    }

    /// Bytes of reserved memory the pool keeps cached instead of releasing it to the system
    /// when a stream, event or context is synchronised (`CU_MEMPOOL_ATTR_RELEASE_THRESHOLD`).
    #[wraps(cuMemPoolGetAttribute)]
    #[doc(alias = "CU_MEMPOOL_ATTR_RELEASE_THRESHOLD")]
    #[track_caller]
    pub fn release_threshold(&self) -> Result<u64> {
        self.get_u64(sys::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
    }

    /// Sets the release threshold (`u64::MAX`: never release on synchronisation).
    ///
    /// Calls `cuMemPoolSetAttribute` with `CU_MEMPOOL_ATTR_RELEASE_THRESHOLD`.
    #[wraps(cuMemPoolSetAttribute)]
    #[track_caller]
    pub fn set_release_threshold(&self, bytes: u64) -> Result<()> {
        let mut v: sys::cuuint64_t = bytes;
        call!(
            // SAFETY: the attribute's value is a cuuint64_t, read by the driver from `v`.
            unsafe {
                sys::cuMemPoolSetAttribute(
                    self.raw,
                    sys::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                    (&mut v as *mut u64).cast(),
                )
            },
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
    #[wraps(cuMemPoolTrimTo)]
    #[track_caller]
    pub fn trim_to(&self, min_bytes_to_keep: usize) -> Result<()> {
        call!(
            // SAFETY: the pool is alive; plain value argument.
            unsafe { sys::cuMemPoolTrimTo(self.raw, min_bytes_to_keep) },
        )
    }

    /// Creates a pool with `props` for `device`, the device whose streams allocate from it
    /// (for a pool of device memory, the location's device: another one is
    /// [`Error::InvalidArgument`]). Handle types the device cannot export are
    /// [`VmmError::HandleTypeUnsupported`](crate::error::vmm::VmmError::HandleTypeUnsupported)
    /// before the driver is asked. Destroyed when dropped.
    #[wraps(cuMemPoolCreate)]
    #[track_caller]
    pub fn with_props(device: Device, props: &MemPoolProps) -> Result<MemPool> {
        init()?;
        let loc = props.location.as_raw();
        if loc.type_ == sys::CU_MEM_LOCATION_TYPE_DEVICE && loc.id != device.as_raw() {
            return Err(Error::InvalidArgument(format!(
                "MemPool::with_props: the pool's memory is on device {}, but it is created \
                 for device {}",
                loc.id,
                device.as_raw()
            )));
        }
        check_handle_types("MemPool::with_props", props.handle_types, Some(device))?;
        let raw_props = props.as_raw();
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: `raw_props` is a fully initialised CUmemPoolProps (reserved bytes zero);
            // writes one handle, owned by the MemPool built in the next statement.
            unsafe { sys::cuMemPoolCreate(&mut raw, &raw_props) },
        )?;
        Ok(MemPool { raw, device })
    }

    /// Makes `pool` the current pool of `device`: the one [`DeviceBuffer::new_async`] takes
    /// memory from. Destroying a pool that is current makes the device's default pool
    /// current again (the driver does so).
    #[wraps(cuDeviceSetMemPool)]
    #[track_caller]
    pub fn set_device_current(device: Device, pool: &MemPool) -> Result<()> {
        init()?;
        call!(
            // SAFETY: the pool is alive; the driver checks it serves `device`.
            unsafe { sys::cuDeviceSetMemPool(device.as_raw(), pool.raw) },
        )
    }

    /// Sets the access of other devices (or host locations) to the pool's memory: one entry
    /// per location, read-write, read-only or none. The pool's own device always has access.
    #[wraps(cuMemPoolSetAccess)]
    #[track_caller]
    pub fn set_access(&self, descs: &[MemAccessDesc]) -> Result<()> {
        init()?;
        call!(
            // SAFETY: MemAccessDesc is repr(transparent) over CUmemAccessDesc, so `descs` is
            // an array of `descs.len()` of them; the pool is alive.
            unsafe { sys::cuMemPoolSetAccess(self.raw, descs.as_ptr().cast(), descs.len()) },
        )
    }

    /// The access `location` has to the pool's memory.
    #[wraps(cuMemPoolGetAccess)]
    #[track_caller]
    pub fn access(&self, location: MemLocation) -> Result<MemAccessFlags> {
        init()?;
        let mut loc = location.as_raw();
        let mut flags = 0;
        call!(
            // SAFETY: reads one CUmemLocation, writes one CUmemAccess_flags; pool alive.
            unsafe { sys::cuMemPoolGetAccess(&mut flags, self.raw, &mut loc) },
        )?;
        Ok(MemAccessFlags::from_raw(flags))
    }

    #[track_caller]
    fn get_flag(&self, attr: sys::CUmemPool_attribute) -> Result<bool> {
        let mut v: std::ffi::c_int = 0;
        call!(
            // SAFETY: every attribute read through this helper is an int; writes one.
            unsafe { sys::cuMemPoolGetAttribute(self.raw, attr, (&mut v as *mut i32).cast()) },
        )?;
        Ok(v != 0)
    }

    #[track_caller]
    fn set_value<V>(&self, attr: sys::CUmemPool_attribute, mut v: V) -> Result<()> {
        call!(
            // SAFETY: callers pass the attribute's value type (int for the reuse policies,
            // cuuint64_t for the others); the driver reads one of it.
            unsafe { sys::cuMemPoolSetAttribute(self.raw, attr, (&mut v as *mut V).cast()) },
        )
    }

    /// Whether an allocation may reuse memory freed on another stream when the allocating
    /// stream already depends on the free through events
    /// (`CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES`; default on).
    #[wraps(cuMemPoolGetAttribute)]
    #[doc(alias = "CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES")]
    #[track_caller]
    pub fn reuse_follow_event_dependencies(&self) -> Result<bool> {
        self.get_flag(sys::CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES)
    }

    /// Sets [`reuse_follow_event_dependencies`](Self::reuse_follow_event_dependencies).
    #[wraps(cuMemPoolSetAttribute)]
    #[track_caller]
    pub fn set_reuse_follow_event_dependencies(&self, on: bool) -> Result<()> {
        self.set_value(
            sys::CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES,
            on as std::ffi::c_int,
        )
    }

    /// Whether an allocation may reuse memory whose free has completed, without a dependency
    /// between the free and the allocation (`CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC`;
    /// default on).
    #[wraps(cuMemPoolGetAttribute)]
    #[doc(alias = "CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC")]
    #[track_caller]
    pub fn reuse_allow_opportunistic(&self) -> Result<bool> {
        self.get_flag(sys::CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC)
    }

    /// Sets [`reuse_allow_opportunistic`](Self::reuse_allow_opportunistic).
    #[wraps(cuMemPoolSetAttribute)]
    #[track_caller]
    pub fn set_reuse_allow_opportunistic(&self, on: bool) -> Result<()> {
        self.set_value(
            sys::CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC,
            on as std::ffi::c_int,
        )
    }

    /// Whether an allocation may make its stream wait for a free on another stream to reuse
    /// its memory (`CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES`; default on).
    #[wraps(cuMemPoolGetAttribute)]
    #[doc(alias = "CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES")]
    #[track_caller]
    pub fn reuse_allow_internal_dependencies(&self) -> Result<bool> {
        self.get_flag(sys::CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES)
    }

    /// Sets [`reuse_allow_internal_dependencies`](Self::reuse_allow_internal_dependencies).
    #[wraps(cuMemPoolSetAttribute)]
    #[track_caller]
    pub fn set_reuse_allow_internal_dependencies(&self, on: bool) -> Result<()> {
        self.set_value(
            sys::CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES,
            on as std::ffi::c_int,
        )
    }

    /// Resets [`reserved_mem_high`](Self::reserved_mem_high) to the current reserved size
    /// (the driver accepts only 0, meaning "reset").
    #[wraps(cuMemPoolSetAttribute)]
    #[doc(alias = "CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH")]
    #[track_caller]
    pub fn reset_reserved_mem_high(&self) -> Result<()> {
        self.set_value(sys::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, 0 as sys::cuuint64_t)
    }

    /// Resets [`used_mem_high`](Self::used_mem_high) to the current used size.
    #[wraps(cuMemPoolSetAttribute)]
    #[doc(alias = "CU_MEMPOOL_ATTR_USED_MEM_HIGH")]
    #[track_caller]
    pub fn reset_used_mem_high(&self) -> Result<()> {
        self.set_value(sys::CU_MEMPOOL_ATTR_USED_MEM_HIGH, 0 as sys::cuuint64_t)
    }

    /// Exports the pool as a POSIX file descriptor, owned by the caller, to send to another
    /// process (over a Unix socket with `SCM_RIGHTS`:
    /// [`IpcSocket::send_pool`](crate::memory::IpcSocket::send_pool) exports and sends it),
    /// which imports it with [`import_fd`](Self::import_fd). The pool must have been created with
    /// [`MemAllocationHandleType::POSIX_FILE_DESCRIPTOR`].
    #[cfg(unix)]
    #[wraps(cuMemPoolExportToShareableHandle)]
    #[track_caller]
    pub fn export_fd(&self) -> Result<OwnedFd> {
        init()?;
        let mut fd: std::ffi::c_int = -1;
        call!(
            // SAFETY: for CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR the driver writes one int,
            // a new descriptor that the caller owns.
            unsafe {
                sys::cuMemPoolExportToShareableHandle(
                    (&mut fd as *mut std::ffi::c_int).cast(),
                    self.raw,
                    sys::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                    0,
                )
            },
        )?;
        if fd < 0 {
            return Err(Error::UnexpectedValue {
                call: "cuMemPoolExportToShareableHandle",
                reason: format!("file descriptor {fd}"),
            });
        }
        // SAFETY: the driver returned a new open descriptor that nothing else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// Imports a pool another process exported ([`export_fd`](Self::export_fd)), for
    /// `device` (the device of this process that holds the pool's memory). An imported pool
    /// cannot allocate: it gives access to the exporter's allocations
    /// ([`import_pointer`](Self::import_pointer)). The fd stays the caller's. Destroyed when
    /// dropped.
    #[cfg(unix)]
    #[wraps(cuMemPoolImportFromShareableHandle)]
    #[track_caller]
    pub fn import_fd(device: Device, fd: BorrowedFd<'_>) -> Result<MemPool> {
        init()?;
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: for CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR the driver takes the fd in
            // the pointer argument and does not close it; writes one handle, owned by the
            // MemPool built in the next statement.
            unsafe {
                sys::cuMemPoolImportFromShareableHandle(
                    &mut raw,
                    fd.as_raw_fd() as usize as *mut std::ffi::c_void,
                    sys::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                    0,
                )
            },
        )?;
        Ok(MemPool { raw, device })
    }

    /// Opens an allocation of the exporting process in this imported pool, as a buffer of
    /// `len` elements of `ctx` freed with `cuMemFree` on drop.
    ///
    /// # Safety
    /// `data` was exported ([`AsyncDeviceBuffer::export_pointer`]) from an allocation of at
    /// least `len * size_of::<T>()` bytes of this pool, whose allocation has completed in
    /// the exporting process, and the exporter frees it only after the returned buffer is
    /// dropped here (the driver's rule for imported pool memory; synchronise the processes,
    /// with an interprocess event or a message).
    #[wraps(cuMemPoolImportPointer)]
    #[track_caller]
    pub unsafe fn import_pointer<T: DeviceRepr>(
        &self,
        ctx: &Context,
        data: &PoolPtrExportData,
        len: usize,
    ) -> Result<DeviceBuffer<T>> {
        byte_len::<T>("MemPool::import_pointer", len)?;
        let _cur = ctx.enter()?;
        let mut raw = sys::CUmemPoolPtrExportData { reserved: data.0 };
        let mut ptr = 0;
        call!(
            // SAFETY: reads one CUmemPoolPtrExportData; writes one CUdeviceptr, owned by the
            // buffer built in the next statement (imported pool memory may be freed with
            // cuMemFree).
            unsafe { sys::cuMemPoolImportPointer(&mut ptr, self.raw, &mut raw) },
        )?;
        // SAFETY: the caller guarantees the size and the free order; `ptr` is a fresh import.
        Ok(unsafe { DeviceBuffer::from_raw(ptr, len, ctx) })
    }
}
