//! The borrowed forms of a CUDA array: [`ArrayRef`] (shared, `Copy`) and [`ArrayRefMut`]
//! (exclusive). An [`Array`] hands them out ([`Array::view`], [`Array::view_mut`]), and so do
//! the arrays that own arrays of their own: a [`MipmappedArray`]'s levels and a multi-planar
//! array's planes. They are their own types, never an owned `Array`, destroy nothing, and
//! carry the lifetime of what they borrow; the array operations are written here, once.

use std::marker::PhantomData;
use std::ptr;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use super::{
    check_element, query_descriptor, Array, ArrayDescriptor, ArrayElement, ArrayMemoryRequirements,
    ArraySparseProperties,
};
#[cfg(doc)]
use super::{Array3DFlags, MipmappedArray};
use crate::context::Context;
use crate::device::Device;
#[cfg(doc)]
use crate::error::Error;
use crate::error::Result;
use crate::handle::Handle;

/// Plane `index` of the live array `raw` of `ctx`, checked to hold `P`s: its handle (owned by
/// the array) and descriptor.
#[track_caller]
fn plane_parts<P: ArrayElement>(
    raw: sys::CUarray,
    ctx: &Context,
    index: u32,
) -> Result<(sys::CUarray, ArrayDescriptor)> {
    let _cur = ctx.enter()?;
    let mut plane = ptr::null_mut();
    call!(
        // SAFETY: `raw` is a live array (the caller borrows it); writes one CUarray owned by
        // that array.
        unsafe { sys::cuArrayGetPlane(&mut plane, raw, index) },
    )?;
    let desc = query_descriptor(plane, ctx)?;
    check_element::<P>("Array::plane", desc.format, desc.channels)?;
    Ok((plane, desc))
}

/// A CUDA array borrowed shared for `'a`: an [`Array`] ([`Array::view`]), a mipmap level
/// ([`MipmappedArray::level`]) or a plane ([`ArrayRef::plane`]). A plain handle, `Copy`; it
/// destroys nothing and is no owner of any kind. The array's read operations (copies out,
/// descriptors, planes) are written here, once; textures, surfaces and the copy builders
/// take it wherever they take an `&Array`.
///
/// The view never dereferences to an owned [`Array`]:
///
/// ```compile_fail,E0614
/// # fn f(m: &cuda_driver::memory::MipmappedArray<f32>) -> cuda_driver::Result<()> {
/// let level = m.level(0)?;
/// let owned: &cuda_driver::memory::Array<f32> = &*level;
/// # Ok(()) }
/// ```
///
/// nor outlives what it borrows:
///
/// ```compile_fail,E0505
/// # fn f(m: cuda_driver::memory::MipmappedArray<f32>) -> cuda_driver::Result<()> {
/// let level = m.level(0)?;
/// drop(m);
/// # let _ = level.len();
/// # Ok(()) }
/// ```
#[doc(alias = "CUarray")]
pub struct ArrayRef<'a, T: ArrayElement> {
    raw: sys::CUarray,
    desc: ArrayDescriptor,
    ctx: &'a Context,
    _marker: PhantomData<&'a T>,
}

