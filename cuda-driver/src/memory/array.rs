//! CUDA arrays: [`Array`] (1D, 2D, 3D, layered, cubemap and cubemap-layered), its borrowed
//! forms [`ArrayRef`] / [`ArrayRefMut`] (its views, mipmap levels, planes: their own types,
//! never an owned `Array`), and [`MipmappedArray`].
//!
//! An array is opaque device memory laid out for the texture hardware: it is not linear
//! memory and has no device address, so it is an owner of its own kind, not a
//! [`DeviceMemory`](crate::DeviceMemory). Its data moves through the 2D and 3D copies
//! ([`Copy2D`](crate::memory::Copy2D), [`Copy3D`](crate::memory::Copy3D)) and is read by kernels through
//! texture objects and read and written through surface objects.
//!
//! The element type is typed: an [`ArrayElement`] names the array format and channel count
//! (`f32` is one `CU_AD_FORMAT_FLOAT` channel, [`Float4`](crate::vector::Float4) four). For the
//! formats no Rust type describes (block-compressed, NV12 and the other video formats),
//! implement [`ArrayElement`] for a `#[repr(C)]` type of the right size and build the array
//! with [`Array::with_descriptor`]; the Rust-side bounds checks of copies then leave the
//! extents to the driver.

use std::marker::PhantomData;
use std::mem::size_of;
use std::ptr;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use crate::context::Context;
use crate::device::Device;
use crate::error::layout::LayoutError;
use crate::error::{Error, Result};
use crate::handle::{give_up, Handle, OwnedHandle};
use crate::repr::DeviceRepr;

use crate::types::{Array3DFlags, ArrayFormat, ArraySparsePropertiesFlags};

/// An element type of CUDA arrays, textures and surfaces: an array format and a channel
/// count (`CUDA_ARRAY3D_DESCRIPTOR::Format` and `NumChannels`).
///
/// Implemented for `u8`, `i8`, `u16`, `i16`, `u32`, `i32`, `f32` and [`half::f16`] (one
/// channel), for their two- and four-channel forms as this crate's vector types
/// ([`Uchar2`](crate::vector::Uchar2), [`Float4`](crate::vector::Float4), ...) and as arrays (`[u8; 4]`,
/// `[half::f16; 2]`, ...).
///
/// ```
/// use cuda_driver::{memory::ArrayElement, types::ArrayFormat, vector::Float4};
/// assert_eq!(<Float4 as ArrayElement>::FORMAT, ArrayFormat::FLOAT);
/// assert_eq!(<Float4 as ArrayElement>::CHANNELS, 4);
/// assert_eq!(<[u8; 2] as ArrayElement>::CHANNELS, 2);
/// ```
///
/// # Safety
/// `size_of::<Self>()` is the size of one element of an array of `FORMAT` with `CHANNELS`
/// channels as the driver stores it (for the block-compressed formats, one block), so that
/// copies of `n` elements move `n * size_of::<Self>()` bytes.
pub unsafe trait ArrayElement: DeviceRepr {
    /// The array format of each channel.
    const FORMAT: ArrayFormat;
    /// The number of channels: 1, 2 or 4.
    const CHANNELS: u32;
}

macro_rules! array_element {
    ($fmt:ident, $one:ty, $two:ty, $four:ty) => {
        // SAFETY: one channel of the format is the scalar type itself.
        unsafe impl ArrayElement for $one {
            const FORMAT: ArrayFormat = ArrayFormat::$fmt;
            const CHANNELS: u32 = 1;
        }
        // SAFETY: two channels, packed as the driver stores them.
        unsafe impl ArrayElement for [$one; 2] {
            const FORMAT: ArrayFormat = ArrayFormat::$fmt;
            const CHANNELS: u32 = 2;
        }
        // SAFETY: four channels, packed as the driver stores them.
        unsafe impl ArrayElement for [$one; 4] {
            const FORMAT: ArrayFormat = ArrayFormat::$fmt;
            const CHANNELS: u32 = 4;
        }
        // SAFETY: the vector type is two scalars (its size is twice theirs, no padding).
        unsafe impl ArrayElement for $two {
            const FORMAT: ArrayFormat = ArrayFormat::$fmt;
            const CHANNELS: u32 = 2;
        }
        // SAFETY: the vector type is four scalars (its size is four times theirs).
        unsafe impl ArrayElement for $four {
            const FORMAT: ArrayFormat = ArrayFormat::$fmt;
            const CHANNELS: u32 = 4;
        }
    };
}

array_element!(
    UNSIGNED_INT8,
    u8,
    crate::vector::Uchar2,
    crate::vector::Uchar4
);
array_element!(SIGNED_INT8, i8, crate::vector::Char2, crate::vector::Char4);
array_element!(
    UNSIGNED_INT16,
    u16,
    crate::vector::Ushort2,
    crate::vector::Ushort4
);
array_element!(
    SIGNED_INT16,
    i16,
    crate::vector::Short2,
    crate::vector::Short4
);
array_element!(
    UNSIGNED_INT32,
    u32,
    crate::vector::Uint2,
    crate::vector::Uint4
);
array_element!(SIGNED_INT32, i32, crate::vector::Int2, crate::vector::Int4);
array_element!(FLOAT, f32, crate::vector::Float2, crate::vector::Float4);

