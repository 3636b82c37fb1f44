//! Device memory: [`DeviceBuffer`] and its views.

use std::marker::PhantomData;
use std::mem::size_of;

use cuda_driver_sys as sys;

use crate::error::{check, report_drop_error, Error, Result};
use crate::{Context, DeviceRepr};

/// `len * size_of::<T>()`, or an error naming the overflow.
#[inline]
pub(crate) fn byte_len<T>(what: &'static str, len: usize) -> Result<usize> {
    len.checked_mul(size_of::<T>()).ok_or(Error::SizeOverflow {
        what,
        count: len,
        size: size_of::<T>(),
    })
}

/// A typed allocation of device memory (`cuMemAlloc_v2`), freed on drop in its own context.
///
/// The buffer keeps its [`Context`] alive and can be used from any thread: each operation
/// makes the context current first if it is not.
#[doc(alias = "CUdeviceptr")]
pub struct DeviceBuffer<T: DeviceRepr> {
    /// Kept first and by value: a kernel argument is a pointer to this field.
    pub(crate) ptr: sys::CUdeviceptr,
    pub(crate) len: usize,
    pub(crate) ctx: Context,
    pub(crate) _marker: PhantomData<T>,
}

// SAFETY: device memory is not tied to a host thread; DeviceBuffer<T> only hands out T by copy
// (T: DeviceRepr is Copy + 'static, plain data), and the driver's copy functions are
// thread-safe.
unsafe impl<T: DeviceRepr> Send for DeviceBuffer<T> {}
// SAFETY: shared access only reads device memory through the driver.
unsafe impl<T: DeviceRepr> Sync for DeviceBuffer<T> {}

impl<T: DeviceRepr> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        if self.ptr == 0 {
            return;
        }
        if self.ctx.ensure_current_for_drop() {
            // SAFETY: `ptr` was allocated by cuMemAlloc_v2 in `ctx`, is owned by self and freed
            // once, here.
            let r = unsafe { sys::cuMemFree_v2(self.ptr) };
            report_drop_error("cuMemFree_v2", r);
        }
    }
}

impl<T: DeviceRepr> std::fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("len", &self.len)
            .field("type", &std::any::type_name::<T>())
            .finish()
    }
}

impl<T: DeviceRepr> DeviceBuffer<T> {
    /// Allocates room for `len` elements. The contents are unspecified (but every bit pattern
    /// is a valid `T`).
    ///
    /// Wraps [`cuMemAlloc_v2`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html).
    #[doc(alias = "cuMemAlloc")]
    #[doc(alias = "cuMemAlloc_v2")]
    #[track_caller]
    pub fn new(ctx: &Context, len: usize) -> Result<Self> {
        let bytes = byte_len::<T>("DeviceBuffer::new", len)?;
        ctx.ensure_current()?;
        let mut ptr = 0;
        if bytes > 0 {
            // SAFETY: writes one CUdeviceptr; the allocation is owned by the buffer built in
            // the next statement.
            check(
                unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes) },
                "cuMemAlloc_v2",
            )?;
        }
        Ok(DeviceBuffer {
            ptr,
            len,
            ctx: ctx.clone(),
            _marker: PhantomData,
        })
    }

    /// Takes ownership of `len` elements at `ptr`, allocated with `cuMemAlloc` in `ctx`.
    ///
    /// # Safety
    /// `ptr` was returned by `cuMemAlloc*` in `ctx` for at least `len * size_of::<T>()` bytes
    /// and nothing else frees it.
    pub unsafe fn from_raw(ctx: &Context, ptr: sys::CUdeviceptr, len: usize) -> Self {
        DeviceBuffer {
            ptr,
            len,
            ctx: ctx.clone(),
            _marker: PhantomData,
        }
    }

    /// Gives up ownership; the caller frees the pointer with `cuMemFree`.
    pub fn into_raw(self) -> sys::CUdeviceptr {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: `this` is never dropped; the context clone is dropped exactly once here.
        unsafe { std::ptr::read(&this.ctx) };
        this.ptr
    }

    /// The device address, valid while `self` lives.
    #[inline]
    pub fn as_raw(&self) -> sys::CUdeviceptr {
        self.ptr
    }

    /// Number of elements.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer holds no elements.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size in bytes.
    #[inline]
    pub fn bytes(&self) -> usize {
        self.len * size_of::<T>()
    }

    /// The buffer's context.
    #[inline]
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// The whole buffer as a shared view.
    #[inline]
    pub fn as_slice(&self) -> DeviceSlice<'_, T> {
        DeviceSlice {
            ptr: self.ptr,
            len: self.len,
            ctx: &self.ctx,
            _marker: PhantomData,
        }
    }

    /// The whole buffer as a mutable view.
    #[inline]
    pub fn as_mut_slice(&mut self) -> DeviceSliceMut<'_, T> {
        DeviceSliceMut {
            ptr: self.ptr,
            len: self.len,
            ctx: &self.ctx,
            _marker: PhantomData,
        }
    }
}

