//! Typed launchers for kernels compiled at run time: [`typed_kernel!`](crate::typed_kernel).
//!
//! `cuda-driver-build` generates typed launchers from PTX at build time. A kernel compiled at
//! run time has no PTX at build time, but its signature is often known then: declare it, and
//! the launcher takes exactly those Rust types, in order (a wrong type, a missing argument or a
//! shared view where the kernel writes are compile errors, as with the generated launchers).
//! When the kernel is looked up, its parameters (count and sizes, from the PTX or the driver)
//! are checked against the declaration ([`Error::SignatureMismatch`]), so source and
//! declaration that drift apart fail at load, not at launch; the launch itself is
//! `cuda-driver`'s checked [`Function::launch`], which checks them again and checks the
//! stream order of the views.

use cuda_driver::Function;

use crate::error::{Error, Result};

/// Checks `function`'s parameters against a declared signature: as many, of the sizes
/// `sizes` (named `names`). Where the driver cannot tell a kernel's parameters (a CUBIN on a
/// driver older than CUDA 12.4) this passes, and the checked launch decides (see
/// [`Function::params`]).
#[doc(hidden)]
pub fn check_signature(
    function: &Function,
    signature: &'static str,
    names: &[&str],
    sizes: &[usize],
) -> Result<()> {
    let Some(params) = function.params()? else {
        return Ok(());
    };
    let mismatch = |detail: String| Error::SignatureMismatch {
        kernel: function.name().into(),
        signature,
        detail,
    };
    if params.len() != sizes.len() {
        return Err(mismatch(format!(
            "{} parameters declared, the kernel has {}",
            sizes.len(),
            params.len()
        )));
    }
    for (i, (p, &size)) in params.iter().zip(sizes).enumerate() {
        if p.size != size {
            return Err(mismatch(format!(
                "parameter {i} (`{}`) is declared with {size} bytes, the kernel's has {}",
                names.get(i).copied().unwrap_or("?"),
                p.size
            )));
        }
    }
    Ok(())
}

