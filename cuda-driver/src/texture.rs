//! Texture Object Management: [`TextureObject`], read by kernels through the texture
//! hardware (filtering, address modes, normalised coordinates), over an array, a mipmapped
//! array, linear memory or pitched 2D memory ([`ResourceDesc`]), sampled as a
//! [`TextureDesc`] says, optionally reinterpreted by a [`ResourceViewDesc`].
//!
//! A texture object borrows its resource: the array (or memory) cannot be dropped, nor
//! written through `&mut`, while the object lives.
//!
//! ```compile_fail,E0597
//! # fn f(ctx: &cuda_driver::Context) -> cuda_driver::Result<()> {
//! use cuda_driver::{memory::Array, types::Array3DFlags, texture::ResourceDesc, texture::TextureDesc, texture::TextureObject};
//! let tex = {
//!     let arr = Array::<f32>::new_2d(ctx, 16, 16, Array3DFlags::empty())?;
//!     TextureObject::new(&ResourceDesc::array(&arr), &TextureDesc::new(), None)?
//! };
//! # drop(tex); Ok(()) }
//! ```
//!
//! nor written while a texture reads it:
//!
//! ```compile_fail,E0502
//! # fn f(ctx: &cuda_driver::Context) -> cuda_driver::Result<()> {
//! use cuda_driver::{memory::Array, types::Array3DFlags, texture::ResourceDesc, texture::TextureDesc, texture::TextureObject};
//! let mut arr = Array::<f32>::new_2d(ctx, 4, 4, Array3DFlags::empty())?;
//! let tex = TextureObject::new(&ResourceDesc::array(&arr), &TextureDesc::new(), None)?;
//! arr.copy_from_host(&[0.0; 16])?;
//! # drop(tex); Ok(()) }
//! ```
//!
//! It is a kernel argument (`cudaTextureObject_t`, a 64-bit handle): pass `&tex`.

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
use crate::memory::array::MipmappedArray;
use crate::memory::pitched::Pitched2DView;
use crate::memory::view::DeviceSlice;
use crate::memory::{ArrayElement, ArrayRef};

use crate::types::{AddressMode, FilterMode, ResourceViewFormat, Resourcetype, TextureFlags};

/// What a texture or surface object reads: an array, a mipmapped array, linear memory or
/// pitched 2D memory (`CUDA_RESOURCE_DESC`), borrowed for `'a`.
#[derive(Clone, Copy)]
#[doc(alias = "CUDA_RESOURCE_DESC")]
pub struct ResourceDesc<'a> {
    raw: sys::CUDA_RESOURCE_DESC,
    ctx: &'a Context,
    /// For surfaces: whether the resource is an array created with SURFACE_LDST.
    pub(crate) surface_ok: bool,
}

impl std::fmt::Debug for ResourceDesc<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceDesc")
            .field("type", &Resourcetype::from_raw(self.raw.resType))
            .finish()
    }
}

fn zeroed_resource() -> sys::CUDA_RESOURCE_DESC {
    // SAFETY: a plain C struct (a union of handles and integers); all-zero is valid and the
    // documented value of the unused fields and flags.
    unsafe { std::mem::zeroed() }
}

impl<'a> ResourceDesc<'a> {
    /// The array `array`: an `&Array`, or a view ([`ArrayRef`], a mipmap level or a plane).
    pub fn array<T: ArrayElement>(array: impl Into<ArrayRef<'a, T>>) -> Self {
        let array = array.into();
        let mut raw = zeroed_resource();
        raw.resType = sys::CU_RESOURCE_TYPE_ARRAY;
        raw.res.array.hArray = array.as_raw();
        ResourceDesc {
            raw,
            ctx: array.context(),
            surface_ok: array
                .desc()
                .flags
                .contains(crate::types::Array3DFlags::SURFACE_LDST),
        }
    }

