//! Pitched 2D memory: [`Pitched2D`], allocated with `cuMemAllocPitch_v2` and freed with
//! `cuMemFree_v2`, and its row-aware views [`Pitched2DView`] and [`Pitched2DViewMut`].
//!
//! Each row of `width` elements starts `pitch` bytes after the one before; the driver picks
//! the pitch so that rows are aligned for coalesced access and for 2D textures. The views
//! know width, height and pitch, hand out rows as [`DeviceSlice`]s and sub-rectangles as
//! views, set every element with the 2D memsets, and are the pitched operands of
//! [`Copy2D`](crate::memory::Copy2D) / [`Copy3D`](crate::memory::Copy3D) and of texture objects.

use std::marker::PhantomData;
use std::mem::size_of;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use super::view::{check_stream, memset_count, MemsetValue};
use crate::context::Context;
use crate::error::layout::LayoutError;
use crate::error::{check, Error, Result};
use crate::handle::Handle;
use crate::memory::view::{DeviceSlice, DeviceSliceMut};
use crate::repr::DeviceRepr;
use crate::stream::Stream;

/// A 2D allocation of `width × height` elements of `T` whose rows are `pitch` bytes apart
/// (`cuMemAllocPitch_v2`), freed on drop in its context.
///
/// ```no_run
/// use cuda_driver::{Device, memory::Pitched2D};
///
/// let ctx = Device::get(0)?.primary_context()?;
/// let mut img = Pitched2D::<f32>::new(&ctx, 100, 30)?;
/// assert!(img.pitch() >= 100 * 4);
/// img.view_mut().memset_2d(1.5f32.to_bits())?;
/// let mut row = vec![0.0f32; 100];
/// use cuda_driver::prelude::*;
/// img.view().row(7)?.copy_to_host(&mut row)?;
/// assert!(row.iter().all(|&x| x == 1.5));
/// # Ok::<(), cuda_driver::Error>(())
/// ```
#[doc(alias = "cuMemAllocPitch")]
pub struct Pitched2D<T: DeviceRepr> {
    ptr: sys::CUdeviceptr,
    pitch: usize,
    width: usize,
    height: usize,
    ctx: Context,
    _marker: PhantomData<T>,
}

// SAFETY: as for DeviceBuffer: device memory, T plain data handed out by copy.
unsafe impl<T: DeviceRepr> Send for Pitched2D<T> {}
// SAFETY: shared access only reads through the driver.
unsafe impl<T: DeviceRepr> Sync for Pitched2D<T> {}

impl<T: DeviceRepr> Drop for Pitched2D<T> {
    fn drop(&mut self) {
        let ptr = self.ptr;
        // SAFETY: allocated by cuMemAllocPitch_v2 in `ctx`, owned by self, freed once;
        // cuMemFree waits for device work still using it (GPU test
        // release::cu_mem_free_of_pitched_memory_waits_for_work_queued_on_another_stream).
        self.ctx
            .release("cuMemFree_v2", move || unsafe { sys::cuMemFree_v2(ptr) });
    }
}

impl<T: DeviceRepr> std::fmt::Debug for Pitched2D<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pitched2D")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("width", &self.width)
            .field("height", &self.height)
            .field("pitch", &self.pitch)
            .finish()
    }
}

/// The `ElementSizeBytes` of cuMemAllocPitch for `T`: 4, 8 or 16, the access width the
/// driver aligns rows for.
pub(crate) fn pitch_element_size(size: usize) -> u32 {
    match size {
        0..=4 => 4,
        5..=8 => 8,
        _ => 16,
    }
}

