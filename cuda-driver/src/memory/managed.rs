//! Managed (unified) memory: [`ManagedBuffer`] (`cuMemAllocManaged`).

use std::marker::PhantomData;
use std::ptr::NonNull;

use cuda_driver_macros::{call, uses, wraps};
use cuda_driver_sys as sys;

use super::pool::{check_orderable, order_after, MoveToStreamError};
use super::view::{byte_len, stream_identity};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::handle::Handle;
use crate::memory::device::DeviceBuffer;
use crate::memory::owner::{device_memory, DeviceMemory, DeviceMemoryMut};
use crate::memory::view::DeviceSliceMut;
use crate::repr::DeviceRepr;
use crate::stream::Stream;
use crate::types::DeviceAttribute;

use crate::types::AttachFlags;

/// Managed memory holding `len` values of `T` (`cuMemAllocManaged`): one address valid on the
/// host and on the devices, migrated on demand by the driver. Freed with `cuMemFree` on drop
/// in its context, which it keeps alive. Always initialised ([`zeroed`](Self::zeroed),
/// [`from_slice`](Self::from_slice)).
///
/// # Its stream
///
/// The buffer is ordered on a stream it borrows, as [`AsyncDeviceBuffer`] is: its views
/// carry that stream, so every safe device operation on the memory is queued there. The
/// operations with a stream (`memset_async`, `copy_*_async`, [`Stream::attach_mem`], the
/// batched prefetch and discard, checked kernel launches) must use it
/// ([`Error::StreamMismatch`] otherwise; [`Error::ContextMismatch`] for another context's
/// streams), and the ones without a stream run on it and wait for it. Move the buffer to
/// another stream of its context with [`move_to_stream`](Self::move_to_stream).
///
/// **Host access waits for that stream, and nothing else.** The device may be writing the
/// memory (a kernel, a memset, a prefetch queued earlier) whenever the host is not waiting
/// for it, so [`as_slice`](Self::as_slice), [`as_mut_slice`](Self::as_mut_slice) and
/// [`to_vec`](Self::to_vec) call `cuStreamSynchronize` of the buffer's stream before handing
/// out a reference: other streams, other threads' work in the context and their stream
/// captures are neither waited for nor disturbed. If that wait fails, they return the error
/// and no reference. The borrow they return keeps this buffer's safe device operations (which
/// take `&mut self`) from starting meanwhile.
///
/// On devices without concurrent managed access (`CONCURRENT_MANAGED_ACCESS` = 0: older
/// GPUs, Windows) the host may touch managed memory while the device runs only if the memory
/// is attached to one stream that is idle (`cuStreamAttachMemAsync` with
/// `CU_MEM_ATTACH_SINGLE`: "the Unified Memory system will allow CPU access to this memory
/// region so long as all operations in hStream have completed, regardless of whether other
/// streams are active"). There the buffer attaches its memory to its stream when allocated,
/// again before each host access and when moved, and its stream must be a created stream
/// (the driver cannot attach to the null stream): [`Error::InvalidStream`] otherwise.
/// Everywhere the per-thread default stream is [`Error::InvalidStream`] (it names another
/// stream on every thread).
///
/// Its device operations and kernel arguments are those of its views ([`DeviceMemory`],
/// [`DeviceMemoryMut`]).
///
/// ```no_run
/// use cuda_driver::prelude::*;
/// use cuda_driver::{types::AttachFlags, Device, memory::ManagedBuffer, Stream, types::StreamFlags};
///
/// let ctx = Device::get(0)?.primary_context()?;
/// let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;
/// let mut buf = ManagedBuffer::<u32>::zeroed(&stream, 256, AttachFlags::GLOBAL)?;
/// buf.memset_async(42u32, &stream)?; // on the device, on the buffer's stream
/// assert!(buf.as_slice()?.iter().all(|&x| x == 42)); // waits for `stream`, then reads
/// # Ok::<(), cuda_driver::Error>(())
/// ```
///
/// [`AsyncDeviceBuffer`]: crate::memory::pool::AsyncDeviceBuffer
#[wraps(cuMemAllocManaged)]
pub struct ManagedBuffer<'s, T: DeviceRepr> {
    /// A device allocation freed with `cuMemFree_v2` in its context (the stream's), like a
    /// `DeviceBuffer`.
    inner: DeviceBuffer<T>,
    /// The stream the memory's device work is queued on, and host access waits for.
    stream: &'s Stream,
    /// The device has no concurrent managed access: the memory is attached to `stream` alone.
    single: bool,
    /// The host reads and writes `T`s through `as_slice`/`as_mut_slice`: `Send`/`Sync` only
    /// where `T` is.
    _host: PhantomData<T>,
}