    /// The mipmapped array `array` (sampled with a level of detail).
    pub fn mipmapped_array<T: ArrayElement>(array: &'a MipmappedArray<T>) -> Self {
        let mut raw = zeroed_resource();
        raw.resType = sys::CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
        raw.res.mipmap.hMipmappedArray = array.raw;
        ResourceDesc {
            raw,
            ctx: &array.ctx,
            surface_ok: false,
        }
    }

    /// Linear memory of `T` elements (`tex1Dfetch`); its address must be aligned to the
    /// device's `TEXTURE_ALIGNMENT` (allocations are), and an empty view is
    /// [`LayoutError::ZeroExtent`] when the object is created.
    pub fn linear<T: ArrayElement>(view: DeviceSlice<'a, T>) -> Self {
        let mut raw = zeroed_resource();
        raw.resType = sys::CU_RESOURCE_TYPE_LINEAR;
        raw.res.linear.devPtr = view.as_raw();
        raw.res.linear.format = T::FORMAT.as_raw();
        raw.res.linear.numChannels = T::CHANNELS;
        raw.res.linear.sizeInBytes = view.bytes();
        ResourceDesc {
            raw,
            ctx: view.context(),
            surface_ok: false,
        }
    }

    /// Pitched 2D memory of `T` elements; address and pitch must be aligned to the
    /// device's `TEXTURE_PITCH_ALIGNMENT` (a whole [`Pitched2D`](crate::memory::Pitched2D) is).
    pub fn pitch_2d<T: ArrayElement>(view: Pitched2DView<'a, T>) -> Self {
        let mut raw = zeroed_resource();
        raw.resType = sys::CU_RESOURCE_TYPE_PITCH2D;
        raw.res.pitch2D.devPtr = view.ptr;
        raw.res.pitch2D.format = T::FORMAT.as_raw();
        raw.res.pitch2D.numChannels = T::CHANNELS;
        raw.res.pitch2D.width = view.width;
        raw.res.pitch2D.height = view.height;
        raw.res.pitch2D.pitchInBytes = view.pitch;
        ResourceDesc {
            raw,
            ctx: view.ctx,
            surface_ok: false,
        }
    }

    /// The resource's kind.
    pub fn resource_type(&self) -> Resourcetype {
        Resourcetype::from_raw(self.raw.resType)
    }

    /// The raw descriptor.
    pub fn as_raw(&self) -> &sys::CUDA_RESOURCE_DESC {
        &self.raw
    }

    /// The context of the resource.
    pub fn context(&self) -> &'a Context {
        self.ctx
    }

    /// Refuses empty linear and pitched resources before the driver.
    pub(crate) fn check_extent(&self, what: &'static str) -> Result<()> {
        let zero = |axis| Err(Error::Layout(LayoutError::ZeroExtent { what, axis }));
        match self.raw.resType {
            // SAFETY: the union member of the type set by the constructor.
            sys::CU_RESOURCE_TYPE_LINEAR if unsafe { self.raw.res.linear.sizeInBytes } == 0 => {
                zero("size of the linear memory")
            }
            sys::CU_RESOURCE_TYPE_PITCH2D => {
                // SAFETY: as above.
                let p = unsafe { self.raw.res.pitch2D };
                if p.width == 0 {
                    zero("width")
                } else if p.height == 0 {
                    zero("height")
                } else {
                    Ok(())
                }
            }
            _ => Ok(()),
        }
    }
}

/// How a texture is sampled (`CUDA_TEXTURE_DESC`): address mode per dimension, filtering,
/// read mode, coordinates, sRGB, border colour, mipmap filtering and clamps, anisotropy,
/// cubemap seams. [`new`](Self::new) is the driver's all-zero default: wrap, point
/// filtering, element-type reads, unnormalised coordinates.
#[derive(Clone, Copy)]
#[doc(alias = "CUDA_TEXTURE_DESC")]
pub struct TextureDesc(sys::CUDA_TEXTURE_DESC);

