//! Surface Object Management: [`SurfaceObject`], read and written by kernels
//! (`surf2Dread`, `surf2Dwrite`, ...) over an array created with
//! [`Array3DFlags::SURFACE_LDST`](crate::types::Array3DFlags::SURFACE_LDST).
//!
//! A surface object borrows its array: it cannot outlive the array's scope,
//!
//! ```compile_fail,E0597
//! # fn f(ctx: &cuda_driver::Context) -> cuda_driver::Result<()> {
//! use cuda_driver::{memory::Array, types::Array3DFlags, surface::SurfaceObject};
//! let surf = {
//!     let arr = Array::<f32>::new_2d(ctx, 16, 16, Array3DFlags::SURFACE_LDST)?;
//!     SurfaceObject::new(&arr)?
//! };
//! # drop(surf); Ok(()) }
//! ```
//!
//! and the array cannot be dropped (moved) while the object lives:
//!
//! ```compile_fail,E0505
//! # fn f(ctx: &cuda_driver::Context) -> cuda_driver::Result<()> {
//! use cuda_driver::{memory::Array, types::Array3DFlags, surface::SurfaceObject};
//! let arr = Array::<f32>::new_2d(ctx, 16, 16, Array3DFlags::SURFACE_LDST)?;
//! let surf = SurfaceObject::new(&arr)?;
//! drop(arr);
//! # drop(surf); Ok(()) }
//! ```
//!
//! It is a kernel argument (`cudaSurfaceObject_t`): pass `&surf`. Kernels write the array
//! through it although it is borrowed shared: launches are `unsafe`, and their caller
//! orders those writes against copies of the array.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem::{align_of, size_of};

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use crate::context::Context;
use crate::error::layout::LayoutError;
use crate::error::{Error, Result};
use crate::handle::{give_up, Handle, OwnedHandle};
use crate::launch::KernelArg;
use crate::memory::{ArrayElement, ArrayRef};
use crate::texture::ResourceDesc;

/// A surface object (`CUsurfObject`, `cudaSurfaceObject_t` in kernels), destroyed on drop,
/// borrowing its array for `'a`.
#[repr(C)]
#[doc(alias = "CUsurfObject")]
pub struct SurfaceObject<'a> {
    /// Kept first and by value: a kernel argument is a pointer to this field.
    raw: sys::CUsurfObject,
    ctx: Context,
    _resource: PhantomData<&'a ()>,
}

impl Drop for SurfaceObject<'_> {
    fn drop(&mut self) {
        let raw = self.raw;
        // SAFETY: created by cuSurfObjectCreate in `ctx`, owned by self, destroyed once.
        self.ctx.release("cuSurfObjectDestroy", move || unsafe {
            sys::cuSurfObjectDestroy(raw)
        });
    }
}

impl std::fmt::Debug for SurfaceObject<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SurfaceObject")
            .field("raw", &format_args!("{:#x}", self.raw))
            .finish()
    }
}

impl Handle for SurfaceObject<'_> {
    type Raw = sys::CUsurfObject;

    /// The raw handle.
    #[inline]
    fn as_raw(&self) -> sys::CUsurfObject {
        self.raw
    }
}

impl OwnedHandle for SurfaceObject<'_> {
    type Parent<'p> = &'p Context;

    /// Takes ownership of a surface object of `ctx`.
    ///
    /// # Safety
    /// `raw` is a live surface object of `ctx` whose array outlives `'a`, that nothing else
    /// destroys.
    unsafe fn from_raw(raw: sys::CUsurfObject, ctx: &Context) -> Self {
        SurfaceObject {
            raw,
            ctx: ctx.clone(),
            _resource: PhantomData,
        }
    }

    /// Gives up ownership; the caller destroys it with `cuSurfObjectDestroy`.
    fn into_raw(self) -> sys::CUsurfObject {
        give_up!(self, raw; drop(ctx); forget(_resource))
    }
}

impl<'a> SurfaceObject<'a> {
    /// A surface over `array`, which must have been created with `SURFACE_LDST`
    /// ([`LayoutError::MissingArrayFlag`] otherwise, before any driver call).
    #[wraps(cuSurfObjectCreate)]
    #[track_caller]
    pub fn new<T: ArrayElement>(array: impl Into<ArrayRef<'a, T>>) -> Result<Self> {
        Self::from_resource(&ResourceDesc::array(array))
    }

    /// A surface over a resource: an array created with `SURFACE_LDST` (the only resource
    /// surfaces take).
    #[wraps(cuSurfObjectCreate)]
    #[track_caller]
    pub fn from_resource(resource: &ResourceDesc<'a>) -> Result<Self> {
        if !resource.surface_ok {
            return Err(Error::Layout(LayoutError::MissingArrayFlag {
                what: "SurfaceObject::new",
                flag: "Array3DFlags::SURFACE_LDST",
            }));
        }
        let ctx = resource.context();
        let _cur = ctx.enter()?;
        let mut raw = 0;
        call!(
            // SAFETY: the descriptor names a live array borrowed for 'a, which the object
            // carries; writes one handle, owned by the value built next.
            unsafe { sys::cuSurfObjectCreate(&mut raw, resource.as_raw()) },
        )?;
        Ok(SurfaceObject {
            raw,
            ctx: ctx.clone(),
            _resource: PhantomData,
        })
    }

    /// The context.
    #[inline]
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// The resource descriptor, as the driver reports it.
    #[wraps(cuSurfObjectGetResourceDesc)]
    #[track_caller]
    pub fn resource_desc(&self) -> Result<sys::CUDA_RESOURCE_DESC> {
        let _cur = self.ctx.enter()?;
        // SAFETY: a plain C struct; all-zero is valid.
        let mut r: sys::CUDA_RESOURCE_DESC = unsafe { std::mem::zeroed() };
        call!(
            // SAFETY: the object is live; writes one struct.
            unsafe { sys::cuSurfObjectGetResourceDesc(&mut r, self.raw) },
        )?;
        Ok(r)
    }
}

// SAFETY: points to the `raw` field (a CUsurfObject, 8 initialised bytes) of the borrowed
// object; the driver only reads through it.
unsafe impl KernelArg for &SurfaceObject<'_> {
    const PARAM_SIZE: usize = size_of::<sys::CUsurfObject>();
    const PARAM_ALIGN: usize = align_of::<sys::CUsurfObject>();
    #[inline(always)]
    fn param_ptr(&self) -> *mut c_void {
        let p: *const sys::CUsurfObject = &self.raw;
        p.cast_mut().cast()
    }
}
