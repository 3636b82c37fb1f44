//! Page-locked host memory: [`PinnedBuffer`] (`cuMemHostAlloc`) and registered host memory
//! ([`HostRegistration`], `cuMemHostRegister_v2`).
//!
//! Page-locked ("pinned") memory cannot be paged out, so the GPU reads and writes it by DMA:
//! copies from and to it are faster, and the `*_async` copies are truly asynchronous. With
//! unified addressing (every 64-bit platform) it is also mapped into the device's address
//! space: [`PinnedBuffer::with_device_view_mut`] hands out a device view of it (for memsets,
//! copies and kernel arguments) for the span of a closure, ordered on a stream the caller
//! names, and waits for that stream, and that stream only, before the host may touch the
//! memory again.

use std::any::Any;
use std::mem::size_of;
use std::ops::{Deref, DerefMut};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::ptr::{self, NonNull};

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use super::pool::check_orderable;
use super::view::{byte_len, stream_identity};
use crate::context::Context;
use crate::error::{report_drop_problem, Error, Result};
use crate::handle::Handle;
use crate::memory::view::{DeviceSlice, DeviceSliceMut};
use crate::release::SendRaw;
use crate::repr::DeviceRepr;
use crate::stream::Stream;

use crate::types::{HostRegisterFlags, PinnedFlags};

/// The address cuMemHostGetDevicePointer_v2 gives the device for host memory at `host`.
#[track_caller]
fn host_device_ptr(ctx: &Context, host: *mut std::ffi::c_void) -> Result<sys::CUdeviceptr> {
    let _cur = ctx.enter()?;
    let mut dptr = 0;
    call!(
        // SAFETY: `host` is page-locked memory of the current context (the callers own or borrow
        // it); writes one CUdeviceptr; flags must be 0.
        unsafe { sys::cuMemHostGetDevicePointer_v2(&mut dptr, host, 0) },
    )?;
    Ok(dptr)
}

/// What became of the work queued through a device view of page-locked memory.
enum Waited<R> {
    /// The view's stream has been waited for: nothing queued through the view can still run.
    /// The closure's result, or its panic.
    Done(std::thread::Result<Result<R>>),
    /// Waiting for the stream failed: work queued through the view may still read or write
    /// the memory. The wait's error, and the closure's panic if it panicked.
    Failed(Error, Option<Box<dyn Any + Send>>),
}

