//! Managed (unified) memory: [`ManagedBuffer`] (`cuMemAllocManaged`).

use std::ptr::NonNull;

use cuda_driver_macros::wraps;
use cuda_driver_sys as sys;

use super::view::byte_len;
use super::{MemAdvice, MemLocation};
use crate::error::{check, Error, Result};
use crate::{
    Context, DeviceBuffer, DeviceMemory, DeviceMemoryMut, DeviceRepr, DeviceSlice, DeviceSliceMut,
    Stream,
};

pub use crate::types::AttachFlags;

/// Managed memory holding `len` values of `T` (`cuMemAllocManaged`): one address valid on the
/// host and on the devices, migrated on demand by the driver. Freed with `cuMemFree` on drop
/// in its context, which it keeps alive. Always initialised ([`zeroed`](Self::zeroed),
/// [`from_slice`](Self::from_slice)).
///
/// **Host access synchronises first.** The device may be writing the memory (a kernel, a
/// memset, a prefetch queued earlier) whenever the host is not waiting for it, and on devices
/// without concurrent managed access (`CONCURRENT_MANAGED_ACCESS` = 0) the host may not touch
/// managed memory at all while the device runs. So [`as_slice`](Self::as_slice) and
/// [`as_mut_slice`](Self::as_mut_slice) call `cuCtxSynchronize` before handing out a
/// reference, and the borrow they return keeps this buffer's safe device operations (which
/// take `&mut self`) from running meanwhile. Its views accept streams of its own context only
/// ([`Error::ContextMismatch`] otherwise), so the synchronisation covers all their work. On
/// devices without concurrent managed access, also launch nothing else in the context while
/// holding the reference.
///
/// Its device operations and kernel arguments are those of its views ([`DeviceMemory`],
/// [`DeviceMemoryMut`]).
///
/// ```no_run
/// use cuda_driver::prelude::*;
/// use cuda_driver::{AttachFlags, Device, ManagedBuffer};
///
/// let ctx = Device::get(0)?.primary_context()?;
/// let mut buf = ManagedBuffer::<u32>::zeroed(&ctx, 256, AttachFlags::GLOBAL)?;
/// buf.memset(42u32)?; // on the device
/// assert!(buf.as_slice()?.iter().all(|&x| x == 42)); // synchronises, then reads on the host
/// # Ok::<(), cuda_driver::Error>(())
/// ```
#[wraps(cuMemAllocManaged)]
#[derive(Debug)]
pub struct ManagedBuffer<T: DeviceRepr> {
    /// A device allocation freed with `cuMemFree_v2` in its context, like a `DeviceBuffer`.
    inner: DeviceBuffer<T>,
}

impl<T: DeviceRepr> ManagedBuffer<T> {
    /// Allocates without initialising: only for the constructors, which initialise it.
    #[track_caller]
    fn alloc_uninit(ctx: &Context, len: usize, flags: AttachFlags) -> Result<Self> {
        let bytes = byte_len::<T>("ManagedBuffer", len)?;
        let mut ptr = 0;
        if bytes > 0 {
            let _cur = ctx.enter()?;
            check(
                // SAFETY: writes one CUdeviceptr; the allocation is owned by the buffer built in
                // the next statement.
                unsafe { sys::cuMemAllocManaged(&mut ptr, bytes, flags.as_raw()) },
                "cuMemAllocManaged",
            )?;
        }
        let buf = ManagedBuffer {
            // SAFETY: `ptr` came from cuMemAllocManaged in `ctx` for `bytes` bytes (or is 0
            // for zero bytes), owned by nothing else; cuMemFree_v2 frees it.
            inner: unsafe { DeviceBuffer::from_raw(ptr, len, ctx) },
        };
        if ptr as usize % std::mem::align_of::<T>() != 0 {
            // 256-byte aligned in practice; checked because `as_slice` relies on it.
            return Err(Error::UnexpectedValue {
                call: "cuMemAllocManaged",
                reason: format!("{ptr:#x} is not aligned for {}", std::any::type_name::<T>()),
            });
        }
        Ok(buf)
    }

