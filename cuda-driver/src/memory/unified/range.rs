//! Operations on address ranges given as views: managed-memory prefetch and advice on part of
//! an allocation, range attributes, the allocation an address lies in, every pointer
//! attribute in one call, the settable pointer attribute, and dma-buf handles.

use std::ffi::c_void;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use crate::entry_point::newer;
use crate::error::Result;
use crate::handle::Handle;
use crate::memory::{DeviceSlice, MemAdvice, MemLocation};
use crate::repr::DeviceRepr;
use crate::stream::Stream;

use crate::types::MemRangeAttribute;

/// Every plain-data pointer attribute of an address, read in one `cuPointerGetAttributes`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PointerAttributes {
    /// `CU_POINTER_ATTRIBUTE_CONTEXT` (raw, not owned).
    pub context: usize,
    /// `CU_POINTER_ATTRIBUTE_MEMORY_TYPE`.
    pub memory_type: u32,
    /// `CU_POINTER_ATTRIBUTE_DEVICE_POINTER`.
    pub device_pointer: u64,
    /// `CU_POINTER_ATTRIBUTE_HOST_POINTER`.
    pub host_pointer: usize,
    /// `CU_POINTER_ATTRIBUTE_SYNC_MEMOPS`.
    pub sync_memops: bool,
    /// `CU_POINTER_ATTRIBUTE_BUFFER_ID`.
    pub buffer_id: u64,
    /// `CU_POINTER_ATTRIBUTE_IS_MANAGED`.
    pub is_managed: bool,
    /// `CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL`.
    pub device_ordinal: i32,
    /// `CU_POINTER_ATTRIBUTE_RANGE_START_ADDR`.
    pub range_start: u64,
    /// `CU_POINTER_ATTRIBUTE_RANGE_SIZE`.
    pub range_size: usize,
    /// `CU_POINTER_ATTRIBUTE_MAPPED`.
    pub mapped: bool,
}

/// Reads every attribute of [`PointerAttributes`] for `ptr` in one call. Memory CUDA does not
/// know gets zeros for most attributes, as the driver documents (not an error). The device
/// and host pointers are those of the current context: the caller's, else device 0's
/// primary context for the span of the call (a view's
/// [`pointer_attributes`](crate::DeviceSlice::pointer_attributes) uses the view's context).
#[wraps(cuPointerGetAttributes)]
#[track_caller]
pub fn pointer_attributes(ptr: sys::CUdeviceptr) -> Result<PointerAttributes> {
    // The device and host pointers are those through which the *current* context reaches
    // the memory: without one the driver reports them as 0.
    let _cur = crate::context::AnyCurrent::enter()?;
    let mut a = PointerAttributes::default();
    // The boolean attributes are written into 4-byte slots, zeroed first: whether the driver
    // writes one byte or an unsigned int, nothing past the slot is touched and the value
    // reads right.
    let (mut sync, mut managed, mut mapped) = (0u32, 0u32, 0u32);
    let mut attrs = [
        sys::CU_POINTER_ATTRIBUTE_CONTEXT,
        sys::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
        sys::CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
        sys::CU_POINTER_ATTRIBUTE_HOST_POINTER,
        sys::CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
        sys::CU_POINTER_ATTRIBUTE_BUFFER_ID,
        sys::CU_POINTER_ATTRIBUTE_IS_MANAGED,
        sys::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        sys::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
        sys::CU_POINTER_ATTRIBUTE_RANGE_SIZE,
        sys::CU_POINTER_ATTRIBUTE_MAPPED,
    ];
    let mut data: [*mut c_void; 11] = [
        (&mut a.context as *mut usize).cast(),
        (&mut a.memory_type as *mut u32).cast(),
        (&mut a.device_pointer as *mut u64).cast(),
        (&mut a.host_pointer as *mut usize).cast(),
        (&mut sync as *mut u32).cast(),
        (&mut a.buffer_id as *mut u64).cast(),
        (&mut managed as *mut u32).cast(),
        (&mut a.device_ordinal as *mut i32).cast(),
        (&mut a.range_start as *mut u64).cast(),
        (&mut a.range_size as *mut usize).cast(),
        (&mut mapped as *mut u32).cast(),
    ];
    call!(
        // SAFETY: each data pointer points to a value of (at least) the size of the type the
        // attribute's documentation names (CUcontext, unsigned int, CUdeviceptr, void*, bool
        // in 4 bytes, unsigned long long, bool in 4 bytes, int, CUdeviceptr, size_t, bool in
        // 4 bytes), all alive across the call.
        unsafe {
            sys::cuPointerGetAttributes(
                attrs.len() as u32,
                attrs.as_mut_ptr(),
                data.as_mut_ptr(),
                ptr,
            )
        },
    )?;
    a.sync_memops = sync != 0;
    a.is_managed = managed != 0;
    a.mapped = mapped != 0;
    Ok(a)
}