/// Runs `f` with a mutable device view of `len` elements of page-locked host memory of `ctx`
/// at `host`, ordered on `stream`, then waits for `stream`.
///
/// The view's stream order is `stream`: every safe operation through it either uses
/// `stream` (the ones with a stream are checked, [`Error::StreamMismatch`] or
/// [`Error::ContextMismatch`] otherwise) or runs on `stream` and waits for it (the ones
/// without). So once `stream` has been waited for, nothing queued through the view can still
/// run, without waiting for the rest of the context. Errors before `f` runs (a stream of
/// another context, the per-thread default stream, no device address) queue nothing. A panic
/// in `f` is caught, the stream waited for, and the panic returned in [`Waited::Done`] or
/// [`Waited::Failed`] for the caller to resume after it has poisoned the memory if need be.
#[track_caller]
fn run_on_view<T: DeviceRepr, R>(
    what: &'static str,
    ctx: &Context,
    stream: &Stream,
    host: *mut T,
    len: usize,
    f: impl FnOnce(DeviceSliceMut<'_, T>) -> Result<R>,
) -> Result<Waited<R>> {
    if stream.context().as_raw() != ctx.as_raw() {
        return Err(Error::ContextMismatch {
            what,
            expected: ctx.as_raw() as usize,
            found: stream.context().as_raw() as usize,
        });
    }
    check_orderable(what, stream)?;
    // The memory exists, so its size does not overflow.
    let bytes = len * size_of::<T>();
    let ptr = if bytes == 0 {
        0
    } else {
        host_device_ptr(ctx, host.cast())?
    };
    // SAFETY: `len` elements of page-locked memory at `host` (its device address `ptr`), which
    // the caller borrows mutably for the call, so no host access or other view exists; the view
    // is ordered on `stream`, which this function synchronises before host access resumes (or
    // poisons the owner when that fails), and the owner is not released meanwhile.
    let view =
        unsafe { DeviceSliceMut::from_parts(ptr, len, ctx, stream_identity(stream.as_raw())) };
    let r = catch_unwind(AssertUnwindSafe(|| f(view)));
    if bytes == 0 {
        // Nothing the device could touch.
        return Ok(Waited::Done(r));
    }
    Ok(match stream.synchronize() {
        Ok(()) => Waited::Done(r),
        Err(e) => Waited::Failed(e, r.err()),
    })
}

/// The closure's result once nothing queued through the view can run; after a failed wait,
/// `poison` (which must make the memory unreachable from the host), then the wait's error.
/// A panic of the closure goes on after that.
fn finish<R>(waited: Waited<R>, poison: impl FnOnce(&Error)) -> Result<R> {
    match waited {
        Waited::Done(Ok(r)) => r,
        Waited::Done(Err(panic)) => resume_unwind(panic),
        Waited::Failed(e, panic) => {
            poison(&e);
            if let Some(panic) = panic {
                resume_unwind(panic);
            }
            Err(e)
        }
    }
}

/// Page-locked host memory holding `len` values of `T` (`cuMemHostAlloc`), freed with
/// `cuMemFreeHost` on drop in its context, which it keeps alive.
///
/// It dereferences to `[T]`: the host reads and writes it like a `Vec`. Its contents are
/// always initialised ([`zeroed`](Self::zeroed), [`from_slice`](Self::from_slice)).
///
/// The device sees it through [`with_device_view_mut`](Self::with_device_view_mut) (and
/// [`device_ptr`](Self::device_ptr)). The host may read it through `Deref` at any time, so
/// nothing in the safe API writes it from the device asynchronously: the device view lives
/// only inside a closure and is ordered on a stream the caller names; the closure's work is
/// waited for on that stream (not the whole context) before the host gets the memory back,
/// and if that wait fails the buffer is emptied and its memory leaked, never handed back to
/// the host nor freed while the device may still use it. The `*_async` copies into it are
/// `unsafe`, their callers promising not to touch it until the stream is done.
///
/// ```no_run
/// use cuda_driver::prelude::*;
/// use cuda_driver::{Device, DeviceBuffer, PinnedBuffer, types::PinnedFlags, Stream};
///
/// let ctx = Device::get(0)?.primary_context()?;
/// let stream = Stream::legacy(&ctx);
/// let mut host = PinnedBuffer::<f32>::zeroed(&ctx, 4, PinnedFlags::empty())?;
/// host[0] = 123.0;
/// // A memset through the device address, done when this returns:
/// host.with_device_view_mut(&stream, |mut v| v.memset(555.0f32.to_bits()))?;
/// assert_eq!(host[0], 555.0);
/// let dev = DeviceBuffer::from_slice(&ctx, &host)?; // a DMA copy from page-locked memory
/// # Ok::<(), cuda_driver::Error>(())
/// ```
#[wraps(cuMemHostAlloc, cuMemAllocHost)]
pub struct PinnedBuffer<T: DeviceRepr> {
    /// From cuMemHostAlloc; dangling (and not allocated) when the buffer has zero bytes.
    ptr: NonNull<T>,
    len: usize,
    flags: PinnedFlags,
    ctx: Context,
}

// SAFETY: the buffer owns its memory like a Box<[T]>; page-locked memory is not tied to a
// host thread, and it is freed once, in Drop, after making its context current.
unsafe impl<T: DeviceRepr + Send> Send for PinnedBuffer<T> {}
// SAFETY: shared access gives out only &[T].
unsafe impl<T: DeviceRepr + Sync> Sync for PinnedBuffer<T> {}

impl<T: DeviceRepr> Drop for PinnedBuffer<T> {
    fn drop(&mut self) {
        if self.len * size_of::<T>() == 0 {
            // Nothing allocated, or leaked by a failed wait (see `poison`).
            return;
        }
        let p = SendRaw(self.ptr.as_ptr());
        // SAFETY: `ptr` came from cuMemHostAlloc, is owned by self and freed once, here. No
        // work queued through safe code can still use it: device views exist only inside
        // `with_device_view_mut`, which returns after waiting for their stream (or poisons the
        // buffer, which then frees nothing), and the callers of the unsafe `*_async` copies
        // keep it valid until their stream is done.
        self.ctx.release("cuMemFreeHost", move || unsafe {
            sys::cuMemFreeHost(p.get().cast())
        });
    }
}

impl<T: DeviceRepr> std::fmt::Debug for PinnedBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedBuffer")
            .field("ptr", &self.ptr)
            .field("len", &self.len)
            .field("flags", &self.flags)
            .field("type", &std::any::type_name::<T>())
            .finish()
    }
}