/// A CUDA array borrowed exclusively for `'a`: an [`Array`] ([`Array::view_mut`]), a mipmap
/// level ([`MipmappedArray::level_mut`]) or a plane ([`ArrayRefMut::plane_mut`]) to write.
/// It destroys nothing and is no owner of any kind; the array's write operations are
/// written here, once, and its reads go through [`as_view`](Self::as_view).
///
/// The view is no owned [`Array`] and never dereferences to one, so `mem::swap`,
/// `mem::replace` and `mem::take` through a `&mut` cannot move a level or a plane out of
/// the array that owns it (and destroys it):
///
/// ```compile_fail,E0614
/// # fn f(
/// #     a: &mut cuda_driver::memory::MipmappedArray<f32>,
/// #     b: &mut cuda_driver::memory::MipmappedArray<f32>,
/// # ) -> cuda_driver::Result<()> {
/// let mut level_a = a.level_mut(0)?;
/// let mut level_b = b.level_mut(0)?;
/// std::mem::swap(&mut *level_a, &mut *level_b);
/// # Ok(()) }
/// ```
///
/// ```compile_fail,E0614
/// # fn f(
/// #     ctx: &cuda_driver::Context,
/// #     m: &mut cuda_driver::memory::MipmappedArray<f32>,
/// # ) -> cuda_driver::Result<()> {
/// use cuda_driver::{memory::Array, types::Array3DFlags};
/// let mut level = m.level_mut(0)?;
/// let spare = Array::new_2d(ctx, 16, 16, Array3DFlags::empty())?;
/// let owned: Array<f32> = std::mem::replace(&mut *level, spare);
/// drop(owned); // would destroy the level the mipmapped array still owns
/// # Ok(()) }
/// ```
///
/// ```compile_fail,E0614
/// # fn f(
/// #     nv12: &mut cuda_driver::memory::Array<u8>,
/// #     other: &mut cuda_driver::memory::Array<u8>,
/// # ) -> cuda_driver::Result<()> {
/// let mut luma = nv12.plane_mut::<u8>(0)?;
/// std::mem::swap(&mut *luma, other);
/// # Ok(()) }
/// ```
///
/// Swapping the views themselves swaps the borrows: each array keeps its levels.
///
/// ```
/// # fn f(
/// #     a: &mut cuda_driver::memory::MipmappedArray<f32>,
/// #     b: &mut cuda_driver::memory::MipmappedArray<f32>,
/// # ) -> cuda_driver::Result<()> {
/// let mut level_a = a.level_mut(0)?;
/// let mut level_b = b.level_mut(0)?;
/// std::mem::swap(&mut level_a, &mut level_b);
/// let n = level_a.len();
/// level_a.copy_from_host(&vec![1.0; n])?; // level 0 of `b`
/// # Ok(()) }
/// ```
#[doc(alias = "CUarray")]
pub struct ArrayRefMut<'a, T: ArrayElement> {
    raw: sys::CUarray,
    desc: ArrayDescriptor,
    ctx: &'a Context,
    _marker: PhantomData<&'a mut T>,
}

// SAFETY: as `&Array`: a borrowed handle of an array usable from any thread, and a borrowed
// Sync context.
unsafe impl<T: ArrayElement> Send for ArrayRef<'_, T> {}
// SAFETY: as above; shared access only reads the array through the driver.
unsafe impl<T: ArrayElement> Sync for ArrayRef<'_, T> {}
// SAFETY: as `&mut Array`: exclusive by construction.
unsafe impl<T: ArrayElement> Send for ArrayRefMut<'_, T> {}
// SAFETY: as above; shared access to the view only reads the array.
unsafe impl<T: ArrayElement> Sync for ArrayRefMut<'_, T> {}

impl<T: ArrayElement> Clone for ArrayRef<'_, T> {
    #[inline]
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: ArrayElement> Copy for ArrayRef<'_, T> {}

impl<T: ArrayElement> std::fmt::Debug for ArrayRef<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArrayRef")
            .field("raw", &self.raw)
            .field("desc", &self.desc)
            .field("type", &std::any::type_name::<T>())
            .finish()
    }
}

impl<T: ArrayElement> std::fmt::Debug for ArrayRefMut<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArrayRefMut")
            .field("raw", &self.raw)
            .field("desc", &self.desc)
            .field("type", &std::any::type_name::<T>())
            .finish()
    }
}

impl<'a, T: ArrayElement> From<&'a Array<T>> for ArrayRef<'a, T> {
    #[inline]
    fn from(array: &'a Array<T>) -> Self {
        array.view()
    }
}

impl<'a, T: ArrayElement> From<&'a mut Array<T>> for ArrayRef<'a, T> {
    #[inline]
    fn from(array: &'a mut Array<T>) -> Self {
        array.view()
    }
}

impl<'a, T: ArrayElement> From<&'a ArrayRef<'_, T>> for ArrayRef<'a, T> {
    #[inline]
    fn from(view: &'a ArrayRef<'_, T>) -> Self {
        *view
    }
}

impl<'a, T: ArrayElement> From<&'a ArrayRefMut<'_, T>> for ArrayRef<'a, T> {
    #[inline]
    fn from(view: &'a ArrayRefMut<'_, T>) -> Self {
        view.as_view()
    }
}

impl<'a, T: ArrayElement> From<&'a mut ArrayRefMut<'_, T>> for ArrayRef<'a, T> {
    #[inline]
    fn from(view: &'a mut ArrayRefMut<'_, T>) -> Self {
        view.as_view()
    }
}