impl<T: DeviceRepr> Pitched2D<T> {
    /// Allocates `height` rows of `width` elements; the contents are unspecified. A zero
    /// width or height is [`LayoutError::ZeroExtent`].
    #[wraps(cuMemAllocPitch)]
    #[track_caller]
    pub fn new(ctx: &Context, width: usize, height: usize) -> Result<Self> {
        if width == 0 || height == 0 || size_of::<T>() == 0 {
            return Err(Error::Layout(LayoutError::ZeroExtent {
                what: "Pitched2D::new",
                axis: if height == 0 { "height" } else { "width" },
            }));
        }
        let row_bytes = super::view::byte_len::<T>("Pitched2D::new", width)?;
        let _cur = ctx.enter()?;
        let (mut ptr, mut pitch) = (0, 0);
        call!(
            // SAFETY: writes a device pointer and a pitch; the allocation is owned by the
            // value built in the next statement.
            unsafe {
                sys::cuMemAllocPitch(
                    &mut ptr,
                    &mut pitch,
                    row_bytes,
                    height,
                    pitch_element_size(size_of::<T>()),
                )
            },
        )?;
        Ok(Pitched2D {
            ptr,
            pitch,
            width,
            height,
            ctx: ctx.clone(),
            _marker: PhantomData,
        })
    }

    /// Takes ownership of a pitched allocation of `ctx`.
    ///
    /// # Safety
    /// `ptr` was allocated by `cuMemAlloc*` in `ctx` for at least `pitch * height` bytes,
    /// aligned for `T`, `width * size_of::<T>() <= pitch`, and nothing else frees it.
    pub unsafe fn from_raw(
        ptr: sys::CUdeviceptr,
        pitch: usize,
        width: usize,
        height: usize,
        ctx: &Context,
    ) -> Self {
        Pitched2D {
            ptr,
            pitch,
            width,
            height,
            ctx: ctx.clone(),
            _marker: PhantomData,
        }
    }

    /// Gives up ownership; returns the pointer and pitch (free with `cuMemFree`).
    pub fn into_raw(self) -> (sys::CUdeviceptr, usize) {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: `this` is never dropped; the context clone is dropped exactly once here.
        unsafe { std::ptr::read(&this.ctx) };
        (this.ptr, this.pitch)
    }

    /// The device address of row 0.
    #[inline]
    pub fn as_raw(&self) -> sys::CUdeviceptr {
        self.ptr
    }

    /// Bytes from one row to the next.
    #[inline]
    pub fn pitch(&self) -> usize {
        self.pitch
    }

    /// Elements per row.
    #[inline]
    pub fn width(&self) -> usize {
        self.width
    }

    /// Rows.
    #[inline]
    pub fn height(&self) -> usize {
        self.height
    }

    /// The context.
    #[inline]
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// The whole allocation as a shared view.
    #[inline]
    pub fn view(&self) -> Pitched2DView<'_, T> {
        Pitched2DView {
            ptr: self.ptr,
            pitch: self.pitch,
            width: self.width,
            height: self.height,
            ctx: &self.ctx,
            _marker: PhantomData,
        }
    }

    /// The whole allocation as a mutable view.
    #[inline]
    pub fn view_mut(&mut self) -> Pitched2DViewMut<'_, T> {
        Pitched2DViewMut {
            ptr: self.ptr,
            pitch: self.pitch,
            width: self.width,
            height: self.height,
            ctx: &self.ctx,
            _marker: PhantomData,
        }
    }
}

/// A shared view of a rectangle of pitched memory: `height` rows of `width` elements, rows
/// `pitch` bytes apart.
#[derive(Clone, Copy)]
pub struct Pitched2DView<'a, T: DeviceRepr> {
    pub(crate) ptr: sys::CUdeviceptr,
    pub(crate) pitch: usize,
    pub(crate) width: usize,
    pub(crate) height: usize,
    pub(crate) ctx: &'a Context,
    _marker: PhantomData<&'a T>,
}

/// A mutable view of a rectangle of pitched memory, borrowed exclusively.
pub struct Pitched2DViewMut<'a, T: DeviceRepr> {
    pub(crate) ptr: sys::CUdeviceptr,
    pub(crate) pitch: usize,
    pub(crate) width: usize,
    pub(crate) height: usize,
    pub(crate) ctx: &'a Context,
    _marker: PhantomData<&'a mut T>,
}