impl<T: DeviceRepr> Deref for PinnedBuffer<T> {
    type Target = [T];

    #[inline]
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` is aligned (checked in alloc_uninit, or dangling for zero bytes) and
        // valid for `len` initialised elements (every constructor initialises them), owned by
        // self; the device writes it only through a device view, whose work is done when
        // `with_device_view_mut` returns (or the buffer is empty), or through `unsafe` APIs
        // whose callers keep the host from reading meanwhile.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: DeviceRepr> DerefMut for PinnedBuffer<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: DeviceRepr> PinnedBuffer<T> {
    /// Allocates without initialising: only for the constructors, which initialise every
    /// element before handing the buffer out.
    #[track_caller]
    fn alloc_uninit(ctx: &Context, len: usize, flags: PinnedFlags) -> Result<Self> {
        Self::alloc_uninit_with(ctx, len, flags, false)
    }

    /// `alloc_uninit`, through `cuMemAllocHost_v2` (flags 0) when `alloc_host`.
    #[track_caller]
    fn alloc_uninit_with(
        ctx: &Context,
        len: usize,
        flags: PinnedFlags,
        alloc_host: bool,
    ) -> Result<Self> {
        let bytes = byte_len::<T>("PinnedBuffer", len)?;
        if bytes == 0 {
            return Ok(PinnedBuffer {
                ptr: NonNull::dangling(),
                len,
                flags,
                ctx: ctx.clone(),
            });
        }
        let _cur = ctx.enter()?;
        let mut p = ptr::null_mut();
        if alloc_host {
            call!(
                // SAFETY: writes one pointer; the allocation is owned by the buffer built
                // next (freed by cuMemFreeHost like cuMemHostAlloc's).
                unsafe { sys::cuMemAllocHost(&mut p, bytes) },
            )?;
        } else {
            call!(
                // SAFETY: writes one pointer; the allocation is owned by the buffer built next.
                unsafe { sys::cuMemHostAlloc(&mut p, bytes, flags.as_raw()) },
            )?;
        }
        let Some(ptr) = NonNull::new(p.cast::<T>()) else {
            return Err(Error::UnexpectedValue {
                call: "cuMemHostAlloc",
                reason: "a null pointer from a successful allocation".into(),
            });
        };
        let buf = PinnedBuffer {
            ptr,
            len,
            flags,
            ctx: ctx.clone(),
        };
        if !buf.ptr.as_ptr().is_aligned() {
            // Page-aligned in practice; checked because `Deref` relies on it.
            return Err(Error::UnexpectedValue {
                call: "cuMemHostAlloc",
                reason: format!(
                    "{:p} is not aligned for {}",
                    buf.ptr,
                    std::any::type_name::<T>()
                ),
            });
        }
        Ok(buf)
    }

    /// Allocates `len` page-locked elements with every byte zero.
    #[wraps(cuMemHostAlloc)]
    #[track_caller]
    pub fn zeroed(ctx: &Context, len: usize, flags: PinnedFlags) -> Result<Self> {
        let buf = Self::alloc_uninit(ctx, len, flags)?;
        // SAFETY: the allocation holds `len` elements (`len * size_of::<T>()` bytes, checked)
        // and nothing else refers to it yet.
        unsafe { ptr::write_bytes(buf.ptr.as_ptr(), 0, len) };
        Ok(buf)
    }

    /// Allocates page-locked memory holding a copy of `src`.
    #[wraps(cuMemHostAlloc)]
    #[track_caller]
    pub fn from_slice(ctx: &Context, src: &[T], flags: PinnedFlags) -> Result<Self> {
        let buf = Self::alloc_uninit(ctx, src.len(), flags)?;
        // SAFETY: the new allocation holds `src.len()` elements and cannot overlap `src`.
        unsafe { ptr::copy_nonoverlapping(src.as_ptr(), buf.ptr.as_ptr(), src.len()) };
        Ok(buf)
    }

    /// Allocates `len` page-locked elements with every byte zero through the older
    /// `cuMemAllocHost` (the same as [`zeroed`](Self::zeroed) with no flags: portable to
    /// this context only, not mapped explicitly, not write-combined).
    #[wraps(cuMemAllocHost)]
    #[track_caller]
    pub fn zeroed_alloc_host(ctx: &Context, len: usize) -> Result<Self> {
        let buf = Self::alloc_uninit_with(ctx, len, PinnedFlags::empty(), true)?;
        // SAFETY: the allocation holds `len` elements (`len * size_of::<T>()` bytes, checked)
        // and nothing else refers to it yet.
        unsafe { ptr::write_bytes(buf.ptr.as_ptr(), 0, len) };
        Ok(buf)
    }

    /// The host address `cuMemHostAlloc` returned (dangling for zero bytes).
    #[inline]
    pub fn as_raw(&self) -> *mut T {
        self.ptr.as_ptr()
    }

    /// Size in bytes.
    #[inline]
    pub fn bytes(&self) -> usize {
        self.len * size_of::<T>()
    }

    /// The flags it was allocated with.
    #[inline]
    pub fn flags(&self) -> PinnedFlags {
        self.flags
    }

    /// The context it was allocated in.
    #[inline]
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// The address at which the device reaches this memory (mapped page-locked memory):
    /// with unified addressing the host address itself, except for
    /// [`WRITECOMBINED`](PinnedFlags::WRITECOMBINED) memory. An address for kernels; the
    /// host must not read the memory while a kernel may write it.
    #[wraps(cuMemHostGetDevicePointer)]
    #[track_caller]
    pub fn device_ptr(&self) -> Result<sys::CUdeviceptr> {
        host_device_ptr(&self.ctx, self.ptr.as_ptr().cast())
    }

    /// Runs `f` with a mutable device view of the memory (for memsets, device copies and
    /// kernel arguments) ordered on `stream`, then waits for `stream`, so that whatever `f`
    /// queued through the view is done when this returns and the host may use the memory.
    ///
    /// The view's stream order is `stream` (see the
    /// [view module's stream order](crate::DeviceSlice#stream-order)): its operations with a
    /// stream must use `stream` ([`Error::StreamMismatch`] otherwise), and the ones without a
    /// stream run on `stream` and wait for it. So the closing wait is `cuStreamSynchronize`
    /// of `stream` alone: other streams and other threads' work in the context, their stream
    /// captures included, are not waited for nor disturbed. `stream` must belong to the
    /// buffer's context ([`Error::ContextMismatch`]) and not be the per-thread default stream
    /// ([`Error::InvalidStream`]); the legacy default stream ([`Stream::legacy`]) will do
    /// for blocking work.
    ///
    /// If that wait fails (the stream is being captured, or the context has failed), the work
    /// may still be pending: the buffer is then *poisoned*, emptied (its length becomes 0)
    /// and its memory leaked, never handed to the host again nor freed, which is counted in
    /// [`drop_error_count`](crate::error::drop_error_count) and logged; the wait's error is returned.
    /// If `f` panics, the stream is waited for (and the buffer poisoned if that fails) before
    /// the panic goes on. This is the seed's `cuMemsetD32` on page-locked memory, made safe:
    ///
    /// ```no_run
    /// # use cuda_driver::prelude::*;
    /// # fn f(ctx: &cuda_driver::Context, host: &mut cuda_driver::PinnedBuffer<f32>)
    /// #     -> cuda_driver::Result<()> {
    /// let stream = cuda_driver::Stream::legacy(ctx); // the buffer's context
    /// host.with_device_view_mut(&stream, |mut v| v.memset(555.0f32.to_bits()))?;
    /// assert!(host.iter().all(|&x| x == 555.0));
    /// # Ok(()) }
    /// ```
    ///
    /// Calls `cuMemHostGetDevicePointer_v2` and, after `f`, `cuStreamSynchronize`.
    #[wraps(cuMemHostGetDevicePointer, cuStreamSynchronize)]
    #[track_caller]
    pub fn with_device_view_mut<R>(
        &mut self,
        stream: &Stream,
        f: impl FnOnce(DeviceSliceMut<'_, T>) -> Result<R>,
    ) -> Result<R> {
        let waited = run_on_view(
            "PinnedBuffer::with_device_view_mut",
            &self.ctx,
            stream,
            self.ptr.as_ptr(),
            self.len,
            f,
        )?;
        finish(waited, |e| self.poison(e))
    }

    /// Runs `f` with a shared device view of the memory ordered on `stream`, then waits for
    /// `stream`; see [`with_device_view_mut`](Self::with_device_view_mut), whose rules and
    /// poisoning it shares (which is why it takes `&mut self`: a failed wait empties the
    /// buffer).
    #[wraps(cuMemHostGetDevicePointer, cuStreamSynchronize)]
    #[track_caller]
    pub fn with_device_view<R>(
        &mut self,
        stream: &Stream,
        f: impl FnOnce(DeviceSlice<'_, T>) -> Result<R>,
    ) -> Result<R> {
        let waited = run_on_view(
            "PinnedBuffer::with_device_view",
            &self.ctx,
            stream,
            self.ptr.as_ptr(),
            self.len,
            |v| f(v.as_view()),
        )?;
        finish(waited, |e| self.poison(e))
    }

    /// After a failed wait for work queued through a device view: the memory may still be
    /// read or written by the device, so it is leaked (never freed, never reachable from the
    /// host again) and the buffer becomes empty.
    #[cold]
    fn poison(&mut self, e: &Error) {
        report_drop_problem(&format_args!(
            "PinnedBuffer: waiting for the work queued through its device view failed ({e}); \
             its {} bytes at {:p} are leaked and the buffer is now empty",
            self.bytes(),
            self.ptr
        ));
        self.ptr = NonNull::dangling();
        self.len = 0;
    }

    /// Takes ownership of `len` elements at `ptr`, allocated with `cuMemHostAlloc` (or
    /// `cuMemAllocHost`) in `ctx` with `flags`.
    ///
    /// # Safety
    /// `ptr` came from `cuMemHostAlloc` in `ctx` for at least `len * size_of::<T>()` bytes,
    /// aligned for `T`, with initialised contents, and nothing else frees it (for zero bytes:
    /// any aligned non-null pointer, not freed).
    pub unsafe fn from_raw(ptr: NonNull<T>, len: usize, flags: PinnedFlags, ctx: &Context) -> Self {
        PinnedBuffer {
            ptr,
            len,
            flags,
            ctx: ctx.clone(),
        }
    }

    /// Gives up ownership; the caller frees the memory with `cuMemFreeHost`.
    pub fn into_raw(self) -> NonNull<T> {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: `this` is never used or dropped again; the context clone is dropped once.
        unsafe { ptr::read(&this.ctx) };
        this.ptr
    }
}

/// Existing host memory page-locked with `cuMemHostRegister_v2` for as long as this guard
/// lives; dropping it unregisters the memory (`cuMemHostUnregister`).
///
/// The guard borrows the slice mutably, so nothing else touches the memory while it is
/// registered, and dereferences to it. Copies from and to it are DMA transfers, and its
/// `*_async` copies are truly asynchronous. Its device view
/// ([`with_device_view_mut`](Self::with_device_view_mut)) is `unsafe`: a guard cannot keep
/// borrowed memory from its owner after a failed wait, as [`PinnedBuffer`] keeps its own.
///
/// ```no_run
/// use cuda_driver::{Device, DeviceBuffer, types::HostRegisterFlags, memory::HostRegistration};
///
/// let ctx = Device::get(0)?.primary_context()?;
/// let mut data = vec![1.5f32; 1 << 20];
/// let reg = HostRegistration::new(&ctx, &mut data, HostRegisterFlags::empty())?;
/// let dev = DeviceBuffer::from_slice(&ctx, &reg)?;
/// drop(reg); // unregistered; `data` is free again
/// # Ok::<(), cuda_driver::Error>(())
/// ```
///
/// The guard cannot outlive the slice it registered:
///
/// ```compile_fail
/// # fn f(ctx: &cuda_driver::Context) -> cuda_driver::Result<()> {
/// use cuda_driver::{types::HostRegisterFlags, memory::HostRegistration};
/// let reg = {
///     let mut data = vec![0u32; 1024];
///     HostRegistration::new(ctx, &mut data, HostRegisterFlags::empty())?
/// };
/// # drop(reg); Ok(()) }
/// ```
#[wraps(cuMemHostRegister)]
pub struct HostRegistration<'a, T: DeviceRepr> {
    slice: &'a mut [T],
    ctx: Context,
}

impl<T: DeviceRepr> Drop for HostRegistration<'_, T> {
    fn drop(&mut self) {
        if size_of_val(self.slice) == 0 {
            // Nothing registered, or left registered by a failed wait (see `poison`).
            return;
        }
        let p = SendRaw(self.slice.as_mut_ptr());
        // SAFETY: the slice was registered by `new` in this context and is unregistered once,
        // here. Inside a host function the release is deferred, and the slice's borrow ends
        // before it runs; the driver keeps the pages locked until then, which is harmless.
        self.ctx.release("cuMemHostUnregister", move || unsafe {
            sys::cuMemHostUnregister(p.get().cast())
        });
    }
}

