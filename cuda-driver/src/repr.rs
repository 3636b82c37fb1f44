//! [`DeviceRepr`]: the types that may be copied bit for bit between host and device.

/// Types that may be copied bit for bit to and from the device, and passed by value to
/// kernels.
///
/// Memory this crate hands back from the device is reinterpreted as `T`, so every bit
/// pattern the device may write must be a valid `T`. Implemented for the integer and float
/// types, [`half::f16`], [`half::bf16`], arrays of `DeviceRepr`, and the vector types of this
/// crate. It is deliberately **not** implemented for `bool`, `char`, references, `NonZero*`
/// or `Option`: the device can produce bit patterns that are invalid for them.
///
/// `#[derive(DeviceRepr)]` implements it for a `#[repr(C)]` struct whose fields are all
/// `DeviceRepr` and which has no padding, and checks all of that at compile time:
///
/// ```
/// use cuda_driver::DeviceRepr;
///
/// #[repr(C)]
/// #[derive(Clone, Copy, DeviceRepr)]
/// struct Params {
///     scale: f64,
///     n: u32,
///     flags: u32,
///     offsets: [i32; 4],
///     dir: cuda_driver::vector::Float4,
/// }
///
/// fn needs<T: DeviceRepr>() {}
/// needs::<Params>();
/// ```
///
/// The layout must match the device's (mind that vector types such as `float4` are 16-byte
/// aligned on the device: use this crate's [`Float4`](crate::vector::Float4)). Without `#[repr(C)]`,
/// Rust may reorder the fields:
///
/// ```compile_fail
/// #[derive(Clone, Copy, cuda_driver::DeviceRepr)]
/// struct Params { a: f32, b: u32 }
/// ```
///
/// Padding is refused: its bytes are uninitialised on the host, and a kernel would read them
/// (here 4 bytes after `n`, to align `x`):
///
/// ```compile_fail
/// #[repr(C)]
/// #[derive(Clone, Copy, cuda_driver::DeviceRepr)]
/// struct Params { n: u32, x: f64 }
/// ```
///
/// The check is the derive's own, whatever the deriving scope defines: its expansion names
/// everything by its full path (`::core::assert!`), so neither a user's `assert!` that checks
/// nothing nor a scope without the prelude lets padding through (the error is the failed
/// check's, E0080):
///
/// ```compile_fail,E0080
/// #[no_implicit_prelude]
/// mod hostile {
///     macro_rules! assert { ($($t:tt)*) => {}; }
///     pub mod core {}
///     pub struct Option;
///
///     #[repr(C)]
///     #[derive(::core::clone::Clone, ::core::marker::Copy, ::cuda_driver::DeviceRepr)]
///     pub struct Params { pub n: u32, pub x: f64 }
/// }
/// ```
///
/// `bool` is not `DeviceRepr`, nor is a struct with a `bool` field:
///
/// ```compile_fail
/// #[repr(C)]
/// #[derive(Clone, Copy, cuda_driver::DeviceRepr)]
/// struct Params { on: bool, n: [u8; 3] }
/// ```
///
/// ```compile_fail
/// fn needs<T: cuda_driver::DeviceRepr>() {}
/// needs::<bool>();
/// ```
///
/// # Safety
/// Implement it by hand only for `Copy` types with no padding-dependent invariants and for
/// which every bit pattern of `size_of::<T>()` bytes is a valid value: plain `#[repr(C)]`
/// structs of `DeviceRepr` fields, which the derive checks.
///
/// ```
/// #[repr(C)]
/// #[derive(Clone, Copy)]
/// struct Params { a: i32, b: i32 }
/// // SAFETY: repr(C), fields are DeviceRepr, no padding: every bit pattern is a valid Params.
/// unsafe impl cuda_driver::DeviceRepr for Params {}
/// ```
pub unsafe trait DeviceRepr: Copy + 'static {}

macro_rules! device_repr {
    ($($t:ty),*) => { $(
        // SAFETY: a primitive number: every bit pattern is a valid value.
        unsafe impl DeviceRepr for $t {}
    )* };
}

device_repr!(u8, i8, u16, i16, u32, i32, u64, i64, u128, i128, usize, isize, f32, f64);
device_repr!(half::f16, half::bf16);

// SAFETY: an array of DeviceRepr has no padding and every element accepts any bit pattern.
unsafe impl<T: DeviceRepr, const N: usize> DeviceRepr for [T; N] {}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_repr<T: DeviceRepr>() {}

    #[test]
    fn numbers_and_arrays_are_device_repr() {
        is_repr::<u8>();
        is_repr::<f64>();
        is_repr::<half::bf16>();
        is_repr::<[f32; 4]>();
        is_repr::<[[i32; 2]; 3]>();
    }
}