// SAFETY: one 16-bit float channel.
unsafe impl ArrayElement for half::f16 {
    const FORMAT: ArrayFormat = ArrayFormat::HALF;
    const CHANNELS: u32 = 1;
}
// SAFETY: two 16-bit float channels, packed.
unsafe impl ArrayElement for [half::f16; 2] {
    const FORMAT: ArrayFormat = ArrayFormat::HALF;
    const CHANNELS: u32 = 2;
}
// SAFETY: four 16-bit float channels, packed.
unsafe impl ArrayElement for [half::f16; 4] {
    const FORMAT: ArrayFormat = ArrayFormat::HALF;
    const CHANNELS: u32 = 4;
}

/// Bytes per channel of the plain formats (8, 16 and 32-bit integers, half and float);
/// `None` for the others (normalised, block-compressed, video), whose element size the
/// crate does not check.
pub(crate) const fn channel_bytes(format: ArrayFormat) -> Option<usize> {
    match format.0 {
        sys::CU_AD_FORMAT_UNSIGNED_INT8 | sys::CU_AD_FORMAT_SIGNED_INT8 => Some(1),
        sys::CU_AD_FORMAT_UNSIGNED_INT16
        | sys::CU_AD_FORMAT_SIGNED_INT16
        | sys::CU_AD_FORMAT_HALF => Some(2),
        sys::CU_AD_FORMAT_UNSIGNED_INT32
        | sys::CU_AD_FORMAT_SIGNED_INT32
        | sys::CU_AD_FORMAT_FLOAT => Some(4),
        _ => None,
    }
}

/// The shape, element format and flags of an array (`CUDA_ARRAY3D_DESCRIPTOR`).
///
/// `height == 0` is a 1D array, `depth == 0` a 2D one; with [`Array3DFlags::LAYERED`],
/// `depth` counts layers; with [`Array3DFlags::CUBEMAP`], `width == height` and `depth` is 6
/// (or 6 × the number of cubemaps, layered).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[doc(alias = "CUDA_ARRAY3D_DESCRIPTOR")]
pub struct ArrayDescriptor {
    /// Width in elements.
    pub width: usize,
    /// Height in elements (0: a 1D array).
    pub height: usize,
    /// Depth in elements, or number of layers (0: a 1D or 2D array).
    pub depth: usize,
    /// Format of each channel.
    pub format: ArrayFormat,
    /// Channels per element: 1, 2 or 4 (3 for NV12 and the other multi-planar video
    /// formats, which the driver checks).
    pub channels: u32,
    /// Layered, cubemap, surface load/store, texture gather, sparse, deferred mapping, ...
    pub flags: Array3DFlags,
}

impl ArrayDescriptor {
    /// The descriptor of a raw array, as the driver reports it: what
    /// [`Array::from_raw`](crate::handle::OwnedHandle::from_raw) and
    /// [`ArrayRef::borrow_raw`] take for an array of unknown shape.
    ///
    /// # Safety
    /// `raw` is a live array of `ctx`.
    #[wraps(cuArray3DGetDescriptor)]
    #[track_caller]
    pub unsafe fn query(raw: sys::CUarray, ctx: &Context) -> Result<ArrayDescriptor> {
        query_descriptor(raw, ctx)
    }

    /// A descriptor of `T` elements.
    pub fn of<T: ArrayElement>(
        width: usize,
        height: usize,
        depth: usize,
        flags: Array3DFlags,
    ) -> ArrayDescriptor {
        ArrayDescriptor {
            width,
            height,
            depth,
            format: T::FORMAT,
            channels: T::CHANNELS,
            flags,
        }
    }

    /// The raw descriptor.
    pub fn as_raw(&self) -> sys::CUDA_ARRAY3D_DESCRIPTOR {
        sys::CUDA_ARRAY3D_DESCRIPTOR {
            Width: self.width,
            Height: self.height,
            Depth: self.depth,
            Format: self.format.0,
            NumChannels: self.channels,
            Flags: self.flags.as_raw(),
        }
    }

    /// A descriptor from its raw form.
    pub fn from_raw(raw: &sys::CUDA_ARRAY3D_DESCRIPTOR) -> ArrayDescriptor {
        ArrayDescriptor {
            width: raw.Width,
            height: raw.Height,
            depth: raw.Depth,
            format: ArrayFormat(raw.Format),
            channels: raw.NumChannels,
            flags: Array3DFlags::from_raw(raw.Flags),
        }
    }

    /// `(width, height, depth)` with the unused dimensions as 1: the extent copies address.
    pub fn extent(&self) -> [usize; 3] {
        [self.width, self.height.max(1), self.depth.max(1)]
    }

    /// Checks the shape before any driver call: no zero width, a cubemap square with a
    /// multiple of 6 faces, and `T` of the format's size for the plain formats.
    pub(crate) fn validate<T: ArrayElement>(&self, what: &'static str) -> Result<()> {
        if self.width == 0 {
            return Err(Error::Layout(LayoutError::ZeroExtent {
                what,
                axis: "width",
            }));
        }
        let layered = self.flags.contains(Array3DFlags::LAYERED);
        if self.depth > 0 && self.height == 0 && !layered {
            return Err(Error::Layout(LayoutError::ZeroExtent {
                what,
                axis: "height (a 3D array needs one)",
            }));
        }
        if self.flags.contains(Array3DFlags::CUBEMAP) {
            if self.width != self.height {
                return Err(Error::InvalidArgument(format!(
                    "{what}: a cubemap's faces are square, but width {} != height {}",
                    self.width, self.height
                )));
            }
            if self.depth == 0 || self.depth % 6 != 0 || (!layered && self.depth != 6) {
                return Err(Error::InvalidArgument(format!(
                    "{what}: a cubemap has 6 faces (a layered one a multiple of 6), not {}",
                    self.depth
                )));
            }
        } else if layered && self.depth == 0 {
            return Err(Error::Layout(LayoutError::ZeroExtent {
                what,
                axis: "number of layers",
            }));
        }
        // The plain formats have 1, 2 or 4 channels; the others are the driver's to check
        // (NV12 and the other video formats are created with 3).
        if channel_bytes(self.format).is_some() && !matches!(self.channels, 1 | 2 | 4) {
            return Err(Error::InvalidArgument(format!(
                "{what}: an array element has 1, 2 or 4 channels, not {}",
                self.channels
            )));
        }
        check_element::<T>(what, self.format, self.channels)
    }