/// Declares a typed launcher for a kernel compiled at run time.
///
/// ```
/// # use cuda_driver::{DeviceSlice, DeviceSliceMut};
/// cuda_driver_rtc::typed_kernel! {
///     /// `saxpy(float a, const float* x, float* y, int n)`
///     pub struct Saxpy(a: f32, x: DeviceSlice<'_, f32>, y: DeviceSliceMut<'_, f32>, n: i32);
/// }
/// ```
///
/// declares `struct Saxpy` with
/// * `Saxpy::new(&module, name)`: looks the kernel up by name (for a C++ kernel, its
///   [lowered name](crate::Compiled::lowered_name)) and checks its parameters against the
///   declaration ([`Error::SignatureMismatch`](crate::Error::SignatureMismatch));
/// * `Saxpy::from_function(function)`: the same check, for a function looked up already (say,
///   from a [`Library`](cuda_driver::Library)'s kernel);
/// * `unsafe fn launch(&self, &stream, &cfg, a, x, y, n)`: the arguments as declared, through
///   `cuda-driver`'s checked launch;
/// * `function()` and `SIGNATURE`.
///
/// Each parameter's type is a [`DeviceRepr`](cuda_driver::DeviceRepr) value (`f32`, `i32`,
/// `Float4`, a `#[repr(C)]` struct), passed by value, or a view: `DeviceSlice<'_, T>` for a
/// `const T*` the kernel reads, `DeviceSliceMut<'_, T>` for a `T*` it writes. Type names are
/// resolved where the macro is used (import them from `cuda_driver`).
///
/// The launch is `unsafe` for what no type says: that the declaration is the kernel's
/// signature beyond sizes (a `float` and an `int` are both 4 bytes), and that the kernel stays
/// in bounds of the memory it is given and does not race with other work on it.
///
/// ```no_run
/// use cuda_driver::{prelude::*, DeviceBuffer, DeviceSlice, DeviceSliceMut, LaunchConfig};
/// use cuda_driver::{Device, Stream, types::StreamFlags};
/// use cuda_driver_rtc::{Options, Program};
///
/// cuda_driver_rtc::typed_kernel! {
///     /// `saxpy(float a, const float* x, float* y, int n)`
///     pub struct Saxpy(a: f32, x: DeviceSlice<'_, f32>, y: DeviceSliceMut<'_, f32>, n: i32);
/// }
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let device = Device::get(0)?;
/// let ctx = device.primary_context()?;
/// let mut p = Program::new(
///     "saxpy.cu",
///     r#"extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
///            int i = blockIdx.x * blockDim.x + threadIdx.x;
///            if (i < n) y[i] += a * x[i];
///        }"#,
/// )?;
/// let module = p.compile_for(&device, &Options::new())?.load(&ctx)?;
/// let saxpy = Saxpy::new(&module, "saxpy")?; // parameters checked here
/// let x = DeviceBuffer::from_slice(&ctx, &[1.0f32; 256])?;
/// let mut y = DeviceBuffer::from_slice(&ctx, &[2.0f32; 256])?;
/// let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;
/// let cfg = LaunchConfig::for_num_elems(256)?;
/// // SAFETY: saxpy reads x[..n] and writes y[..n]; y is read after the stream is synchronised.
/// unsafe { saxpy.launch(&stream, &cfg, 3.0, x.as_view(), y.as_view_mut(), 256)? };
/// stream.synchronize()?;
/// assert!(y.to_vec()?.iter().all(|&v| v == 5.0));
/// # Ok(())
/// # }
/// ```
///
/// An argument of the wrong type does not compile:
///
/// ```compile_fail,E0308
/// use cuda_driver::{DeviceSlice, DeviceSliceMut};
/// cuda_driver_rtc::typed_kernel! {
///     pub struct Scale(x: DeviceSliceMut<'_, f32>, a: f32);
/// }
/// # fn f(k: &Scale, s: &cuda_driver::Stream, c: &cuda_driver::LaunchConfig,
/// #      x: DeviceSliceMut<'_, f32>) {
/// // error: expected `f32`, found `f64`
/// let _ = unsafe { k.launch(s, c, x, 2.0f64) };
/// # }
/// ```
///
/// and neither does a shared view where the kernel writes:
///
/// ```compile_fail,E0308
/// use cuda_driver::{DeviceSlice, DeviceSliceMut};
/// cuda_driver_rtc::typed_kernel! {
///     pub struct Scale(x: DeviceSliceMut<'_, f32>, a: f32);
/// }
/// # fn f(k: &Scale, s: &cuda_driver::Stream, c: &cuda_driver::LaunchConfig,
/// #      x: DeviceSlice<'_, f32>) {
/// // error: expected `DeviceSliceMut`, found `DeviceSlice`
/// let _ = unsafe { k.launch(s, c, x, 2.0f32) };
/// # }
/// ```
#[macro_export]
macro_rules! typed_kernel {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident ( $($arg:ident : $ty:ty),* $(,)? );
    ) => {
        $(#[$meta])*
        #[derive(::core::clone::Clone)]
        $vis struct $name {
            function: $crate::__private::Function,
        }

        impl $name {
            /// The declared signature.
            pub const SIGNATURE: &'static str =
                ::core::concat!(::core::stringify!($name), "(", ::core::stringify!($($arg: $ty),*), ")");

            /// Looks the kernel `name` up in `module` and checks its parameters against the
            /// declaration.
            #[track_caller]
            pub fn new(
                module: &$crate::__private::Module,
                name: &str,
            ) -> $crate::Result<$name> {
                $name::from_function(module.function(name)?)
            }

            /// Checks `function`'s parameters against the declaration and wraps it.
            #[track_caller]
            pub fn from_function(
                function: $crate::__private::Function,
            ) -> $crate::Result<$name> {
                $crate::__private::check_signature(
                    &function,
                    Self::SIGNATURE,
                    &[$(::core::stringify!($arg)),*],
                    &[$(<&$ty as $crate::__private::KernelArg>::PARAM_SIZE),*],
                )?;
                ::core::result::Result::Ok($name { function })
            }

            /// The function handle, for attributes, occupancy or untyped launches.
            pub fn function(&self) -> &$crate::__private::Function {
                &self.function
            }

            /// Launches the kernel on `stream` with the declared arguments, through the
            /// checked `Function::launch` (count, sizes and stream order checked).
            ///
            /// # Safety
            /// The declaration is the kernel's signature (types, not only sizes); the kernel
            /// stays in bounds of the memory it is given for this configuration; memory it
            /// writes is not used by the host or other work until it has finished, nor memory
            /// it reads written meanwhile.
            #[inline]
            #[track_caller]
            #[allow(clippy::too_many_arguments)]
            pub unsafe fn launch(
                &self,
                stream: &$crate::__private::Stream,
                cfg: &$crate::__private::LaunchConfig,
                $($arg: $ty),*
            ) -> $crate::__private::DriverResult<()> {
                // SAFETY: the caller's promise above; the arguments' count and sizes are
                // checked by the launch.
                unsafe { self.function.launch(stream, cfg, ($(&$arg,)*)) }
            }
        }
    };
}