/// A shared view of part of a [`DeviceBuffer`] (or of other device memory), borrowed from it.
///
/// A view cannot outlive its buffer:
///
/// ```compile_fail
/// # fn f(ctx: &cuda_driver::Context) -> cuda_driver::Result<()> {
/// let view = {
///     let buf = cuda_driver::DeviceBuffer::<f32>::new(ctx, 16)?;
///     buf.as_slice()
/// };
/// # drop(view); Ok(()) }
/// ```
#[derive(Clone, Copy)]
pub struct DeviceSlice<'a, T: DeviceRepr> {
    /// Kept first and by value: a kernel argument is a pointer to this field.
    pub(crate) ptr: sys::CUdeviceptr,
    pub(crate) len: usize,
    pub(crate) ctx: &'a Context,
    pub(crate) _marker: PhantomData<&'a T>,
}

/// A mutable view of part of a [`DeviceBuffer`], borrowed exclusively from it.
pub struct DeviceSliceMut<'a, T: DeviceRepr> {
    /// Kept first and by value: a kernel argument is a pointer to this field.
    pub(crate) ptr: sys::CUdeviceptr,
    pub(crate) len: usize,
    pub(crate) ctx: &'a Context,
    pub(crate) _marker: PhantomData<&'a mut T>,
}

// SAFETY: a view is a borrowed device address; see DeviceBuffer.
unsafe impl<T: DeviceRepr> Send for DeviceSlice<'_, T> {}
// SAFETY: as above.
unsafe impl<T: DeviceRepr> Sync for DeviceSlice<'_, T> {}
// SAFETY: as above; exclusive by construction (borrows the buffer mutably).
unsafe impl<T: DeviceRepr> Send for DeviceSliceMut<'_, T> {}
// SAFETY: as above.
unsafe impl<T: DeviceRepr> Sync for DeviceSliceMut<'_, T> {}

impl<'a, T: DeviceRepr> DeviceSlice<'a, T> {
    /// The device address of the first element.
    #[inline]
    pub fn as_raw(&self) -> sys::CUdeviceptr {
        self.ptr
    }

    /// Number of elements.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the view is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The context of the memory.
    #[inline]
    pub fn context(&self) -> &'a Context {
        self.ctx
    }
}

impl<'a, T: DeviceRepr> DeviceSliceMut<'a, T> {
    /// The device address of the first element.
    #[inline]
    pub fn as_raw(&self) -> sys::CUdeviceptr {
        self.ptr
    }

    /// Number of elements.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the view is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The context of the memory.
    #[inline]
    pub fn context(&self) -> &'a Context {
        self.ctx
    }

    /// A shared view of the same elements.
    #[inline]
    pub fn as_slice(&self) -> DeviceSlice<'_, T> {
        DeviceSlice {
            ptr: self.ptr,
            len: self.len,
            ctx: self.ctx,
            _marker: PhantomData,
        }
    }
}