impl Default for TextureDesc {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for TextureDesc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextureDesc")
            .field("address_modes", &self.address_modes_of())
            .field("filter", &self.filter_of())
            .field("flags", &self.flags())
            .field("max_anisotropy", &self.0.maxAnisotropy)
            .field(
                "mipmap_filter",
                &FilterMode::from_raw(self.0.mipmapFilterMode),
            )
            .field("mipmap_level_bias", &self.0.mipmapLevelBias)
            .field(
                "mipmap_level_clamp",
                &(self.0.minMipmapLevelClamp, self.0.maxMipmapLevelClamp),
            )
            .field("border_color", &self.0.borderColor)
            .finish()
    }
}

impl TextureDesc {
    /// The driver's defaults (all fields zero).
    pub fn new() -> Self {
        // SAFETY: a plain C struct of integers and floats; all-zero is valid.
        TextureDesc(unsafe { std::mem::zeroed() })
    }

    /// The same address mode for every dimension.
    pub fn address_mode(mut self, mode: AddressMode) -> Self {
        self.0.addressMode = [mode.as_raw(); 3];
        self
    }

    /// The address mode of each dimension (x, y, z).
    pub fn address_modes(mut self, modes: [AddressMode; 3]) -> Self {
        self.0.addressMode = modes.map(AddressMode::as_raw);
        self
    }

    /// Point or linear filtering.
    pub fn filter(mut self, mode: FilterMode) -> Self {
        self.0.filterMode = mode.as_raw();
        self
    }

    /// Sets or clears flags.
    fn flag(mut self, flag: TextureFlags, on: bool) -> Self {
        let mut f = TextureFlags::from_raw(self.0.flags);
        f.set(flag, on);
        self.0.flags = f.as_raw();
        self
    }

    /// Read integers as integers (`CU_TRSF_READ_AS_INTEGER`) instead of promoting 8 and
    /// 16-bit integers to normalised floats.
    pub fn read_as_integer(self, on: bool) -> Self {
        self.flag(TextureFlags::READ_AS_INTEGER, on)
    }

    /// Coordinates in [0, 1) instead of [0, size) (`CU_TRSF_NORMALIZED_COORDINATES`).
    pub fn normalized_coords(self, on: bool) -> Self {
        self.flag(TextureFlags::NORMALIZED_COORDINATES, on)
    }

    /// sRGB to linear conversion on reads (`CU_TRSF_SRGB`).
    pub fn srgb(self, on: bool) -> Self {
        self.flag(TextureFlags::SRGB, on)
    }

    /// Seamless cubemap filtering (`CU_TRSF_SEAMLESS_CUBEMAP`).
    pub fn seamless_cubemap(self, on: bool) -> Self {
        self.flag(TextureFlags::SEAMLESS_CUBEMAP, on)
    }

    /// Turns off the trilinear filtering optimisation
    /// (`CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION`).
    pub fn disable_trilinear_optimization(self, on: bool) -> Self {
        self.flag(TextureFlags::DISABLE_TRILINEAR_OPTIMIZATION, on)
    }

    /// All flags at once.
    pub fn flags_raw(mut self, flags: TextureFlags) -> Self {
        self.0.flags = flags.as_raw();
        self
    }

    /// The colour read outside the texture with [`AddressMode::BORDER`].
    pub fn border_color(mut self, rgba: [f32; 4]) -> Self {
        self.0.borderColor = rgba;
        self
    }

    /// Filtering between mipmap levels.
    pub fn mipmap_filter(mut self, mode: FilterMode) -> Self {
        self.0.mipmapFilterMode = mode.as_raw();
        self
    }

    /// Bias added to the level of detail.
    pub fn mipmap_level_bias(mut self, bias: f32) -> Self {
        self.0.mipmapLevelBias = bias;
        self
    }