impl<T: DeviceRepr> DeviceSlice<'_, T> {
    /// Every pointer attribute of the view's first address.
    #[wraps(cuPointerGetAttributes)]
    #[track_caller]
    pub fn pointer_attributes(&self) -> Result<PointerAttributes> {
        // In the view's context (its device and host pointers are those of that context).
        let _cur = self.context().enter()?;
        pointer_attributes(self.as_raw())
    }

    /// Makes every synchronous memory operation on the view's allocation synchronise
    /// (`CU_POINTER_ATTRIBUTE_SYNC_MEMOPS`, the one settable attribute).
    #[wraps(cuPointerSetAttribute)]
    #[track_caller]
    pub fn set_sync_memops(&self, on: bool) -> Result<()> {
        let v: u32 = on as u32;
        call!(
            // SAFETY: SYNC_MEMOPS reads one unsigned int; the view borrows live memory.
            unsafe {
                sys::cuPointerSetAttribute(
                    (&v as *const u32).cast(),
                    sys::CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
                    self.as_raw(),
                )
            },
        )
    }

    /// Prefetches the view's range of managed memory to `location` on `stream` (a hint). For
    /// memory ordered on a stream, `stream` must be that one
    /// ([stream order](DeviceSlice#stream-order)).
    #[wraps(cuMemPrefetchAsync)]
    #[track_caller]
    pub fn prefetch(&self, location: MemLocation, stream: &Stream) -> Result<()> {
        crate::memory::view::check_stream(
            "DeviceSlice::prefetch",
            self.context(),
            self.home(),
            stream,
        )?;
        if self.bytes() == 0 {
            return Ok(());
        }
        let _cur = stream.context().enter()?;
        call!(
            // SAFETY: the view borrows live memory of `bytes()` bytes; a prefetch changes no
            // contents; flags must be 0.
            unsafe {
                newer::cuMemPrefetchAsync_v2()?(
                    self.as_raw(),
                    self.bytes(),
                    location.as_raw(),
                    0,
                    stream.as_raw(),
                )
            },
        )
    }

    /// Advises the driver about the view's range of managed memory (a hint).
    #[wraps(cuMemAdvise)]
    #[track_caller]
    pub fn advise(&self, advice: MemAdvice, location: MemLocation) -> Result<()> {
        if self.bytes() == 0 {
            return Ok(());
        }
        let _cur = self.context().enter()?;
        call!(
            // SAFETY: the view borrows live memory; advice changes no contents.
            unsafe {
                newer::cuMemAdvise_v2()?(
                    self.as_raw(),
                    self.bytes(),
                    advice.as_raw(),
                    location.as_raw(),
                )
            },
        )
    }

    /// A 4-byte range attribute of the view's managed memory (`READ_MOSTLY`,
    /// `PREFERRED_LOCATION`, `LAST_PREFETCH_LOCATION`, their `_TYPE`/`_ID` forms).
    #[wraps(cuMemRangeGetAttribute)]
    #[track_caller]
    pub fn range_attribute(&self, attr: MemRangeAttribute) -> Result<i32> {
        let _cur = self.context().enter()?;
        let mut v: i32 = 0;
        call!(
            // SAFETY: the attributes named above are one 4-byte int; the view borrows live
            // memory of `bytes()` bytes.
            unsafe {
                sys::cuMemRangeGetAttribute(
                    (&mut v as *mut i32).cast(),
                    4,
                    attr.as_raw(),
                    self.as_raw(),
                    self.bytes(),
                )
            },
        )?;
        Ok(v)
    }

    /// Several 4-byte range attributes in one call.
    #[wraps(cuMemRangeGetAttributes)]
    #[track_caller]
    pub fn range_attributes(&self, attrs: &[MemRangeAttribute]) -> Result<Vec<i32>> {
        let _cur = self.context().enter()?;
        let mut vals = vec![0i32; attrs.len()];
        let mut raw: Vec<sys::CUmem_range_attribute> = attrs.iter().map(|a| a.as_raw()).collect();
        let mut sizes = vec![4usize; attrs.len()];
        let mut data: Vec<*mut c_void> = vals.iter_mut().map(|v| (v as *mut i32).cast()).collect();
        call!(
            // SAFETY: each of the `len` data pointers points to one 4-byte int, its size in
            // `sizes`; the view borrows live memory.
            unsafe {
                sys::cuMemRangeGetAttributes(
                    data.as_mut_ptr(),
                    sizes.as_mut_ptr(),
                    raw.as_mut_ptr(),
                    raw.len(),
                    self.as_raw(),
                    self.bytes(),
                )
            },
        )?;
        Ok(vals)
    }
}
