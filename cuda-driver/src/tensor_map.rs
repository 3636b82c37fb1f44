//! Tensor Map Object Management: [`TensorMap`], the descriptor through which Hopper's
//! tensor memory accelerator (`cp.async.bulk.tensor`) copies tiles of a tensor in global
//! memory to and from shared memory. Encoded on the host ([`TensorMapTiled`],
//! [`TensorMapIm2col`], [`TensorMapIm2colWide`]) and passed to kernels by value, as a
//! `const __grid_constant__ CUtensorMap` parameter: pass `&map`.
//!
//! Every rule of the encoding that the reference states is checked in Rust first
//! ([`TensorMapTiled::check`]): rank, dimensions, strides (multiples of 16 bytes, below
//! 2^40), box sizes (at most 256), element strides (1 to 8), the base address's alignment,
//! the interleave and swizzle combinations, the out-of-bounds fill; and that the tensor fits
//! in the memory it is encoded over. A broken rule is [`TensorMapError::Rule`] naming it.
//!
//! ```no_run
//! use cuda_driver::{Device, DeviceBuffer, types::TensorMapDataType, tensor_map::TensorMapTiled};
//!
//! let ctx = Device::get(0)?.primary_context()?;
//! let (w, h) = (256u64, 128u64);
//! let buf = DeviceBuffer::<f32>::zeroed(&ctx, (w * h) as usize)?;
//! use cuda_driver::prelude::*;
//! // A row-major h x w matrix: dimension 0 is the row (fastest), tiles of 32 x 16.
//! let map = TensorMapTiled::new(TensorMapDataType::FLOAT32, &[w, h], &[w * 4], &[32, 16])
//!     .encode(&buf.as_view())?;
//! # let _ = map; Ok::<(), cuda_driver::Error>(())
//! ```
//!
//! The map holds the tensor's device address: a kernel launched with it reads that memory,
//! which the launch's `unsafe` contract keeps alive.

use std::ffi::c_void;
use std::sync::atomic::{AtomicU8, Ordering};

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

pub use crate::error::tensor_map::TensorMapError;
use crate::error::{Error, Result};
use crate::memory::view::DeviceSlice;
use crate::repr::DeviceRepr;

use crate::types::{
    TensorMapDataType, TensorMapFloatOOBfill, TensorMapIm2ColWideMode, TensorMapInterleave,
    TensorMapL2promotion, TensorMapSwizzle,
};

/// An encoded tensor map (`CUtensorMap`): 128 opaque bytes, aligned as cuda.h 13.0 aligns
/// them (128 bytes; the driver needs 64). Plain data: copy it, pass `&map` to a kernel
/// (`const __grid_constant__ CUtensorMap`), or store it in device memory.
#[derive(Clone, Copy)]
#[repr(transparent)]
#[doc(alias = "CUtensorMap")]
pub struct TensorMap(sys::CUtensorMap);

// SAFETY: 16 u64 words, no padding, any bit pattern is a value (an invalid map makes the
// TMA instruction fault, which a kernel launch's unsafe contract covers).
unsafe impl DeviceRepr for TensorMap {}

impl std::fmt::Debug for TensorMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TensorMap").finish_non_exhaustive()
    }
}

impl TensorMap {
    /// Wraps a raw map.
    pub fn from_raw(raw: sys::CUtensorMap) -> Self {
        TensorMap(raw)
    }

    /// The raw map.
    pub fn as_raw(&self) -> &sys::CUtensorMap {
        &self.0
    }

    /// Points the map at another tensor of the same shape: `memory`, which must be 16-byte
    /// aligned (32 for maps with 32-byte interleave or the 16-byte-aligned packed types,
    /// which the driver checks).
    #[wraps(cuTensorMapReplaceAddress)]
    #[track_caller]
    pub fn replace_address<T: DeviceRepr>(&mut self, memory: &DeviceSlice<'_, T>) -> Result<()> {
        check_alignment(memory.as_raw(), 16)?;
        let _cur = memory.context().enter()?;
        call!(
            // SAFETY: writes into the 64-byte-aligned map owned by self; the address is that
            // of live device memory (the map's later use is the launch's contract).
            unsafe { sys::cuTensorMapReplaceAddress(&mut self.0, memory.as_raw() as *mut c_void) },
        )
    }
}

fn rule(rule: &'static str, detail: String) -> Error {
    Error::TensorMap(TensorMapError::Rule { rule, detail })
}

