//! Page-locked host memory: [`PinnedBuffer`] (`cuMemHostAlloc`) and registered host memory
//! ([`HostRegistration`], `cuMemHostRegister_v2`).
//!
//! Page-locked ("pinned") memory cannot be paged out, so the GPU reads and writes it by DMA:
//! copies from and to it are faster, and the `*_async` copies are truly asynchronous. With
//! unified addressing (every 64-bit platform) it is also mapped into the device's address
//! space: [`PinnedBuffer::with_device_view_mut`] hands out a device view of it (for memsets,
//! copies and kernel arguments) for the span of a closure, and waits for the context before
//! the host may touch the memory again.

use std::marker::PhantomData;
use std::mem::size_of;
use std::ops::{Deref, DerefMut};
use std::ptr::{self, NonNull};

use cuda_driver_macros::wraps;
use cuda_driver_sys as sys;

use super::view::byte_len;
use crate::error::{check, Error, Result};
use crate::release::SendRaw;
use crate::{Context, DeviceRepr, DeviceSlice, DeviceSliceMut};

pub use crate::types::{HostRegisterFlags, PinnedFlags};

/// The address cuMemHostGetDevicePointer_v2 gives the device for host memory at `host`.
#[track_caller]
fn host_device_ptr(ctx: &Context, host: *mut std::ffi::c_void) -> Result<sys::CUdeviceptr> {
    let _cur = ctx.enter()?;
    let mut dptr = 0;
    check(
        // SAFETY: `host` is page-locked memory of the current context (the callers own or borrow
        // it); writes one CUdeviceptr; flags must be 0.
        unsafe { sys::cuMemHostGetDevicePointer_v2(&mut dptr, host, 0) },
        "cuMemHostGetDevicePointer_v2",
    )?;
    Ok(dptr)
}

/// Runs `f` with a mutable device view of `len` elements of page-locked host memory at
/// `host`, then synchronises the context: whatever `f` queued through the view (on streams
/// of `ctx`, the only ones a view accepts) is done before the host may access the memory.
#[track_caller]
fn with_view_mut<T: DeviceRepr, R>(
    ctx: &Context,
    host: *mut T,
    len: usize,
    f: impl FnOnce(DeviceSliceMut<'_, T>) -> Result<R>,
) -> Result<R> {
    let ptr = if len * size_of::<T>() == 0 {
        0
    } else {
        host_device_ptr(ctx, host.cast())?
    };
    let view = DeviceSliceMut {
        ptr,
        len,
        ctx,
        home: ptr::null_mut(),
        _marker: PhantomData,
    };
    let r = f(view);
    ctx.synchronize()?;
    r
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
/// only inside a closure, after which the context is synchronised, and the `*_async` copies
/// into it are `unsafe`, their callers promising not to touch it until the stream is done.
///
/// ```no_run
/// use cuda_driver::prelude::*;
/// use cuda_driver::{Device, DeviceBuffer, PinnedBuffer, PinnedFlags};
///
/// let ctx = Device::get(0)?.primary_context()?;
/// let mut host = PinnedBuffer::<f32>::zeroed(&ctx, 4, PinnedFlags::empty())?;
/// host[0] = 123.0;
/// // cuMemsetD32 through the device address, done when this returns:
/// host.with_device_view_mut(|mut v| v.memset(555.0f32.to_bits()))?;
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
            return;
        }
        let p = SendRaw(self.ptr.as_ptr());
        // SAFETY: `ptr` came from cuMemHostAlloc, is owned by self and freed once, here; the
        // driver waits for device work still using it.
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
        // self; the device writes it only in blocking memsets or through `unsafe` APIs whose
        // callers keep the host from reading meanwhile.
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
            check(
                // SAFETY: writes one pointer; the allocation is owned by the buffer built
                // next (freed by cuMemFreeHost like cuMemHostAlloc's).
                unsafe { sys::cuMemAllocHost(&mut p, bytes) },
                "cuMemAllocHost_v2",
            )?;
        } else {
            check(
                // SAFETY: writes one pointer; the allocation is owned by the buffer built next.
                unsafe { sys::cuMemHostAlloc(&mut p, bytes, flags.as_raw()) },
                "cuMemHostAlloc",
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
    /// kernel arguments), then waits for all work of the context, so that whatever `f`
    /// queued through the view is done when this returns and the host may read the memory.
    /// The view accepts streams of this buffer's context only. This is the seed's
    /// `cuMemsetD32` on page-locked memory, made safe:
    ///
    /// ```no_run
    /// # use cuda_driver::prelude::*;
    /// # fn f(host: &mut cuda_driver::PinnedBuffer<f32>) -> cuda_driver::Result<()> {
    /// host.with_device_view_mut(|mut v| v.memset(555.0f32.to_bits()))?;
    /// assert!(host.iter().all(|&x| x == 555.0));
    /// # Ok(()) }
    /// ```
    ///
    /// Calls `cuMemHostGetDevicePointer_v2` and, after `f`, `cuCtxSynchronize`.
    #[wraps(cuCtxSynchronize, cuMemHostGetDevicePointer)]
    #[track_caller]
    pub fn with_device_view_mut<R>(
        &mut self,
        f: impl FnOnce(DeviceSliceMut<'_, T>) -> Result<R>,
    ) -> Result<R> {
        with_view_mut(&self.ctx, self.ptr.as_ptr(), self.len, f)
    }

    /// Runs `f` with a shared device view of the memory, then waits for all work of the
    /// context; see [`with_device_view_mut`](Self::with_device_view_mut).
    #[track_caller]
    pub fn with_device_view<R>(
        &self,
        f: impl FnOnce(DeviceSlice<'_, T>) -> Result<R>,
    ) -> Result<R> {
        with_view_mut(&self.ctx, self.ptr.as_ptr(), self.len, |v| f(v.as_view()))
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
/// `*_async` copies are truly asynchronous.
///
/// ```no_run
/// use cuda_driver::{Device, DeviceBuffer, HostRegisterFlags, HostRegistration};
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
/// use cuda_driver::{HostRegisterFlags, HostRegistration};
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
            check(
                // SAFETY: `slice` is valid for `bytes` bytes and mutably borrowed by the guard
                // built in the next statement, which unregisters it before the borrow ends.
                unsafe {
                    sys::cuMemHostRegister_v2(slice.as_mut_ptr().cast(), bytes, flags.as_raw())
                },
                "cuMemHostRegister_v2",
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
            check(
                // SAFETY: the slice was registered by `new` in `ctx`; unregistered once, here.
                unsafe { sys::cuMemHostUnregister(slice.as_mut_ptr().cast()) },
                "cuMemHostUnregister",
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

    /// Runs `f` with a mutable device view of the registered memory, then waits for all
    /// work of the context; see [`PinnedBuffer::with_device_view_mut`].
    #[track_caller]
    pub fn with_device_view_mut<R>(
        &mut self,
        f: impl FnOnce(DeviceSliceMut<'_, T>) -> Result<R>,
    ) -> Result<R> {
        let (p, len) = (self.slice.as_mut_ptr(), self.slice.len());
        with_view_mut(&self.ctx, p, len, f)
    }

    /// The context the memory was registered in.
    #[inline]
    pub fn context(&self) -> &Context {
        &self.ctx
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            Context::from_raw(std::ptr::null_mut(), crate::Device::from_raw(0))
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
