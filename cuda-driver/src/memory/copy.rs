//! 2D and 3D copies: one builder per dimensionality, [`Copy2D`] (`cuMemcpy2D_v2`) and
//! [`Copy3D`] (`cuMemcpy3D_v2`, and `cuMemcpy3DPeer` between contexts), between every kind of
//! memory: host slices, linear device memory (any [`DeviceSlice`] with a row pitch), pitched
//! memory ([`Pitched2DView`]) and arrays ([`Array`]), blocking or on a stream.
//!
//! Extents are in elements of `T` (rows and slices for the other dimensions), offsets too.
//! Before any driver call the builder checks that the region fits every operand: a copy
//! that would read or write past a slice, a view, a row or an array is
//! [`LayoutError::RegionOutOfBounds`] naming the operand and the axis, never a driver fault. (For
//! arrays of formats whose element size the crate does not know, block-compressed or
//! video, the driver checks the array side.) A copy with a zero extent does nothing.
//!
//! ```no_run
//! use cuda_driver::{memory::Array, types::Array3DFlags, memory::Copy2D, Device, memory::Pitched2D};
//!
//! let ctx = Device::get(0)?.primary_context()?;
//! let (w, h) = (640, 480);
//! let host: Vec<f32> = (0..w * h).map(|i| i as f32).collect();
//! let mut img = Pitched2D::<f32>::new(&ctx, w, h)?;
//! Copy2D::new(w, h).from_host(&host, w).to_pitched(img.view_mut()).run()?;
//! let mut arr = Array::<f32>::new_2d(&ctx, w, h, Array3DFlags::empty())?;
//! Copy2D::new(w, h).from_pitched(img.view()).to_array(&mut arr).run()?;
//! // A copy past the end of the array is refused before the driver is called:
//! assert!(Copy2D::new(w, h).from_pitched(img.view()).to_array(&mut arr).dst_origin(1, 0).run().is_err());
//! # Ok::<(), cuda_driver::Error>(())
//! ```
//!
//! # Stream order
//!
//! As for the views' copies: a linear operand of stream-ordered memory
//! ([`AsyncDeviceBuffer`](crate::memory::pool::AsyncDeviceBuffer)) is used on its own stream only
//! ([`Error::StreamMismatch`]), and every stream must belong to the operands' context
//! ([`Error::ContextMismatch`]). The blocking [`run`](Copy2D::run) of such memory queues the
//! copy on its stream and waits for it. [`run_async`](Copy2D::run_async) refuses host
//! operands, whose borrow would end before the copy runs; the `unsafe`
//! [`run_async_host`](Copy2D::run_async_host) takes them, on the caller's promise.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem::size_of;
use std::ptr;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use super::array::{ArrayElement, ArrayRef, ArrayRefMut};
use super::pitched::{Pitched2DView, Pitched2DViewMut};
use super::view::{blocking, check_stream, common_home};
use crate::context::Context;
use crate::entry_point::newer;
use crate::error::layout::LayoutError;
use crate::error::{check, Error, Result};
use crate::handle::Handle;
use crate::memory::view::check_len;
use crate::memory::view::{DeviceSlice, DeviceSliceMut};
use crate::repr::DeviceRepr;
use crate::stream::Stream;

/// What an operand is.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Mem {
    /// Host memory of `bytes` bytes.
    Host { ptr: *mut c_void, bytes: usize },
    /// Linear device memory of `bytes` bytes, ordered on `home` (or null).
    Device {
        ptr: sys::CUdeviceptr,
        bytes: usize,
        home: sys::CUstream,
    },
    /// An array; `extent` in elements when the crate knows the format's element size.
    Array {
        raw: sys::CUarray,
        extent: Option<[usize; 3]>,
    },
}

/// One side of a copy: the memory, its context, and for linear memory the layout.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Operand<'a> {
    pub(crate) mem: Mem,
    pub(crate) ctx: Option<&'a Context>,
    /// Bytes from one row to the next (linear memory).
    pub(crate) pitch: usize,
    /// Bytes of each row the operand may touch: the pitch, or a pitched view's width.
    pub(crate) row_bytes: usize,
    /// Rows per 2D slice (linear memory), when bounded.
    pub(crate) rows: Option<usize>,
}

impl Operand<'_> {
    fn is_host(&self) -> bool {
        matches!(self.mem, Mem::Host { .. })
    }

    fn home(&self) -> sys::CUstream {
        match self.mem {
            Mem::Device { home, .. } => home,
            _ => ptr::null_mut(),
        }
    }
}

/// Checks that the region `origin .. origin + extent` (elements of `elem` bytes, rows,
/// slices; every extent non-zero) lies inside `op`, or [`LayoutError::RegionOutOfBounds`] naming
/// `which` operand and the axis.
pub(crate) fn check_region(
    what: &'static str,
    which: &'static str,
    op: &Operand<'_>,
    origin: [usize; 3],
    extent: [usize; 3],
    elem: usize,
) -> Result<()> {
    let oob = |axis, end, limit| {
        Error::Layout(LayoutError::RegionOutOfBounds {
            what,
            operand: which,
            axis,
            end,
            limit,
        })
    };
    let end = |i: usize| origin[i].saturating_add(extent[i]);
    match op.mem {
        Mem::Array { extent: None, .. } => Ok(()),
        Mem::Array {
            extent: Some(lim), ..
        } => {
            for (i, axis) in ["x", "y", "z"].into_iter().enumerate() {
                if end(i) > lim[i] {
                    return Err(oob(axis, end(i), lim[i]));
                }
            }
            Ok(())
        }
        Mem::Host { bytes, .. } | Mem::Device { bytes, .. } => {
            let x_end = end(0).saturating_mul(elem);
            if x_end > op.row_bytes {
                return Err(oob("x (bytes)", x_end, op.row_bytes));
            }
            let slice_rows = match op.rows {
                Some(rows) => {
                    if end(1) > rows {
                        return Err(oob("y", end(1), rows));
                    }
                    rows
                }
                None if end(2) > 1 => return Err(oob("z", end(2), 1)),
                None => 0,
            };
            // The last byte touched: row (z_end - 1) * rows + y_end - 1, at x_end.
            let last_row = (end(2) - 1)
                .checked_mul(slice_rows)
                .and_then(|r| r.checked_add(end(1) - 1));
            let last = last_row
                .and_then(|r| r.checked_mul(op.pitch))
                .and_then(|b| b.checked_add(x_end));
            match last {
                Some(last) if last <= bytes => Ok(()),
                // An overflow reaches past any memory.
                last => Err(oob("bytes", last.unwrap_or(usize::MAX), bytes)),
            }
        }
    }
}

