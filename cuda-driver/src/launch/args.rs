//! Kernel arguments: [`KernelArg`] for one argument, [`KernelArgs`] for a tuple of them.

use std::ffi::c_void;
use std::mem::{align_of, size_of};
use std::ptr;

use cuda_driver_sys as sys;

use crate::memory::{DeviceSlice, DeviceSliceMut};
use crate::repr::DeviceRepr;

/// One kernel argument: something the driver can copy a kernel parameter from.
///
/// Implemented for
/// * `&T` where `T:` [`DeviceRepr`]: numbers, the [vector types](crate::vector::Float4), `#[repr(C)]`
///   structs, raw `CUdeviceptr`s; the parameter is the value;
/// * the views [`DeviceSlice`] and [`DeviceSliceMut`] (by value or by reference), the one
///   currency of device memory: the parameter is the device pointer, a `T*` on the device,
///   and the view's [`stream_order`](Self::stream_order) is checked by the checked launches.
///   Every memory owner hands them out (`buf.as_view()`, `buf.as_view_mut()`, see
///   [`DeviceMemory`](crate::DeviceMemory)), so every kind of memory is an argument through
///   its views, and a new kind needs nothing here.
///
/// The parameter is read from [`param_ptr`](Self::param_ptr) during the launch call only,
/// and the pointer of a view is the address of its `ptr` field, so packing arguments
/// allocates and copies nothing.
///
/// A type the device cannot share bit for bit is no argument; `bool`, for one:
///
/// ```compile_fail
/// # fn f(k: &cuda_driver::Function, s: &cuda_driver::Stream) -> cuda_driver::Result<()> {
/// let cfg = cuda_driver::LaunchConfig::for_num_elems(1)?;
/// // SAFETY: not reached: `&bool` is not a KernelArg.
/// unsafe { k.launch(s, &cfg, (&true,)) }
/// # }
/// ```
///
/// # Safety
/// `param_ptr` returns a pointer to `PARAM_SIZE` readable, initialised bytes that stay valid
/// while `self` is borrowed, and `PARAM_ALIGN` is a power of two: the alignment of the
/// parameter on the device.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a kernel argument",
    label = "not a kernel argument",
    note = "pass scalars by reference (`&n`) and device memory as a view (`buf.as_view()`, `buf.as_view_mut()`)"
)]
pub unsafe trait KernelArg {
    /// Size of the parameter in bytes.
    const PARAM_SIZE: usize;
    /// Alignment of the parameter on the device, for packed buffers
    /// ([`ParamBuffer`](crate::launch::ParamBuffer)).
    const PARAM_ALIGN: usize;
    /// Where the driver copies the parameter from.
    fn param_ptr(&self) -> *mut c_void;

    /// The raw stream the argument's memory is ordered on (a view of stream-ordered memory,
    /// see [`DeviceSlice::stream_order`]), or null: the checked launches refuse an argument
    /// ordered on another stream than theirs. The default, for values, is null, and the check
    /// compiles to nothing.
    #[inline(always)]
    fn stream_order(&self) -> sys::CUstream {
        ptr::null_mut()
    }
}

// SAFETY: points to the referenced T (size_of::<T>() initialised bytes, borrowed for as long as
// `self` is); the driver only reads through the pointer.
unsafe impl<T: DeviceRepr> KernelArg for &T {
    const PARAM_SIZE: usize = size_of::<T>();
    const PARAM_ALIGN: usize = align_of::<T>();
    #[inline(always)]
    fn param_ptr(&self) -> *mut c_void {
        let p: *const T = *self;
        p.cast_mut().cast()
    }
}

