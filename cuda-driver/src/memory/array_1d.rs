//! The 2D array descriptor (`cuArrayCreate`, `cuArrayGetDescriptor`) and the copies that
//! address a 1D array by byte offset (`cuMemcpyAtoH`, `cuMemcpyHtoA`, `cuMemcpyAtoD`,
//! `cuMemcpyDtoA`, `cuMemcpyAtoA` and the asynchronous host forms), as methods on the array
//! views [`ArrayRef`] (reads) and [`ArrayRefMut`] (writes), which [`Array`] and the mipmap
//! levels and planes hand out (`Array` has the same methods, through its views). Offsets and
//! lengths are in elements here; the bounds are checked before any driver call.

use std::mem::size_of;
use std::ptr;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use super::array::{Array, ArrayDescriptor, ArrayElement, ArrayRef, ArrayRefMut};
use super::view::check_stream;
use super::{DeviceSlice, DeviceSliceMut};
use crate::context::Context;
use crate::error::layout::LayoutError;
use crate::error::{Error, Result};
use crate::handle::Handle;
use crate::stream::Stream;
use crate::types::Array3DFlags;
use crate::types::ArrayFormat;

impl<T: ArrayElement> Array<T> {
    /// Creates a 1D (`height == 0`) or 2D array of `T` through the 2D descriptor
    /// (`CUDA_ARRAY_DESCRIPTOR`: no depth, no flags). A zero width is
    /// [`LayoutError::ZeroExtent`] before any driver call.
    #[wraps(cuArrayCreate)]
    #[track_caller]
    pub fn new_2d_descriptor(ctx: &Context, width: usize, height: usize) -> Result<Self> {
        let desc = ArrayDescriptor::of::<T>(width, height, 0, Array3DFlags::empty());
        desc.validate::<T>("Array::new_2d_descriptor")?;
        let raw_desc = sys::CUDA_ARRAY_DESCRIPTOR {
            Width: width,
            Height: height,
            Format: desc.format.as_raw(),
            NumChannels: desc.channels,
        };
        let _cur = ctx.enter()?;
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: reads one descriptor, writes one CUarray, owned by the value built next.
            unsafe { sys::cuArrayCreate(&mut raw, &raw_desc) },
        )?;
        Ok(Array::from_parts(raw, desc, ctx))
    }
}

impl<'a, T: ArrayElement> ArrayRef<'a, T> {
    /// The array's 2D descriptor as the driver reports it (`CUDA_ARRAY_DESCRIPTOR`: width,
    /// height, format, channels; depth and flags are left 0 and empty). For 3D arrays the
    /// driver refuses it; use [`descriptor`](Self::descriptor).
    #[wraps(cuArrayGetDescriptor)]
    #[track_caller]
    pub fn descriptor_2d(&self) -> Result<ArrayDescriptor> {
        let _cur = self.context().enter()?;
        let mut d = sys::CUDA_ARRAY_DESCRIPTOR {
            Width: 0,
            Height: 0,
            Format: 0,
            NumChannels: 0,
        };
        call!(
            // SAFETY: the array is alive (borrowed for 'a); writes one struct.
            unsafe { sys::cuArrayGetDescriptor(&mut d, self.as_raw()) },
        )?;
        Ok(ArrayDescriptor {
            width: d.Width,
            height: d.Height,
            depth: 0,
            format: ArrayFormat::from_raw(d.Format),
            channels: d.NumChannels,
            flags: Array3DFlags::empty(),
        })
    }

    /// Copies the elements `offset..offset + dst.len()` of this 1D array into `dst`.
    #[wraps(cuMemcpyAtoH)]
    #[track_caller]
    pub fn read_1d(&self, offset: usize, dst: &mut [T]) -> Result<()> {
        let (off, bytes) = range_1d::<T>(self.desc(), "Array::read_1d", offset, dst.len())?;
        if bytes == 0 {
            return Ok(());
        }
        let _cur = self.context().enter()?;
        call!(
            // SAFETY: the range lies in the live array (checked) and `dst` holds `bytes` bytes.
            unsafe { sys::cuMemcpyAtoH(dst.as_mut_ptr().cast(), self.as_raw(), off, bytes) },
        )
    }

