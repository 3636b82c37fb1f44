//! CUDA's built-in vector types (`float2`, `float4`, `int4`, `double2`, ...) with the
//! device's size and alignment.
//!
//! On the device `float4` is 16-byte aligned and `float2` 8-byte aligned, while `[f32; 4]` and
//! `[f32; 2]` are only 4-byte aligned in Rust. The difference matters whenever a vector sits
//! next to other data: as a field of a kernel parameter struct, in a packed parameter buffer
//! ([`ParamBuffer`](crate::launch::ParamBuffer)), or as the element of a buffer shared with the
//! device. These types are `#[repr(C, align(N))]` with the alignment of CUDA's
//! `vector_types.h`, so `size_of` and `align_of` equal the device's `sizeof` and `__alignof`:
//!
//! | type | CUDA | size | align |
//! |------|------|------|-------|
//! | [`Char2`], [`Uchar2`] | `char2`, `uchar2` | 2 | 2 |
//! | [`Char4`], [`Uchar4`] | `char4`, `uchar4` | 4 | 4 |
//! | [`Short2`], [`Ushort2`] | `short2`, `ushort2` | 4 | 4 |
//! | [`Short4`], [`Ushort4`] | `short4`, `ushort4` | 8 | 8 |
//! | [`Int2`], [`Uint2`] | `int2`, `uint2` | 8 | 8 |
//! | [`Int3`], [`Uint3`] | `int3`, `uint3` | 12 | 4 |
//! | [`Int4`], [`Uint4`] | `int4`, `uint4` | 16 | 16 |
//! | [`Longlong2`], [`Ulonglong2`] | `longlong2`, `ulonglong2` | 16 | 16 |
//! | [`Float2`] | `float2` | 8 | 8 |
//! | [`Float3`] | `float3` | 12 | 4 |
//! | [`Float4`] | `float4` | 16 | 16 |
//! | [`Double2`] | `double2` | 16 | 16 |
//!
//! Every type has public fields `x`, `y` (`z`, `w`), a `const fn new`, conversions from and
//! to arrays, and is [`DeviceRepr`]: usable as a kernel argument, a field of a `#[repr(C)]`
//! parameter struct and a buffer element.
//!
//! ```
//! use cuda_driver::vector::Float4;
//! let v = Float4::new(1.0, 2.0, 3.0, 4.0);
//! assert_eq!(<[f32; 4]>::from(v), [1.0, 2.0, 3.0, 4.0]);
//! assert_eq!(Float4::from([1.0, 2.0, 3.0, 4.0]), v);
//! assert_eq!((std::mem::size_of::<Float4>(), std::mem::align_of::<Float4>()), (16, 16));
//! ```

use cuda_driver_macros::DeviceRepr;

macro_rules! vector_type {
    ($(#[$m:meta])* $name:ident, $c:literal, $t:ty, $align:literal, $n:literal, [$($f:ident),+]) => {
        $(#[$m])*
        #[doc = concat!("CUDA's `", $c, "`: ", stringify!($n), " × `", stringify!($t),
                        "`, aligned to ", stringify!($align), " bytes as on the device.")]
        #[doc(alias = $c)]
        #[repr(C, align($align))]
        #[derive(Clone, Copy, Debug, Default, PartialEq, DeviceRepr)]
        pub struct $name {
            $(
                #[doc = concat!("The `", stringify!($f), "` component.")]
                pub $f: $t,
            )+
        }

        impl $name {
            #[doc = concat!("A `", $c, "` from its components.")]
            #[inline]
            pub const fn new($($f: $t),+) -> Self {
                Self { $($f),+ }
            }
        }

        impl From<[$t; $n]> for $name {
            #[inline]
            fn from(a: [$t; $n]) -> Self {
                let [$($f),+] = a;
                Self { $($f),+ }
            }
        }

        impl From<$name> for [$t; $n] {
            #[inline]
            fn from(v: $name) -> Self {
                [$(v.$f),+]
            }
        }
    };
}