    /// Clamps of the level of detail.
    pub fn mipmap_level_clamp(mut self, min: f32, max: f32) -> Self {
        self.0.minMipmapLevelClamp = min;
        self.0.maxMipmapLevelClamp = max;
        self
    }

    /// Maximum anisotropy (1 to 16).
    pub fn max_anisotropy(mut self, n: u32) -> Self {
        self.0.maxAnisotropy = n;
        self
    }

    /// The address modes of x, y, z.
    pub fn address_modes_of(&self) -> [AddressMode; 3] {
        self.0.addressMode.map(AddressMode::from_raw)
    }

    /// The filter mode.
    pub fn filter_mode(&self) -> FilterMode {
        self.filter_of()
    }

    fn filter_of(&self) -> FilterMode {
        FilterMode::from_raw(self.0.filterMode)
    }

    /// The flags.
    pub fn flags(&self) -> TextureFlags {
        TextureFlags::from_raw(self.0.flags)
    }

    /// The border colour.
    pub fn border_color_of(&self) -> [f32; 4] {
        self.0.borderColor
    }

    /// From the raw descriptor.
    pub fn from_raw(raw: sys::CUDA_TEXTURE_DESC) -> Self {
        TextureDesc(raw)
    }

    /// The raw descriptor.
    pub fn as_raw(&self) -> &sys::CUDA_TEXTURE_DESC {
        &self.0
    }
}

/// Reinterprets a texture's resource (`CUDA_RESOURCE_VIEW_DESC`): another format (block
/// compressed data as integers, ...), a range of mipmap levels or layers.
#[derive(Clone, Copy)]
#[doc(alias = "CUDA_RESOURCE_VIEW_DESC")]
pub struct ResourceViewDesc(sys::CUDA_RESOURCE_VIEW_DESC);

impl std::fmt::Debug for ResourceViewDesc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let r = &self.0;
        f.debug_struct("ResourceViewDesc")
            .field("format", &ResourceViewFormat::from_raw(r.format))
            .field("extent", &(r.width, r.height, r.depth))
            .field("levels", &(r.firstMipmapLevel, r.lastMipmapLevel))
            .field("layers", &(r.firstLayer, r.lastLayer))
            .finish()
    }
}

impl ResourceViewDesc {
    /// A view of `width × height × depth` elements of `format`.
    pub fn new(format: ResourceViewFormat, width: usize, height: usize, depth: usize) -> Self {
        // SAFETY: a plain C struct of integers; all-zero is valid.
        let mut r: sys::CUDA_RESOURCE_VIEW_DESC = unsafe { std::mem::zeroed() };
        r.format = format.as_raw();
        r.width = width;
        r.height = height;
        r.depth = depth;
        ResourceViewDesc(r)
    }

    /// The mipmap levels `first..=last` only.
    pub fn mipmap_levels(mut self, first: u32, last: u32) -> Self {
        self.0.firstMipmapLevel = first;
        self.0.lastMipmapLevel = last;
        self
    }

    /// The layers `first..=last` only.
    pub fn layers(mut self, first: u32, last: u32) -> Self {
        self.0.firstLayer = first;
        self.0.lastLayer = last;
        self
    }

    /// The format.
    pub fn format(&self) -> ResourceViewFormat {
        ResourceViewFormat::from_raw(self.0.format)
    }

    /// From the raw descriptor.
    pub fn from_raw(raw: sys::CUDA_RESOURCE_VIEW_DESC) -> Self {
        ResourceViewDesc(raw)
    }

    /// The raw descriptor.
    pub fn as_raw(&self) -> &sys::CUDA_RESOURCE_VIEW_DESC {
        &self.0
    }
}

/// A texture object (`CUtexObject`, `cudaTextureObject_t` in kernels), destroyed on drop,
/// borrowing its resource for `'a`. A kernel argument: pass `&tex`.
#[repr(C)]
#[doc(alias = "CUtexObject")]
pub struct TextureObject<'a> {
    /// Kept first and by value: a kernel argument is a pointer to this field.
    raw: sys::CUtexObject,
    ctx: Context,
    _resource: PhantomData<&'a ()>,
}