impl<'a, T: ArrayElement> From<ArrayRefMut<'a, T>> for ArrayRef<'a, T> {
    #[inline]
    fn from(view: ArrayRefMut<'a, T>) -> Self {
        // SAFETY: the exclusive borrow of the array for 'a becomes a shared one.
        unsafe { ArrayRef::from_parts(view.raw, view.desc, view.ctx) }
    }
}

impl<'a, T: ArrayElement> From<&'a mut Array<T>> for ArrayRefMut<'a, T> {
    #[inline]
    fn from(array: &'a mut Array<T>) -> Self {
        array.view_mut()
    }
}

impl<'a, T: ArrayElement> From<&'a mut ArrayRefMut<'_, T>> for ArrayRefMut<'a, T> {
    #[inline]
    fn from(view: &'a mut ArrayRefMut<'_, T>) -> Self {
        view.reborrow()
    }
}

impl<T: ArrayElement> Handle for ArrayRef<'_, T> {
    type Raw = sys::CUarray;

    /// The raw `CUarray`, valid for the borrow. It belongs to the array's owner: never
    /// destroy it.
    #[inline]
    fn as_raw(&self) -> sys::CUarray {
        self.raw
    }
}

impl<T: ArrayElement> Handle for ArrayRefMut<'_, T> {
    type Raw = sys::CUarray;

    /// The raw `CUarray`, valid for the borrow. It belongs to the array's owner: never
    /// destroy it.
    #[inline]
    fn as_raw(&self) -> sys::CUarray {
        self.raw
    }
}

macro_rules! array_view_getters {
    () => {
        /// The array's context.
        #[inline]
        pub fn context(&self) -> &'a Context {
            self.ctx
        }

        /// The array's descriptor (as created, or queried when borrowed).
        #[inline]
        pub fn desc(&self) -> &ArrayDescriptor {
            &self.desc
        }

        /// Width in elements.
        #[inline]
        pub fn width(&self) -> usize {
            self.desc.width
        }

        /// Height in elements (0 for a 1D array).
        #[inline]
        pub fn height(&self) -> usize {
            self.desc.height
        }

        /// Depth, or number of layers (0 for a 1D or 2D array).
        #[inline]
        pub fn depth(&self) -> usize {
            self.desc.depth
        }

        /// Number of elements: width × height × depth, the unused dimensions counting 1.
        #[inline]
        pub fn len(&self) -> usize {
            self.desc.extent().iter().product()
        }

        /// Whether the array holds no elements (never, for an array the driver created).
        #[inline]
        pub fn is_empty(&self) -> bool {
            self.len() == 0
        }
    };
}

impl<'a, T: ArrayElement> ArrayRef<'a, T> {
    /// Borrows an array of `ctx` that another object owns (and destroys), described by
    /// `desc` (read it with [`ArrayDescriptor::query`] for an array of unknown shape).
    ///
    /// # Safety
    /// `raw` is a live array of `ctx` whose elements are `T`s, that stays alive for `'a` and
    /// is not written through another handle meanwhile; `desc` is its descriptor.
    #[inline]
    pub unsafe fn borrow_raw(raw: sys::CUarray, ctx: &'a Context, desc: ArrayDescriptor) -> Self {
        // SAFETY: the caller's guarantees.
        unsafe { Self::from_parts(raw, desc, ctx) }
    }

    /// # Safety
    /// `raw` is a live array of `ctx` described by `desc`, of `T`s, alive for `'a` and not
    /// written through another handle meanwhile.
    #[inline]
    pub(crate) unsafe fn from_parts(
        raw: sys::CUarray,
        desc: ArrayDescriptor,
        ctx: &'a Context,
    ) -> Self {
        ArrayRef {
            raw,
            desc,
            ctx,
            _marker: PhantomData,
        }
    }

    array_view_getters!();

    /// The array's descriptor as the driver reports it.
    #[wraps(cuArray3DGetDescriptor)]
    #[track_caller]
    pub fn descriptor(&self) -> Result<ArrayDescriptor> {
        query_descriptor(self.raw, self.ctx)
    }