fn host_op<'a, T>(ptr: *mut c_void, len: usize, pitch: usize, rows: Option<usize>) -> Operand<'a> {
    let b = size_of::<T>();
    Operand {
        mem: Mem::Host {
            ptr,
            bytes: len * b,
        },
        ctx: None,
        pitch: pitch.saturating_mul(b),
        row_bytes: pitch.saturating_mul(b),
        rows,
    }
}

fn device_op<'a, T: DeviceRepr>(
    ptr: sys::CUdeviceptr,
    len: usize,
    home: sys::CUstream,
    ctx: &'a Context,
    pitch: usize,
    rows: Option<usize>,
) -> Operand<'a> {
    let b = size_of::<T>();
    Operand {
        mem: Mem::Device {
            ptr,
            bytes: len * b,
            home,
        },
        ctx: Some(ctx),
        pitch: pitch.saturating_mul(b),
        row_bytes: pitch.saturating_mul(b),
        rows,
    }
}

fn pitched_op<T: DeviceRepr>(
    ptr: sys::CUdeviceptr,
    pitch: usize,
    width: usize,
    height: usize,
    ctx: &Context,
) -> Operand<'_> {
    let row_bytes = width * size_of::<T>();
    Operand {
        mem: Mem::Device {
            ptr,
            // Everything from the first element to the end of the last row's width.
            bytes: if height == 0 {
                0
            } else {
                (height - 1) * pitch + row_bytes
            },
            home: ptr::null_mut(),
        },
        ctx: Some(ctx),
        pitch,
        row_bytes,
        rows: Some(height),
    }
}

fn array_op<T: ArrayElement>(a: ArrayRef<'_, T>) -> Operand<'_> {
    Operand {
        mem: Mem::Array {
            raw: a.as_raw(),
            extent: a.desc().checked_extent(),
        },
        ctx: Some(a.context()),
        pitch: 0,
        row_bytes: 0,
        rows: None,
    }
}

/// A checked copy as the parameters of a graph memcpy node, and the context it runs in.
pub(crate) struct NodeCopy<'a> {
    pub(crate) raw: sys::CUDA_MEMCPY3D,
    pub(crate) ctx: &'a Context,
}

/// The checked plan of a copy: both operands, the region, and the context and stream order
/// the copy runs in.
struct Plan<'a> {
    src: Operand<'a>,
    dst: Operand<'a>,
    src_origin: [usize; 3],
    dst_origin: [usize; 3],
    extent: [usize; 3],
    ctx: &'a Context,
    elem: usize,
}

/// Checks a copy: both operands present, the region inside both, one context (unless
/// `peer`). `Ok(None)`: an empty copy, nothing to do.
#[allow(clippy::too_many_arguments)]
fn plan<'a>(
    what: &'static str,
    src: Option<Operand<'a>>,
    dst: Option<Operand<'a>>,
    src_origin: [usize; 3],
    dst_origin: [usize; 3],
    extent: [usize; 3],
    elem: usize,
    peer: bool,
) -> Result<Option<Plan<'a>>> {
    let (Some(src), Some(dst)) = (src, dst) else {
        return Err(Error::InvalidArgument(format!(
            "{what}: the copy needs a source and a destination"
        )));
    };
    if extent.contains(&0) {
        return Ok(None);
    }
    check_region(what, "source", &src, src_origin, extent, elem)?;
    check_region(what, "destination", &dst, dst_origin, extent, elem)?;
    let ctx = match (dst.ctx, src.ctx) {
        (Some(d), Some(s)) if !peer && d.as_raw() != s.as_raw() => {
            return Err(Error::ContextMismatch {
                what,
                expected: d.as_raw() as usize,
                found: s.as_raw() as usize,
            })
        }
        (Some(c), _) | (None, Some(c)) => c,
        (None, None) => {
            return Err(Error::InvalidArgument(format!(
                "{what}: a copy between host memory needs no CUDA; one operand must be device \
                 memory or an array"
            )))
        }
    };
    Ok(Some(Plan {
        src,
        dst,
        src_origin,
        dst_origin,
        extent,
        ctx,
        elem,
    }))
}

