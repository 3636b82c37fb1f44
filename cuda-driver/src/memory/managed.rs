//! Managed (unified) memory: [`ManagedBuffer`] (`cuMemAllocManaged`).

use std::marker::PhantomData;
use std::ptr::NonNull;

use cuda_driver_sys as sys;

use super::device::{byte_len, memset_count};
use super::{MemAdvice, MemLocation};
use crate::error::{check, report_drop_error, Error, Result};
use crate::{Context, DeviceRepr, DeviceSliceMut, Stream};

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
/// take `&mut self`) from running meanwhile. On such older devices, also launch nothing else
/// in the context while holding the reference.
///
/// ```no_run
/// use cuda_driver::{AttachFlags, Device, ManagedBuffer};
///
/// let ctx = Device::get(0)?.primary_context()?;
/// let mut buf = ManagedBuffer::<u32>::zeroed(&ctx, 256, AttachFlags::GLOBAL)?;
/// buf.memset_u32(42)?; // on the device
/// assert!(buf.as_slice()?.iter().all(|&x| x == 42)); // synchronises, then reads on the host
/// # Ok::<(), cuda_driver::Error>(())
/// ```
#[doc(alias = "cuMemAllocManaged")]
pub struct ManagedBuffer<T: DeviceRepr> {
    /// Kept first and by value, as in [`DeviceBuffer`](crate::DeviceBuffer). 0 for zero bytes.
    ptr: sys::CUdeviceptr,
    len: usize,
    ctx: Context,
    _marker: PhantomData<T>,
}

// SAFETY: the buffer owns its memory like a Box<[T]>; managed memory is not tied to a host
// thread, and host references are handed out only through &self / &mut self.
unsafe impl<T: DeviceRepr + Send> Send for ManagedBuffer<T> {}
// SAFETY: shared access gives out only &[T] (after synchronising).
unsafe impl<T: DeviceRepr + Sync> Sync for ManagedBuffer<T> {}

impl<T: DeviceRepr> Drop for ManagedBuffer<T> {
    fn drop(&mut self) {
        if self.ptr == 0 {
            return;
        }
        if self.ctx.ensure_current_for_drop() {
            // SAFETY: `ptr` came from cuMemAllocManaged in `ctx`, is owned by self and freed
            // once, here.
            let r = unsafe { sys::cuMemFree_v2(self.ptr) };
            report_drop_error("cuMemFree_v2", r);
        }
    }
}

impl<T: DeviceRepr> std::fmt::Debug for ManagedBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagedBuffer")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("len", &self.len)
            .field("type", &std::any::type_name::<T>())
            .finish()
    }
}

impl<T: DeviceRepr> ManagedBuffer<T> {
    /// Allocates without initialising: only for the constructors, which initialise it.
    #[track_caller]
    fn alloc_uninit(ctx: &Context, len: usize, flags: AttachFlags) -> Result<Self> {
        let bytes = byte_len::<T>("ManagedBuffer", len)?;
        let mut ptr = 0;
        if bytes > 0 {
            ctx.ensure_current()?;
            check(
                // SAFETY: writes one CUdeviceptr; the allocation is owned by the buffer built in
                // the next statement.
                unsafe { sys::cuMemAllocManaged(&mut ptr, bytes, flags.as_raw()) },
                "cuMemAllocManaged",
            )?;
        }
        let buf = ManagedBuffer {
            ptr,
            len,
            ctx: ctx.clone(),
            _marker: PhantomData,
        };
        if buf.ptr as usize % std::mem::align_of::<T>() != 0 {
            // 256-byte aligned in practice; checked because `as_slice` relies on it.
            return Err(Error::InvalidArgument(format!(
                "cuMemAllocManaged returned {:#x}, not aligned for {}",
                buf.ptr,
                std::any::type_name::<T>()
            )));
        }
        Ok(buf)
    }

    /// Allocates `len` managed elements with every byte zero (set on the device with
    /// `cuMemsetD8`), and returns once they are.
    ///
    /// Wraps [`cuMemAllocManaged`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html),
    /// `cuMemsetD8_v2` and `cuStreamSynchronize` of the default stream.
    #[doc(alias = "cuMemAllocManaged")]
    #[track_caller]
    pub fn zeroed(ctx: &Context, len: usize, flags: AttachFlags) -> Result<Self> {
        let mut buf = Self::alloc_uninit(ctx, len, flags)?;
        if buf.bytes() > 0 {
            buf.memset_u8(0)?;
            Stream::null(ctx).synchronize()?;
        }
        Ok(buf)
    }

    /// Allocates managed memory holding a copy of `src`, and returns once the copy is done.
    ///
    /// Wraps `cuMemAllocManaged`, `cuMemcpyHtoD_v2` and `cuStreamSynchronize` of the default
    /// stream.
    #[doc(alias = "cuMemAllocManaged")]
    #[track_caller]
    pub fn from_slice(ctx: &Context, src: &[T], flags: AttachFlags) -> Result<Self> {
        let mut buf = Self::alloc_uninit(ctx, src.len(), flags)?;
        if buf.bytes() > 0 {
            buf.device_view().copy_from_host(src)?;
            Stream::null(ctx).synchronize()?;
        }
        Ok(buf)
    }
}

device_memory_accessors! {
    impl<T> ManagedBuffer<T>, "buffer" {
        /// The managed address, valid on the host and the devices while `self` lives (0 for zero
        /// bytes). For kernels: the host must not read the memory while a kernel may write it.
        fn as_raw;
        /// The context it was allocated in.
        fn context(buf) -> &Context { &buf.ctx }
    }
}