    /// Whether the crate knows the element size of this format (plain formats), so that it
    /// can check copy extents against the array.
    pub(crate) fn checked_extent(&self) -> Option<[usize; 3]> {
        channel_bytes(self.format).map(|_| self.extent())
    }
}

/// `Ok` when `T` has the size of an element of `format` with `channels` channels, or the
/// format is one whose element size the crate does not know.
pub(crate) fn check_element<T: ArrayElement>(
    what: &'static str,
    format: ArrayFormat,
    channels: u32,
) -> Result<()> {
    match channel_bytes(format) {
        Some(b) if b * channels as usize != size_of::<T>() => {
            Err(Error::Layout(LayoutError::ElementFormat {
                what,
                elem: std::any::type_name::<T>(),
                size: size_of::<T>(),
                format: format!("{format:?} x {channels}"),
            }))
        }
        _ => Ok(()),
    }
}

/// A sparse array's tile shape and mip tail (`CUDA_ARRAY_SPARSE_PROPERTIES`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[doc(alias = "CUDA_ARRAY_SPARSE_PROPERTIES")]
pub struct ArraySparseProperties {
    /// Width, height and depth of one sparse tile, in elements.
    pub tile_extent: [u32; 3],
    /// First mip level of the mip tail.
    pub miptail_first_level: u32,
    /// Bytes of the mip tail (per layer, unless [`ArraySparsePropertiesFlags::SINGLE_MIPTAIL`]).
    pub miptail_size: u64,
    /// Flags.
    pub flags: ArraySparsePropertiesFlags,
}

impl ArraySparseProperties {
    fn from_raw(raw: &sys::CUDA_ARRAY_SPARSE_PROPERTIES) -> Self {
        ArraySparseProperties {
            tile_extent: [
                raw.tileExtent.width,
                raw.tileExtent.height,
                raw.tileExtent.depth,
            ],
            miptail_first_level: raw.miptailFirstLevel,
            miptail_size: raw.miptailSize,
            flags: ArraySparsePropertiesFlags::from_raw(raw.flags),
        }
    }
}

/// The memory a deferred-mapping array needs (`CUDA_ARRAY_MEMORY_REQUIREMENTS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[doc(alias = "CUDA_ARRAY_MEMORY_REQUIREMENTS")]
pub struct ArrayMemoryRequirements {
    /// Bytes.
    pub size: usize,
    /// Alignment in bytes.
    pub alignment: usize,
}

/// A CUDA array of `T` elements (`CUarray`), destroyed on drop in its context.
///
/// Its operations are written once, on the borrowed forms it hands out: [`view`](Self::view)
/// ([`ArrayRef`], shared) and [`view_mut`](Self::view_mut) ([`ArrayRefMut`], exclusive), the
/// same types as a mipmap level's or a plane's; the methods of `Array` go through them.
///
/// ```no_run
/// use cuda_driver::{memory::Array, types::Array3DFlags, Device};
///
/// let ctx = Device::get(0)?.primary_context()?;
/// let mut img = Array::<f32>::new_2d(&ctx, 64, 32, Array3DFlags::empty())?;
/// let data: Vec<f32> = (0..64 * 32).map(|i| i as f32).collect();
/// img.copy_from_host(&data)?;
/// let mut back = vec![0.0f32; data.len()];
/// img.copy_to_host(&mut back)?;
/// assert_eq!(back, data);
/// # Ok::<(), cuda_driver::Error>(())
/// ```
#[doc(alias = "CUarray")]
pub struct Array<T: ArrayElement> {
    pub(crate) raw: sys::CUarray,
    pub(crate) desc: ArrayDescriptor,
    pub(crate) ctx: Context,
    pub(crate) _marker: PhantomData<T>,
}

// SAFETY: a CUarray may be used and destroyed from any thread; T is plain data.
unsafe impl<T: ArrayElement> Send for Array<T> {}
// SAFETY: shared access only reads the array through the driver.
unsafe impl<T: ArrayElement> Sync for Array<T> {}

impl<T: ArrayElement> Drop for Array<T> {
    fn drop(&mut self) {
        let raw = crate::release::SendRaw(self.raw);
        // SAFETY: the array was created by cuArray3DCreate in `ctx`, is owned by self and
        // destroyed once, here (levels and planes, which other objects own, are never an
        // `Array`, only an `ArrayRef`/`ArrayRefMut`); texture and surface objects borrowing
        // it are gone (they borrow it), and cuArrayDestroy waits for device work still using
        // it (GPU test release::cu_array_destroy_waits_for_a_copy_queued_on_another_stream).
        self.ctx.release("cuArrayDestroy", move || unsafe {
            sys::cuArrayDestroy(raw.get())
        });
    }
}