macro_rules! device_pointer_arg {
    ($(#[$m:meta])* [$($gen:tt)*] $ty:ty) => {
        $(#[$m])*
        // SAFETY: points to the `ptr` field (a CUdeviceptr, 8 initialised bytes) of the
        // borrowed value; the driver only reads through it.
        unsafe impl<$($gen)*> KernelArg for $ty {
            const PARAM_SIZE: usize = size_of::<sys::CUdeviceptr>();
            const PARAM_ALIGN: usize = align_of::<sys::CUdeviceptr>();
            #[inline(always)]
            fn param_ptr(&self) -> *mut c_void {
                let p: *const sys::CUdeviceptr = self.ptr_ref();
                p.cast_mut().cast()
            }
            #[inline(always)]
            fn stream_order(&self) -> sys::CUstream {
                self.home()
            }
        }
    };
}

device_pointer_arg!(['a, T: DeviceRepr] DeviceSlice<'a, T>);
device_pointer_arg!(['a, 'b, T: DeviceRepr] &'b DeviceSlice<'a, T>);
device_pointer_arg!(['a, T: DeviceRepr] DeviceSliceMut<'a, T>);
device_pointer_arg!(['a, 'b, T: DeviceRepr] &'b DeviceSliceMut<'a, T>);
device_pointer_arg!(['a, 'b, T: DeviceRepr] &'b mut DeviceSliceMut<'a, T>);

/// The arguments of a launch: a tuple of up to 12 [`KernelArg`]s (or `()` for none), packed
/// into an array of parameter pointers on the stack.
///
/// ```no_run
/// # fn f(k: &cuda_driver::Function, s: &cuda_driver::Stream,
/// #      x: &cuda_driver::DeviceBuffer<f32>, y: &mut cuda_driver::DeviceBuffer<f32>)
/// #      -> cuda_driver::Result<()> {
/// use cuda_driver::prelude::*;
/// use cuda_driver::LaunchConfig;
/// let (a, n) = (2.0f32, x.len() as i32);
/// // saxpy(float a, const float* x, float* y, int n)
/// // SAFETY: the argument types match saxpy's parameters; y has n elements.
/// let cfg = LaunchConfig::for_num_elems(x.len())?;
/// unsafe { k.launch(s, &cfg, (&a, x.as_view(), y.as_view_mut(), &n))? };
/// # Ok(()) }
/// ```
///
/// # Safety
/// `pointers()[i]` points to `SIZES[i]` readable bytes that stay valid while `self` is
/// borrowed, and `SIZES.len()` is the length of `Pointers`.
pub unsafe trait KernelArgs {
    /// The size of each argument, in order.
    const SIZES: &'static [usize];
    /// The parameter pointer array, `[*mut c_void; N]`.
    type Pointers: AsMut<[*mut c_void]>;
    /// The parameter pointers, in order.
    fn pointers(&self) -> Self::Pointers;

    /// The first argument's [`stream_order`](KernelArg::stream_order) that is neither null
    /// nor `stream` (a raw stream's identity: the null handle resolved to the legacy or
    /// per-thread default stream), or `None` when every argument may be used on `stream`.
    #[inline(always)]
    fn stream_mismatch(&self, stream: sys::CUstream) -> Option<sys::CUstream> {
        let _ = stream;
        None
    }
}

// SAFETY: no arguments, no pointers.
unsafe impl KernelArgs for () {
    const SIZES: &'static [usize] = &[];
    type Pointers = [*mut c_void; 0];
    #[inline(always)]
    fn pointers(&self) -> [*mut c_void; 0] {
        []
    }
}

macro_rules! kernel_args_tuple {
    ($n:literal; $($a:ident . $i:tt),+) => {
        // SAFETY: each pointer comes from the KernelArg at the same position, whose
        // PARAM_SIZE is recorded at the same position of SIZES; the tuple is borrowed for as
        // long as the pointers are used.
        unsafe impl<$($a: KernelArg),+> KernelArgs for ($($a,)+) {
            const SIZES: &'static [usize] = &[$($a::PARAM_SIZE),+];
            type Pointers = [*mut c_void; $n];
            #[inline(always)]
            fn pointers(&self) -> [*mut c_void; $n] {
                [$(self.$i.param_ptr()),+]
            }
            #[inline(always)]
            fn stream_mismatch(&self, stream: sys::CUstream) -> Option<sys::CUstream> {
                $(
                    let home = self.$i.stream_order();
                    if !home.is_null() && home != stream {
                        return Some(home);
                    }
                )+
                None
            }
        }
    };
}

kernel_args_tuple!(1; A.0);
kernel_args_tuple!(2; A.0, B.1);
kernel_args_tuple!(3; A.0, B.1, C.2);
kernel_args_tuple!(4; A.0, B.1, C.2, D.3);
kernel_args_tuple!(5; A.0, B.1, C.2, D.3, E.4);
kernel_args_tuple!(6; A.0, B.1, C.2, D.3, E.4, F.5);
kernel_args_tuple!(7; A.0, B.1, C.2, D.3, E.4, F.5, G.6);
kernel_args_tuple!(8; A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7);
kernel_args_tuple!(9; A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8);
kernel_args_tuple!(10; A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8, J.9);
kernel_args_tuple!(11; A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8, J.9, K.10);
kernel_args_tuple!(12; A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8, J.9, K.10, L.11);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vector::{Double2, Float4};

    #[test]
    fn sizes_follow_the_tuple() {
        assert_eq!(<() as KernelArgs>::SIZES, &[] as &[usize]);
        assert_eq!(<(&f32,) as KernelArgs>::SIZES, &[4]);
        assert_eq!(
            <(&i8, &Float4, &u64, &Double2, &[f32; 3]) as KernelArgs>::SIZES,
            &[1, 16, 8, 16, 12]
        );
        assert_eq!(
            <(
                &DeviceSlice<'_, f32>,
                &mut DeviceSliceMut<'_, u8>,
                DeviceSlice<'_, i32>
            ) as KernelArgs>::SIZES,
            &[8, 8, 8]
        );
        assert_eq!(<&Float4 as KernelArg>::PARAM_ALIGN, 16);
        assert_eq!(<&i8 as KernelArg>::PARAM_ALIGN, 1);
        assert_eq!(<&DeviceSlice<'_, i8> as KernelArg>::PARAM_ALIGN, 8);
    }

    #[test]
    fn pointers_point_at_the_values() {
        let (a, b, c) = (1.5f32, 7i64, Float4::new(1.0, 2.0, 3.0, 4.0));
        let args = (&a, &b, &c);
        let p = args.pointers();
        assert_eq!(p.len(), 3);
        assert_eq!(p[0] as usize, &a as *const f32 as usize);
        assert_eq!(p[1] as usize, &b as *const i64 as usize);
        assert_eq!(p[2] as usize, &c as *const Float4 as usize);
        // SAFETY: p[1] points to `b`, alive.
        assert_eq!(unsafe { *p[1].cast::<i64>() }, 7);
    }
}