    /// The tile shape and mip tail of a sparse array ([`Array3DFlags::SPARSE`]).
    #[wraps(cuArrayGetSparseProperties)]
    #[track_caller]
    pub fn sparse_properties(&self) -> Result<ArraySparseProperties> {
        let _cur = self.ctx.enter()?;
        // SAFETY: a plain C struct; all-zero bytes are a valid value.
        let mut raw: sys::CUDA_ARRAY_SPARSE_PROPERTIES = unsafe { std::mem::zeroed() };
        call!(
            // SAFETY: the array is live (borrowed for 'a); writes one struct.
            unsafe { sys::cuArrayGetSparseProperties(&mut raw, self.raw) },
        )?;
        Ok(ArraySparseProperties::from_raw(&raw))
    }

    /// The memory a deferred-mapping array ([`Array3DFlags::DEFERRED_MAPPING`]) needs on
    /// `device`.
    #[wraps(cuArrayGetMemoryRequirements)]
    #[track_caller]
    pub fn memory_requirements(&self, device: Device) -> Result<ArrayMemoryRequirements> {
        let _cur = self.ctx.enter()?;
        // SAFETY: a plain C struct; all-zero bytes are a valid value.
        let mut raw: sys::CUDA_ARRAY_MEMORY_REQUIREMENTS = unsafe { std::mem::zeroed() };
        call!(
            // SAFETY: the array is live (borrowed for 'a); writes one struct.
            unsafe { sys::cuArrayGetMemoryRequirements(&mut raw, self.raw, device.as_raw()) },
        )?;
        Ok(ArrayMemoryRequirements {
            size: raw.size,
            alignment: raw.alignment,
        })
    }

    /// Plane `index` of a multi-planar array (NV12 and the other video formats: plane 0 the
    /// luma, plane 1 the chroma), as a view of `P`s owned by this array, borrowed as long as
    /// it. For a plain format, `P` must match the plane's format
    /// ([`LayoutError::ElementFormat`](crate::error::layout::LayoutError::ElementFormat)).
    #[wraps(cuArrayGetPlane)]
    #[track_caller]
    pub fn plane<P: ArrayElement>(&self, index: u32) -> Result<ArrayRef<'a, P>> {
        let (raw, desc) = plane_parts::<P>(self.raw, self.ctx, index)?;
        // SAFETY: the plane belongs to the array, which is borrowed shared for 'a.
        Ok(unsafe { ArrayRef::from_parts(raw, desc, self.ctx) })
    }
}

impl<'a, T: ArrayElement> ArrayRefMut<'a, T> {
    /// Borrows exclusively an array of `ctx` that another object owns (and destroys),
    /// described by `desc` (read it with [`ArrayDescriptor::query`] for an array of unknown
    /// shape).
    ///
    /// # Safety
    /// `raw` is a live array of `ctx` whose elements are `T`s, that stays alive for `'a` and
    /// is used through no other handle meanwhile; `desc` is its descriptor.
    #[inline]
    pub unsafe fn borrow_raw(raw: sys::CUarray, ctx: &'a Context, desc: ArrayDescriptor) -> Self {
        // SAFETY: the caller's guarantees.
        unsafe { Self::from_parts(raw, desc, ctx) }
    }

    /// # Safety
    /// `raw` is a live array of `ctx` described by `desc`, of `T`s, alive for `'a` and used
    /// through no other handle meanwhile.
    #[inline]
    pub(crate) unsafe fn from_parts(
        raw: sys::CUarray,
        desc: ArrayDescriptor,
        ctx: &'a Context,
    ) -> Self {
        ArrayRefMut {
            raw,
            desc,
            ctx,
            _marker: PhantomData,
        }
    }

    array_view_getters!();