    /// Queues a copy of the elements `offset..offset + dst.len()` of this 1D array into `dst`
    /// on `stream` (a stream of the array's context).
    ///
    /// # Safety
    /// `dst` must stay valid, and must be neither read nor written by the host, until the
    /// stream has executed the copy (as for
    /// [`DeviceSlice::copy_to_host_async`](crate::DeviceSlice::copy_to_host_async)).
    #[wraps(cuMemcpyAtoHAsync)]
    #[track_caller]
    pub unsafe fn read_1d_async(
        &self,
        offset: usize,
        dst: &mut [T],
        stream: &Stream,
    ) -> Result<()> {
        let (off, bytes) = range_1d::<T>(self.desc(), "Array::read_1d_async", offset, dst.len())?;
        check_stream(
            "Array::read_1d_async",
            self.context(),
            ptr::null_mut(),
            stream,
        )?;
        if bytes == 0 {
            return Ok(());
        }
        let _cur = self.context().enter()?;
        call!(
            // SAFETY: as in read_1d; the caller keeps `dst` valid until the copy ran, and
            // cuArrayDestroy waits for it (GPU test
            // release::cu_array_destroy_waits_for_a_copy_queued_on_another_stream).
            unsafe {
                sys::cuMemcpyAtoHAsync(
                    dst.as_mut_ptr().cast(),
                    self.as_raw(),
                    off,
                    bytes,
                    stream.as_raw(),
                )
            },
        )
    }

    /// Copies the elements `offset..offset + dst.len()` of this 1D array into device memory
    /// of the same context.
    #[wraps(cuMemcpyAtoD)]
    #[track_caller]
    pub fn copy_1d_to_device(&self, offset: usize, dst: &mut DeviceSliceMut<'_, T>) -> Result<()>
    where
        T: crate::repr::DeviceRepr,
    {
        let (off, bytes) =
            range_1d::<T>(self.desc(), "Array::copy_1d_to_device", offset, dst.len())?;
        same_context("Array::copy_1d_to_device", self.context(), dst.context())?;
        if bytes == 0 {
            return Ok(());
        }
        let home = dst.as_view().stream_order();
        let _cur = self.context().enter()?;
        sync_home(home)?;
        call!(
            // SAFETY: the range lies in the live array (checked); the view borrows `bytes`
            // bytes of live device memory exclusively.
            unsafe { sys::cuMemcpyAtoD(dst.as_raw(), self.as_raw(), off, bytes) },
        )?;
        wait_for_copy(home)
    }
}

impl<'a, T: ArrayElement> ArrayRefMut<'a, T> {
    /// Copies `src` into the elements `offset..offset + src.len()` of this 1D array.
    #[wraps(cuMemcpyHtoA)]
    #[track_caller]
    pub fn write_1d(&mut self, offset: usize, src: &[T]) -> Result<()> {
        let (off, bytes) = range_1d::<T>(self.desc(), "Array::write_1d", offset, src.len())?;
        if bytes == 0 {
            return Ok(());
        }
        let _cur = self.context().enter()?;
        call!(
            // SAFETY: the range lies in the live array (checked), borrowed exclusively; `src`
            // holds `bytes` bytes.
            unsafe { sys::cuMemcpyHtoA(self.as_raw(), off, src.as_ptr().cast(), bytes) },
        )
    }

    /// Queues a copy of `src` into the elements `offset..offset + src.len()` of this 1D
    /// array on `stream`.
    ///
    /// # Safety
    /// `src` must stay valid, and must not be written by the host, until the stream has
    /// executed the copy.
    #[wraps(cuMemcpyHtoAAsync)]
    #[track_caller]
    pub unsafe fn write_1d_async(
        &mut self,
        offset: usize,
        src: &[T],
        stream: &Stream,
    ) -> Result<()> {
        let (off, bytes) = range_1d::<T>(self.desc(), "Array::write_1d_async", offset, src.len())?;
        check_stream(
            "Array::write_1d_async",
            self.context(),
            ptr::null_mut(),
            stream,
        )?;
        if bytes == 0 {
            return Ok(());
        }
        let _cur = self.context().enter()?;
        call!(
            // SAFETY: as in write_1d; the caller keeps `src` valid until the copy ran.
            unsafe {
                sys::cuMemcpyHtoAAsync(
                    self.as_raw(),
                    off,
                    src.as_ptr().cast(),
                    bytes,
                    stream.as_raw(),
                )
            },
        )
    }