vector_type!(Char2, "char2", i8, 2, 2, [x, y]);
vector_type!(Char4, "char4", i8, 4, 4, [x, y, z, w]);
vector_type!(Uchar2, "uchar2", u8, 2, 2, [x, y]);
vector_type!(Uchar4, "uchar4", u8, 4, 4, [x, y, z, w]);
vector_type!(Short2, "short2", i16, 4, 2, [x, y]);
vector_type!(Short4, "short4", i16, 8, 4, [x, y, z, w]);
vector_type!(Ushort2, "ushort2", u16, 4, 2, [x, y]);
vector_type!(Ushort4, "ushort4", u16, 8, 4, [x, y, z, w]);
vector_type!(Int2, "int2", i32, 8, 2, [x, y]);
vector_type!(Int3, "int3", i32, 4, 3, [x, y, z]);
vector_type!(Int4, "int4", i32, 16, 4, [x, y, z, w]);
vector_type!(Uint2, "uint2", u32, 8, 2, [x, y]);
vector_type!(Uint3, "uint3", u32, 4, 3, [x, y, z]);
vector_type!(Uint4, "uint4", u32, 16, 4, [x, y, z, w]);
vector_type!(Longlong2, "longlong2", i64, 16, 2, [x, y]);
vector_type!(Ulonglong2, "ulonglong2", u64, 16, 2, [x, y]);
vector_type!(Float2, "float2", f32, 8, 2, [x, y]);
vector_type!(Float3, "float3", f32, 4, 3, [x, y, z]);
vector_type!(Float4, "float4", f32, 16, 4, [x, y, z, w]);
vector_type!(Double2, "double2", f64, 16, 2, [x, y]);

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, offset_of, size_of};

    fn layout<T>() -> (usize, usize) {
        (size_of::<T>(), align_of::<T>())
    }

    #[test]
    fn sizes_and_alignments_match_cuda_vector_types_h() {
        // (sizeof, __alignof) of CUDA's vector_types.h on a 64-bit host and the device.
        assert_eq!(layout::<Char2>(), (2, 2));
        assert_eq!(layout::<Char4>(), (4, 4));
        assert_eq!(layout::<Uchar2>(), (2, 2));
        assert_eq!(layout::<Uchar4>(), (4, 4));
        assert_eq!(layout::<Short2>(), (4, 4));
        assert_eq!(layout::<Short4>(), (8, 8));
        assert_eq!(layout::<Ushort2>(), (4, 4));
        assert_eq!(layout::<Ushort4>(), (8, 8));
        assert_eq!(layout::<Int2>(), (8, 8));
        assert_eq!(layout::<Int3>(), (12, 4));
        assert_eq!(layout::<Int4>(), (16, 16));
        assert_eq!(layout::<Uint2>(), (8, 8));
        assert_eq!(layout::<Uint3>(), (12, 4));
        assert_eq!(layout::<Uint4>(), (16, 16));
        assert_eq!(layout::<Longlong2>(), (16, 16));
        assert_eq!(layout::<Ulonglong2>(), (16, 16));
        assert_eq!(layout::<Float2>(), (8, 8));
        assert_eq!(layout::<Float3>(), (12, 4));
        assert_eq!(layout::<Float4>(), (16, 16));
        assert_eq!(layout::<Double2>(), (16, 16));
    }

    #[test]
    fn components_are_in_order() {
        assert_eq!(offset_of!(Float4, x), 0);
        assert_eq!(offset_of!(Float4, y), 4);
        assert_eq!(offset_of!(Float4, z), 8);
        assert_eq!(offset_of!(Float4, w), 12);
        assert_eq!(offset_of!(Double2, y), 8);
        assert_eq!(offset_of!(Int3, z), 8);
    }

    #[test]
    fn array_round_trips() {
        let v = Int4::from([1, -2, 3, -4]);
        assert_eq!(v, Int4::new(1, -2, 3, -4));
        assert_eq!(<[i32; 4]>::from(v), [1, -2, 3, -4]);
        let d = Double2::new(0.5, -1.25);
        assert_eq!(<[f64; 2]>::from(d), [0.5, -1.25]);
        assert_eq!(Float3::from([1.0, 2.0, 3.0]).z, 3.0);
    }

    #[test]
    fn a_struct_with_a_float4_is_padded_as_on_the_device() {
        // The programming guide's example: { float f; float4 f4; } has f4 at offset 16 and
        // size 32 on the device.
        #[repr(C)]
        struct MyStruct {
            f: f32,
            f4: Float4,
        }
        assert_eq!(offset_of!(MyStruct, f4), 16);
        assert_eq!(layout::<MyStruct>(), (32, 16));
        let _ = MyStruct {
            f: 0.0,
            f4: Float4::default(),
        }
        .f;
    }
}