    /// Allocates `len` managed elements with every byte zero (set on the device with
    /// `cuMemsetD8`), and returns once they are.
    ///
    /// Calls [`cuMemAllocManaged`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html),
    /// `cuMemsetD8_v2` and `cuStreamSynchronize` of the default stream.
    #[wraps(cuMemAllocManaged)]
    #[track_caller]
    pub fn zeroed(ctx: &Context, len: usize, flags: AttachFlags) -> Result<Self> {
        let mut buf = Self::alloc_uninit(ctx, len, flags)?;
        if buf.bytes() > 0 {
            buf.memset(0u8)?;
            Stream::null(ctx).synchronize()?;
        }
        Ok(buf)
    }

    /// Allocates managed memory holding a copy of `src`, and returns once the copy is done.
    ///
    /// Calls `cuMemAllocManaged`, `cuMemcpyHtoD_v2` and `cuStreamSynchronize` of the default
    /// stream.
    #[wraps(cuMemAllocManaged, cuMemcpyHtoD_v2, cuStreamSynchronize)]
    #[track_caller]
    pub fn from_slice(ctx: &Context, src: &[T], flags: AttachFlags) -> Result<Self> {
        let mut buf = Self::alloc_uninit(ctx, src.len(), flags)?;
        if buf.bytes() > 0 {
            buf.copy_from_host(src)?;
            Stream::null(ctx).synchronize()?;
        }
        Ok(buf)
    }
}

// SAFETY: the view covers the managed allocation, borrowed from `self`; not stream-ordered.
unsafe impl<T: DeviceRepr> DeviceMemory for ManagedBuffer<T> {
    type Elem = T;
    #[inline]
    fn as_view(&self) -> DeviceSlice<'_, T> {
        self.inner.as_view()
    }
}

// SAFETY: as above, borrowed exclusively; host references need `&self`/`&mut self` too.
unsafe impl<T: DeviceRepr> DeviceMemoryMut for ManagedBuffer<T> {
    #[inline]
    fn as_view_mut(&mut self) -> DeviceSliceMut<'_, T> {
        self.inner.as_view_mut()
    }
}

impl<T: DeviceRepr> ManagedBuffer<T> {
    /// The managed address, valid on the host and the devices while `self` lives (0 for zero
    /// bytes).
    #[inline]
    pub fn as_raw(&self) -> sys::CUdeviceptr {
        self.inner.as_raw()
    }

    /// The context it was allocated in.
    #[inline]
    pub fn context(&self) -> &Context {
        self.inner.context()
    }

    /// Takes ownership of `len` elements at `ptr`, allocated with `cuMemAllocManaged` in
    /// `ctx`.
    ///
    /// # Safety
    /// `ptr` was returned by `cuMemAllocManaged` in `ctx` for at least `len * size_of::<T>()`
    /// bytes (or is 0 with a zero-byte length), aligned for `T`, its contents are
    /// initialised, and nothing else frees it.
    pub unsafe fn from_raw(ptr: sys::CUdeviceptr, len: usize, ctx: &Context) -> Self {
        ManagedBuffer {
            // SAFETY: the caller's guarantees; cuMemFree_v2 frees managed memory.
            inner: unsafe { DeviceBuffer::from_raw(ptr, len, ctx) },
        }
    }

    /// Gives up ownership; the caller frees the pointer with `cuMemFree`.
    pub fn into_raw(self) -> sys::CUdeviceptr {
        self.inner.into_raw()
    }

    /// Waits for all work in the context, then reads the memory on the host.
    ///
    /// Calls `cuCtxSynchronize`: see the type's documentation for why.
    #[wraps(cuCtxSynchronize)]
    #[track_caller]
    pub fn as_slice(&self) -> Result<&[T]> {
        if self.as_raw() == 0 {
            // SAFETY: zero bytes (no element or a zero-sized T): a dangling aligned pointer
            // is a valid slice of `len` elements.
            return Ok(unsafe {
                std::slice::from_raw_parts(NonNull::dangling().as_ptr(), self.len())
            });
        }
        self.context().synchronize()?;
        // SAFETY: `ptr` is a live managed allocation of `len` initialised, aligned elements
        // (checked at allocation), valid on the host; the context is idle and `&self` keeps
        // this buffer's device operations from starting while the slice lives.
        Ok(unsafe { std::slice::from_raw_parts(self.as_raw() as usize as *const T, self.len()) })
    }