    /// Copies device memory of the same context into the elements
    /// `offset..offset + src.len()` of this 1D array.
    #[wraps(cuMemcpyDtoA)]
    #[track_caller]
    pub fn copy_1d_from_device(&mut self, offset: usize, src: &DeviceSlice<'_, T>) -> Result<()>
    where
        T: crate::repr::DeviceRepr,
    {
        let (off, bytes) =
            range_1d::<T>(self.desc(), "Array::copy_1d_from_device", offset, src.len())?;
        same_context("Array::copy_1d_from_device", self.context(), src.context())?;
        if bytes == 0 {
            return Ok(());
        }
        let home = src.stream_order();
        let _cur = self.context().enter()?;
        sync_home(home)?;
        call!(
            // SAFETY: the range lies in the live array (checked, borrowed exclusively); the
            // view borrows `bytes` bytes of live device memory.
            unsafe { sys::cuMemcpyDtoA(self.as_raw(), off, src.as_raw(), bytes) },
        )?;
        wait_for_copy(home)
    }

    /// Copies `len` elements from `src` (a 1D array of the same context: an `&Array`, a
    /// level or a plane) at `src_offset` into this 1D array at `offset`.
    #[wraps(cuMemcpyAtoA)]
    #[track_caller]
    pub fn copy_1d_from_array<'s>(
        &mut self,
        offset: usize,
        src: impl Into<ArrayRef<'s, T>>,
        src_offset: usize,
        len: usize,
    ) -> Result<()> {
        let src = src.into();
        let (off, bytes) = range_1d::<T>(self.desc(), "Array::copy_1d_from_array", offset, len)?;
        let (src_off, _) = range_1d::<T>(src.desc(), "Array::copy_1d_from_array", src_offset, len)?;
        same_context("Array::copy_1d_from_array", self.context(), src.context())?;
        if bytes == 0 {
            return Ok(());
        }
        let _cur = self.context().enter()?;
        call!(
            // SAFETY: both ranges lie in live arrays (checked); `self` is borrowed
            // exclusively and `src` shared, so the arrays differ.
            unsafe { sys::cuMemcpyAtoA(self.as_raw(), off, src.as_raw(), src_off, bytes) },
        )
    }
}

/// Checks that the array `d` describes is 1D and `offset..offset + len` lies in it; returns
/// the byte offset and byte count.
#[track_caller]
fn range_1d<T: ArrayElement>(
    d: &ArrayDescriptor,
    what: &'static str,
    offset: usize,
    len: usize,
) -> Result<(usize, usize)> {
    if d.height != 0 || d.depth != 0 {
        return Err(Error::Layout(LayoutError::ArrayNot1D {
            what,
            height: d.height,
            depth: d.depth,
        }));
    }
    match offset.checked_add(len) {
        Some(end) if end <= d.width => Ok((offset * size_of::<T>(), len * size_of::<T>())),
        _ => Err(Error::OutOfBounds {
            start: offset,
            end: offset.saturating_add(len),
            len: d.width,
        }),
    }
}

#[track_caller]
fn same_context(what: &'static str, a: &Context, b: &Context) -> Result<()> {
    if a.as_raw() == b.as_raw() {
        Ok(())
    } else {
        Err(Error::ContextMismatch {
            what,
            expected: a.as_raw() as usize,
            found: b.as_raw() as usize,
        })
    }
}

/// The blocking array copies have no stream form for views ordered on a stream: synchronise
/// the view's stream first (the context current), so the copy sees the work ordered on it,
/// and [`wait_for_copy`] after it.
#[track_caller]
fn sync_home(home: Option<sys::CUstream>) -> Result<()> {
    if let Some(s) = home {
        call!(
            // SAFETY: `s` is the live stream the view's memory is ordered on (its owner
            // borrows it).
            unsafe { sys::cuStreamSynchronize(s) },
        )?;
    }
    Ok(())
}

/// After a blocking array copy of a view ordered on a stream: wait for the copy, which ran on
/// the default stream, unordered with the view's stream (which may be non-blocking), so that
/// the work later ordered on that stream (the free of stream-ordered memory, the host access
/// of managed memory) comes after it. The context is current.
#[track_caller]
fn wait_for_copy(home: Option<sys::CUstream>) -> Result<()> {
    if home.is_some() {
        call!(
            // SAFETY: the null stream of the current context, always valid.
            unsafe { sys::cuStreamSynchronize(ptr::null_mut()) },
        )?;
    }
    Ok(())
}