impl<T: DeviceRepr> std::fmt::Debug for HostRegistration<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostRegistration")
            .field("ptr", &self.slice.as_ptr())
            .field("len", &self.slice.len())
            .finish()
    }
}

impl<T: DeviceRepr> Deref for HostRegistration<'_, T> {
    type Target = [T];

    #[inline]
    fn deref(&self) -> &[T] {
        self.slice
    }
}

impl<T: DeviceRepr> DerefMut for HostRegistration<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        self.slice
    }
}

impl<'a, T: DeviceRepr> HostRegistration<'a, T> {
    /// Page-locks `slice` in `ctx` (for every context with
    /// [`PORTABLE`](HostRegisterFlags::PORTABLE)) until the guard is dropped. An empty slice
    /// registers nothing.
    #[wraps(cuMemHostRegister)]
    #[track_caller]
    pub fn new(ctx: &Context, slice: &'a mut [T], flags: HostRegisterFlags) -> Result<Self> {
        let bytes = size_of_val(slice);
        if bytes > 0 {
            let _cur = ctx.enter()?;
            call!(
                // SAFETY: `slice` is valid for `bytes` bytes and mutably borrowed by the guard
                // built in the next statement, which unregisters it before the borrow ends.
                unsafe {
                    sys::cuMemHostRegister_v2(slice.as_mut_ptr().cast(), bytes, flags.as_raw())
                },
            )?;
        }
        Ok(HostRegistration {
            slice,
            ctx: ctx.clone(),
        })
    }