impl<T: ArrayElement> std::fmt::Debug for Array<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Array")
            .field("raw", &self.raw)
            .field("desc", &self.desc)
            .field("type", &std::any::type_name::<T>())
            .finish()
    }
}

/// The read operations of [`ArrayRef`] on the types that hand one out through the method
/// `$view` ([`Array::view`], [`ArrayRefMut::as_view`]): written once, on `ArrayRef`.
macro_rules! array_reads {
    ($view:ident) => {
        /// The array's descriptor as the driver reports it; see [`ArrayRef::descriptor`].
        #[wraps(cuArray3DGetDescriptor)]
        #[track_caller]
        #[inline]
        pub fn descriptor(&self) -> Result<ArrayDescriptor> {
            self.$view().descriptor()
        }

        /// The array's 2D descriptor as the driver reports it; see
        /// [`ArrayRef::descriptor_2d`].
        #[wraps(cuArrayGetDescriptor)]
        #[track_caller]
        #[inline]
        pub fn descriptor_2d(&self) -> Result<ArrayDescriptor> {
            self.$view().descriptor_2d()
        }

        /// The tile shape and mip tail of a sparse array; see
        /// [`ArrayRef::sparse_properties`].
        #[wraps(cuArrayGetSparseProperties)]
        #[track_caller]
        #[inline]
        pub fn sparse_properties(&self) -> Result<ArraySparseProperties> {
            self.$view().sparse_properties()
        }

        /// The memory a deferred-mapping array needs on `device`; see
        /// [`ArrayRef::memory_requirements`].
        #[wraps(cuArrayGetMemoryRequirements)]
        #[track_caller]
        #[inline]
        pub fn memory_requirements(&self, device: Device) -> Result<ArrayMemoryRequirements> {
            self.$view().memory_requirements(device)
        }

        /// Plane `index` of a multi-planar array, borrowed; see [`ArrayRef::plane`].
        #[wraps(cuArrayGetPlane)]
        #[track_caller]
        #[inline]
        pub fn plane<P: ArrayElement>(&self, index: u32) -> Result<ArrayRef<'_, P>> {
            self.$view().plane(index)
        }

        /// Copies the whole array into `dst`; see [`ArrayRef::copy_to_host`].
        #[wraps(cuMemcpy3D)]
        #[track_caller]
        #[inline]
        pub fn copy_to_host(&self, dst: &mut [T]) -> Result<()> {
            self.$view().copy_to_host(dst)
        }

        /// Copies elements of this 1D array into `dst`; see [`ArrayRef::read_1d`].
        #[wraps(cuMemcpyAtoH)]
        #[track_caller]
        #[inline]
        pub fn read_1d(&self, offset: usize, dst: &mut [T]) -> Result<()> {
            self.$view().read_1d(offset, dst)
        }

        /// Queues a copy of elements of this 1D array into `dst`; see
        /// [`ArrayRef::read_1d_async`].
        ///
        /// # Safety
        /// As for [`ArrayRef::read_1d_async`].
        #[wraps(cuMemcpyAtoHAsync)]
        #[track_caller]
        #[inline]
        pub unsafe fn read_1d_async(
            &self,
            offset: usize,
            dst: &mut [T],
            stream: &crate::stream::Stream,
        ) -> Result<()> {
            // SAFETY: the caller's guarantees, forwarded.
            unsafe { self.$view().read_1d_async(offset, dst, stream) }
        }

        /// Copies elements of this 1D array into device memory; see
        /// [`ArrayRef::copy_1d_to_device`].
        #[wraps(cuMemcpyAtoD)]
        #[track_caller]
        #[inline]
        pub fn copy_1d_to_device(
            &self,
            offset: usize,
            dst: &mut crate::memory::DeviceSliceMut<'_, T>,
        ) -> Result<()> {
            self.$view().copy_1d_to_device(offset, dst)
        }
    };
}

pub(crate) mod view;

pub use view::{ArrayRef, ArrayRefMut};

impl<T: ArrayElement> Handle for Array<T> {
    type Raw = sys::CUarray;

    /// The raw `CUarray`, valid while `self` lives.
    #[inline]
    fn as_raw(&self) -> sys::CUarray {
        self.raw
    }
}

impl<T: ArrayElement> OwnedHandle for Array<T> {
    type Parent<'p> = (&'p Context, ArrayDescriptor);

    /// Takes ownership of an array created in `ctx` and described by `desc` (read it with
    /// [`ArrayDescriptor::query`] for an array of unknown shape); it is destroyed on drop.
    ///
    /// # Safety
    /// `raw` is a live array of `ctx` that nothing else destroys; `desc` is its descriptor
    /// (as `cuArray3DGetDescriptor` reports it), and its elements are `T`s.
    unsafe fn from_raw(raw: sys::CUarray, (ctx, desc): (&Context, ArrayDescriptor)) -> Self {
        Array::from_parts(raw, desc, ctx)
    }

    /// Gives up ownership; the caller destroys the array with `cuArrayDestroy`.
    fn into_raw(self) -> sys::CUarray {
        give_up!(self, raw; drop(ctx); forget(desc, _marker))
    }
}