    /// The same array, borrowed shared for as long as this view is.
    #[inline]
    pub fn as_view(&self) -> ArrayRef<'_, T> {
        // SAFETY: the exclusive borrow, shared for the returned lifetime.
        unsafe { ArrayRef::from_parts(self.raw, self.desc, self.ctx) }
    }

    /// The same array, borrowed exclusively for a shorter time.
    #[inline]
    pub fn reborrow(&mut self) -> ArrayRefMut<'_, T> {
        // SAFETY: `&mut self` passes the exclusive borrow on for the returned lifetime.
        unsafe { ArrayRefMut::from_parts(self.raw, self.desc, self.ctx) }
    }

    array_reads!(as_view);

    /// Plane `index` of a multi-planar array, borrowed exclusively (to copy into it); see
    /// [`ArrayRef::plane`].
    #[wraps(cuArrayGetPlane)]
    #[track_caller]
    pub fn plane_mut<P: ArrayElement>(&mut self, index: u32) -> Result<ArrayRefMut<'_, P>> {
        self.reborrow().into_plane_mut(index)
    }

    /// Plane `index`, borrowed exclusively for all of `'a`.
    #[track_caller]
    pub(super) fn into_plane_mut<P: ArrayElement>(self, index: u32) -> Result<ArrayRefMut<'a, P>> {
        let (raw, desc) = plane_parts::<P>(self.raw, self.ctx, index)?;
        // SAFETY: the plane belongs to the array, borrowed exclusively for 'a by `self`,
        // which is consumed.
        Ok(unsafe { ArrayRefMut::from_parts(raw, desc, self.ctx) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::layout::LayoutError;
    use crate::error::Error;
    use crate::handle::OwnedHandle;
    use crate::types::Array3DFlags;
    use crate::vector::Float4;

    fn fake_context() -> std::mem::ManuallyDrop<Context> {
        // SAFETY: never passed to the driver (every use below fails before any call) and
        // never dropped.
        std::mem::ManuallyDrop::new(unsafe {
            Context::from_raw(0x10 as sys::CUcontext, Device::from_raw(0))
        })
    }

    #[test]
    fn views_are_plain_borrowed_handles() {
        fn send_sync<X: Send + Sync>() {}
        fn copy<X: Copy>() {}
        send_sync::<ArrayRef<'static, f32>>();
        send_sync::<ArrayRefMut<'static, f32>>();
        copy::<ArrayRef<'static, Float4>>();
        // A view is a handle, a descriptor and a borrow: nothing to drop.
        assert!(!std::mem::needs_drop::<ArrayRef<'static, f32>>());
        assert!(!std::mem::needs_drop::<ArrayRefMut<'static, f32>>());
    }

    #[test]
    fn views_convert_and_keep_the_arrays_checks() {
        let ctx = fake_context();
        let desc = ArrayDescriptor::of::<f32>(4, 4, 0, Array3DFlags::empty());
        // SAFETY: fake handles, never passed to the driver: each call fails its Rust-side
        // check first.
        let shared = unsafe { ArrayRef::<f32>::from_parts(0x2000 as sys::CUarray, desc, &ctx) };
        // SAFETY: as above.
        let mut level =
            unsafe { ArrayRefMut::<f32>::from_parts(0x3000 as sys::CUarray, desc, &ctx) };
        let copied = shared;
        assert_eq!(copied.as_raw(), shared.as_raw());
        assert_eq!((level.len(), level.width(), level.height()), (16, 4, 4));
        assert_eq!(ArrayRef::from(&level).as_raw(), level.as_raw());
        assert_eq!(ArrayRef::from(&mut level).as_raw(), level.as_raw());
        assert_eq!(ArrayRefMut::from(&mut level).as_raw(), level.as_raw());
        assert_eq!(level.reborrow().as_view().desc(), &desc);
        // The whole-array and 1D copies check lengths and shapes before the driver.
        assert!(matches!(
            level.copy_from_host(&[0.0; 15]),
            Err(Error::LengthMismatch { .. })
        ));
        assert!(matches!(
            shared.copy_to_host(&mut [0.0; 17]),
            Err(Error::LengthMismatch { .. })
        ));
        assert!(matches!(
            level.write_1d(0, &[1.0]),
            Err(Error::Layout(LayoutError::ArrayNot1D { .. }))
        ));
        assert!(matches!(
            level.copy_1d_from_array(0, shared, 0, 1),
            Err(Error::Layout(LayoutError::ArrayNot1D { .. }))
        ));
        // The copy builders take the views with the array's extent: a region past the
        // level is refused.
        let mut host = [0.0f32; 25];
        let e = crate::memory::copy::Copy2D::new(5, 5)
            .from_array(shared)
            .to_host(&mut host, 5)
            .run()
            .unwrap_err();
        assert!(
            matches!(e, Error::Layout(LayoutError::RegionOutOfBounds { .. })),
            "{e:?}"
        );
        let e = crate::memory::copy::Copy2D::new(5, 5)
            .from_host(&host, 5)
            .to_array(level.reborrow())
            .run()
            .unwrap_err();
        assert!(
            matches!(e, Error::Layout(LayoutError::RegionOutOfBounds { .. })),
            "{e:?}"
        );
    }
}