    /// Waits for all work in the context, then reads and writes the memory on the host.
    ///
    /// Calls `cuCtxSynchronize`: see the type's documentation for why.
    #[wraps(cuCtxSynchronize)]
    #[track_caller]
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        if self.as_raw() == 0 {
            // SAFETY: as in `as_slice`.
            return Ok(unsafe {
                std::slice::from_raw_parts_mut(NonNull::dangling().as_ptr(), self.len())
            });
        }
        self.context().synchronize()?;
        // SAFETY: as in `as_slice`, and `&mut self` makes the access exclusive.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.as_raw() as usize as *mut T, self.len()) })
    }

    /// Copies the contents into a new `Vec`, after synchronising (see [`as_slice`](Self::as_slice)).
    #[track_caller]
    pub fn to_vec(&self) -> Result<Vec<T>> {
        Ok(self.as_slice()?.to_vec())
    }

    /// Queues a migration of the whole buffer to `location` (a device, or the host) on
    /// `stream`: a performance hint, which changes no contents.
    ///
    /// Calls `cuMemPrefetchAsync_v2` (CUDA 12.2; [`Error::Unsupported`] on older drivers).
    #[wraps(cuMemPrefetchAsync)]
    #[track_caller]
    pub fn prefetch(&self, location: MemLocation, stream: &Stream) -> Result<()> {
        let f = crate::entry_point::newer::cuMemPrefetchAsync_v2()?;
        if self.as_raw() == 0 {
            return Ok(());
        }
        let _cur = stream.context().enter()?;
        check(
            // SAFETY: the buffer is a live managed allocation of `bytes()` bytes; a prefetch moves
            // pages without changing their contents; flags must be 0.
            unsafe {
                f(
                    self.as_raw(),
                    self.bytes(),
                    location.as_raw(),
                    0,
                    stream.as_raw(),
                )
            },
            "cuMemPrefetchAsync_v2",
        )
    }

    /// Advises the driver how the whole buffer will be used (read mostly, preferred location,
    /// accessed by a device); a hint that changes no contents. `location` is the device or
    /// host the advice names (ignored by the read-mostly advice).
    ///
    /// Calls `cuMemAdvise_v2` (CUDA 12.2; [`Error::Unsupported`] on older drivers).
    #[wraps(cuMemAdvise)]
    #[track_caller]
    pub fn advise(&self, advice: MemAdvice, location: MemLocation) -> Result<()> {
        let f = crate::entry_point::newer::cuMemAdvise_v2()?;
        if self.as_raw() == 0 {
            return Ok(());
        }
        let _cur = self.context().enter()?;
        check(
            // SAFETY: the buffer is a live managed allocation of `bytes()` bytes; advice changes
            // no contents.
            unsafe {
                f(
                    self.as_raw(),
                    self.bytes(),
                    advice.as_raw(),
                    location.as_raw(),
                )
            },
            "cuMemAdvise_v2",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attach_flags_debug() {
        assert_eq!(format!("{:?}", AttachFlags::GLOBAL), "AttachFlags(GLOBAL)");
        assert_eq!(format!("{:?}", AttachFlags::HOST), "AttachFlags(HOST)");
        assert_eq!(AttachFlags::GLOBAL.as_raw(), sys::CU_MEM_ATTACH_GLOBAL);
    }

    #[test]
    fn managed_checks_come_before_any_call() {
        // SAFETY: the fake context is never used by the driver (every call below fails or
        // returns first) and never dropped.
        let ctx = std::mem::ManuallyDrop::new(unsafe {
            Context::from_raw(std::ptr::null_mut(), crate::Device::from_raw(0))
        });
        assert!(matches!(
            ManagedBuffer::<u64>::zeroed(&ctx, usize::MAX / 4, AttachFlags::GLOBAL),
            Err(Error::SizeOverflow { .. })
        ));
        let mut empty = std::mem::ManuallyDrop::new(
            ManagedBuffer::<[u8; 3]>::zeroed(&ctx, 0, AttachFlags::GLOBAL).unwrap(),
        );
        assert!(empty.as_slice().unwrap().is_empty());
        assert!(matches!(
            empty.memset(1u16),
            Err(Error::MemsetWidth {
                width: 2,
                size: 3,
                ..
            })
        ));
    }
}