impl<T: ArrayElement> Array<T> {
    /// Creates an array of the shape `desc` describes; its format and channels must be
    /// `T`'s for the plain formats (any for the others: the escape hatch for block-compressed
    /// and video formats). A zero width (or height of a 3D array, or layer count) is
    /// [`LayoutError::ZeroExtent`] before any driver call.
    #[wraps(cuArray3DCreate)]
    #[track_caller]
    pub fn with_descriptor(ctx: &Context, desc: &ArrayDescriptor) -> Result<Self> {
        desc.validate::<T>("Array::with_descriptor")?;
        let raw_desc = desc.as_raw();
        let _cur = ctx.enter()?;
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: reads one descriptor and writes one CUarray; the array is owned by the
            // value built in the next statement.
            unsafe { sys::cuArray3DCreate(&mut raw, &raw_desc) },
        )?;
        Ok(Array {
            raw,
            desc: *desc,
            ctx: ctx.clone(),
            _marker: PhantomData,
        })
    }

    /// A 1D array of `width` elements.
    #[wraps(cuArray3DCreate)]
    #[track_caller]
    pub fn new_1d(ctx: &Context, width: usize, flags: Array3DFlags) -> Result<Self> {
        Self::with_descriptor(ctx, &ArrayDescriptor::of::<T>(width, 0, 0, flags))
    }

    /// A 2D array of `width × height` elements.
    #[wraps(cuArray3DCreate)]
    #[track_caller]
    pub fn new_2d(ctx: &Context, width: usize, height: usize, flags: Array3DFlags) -> Result<Self> {
        if height == 0 {
            return Err(Error::Layout(LayoutError::ZeroExtent {
                what: "Array::new_2d",
                axis: "height",
            }));
        }
        Self::with_descriptor(ctx, &ArrayDescriptor::of::<T>(width, height, 0, flags))
    }

    /// A 3D array of `width × height × depth` elements.
    #[wraps(cuArray3DCreate)]
    #[track_caller]
    pub fn new_3d(
        ctx: &Context,
        width: usize,
        height: usize,
        depth: usize,
        flags: Array3DFlags,
    ) -> Result<Self> {
        if height == 0 || depth == 0 {
            return Err(Error::Layout(LayoutError::ZeroExtent {
                what: "Array::new_3d",
                axis: if height == 0 { "height" } else { "depth" },
            }));
        }
        Self::with_descriptor(ctx, &ArrayDescriptor::of::<T>(width, height, depth, flags))
    }

    /// A layered 1D array: `layers` layers of `width` elements
    /// ([`Array3DFlags::LAYERED`] is added).
    #[wraps(cuArray3DCreate)]
    #[track_caller]
    pub fn new_layered_1d(
        ctx: &Context,
        width: usize,
        layers: usize,
        flags: Array3DFlags,
    ) -> Result<Self> {
        let flags = flags | Array3DFlags::LAYERED;
        Self::with_descriptor(ctx, &ArrayDescriptor::of::<T>(width, 0, layers, flags))
    }

    /// A layered 2D array: `layers` layers of `width × height` elements.
    #[wraps(cuArray3DCreate)]
    #[track_caller]
    pub fn new_layered_2d(
        ctx: &Context,
        width: usize,
        height: usize,
        layers: usize,
        flags: Array3DFlags,
    ) -> Result<Self> {
        if height == 0 {
            return Err(Error::Layout(LayoutError::ZeroExtent {
                what: "Array::new_layered_2d",
                axis: "height",
            }));
        }
        let flags = flags | Array3DFlags::LAYERED;
        Self::with_descriptor(ctx, &ArrayDescriptor::of::<T>(width, height, layers, flags))
    }

    /// A cubemap: six square faces of `size × size` elements, in the order of
    /// [`ArrayCubemapFace`] (+x, -x, +y, -y, +z, -z) as the layers of copies.
    #[wraps(cuArray3DCreate)]
    #[track_caller]
    pub fn new_cubemap(ctx: &Context, size: usize, flags: Array3DFlags) -> Result<Self> {
        let flags = flags | Array3DFlags::CUBEMAP;
        Self::with_descriptor(ctx, &ArrayDescriptor::of::<T>(size, size, 6, flags))
    }

    /// A layered cubemap: `cubemaps` cubemaps of six `size × size` faces (6 × `cubemaps`
    /// layers).
    #[wraps(cuArray3DCreate)]
    #[track_caller]
    pub fn new_cubemap_layered(
        ctx: &Context,
        size: usize,
        cubemaps: usize,
        flags: Array3DFlags,
    ) -> Result<Self> {
        let Some(depth) = cubemaps.checked_mul(6).filter(|&d| d > 0) else {
            return Err(Error::Layout(LayoutError::ZeroExtent {
                what: "Array::new_cubemap_layered",
                axis: "number of cubemaps",
            }));
        };
        let flags = flags | Array3DFlags::CUBEMAP | Array3DFlags::LAYERED;
        Self::with_descriptor(ctx, &ArrayDescriptor::of::<T>(size, size, depth, flags))
    }

    /// An array from its parts (a raw array just created in `ctx` with `desc`).
    pub(super) fn from_parts(raw: sys::CUarray, desc: ArrayDescriptor, ctx: &Context) -> Self {
        Array {
            raw,
            desc,
            ctx: ctx.clone(),
            _marker: PhantomData,
        }
    }

    /// The array's context.
    #[inline]
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// The descriptor the array was created with (or given to `from_raw`).
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

    /// Whether the array holds no elements (never, for an array this crate created).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The array borrowed as a shared view: the type a mipmap level or a plane is too.
    #[inline]
    pub fn view(&self) -> ArrayRef<'_, T> {
        // SAFETY: the array is owned by self, described by `desc`, in `ctx`, and borrowed
        // shared for the view's lifetime.
        unsafe { ArrayRef::from_parts(self.raw, self.desc, &self.ctx) }
    }

    /// The array borrowed exclusively: the type a mipmap level or a plane to write is too.
    #[inline]
    pub fn view_mut(&mut self) -> ArrayRefMut<'_, T> {
        // SAFETY: as in `view`; `&mut self` makes the view exclusive.
        unsafe { ArrayRefMut::from_parts(self.raw, self.desc, &self.ctx) }
    }

    array_reads!(view);

    /// Plane `index` of a multi-planar array, borrowed exclusively; see
    /// [`ArrayRefMut::plane_mut`].
    #[wraps(cuArrayGetPlane)]
    #[track_caller]
    #[inline]
    pub fn plane_mut<P: ArrayElement>(&mut self, index: u32) -> Result<ArrayRefMut<'_, P>> {
        self.view_mut().into_plane_mut(index)
    }

    /// Copies `src` into the whole array; see [`ArrayRefMut::copy_from_host`].
    #[wraps(cuMemcpy3D)]
    #[track_caller]
    #[inline]
    pub fn copy_from_host(&mut self, src: &[T]) -> Result<()> {
        self.view_mut().copy_from_host(src)
    }

    /// Copies `src` into elements of this 1D array; see [`ArrayRefMut::write_1d`].
    #[wraps(cuMemcpyHtoA)]
    #[track_caller]
    #[inline]
    pub fn write_1d(&mut self, offset: usize, src: &[T]) -> Result<()> {
        self.view_mut().write_1d(offset, src)
    }

    /// Queues a copy of `src` into elements of this 1D array; see
    /// [`ArrayRefMut::write_1d_async`].
    ///
    /// # Safety
    /// As for [`ArrayRefMut::write_1d_async`].
    #[wraps(cuMemcpyHtoAAsync)]
    #[track_caller]
    #[inline]
    pub unsafe fn write_1d_async(
        &mut self,
        offset: usize,
        src: &[T],
        stream: &crate::stream::Stream,
    ) -> Result<()> {
        // SAFETY: the caller's guarantees, forwarded.
        unsafe { self.view_mut().write_1d_async(offset, src, stream) }
    }

    /// Copies device memory into elements of this 1D array; see
    /// [`ArrayRefMut::copy_1d_from_device`].
    #[wraps(cuMemcpyDtoA)]
    #[track_caller]
    #[inline]
    pub fn copy_1d_from_device(
        &mut self,
        offset: usize,
        src: &crate::memory::DeviceSlice<'_, T>,
    ) -> Result<()> {
        self.view_mut().copy_1d_from_device(offset, src)
    }

    /// Copies elements of another 1D array (an [`Array`], a level or a plane) into this one;
    /// see [`ArrayRefMut::copy_1d_from_array`].
    #[wraps(cuMemcpyAtoA)]
    #[track_caller]
    #[inline]
    pub fn copy_1d_from_array<'s>(
        &mut self,
        offset: usize,
        src: impl Into<ArrayRef<'s, T>>,
        src_offset: usize,
        len: usize,
    ) -> Result<()> {
        self.view_mut()
            .copy_1d_from_array(offset, src, src_offset, len)
    }
}

