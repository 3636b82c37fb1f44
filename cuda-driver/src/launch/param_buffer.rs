//! [`ParamBuffer`]: kernel parameters packed into one buffer, for
//! `CU_LAUNCH_PARAM_BUFFER_POINTER`.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem::{align_of, size_of, MaybeUninit};
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};

use cuda_driver_sys as sys;

use super::KernelArg;
use crate::error::{Error, Result};
use crate::params::ParamInfo;
use crate::repr::DeviceRepr;

/// The traditional limit of the kernel parameter space, and the default capacity of a
/// [`ParamBuffer`] (CUDA 12.1 raised the limit to 32764 bytes on Volta and newer:
/// `ParamBuffer<'_, 32764>`).
pub const PARAM_BUFFER_CAPACITY: usize = 4096;

/// The most parameters one [`ParamBuffer`] records.
pub const PARAM_BUFFER_MAX_PARAMS: usize = 256;

#[repr(C, align(16))]
struct Storage<const N: usize>(MaybeUninit<[u8; N]>);

/// Kernel parameters packed into one buffer at their device offsets, the second way
/// `cuLaunchKernel` takes parameters (`CU_LAUNCH_PARAM_BUFFER_POINTER` /
/// `CU_LAUNCH_PARAM_BUFFER_SIZE` in `extra`), as in the CUDA programming guide's Driver API
/// appendix.
///
/// Each value goes at the next offset aligned to its device alignment, the C rule for the
/// fields of a struct: `align_of::<T>()`, which is the device's for numbers, device pointers
/// (8) and this crate's [vector types](crate::vector::Float4) (`float4` 16, `float2` 8), and for
/// `#[repr(C)]` structs of them. The buffer is a fixed array on the stack (4 KiB by default,
/// aligned to 16), so building it allocates nothing.
///
/// ```no_run
/// # fn f(k: &cuda_driver::Function, s: &cuda_driver::Stream,
/// #      out: &mut cuda_driver::DeviceBuffer<f32>) -> cuda_driver::Result<()> {
/// use cuda_driver::prelude::*;
/// use cuda_driver::{vector::Float2, vector::Float4, LaunchConfig, launch::ParamBuffer};
/// // param_buffer(int i, float4 f4, char c, float f, float* out, float2 f2)
/// let mut params = ParamBuffer::new();
/// params
///     .push(7i32)?
///     .push(Float4::new(1.0, 2.0, 3.0, 4.0))?
///     .push(b'c' as i8)?
///     .push(0.5f32)?
///     .push_arg(out.as_view_mut())?
///     .push(Float2::new(5.0, 6.0))?;
/// assert_eq!(params.len(), 56); // out at 40, f2 at 48
/// // SAFETY: the layout matches the kernel's parameters (checked against the driver's
/// // list too); `out` holds the 11 floats the kernel writes.
/// unsafe { k.launch_packed(s, &LaunchConfig::new(1, 1), &params)? };
/// # Ok(()) }
/// ```
///
/// Device memory pushed with [`push_arg`](Self::push_arg) stays borrowed while the buffer
/// lives, so it cannot be freed before the launch:
///
/// ```compile_fail
/// # use cuda_driver::prelude::*;
/// # fn f(ctx: &cuda_driver::Context) -> cuda_driver::Result<()> {
/// let mut params = cuda_driver::launch::ParamBuffer::new();
/// {
///     let buf = cuda_driver::DeviceBuffer::<f32>::new(ctx, 4)?;
///     params.push_arg(buf.as_view())?;
/// } // `buf` is freed here while `params` still holds its address
/// # drop(params); Ok(()) }
/// ```
pub struct ParamBuffer<'a, const N: usize = PARAM_BUFFER_CAPACITY> {
    bytes: Storage<N>,
    /// Bytes written: the end of the last parameter. `bytes[..len]` is initialised.
    len: usize,
    count: usize,
    /// `(offset, size)` of each parameter; `layout[..count]` is initialised.
    layout: [MaybeUninit<(u16, u16)>; PARAM_BUFFER_MAX_PARAMS],
    /// The raw stream the views pushed are ordered on (stream-ordered memory), or 0; kept as
    /// an address so that the buffer stays `Send + Sync`.
    home: usize,
    /// The identity of the kernel parameter list this layout last matched (see
    /// `KernelParams::param_list_id`), or 0: a checked launch of a kernel with that list then
    /// compares nothing. Cleared by every change of the layout (`push_raw`, `clear`, which
    /// take `&mut self`), so it always describes the current layout.
    matched: AtomicU64,
    _borrows: PhantomData<&'a ()>,
}