impl Drop for TextureObject<'_> {
    fn drop(&mut self) {
        let raw = self.raw;
        // SAFETY: created by cuTexObjectCreate in `ctx`, owned by self, destroyed once.
        self.ctx.release("cuTexObjectDestroy", move || unsafe {
            sys::cuTexObjectDestroy(raw)
        });
    }
}

impl std::fmt::Debug for TextureObject<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextureObject")
            .field("raw", &format_args!("{:#x}", self.raw))
            .finish()
    }
}

impl Handle for TextureObject<'_> {
    type Raw = sys::CUtexObject;

    /// The raw handle.
    #[inline]
    fn as_raw(&self) -> sys::CUtexObject {
        self.raw
    }
}

impl OwnedHandle for TextureObject<'_> {
    type Parent<'p> = &'p Context;

    /// Takes ownership of a texture object of `ctx`.
    ///
    /// # Safety
    /// `raw` is a live texture object of `ctx` whose resource outlives `'a`, that nothing
    /// else destroys.
    unsafe fn from_raw(raw: sys::CUtexObject, ctx: &Context) -> Self {
        TextureObject {
            raw,
            ctx: ctx.clone(),
            _resource: PhantomData,
        }
    }

    /// Gives up ownership; the caller destroys it with `cuTexObjectDestroy`.
    fn into_raw(self) -> sys::CUtexObject {
        give_up!(self, raw; drop(ctx); forget(_resource))
    }
}