#[track_caller]
fn query_descriptor(raw: sys::CUarray, ctx: &Context) -> Result<ArrayDescriptor> {
    let _cur = ctx.enter()?;
    // SAFETY: a plain C struct; all-zero bytes are a valid value.
    let mut d: sys::CUDA_ARRAY3D_DESCRIPTOR = unsafe { std::mem::zeroed() };
    call!(
        // SAFETY: `raw` is a live array of `ctx` (the caller's guarantee); writes one struct.
        unsafe { sys::cuArray3DGetDescriptor(&mut d, raw) },
    )?;
    Ok(ArrayDescriptor::from_raw(&d))
}

/// A mipmapped array (`CUmipmappedArray`): `levels` arrays, each half the size of the one
/// before, destroyed on drop. A texture object samples it with a level of detail; its levels
/// are arrays ([`level`](Self::level)) to copy into.
#[doc(alias = "CUmipmappedArray")]
pub struct MipmappedArray<T: ArrayElement> {
    pub(crate) raw: sys::CUmipmappedArray,
    pub(crate) desc: ArrayDescriptor,
    pub(crate) levels: u32,
    pub(crate) ctx: Context,
    _marker: PhantomData<T>,
}

// SAFETY: as for Array.
unsafe impl<T: ArrayElement> Send for MipmappedArray<T> {}
// SAFETY: as for Array.
unsafe impl<T: ArrayElement> Sync for MipmappedArray<T> {}

impl<T: ArrayElement> Drop for MipmappedArray<T> {
    fn drop(&mut self) {
        let raw = crate::release::SendRaw(self.raw);
        // SAFETY: created by cuMipmappedArrayCreate in `ctx`, owned by self, destroyed once;
        // its level arrays are borrowed from self and gone, and cuMipmappedArrayDestroy waits
        // for device work still using them (GPU test
        // release::cu_mipmapped_array_destroy_waits_for_a_copy_queued_on_another_stream).
        self.ctx.release("cuMipmappedArrayDestroy", move || unsafe {
            sys::cuMipmappedArrayDestroy(raw.get())
        });
    }
}

impl<T: ArrayElement> std::fmt::Debug for MipmappedArray<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MipmappedArray")
            .field("raw", &self.raw)
            .field("desc", &self.desc)
            .field("levels", &self.levels)
            .finish()
    }
}