impl<T: DeviceRepr> ManagedBuffer<T> {
    /// The memory as a device view, for this module's blocking operations only: a safe view
    /// would allow asynchronous device writes while the host reads through `as_slice`.
    fn device_view(&mut self) -> DeviceSliceMut<'_, T> {
        DeviceSliceMut {
            ptr: self.ptr,
            len: self.len,
            ctx: &self.ctx,
            _marker: PhantomData,
        }
    }

    /// Waits for all work in the context, then reads the memory on the host.
    ///
    /// Wraps `cuCtxSynchronize`: see the type's documentation for why.
    #[doc(alias = "cuCtxSynchronize")]
    #[track_caller]
    pub fn as_slice(&self) -> Result<&[T]> {
        if self.ptr == 0 {
            // SAFETY: zero bytes (no element or a zero-sized T): a dangling aligned pointer
            // is a valid slice of `len` elements.
            return Ok(unsafe {
                std::slice::from_raw_parts(NonNull::dangling().as_ptr(), self.len)
            });
        }
        self.ctx.synchronize()?;
        // SAFETY: `ptr` is a live managed allocation of `len` initialised, aligned elements
        // (checked at allocation), valid on the host; the context is idle and `&self` keeps
        // this buffer's device operations from starting while the slice lives.
        Ok(unsafe { std::slice::from_raw_parts(self.ptr as usize as *const T, self.len) })
    }

    /// Waits for all work in the context, then reads and writes the memory on the host.
    ///
    /// Wraps `cuCtxSynchronize`: see the type's documentation for why.
    #[doc(alias = "cuCtxSynchronize")]
    #[track_caller]
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        if self.ptr == 0 {
            // SAFETY: as in `as_slice`.
            return Ok(unsafe {
                std::slice::from_raw_parts_mut(NonNull::dangling().as_ptr(), self.len)
            });
        }
        self.ctx.synchronize()?;
        // SAFETY: as in `as_slice`, and `&mut self` makes the access exclusive.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr as usize as *mut T, self.len) })
    }

    /// Copies the contents into a new `Vec`, after synchronising (see [`as_slice`](Self::as_slice)).
    #[track_caller]
    pub fn to_vec(&self) -> Result<Vec<T>> {
        Ok(self.as_slice()?.to_vec())
    }

    /// A blocking memset on the device, after checking the element size.
    #[track_caller]
    fn device_memset(
        &mut self,
        what: &'static str,
        width: usize,
        f: impl FnOnce(&mut DeviceSliceMut<'_, T>) -> Result<()>,
    ) -> Result<()> {
        memset_count::<T>(what, self.len, width)?;
        f(&mut self.device_view())
    }

    /// Sets every byte to `value` on the device. Host access afterwards
    /// ([`as_slice`](Self::as_slice)) waits for it.
    ///
    /// Wraps `cuMemsetD8_v2`.
    #[doc(alias = "cuMemsetD8")]
    #[doc(alias = "cuMemsetD8_v2")]
    #[track_caller]
    pub fn memset_u8(&mut self, value: u8) -> Result<()> {
        self.device_memset("memset_u8", 1, |v| v.memset_u8(value))
    }

    /// Sets every 16-bit word to `value` on the device; the size of `T` must be a multiple
    /// of 2 bytes.
    ///
    /// Wraps `cuMemsetD16_v2`.
    #[doc(alias = "cuMemsetD16")]
    #[doc(alias = "cuMemsetD16_v2")]
    #[track_caller]
    pub fn memset_u16(&mut self, value: u16) -> Result<()> {
        self.device_memset("memset_u16", 2, |v| v.memset_u16(value))
    }

    /// Sets every 32-bit word to `value` on the device; the size of `T` must be a multiple
    /// of 4 bytes.
    ///
    /// Wraps `cuMemsetD32_v2`.
    #[doc(alias = "cuMemsetD32")]
    #[doc(alias = "cuMemsetD32_v2")]
    #[track_caller]
    pub fn memset_u32(&mut self, value: u32) -> Result<()> {
        self.device_memset("memset_u32", 4, |v| v.memset_u32(value))
    }

    /// Queues a migration of the whole buffer to `location` (a device, or the host) on
    /// `stream`: a performance hint, which changes no contents.
    ///
    /// Wraps `cuMemPrefetchAsync_v2` (CUDA 12.2; [`Error::Unsupported`] on older drivers).
    #[doc(alias = "cuMemPrefetchAsync")]
    #[doc(alias = "cuMemPrefetchAsync_v2")]
    #[track_caller]
    pub fn prefetch(&self, location: MemLocation, stream: &Stream) -> Result<()> {
        let f = crate::entry_point::newer::cuMemPrefetchAsync_v2()?;
        if self.ptr == 0 {
            return Ok(());
        }
        stream.context().ensure_current()?;
        check(
            // SAFETY: the buffer is a live managed allocation of `bytes()` bytes; a prefetch moves
            // pages without changing their contents; flags must be 0.
            unsafe {
                f(
                    self.ptr,
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
    /// Wraps `cuMemAdvise_v2` (CUDA 12.2; [`Error::Unsupported`] on older drivers).
    #[doc(alias = "cuMemAdvise")]
    #[doc(alias = "cuMemAdvise_v2")]
    #[track_caller]
    pub fn advise(&self, advice: MemAdvice, location: MemLocation) -> Result<()> {
        let f = crate::entry_point::newer::cuMemAdvise_v2()?;
        if self.ptr == 0 {
            return Ok(());
        }
        self.ctx.ensure_current()?;
        check(
            // SAFETY: the buffer is a live managed allocation of `bytes()` bytes; advice changes
            // no contents.
            unsafe { f(self.ptr, self.bytes(), advice.as_raw(), location.as_raw()) },
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
            empty.memset_u16(1),
            Err(Error::InvalidArgument(_))
        ));
    }
}