// SAFETY: as for DeviceSlice: a borrowed device address and a borrowed Sync context.
unsafe impl<T: DeviceRepr> Send for Pitched2DView<'_, T> {}
// SAFETY: as above.
unsafe impl<T: DeviceRepr> Sync for Pitched2DView<'_, T> {}
// SAFETY: as above, exclusive by construction.
unsafe impl<T: DeviceRepr> Send for Pitched2DViewMut<'_, T> {}
// SAFETY: as above.
unsafe impl<T: DeviceRepr> Sync for Pitched2DViewMut<'_, T> {}

impl<T: DeviceRepr> std::fmt::Debug for Pitched2DView<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pitched2DView")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("width", &self.width)
            .field("height", &self.height)
            .field("pitch", &self.pitch)
            .finish()
    }
}

impl<T: DeviceRepr> std::fmt::Debug for Pitched2DViewMut<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_view().fmt(f)
    }
}

/// The rectangle `x..x + w`, `y..y + h` of a `width × height` one, or
/// [`LayoutError::RegionOutOfBounds`].
fn check_rect(
    what: &'static str,
    (x, y, w, h): (usize, usize, usize, usize),
    width: usize,
    height: usize,
) -> Result<()> {
    let oob = |axis, end, limit| {
        Error::Layout(LayoutError::RegionOutOfBounds {
            what,
            operand: "view",
            axis,
            end,
            limit,
        })
    };
    let xe = x.saturating_add(w);
    if xe > width {
        return Err(oob("x", xe, width));
    }
    let ye = y.saturating_add(h);
    if ye > height {
        return Err(oob("y", ye, height));
    }
    Ok(())
}

macro_rules! common_view_methods {
    () => {
        /// The device address of the first element of row 0.
        #[inline]
        pub fn as_raw(&self) -> sys::CUdeviceptr {
            self.ptr
        }

        /// Bytes from one row to the next.
        #[inline]
        pub fn pitch(&self) -> usize {
            self.pitch
        }

        /// Elements per row.
        #[inline]
        pub fn width(&self) -> usize {
            self.width
        }

        /// Rows.
        #[inline]
        pub fn height(&self) -> usize {
            self.height
        }

        /// The context of the memory.
        #[inline]
        pub fn context(&self) -> &'a Context {
            self.ctx
        }
    };
}

impl<'a, T: DeviceRepr> Pitched2DView<'a, T> {
    common_view_methods!();

    /// Row `y` (its `width` elements), as a linear view; `y >= height` is
    /// [`LayoutError::RegionOutOfBounds`].
    #[inline]
    pub fn row(&self, y: usize) -> Result<DeviceSlice<'a, T>> {
        check_rect(
            "Pitched2DView::row",
            (0, y, self.width, 1),
            self.width,
            self.height,
        )?;
        // SAFETY: the row lies inside the viewed rectangle, which the owner keeps alive and
        // readable for 'a.
        Ok(unsafe {
            DeviceSlice::borrow_raw(self.ptr + (y * self.pitch) as u64, self.width, self.ctx)
        })
    }

    /// The `w × h` rectangle at `(x, y)` of this one; a rectangle reaching outside is
    /// [`LayoutError::RegionOutOfBounds`].
    #[inline]
    pub fn rect(&self, x: usize, y: usize, w: usize, h: usize) -> Result<Pitched2DView<'a, T>> {
        check_rect("Pitched2DView::rect", (x, y, w, h), self.width, self.height)?;
        Ok(Pitched2DView {
            ptr: self.ptr + (y * self.pitch + x * size_of::<T>()) as u64,
            width: w,
            height: h,
            ..*self
        })
    }
}

impl<'a, T: DeviceRepr> Pitched2DViewMut<'a, T> {
    common_view_methods!();