impl<T: ArrayElement> Handle for MipmappedArray<T> {
    type Raw = sys::CUmipmappedArray;

    /// The raw handle, valid while `self` lives.
    #[inline]
    fn as_raw(&self) -> sys::CUmipmappedArray {
        self.raw
    }
}

impl<T: ArrayElement> OwnedHandle for MipmappedArray<T> {
    type Parent<'p> = (&'p Context, ArrayDescriptor, u32);

    /// Takes ownership of a mipmapped array of `ctx` with level 0 of shape `desc` and
    /// `levels` levels; it is destroyed on drop.
    ///
    /// # Safety
    /// `raw` is a live mipmapped array of `ctx` as described, of `T`s, that nothing else
    /// destroys.
    unsafe fn from_raw(
        raw: sys::CUmipmappedArray,
        (ctx, desc, levels): (&Context, ArrayDescriptor, u32),
    ) -> Self {
        MipmappedArray {
            raw,
            desc,
            levels,
            ctx: ctx.clone(),
            _marker: PhantomData,
        }
    }

    /// Gives up ownership; the caller destroys it with `cuMipmappedArrayDestroy`.
    fn into_raw(self) -> sys::CUmipmappedArray {
        give_up!(self, raw; drop(ctx); forget(desc, levels, _marker))
    }
}