impl Plan<'_> {
    /// The stream a blocking copy must run on: null, or the one stream the stream-ordered
    /// operands share.
    fn blocking_home(&self, what: &'static str) -> Result<sys::CUstream> {
        common_home(what, self.src.home(), self.dst.home())
    }

    /// The stream rules of a copy on `stream`.
    #[track_caller]
    fn check_async(&self, what: &'static str, stream: &Stream, allow_host: bool) -> Result<()> {
        if !allow_host && (self.src.is_host() || self.dst.is_host()) {
            return Err(Error::InvalidArgument(format!(
                "{what}: host memory in a copy on a stream would be released before the copy \
                 runs; use the unsafe run_async_host"
            )));
        }
        check_stream(what, self.ctx, self.dst.home(), stream)?;
        if let Some(c) = self.src.ctx {
            check_stream(what, c, self.src.home(), stream)?;
        }
        Ok(())
    }

    /// The raw parameters. Byte offsets and widths saturate: for linear memory
    /// [`check_region`] bounds them, and an array of a format whose element size the crate
    /// does not know (checked by the driver) gets `usize::MAX`, which the driver refuses,
    /// rather than a product that wrapped around.
    fn raw_3d(&self) -> sys::CUDA_MEMCPY3D {
        // SAFETY: a plain C struct of integers and pointers; all-zero is its documented
        // "unused" value for every field.
        let mut r: sys::CUDA_MEMCPY3D = unsafe { std::mem::zeroed() };
        let s = &self.src;
        r.srcXInBytes = self.src_origin[0].saturating_mul(self.elem);
        r.srcY = self.src_origin[1];
        r.srcZ = self.src_origin[2];
        match s.mem {
            Mem::Host { ptr, .. } => {
                r.srcMemoryType = sys::CU_MEMORYTYPE_HOST;
                r.srcHost = ptr;
            }
            Mem::Device { ptr, .. } => {
                r.srcMemoryType = sys::CU_MEMORYTYPE_DEVICE;
                r.srcDevice = ptr;
            }
            Mem::Array { raw, .. } => {
                r.srcMemoryType = sys::CU_MEMORYTYPE_ARRAY;
                r.srcArray = raw;
            }
        }
        r.srcPitch = s.pitch;
        r.srcHeight = s.rows.unwrap_or(0);
        let d = &self.dst;
        r.dstXInBytes = self.dst_origin[0].saturating_mul(self.elem);
        r.dstY = self.dst_origin[1];
        r.dstZ = self.dst_origin[2];
        match d.mem {
            Mem::Host { ptr, .. } => {
                r.dstMemoryType = sys::CU_MEMORYTYPE_HOST;
                r.dstHost = ptr;
            }
            Mem::Device { ptr, .. } => {
                r.dstMemoryType = sys::CU_MEMORYTYPE_DEVICE;
                r.dstDevice = ptr;
            }
            Mem::Array { raw, .. } => {
                r.dstMemoryType = sys::CU_MEMORYTYPE_ARRAY;
                r.dstArray = raw;
            }
        }
        r.dstPitch = d.pitch;
        r.dstHeight = d.rows.unwrap_or(0);
        r.WidthInBytes = self.extent[0].saturating_mul(self.elem);
        r.Height = self.extent[1];
        r.Depth = self.extent[2];
        r
    }

    /// The copy as the parameters of a graph memcpy node (`CUDA_MEMCPY3D`, also for 2D).
    fn node(&self) -> NodeCopy<'_> {
        let mut raw = self.raw_3d();
        // One slice: the heights only scale a Z offset of 0, but must cover the rows.
        if raw.Depth == 1 {
            if raw.srcHeight == 0 {
                raw.srcHeight = self.src_origin[1].saturating_add(self.extent[1]);
            }
            if raw.dstHeight == 0 {
                raw.dstHeight = self.dst_origin[1].saturating_add(self.extent[1]);
            }
        }
        NodeCopy { raw, ctx: self.ctx }
    }

    fn raw_2d(&self) -> sys::CUDA_MEMCPY2D {
        let r = self.raw_3d();
        sys::CUDA_MEMCPY2D {
            srcXInBytes: r.srcXInBytes,
            srcY: r.srcY,
            srcMemoryType: r.srcMemoryType,
            srcHost: r.srcHost,
            srcDevice: r.srcDevice,
            srcArray: r.srcArray,
            srcPitch: r.srcPitch,
            dstXInBytes: r.dstXInBytes,
            dstY: r.dstY,
            dstMemoryType: r.dstMemoryType,
            dstHost: r.dstHost,
            dstDevice: r.dstDevice,
            dstArray: r.dstArray,
            dstPitch: r.dstPitch,
            WidthInBytes: r.WidthInBytes,
            Height: r.Height,
        }
    }

    fn raw_peer(&self) -> sys::CUDA_MEMCPY3D_PEER {
        let r = self.raw_3d();
        let ctx_of = |o: &Operand<'_>| o.ctx.map_or(ptr::null_mut(), Context::as_raw);
        sys::CUDA_MEMCPY3D_PEER {
            srcXInBytes: r.srcXInBytes,
            srcY: r.srcY,
            srcZ: r.srcZ,
            srcLOD: 0,
            srcMemoryType: r.srcMemoryType,
            srcHost: r.srcHost,
            srcDevice: r.srcDevice,
            srcArray: r.srcArray,
            srcContext: ctx_of(&self.src),
            srcPitch: r.srcPitch,
            srcHeight: r.srcHeight,
            dstXInBytes: r.dstXInBytes,
            dstY: r.dstY,
            dstZ: r.dstZ,
            dstLOD: 0,
            dstMemoryType: r.dstMemoryType,
            dstHost: r.dstHost,
            dstDevice: r.dstDevice,
            dstArray: r.dstArray,
            dstContext: ctx_of(&self.dst),
            dstPitch: r.dstPitch,
            dstHeight: r.dstHeight,
            WidthInBytes: r.WidthInBytes,
            Height: r.Height,
            Depth: r.Depth,
        }
    }
}

impl Plan<'_> {
    /// The one body of the blocking and queued runs of a planned copy: `calls` names the
    /// plain call `sync` and its stream form `on_stream`. With `queue` (a stream, and
    /// whether host operands may be on it) the copy is checked for that stream and queued
    /// on it; without, it runs blocking: `sync`, or (stream-ordered operands) `on_stream` on
    /// their stream followed by `cuStreamSynchronize`.
    ///
    /// # Safety
    /// `sync` and `on_stream` run this plan's copy (every operand borrowed for the plan's
    /// lifetime, the regions checked, the destination borrowed exclusively) and nothing
    /// else. With a queue that allows host operands, host memory of the copy stays valid
    /// (the destination untouched by the host, the source unchanged) until the stream has
    /// executed the copy.
    #[inline(always)]
    #[track_caller]
    unsafe fn execute(
        &self,
        what: &'static str,
        queue: Option<(&Stream, bool)>,
        calls: (&'static str, &'static str),
        sync: impl FnOnce() -> sys::CUresult,
        on_stream: impl FnOnce(sys::CUstream) -> sys::CUresult,
    ) -> Result<()> {
        match queue {
            None => {
                let home = self.blocking_home(what)?;
                let _cur = self.ctx.enter()?;
                blocking(home, calls, sync, on_stream)
            }
            Some((stream, allow_host)) => {
                // Memory ordered on a stream is used on it; other memory is released after
                // its context's work; host memory is refused or kept valid by the caller.
                self.check_async(what, stream, allow_host)?;
                let _cur = self.ctx.enter()?;
                check(on_stream(stream.as_raw()), calls.1)
            }
        }
    }
}