impl<const N: usize> Default for ParamBuffer<'_, N> {
    fn default() -> Self {
        Self::empty()
    }
}

impl ParamBuffer<'_> {
    /// An empty buffer of [`PARAM_BUFFER_CAPACITY`] (4096) bytes; [`empty`](Self::empty) makes
    /// one of another size.
    #[inline]
    pub const fn new() -> Self {
        Self::empty()
    }
}

impl<const N: usize> std::fmt::Debug for ParamBuffer<'_, N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParamBuffer")
            .field("len", &self.len)
            .field("params", &self.params().collect::<Vec<_>>())
            .finish()
    }
}

impl<'a, const N: usize> ParamBuffer<'a, N> {
    /// An empty buffer of `N` bytes (at most 65535; the driver takes at most 32764).
    #[inline]
    pub const fn empty() -> Self {
        const {
            assert!(
                N <= u16::MAX as usize,
                "a ParamBuffer holds at most 65535 bytes"
            )
        };
        ParamBuffer {
            bytes: Storage(MaybeUninit::uninit()),
            len: 0,
            count: 0,
            layout: [const { MaybeUninit::uninit() }; PARAM_BUFFER_MAX_PARAMS],
            home: 0,
            matched: AtomicU64::new(0),
            _borrows: PhantomData,
        }
    }

    /// Appends a value (a number, a vector type, a `#[repr(C)]` struct, a raw `CUdeviceptr`)
    /// at the next offset aligned to `align_of::<T>()`.
    ///
    /// Fails with [`Error::CapacityExceeded`] when the buffer is full.
    #[inline]
    #[track_caller]
    pub fn push<T: DeviceRepr>(&mut self, value: T) -> Result<&mut Self> {
        let p: *const T = &value;
        // SAFETY: `p` points to size_of::<T>() readable bytes of `value`, alive for the call.
        unsafe { self.push_raw(p.cast(), size_of::<T>(), align_of::<T>()) }?;
        Ok(self)
    }

    /// Appends a kernel argument: the device pointer of a view (whose memory stays borrowed
    /// while the buffer lives), or a referenced value. See [`KernelArg`].
    ///
    /// Views of stream-ordered memory pushed into one buffer must be ordered on one stream
    /// ([`Error::StreamMismatch`] otherwise), which a checked packed launch then requires.
    /// Fails with [`Error::CapacityExceeded`] when the buffer is full.
    #[inline]
    #[track_caller]
    pub fn push_arg<A: KernelArg + 'a>(&mut self, arg: A) -> Result<&mut Self> {
        let home = arg.stream_order() as usize;
        if home != 0 && self.home != 0 && self.home != home {
            return Err(Error::StreamMismatch {
                what: "ParamBuffer::push_arg",
                expected: self.home,
                found: home,
            });
        }
        // SAFETY: KernelArg guarantees PARAM_SIZE readable bytes at param_ptr while `arg`
        // lives, which is the whole call.
        unsafe { self.push_raw(arg.param_ptr().cast_const(), A::PARAM_SIZE, A::PARAM_ALIGN) }?;
        if home != 0 {
            self.home = home;
        }
        Ok(self)
    }

    /// # Safety
    /// `src` points to `size` readable bytes; `align` is a power of two.
    #[inline]
    #[track_caller]
    unsafe fn push_raw(&mut self, src: *const c_void, size: usize, align: usize) -> Result<()> {
        let offset = align_up(self.len, align);
        let end = offset.checked_add(size).filter(|&end| end <= N);
        let Some(end) = end.filter(|_| self.count < PARAM_BUFFER_MAX_PARAMS) else {
            return Err(self.full());
        };
        let base = self.bytes.0.as_mut_ptr().cast::<u8>();
        // SAFETY: len <= offset <= end <= N, all within the N-byte storage; the gap is zeroed
        // so that every byte before `end` is initialised; `src` has `size` readable bytes
        // that cannot overlap our storage (it is borrowed mutably).
        unsafe {
            ptr::write_bytes(base.add(self.len), 0, offset - self.len);
            ptr::copy_nonoverlapping(src.cast::<u8>(), base.add(offset), size);
        }
        *self.matched.get_mut() = 0;
        // offset and size fit u16: both are at most N <= 65535.
        self.layout[self.count] = MaybeUninit::new((offset as u16, size as u16));
        self.count += 1;
        self.len = end;
        Ok(())
    }

    #[cold]
    fn full(&self) -> Error {
        if self.count >= PARAM_BUFFER_MAX_PARAMS {
            Error::CapacityExceeded {
                what: "ParamBuffer",
                capacity: PARAM_BUFFER_MAX_PARAMS,
                unit: "parameters",
            }
        } else {
            Error::CapacityExceeded {
                what: "ParamBuffer",
                capacity: N,
                unit: "bytes",
            }
        }
    }

    /// Bytes used: the end of the last parameter (`CU_LAUNCH_PARAM_BUFFER_SIZE`).
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no parameter was pushed.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Number of parameters pushed.
    #[inline]
    pub fn count(&self) -> usize {
        self.count
    }

    /// The start of the buffer (`CU_LAUNCH_PARAM_BUFFER_POINTER`), 16-byte aligned;
    /// [`len`](Self::len) bytes are written.
    #[inline]
    pub fn as_ptr(&self) -> *const u8 {
        self.bytes.0.as_ptr().cast()
    }

    /// The offset and size of each parameter, in order.
    pub fn params(&self) -> impl ExactSizeIterator<Item = ParamInfo> + Clone + '_ {
        self.layout[..self.count].iter().map(|entry| {
            // SAFETY: entries below `count` were written by push_raw.
            let (offset, size) = unsafe { entry.assume_init() };
            ParamInfo {
                offset: offset as usize,
                size: size as usize,
            }
        })
    }

    /// The raw stream the views pushed are ordered on, or null.
    #[inline]
    pub(crate) fn stream_order(&self) -> sys::CUstream {
        self.home as sys::CUstream
    }

    /// Removes every parameter.
    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
        self.count = 0;
        self.home = 0;
        *self.matched.get_mut() = 0;
    }

    /// The identity of the parameter list the layout last matched, or 0.
    #[inline]
    pub(crate) fn matched(&self) -> u64 {
        self.matched.load(Ordering::Relaxed)
    }

    /// Records that the layout matched the parameter list `id`.
    #[inline]
    pub(crate) fn set_matched(&self, id: u64) {
        self.matched.store(id, Ordering::Relaxed);
    }
}