impl<T: ArrayElement> MipmappedArray<T> {
    /// Creates a mipmapped array whose level 0 has the shape of `desc`, with `levels`
    /// levels (at least 1).
    #[wraps(cuMipmappedArrayCreate)]
    #[track_caller]
    pub fn new(ctx: &Context, desc: &ArrayDescriptor, levels: u32) -> Result<Self> {
        desc.validate::<T>("MipmappedArray::new")?;
        if levels == 0 {
            return Err(Error::Layout(LayoutError::ZeroExtent {
                what: "MipmappedArray::new",
                axis: "number of levels",
            }));
        }
        let raw_desc = desc.as_raw();
        let _cur = ctx.enter()?;
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: reads one descriptor, writes one handle, owned by the value built next.
            unsafe { sys::cuMipmappedArrayCreate(&mut raw, &raw_desc, levels) },
        )?;
        Ok(MipmappedArray {
            raw,
            desc: *desc,
            levels,
            ctx: ctx.clone(),
            _marker: PhantomData,
        })
    }

    /// A 2D mipmapped array of `width × height` elements at level 0.
    #[wraps(cuMipmappedArrayCreate)]
    #[track_caller]
    pub fn new_2d(
        ctx: &Context,
        width: usize,
        height: usize,
        levels: u32,
        flags: Array3DFlags,
    ) -> Result<Self> {
        if height == 0 {
            return Err(Error::Layout(LayoutError::ZeroExtent {
                what: "MipmappedArray::new_2d",
                axis: "height",
            }));
        }
        Self::new(
            ctx,
            &ArrayDescriptor::of::<T>(width, height, 0, flags),
            levels,
        )
    }

    /// The context.
    #[inline]
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// The descriptor of level 0.
    #[inline]
    pub fn desc(&self) -> &ArrayDescriptor {
        &self.desc
    }

    /// Number of levels.
    #[inline]
    pub fn levels(&self) -> u32 {
        self.levels
    }

    /// Level `level`'s handle (owned by self) and descriptor.
    #[track_caller]
    fn level_parts(&self, level: u32) -> Result<(sys::CUarray, ArrayDescriptor)> {
        if level >= self.levels {
            return Err(Error::OutOfBounds {
                start: level as usize,
                end: level as usize + 1,
                len: self.levels as usize,
            });
        }
        let _cur = self.ctx.enter()?;
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: the mipmapped array is live (borrowed) and `level` is one of its levels;
            // writes one CUarray owned by it.
            unsafe { sys::cuMipmappedArrayGetLevel(&mut raw, self.raw, level) },
        )?;
        Ok((raw, query_descriptor(raw, &self.ctx)?))
    }

    /// Level `level` as a view borrowed from this array (which owns and destroys it); a
    /// level past the last is [`Error::OutOfBounds`].
    #[wraps(cuMipmappedArrayGetLevel)]
    #[track_caller]
    pub fn level(&self, level: u32) -> Result<ArrayRef<'_, T>> {
        let (raw, desc) = self.level_parts(level)?;
        // SAFETY: the level is owned by self, which the view borrows shared.
        Ok(unsafe { ArrayRef::from_parts(raw, desc, &self.ctx) })
    }

    /// Level `level`, borrowed exclusively (to copy into it). The view is no owned
    /// [`Array`]: the level stays this array's.
    #[wraps(cuMipmappedArrayGetLevel)]
    #[track_caller]
    pub fn level_mut(&mut self, level: u32) -> Result<ArrayRefMut<'_, T>> {
        let (raw, desc) = self.level_parts(level)?;
        // SAFETY: the level is owned by self, which the view borrows exclusively.
        Ok(unsafe { ArrayRefMut::from_parts(raw, desc, &self.ctx) })
    }

    /// The tile shape and mip tail of a sparse mipmapped array.
    #[wraps(cuMipmappedArrayGetSparseProperties)]
    #[track_caller]
    pub fn sparse_properties(&self) -> Result<ArraySparseProperties> {
        let _cur = self.ctx.enter()?;
        // SAFETY: a plain C struct; all-zero bytes are a valid value.
        let mut raw: sys::CUDA_ARRAY_SPARSE_PROPERTIES = unsafe { std::mem::zeroed() };
        call!(
            // SAFETY: the handle is live (borrowed); writes one struct.
            unsafe { sys::cuMipmappedArrayGetSparseProperties(&mut raw, self.raw) },
        )?;
        Ok(ArraySparseProperties::from_raw(&raw))
    }

    /// The memory a deferred-mapping mipmapped array needs on `device`.
    #[wraps(cuMipmappedArrayGetMemoryRequirements)]
    #[track_caller]
    pub fn memory_requirements(&self, device: Device) -> Result<ArrayMemoryRequirements> {
        let _cur = self.ctx.enter()?;
        // SAFETY: a plain C struct; all-zero bytes are a valid value.
        let mut raw: sys::CUDA_ARRAY_MEMORY_REQUIREMENTS = unsafe { std::mem::zeroed() };
        call!(
            // SAFETY: the handle is live (borrowed); writes one struct.
            unsafe {
                sys::cuMipmappedArrayGetMemoryRequirements(&mut raw, self.raw, device.as_raw())
            },
        )?;
        Ok(ArrayMemoryRequirements {
            size: raw.size,
            alignment: raw.alignment,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vector::{Float4, Uchar4};

    #[test]
    fn elements_name_format_and_channels() {
        assert_eq!(<f32 as ArrayElement>::FORMAT, ArrayFormat::FLOAT);
        assert_eq!(<Uchar4 as ArrayElement>::CHANNELS, 4);
        assert_eq!(<[half::f16; 2] as ArrayElement>::FORMAT, ArrayFormat::HALF);
        assert_eq!(<[i16; 4] as ArrayElement>::CHANNELS, 4);
        assert_eq!(<Float4 as ArrayElement>::CHANNELS, 4);
    }

    fn sizes_agree<T: ArrayElement>() {
        let b = channel_bytes(T::FORMAT).unwrap();
        assert_eq!(
            b * T::CHANNELS as usize,
            size_of::<T>(),
            "{}",
            std::any::type_name::<T>()
        );
    }

    #[test]
    fn every_element_has_the_size_of_its_format() {
        sizes_agree::<u8>();
        sizes_agree::<crate::vector::Char2>();
        sizes_agree::<crate::vector::Ushort4>();
        sizes_agree::<crate::vector::Short2>();
        sizes_agree::<crate::vector::Uint4>();
        sizes_agree::<crate::vector::Int2>();
        sizes_agree::<Float4>();
        sizes_agree::<half::f16>();
        sizes_agree::<[half::f16; 4]>();
        sizes_agree::<[u32; 2]>();
    }

    #[test]
    fn shapes_are_checked_before_the_driver() {
        let d = ArrayDescriptor::of::<f32>(0, 4, 0, Array3DFlags::empty());
        assert!(matches!(
            d.validate::<f32>("t"),
            Err(Error::Layout(LayoutError::ZeroExtent { axis: "width", .. }))
        ));
        let d = ArrayDescriptor::of::<f32>(4, 0, 3, Array3DFlags::empty());
        assert!(matches!(
            d.validate::<f32>("t"),
            Err(Error::Layout(LayoutError::ZeroExtent { .. }))
        ));
        let d = ArrayDescriptor::of::<f32>(4, 0, 3, Array3DFlags::LAYERED);
        d.validate::<f32>("t").unwrap();
        let d = ArrayDescriptor::of::<f32>(4, 5, 6, Array3DFlags::CUBEMAP);
        assert!(matches!(
            d.validate::<f32>("t"),
            Err(Error::InvalidArgument(_))
        ));
        let d = ArrayDescriptor::of::<f32>(4, 4, 12, Array3DFlags::CUBEMAP);
        assert!(d.validate::<f32>("t").is_err());
        let d = ArrayDescriptor::of::<f32>(4, 4, 12, Array3DFlags::CUBEMAP | Array3DFlags::LAYERED);
        d.validate::<f32>("t").unwrap();
        // A format whose element is not T.
        let d = ArrayDescriptor::of::<u8>(4, 4, 0, Array3DFlags::empty());
        let e = d.validate::<f32>("t").unwrap_err();
        assert!(
            matches!(e, Error::Layout(LayoutError::ElementFormat { size: 4, .. })),
            "{e:?}"
        );
        // The escape hatch: a block-compressed format takes any element type.
        let mut d = ArrayDescriptor::of::<[u32; 2]>(8, 8, 0, Array3DFlags::empty());
        d.format = ArrayFormat::BC1_UNORM;
        d.validate::<[u32; 2]>("t").unwrap();
        assert_eq!(d.checked_extent(), None);
        // Three channels: refused for a plain format, left to the driver for a video one.
        let mut d = ArrayDescriptor::of::<u8>(16, 8, 0, Array3DFlags::empty());
        d.channels = 3;
        assert!(matches!(
            d.validate::<u8>("t"),
            Err(Error::InvalidArgument(_))
        ));
        d.format = ArrayFormat::NV12;
        d.validate::<u8>("t").unwrap();
    }

    #[test]
    fn descriptors_round_trip() {
        let d = ArrayDescriptor::of::<Float4>(3, 4, 5, Array3DFlags::SURFACE_LDST);
        assert_eq!(ArrayDescriptor::from_raw(&d.as_raw()), d);
        assert_eq!(d.extent(), [3, 4, 5]);
        let d = ArrayDescriptor::of::<u8>(3, 0, 0, Array3DFlags::empty());
        assert_eq!(d.extent(), [3, 1, 1]);
    }
}