impl<T: DeviceRepr> std::fmt::Debug for ManagedBuffer<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagedBuffer")
            .field("ptr", &format_args!("{:#x}", self.inner.ptr))
            .field("len", &self.inner.len)
            .field("stream", &self.stream.as_raw())
            .field("type", &std::any::type_name::<T>())
            .finish()
    }
}

/// Whether `stream` is the null or legacy default stream of its context.
fn is_null_stream(stream: &Stream) -> bool {
    stream_identity(stream.as_raw()) == sys::CU_STREAM_LEGACY
}

/// Whether managed memory used on `stream` must be attached to that stream alone for the
/// host to use it while other streams run: its device has no concurrent managed access.
/// Such memory cannot be attached to the null stream: [`Error::InvalidStream`] for it.
#[track_caller]
fn needs_single_attach(what: &'static str, stream: &Stream) -> Result<bool> {
    let concurrent = stream
        .context()
        .device()
        .attribute(DeviceAttribute::CONCURRENT_MANAGED_ACCESS)?;
    if concurrent != 0 {
        return Ok(false);
    }
    check_attachable(what, stream)?;
    Ok(true)
}

/// Refuses the null stream as the one stream managed memory is attached to.
#[track_caller]
fn check_attachable(what: &'static str, stream: &Stream) -> Result<()> {
    if is_null_stream(stream) {
        return Err(Error::InvalidStream {
            what,
            reason: "without concurrent managed access the host may use managed memory only \
                     while the one stream it is attached to is idle, and memory cannot be \
                     attached to the null stream; use a created stream",
        });
    }
    Ok(())
}

impl<'s, T: DeviceRepr> ManagedBuffer<'s, T> {
    /// The stream the buffer is attached to and ordered on.
    pub(crate) fn home_stream(&self) -> &'s Stream {
        self.stream
    }

    /// Allocates without initialising: only for the constructors, which initialise it.
    #[track_caller]
    fn alloc_uninit(stream: &'s Stream, len: usize, flags: AttachFlags) -> Result<Self> {
        const WHAT: &str = "ManagedBuffer";
        let bytes = byte_len::<T>(WHAT, len)?;
        check_orderable(WHAT, stream)?;
        let ctx = stream.context();
        let mut ptr = 0;
        let mut single = false;
        if bytes > 0 {
            single = needs_single_attach(WHAT, stream)?;
            let _cur = ctx.enter()?;
            call!(
                // SAFETY: writes one CUdeviceptr; the allocation is owned by the buffer built in
                // the next statement.
                unsafe { sys::cuMemAllocManaged(&mut ptr, bytes, flags.as_raw()) },
            )?;
        }
        let buf = ManagedBuffer {
            // SAFETY: `ptr` came from cuMemAllocManaged in `ctx` for `bytes` bytes (or is 0
            // for zero bytes), owned by nothing else; cuMemFree_v2 frees it.
            inner: unsafe { DeviceBuffer::from_raw(ptr, len, ctx) },
            stream,
            single,
            _host: PhantomData,
        };
        if ptr as usize % std::mem::align_of::<T>() != 0 {
            // 256-byte aligned in practice; checked because `as_slice` relies on it.
            return Err(Error::UnexpectedValue {
                call: "cuMemAllocManaged",
                reason: format!("{ptr:#x} is not aligned for {}", std::any::type_name::<T>()),
            });
        }
        buf.attach_single(stream)?;
        Ok(buf)
    }

    /// Allocates `len` managed elements with every byte zero, set on the device on `stream`
    /// (which the buffer is ordered on from then on), and returns once they are.
    ///
    /// Calls [`cuMemAllocManaged`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html),
    /// `cuMemsetD8Async` and `cuStreamSynchronize` of `stream` (and, on devices without
    /// concurrent managed access, `cuStreamAttachMemAsync`).
    #[wraps(cuMemAllocManaged, cuMemsetD8Async, cuStreamSynchronize)]
    #[track_caller]
    pub fn zeroed(stream: &'s Stream, len: usize, flags: AttachFlags) -> Result<Self> {
        let mut buf = Self::alloc_uninit(stream, len, flags)?;
        // On the buffer's stream, which is then synchronised.
        buf.memset(0u8)?;
        Ok(buf)
    }

    /// Allocates managed memory holding a copy of `src`, ordered on `stream`, and returns
    /// once the copy is done.
    ///
    /// Calls `cuMemAllocManaged`, `cuMemcpyHtoDAsync_v2` and `cuStreamSynchronize` of
    /// `stream` (and, on devices without concurrent managed access, `cuStreamAttachMemAsync`).
    #[wraps(cuMemAllocManaged, cuMemcpyHtoDAsync_v2, cuStreamSynchronize)]
    #[track_caller]
    pub fn from_slice(stream: &'s Stream, src: &[T], flags: AttachFlags) -> Result<Self> {
        let mut buf = Self::alloc_uninit(stream, src.len(), flags)?;
        // On the buffer's stream, which is then synchronised.
        buf.copy_from_host(src)?;
        Ok(buf)
    }

    /// On devices without concurrent managed access, queues attaching the memory to `stream`
    /// alone (`CU_MEM_ATTACH_SINGLE`), so that the host may use it whenever that stream is
    /// idle. Nothing elsewhere.
    #[track_caller]
    fn attach_single(&self, stream: &Stream) -> Result<()> {
        if !self.single || self.as_raw() == 0 {
            return Ok(());
        }
        let _cur = stream.context().enter()?;
        call!(
            // SAFETY: the buffer is a live managed allocation; length 0 names all of it;
            // attaching changes which streams may use it, not its contents.
            unsafe {
                sys::cuStreamAttachMemAsync(
                    stream.as_raw(),
                    self.as_raw(),
                    0,
                    sys::CU_MEM_ATTACH_SINGLE,
                )
            },
        )
    }

    /// Waits until no device work queued through this buffer can run: its stream (after
    /// attaching the memory to it again where the device needs that for host access).
    #[track_caller]
    fn wait_for_host_access(&self) -> Result<()> {
        self.attach_single(self.stream)?;
        self.stream.synchronize()
    }

    #[inline]
    fn home(&self) -> sys::CUstream {
        stream_identity(self.stream.as_raw())
    }
}