    /// A shared view of the same rectangle.
    #[inline]
    pub fn as_view(&self) -> Pitched2DView<'_, T> {
        Pitched2DView {
            ptr: self.ptr,
            pitch: self.pitch,
            width: self.width,
            height: self.height,
            ctx: self.ctx,
            _marker: PhantomData,
        }
    }

    /// The same rectangle, borrowed from this view for a shorter lifetime.
    #[inline]
    pub fn reborrow(&mut self) -> Pitched2DViewMut<'_, T> {
        Pitched2DViewMut {
            _marker: PhantomData,
            ..*self
        }
    }

    /// Row `y` as a mutable linear view.
    #[inline]
    pub fn row_mut(&mut self, y: usize) -> Result<DeviceSliceMut<'_, T>> {
        check_rect(
            "Pitched2DViewMut::row_mut",
            (0, y, self.width, 1),
            self.width,
            self.height,
        )?;
        // SAFETY: the row lies inside the rectangle this view borrows exclusively; the
        // returned view reborrows it.
        Ok(unsafe {
            DeviceSliceMut::borrow_raw(self.ptr + (y * self.pitch) as u64, self.width, self.ctx)
        })
    }

    /// The `w × h` rectangle at `(x, y)`, as a mutable view consuming this one.
    #[inline]
    pub fn into_rect(
        self,
        x: usize,
        y: usize,
        w: usize,
        h: usize,
    ) -> Result<Pitched2DViewMut<'a, T>> {
        check_rect(
            "Pitched2DViewMut::into_rect",
            (x, y, w, h),
            self.width,
            self.height,
        )?;
        Ok(Pitched2DViewMut {
            ptr: self.ptr + (y * self.pitch + x * size_of::<T>()) as u64,
            width: w,
            height: h,
            ..self
        })
    }

    /// The `(words per row, word bits as u32)` of a 2D memset of `W` words.
    fn memset_words<W: MemsetValue>(&self, what: &'static str, value: W) -> Result<(usize, u32)> {
        let words = memset_count::<T, W>(what, self.width)?;
        // SAFETY: W is one of u8, u16, u32 (MemsetValue is sealed), WIDTH bytes of plain
        // data; read as that type and widened.
        let bits = unsafe {
            match W::WIDTH {
                1 => std::mem::transmute_copy::<W, u8>(&value) as u32,
                2 => std::mem::transmute_copy::<W, u16>(&value) as u32,
                _ => std::mem::transmute_copy::<W, u32>(&value),
            }
        };
        Ok((words, bits))
    }

    /// Sets every `W`-sized word of every row of the rectangle to `value` (`u8`, `u16` or
    /// `u32`; for `f32`, `x.to_bits()`); the padding between rows is untouched. The element
    /// size must be a multiple of the word's ([`LayoutError::MemsetWidth`]). May still run when
    /// this returns; later work on the default stream is ordered after it.
    #[wraps(cuMemsetD2D8, cuMemsetD2D16, cuMemsetD2D32)]
    #[track_caller]
    pub fn memset_2d<W: MemsetValue>(&mut self, value: W) -> Result<()> {
        let (words, bits) = self.memset_words("memset_2d", value)?;
        if words == 0 || self.height == 0 {
            return Ok(());
        }
        let _cur = self.ctx.enter()?;
        let (p, pitch, h) = (self.ptr, self.pitch, self.height);
        // SAFETY: the view exclusively borrows `h` rows of `words` W-words each, `pitch`
        // bytes apart, of live memory; rows and the start are W-aligned (pitched rows are
        // aligned, and offsets are multiples of size_of::<T>(), a multiple of W).
        let (code, call) = unsafe {
            match W::WIDTH {
                1 => (
                    sys::cuMemsetD2D8(p, pitch, bits as u8, words, h),
                    "cuMemsetD2D8_v2",
                ),
                2 => (
                    sys::cuMemsetD2D16(p, pitch, bits as u16, words, h),
                    "cuMemsetD2D16_v2",
                ),
                _ => (
                    sys::cuMemsetD2D32(p, pitch, bits, words, h),
                    "cuMemsetD2D32_v2",
                ),
            }
        };
        check(code, call)
    }

    /// Queues setting every `W`-sized word of every row to `value` on `stream`, a stream of
    /// the memory's context.
    #[wraps(cuMemsetD2D8Async, cuMemsetD2D16Async, cuMemsetD2D32Async)]
    #[track_caller]
    pub fn memset_2d_async<W: MemsetValue>(&mut self, value: W, stream: &Stream) -> Result<()> {
        let (words, bits) = self.memset_words("memset_2d_async", value)?;
        check_stream("memset_2d_async", self.ctx, std::ptr::null_mut(), stream)?;
        if words == 0 || self.height == 0 {
            return Ok(());
        }
        let _cur = self.ctx.enter()?;
        let (p, pitch, h, s) = (self.ptr, self.pitch, self.height, stream.as_raw());
        // SAFETY: as in memset_2d; the memory is freed by cuMemFree, which waits for the
        // stream's work (GPU test
        // release::cu_mem_free_of_pitched_memory_waits_for_work_queued_on_another_stream).
        let (code, call) = unsafe {
            match W::WIDTH {
                1 => (
                    sys::cuMemsetD2D8Async(p, pitch, bits as u8, words, h, s),
                    "cuMemsetD2D8Async",
                ),
                2 => (
                    sys::cuMemsetD2D16Async(p, pitch, bits as u16, words, h, s),
                    "cuMemsetD2D16Async",
                ),
                _ => (
                    sys::cuMemsetD2D32Async(p, pitch, bits, words, h, s),
                    "cuMemsetD2D32Async",
                ),
            }
        };
        check(code, call)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handle::OwnedHandle;
    use std::mem::ManuallyDrop;

    fn fake_context() -> ManuallyDrop<Context> {
        // SAFETY: never passed to the driver (the tests fail before any call) and never
        // dropped.
        ManuallyDrop::new(unsafe {
            Context::from_raw(0x10 as sys::CUcontext, crate::device::Device::from_raw(0))
        })
    }

    #[test]
    fn element_sizes_follow_the_driver() {
        assert_eq!(pitch_element_size(1), 4);
        assert_eq!(pitch_element_size(4), 4);
        assert_eq!(pitch_element_size(8), 8);
        assert_eq!(pitch_element_size(12), 16);
        assert_eq!(pitch_element_size(16), 16);
    }

    #[test]
    fn rows_and_rects_stay_inside() {
        let ctx = fake_context();
        // SAFETY: never dropped (ManuallyDrop) and never handed to the driver.
        let mut p =
            ManuallyDrop::new(unsafe { Pitched2D::<f32>::from_raw(0x1000, 512, 100, 30, &ctx) });
        let v = p.view();
        assert_eq!(v.row(29).unwrap().as_raw(), 0x1000 + 29 * 512);
        assert_eq!(v.row(29).unwrap().len(), 100);
        assert!(matches!(
            v.row(30),
            Err(Error::Layout(LayoutError::RegionOutOfBounds {
                axis: "y",
                end: 31,
                limit: 30,
                ..
            }))
        ));
        let r = v.rect(10, 2, 5, 3).unwrap();
        assert_eq!(r.as_raw(), 0x1000 + 2 * 512 + 40);
        assert_eq!((r.width(), r.height(), r.pitch()), (5, 3, 512));
        assert!(matches!(
            v.rect(96, 0, 5, 1),
            Err(Error::Layout(LayoutError::RegionOutOfBounds {
                axis: "x",
                end: 101,
                limit: 100,
                ..
            }))
        ));
        assert!(v.rect(usize::MAX, 0, 2, 1).is_err());
        let mut m = p.view_mut();
        let _ = m.reborrow();
        // A u16-element view refuses u32 words, before any driver call.
        // SAFETY: as above.
        let mut q =
            ManuallyDrop::new(unsafe { Pitched2D::<u16>::from_raw(0x1000, 512, 7, 3, &ctx) });
        assert!(matches!(
            q.view_mut().memset_2d(1u32),
            Err(Error::Layout(LayoutError::MemsetWidth { .. }))
        ));
    }
}