    /// Unregisters the memory now and gives the slice back, returning the driver's error
    /// instead of counting it as dropping does.
    #[wraps(cuMemHostUnregister)]
    #[track_caller]
    pub fn unregister(self) -> Result<&'a mut [T]> {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: `this` is never dropped or used again; each field is moved out once.
        let (slice, ctx) = unsafe { (ptr::read(&this.slice), ptr::read(&this.ctx)) };
        if size_of_val(slice) > 0 {
            let _cur = ctx.enter()?;
            call!(
                // SAFETY: the slice was registered by `new` in `ctx`; unregistered once, here.
                unsafe { sys::cuMemHostUnregister(slice.as_mut_ptr().cast()) },
            )?;
        }
        Ok(slice)
    }

    /// The address at which the device reaches the registered memory (registered with
    /// [`DEVICEMAP`](HostRegisterFlags::DEVICEMAP), or with unified addressing).
    #[wraps(cuMemHostGetDevicePointer)]
    #[track_caller]
    pub fn device_ptr(&self) -> Result<sys::CUdeviceptr> {
        host_device_ptr(&self.ctx, self.slice.as_ptr().cast_mut().cast())
    }

    /// Runs `f` with a mutable device view of the registered memory ordered on `stream`, then
    /// waits for `stream`; see [`PinnedBuffer::with_device_view_mut`] for the view's rules.
    ///
    /// If that wait fails, the work queued through the view may still be pending: the
    /// registration is then emptied (its length becomes 0; counted in
    /// [`drop_error_count`](crate::error::drop_error_count) and logged) and the memory stays
    /// registered, never unregistered (so the pending work does not fault), and the wait's
    /// error is returned. That is all a borrowing guard can do: the slice's borrow ends with
    /// the guard whatever the guard does, leaked or not, and the memory is the caller's again.
    /// Hence `unsafe`; [`PinnedBuffer::with_device_view_mut`], which owns its memory and
    /// leaks it instead, is the safe form.
    ///
    /// # Safety
    /// If this returns with the registration emptied (it was not empty before), the caller
    /// must neither read, write nor free the registered memory until it knows that the work
    /// queued through the view has finished (for example after a later successful
    /// [`Stream::synchronize`] of `stream`).
    #[wraps(cuMemHostGetDevicePointer, cuStreamSynchronize)]
    #[track_caller]
    pub unsafe fn with_device_view_mut<R>(
        &mut self,
        stream: &Stream,
        f: impl FnOnce(DeviceSliceMut<'_, T>) -> Result<R>,
    ) -> Result<R> {
        let (p, len) = (self.slice.as_mut_ptr(), self.slice.len());
        let waited = run_on_view(
            "HostRegistration::with_device_view_mut",
            &self.ctx,
            stream,
            p,
            len,
            f,
        )?;
        finish(waited, |e| self.poison(e))
    }

    /// After a failed wait for work queued through a device view: the guard lets go of the
    /// memory without unregistering it (the device may still use it) and becomes empty.
    #[cold]
    fn poison(&mut self, e: &Error) {
        report_drop_problem(&format_args!(
            "HostRegistration: waiting for the work queued through its device view failed \
             ({e}); its {} bytes at {:p} stay registered and the guard is now empty",
            size_of_val(self.slice),
            self.slice.as_ptr()
        ));
        self.slice = <&mut [T]>::default();
    }

    /// The context the memory was registered in.
    #[inline]
    pub fn context(&self) -> &Context {
        &self.ctx
    }
}