#[inline(always)]
fn check_alignment(address: u64, align: u64) -> Result<()> {
    debug_assert!(align.is_power_of_two());
    // A mask, not `%`: the alignments are powers of two, and a 64-bit division would be a
    // tenth of the encode's cost.
    if address & (align - 1) != 0 {
        return Err(misaligned(address, align));
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn misaligned(address: u64, align: u64) -> Error {
    rule(
        "base address alignment",
        format!("the global address {address:#x} is not {align}-byte aligned"),
    )
}

/// Bits per element of a data type (the packed types: 4 for 16U4_ALIGN8B, 8 for the
/// 16-byte-aligned ones, gaps included), or `None` for a type this crate does not know.
pub(crate) fn element_bits(t: TensorMapDataType) -> Option<u64> {
    use TensorMapDataType as D;
    Some(match t {
        D::UINT8 => 8,
        D::UINT16 | D::FLOAT16 | D::BFLOAT16 => 16,
        D::UINT32 | D::INT32 | D::FLOAT32 | D::FLOAT32_FTZ | D::TFLOAT32 | D::TFLOAT32_FTZ => 32,
        D::UINT64 | D::INT64 | D::FLOAT64 => 64,
        D::TYPE_16U4_ALIGN8B => 4,
        D::TYPE_16U4_ALIGN16B | D::TYPE_16U6_ALIGN16B => 8,
        _ => return None,
    })
}

fn is_float(t: TensorMapDataType) -> bool {
    use TensorMapDataType as D;
    matches!(
        t,
        D::FLOAT16
            | D::FLOAT32
            | D::FLOAT64
            | D::BFLOAT16
            | D::FLOAT32_FTZ
            | D::TFLOAT32
            | D::TFLOAT32_FTZ
    )
}

#[inline]
fn aligned_16b(t: TensorMapDataType) -> bool {
    matches!(
        t,
        TensorMapDataType::TYPE_16U4_ALIGN16B | TensorMapDataType::TYPE_16U6_ALIGN16B
    )
}

/// The parameters all encodings share.
#[derive(Clone, Debug)]
struct Common {
    data_type: TensorMapDataType,
    dims: Vec<u64>,
    strides: Vec<u64>,
    /// The element strides: all 1 (one per dimension) until set, so that an encode passes
    /// them without a branch.
    element_strides: Vec<u32>,
    interleave: TensorMapInterleave,
    swizzle: TensorMapSwizzle,
    l2_promotion: TensorMapL2promotion,
    oob_fill: TensorMapFloatOOBfill,
    /// Set once a full check passed: the rules that do not depend on the address then hold
    /// until a setter changes the encoder (which clears it), so that repeated encodes check
    /// only the address and the bounds.
    rules_hold: RulesHold,
}

/// Whether an encoder's address-independent rules were checked and hold (see
/// `Common::rules_hold`), and if so the alignment the base address needs (which those rules
/// fix), so that a repeated encode checks it with one load and one mask. A relaxed atomic:
/// encoders stay `Sync`, and a stale "unchecked" only costs a full check.
#[derive(Debug, Default)]
struct RulesHold(AtomicU8);

impl Clone for RulesHold {
    fn clone(&self) -> Self {
        RulesHold(AtomicU8::new(self.0.load(Ordering::Relaxed)))
    }
}

impl RulesHold {
    /// Whether the rules hold.
    #[cfg(test)]
    fn get(&self) -> bool {
        self.alignment().is_some()
    }
    /// The base address alignment, once the rules hold.
    #[inline(always)]
    fn alignment(&self) -> Option<u64> {
        match self.0.load(Ordering::Relaxed) {
            0 => None,
            a => Some(a as u64),
        }
    }
    /// Records that the rules hold, for base addresses aligned to `alignment` (16 or 32).
    #[inline(always)]
    fn set(&self, alignment: u64) {
        debug_assert!(alignment.is_power_of_two() && alignment <= 128);
        self.0.store(alignment as u8, Ordering::Relaxed);
    }
}

impl Common {
    fn new(data_type: TensorMapDataType, dims: &[u64], strides: &[u64]) -> Self {
        Common {
            data_type,
            dims: dims.to_vec(),
            strides: strides.to_vec(),
            element_strides: vec![1; dims.len()],
            interleave: TensorMapInterleave::NONE,
            swizzle: TensorMapSwizzle::NONE,
            l2_promotion: TensorMapL2promotion::NONE,
            oob_fill: TensorMapFloatOOBfill::NONE,
            rules_hold: RulesHold::default(),
        }
    }

    /// The alignment the base address needs: 32 bytes with 32-byte interleave or for the
    /// 16-byte-aligned packed types, else 16.
    #[inline]
    fn address_alignment(&self) -> u64 {
        if self.interleave == TensorMapInterleave::INTERLEAVE_32B || aligned_16b(self.data_type) {
            32
        } else {
            16
        }
    }

    /// The bounds rule: the tensor, `bits` per element, fits in `bytes`.
    fn check_bounds(&self, bits: u64, bytes: usize) -> Result<()> {
        // The byte after the last element: the first row's bytes, plus the strides of the
        // last index of every outer dimension.
        let mut end = (self.dims[0] as u128 * bits as u128).div_ceil(8);
        for (d, s) in self.dims[1..].iter().zip(&self.strides) {
            end += (*d as u128 - 1) * *s as u128;
        }
        if end > bytes as u128 {
            return Err(rule(
                "bounds",
                format!("the tensor spans {end} bytes, but the memory holds {bytes}"),
            ));
        }
        Ok(())
    }

    fn rank(&self) -> usize {
        self.dims.len()
    }

    /// The element strides: those given, or 1 in every dimension.
    #[inline(always)]
    fn element_strides(&self) -> &[u32] {
        &self.element_strides
    }

    /// The rules every encoding shares; `inner_bytes` is the box's inner extent in bytes
    /// (tiled: box[0]; im2col: the channels), for the swizzle rule.
    fn check(
        &self,
        min_rank: usize,
        inner_bytes: u64,
        address: u64,
        available: Option<usize>,
    ) -> Result<u64> {
        let Some(bits) = element_bits(self.data_type) else {
            return Err(rule(
                "data type",
                format!("{:?} is not a data type this crate knows", self.data_type),
            ));
        };
        let rank = self.rank();
        let min_rank = if self.interleave != TensorMapInterleave::NONE {
            min_rank.max(3)
        } else {
            min_rank
        };
        if !(min_rank..=5).contains(&rank) {
            return Err(rule(
                "rank",
                format!(
                    "the rank is {rank}, but must be {min_rank} to 5{}",
                    if self.interleave != TensorMapInterleave::NONE {
                        " with interleave"
                    } else {
                        ""
                    }
                ),
            ));
        }
        let wide_align =
            self.interleave == TensorMapInterleave::INTERLEAVE_32B || aligned_16b(self.data_type);
        check_alignment(address, self.address_alignment())?;
        for (i, &d) in self.dims.iter().enumerate() {
            if d == 0 || d > 1 << 32 {
                return Err(rule(
                    "global dims",
                    format!("dimension {i} is {d}, but must be 1 to 2^32"),
                ));
            }
        }
        if aligned_16b(self.data_type) && self.dims[0] % 128 != 0 {
            return Err(rule(
                "global dims",
                format!(
                    "dimension 0 of {:?} must be a multiple of 128, not {}",
                    self.data_type, self.dims[0]
                ),
            ));
        }
        if self.data_type == TensorMapDataType::TYPE_16U4_ALIGN8B && self.dims[0] % 2 != 0 {
            return Err(rule(
                "global dims",
                format!(
                    "dimension 0 of 16U4_ALIGN8B must be even, not {}",
                    self.dims[0]
                ),
            ));
        }
        if self.strides.len() != rank - 1 {
            return Err(rule(
                "global strides",
                format!(
                    "{} strides given, but a rank-{rank} tensor has {}",
                    self.strides.len(),
                    rank - 1
                ),
            ));
        }
        let stride_unit = if wide_align { 32 } else { 16 };
        for (i, &s) in self.strides.iter().enumerate() {
            if s % stride_unit != 0 || s >= 1 << 40 {
                return Err(rule(
                    "global strides",
                    format!(
                        "stride {i} is {s} bytes, but must be a multiple of {stride_unit} below 2^40"
                    ),
                ));
            }
        }
        let es = self.element_strides();
        if es.len() != rank {
            return Err(rule(
                "element strides",
                format!("{} element strides given for rank {rank}", es.len()),
            ));
        }
        if let Some((i, s)) = es.iter().enumerate().find(|(_, &s)| !(1..=8).contains(&s)) {
            return Err(rule(
                "element strides",
                format!("element stride {i} is {s}, but must be 1 to 8"),
            ));
        }
        if self.interleave == TensorMapInterleave::INTERLEAVE_32B
            && self.swizzle != TensorMapSwizzle::SWIZZLE_32B
        {
            return Err(rule(
                "interleave/swizzle",
                format!(
                    "32-byte interleave needs SWIZZLE_32B, not {:?}",
                    self.swizzle
                ),
            ));
        }
        if self.interleave == TensorMapInterleave::NONE && self.swizzle != TensorMapSwizzle::NONE {
            let span = match self.swizzle {
                TensorMapSwizzle::SWIZZLE_32B => 32,
                TensorMapSwizzle::SWIZZLE_64B => 64,
                _ => 128,
            };
            if inner_bytes > span {
                return Err(rule(
                    "interleave/swizzle",
                    format!(
                        "the box's inner extent is {inner_bytes} bytes, more than the \
                         {span}-byte span of {:?}",
                        self.swizzle
                    ),
                ));
            }
        }
        if self.oob_fill == TensorMapFloatOOBfill::NAN_REQUEST_ZERO_FMA && !is_float(self.data_type)
        {
            return Err(rule(
                "oob fill",
                format!(
                    "NAN_REQUEST_ZERO_FMA needs a floating-point type, not {:?}",
                    self.data_type
                ),
            ));
        }
        if let Some(bytes) = available {
            self.check_bounds(bits, bytes)?;
        }
        Ok(bits)
    }
}

/// The setters and encodes every encoding shares. `driver_checks_alignment`: whether the
/// driver refuses a misaligned base address itself (`CUDA_ERROR_INVALID_VALUE`), so that a
/// repeated encode leaves that rule to it and explains a refusal afterwards (the GPU test
/// `tensor_map::the_driver_refuses_a_misaligned_base_address` proves it for each encoding
/// marked `true`).
macro_rules! common_setters {
    ($encode:ident, driver_checks_alignment: $driver_checks_alignment:expr) => {
        /// The traversal step per dimension (1 to 8; default all 1).
        pub fn element_strides(mut self, strides: &[u32]) -> Self {
            self.common.rules_hold = RulesHold::default();
            self.common.element_strides = strides.to_vec();
            self
        }

        /// The interleaved layout (default none).
        pub fn interleave(mut self, interleave: TensorMapInterleave) -> Self {
            self.common.rules_hold = RulesHold::default();
            self.common.interleave = interleave;
            self
        }

        /// The shared-memory swizzle (default none).
        pub fn swizzle(mut self, swizzle: TensorMapSwizzle) -> Self {
            self.common.rules_hold = RulesHold::default();
            self.common.swizzle = swizzle;
            self
        }

        /// The L2 promotion (default none).
        pub fn l2_promotion(mut self, l2: TensorMapL2promotion) -> Self {
            self.common.rules_hold = RulesHold::default();
            self.common.l2_promotion = l2;
            self
        }

        /// What out-of-bounds elements read as (default zero).
        pub fn oob_fill(mut self, fill: TensorMapFloatOOBfill) -> Self {
            self.common.rules_hold = RulesHold::default();
            self.common.oob_fill = fill;
            self
        }

        /// Encodes the map over `memory`, checking every rule and that the tensor fits in
        /// the view.
        #[wraps($encode)]
        #[track_caller]
        pub fn encode<T: DeviceRepr>(&self, memory: &DeviceSlice<'_, T>) -> Result<TensorMap> {
            let mut map = TensorMap(zeroed_map());
            self.encode_into(memory, &mut map)?;
            Ok(map)
        }

        /// [`encode`](Self::encode) into an existing map, which is overwritten (on an error
        /// its contents are unspecified): re-encoding a map in place costs no copy of its
        /// 128 bytes.
        #[wraps($encode)]
        #[track_caller]
        pub fn encode_into<T: DeviceRepr>(
            &self,
            memory: &DeviceSlice<'_, T>,
            map: &mut TensorMap,
        ) -> Result<()> {
            self.check_for_encode(memory.as_raw(), Some(memory.bytes()))?;
            let _cur = memory.context().enter()?;
            // SAFETY: the rules and the bounds were checked; the address is live memory.
            unsafe { self.encode_checked_into(memory.as_raw(), &mut map.0) }
        }

        /// Encodes the map over a raw device address, checking every rule but the bounds,
        /// in the current context.
        ///
        /// # Safety
        /// `address` is device memory holding the whole tensor for as long as the map is
        /// used.
        #[wraps($encode)]
        #[track_caller]
        pub unsafe fn encode_raw(&self, address: sys::CUdeviceptr) -> Result<TensorMap> {
            let mut map = TensorMap(zeroed_map());
            // SAFETY: the caller's guarantee.
            unsafe { self.encode_raw_into(address, &mut map)? };
            Ok(map)
        }

        /// [`encode_raw`](Self::encode_raw) into an existing map, which is overwritten (on an
        /// error its contents are unspecified).
        ///
        /// # Safety
        /// As for [`encode_raw`](Self::encode_raw).
        #[wraps($encode)]
        #[inline]
        #[track_caller]
        pub unsafe fn encode_raw_into(
            &self,
            address: sys::CUdeviceptr,
            map: &mut TensorMap,
        ) -> Result<()> {
            self.check_for_encode(address, None)?;
            // SAFETY: the rules were checked; the caller guarantees the memory.
            unsafe { self.encode_checked_into(address, &mut map.0) }
        }

        /// [`check`](Self::check), once: after a full check passed, only the rules that
        /// depend on the address are checked again: the bounds, and the alignment where the
        /// driver does not check it (see [`encode_checked_into`](Self::encode_checked_into)).
        #[inline]
        fn check_for_encode(&self, address: u64, available: Option<usize>) -> Result<()> {
            let c = &self.common;
            if let Some(alignment) = c.rules_hold.alignment() {
                if !$driver_checks_alignment {
                    check_alignment(address, alignment)?;
                }
                if let Some(bytes) = available {
                    // The full check passed, so the data type has a known width.
                    c.check_bounds(element_bits(c.data_type).unwrap_or(8), bytes)?;
                }
                return Ok(());
            }
            self.check(address, available)?;
            c.rules_hold.set(c.address_alignment());
            Ok(())
        }

        /// The driver's encode after [`check_for_encode`](Self::check_for_encode): a refusal
        /// that a misaligned base address explains is that rule's error, as a first encode
        /// reports it.
        ///
        /// # Safety
        /// As for `encode_unchecked_bounds_into`.
        #[inline(always)]
        #[track_caller]
        unsafe fn encode_checked_into(
            &self,
            address: sys::CUdeviceptr,
            map: &mut sys::CUtensorMap,
        ) -> Result<()> {
            // SAFETY: the caller's guarantees.
            match unsafe { self.encode_unchecked_bounds_into(address, map) } {
                Ok(()) => Ok(()),
                Err(e) => Err(self.explain_refusal(address, e)),
            }
        }

        /// The error of a refused encode: the alignment rule where the address breaks it
        /// (the other rules held), else the driver's.
        #[cold]
        #[inline(never)]
        fn explain_refusal(&self, address: u64, e: Error) -> Error {
            match check_alignment(address, self.common.address_alignment()) {
                Err(rule) => rule,
                Ok(()) => e,
            }
        }
    };
}

fn zeroed_map() -> sys::CUtensorMap {
    sys::CUtensorMap { opaque: [0; 16] }
}

/// A tiled tensor map (`cuTensorMapEncodeTiled`): boxes of `box_dims` elements of a tensor
/// of `dims` elements (dimension 0 fastest) whose outer dimensions are `strides` bytes apart.
#[doc(alias = "cuTensorMapEncodeTiled")]
#[derive(Clone, Debug)]
#[must_use = "an encoder does nothing until encode"]
pub struct TensorMapTiled {
    common: Common,
    box_dims: Vec<u32>,
}

impl TensorMapTiled {
    /// The tensor (`dims`, innermost first; `strides` in bytes of dimensions 1.., one fewer
    /// than `dims`) and the box loaded or stored at once.
    pub fn new(
        data_type: TensorMapDataType,
        dims: &[u64],
        strides: &[u64],
        box_dims: &[u32],
    ) -> Self {
        TensorMapTiled {
            common: Common::new(data_type, dims, strides),
            box_dims: box_dims.to_vec(),
        }
    }

    common_setters!(cuTensorMapEncodeTiled, driver_checks_alignment: true);

    /// Checks every rule of the encoding for the global address `address`, and, with
    /// `available` bytes, that the tensor fits: [`TensorMapError::Rule`] names the broken
    /// rule. Makes no driver call.
    pub fn check(&self, address: u64, available: Option<usize>) -> Result<()> {
        let c = &self.common;
        let rank = c.rank();
        if self.box_dims.len() != rank {
            return Err(rule(
                "box dims",
                format!(
                    "{} box dimensions given for rank {rank}",
                    self.box_dims.len()
                ),
            ));
        }
        if let Some((i, b)) = self
            .box_dims
            .iter()
            .enumerate()
            .find(|(_, &b)| !(1..=256).contains(&b))
        {
            return Err(rule(
                "box dims",
                format!("box dimension {i} is {b}, but must be 1 to 256"),
            ));
        }
        let bits = element_bits(c.data_type).unwrap_or(8);
        let inner = (self.box_dims.first().copied().unwrap_or(0) as u64 * bits).div_ceil(8);
        c.check(1, inner, address, available)?;
        if c.interleave == TensorMapInterleave::NONE && inner % 16 != 0 {
            return Err(rule(
                "box dims",
                format!("without interleave the box's inner extent must be a multiple of 16 bytes, not {inner}"),
            ));
        }
        Ok(())
    }

    /// # Safety
    /// The rules were checked; `address` holds the tensor.
    #[wraps(cuTensorMapEncodeTiled)]
    #[inline]
    #[track_caller]
    unsafe fn encode_unchecked_bounds_into(
        &self,
        address: sys::CUdeviceptr,
        map: &mut sys::CUtensorMap,
    ) -> Result<()> {
        let c = &self.common;
        let es = c.element_strides();
        call!(
            // SAFETY: the arrays have `rank` (strides `rank - 1`) entries, checked; the map is
            // 64-byte aligned; writes only the map.
            unsafe {
                sys::cuTensorMapEncodeTiled(
                    map,
                    c.data_type.as_raw(),
                    c.rank() as u32,
                    address as *mut c_void,
                    c.dims.as_ptr(),
                    c.strides.as_ptr(),
                    self.box_dims.as_ptr(),
                    es.as_ptr(),
                    c.interleave.as_raw(),
                    c.swizzle.as_raw(),
                    c.l2_promotion.as_raw(),
                    c.oob_fill.as_raw(),
                )
            },
        )
    }
}

/// The signed range of each pixel-box corner offset for a tensor of `rank` (3, 4, 5).
fn corner_range(rank: usize) -> (i32, i32) {
    match rank {
        3 => (-32768, 32767),
        4 => (-128, 127),
        _ => (-16, 15),
    }
}

fn check_pixels(channels: u32, pixels: Option<u32>, c: &Common) -> Result<u64> {
    if !(1..=256).contains(&channels) {
        return Err(rule(
            "channels per pixel",
            format!("{channels} channels per pixel, but must be 1 to 256"),
        ));
    }
    if aligned_16b(c.data_type) && channels != 128 {
        return Err(rule(
            "channels per pixel",
            format!(
                "{:?} needs 128 channels per pixel, not {channels}",
                c.data_type
            ),
        ));
    }
    if let Some(p) = pixels {
        if !(1..=1024).contains(&p) {
            return Err(rule(
                "pixels per column",
                format!("{p} pixels per column, but must be 1 to 1024"),
            ));
        }
    }
    let bits = element_bits(c.data_type).unwrap_or(8);
    Ok((channels as u64 * bits).div_ceil(8))
}

/// An im2col tensor map (`cuTensorMapEncodeIm2col`) of a rank 3 to 5 tensor (NWC, NHWC,
/// NDHWC; dimension 0 the channels): `pixels_per_column` pixels of `channels_per_pixel`
/// channels, from a bounding box given by the corner offsets (one per spatial dimension).
#[doc(alias = "cuTensorMapEncodeIm2col")]
#[derive(Clone, Debug)]
#[must_use = "an encoder does nothing until encode"]
pub struct TensorMapIm2col {
    common: Common,
    lower: Vec<i32>,
    upper: Vec<i32>,
    channels_per_pixel: u32,
    pixels_per_column: u32,
}

impl TensorMapIm2col {
    /// The tensor, the bounding box's corners (`rank - 2` offsets each: W; H, W; D, H, W)
    /// and the pixels and channels each load covers.
    pub fn new(
        data_type: TensorMapDataType,
        dims: &[u64],
        strides: &[u64],
        lower_corner: &[i32],
        upper_corner: &[i32],
        channels_per_pixel: u32,
        pixels_per_column: u32,
    ) -> Self {
        TensorMapIm2col {
            common: Common::new(data_type, dims, strides),
            lower: lower_corner.to_vec(),
            upper: upper_corner.to_vec(),
            channels_per_pixel,
            pixels_per_column,
        }
    }

    common_setters!(cuTensorMapEncodeIm2col, driver_checks_alignment: true);

    /// Checks every rule of the encoding (see [`TensorMapTiled::check`]).
    pub fn check(&self, address: u64, available: Option<usize>) -> Result<()> {
        let c = &self.common;
        let inner = check_pixels(self.channels_per_pixel, Some(self.pixels_per_column), c)?;
        c.check(3, inner, address, available)?;
        let rank = c.rank();
        let (lo, hi) = corner_range(rank);
        for (name, corner) in [("lower", &self.lower), ("upper", &self.upper)] {
            if corner.len() != rank - 2 {
                return Err(rule(
                    "pixel box corners",
                    format!(
                        "the {name} corner has {} offsets, but a rank-{rank} tensor needs {}",
                        corner.len(),
                        rank - 2
                    ),
                ));
            }
            if let Some(v) = corner.iter().find(|v| !(lo..=hi).contains(*v)) {
                return Err(rule(
                    "pixel box corners",
                    format!("the {name} corner offset {v} is outside {lo}..={hi} for rank {rank}"),
                ));
            }
        }
        Ok(())
    }

    /// # Safety
    /// The rules were checked; `address` holds the tensor.
    #[wraps(cuTensorMapEncodeIm2col)]
    #[inline]
    #[track_caller]
    unsafe fn encode_unchecked_bounds_into(
        &self,
        address: sys::CUdeviceptr,
        map: &mut sys::CUtensorMap,
    ) -> Result<()> {
        let c = &self.common;
        let es = c.element_strides();
        call!(
            // SAFETY: array lengths checked against the rank; the map is aligned; writes only
            // the map.
            unsafe {
                sys::cuTensorMapEncodeIm2col(
                    map,
                    c.data_type.as_raw(),
                    c.rank() as u32,
                    address as *mut c_void,
                    c.dims.as_ptr(),
                    c.strides.as_ptr(),
                    self.lower.as_ptr(),
                    self.upper.as_ptr(),
                    self.channels_per_pixel,
                    self.pixels_per_column,
                    es.as_ptr(),
                    c.interleave.as_raw(),
                    c.swizzle.as_raw(),
                    c.l2_promotion.as_raw(),
                    c.oob_fill.as_raw(),
                )
            },
        )
    }
}

/// An im2col-wide tensor map (`cuTensorMapEncodeIm2colWide`, CUDA 12.8, resolved at run
/// time; devices of compute capability 10.0 and up): loads along the W dimension only, the
/// box given by two W offsets. Its swizzle is one of `SWIZZLE_64B`, `SWIZZLE_128B` (the
/// default here) and `SWIZZLE_128B_ATOM_32B`; the reference allows no other.
#[doc(alias = "cuTensorMapEncodeIm2colWide")]
#[derive(Clone, Debug)]
#[must_use = "an encoder does nothing until encode"]
pub struct TensorMapIm2colWide {
    common: Common,
    lower_w: i32,
    upper_w: i32,
    channels_per_pixel: u32,
    pixels_per_column: u32,
    mode: TensorMapIm2ColWideMode,
}

impl TensorMapIm2colWide {
    /// The tensor, the W offsets of the bounding box, and the pixels and channels per load.
    pub fn new(
        data_type: TensorMapDataType,
        dims: &[u64],
        strides: &[u64],
        lower_corner_w: i32,
        upper_corner_w: i32,
        channels_per_pixel: u32,
        pixels_per_column: u32,
    ) -> Self {
        let mut common = Common::new(data_type, dims, strides);
        common.swizzle = TensorMapSwizzle::SWIZZLE_128B;
        TensorMapIm2colWide {
            common,
            lower_w: lower_corner_w,
            upper_w: upper_corner_w,
            channels_per_pixel,
            pixels_per_column,
            mode: TensorMapIm2ColWideMode::W,
        }
    }

    /// The wide mode (default `W`; `W128` ignores the pixels per column).
    pub fn mode(mut self, mode: TensorMapIm2ColWideMode) -> Self {
        self.common.rules_hold = RulesHold::default();
        self.mode = mode;
        self
    }

    // Wide im2col needs compute capability 10.0, which the GPU tests have not had: its encode
    // keeps checking the alignment itself.
    common_setters!(cuTensorMapEncodeIm2colWide, driver_checks_alignment: false);

    /// Checks every rule of the encoding (see [`TensorMapTiled::check`]).
    pub fn check(&self, address: u64, available: Option<usize>) -> Result<()> {
        let c = &self.common;
        let pixels = (self.mode != TensorMapIm2ColWideMode::W128).then_some(self.pixels_per_column);
        let inner = check_pixels(self.channels_per_pixel, pixels, c)?;
        if !matches!(
            c.swizzle,
            TensorMapSwizzle::SWIZZLE_64B
                | TensorMapSwizzle::SWIZZLE_128B
                | TensorMapSwizzle::SWIZZLE_128B_ATOM_32B
        ) {
            return Err(rule(
                "interleave/swizzle",
                format!(
                    "im2col-wide needs SWIZZLE_64B, SWIZZLE_128B or SWIZZLE_128B_ATOM_32B, not {:?}",
                    c.swizzle
                ),
            ));
        }
        c.check(3, inner, address, available)?;
        for (name, v) in [("lower", self.lower_w), ("upper", self.upper_w)] {
            if !(-32768..=32767).contains(&v) {
                return Err(rule(
                    "pixel box corners",
                    format!("the {name} W offset {v} is outside -32768..=32767"),
                ));
            }
        }
        Ok(())
    }

    /// # Safety
    /// The rules were checked; `address` holds the tensor.
    #[wraps(cuTensorMapEncodeIm2colWide)]
    #[inline]
    #[track_caller]
    unsafe fn encode_unchecked_bounds_into(
        &self,
        address: sys::CUdeviceptr,
        map: &mut sys::CUtensorMap,
    ) -> Result<()> {
        let c = &self.common;
        let es = c.element_strides();
        call!(
            // SAFETY: `f` is the driver's cuTensorMapEncodeIm2colWide of this signature;
            // array lengths checked; writes only the map.
            unsafe {
                crate::entry_point::newer::cuTensorMapEncodeIm2colWide()?(
                    map,
                    c.data_type.as_raw(),
                    c.rank() as u32,
                    address as *mut c_void,
                    c.dims.as_ptr(),
                    c.strides.as_ptr(),
                    self.lower_w,
                    self.upper_w,
                    self.channels_per_pixel,
                    self.pixels_per_column,
                    es.as_ptr(),
                    c.interleave.as_raw(),
                    self.mode.as_raw(),
                    c.swizzle.as_raw(),
                    c.l2_promotion.as_raw(),
                    c.oob_fill.as_raw(),
                )
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ErrorCode;
    use proptest::prelude::*;

    fn rule_of(r: Result<()>) -> Option<&'static str> {
        match r {
            Ok(()) => None,
            Err(Error::TensorMap(TensorMapError::Rule { rule, .. })) => Some(rule),
            Err(e) => panic!("not a rule error: {e:?}"),
        }
    }

    fn tiled(dims: &[u64], strides: &[u64], boxes: &[u32]) -> TensorMapTiled {
        TensorMapTiled::new(TensorMapDataType::FLOAT32, dims, strides, boxes)
    }

    #[test]
    fn a_plain_tile_passes() {
        let t = tiled(&[256, 128], &[1024], &[32, 16]);
        t.check(0x1000, Some(256 * 128 * 4)).unwrap();
        assert_eq!(
            rule_of(t.check(0x1000, Some(256 * 128 * 4 - 1))),
            Some("bounds")
        );
        assert_eq!(std::mem::size_of::<TensorMap>(), 128);
        assert!(std::mem::align_of::<TensorMap>() >= 64);
        assert_eq!(<&TensorMap as crate::launch::KernelArg>::PARAM_SIZE, 128);
    }

    #[test]
    fn repeated_encodes_recheck_the_address_and_the_bounds_only() {
        let t = tiled(&[256, 128], &[1024], &[32, 16]);
        let bytes = 256 * 128 * 4;
        assert!(!t.common.rules_hold.get());
        // A failed check records nothing.
        assert_eq!(
            rule_of(t.check_for_encode(0x1008, None)),
            Some("base address alignment")
        );
        assert!(!t.common.rules_hold.get());
        t.check_for_encode(0x1000, Some(bytes)).unwrap();
        assert!(t.common.rules_hold.get());
        // The cached path still checks the bounds; the alignment it leaves to the driver,
        // whose refusal is explained as the rule (the driver's part is the GPU test
        // `tensor_map::the_driver_refuses_a_misaligned_base_address`).
        t.check_for_encode(0x1008, None).unwrap();
        let refused = Error::Driver {
            call: "cuTensorMapEncodeTiled",
            code: ErrorCode::INVALID_VALUE,
            location: std::panic::Location::caller(),
        };
        assert_eq!(
            rule_of(Err(t.explain_refusal(0x1008, refused))),
            Some("base address alignment")
        );
        let refused = Error::Driver {
            call: "cuTensorMapEncodeTiled",
            code: ErrorCode::INVALID_VALUE,
            location: std::panic::Location::caller(),
        };
        assert!(matches!(
            t.explain_refusal(0x1000, refused),
            Error::Driver {
                code: ErrorCode::INVALID_VALUE,
                ..
            }
        ));
        // Wide im2col checks the alignment itself on the cached path too.
        let w = TensorMapIm2colWide::new(
            TensorMapDataType::FLOAT32,
            &[64, 8, 8],
            &[256, 2048],
            0,
            0,
            64,
            8,
        );
        w.common.rules_hold.set(16);
        assert_eq!(
            rule_of(w.check_for_encode(0x1008, None)),
            Some("base address alignment")
        );
        assert_eq!(
            rule_of(t.check_for_encode(0x1000, Some(bytes - 1))),
            Some("bounds")
        );
        t.check_for_encode(0x2000, Some(bytes)).unwrap();
        // A clone keeps the result; a setter clears it, and its rule is checked again.
        assert!(t.clone().common.rules_hold.get());
        let t = t.element_strides(&[1, 9]);
        assert!(!t.common.rules_hold.get());
        assert_eq!(
            rule_of(t.check_for_encode(0x1000, None)),
            Some("element strides")
        );
    }

    #[test]
    fn each_rule_is_named() {
        let ok = |t: TensorMapTiled| rule_of(t.check(0x1000, None));
        assert_eq!(ok(tiled(&[], &[], &[])), Some("rank"));
        assert_eq!(ok(tiled(&[4; 6], &[16; 5], &[4; 6])), Some("rank"));
        assert_eq!(ok(tiled(&[4; 2], &[16], &[4; 3])), Some("box dims"));
        assert_eq!(ok(tiled(&[64, 0], &[256], &[4, 1])), Some("global dims"));
        assert_eq!(ok(tiled(&[64, 2], &[250], &[4, 1])), Some("global strides"));
        assert_eq!(
            ok(tiled(&[64, 2], &[1 << 40], &[4, 1])),
            Some("global strides")
        );
        assert_eq!(
            ok(tiled(&[64, 2], &[256, 256], &[4, 1])),
            Some("global strides")
        );
        assert_eq!(ok(tiled(&[64, 2], &[256], &[257, 1])), Some("box dims"));
        assert_eq!(ok(tiled(&[64, 2], &[256], &[3, 1])), Some("box dims"));
        assert_eq!(
            ok(tiled(&[64, 2], &[256], &[4, 1]).element_strides(&[1, 9])),
            Some("element strides")
        );
        assert_eq!(
            ok(tiled(&[64, 2], &[256], &[64, 1]).swizzle(TensorMapSwizzle::SWIZZLE_64B)),
            Some("interleave/swizzle")
        );
        assert_eq!(
            ok(tiled(&[64, 2], &[256], &[16, 1]).swizzle(TensorMapSwizzle::SWIZZLE_64B)),
            None
        );
        assert_eq!(
            ok(tiled(&[64, 2, 2], &[256, 512], &[4, 1, 1])
                .interleave(TensorMapInterleave::INTERLEAVE_32B)),
            Some("interleave/swizzle")
        );
        assert_eq!(
            ok(tiled(&[64, 2], &[256], &[4, 1]).interleave(TensorMapInterleave::INTERLEAVE_16B)),
            Some("rank")
        );
        assert_eq!(
            rule_of(tiled(&[64, 2], &[256], &[4, 1]).check(0x1008, None)),
            Some("base address alignment")
        );
        let int = TensorMapTiled::new(TensorMapDataType::INT32, &[64], &[], &[4])
            .oob_fill(TensorMapFloatOOBfill::NAN_REQUEST_ZERO_FMA);
        assert_eq!(rule_of(int.check(0x1000, None)), Some("oob fill"));
        let e = tiled(&[64, 2], &[250], &[4, 1]).check(0, None).unwrap_err();
        assert!(e.to_string().contains("global strides"), "{e}");
    }

    #[test]
    fn im2col_rules_are_named() {
        let base = |lo: &[i32], ch, px| {
            TensorMapIm2col::new(
                TensorMapDataType::FLOAT16,
                &[64, 16, 16, 2],
                &[128, 2048, 32768],
                lo,
                &[0, 0],
                ch,
                px,
            )
        };
        assert_eq!(rule_of(base(&[-1, -1], 64, 128).check(0x1000, None)), None);
        assert_eq!(
            rule_of(base(&[-1], 64, 128).check(0x1000, None)),
            Some("pixel box corners")
        );
        assert_eq!(
            rule_of(base(&[-200, 0], 64, 128).check(0x1000, None)),
            Some("pixel box corners")
        );
        assert_eq!(
            rule_of(base(&[0, 0], 257, 128).check(0x1000, None)),
            Some("channels per pixel")
        );
        assert_eq!(
            rule_of(base(&[0, 0], 64, 1025).check(0x1000, None)),
            Some("pixels per column")
        );
        let wide = TensorMapIm2colWide::new(
            TensorMapDataType::FLOAT16,
            &[64, 16, 2],
            &[128, 2048],
            -40000,
            0,
            64,
            128,
        );
        assert_eq!(rule_of(wide.check(0x1000, None)), Some("pixel box corners"));
        let wide = wide.clone().mode(TensorMapIm2ColWideMode::W128);
        assert!(wide.check(0x1000, None).is_err());
        // Im2col-wide swizzles 64 or 128-byte spans only (128 by default).
        let ok = TensorMapIm2colWide::new(
            TensorMapDataType::FLOAT16,
            &[64, 16, 2],
            &[128, 2048],
            -1,
            0,
            64,
            16,
        );
        assert_eq!(rule_of(ok.check(0x1000, None)), None);
        for swizzle in [TensorMapSwizzle::NONE, TensorMapSwizzle::SWIZZLE_32B] {
            assert_eq!(
                rule_of(ok.clone().swizzle(swizzle).check(0x1000, None)),
                Some("interleave/swizzle")
            );
        }
        assert_eq!(
            rule_of(
                ok.clone()
                    .swizzle(TensorMapSwizzle::SWIZZLE_64B)
                    .check(0x1000, None)
            ),
            Some("interleave/swizzle"),
            "128 bytes of channels do not fit a 64-byte span"
        );
    }

    proptest! {
        /// A tiled map passes exactly when every rule holds, computed independently here.
        #[test]
        fn tiled_checker_matches_the_rules(
            rank in 1usize..=6,
            dims in proptest::collection::vec(1u64..300, 6),
            stride_units in proptest::collection::vec(0u64..40, 5),
            stride_off in 0u64..20,
            boxes in proptest::collection::vec(0u32..300, 6),
            es in proptest::collection::vec(0u32..10, 6),
            addr_off in 0u64..64,
            swz in 0i32..4,
        ) {
            let dims = &dims[..rank];
            let strides: Vec<u64> = stride_units[..rank.saturating_sub(1).min(5)]
                .iter()
                .map(|u| u * 16 + if stride_off == 7 { 8 } else { 0 })
                .collect();
            let boxes = &boxes[..rank];
            let es = &es[..rank];
            let swizzle = TensorMapSwizzle::from_raw(swz as _);
            let t = TensorMapTiled::new(TensorMapDataType::FLOAT32, dims, &strides, boxes)
                .element_strides(es)
                .swizzle(swizzle);
            let address = 0x10_0000 + addr_off;
            let span = [0u64, 32, 64, 128][swz as usize];
            let expect_ok = rank <= 5
                && address % 16 == 0
                && strides.iter().all(|s| s % 16 == 0)
                && boxes.iter().all(|&b| (1..=256).contains(&b))
                && es.iter().all(|&e| (1..=8).contains(&e))
                && (boxes[0] as u64 * 4) % 16 == 0
                && (swz == 0 || boxes[0] as u64 * 4 <= span);
            let r = t.check(address, None);
            prop_assert_eq!(r.is_ok(), expect_ok, "{:?}", r);
            if let Err(e) = r {
                let is_rule = matches!(e, Error::TensorMap(TensorMapError::Rule { .. }));
                prop_assert!(is_rule);
            }
        }
    }
}