macro_rules! builder_operands {
    ($builder:ident, $dims:literal) => {
        /// The source is an array (its origin set by `src_origin`): an `&Array`, or a view
        /// ([`ArrayRef`], a mipmap level or a plane).
        #[inline]
        pub fn from_array(mut self, src: impl Into<ArrayRef<'a, T>>) -> Self
        where
            T: ArrayElement,
        {
            self.src = Some(array_op(src.into()));
            self
        }

        /// The destination is an array (its origin set by `dst_origin`): an `&mut Array`, or
        /// an exclusive view ([`ArrayRefMut`], a mipmap level or a plane).
        #[inline]
        pub fn to_array(mut self, dst: impl Into<ArrayRefMut<'a, T>>) -> Self
        where
            T: ArrayElement,
        {
            self.dst = Some(array_op(ArrayRef::from(dst.into())));
            self
        }

        /// The source is pitched memory; `src_origin` is relative to the view.
        #[inline]
        pub fn from_pitched(mut self, src: Pitched2DView<'a, T>) -> Self {
            self.src = Some(pitched_op::<T>(
                src.ptr, src.pitch, src.width, src.height, src.ctx,
            ));
            self
        }

        /// The destination is pitched memory; `dst_origin` is relative to the view.
        #[inline]
        pub fn to_pitched(mut self, dst: Pitched2DViewMut<'a, T>) -> Self {
            self.dst = Some(pitched_op::<T>(
                dst.ptr, dst.pitch, dst.width, dst.height, dst.ctx,
            ));
            self
        }
    };
}

/// A 2D copy of `width × height` elements (`cuMemcpy2D_v2`, `cuMemcpy2DAsync_v2`): pick a
/// source (`from_*`) and a destination (`to_*`), optionally origins, then [`run`](Self::run)
/// or [`run_async`](Self::run_async). Extents and offsets are in elements; before any
/// driver call the region is checked against every operand
/// ([`LayoutError::RegionOutOfBounds`] names the operand and axis), and linear operands of
/// stream-ordered memory are used on their own stream only ([`Error::StreamMismatch`]).
#[doc(alias = "CUDA_MEMCPY2D")]
#[must_use = "a copy builder does nothing until run"]
pub struct Copy2D<'a, T: DeviceRepr> {
    extent: [usize; 3],
    src: Option<Operand<'a>>,
    dst: Option<Operand<'a>>,
    src_origin: [usize; 3],
    dst_origin: [usize; 3],
    _marker: PhantomData<&'a mut [T]>,
}

impl<'a, T: DeviceRepr> Copy2D<'a, T> {
    /// A copy of `height` rows of `width` elements.
    #[inline]
    pub fn new(width: usize, height: usize) -> Self {
        Copy2D {
            extent: [width, height, 1],
            src: None,
            dst: None,
            src_origin: [0; 3],
            dst_origin: [0; 3],
            _marker: PhantomData,
        }
    }

    builder_operands!(Copy2D, 2);

    /// The source is host memory whose rows are `pitch` elements apart.
    #[inline]
    pub fn from_host(mut self, src: &'a [T], pitch: usize) -> Self {
        self.src = Some(host_op::<T>(
            src.as_ptr().cast_mut().cast(),
            src.len(),
            pitch,
            None,
        ));
        self
    }

    /// The destination is host memory whose rows are `pitch` elements apart.
    #[inline]
    pub fn to_host(mut self, dst: &'a mut [T], pitch: usize) -> Self {
        self.dst = Some(host_op::<T>(
            dst.as_mut_ptr().cast(),
            dst.len(),
            pitch,
            None,
        ));
        self
    }

    /// The source is linear device memory whose rows are `pitch` elements apart.
    #[inline]
    pub fn from_device(mut self, src: DeviceSlice<'a, T>, pitch: usize) -> Self {
        self.src = Some(device_op::<T>(
            src.as_raw(),
            src.len(),
            src.home(),
            src.context(),
            pitch,
            None,
        ));
        self
    }

    /// The destination is linear device memory whose rows are `pitch` elements apart.
    #[inline]
    pub fn to_device(mut self, dst: DeviceSliceMut<'a, T>, pitch: usize) -> Self {
        self.dst = Some(device_op::<T>(
            dst.as_raw(),
            dst.len(),
            dst.home(),
            dst.context(),
            pitch,
            None,
        ));
        self
    }

    /// Where the region starts in the source: element `x` of row `y` (default 0, 0).
    #[inline]
    pub fn src_origin(mut self, x: usize, y: usize) -> Self {
        self.src_origin = [x, y, 0];
        self
    }

    /// Where the region starts in the destination: element `x` of row `y`.
    #[inline]
    pub fn dst_origin(mut self, x: usize, y: usize) -> Self {
        self.dst_origin = [x, y, 0];
        self
    }

    fn plan(self, what: &'static str) -> Result<Option<Plan<'a>>> {
        plan(
            what,
            self.src,
            self.dst,
            self.src_origin,
            self.dst_origin,
            self.extent,
            size_of::<T>(),
            false,
        )
    }

    /// The checked copy as graph memcpy node parameters (see `Graph::add_copy_2d`); an
    /// empty copy is [`LayoutError::ZeroExtent`], a node must copy something.
    pub(crate) fn node_params(self, what: &'static str) -> Result<NodeCopy<'a>> {
        let extent = self.extent;
        match self.plan(what)? {
            Some(p) => Ok(owned_node(&p)),
            None => Err(zero_extent(what, extent)),
        }
    }

    /// Runs the copy. Returns when the source has been read: copies to the host are done;
    /// copies between device memory and arrays may still run (later work on the default
    /// stream is ordered after them).
    #[wraps(cuMemcpy2D)]
    #[track_caller]
    pub fn run(self) -> Result<()> {
        let Some(p) = self.plan("Copy2D::run")? else {
            return Ok(());
        };
        let raw = p.raw_2d();
        // SAFETY: the calls run the plan's copy (every operand is borrowed for 'a and the
        // region was checked to lie inside each); blocking, so no borrow ends before it.
        unsafe {
            p.execute(
                "Copy2D::run",
                None,
                ("cuMemcpy2D_v2", "cuMemcpy2DAsync_v2"),
                || sys::cuMemcpy2D(&raw),
                |s| sys::cuMemcpy2DAsync(&raw, s),
            )
        }
    }

    /// Runs the copy like [`run`](Self::run), through `cuMemcpy2DUnaligned`, which lifts
    /// the pitch-alignment limits of `cuMemcpy2D` (slower; for pitches the driver would
    /// otherwise refuse). Stream-ordered operands go through `cuMemcpy2DAsync` on their
    /// stream, as for `run`.
    #[wraps(cuMemcpy2DUnaligned)]
    #[track_caller]
    pub fn run_unaligned(self) -> Result<()> {
        let Some(p) = self.plan("Copy2D::run_unaligned")? else {
            return Ok(());
        };
        let raw = p.raw_2d();
        // SAFETY: as in `run`.
        unsafe {
            p.execute(
                "Copy2D::run_unaligned",
                None,
                ("cuMemcpy2DUnaligned_v2", "cuMemcpy2DAsync_v2"),
                || sys::cuMemcpy2DUnaligned(&raw),
                |s| sys::cuMemcpy2DAsync(&raw, s),
            )
        }
    }

    /// Queues the copy on `stream`; host operands are refused (see
    /// [`run_async_host`](Self::run_async_host)).
    #[wraps(cuMemcpy2DAsync)]
    #[track_caller]
    pub fn run_async(self, stream: &Stream) -> Result<()> {
        // SAFETY: host operands are refused, so no borrow ends before the copy runs that
        // the owners' drops do not order (cuMemFree and cuArrayDestroy wait for it).
        unsafe { self.run_on(stream, false) }
    }

    /// Queues the copy on `stream`, host operands included.
    ///
    /// # Safety
    /// Host memory of the copy must stay valid (and the destination untouched by the
    /// host, the source unchanged) until the stream has executed the copy.
    #[wraps(cuMemcpy2DAsync)]
    #[track_caller]
    pub unsafe fn run_async_host(self, stream: &Stream) -> Result<()> {
        // SAFETY: the caller's promise for host memory.
        unsafe { self.run_on(stream, true) }
    }

    #[track_caller]
    unsafe fn run_on(self, stream: &Stream, allow_host: bool) -> Result<()> {
        let Some(p) = self.plan("Copy2D::run_async")? else {
            return Ok(());
        };
        let raw = p.raw_2d();
        // SAFETY: the calls run the plan's copy; `execute` checks the streams, and the
        // caller keeps host memory valid.
        unsafe {
            p.execute(
                "Copy2D::run_async",
                Some((stream, allow_host)),
                ("cuMemcpy2D_v2", "cuMemcpy2DAsync_v2"),
                || sys::cuMemcpy2D(&raw),
                |s| sys::cuMemcpy2DAsync(&raw, s),
            )
        }
    }
}

/// A 3D copy of `width × height × depth` elements (`cuMemcpy3D_v2`, `cuMemcpy3DAsync_v2`;
/// between contexts `cuMemcpy3DPeer`, `cuMemcpy3DPeerAsync`). Linear operands give a row
/// pitch and the rows per slice; arrays address layers (layered, cubemap faces) as `z`.
#[doc(alias = "CUDA_MEMCPY3D")]
#[must_use = "a copy builder does nothing until run"]
pub struct Copy3D<'a, T: DeviceRepr> {
    extent: [usize; 3],
    src: Option<Operand<'a>>,
    dst: Option<Operand<'a>>,
    src_origin: [usize; 3],
    dst_origin: [usize; 3],
    _marker: PhantomData<&'a mut [T]>,
}

impl<'a, T: DeviceRepr> Copy3D<'a, T> {
    /// A copy of `depth` slices of `height` rows of `width` elements.
    #[inline]
    pub fn new(width: usize, height: usize, depth: usize) -> Self {
        Copy3D {
            extent: [width, height, depth],
            src: None,
            dst: None,
            src_origin: [0; 3],
            dst_origin: [0; 3],
            _marker: PhantomData,
        }
    }

    builder_operands!(Copy3D, 3);

    /// The source is host memory: rows `pitch` elements apart, slices `rows` rows apart.
    #[inline]
    pub fn from_host(mut self, src: &'a [T], pitch: usize, rows: usize) -> Self {
        self.src = Some(host_op::<T>(
            src.as_ptr().cast_mut().cast(),
            src.len(),
            pitch,
            Some(rows),
        ));
        self
    }

    /// The destination is host memory: rows `pitch` elements apart, slices `rows` rows apart.
    #[inline]
    pub fn to_host(mut self, dst: &'a mut [T], pitch: usize, rows: usize) -> Self {
        self.dst = Some(host_op::<T>(
            dst.as_mut_ptr().cast(),
            dst.len(),
            pitch,
            Some(rows),
        ));
        self
    }

    /// The source is linear device memory: rows `pitch` elements apart, slices `rows` rows
    /// apart.
    #[inline]
    pub fn from_device(mut self, src: DeviceSlice<'a, T>, pitch: usize, rows: usize) -> Self {
        self.src = Some(device_op::<T>(
            src.as_raw(),
            src.len(),
            src.home(),
            src.context(),
            pitch,
            Some(rows),
        ));
        self
    }

    /// The destination is linear device memory: rows `pitch` elements apart, slices `rows`
    /// rows apart.
    #[inline]
    pub fn to_device(mut self, dst: DeviceSliceMut<'a, T>, pitch: usize, rows: usize) -> Self {
        self.dst = Some(device_op::<T>(
            dst.as_raw(),
            dst.len(),
            dst.home(),
            dst.context(),
            pitch,
            Some(rows),
        ));
        self
    }

    /// Where the region starts in the source: element `x` of row `y` of slice (or layer) `z`.
    #[inline]
    pub fn src_origin(mut self, x: usize, y: usize, z: usize) -> Self {
        self.src_origin = [x, y, z];
        self
    }

    /// Where the region starts in the destination.
    #[inline]
    pub fn dst_origin(mut self, x: usize, y: usize, z: usize) -> Self {
        self.dst_origin = [x, y, z];
        self
    }

    /// The checked copy as graph memcpy node parameters (see `Graph::add_copy_3d`); an
    /// empty copy is [`LayoutError::ZeroExtent`].
    pub(crate) fn node_params(self, what: &'static str) -> Result<NodeCopy<'a>> {
        let extent = self.extent;
        match self.plan(what, false)? {
            Some(p) => Ok(owned_node(&p)),
            None => Err(zero_extent(what, extent)),
        }
    }

    fn plan(self, what: &'static str, peer: bool) -> Result<Option<Plan<'a>>> {
        plan(
            what,
            self.src,
            self.dst,
            self.src_origin,
            self.dst_origin,
            self.extent,
            size_of::<T>(),
            peer,
        )
    }

    /// Runs the copy within one context; see [`Copy2D::run`] for when it returns.
    #[wraps(cuMemcpy3D)]
    #[track_caller]
    pub fn run(self) -> Result<()> {
        let Some(p) = self.plan("Copy3D::run", false)? else {
            return Ok(());
        };
        let raw = p.raw_3d();
        // SAFETY: as in `Copy2D::run`.
        unsafe {
            p.execute(
                "Copy3D::run",
                None,
                ("cuMemcpy3D_v2", "cuMemcpy3DAsync_v2"),
                || sys::cuMemcpy3D(&raw),
                |s| sys::cuMemcpy3DAsync(&raw, s),
            )
        }
    }

    /// Queues the copy on `stream`; host operands are refused.
    #[wraps(cuMemcpy3DAsync)]
    #[track_caller]
    pub fn run_async(self, stream: &Stream) -> Result<()> {
        // SAFETY: no host operands (refused).
        unsafe { self.run_on(stream, false) }
    }

    /// Queues the copy on `stream`, host operands included.
    ///
    /// # Safety
    /// As for [`Copy2D::run_async_host`].
    #[wraps(cuMemcpy3DAsync)]
    #[track_caller]
    pub unsafe fn run_async_host(self, stream: &Stream) -> Result<()> {
        // SAFETY: the caller's promise for host memory.
        unsafe { self.run_on(stream, true) }
    }

    #[track_caller]
    unsafe fn run_on(self, stream: &Stream, allow_host: bool) -> Result<()> {
        let Some(p) = self.plan("Copy3D::run_async", false)? else {
            return Ok(());
        };
        let raw = p.raw_3d();
        // SAFETY: as in `Copy2D::run_on`.
        unsafe {
            p.execute(
                "Copy3D::run_async",
                Some((stream, allow_host)),
                ("cuMemcpy3D_v2", "cuMemcpy3DAsync_v2"),
                || sys::cuMemcpy3D(&raw),
                |s| sys::cuMemcpy3DAsync(&raw, s),
            )
        }
    }

    /// Runs the copy between operands of different contexts (typically devices); works
    /// without peer access (through the host then).
    #[wraps(cuMemcpy3DPeer)]
    #[track_caller]
    pub fn run_peer(self) -> Result<()> {
        let Some(p) = self.plan("Copy3D::run_peer", true)? else {
            return Ok(());
        };
        if !p.src.home().is_null() || !p.dst.home().is_null() {
            // Blocking peer copies of stream-ordered memory: queue on that stream and wait.
            let home = p.blocking_home("Copy3D::run_peer")?;
            let raw = p.raw_peer();
            let _cur = p.ctx.enter()?;
            return blocking(
                home,
                ("cuMemcpy3DPeer", "cuMemcpy3DPeerAsync"),
                // SAFETY: unreachable (home is not null).
                || unsafe { sys::cuMemcpy3DPeer(&raw) },
                // SAFETY: operands borrowed and checked; on the memory's stream, synchronised.
                |s| unsafe { sys::cuMemcpy3DPeerAsync(&raw, s) },
            );
        }
        let raw = p.raw_peer();
        let _cur = p.ctx.enter()?;
        call!(
            // SAFETY: every operand is borrowed for 'a (with its context) and the region was
            // checked to lie inside each.
            unsafe { sys::cuMemcpy3DPeer(&raw) },
        )?;
        // The copy may still run on the destination context's legacy stream: the source's
        // context waits for it before releasing memory (see `context::fence`).
        match p.src.ctx {
            Some(c) => super::view::fence_if_foreign(c, p.ctx, sys::CU_STREAM_LEGACY),
            None => Ok(()),
        }
    }

    /// Queues the copy between contexts on `stream`, a stream of the destination's context;
    /// host operands and stream-ordered sources of other contexts are refused.
    #[wraps(cuMemcpy3DPeerAsync)]
    #[track_caller]
    pub fn run_peer_async(self, stream: &Stream) -> Result<()> {
        let Some(p) = self.plan("Copy3D::run_peer_async", true)? else {
            return Ok(());
        };
        if p.src.is_host() || p.dst.is_host() {
            return Err(Error::InvalidArgument(
                "Copy3D::run_peer_async: host memory in a copy on a stream would be released \
                 before the copy runs"
                    .into(),
            ));
        }
        check_stream("Copy3D::run_peer_async", p.ctx, p.dst.home(), stream)?;
        let src_home = p.src.home();
        if !src_home.is_null() && src_home != super::view::stream_identity(stream.as_raw()) {
            return Err(Error::StreamMismatch {
                what: "Copy3D::run_peer_async",
                expected: src_home as usize,
                found: stream.as_raw() as usize,
            });
        }
        let raw = p.raw_peer();
        {
            let _cur = p.ctx.enter()?;
            call!(
                // SAFETY: operands borrowed and checked; the destination is ordered on
                // `stream` or released by a call that waits for its context's work; the
                // source is not ordered on another stream, and its context waits for the
                // fence recorded below before releasing.
                unsafe { sys::cuMemcpy3DPeerAsync(&raw, stream.as_raw()) },
            )?;
        }
        match p.src.ctx {
            Some(c) => super::view::fence_if_foreign(c, p.ctx, stream.as_raw()),
            None => Ok(()),
        }
    }
}

/// The node parameters of a plan, borrowing its context for the plan's lifetime.
fn owned_node<'a>(p: &Plan<'a>) -> NodeCopy<'a> {
    let NodeCopy { raw, .. } = p.node();
    NodeCopy { raw, ctx: p.ctx }
}

/// The error of a copy with an empty extent where one is not allowed.
fn zero_extent(what: &'static str, extent: [usize; 3]) -> Error {
    Error::Layout(LayoutError::ZeroExtent {
        what,
        axis: match extent.iter().position(|&e| e == 0) {
            Some(0) => "width",
            Some(1) => "height",
            _ => "depth",
        },
    })
}

impl<T: DeviceRepr> DeviceSliceMut<'_, T> {
    /// Copies `src` into the view by unified address: the driver tells device, managed and
    /// mapped host memory apart, and either side may belong to another context. The lengths
    /// must agree.
    ///
    /// Calls `cuMemcpy` (for stream-ordered memory, `cuMemcpyAsync` on its stream and
    /// `cuStreamSynchronize`).
    #[wraps(cuMemcpy, cuMemcpyAsync)]
    #[track_caller]
    pub fn copy_from_unified(&mut self, src: &DeviceSlice<'_, T>) -> Result<()> {
        check_len("copy_from_unified", self.len(), src.len())?;
        let home = common_home(
            "copy_from_unified",
            self.as_view()
                .stream_order()
                .unwrap_or(std::ptr::null_mut()),
            src.stream_order().unwrap_or(std::ptr::null_mut()),
        )?;
        let bytes = self.bytes();
        if bytes == 0 {
            return Ok(());
        }
        let _cur = self.context().enter()?;
        let (dst, src) = (self.as_raw(), src.as_raw());
        blocking(
            home,
            ("cuMemcpy", "cuMemcpyAsync"),
            // SAFETY: both views borrow `bytes` bytes of live memory (lengths checked), the
            // destination exclusively; unified addressing identifies both.
            || unsafe { sys::cuMemcpy(dst, src, bytes) },
            // SAFETY: as above, on the stream the memory is ordered on.
            |s| unsafe { sys::cuMemcpyAsync(dst, src, bytes, s) },
        )
    }
}

impl<T: DeviceRepr> DeviceSliceMut<'_, T> {
    /// Queues a copy of `src` into the view by unified address on `stream` (a stream of the
    /// view's context; stream-ordered memory only on its own stream). The lengths must agree.
    #[wraps(cuMemcpyAsync)]
    #[track_caller]
    pub fn copy_from_unified_async(
        &mut self,
        src: &DeviceSlice<'_, T>,
        stream: &Stream,
    ) -> Result<()> {
        check_len("copy_from_unified_async", self.len(), src.len())?;
        let dst_home = self
            .as_view()
            .stream_order()
            .unwrap_or(std::ptr::null_mut());
        check_stream("copy_from_unified_async", self.context(), dst_home, stream)?;
        check_stream(
            "copy_from_unified_async",
            src.context(),
            src.stream_order().unwrap_or(std::ptr::null_mut()),
            stream,
        )?;
        let bytes = self.bytes();
        if bytes == 0 {
            return Ok(());
        }
        let _cur = self.context().enter()?;
        call!(
            // SAFETY: both views borrow `bytes` bytes of live memory of the stream's context
            // (lengths and streams checked); memory not ordered on a stream is freed by calls
            // that wait for the copy.
            unsafe { sys::cuMemcpyAsync(self.as_raw(), src.as_raw(), bytes, stream.as_raw()) },
        )
    }
}