#[inline(always)]
fn align_up(offset: usize, align: usize) -> usize {
    (offset + align - 1) & !(align - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::testing::or_few_under_miri;
    use crate::vector::*;
    use crate::*;
    use proptest::prelude::*;
    use std::mem::offset_of;

    /// The bytes the buffer holds at `p` (only for types without padding).
    fn bytes_at<const N: usize>(b: &ParamBuffer<'_, N>, p: ParamInfo) -> Vec<u8> {
        // SAFETY: every byte below len is initialised, and p lies below len.
        unsafe { std::slice::from_raw_parts(b.as_ptr().add(p.offset), p.size) }.to_vec()
    }

    fn bytes_of<T: DeviceRepr>(v: &T) -> Vec<u8> {
        // SAFETY: the test pushes only types without padding, whose bytes are initialised.
        unsafe { std::slice::from_raw_parts((v as *const T).cast::<u8>(), size_of::<T>()) }.to_vec()
    }

    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Seed {
        i: i32,
        f4: Float4,
        c: i8,
        f: f32,
        dev_ptr: u64,
        f2: Float2,
    }

    /// The layout a launch matched is forgotten by every change of the layout.
    #[test]
    fn a_matched_layout_is_forgotten_when_the_layout_changes() {
        let mut b = ParamBuffer::new();
        b.push(1u32).unwrap();
        assert_eq!(b.matched(), 0);
        b.set_matched(7);
        assert_eq!(b.matched(), 7);
        b.push(2u64).unwrap();
        assert_eq!(b.matched(), 0, "push");
        b.set_matched(7);
        b.clear();
        assert_eq!(b.matched(), 0, "clear");
        b.set_matched(7);
        // A failed push changes nothing, and a swap moves the memo with its layout.
        let mut full = ParamBuffer::<8>::empty();
        full.push(1u64).unwrap();
        full.set_matched(9);
        assert!(full.push(1u8).is_err());
        assert_eq!(full.matched(), 9);
        let mut other = ParamBuffer::new();
        std::mem::swap(&mut b, &mut other);
        assert_eq!((b.matched(), other.matched()), (0, 7));
    }

    #[test]
    fn the_seed_example_matches_its_repr_c_struct() {
        let (i, f4, c, f, dev_ptr, f2) = (
            -7i32,
            Float4::new(1.0, 2.0, 3.0, 4.0),
            b'c' as i8,
            0.25f32,
            0x7f00_1234_5678u64,
            Float2::new(5.0, 6.0),
        );
        let mut b = ParamBuffer::<'_>::new();
        b.push(i)
            .unwrap()
            .push(f4)
            .unwrap()
            .push(c)
            .unwrap()
            .push(f)
            .unwrap()
            .push(dev_ptr)
            .unwrap()
            .push(f2)
            .unwrap();
        let offsets: Vec<_> = b.params().map(|p| p.offset).collect();
        assert_eq!(
            offsets,
            [
                offset_of!(Seed, i),
                offset_of!(Seed, f4),
                offset_of!(Seed, c),
                offset_of!(Seed, f),
                offset_of!(Seed, dev_ptr),
                offset_of!(Seed, f2),
            ]
        );
        // The programming guide's rules: int 0, float4 16, char 32, float 36, pointer 40,
        // float2 48; 56 bytes in all.
        assert_eq!(offsets, [0, 16, 32, 36, 40, 48]);
        assert_eq!(b.len(), offset_of!(Seed, f2) + size_of::<Float2>());
        let p: Vec<_> = b.params().collect();
        assert_eq!(bytes_at(&b, p[1]), bytes_of(&f4));
        assert_eq!(bytes_at(&b, p[4]), bytes_of(&dev_ptr));
        assert_eq!(bytes_at(&b, p[5]), bytes_of(&f2));
        // Padding between c and f, and between i and f4, is zeroed.
        // SAFETY: bytes below len are initialised.
        let all = unsafe { std::slice::from_raw_parts(b.as_ptr(), b.len()) };
        assert!(all[4..16].iter().all(|&x| x == 0));
        assert!(all[33..36].iter().all(|&x| x == 0));
        assert_eq!(b.as_ptr() as usize % 16, 0);
    }

    #[test]
    fn a_struct_goes_at_its_largest_alignment() {
        // The test kernels' Params { int a; double b; float4 c; }: size 32, alignment 16.
        #[repr(C, align(16))]
        #[derive(Clone, Copy)]
        struct Params {
            a: i32,
            b: f64,
            c: [f32; 4],
        }
        // SAFETY: repr(C) of DeviceRepr fields; the padding after `a` is never interpreted.
        unsafe impl DeviceRepr for Params {}
        #[repr(C)]
        struct Reference {
            c: i8,
            p: Params,
            x: u64,
        }
        let mut b = ParamBuffer::<'_>::new();
        let params = Params {
            a: 1,
            b: 2.0,
            c: [3.0; 4],
        };
        b.push(1i8)
            .unwrap()
            .push(params)
            .unwrap()
            .push(9u64)
            .unwrap();
        let offsets: Vec<_> = b.params().map(|p| p.offset).collect();
        assert_eq!(
            offsets,
            [
                offset_of!(Reference, c),
                offset_of!(Reference, p),
                offset_of!(Reference, x)
            ]
        );
        assert_eq!(offsets, [0, 16, 48]);
        let _ = (params.a, params.b, params.c);
    }

    #[test]
    fn buffers_and_views_are_pointers() {
        assert_eq!(<&DeviceSlice<'_, u8> as KernelArg>::PARAM_SIZE, 8);
        assert_eq!(<DeviceSlice<'_, Float4> as KernelArg>::PARAM_ALIGN, 8);
    }

    #[test]
    fn full_buffers_say_so() {
        let mut b = ParamBuffer::<'_, 16>::empty();
        b.push(1u64).unwrap().push(2u32).unwrap();
        let e = b.push(3u64).unwrap_err();
        assert!(
            matches!(
                e,
                Error::CapacityExceeded {
                    what: "ParamBuffer",
                    capacity: 16,
                    unit: "bytes"
                }
            ),
            "{e}"
        );
        assert_eq!(b.len(), 12);
        b.push(4u32).unwrap();
        assert_eq!(b.len(), 16);
        assert!(b.push(1u8).is_err());
        b.clear();
        assert!(b.is_empty());
        let mut b = ParamBuffer::<'_>::new();
        for _ in 0..PARAM_BUFFER_MAX_PARAMS {
            b.push(1u8).unwrap();
        }
        let e = b.push(1u8).unwrap_err();
        assert!(e.to_string().contains("at most 256 parameters"), "{e}");
    }

    /// One generated parameter: pushes itself and reports its (size, align) and bytes.
    #[derive(Clone, Debug)]
    enum Value {
        I8(i8),
        U16(u16),
        I32(i32),
        U32(u32),
        I64(i64),
        F32(f32),
        F64(f64),
        Char2(i8, i8),
        Short4(i16),
        Int2(i32),
        Int3(i32),
        Int4(i32),
        Float2(f32),
        Float3(f32),
        Float4(f32),
        Double2(f64),
        Longlong2(i64),
        Array3(u8),
    }

    impl Value {
        fn push(&self, b: &mut ParamBuffer<'_>) -> Result<(usize, usize, Vec<u8>)> {
            fn go<T: DeviceRepr>(b: &mut ParamBuffer<'_>, v: T) -> Result<(usize, usize, Vec<u8>)> {
                b.push(v)?;
                Ok((size_of::<T>(), align_of::<T>(), bytes_of(&v)))
            }
            match *self {
                Value::I8(v) => go(b, v),
                Value::U16(v) => go(b, v),
                Value::I32(v) => go(b, v),
                Value::U32(v) => go(b, v),
                Value::I64(v) => go(b, v),
                Value::F32(v) => go(b, v),
                Value::F64(v) => go(b, v),
                Value::Char2(x, y) => go(b, Char2::new(x, y)),
                Value::Short4(v) => go(b, Short4::new(v, v + 1, v - 1, v)),
                Value::Int2(v) => go(b, Int2::new(v, !v)),
                Value::Int3(v) => go(b, Int3::new(v, 1, 2)),
                Value::Int4(v) => go(b, Int4::new(v, -v, 3, 4)),
                Value::Float2(v) => go(b, Float2::new(v, 2.0)),
                Value::Float3(v) => go(b, Float3::new(v, 2.0, 3.0)),
                Value::Float4(v) => go(b, Float4::new(v, 2.0, 3.0, 4.0)),
                Value::Double2(v) => go(b, Double2::new(v, -v)),
                Value::Longlong2(v) => go(b, Longlong2::new(v, 5)),
                Value::Array3(v) => go(b, [v, v, v]),
            }
        }
    }

    /// A variant and its value, from one draw of bits (one strategy rather than a
    /// `prop_oneof!` of 18, which Miri takes seconds to draw each value from).
    fn value() -> impl Strategy<Value = Value> {
        (0u8..18, any::<u64>()).prop_map(|(kind, bits)| {
            // In -1e6..1e6, and smaller ranges for the variants that add or negate.
            let f = (bits % 2_000_000) as f32 - 1e6;
            let d = (bits % 2_000_000_000) as f64 / 1e3 - 1e6;
            let (x, y) = (bits as i8, (bits >> 8) as i8);
            match kind {
                0 => Value::I8(x),
                1 => Value::U16(bits as u16),
                2 => Value::I32(bits as i32),
                3 => Value::U32(bits as u32),
                4 => Value::I64(bits as i64),
                5 => Value::F32(f),
                6 => Value::F64(d),
                7 => Value::Char2(x, y),
                8 => Value::Short4((bits % 200) as i16 - 100),
                9 => Value::Int2(bits as i32),
                10 => Value::Int3(bits as i32),
                11 => Value::Int4((bits % 2000) as i32 - 1000),
                12 => Value::Float2(f),
                13 => Value::Float3(f),
                14 => Value::Float4(f),
                15 => Value::Double2(d),
                16 => Value::Longlong2(bits as i64),
                _ => Value::Array3(bits as u8),
            }
        })
    }

    proptest! {
        #![proptest_config(or_few_under_miri(ProptestConfig::default()))]

        /// Offsets and the total size are those of the C struct layout algorithm over the
        /// (size, align) pairs of the pushed types, and each value's bytes are at its offset.
        #[test]
        fn layout_follows_the_c_rules(values in proptest::collection::vec(value(), 0..64)) {
            let mut b = ParamBuffer::<'_>::new();
            let mut expected_end = 0usize;
            let mut expected = Vec::new();
            for v in &values {
                let (size, align, bytes) = v.push(&mut b).unwrap();
                let offset = expected_end.div_ceil(align) * align;
                expected.push((ParamInfo { offset, size }, bytes));
                expected_end = offset + size;
            }
            prop_assert_eq!(b.len(), expected_end);
            prop_assert_eq!(b.count(), values.len());
            let got: Vec<_> = b.params().collect();
            for (g, (e, bytes)) in got.iter().zip(&expected) {
                prop_assert_eq!(g, e);
                prop_assert_eq!(&bytes_at(&b, *g), bytes);
            }
            let infos: Vec<_> = expected.iter().map(|(p, _)| *p).collect();
            prop_assert_eq!(b.params().collect::<Vec<_>>(), infos);
        }
    }
}