// SAFETY: the view covers the managed allocation, borrowed from `self`, in the stream's
// context (the allocation's), ordered on the buffer's stream. Mutable views borrow `self`
// exclusively; host references need `&self`/`&mut self` too.
device_memory!(
    impl[T: DeviceRepr] ManagedBuffer<'_, T>, mut impl[T: DeviceRepr] ManagedBuffer<'_, T>;
    |this| (this.inner.ptr, this.inner.len, this.stream.context(), this.home())
);

impl<'s, T: DeviceRepr> ManagedBuffer<'s, T> {
    /// The managed address, valid on the host and the devices while `self` lives (0 for zero
    /// bytes).
    #[inline]
    pub fn as_raw(&self) -> sys::CUdeviceptr {
        self.inner.as_raw()
    }

    /// The context it was allocated in (its stream's).
    #[inline]
    pub fn context(&self) -> &Context {
        self.inner.context()
    }

    /// The stream the buffer is ordered on: its device work is queued there, and host access
    /// waits for it.
    #[inline]
    pub fn stream(&self) -> &'s Stream {
        self.stream
    }

    /// Takes ownership of `len` elements at `ptr`, allocated with `cuMemAllocManaged` in
    /// the context of `stream`, ordered on `stream` from now on.
    ///
    /// # Safety
    /// `ptr` was returned by `cuMemAllocManaged` in `stream`'s context for at least
    /// `len * size_of::<T>()` bytes (or is 0 with a zero-byte length), aligned for `T`, its
    /// contents are initialised, nothing else frees it, no work on another stream may still
    /// use it, `stream` is not the per-thread default stream, and, on a device without
    /// concurrent managed access, it is attached to `stream` alone
    /// (`CU_MEM_ATTACH_SINGLE`), which must then be a created stream.
    pub unsafe fn from_raw(ptr: sys::CUdeviceptr, len: usize, stream: &'s Stream) -> Self {
        // Where the device cannot be asked, attach as if it had to be (harmless elsewhere).
        let single = ptr != 0
            && stream
                .context()
                .device()
                .attribute(DeviceAttribute::CONCURRENT_MANAGED_ACCESS)
                .map_or(true, |v| v == 0);
        ManagedBuffer {
            // SAFETY: the caller's guarantees; cuMemFree_v2 frees managed memory.
            inner: unsafe { DeviceBuffer::from_raw(ptr, len, stream.context()) },
            stream,
            single,
            _host: PhantomData,
        }
    }

    /// Gives up ownership; the caller frees the pointer with `cuMemFree`.
    pub fn into_raw(self) -> sys::CUdeviceptr {
        self.inner.into_raw()
    }

    /// Moves the buffer to `stream`, another stream of its context: `stream` waits for an
    /// event recorded on the buffer's stream, so work queued on `stream` from now on runs
    /// after everything queued on the old stream so far, and host access waits for `stream`
    /// from now on. On devices without concurrent managed access the memory is then attached
    /// to `stream` alone (queued on `stream`, after the wait). Moving to the stream it is on
    /// queues nothing (but the attachment).
    ///
    /// A stream of another context (its null stream included) is [`Error::ContextMismatch`],
    /// the per-thread default stream [`Error::InvalidStream`]; on any failure the error gives
    /// the buffer back ([`MoveToStreamError::buffer`]), still on its old stream.
    #[uses(cuEventRecord, cuStreamWaitEvent, cuStreamAttachMemAsync)]
    #[track_caller]
    pub fn move_to_stream<'t>(
        self,
        stream: &'t Stream,
    ) -> std::result::Result<ManagedBuffer<'t, T>, MoveToStreamError<Self>> {
        const WHAT: &str = "ManagedBuffer::move_to_stream";
        let checked = check_orderable(WHAT, stream)
            .and_then(|()| {
                if self.single {
                    check_attachable(WHAT, stream)
                } else {
                    Ok(())
                }
            })
            .and_then(|()| order_after(WHAT, self.stream, stream))
            // After the wait, so the attachment changes once the old stream's work is done.
            .and_then(|()| self.attach_single(stream));
        if let Err(error) = checked {
            // Its work is still all on the old stream (a wait queued on `stream` harms
            // nothing), and the memory still attached to it.
            return Err(MoveToStreamError {
                error,
                buffer: self,
            });
        }
        let ManagedBuffer { inner, single, .. } = self;
        Ok(ManagedBuffer {
            inner,
            stream,
            single,
            _host: PhantomData,
        })
    }

    /// Waits for the buffer's stream, then reads the memory on the host.
    ///
    /// Calls `cuStreamSynchronize` of the buffer's stream (see the type's documentation);
    /// when that fails, its error and no slice.
    #[uses(cuStreamSynchronize)]
    #[track_caller]
    pub fn as_slice(&self) -> Result<&[T]> {
        if self.as_raw() == 0 {
            // SAFETY: zero bytes (no element or a zero-sized T): a dangling aligned pointer
            // is a valid slice of `len` elements.
            return Ok(unsafe {
                std::slice::from_raw_parts(NonNull::dangling().as_ptr(), self.len())
            });
        }
        self.wait_for_host_access()?;
        // SAFETY: `ptr` is a live managed allocation of `len` initialised, aligned elements
        // (checked at allocation), valid on the host. Every safe device operation on it was
        // queued on the buffer's stream (its views carry that stream), which is idle now, and
        // `&self` keeps this buffer's writing device operations (`&mut self`) from starting
        // while the slice lives. Without concurrent managed access the memory is attached to
        // that idle stream alone, which the cuStreamAttachMemAsync reference documents as
        // enough for host access (no GPU test: the suite's GPUs all have concurrent access).
        Ok(unsafe { std::slice::from_raw_parts(self.as_raw() as usize as *const T, self.len()) })
    }

    /// Waits for the buffer's stream, then reads and writes the memory on the host.
    ///
    /// Calls `cuStreamSynchronize` of the buffer's stream (see the type's documentation);
    /// when that fails, its error and no slice.
    #[uses(cuStreamSynchronize)]
    #[track_caller]
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        if self.as_raw() == 0 {
            // SAFETY: as in `as_slice`.
            return Ok(unsafe {
                std::slice::from_raw_parts_mut(NonNull::dangling().as_ptr(), self.len())
            });
        }
        self.wait_for_host_access()?;
        // SAFETY: as in `as_slice`, and `&mut self` makes the access exclusive.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.as_raw() as usize as *mut T, self.len()) })
    }

    /// Copies the contents into a new `Vec`, after waiting for the buffer's stream (see
    /// [`as_slice`](Self::as_slice)).
    #[uses(cuStreamSynchronize)]
    #[track_caller]
    pub fn to_vec(&self) -> Result<Vec<T>> {
        Ok(self.as_slice()?.to_vec())
    }
}