/// Checks the pairs of a batch: equal counts, equal lengths, streams allowed.
#[track_caller]
fn batch_pairs<T: DeviceRepr>(
    what: &'static str,
    dsts: &[DeviceSliceMut<'_, T>],
    srcs: &[DeviceSlice<'_, T>],
    stream: &Stream,
) -> Result<(Vec<sys::CUdeviceptr>, Vec<sys::CUdeviceptr>, Vec<usize>)> {
    check_len(what, dsts.len(), srcs.len())?;
    let (mut d, mut s, mut n) = (Vec::new(), Vec::new(), Vec::new());
    for (dst, src) in dsts.iter().zip(srcs) {
        check_len(what, dst.len(), src.len())?;
        let dh = dst.as_view().stream_order().unwrap_or(std::ptr::null_mut());
        check_stream(what, dst.context(), dh, stream)?;
        let sh = src.stream_order().unwrap_or(std::ptr::null_mut());
        check_stream(what, src.context(), sh, stream)?;
        if dst.bytes() > 0 {
            d.push(dst.as_raw());
            s.push(src.as_raw());
            n.push(dst.bytes());
        }
    }
    Ok((d, s, n))
}

impl Stream {
    /// Queues the copies `srcs[i]` → `dsts[i]` as one batch on this stream (CUDA 12.8+): the
    /// driver may run them concurrently; each source is read in stream order. The counts and
    /// each pair's lengths must agree.
    #[wraps(cuMemcpyBatchAsync)]
    #[track_caller]
    pub fn copy_batch<T: DeviceRepr>(
        &self,
        dsts: &mut [DeviceSliceMut<'_, T>],
        srcs: &[DeviceSlice<'_, T>],
    ) -> Result<()> {
        let (mut d, mut s, mut n) = batch_pairs("Stream::copy_batch", dsts, srcs, self)?;
        if d.is_empty() {
            return Ok(());
        }
        let mut attrs = sys::CUmemcpyAttributes {
            srcAccessOrder: sys::CU_MEMCPY_SRC_ACCESS_ORDER_STREAM,
            ..Default::default()
        };
        let mut idx = 0usize;
        let _cur = self.context().enter()?;
        call!(
            // SAFETY: `d`, `s`, `n` hold `d.len()` pointer pairs of live views (lengths and
            // streams checked, destinations borrowed exclusively); one attribute set applies
            // from copy 0.
            unsafe {
                newer::cuMemcpyBatchAsync_v2()?(
                    d.as_mut_ptr(),
                    s.as_mut_ptr(),
                    n.as_mut_ptr(),
                    d.len(),
                    &mut attrs,
                    &mut idx,
                    1,
                    self.as_raw(),
                )
            },
        )
    }
}

impl Stream {
    /// [`copy_batch`](Self::copy_batch) through the 3D batch API (`cuMemcpy3DBatchAsync`,
    /// CUDA 12.8+), each copy a one-row box of pointer operands.
    #[wraps(cuMemcpy3DBatchAsync)]
    #[track_caller]
    pub fn copy_batch_3d<T: DeviceRepr>(
        &self,
        dsts: &mut [DeviceSliceMut<'_, T>],
        srcs: &[DeviceSlice<'_, T>],
    ) -> Result<()> {
        let (d, s, n) = batch_pairs("Stream::copy_batch_3d", dsts, srcs, self)?;
        if d.is_empty() {
            return Ok(());
        }
        let operand = |ptr: sys::CUdeviceptr, bytes: usize| sys::CUmemcpy3DOperand {
            type_: sys::CU_MEMCPY_OPERAND_TYPE_POINTER,
            op: sys::CUmemcpy3DOperand_st__bindgen_ty_1 {
                ptr: sys::CUmemcpy3DOperand_st__bindgen_ty_1__bindgen_ty_1 {
                    ptr,
                    rowLength: bytes,
                    layerHeight: 1,
                    // No hint (the views are not required to be managed memory).
                    locHint: sys::CUmemLocation {
                        type_: sys::CU_MEM_LOCATION_TYPE_INVALID,
                        id: 0,
                    },
                },
            },
        };
        let mut ops: Vec<sys::CUDA_MEMCPY3D_BATCH_OP> = (0..d.len())
            .map(|i| sys::CUDA_MEMCPY3D_BATCH_OP {
                src: operand(s[i], n[i]),
                dst: operand(d[i], n[i]),
                extent: sys::CUextent3D {
                    width: n[i],
                    height: 1,
                    depth: 1,
                },
                srcAccessOrder: sys::CU_MEMCPY_SRC_ACCESS_ORDER_STREAM,
                flags: 0,
            })
            .collect();
        let _cur = self.context().enter()?;
        call!(
            // SAFETY: `ops` holds `ops.len()` copies between live views (as in copy_batch),
            // each a box of `n[i]` one-byte elements in one row.
            unsafe {
                newer::cuMemcpy3DBatchAsync_v2()?(ops.len(), ops.as_mut_ptr(), 0, self.as_raw())
            },
        )
    }
}

/// Whole-array copies to and from the host, on array views (an [`Array`](super::Array)'s
/// methods of the same names copy through its view).
impl<T: ArrayElement> ArrayRef<'_, T> {
    /// Copies the whole array into `dst`, which holds exactly [`len`](Self::len) elements
    /// (x fastest, then y, then z or layer); blocks until the copy is done.
    #[wraps(cuMemcpy3D)]
    #[track_caller]
    pub fn copy_to_host(&self, dst: &mut [T]) -> Result<()> {
        crate::memory::view::check_len("Array::copy_to_host", dst.len(), self.len())?;
        let [w, h, d] = self.desc().extent();
        Copy3D::new(w, h, d)
            .from_array(*self)
            .to_host(dst, w, h)
            .run()
    }
}

impl<T: ArrayElement> ArrayRefMut<'_, T> {
    /// Copies `src`, which holds exactly [`len`](Self::len) elements (x fastest, then y,
    /// then z or layer), into the whole array; blocks until the copy is done.
    #[wraps(cuMemcpy3D)]
    #[track_caller]
    pub fn copy_from_host(&mut self, src: &[T]) -> Result<()> {
        crate::memory::view::check_len("Array::copy_from_host", self.len(), src.len())?;
        let [w, h, d] = self.desc().extent();
        Copy3D::new(w, h, d)
            .from_host(src, w, h)
            .to_array(self.reborrow())
            .run()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn linear(
        bytes: usize,
        pitch: usize,
        row_bytes: usize,
        rows: Option<usize>,
    ) -> Operand<'static> {
        Operand {
            mem: Mem::Host {
                ptr: ptr::null_mut(),
                bytes,
            },
            ctx: None,
            pitch,
            row_bytes,
            rows,
        }
    }

    /// Whether every byte the region touches is inside the operand, by enumeration.
    fn fits_by_enumeration(op: &Operand<'_>, o: [usize; 3], e: [usize; 3], elem: usize) -> bool {
        let Mem::Host { bytes, .. } = op.mem else {
            unreachable!()
        };
        if (o[0] + e[0]) * elem > op.row_bytes {
            return false;
        }
        match op.rows {
            Some(r) if o[1] + e[1] > r => return false,
            None if o[2] + e[2] > 1 => return false,
            _ => {}
        }
        let rows = op.rows.unwrap_or(0);
        for z in o[2]..o[2] + e[2] {
            for y in o[1]..o[1] + e[1] {
                let row_start = (z * rows + y) * op.pitch;
                if row_start + (o[0] + e[0]) * elem > bytes {
                    return false;
                }
            }
        }
        true
    }

    proptest! {
        #[test]
        fn linear_regions_are_checked_exactly(
            bytes in 0usize..600, pitch in 1usize..40, slack in 0usize..8,
            rows in proptest::option::of(1usize..8),
            ox in 0usize..6, oy in 0usize..6, oz in 0usize..3,
            ex in 1usize..6, ey in 1usize..6, ez in 1usize..3, elem in 1usize..5,
        ) {
            let op = linear(bytes, pitch + slack, pitch, rows);
            let (o, e) = ([ox, oy, oz], [ex, ey, ez]);
            let r = check_region("t", "source", &op, o, e, elem);
            prop_assert_eq!(r.is_ok(), fits_by_enumeration(&op, o, e, elem), "{:?}", r);
            if let Err(err) = r {
                let named = matches!(
                    err,
                    Error::Layout(LayoutError::RegionOutOfBounds { operand: "source", .. })
                );
                prop_assert!(named);
            }
        }

        #[test]
        fn array_regions_are_checked_per_axis(
            w in 1usize..10, h in 1usize..10, d in 1usize..10,
            o in proptest::array::uniform3(0usize..12), e in proptest::array::uniform3(1usize..12),
        ) {
            let op = Operand {
                mem: Mem::Array { raw: ptr::null_mut(), extent: Some([w, h, d]) },
                ctx: None, pitch: 0, row_bytes: 0, rows: None,
            };
            let fits = o[0] + e[0] <= w && o[1] + e[1] <= h && o[2] + e[2] <= d;
            prop_assert_eq!(check_region("t", "destination", &op, o, e, 4).is_ok(), fits);
        }
    }

    #[test]
    fn huge_regions_overflow_into_errors() {
        let op = linear(100, 10, 10, Some(10));
        assert!(check_region("t", "source", &op, [usize::MAX, 0, 0], [2, 1, 1], 1).is_err());
        assert!(check_region("t", "source", &op, [0, 0, 0], [1, 1, usize::MAX], 1).is_err());
        let op = linear(usize::MAX, usize::MAX, usize::MAX, Some(usize::MAX));
        assert!(check_region("t", "source", &op, [0, 0, 0], [1, 3, 3], 1).is_err());
    }

    #[test]
    fn host_to_host_and_missing_operands_are_refused() {
        let a = [0u8; 16];
        let mut b = [0u8; 16];
        let e = Copy2D::new(4, 4)
            .from_host(&a, 4)
            .to_host(&mut b, 4)
            .run()
            .unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
        let e = Copy2D::<u8>::new(4, 4).from_host(&a, 4).run().unwrap_err();
        assert!(e.to_string().contains("source and a destination"), "{e}");
        // Out of bounds before anything else: a 4x5 region of a 16-byte slice.
        let e = Copy2D::new(4, 5)
            .from_host(&a, 4)
            .to_host(&mut b, 4)
            .run()
            .unwrap_err();
        assert!(
            matches!(
                e,
                Error::Layout(LayoutError::RegionOutOfBounds {
                    operand: "source",
                    axis: "bytes",
                    end: 20,
                    limit: 16,
                    ..
                })
            ),
            "{e:?}"
        );
        // An empty copy does nothing.
        Copy2D::new(0, 5)
            .from_host(&a, 4)
            .to_host(&mut b, 4)
            .run()
            .unwrap();
    }
}