impl<'a> TextureObject<'a> {
    /// Creates a texture object reading `resource` as `desc` says, through `view` if given.
    #[wraps(cuTexObjectCreate)]
    #[track_caller]
    pub fn new(
        resource: &ResourceDesc<'a>,
        desc: &TextureDesc,
        view: Option<&ResourceViewDesc>,
    ) -> Result<Self> {
        resource.check_extent("TextureObject::new")?;
        let ctx = resource.ctx;
        let _cur = ctx.enter()?;
        let mut raw = 0;
        let view_ptr = view.map_or(std::ptr::null(), |v| &v.0 as *const _);
        call!(
            // SAFETY: the descriptors are valid for reads for the call; the resource is
            // borrowed for 'a, which the object carries; writes one handle, owned by the
            // value built next.
            unsafe { sys::cuTexObjectCreate(&mut raw, &resource.raw, &desc.0, view_ptr) },
        )?;
        Ok(TextureObject {
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
    #[wraps(cuTexObjectGetResourceDesc)]
    #[track_caller]
    pub fn resource_desc(&self) -> Result<sys::CUDA_RESOURCE_DESC> {
        let _cur = self.ctx.enter()?;
        let mut r = zeroed_resource();
        call!(
            // SAFETY: the object is live; writes one struct.
            unsafe { sys::cuTexObjectGetResourceDesc(&mut r, self.raw) },
        )?;
        Ok(r)
    }

    /// The texture descriptor, as the driver reports it.
    #[wraps(cuTexObjectGetTextureDesc)]
    #[track_caller]
    pub fn texture_desc(&self) -> Result<TextureDesc> {
        let _cur = self.ctx.enter()?;
        let mut d = TextureDesc::new();
        call!(
            // SAFETY: the object is live; writes one struct.
            unsafe { sys::cuTexObjectGetTextureDesc(&mut d.0, self.raw) },
        )?;
        Ok(d)
    }

    /// The resource view descriptor, as the driver reports it.
    #[wraps(cuTexObjectGetResourceViewDesc)]
    #[track_caller]
    pub fn resource_view_desc(&self) -> Result<ResourceViewDesc> {
        let _cur = self.ctx.enter()?;
        let mut v = ResourceViewDesc::new(ResourceViewFormat::NONE, 0, 0, 0);
        call!(
            // SAFETY: the object is live; writes one struct.
            unsafe { sys::cuTexObjectGetResourceViewDesc(&mut v.0, self.raw) },
        )?;
        Ok(v)
    }
}

// SAFETY: points to the `raw` field (a CUtexObject, 8 initialised bytes) of the borrowed
// object; the driver only reads through it.
unsafe impl KernelArg for &TextureObject<'_> {
    const PARAM_SIZE: usize = size_of::<sys::CUtexObject>();
    const PARAM_ALIGN: usize = align_of::<sys::CUtexObject>();
    #[inline(always)]
    fn param_ptr(&self) -> *mut c_void {
        let p: *const sys::CUtexObject = &self.raw;
        p.cast_mut().cast()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texture_desc_sets_every_field() {
        let d = TextureDesc::new()
            .address_modes([AddressMode::CLAMP, AddressMode::MIRROR, AddressMode::BORDER])
            .filter(FilterMode::LINEAR)
            .normalized_coords(true)
            .read_as_integer(true)
            .srgb(true)
            .seamless_cubemap(true)
            .disable_trilinear_optimization(true)
            .border_color([1.0, 2.0, 3.0, 4.0])
            .mipmap_filter(FilterMode::LINEAR)
            .mipmap_level_bias(0.5)
            .mipmap_level_clamp(1.0, 3.0)
            .max_anisotropy(8);
        let r = d.as_raw();
        assert_eq!(
            r.addressMode,
            [
                sys::CU_TR_ADDRESS_MODE_CLAMP,
                sys::CU_TR_ADDRESS_MODE_MIRROR,
                sys::CU_TR_ADDRESS_MODE_BORDER
            ]
        );
        assert_eq!(r.filterMode, sys::CU_TR_FILTER_MODE_LINEAR);
        assert_eq!(
            r.flags,
            sys::CU_TRSF_NORMALIZED_COORDINATES
                | sys::CU_TRSF_READ_AS_INTEGER
                | sys::CU_TRSF_SRGB
                | sys::CU_TRSF_SEAMLESS_CUBEMAP
                | sys::CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION
        );
        assert_eq!(r.borderColor, [1.0, 2.0, 3.0, 4.0]);
        assert_eq!(r.mipmapFilterMode, sys::CU_TR_FILTER_MODE_LINEAR);
        assert_eq!(
            (
                r.mipmapLevelBias,
                r.minMipmapLevelClamp,
                r.maxMipmapLevelClamp
            ),
            (0.5, 1.0, 3.0)
        );
        assert_eq!(r.maxAnisotropy, 8);
        let d = d.normalized_coords(false).address_mode(AddressMode::WRAP);
        assert!(!d.flags().contains(TextureFlags::NORMALIZED_COORDINATES));
        assert_eq!(d.address_modes_of(), [AddressMode::WRAP; 3]);
        assert_eq!(d.filter_mode(), FilterMode::LINEAR);
        assert!(format!("{d:?}").contains("TextureDesc"));
    }

    #[test]
    fn view_desc_sets_levels_and_layers() {
        let v = ResourceViewDesc::new(ResourceViewFormat::FLOAT_1X32, 4, 5, 6)
            .mipmap_levels(1, 2)
            .layers(3, 4);
        let r = v.as_raw();
        assert_eq!((r.width, r.height, r.depth), (4, 5, 6));
        assert_eq!(
            (
                r.firstMipmapLevel,
                r.lastMipmapLevel,
                r.firstLayer,
                r.lastLayer
            ),
            (1, 2, 3, 4)
        );
        assert_eq!(v.format(), ResourceViewFormat::FLOAT_1X32);
    }

    #[test]
    fn a_texture_is_one_handle_argument() {
        assert_eq!(<&TextureObject<'_> as KernelArg>::PARAM_SIZE, 8);
        assert_eq!(<&TextureObject<'_> as KernelArg>::PARAM_ALIGN, 8);
    }
}