impl crate::stream::Stream {
    /// Attaches managed memory to this stream (`SINGLE`), to every stream (`GLOBAL`) or to
    /// the host (`HOST`): with `SINGLE`, the host may touch it once this stream is idle,
    /// even while other streams run. `view` must be managed memory (the driver refuses
    /// other memory with `CUDA_ERROR_INVALID_VALUE`).
    ///
    /// The view is taken exclusively: no host reference of its memory is alive meanwhile. A
    /// [`ManagedBuffer`]'s host access waits for its stream only, which
    /// on a device without concurrent managed access is sound only while the memory stays
    /// attached to that stream: for views ordered on a stream, any attachment but `SINGLE`
    /// is [`Error::InvalidArgument`], before the driver.
    #[wraps(cuStreamAttachMemAsync)]
    #[track_caller]
    pub fn attach_mem<T: DeviceRepr>(
        &self,
        view: &mut DeviceSliceMut<'_, T>,
        flags: AttachFlags,
    ) -> Result<()> {
        crate::memory::view::check_stream("Stream::attach_mem", view.context(), view.home(), self)?;
        if !view.home().is_null() && flags != AttachFlags::SINGLE {
            return Err(crate::error::Error::InvalidArgument(format!(
                "Stream::attach_mem: memory ordered on a stream (a ManagedBuffer) stays attached \
                 to it (SINGLE), since its host access waits for that stream only; got {flags:?}"
            )));
        }
        let _cur = self.context().enter()?;
        call!(
            // SAFETY: the view borrows live memory of `bytes()` bytes; attaching changes
            // visibility, not contents.
            unsafe {
                sys::cuStreamAttachMemAsync(
                    self.as_raw(),
                    view.as_raw(),
                    view.bytes(),
                    flags.as_raw(),
                )
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::layout::LayoutError;
    use crate::handle::OwnedHandle;

    #[test]
    fn attach_flags_debug() {
        assert_eq!(format!("{:?}", AttachFlags::GLOBAL), "AttachFlags(GLOBAL)");
        assert_eq!(format!("{:?}", AttachFlags::HOST), "AttachFlags(HOST)");
        assert_eq!(AttachFlags::GLOBAL.as_raw(), sys::CU_MEM_ATTACH_GLOBAL);
    }

    #[test]
    fn managed_checks_come_before_any_call() {
        // SAFETY: the fake context and streams are never used by the driver (every call below
        // fails or returns first) and never dropped.
        let ctx = std::mem::ManuallyDrop::new(unsafe {
            Context::from_raw(std::ptr::null_mut(), crate::device::Device::from_raw(0))
        });
        // SAFETY: as above.
        let stream = unsafe { crate::stream::StreamRef::borrow_raw(0x40 as sys::CUstream, &ctx) };
        assert!(matches!(
            ManagedBuffer::<u64>::zeroed(&stream, usize::MAX / 4, AttachFlags::GLOBAL),
            Err(Error::SizeOverflow { .. })
        ));
        // The per-thread default stream cannot order memory.
        // SAFETY: as above.
        let per_thread =
            unsafe { crate::stream::StreamRef::borrow_raw(sys::CU_STREAM_PER_THREAD, &ctx) };
        assert!(matches!(
            ManagedBuffer::<u64>::zeroed(&per_thread, 0, AttachFlags::GLOBAL),
            Err(Error::InvalidStream { .. })
        ));
        let mut empty = std::mem::ManuallyDrop::new(
            ManagedBuffer::<[u8; 3]>::zeroed(&stream, 0, AttachFlags::GLOBAL).unwrap(),
        );
        assert!(empty.as_slice().unwrap().is_empty());
        assert_eq!(empty.as_view().stream_order(), Some(0x40 as sys::CUstream));
        assert!(matches!(
            empty.memset(1u16),
            Err(Error::Layout(LayoutError::MemsetWidth {
                width: 2,
                size: 3,
                ..
            }))
        ));
        // Its views are ordered on its stream: another stream is refused before any call.
        // SAFETY: as above.
        let other = unsafe { crate::stream::StreamRef::borrow_raw(0x80 as sys::CUstream, &ctx) };
        assert!(matches!(
            empty.memset_async(0u8, &other),
            Err(Error::StreamMismatch { .. })
        ));
    }
}