impl<T: DeviceRepr> PinnedBuffer<T> {
    /// The flags the driver reports for this allocation (`CU_MEMHOSTALLOC_*`): those it was
    /// allocated with, and possibly more. Driver 580 reported `PORTABLE | DEVICEMAP` for a
    /// 64-byte allocation made without flags while other threads allocated page-locked memory
    /// with those flags (small allocations seem to share the driver's blocks); the
    /// allocation's own flags are [`flags`](Self::flags).
    #[wraps(cuMemHostGetFlags)]
    #[track_caller]
    pub fn host_flags(&self) -> Result<u32> {
        let _cur = self.context().enter()?;
        let mut f = 0;
        call!(
            // SAFETY: the buffer is a live page-locked allocation; writes one unsigned int.
            unsafe { sys::cuMemHostGetFlags(&mut f, self.as_raw().cast()) },
        )?;
        Ok(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handle::OwnedHandle;

    #[test]
    fn flags_debug_names_the_bits() {
        assert_eq!(
            format!("{:?}", PinnedFlags::PORTABLE | PinnedFlags::DEVICEMAP),
            "PinnedFlags(PORTABLE | DEVICEMAP)"
        );
        assert_eq!(
            format!("{:?}", PinnedFlags::WRITECOMBINED),
            "PinnedFlags(WRITECOMBINED)"
        );
        assert_eq!(format!("{:?}", PinnedFlags::empty()), "PinnedFlags(0x0)");
        assert_eq!(
            format!(
                "{:?}",
                HostRegisterFlags::READ_ONLY | HostRegisterFlags::from_raw(0x40)
            ),
            "HostRegisterFlags(READ_ONLY | 0x40)"
        );
        assert_eq!(
            (PinnedFlags::PORTABLE | PinnedFlags::WRITECOMBINED).as_raw(),
            sys::CU_MEMHOSTALLOC_PORTABLE | sys::CU_MEMHOSTALLOC_WRITECOMBINED
        );
        assert!((PinnedFlags::PORTABLE | PinnedFlags::DEVICEMAP).contains(PinnedFlags::DEVICEMAP));
    }

    #[test]
    fn pinned_size_overflow_is_an_error_before_any_call() {
        // SAFETY: the fake context is never used by the driver (the call fails first) and
        // never dropped.
        let ctx = std::mem::ManuallyDrop::new(unsafe {
            Context::from_raw(std::ptr::null_mut(), crate::device::Device::from_raw(0))
        });
        assert!(matches!(
            PinnedBuffer::<u32>::zeroed(&ctx, usize::MAX / 2, PinnedFlags::empty()),
            Err(Error::SizeOverflow { .. })
        ));
        // Zero bytes allocate nothing and need no driver.
        let empty = PinnedBuffer::<u32>::zeroed(&ctx, 0, PinnedFlags::empty()).unwrap();
        assert!(empty.is_empty());
        std::mem::forget(empty);
        let mut nothing: [u32; 0] = [];
        let reg = HostRegistration::new(&ctx, &mut nothing, HostRegisterFlags::empty()).unwrap();
        assert!(reg.is_empty());
        std::mem::forget(reg);
    }
}
