//! Execution Control: launching kernels ([`Function`] and [`Kernel`]) with a [`LaunchConfig`],
//! the extended attributes of `cuLaunchKernelEx` ([`LaunchAttributes`]: clusters, cooperative
//! launches, priority), arguments ([`KernelArgs`]), packed parameter buffers ([`ParamBuffer`]),
//! a function's attributes ([`Function::attribute`]) and occupancy.
//!
//! [`Function`] (a kernel of a module in one context) and [`Kernel`] (a context-independent
//! kernel of a library) launch the same ways:
//!
//! | method | driver call | arguments checked |
//! |--------|-------------|-------------------|
//! | [`launch`](Function::launch) | `cuLaunchKernel` | count, sizes, stream order |
//! | [`launch_unchecked`](Function::launch_unchecked) | `cuLaunchKernel` | no |
//! | [`launch_ex`](Function::launch_ex) | `cuLaunchKernelEx` | count, sizes, stream order |
//! | [`launch_ex_unchecked`](Function::launch_ex_unchecked) | `cuLaunchKernelEx` | no |
//! | [`launch_packed`](Function::launch_packed) | `cuLaunchKernel` with `extra` | count, offsets, sizes, stream order |
//! | [`launch_packed_unchecked`](Function::launch_packed_unchecked) | `cuLaunchKernel` with `extra` | no |
//!
//! A checked launch compares the arguments with the kernel's parameter list, which it learns
//! once and caches in the `Function` or `Kernel`: for a kernel loaded from PTX, from the
//! `.param` declarations of its `.entry` (offsets and sizes, as the driver lays them out; no
//! driver call), otherwise from the driver (`cuFuncGetParamInfo` / `cuKernelGetParamInfo`,
//! CUDA 12.4; as many parameters as the loaded image declares, see [`Function::params`]).
//! From then on the check is a few integer comparisons, with no driver call and no
//! allocation. A mismatch is [`LaunchError::ArgumentCount`] or [`LaunchError::ArgumentSize`]
//! (in [`Error::Launch`]) and nothing is launched. Where neither tells the parameter list (a
//! binary image on a driver older than 12.4), a checked launch is [`Error::Unsupported`],
//! unless the process opted in to unchecked launches with [`set_argument_check`]. A checked
//! launch also refuses a view of stream-ordered memory that is ordered on another stream
//! ([`Error::StreamMismatch`]); for arguments that are no such views that check compiles to
//! nothing.
//!
//! A launch on a created stream makes no context current: the driver runs it in the
//! stream's context, which the checks make sure is the function's. On the legacy or
//! per-thread default stream, which name the current context's stream, the stream's context
//! is made current first (one `cuCtxGetCurrent` when it already is). No launch allocates:
//! arguments are packed into an array on the stack.

/// Implements methods once, for the owned [`Function`] and the borrowed [`FunctionRef`]: both
/// are a `CUfunction` of one context, with `as_raw` and `context`.
macro_rules! function_methods {
    ($($body:tt)*) => {
        impl Function { $($body)* }
        impl FunctionRef<'_> { $($body)* }
    };
}

pub(crate) mod args;
pub(crate) mod attributes;
pub(crate) mod config;
pub(crate) mod cooperative;
pub(crate) mod function;
pub(crate) mod host_fn;
pub(crate) mod occupancy;
pub(crate) mod param_buffer;

use std::ffi::c_void;
use std::ptr;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use crate::context::Context;
use crate::error::{Error, Result};
use crate::handle::Handle;
use crate::library::Kernel;
use crate::memory::view::stream_identity;
use crate::module::{Function, FunctionRef};
use crate::params::KernelParams;
use crate::stream::Stream;

pub use crate::error::launch::LaunchError;
pub use crate::params::{
    argument_check, param_source, set_argument_check, set_param_source, ArgumentCheck, ParamInfo,
    ParamSource,
};
pub use args::{KernelArg, KernelArgs};
pub use attributes::{LaunchAttributes, MAX_LAUNCH_ATTRIBUTES};
pub use config::{Dim3, LaunchConfig, DEFAULT_BLOCK_SIZE};
pub use occupancy::BlockSizeSuggestion;
pub use param_buffer::{ParamBuffer, PARAM_BUFFER_CAPACITY, PARAM_BUFFER_MAX_PARAMS};

/// What the launch code needs from a [`Function`], a [`FunctionRef`] or a [`Kernel`],
/// beyond its parameters.
pub(crate) trait Launchable: KernelParams {
    /// The handle for `cuLaunchKernel` (a `CUkernel` cast to `CUfunction` for a kernel).
    fn raw_function(&self) -> sys::CUfunction;
    /// Whether the kernel can launch on `stream`.
    fn check_context(&self, stream: &Stream) -> Result<()>;
    /// While `stream` is being captured, moves into the captured graph what keeps the
    /// kernel's code (or, for a borrowed function, its context) alive: see
    /// [`keep_in_capture`].
    fn keep_in_capture(&self, stream: &Stream) -> Result<()>;
}

impl Launchable for Function {
    #[inline(always)]
    fn raw_function(&self) -> sys::CUfunction {
        self.as_raw()
    }

    #[inline(always)]
    fn check_context(&self, stream: &Stream) -> Result<()> {
        check_function_context(self.context(), stream)
    }

    #[inline(always)]
    #[track_caller]
    fn keep_in_capture(&self, stream: &Stream) -> Result<()> {
        keep_in_capture(self, stream)
    }
}

impl Launchable for FunctionRef<'_> {
    #[inline(always)]
    fn raw_function(&self) -> sys::CUfunction {
        self.as_raw()
    }

    #[inline(always)]
    fn check_context(&self, stream: &Stream) -> Result<()> {
        check_function_context(self.context(), stream)
    }

    /// The caller of `borrow_raw` keeps the code loaded for the graph's life; the graph keeps
    /// the context, as it would for a `Function`.
    #[inline(always)]
    #[track_caller]
    fn keep_in_capture(&self, stream: &Stream) -> Result<()> {
        keep_in_capture(self.context(), stream)
    }
}

/// A function launches only in its own context (a library `Kernel` launches in any).
#[inline(always)]
fn check_function_context(ctx: &Context, stream: &Stream) -> Result<()> {
    if stream.context().as_raw() == ctx.as_raw() {
        Ok(())
    } else {
        Err(wrong_context(ctx, stream))
    }
}

#[cold]
#[inline(never)]
fn wrong_context(ctx: &Context, stream: &Stream) -> Error {
    Error::ContextMismatch {
        what: "Function launch",
        expected: ctx.as_raw() as usize,
        found: stream.context().as_raw() as usize,
    }
}

impl Launchable for Kernel {
    #[inline(always)]
    fn raw_function(&self) -> sys::CUfunction {
        // cuLaunchKernel, cuLaunchKernelEx and the occupancy functions take a CUkernel cast
        // to CUfunction (cuda.h: "context-less kernel").
        self.as_raw().cast()
    }

    #[inline(always)]
    fn check_context(&self, _stream: &Stream) -> Result<()> {
        Ok(())
    }

    #[inline(always)]
    #[track_caller]
    fn keep_in_capture(&self, stream: &Stream) -> Result<()> {
        keep_in_capture(self, stream)
    }
}

/// The stream-order rule for a launch's arguments: a view of stream-ordered memory is used on
/// its own stream only. Compiles to nothing for arguments that are no such views.
#[inline(always)]
#[track_caller]
fn check_stream_order<A: KernelArgs>(args: &A, stream: &Stream) -> Result<()> {
    match args.stream_mismatch(stream_identity(stream.as_raw())) {
        None => Ok(()),
        Some(home) => Err(stream_mismatch(home, stream)),
    }
}

/// The stream-order rule for the views pushed into a packed buffer.
#[inline(always)]
#[track_caller]
fn check_buffer_stream_order<const N: usize>(
    buf: &ParamBuffer<'_, N>,
    stream: &Stream,
) -> Result<()> {
    let home = buf.stream_order();
    if !home.is_null() && home != stream_identity(stream.as_raw()) {
        return Err(stream_mismatch(home, stream));
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn stream_mismatch(home: sys::CUstream, stream: &Stream) -> Error {
    Error::StreamMismatch {
        what: "kernel launch",
        expected: home as usize,
        found: stream.as_raw() as usize,
    }
}

/// While a stream capture begun by this crate is in progress somewhere in the process, and
/// `stream` is being captured, moves a clone of the kernel handle (which keeps its module or
/// library loaded) into the graph being captured, so that the graph and its executable graphs
/// keep the code loaded (see [`crate::graph::Graph`]). Outside captures: one atomic load.
#[inline(always)]
#[track_caller]
fn keep_in_capture<L: Clone + Send + Sync + 'static>(f: &L, stream: &Stream) -> Result<()> {
    if crate::stream::captures_active() {
        crate::stream::keep_in_capture(stream, || f.clone())
    } else {
        Ok(())
    }
}

/// The one `cuLaunchKernel` call: `f` in the configuration `cfg` on `stream`, its arguments
/// in `params` (`kernelParams`) or `extra`.
///
/// # Safety
/// As for [`Function::launch_unchecked`]; `f` is a live function or kernel; `params` or
/// `extra` is null or describes `f`'s arguments as `cuLaunchKernel` requires, alive for the
/// call.
#[inline(always)]
#[track_caller]
unsafe fn cu_launch_kernel(
    f: sys::CUfunction,
    stream: &Stream,
    cfg: &LaunchConfig,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> Result<()> {
    call!(
        // SAFETY: the caller's guarantees.
        unsafe {
            sys::cuLaunchKernel(
                f,
                cfg.grid.x,
                cfg.grid.y,
                cfg.grid.z,
                cfg.block.x,
                cfg.block.y,
                cfg.block.z,
                cfg.shared_mem_bytes,
                stream.as_raw(),
                params,
                extra,
            )
        },
    )
}

/// `kernelParams` for the argument pointers of a launch: null when there are none.
#[inline(always)]
fn kernel_params(pointers: &mut [*mut c_void]) -> *mut *mut c_void {
    if pointers.is_empty() {
        ptr::null_mut()
    } else {
        pointers.as_mut_ptr()
    }
}

/// `cuLaunchKernel` with a parameter pointer array.
///
/// # Safety
/// As for [`Function::launch_unchecked`]; `f` is a live function or kernel.
#[inline(always)]
#[track_caller]
unsafe fn launch_kernel<A: KernelArgs>(
    f: sys::CUfunction,
    stream: &Stream,
    cfg: &LaunchConfig,
    args: A,
) -> Result<()> {
    let mut pointers = args.pointers();
    let params = kernel_params(pointers.as_mut());
    // SAFETY: `params` holds one pointer per argument, each to the argument's bytes, alive
    // until `args` drops at the end of this function, after the call (the driver copies the
    // parameters during it); the caller guarantees the rest.
    unsafe { cu_launch_kernel(f, stream, cfg, params, ptr::null_mut()) }
}

/// `cuLaunchKernelEx` with a parameter pointer array.
///
/// # Safety
/// As for [`Function::launch_ex_unchecked`]; `f` is a live function or kernel.
#[inline(always)]
#[track_caller]
unsafe fn launch_kernel_ex<A: KernelArgs>(
    f: sys::CUfunction,
    stream: &Stream,
    cfg: &LaunchConfig,
    attrs: &LaunchAttributes,
    args: A,
) -> Result<()> {
    let config = attrs.raw_config(cfg, stream.as_raw());
    let mut pointers = args.pointers();
    let params = kernel_params(pointers.as_mut());
    call!(
        // SAFETY: as in launch_kernel; `config` points to `attrs`' array, alive for the call.
        unsafe { sys::cuLaunchKernelEx(&config, f, params, ptr::null_mut()) },
    )
}

/// `cuLaunchKernel` with a packed buffer in `extra`.
///
/// # Safety
/// As for [`Function::launch_packed_unchecked`]; `f` is a live function or kernel.
#[inline(always)]
#[track_caller]
unsafe fn launch_kernel_packed<const N: usize>(
    f: sys::CUfunction,
    stream: &Stream,
    cfg: &LaunchConfig,
    buf: &ParamBuffer<'_, N>,
) -> Result<()> {
    let mut size: usize = buf.len();
    let mut extra: [*mut c_void; 5] = [
        sys::CU_LAUNCH_PARAM_BUFFER_POINTER,
        buf.as_ptr().cast_mut().cast(),
        sys::CU_LAUNCH_PARAM_BUFFER_SIZE,
        (&mut size as *mut usize).cast(),
        sys::CU_LAUNCH_PARAM_END,
    ];
    // SAFETY: `extra` is an END-terminated list naming the buffer (len initialised bytes,
    // borrowed for the call) and a pointer to its size, both alive for the call; no
    // kernelParams; the caller guarantees the rest.
    unsafe { cu_launch_kernel(f, stream, cfg, ptr::null_mut(), extra.as_mut_ptr()) }
}

macro_rules! launch_methods {
    ($ty:ty, $name:literal, $where:literal) => {
        impl $ty {
            #[wraps(cuLaunchKernel)]
            #[doc = concat!("Launches the kernel on `stream` ", $where, ", after checking")]
            /// the arguments against its parameter list.
            ///
            /// `args` is a tuple of [`KernelArg`]s: `&value` for a value parameter
            /// (numbers, vector types, `#[repr(C)]` structs), a view for a pointer parameter
            /// (`buf.as_view()`, `buf.as_view_mut()`). Before anything is launched:
            /// * the argument count and each argument's size are compared with the parameter
            ///   list the driver reports (read once and cached, see [`params`](Self::params)); a
            ///   mismatch is [`LaunchError::ArgumentCount`](crate::launch::LaunchError::ArgumentCount)
            ///   or [`LaunchError::ArgumentSize`](crate::launch::LaunchError::ArgumentSize) naming
            ///   the kernel; a driver that cannot report parameters is [`Error::Unsupported`] unless
            ///   the process allows it (see [`set_argument_check`](crate::launch::set_argument_check));
            /// * a view of stream-ordered memory must be ordered on `stream`
            ///   ([`Error::StreamMismatch`] otherwise; see
            ///   [`AsyncDeviceBuffer::move_to_stream`](crate::memory::pool::AsyncDeviceBuffer::move_to_stream));
            /// * a [`Function`] (or [`FunctionRef`]) launches only on a stream of its own
            ///   context ([`Error::ContextMismatch`] otherwise), a [`Kernel`] on any.
            ///
            /// The driver runs the launch in the stream's context, so on a created stream nothing
            /// is made current; on the legacy or per-thread default stream the stream's context
            /// is made current for the call. Nothing is allocated.
            ///
            ///
            /// ```no_run
            #[doc = concat!("# fn f(k: &cuda_driver::", $name, ", stream: &cuda_driver::Stream,")]
            /// #      a: &cuda_driver::DeviceBuffer<f32>, b: &cuda_driver::DeviceBuffer<f32>,
            /// #      c: &mut cuda_driver::DeviceBuffer<f32>) -> cuda_driver::Result<()> {
            /// use cuda_driver::prelude::*;
            /// use cuda_driver::LaunchConfig;
            /// // VecAdd(const float* A, const float* B, float* C, int N)
            /// let n = c.len() as i32;
            /// let cfg = LaunchConfig::for_num_elems(c.len())?;
            /// // SAFETY: the arguments are VecAdd's parameters; a, b and c hold n floats and
            /// // are not touched by the host until the stream is synchronised.
            /// unsafe { k.launch(stream, &cfg, (a.as_view(), b.as_view(), c.as_view_mut(), &n))? };
            /// stream.synchronize()?;
            /// # Ok(()) }
            /// ```
            ///
            /// # Safety
            /// The driver cannot check what the kernel does with its arguments:
            /// * each argument has the layout and a valid value of the kernel's parameter
            ///   at its position (the check compares sizes only): a pointer parameter gets
            ///   device memory of the element type the kernel expects, a struct parameter a
            ///   `#[repr(C)]` struct with the device's alignment;
            /// * the kernel stays in bounds of the memory it is given for this launch
            ///   configuration, and touches only memory of the stream's context (or memory
            ///   it may reach otherwise, such as peer or managed memory);
            /// * memory the kernel may access stays allocated until the kernel has finished,
            ///   and memory it writes is neither read nor written by the host or other work
            ///   until then (synchronise the stream or order the work with events), nor
            ///   memory it reads written meanwhile;
            /// * the kernel's code stays loaded until the kernel has finished: the last handle
            ///   to its module or library (this one included) is not dropped before the
            ///   stream is synchronised;
            /// * the kernel's own requirements hold: the dynamic shared memory and block
            ///   shape it assumes, and so on.
            #[inline]
            #[track_caller]
            pub unsafe fn launch<A: KernelArgs>(
                &self,
                stream: &Stream,
                cfg: &LaunchConfig,
                args: A,
            ) -> Result<()> {
                let _cur = stream.enter_for_call()?;
                self.keep_in_capture(stream)?;
                self.check_context(stream)?;
                check_stream_order(&args, stream)?;
                self.check_args(A::SIZES)?;
                // SAFETY: the caller's guarantees, with the argument sizes checked.
                unsafe { launch_kernel(self.raw_function(), stream, cfg, args) }
            }

            /// [`launch`](Self::launch) without the argument check: makes the stream's
            /// context current and calls `cuLaunchKernel`, nothing else.
            ///
            ///
            /// # Safety
            /// As for [`launch`](Self::launch), and the argument count and sizes match the
            /// kernel's parameters.
            #[wraps(cuLaunchKernel)]
            #[inline]
            #[track_caller]
            pub unsafe fn launch_unchecked<A: KernelArgs>(
                &self,
                stream: &Stream,
                cfg: &LaunchConfig,
                args: A,
            ) -> Result<()> {
                let _cur = stream.enter_for_call()?;
                self.keep_in_capture(stream)?;
                // SAFETY: the caller's guarantees.
                unsafe { launch_kernel(self.raw_function(), stream, cfg, args) }
            }

            /// Launches with extended attributes (thread-block clusters, cooperative launch,
            /// priority: see [`LaunchAttributes`]), after checking the arguments as
            /// [`launch`](Self::launch) does.
            ///
            ///
            /// # Safety
            /// As for [`launch`](Self::launch), and the attributes fit the kernel: a kernel
            /// that synchronises its grid is launched cooperatively, one that uses cluster
            /// features in clusters of the shape it assumes.
            #[wraps(cuLaunchKernelEx)]
            #[inline]
            #[track_caller]
            pub unsafe fn launch_ex<A: KernelArgs>(
                &self,
                stream: &Stream,
                cfg: &LaunchConfig,
                attrs: &LaunchAttributes,
                args: A,
            ) -> Result<()> {
                let _cur = stream.enter_for_call()?;
                self.keep_in_capture(stream)?;
                self.check_context(stream)?;
                check_stream_order(&args, stream)?;
                self.check_args(A::SIZES)?;
                // SAFETY: the caller's guarantees, with the argument sizes checked.
                unsafe { launch_kernel_ex(self.raw_function(), stream, cfg, attrs, args) }
            }

            /// [`launch_ex`](Self::launch_ex) without the argument check.
            ///
            ///
            /// # Safety
            /// As for [`launch_ex`](Self::launch_ex), and the argument count and sizes match
            /// the kernel's parameters.
            #[wraps(cuLaunchKernelEx)]
            #[inline]
            #[track_caller]
            pub unsafe fn launch_ex_unchecked<A: KernelArgs>(
                &self,
                stream: &Stream,
                cfg: &LaunchConfig,
                attrs: &LaunchAttributes,
                args: A,
            ) -> Result<()> {
                let _cur = stream.enter_for_call()?;
                self.keep_in_capture(stream)?;
                // SAFETY: the caller's guarantees.
                unsafe { launch_kernel_ex(self.raw_function(), stream, cfg, attrs, args) }
            }

            /// Launches with the parameters packed in one buffer
            /// (`CU_LAUNCH_PARAM_BUFFER_POINTER`), after checking the buffer's count,
            /// offsets and sizes against the kernel's parameter list (a wrong offset, from a
            /// type whose alignment differs on the device, is
            /// [`LaunchError::ArgumentOffset`](crate::launch::LaunchError::ArgumentOffset)) and
            /// the stream order of the views pushed into it, as [`launch`](Self::launch) does.
            ///
            /// Calls `cuLaunchKernel` with `extra`.
            ///
            /// # Safety
            /// As for [`launch`](Self::launch), for the values in the buffer.
            #[wraps(cuLaunchKernel)]
            #[doc(alias = "CU_LAUNCH_PARAM_BUFFER_POINTER")]
            #[inline]
            #[track_caller]
            pub unsafe fn launch_packed<const N: usize>(
                &self,
                stream: &Stream,
                cfg: &LaunchConfig,
                params: &ParamBuffer<'_, N>,
            ) -> Result<()> {
                let _cur = stream.enter_for_call()?;
                self.keep_in_capture(stream)?;
                self.check_context(stream)?;
                check_buffer_stream_order(params, stream)?;
                // A buffer whose layout matched this kernel's parameter list (the same list:
                // identities are unique in the process) is not compared again.
                let id = self.param_list_id();
                if id == 0 || params.matched() != id {
                    self.check_packed(params.params())?;
                    params.set_matched(self.param_list_id());
                }
                // SAFETY: the caller's guarantees, with the layout checked.
                unsafe { launch_kernel_packed(self.raw_function(), stream, cfg, params) }
            }

            /// [`launch_packed`](Self::launch_packed) without the layout check.
            ///
            /// Calls `cuLaunchKernel` with `extra`.
            ///
            /// # Safety
            /// As for [`launch_packed`](Self::launch_packed), and the buffer's layout is the
            /// kernel's parameter layout.
            #[wraps(cuLaunchKernel)]
            #[inline]
            #[track_caller]
            pub unsafe fn launch_packed_unchecked<const N: usize>(
                &self,
                stream: &Stream,
                cfg: &LaunchConfig,
                params: &ParamBuffer<'_, N>,
            ) -> Result<()> {
                let _cur = stream.enter_for_call()?;
                self.keep_in_capture(stream)?;
                // SAFETY: the caller's guarantees.
                unsafe { launch_kernel_packed(self.raw_function(), stream, cfg, params) }
            }
        }
    };
}

launch_methods!(
    Function,
    "Function",
    "(a stream of the function's own context)"
);
launch_methods!(
    FunctionRef<'_>,
    "module::FunctionRef<'_>",
    "(a stream of the function's own context)"
);
launch_methods!(Kernel, "Kernel", "(in the stream's context, on any device)");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Context;
    use crate::device::Device;
    use crate::handle::OwnedHandle;
    use crate::memory::view::{DeviceSlice, DeviceSliceMut};
    use std::mem::ManuallyDrop;

    /// A context handle that is never given to the driver, and never dropped.
    fn fake_context() -> ManuallyDrop<Context> {
        // SAFETY: the handle is never passed to the driver and never dropped.
        ManuallyDrop::new(unsafe { Context::from_raw(ptr::null_mut(), Device::from_raw(0)) })
    }

    fn view(ctx: &Context, home: usize) -> DeviceSlice<'_, f32> {
        // SAFETY: the view covers memory that `self` owns or borrows (see the SAFETY comment of
        // this impl or function), released as `from_parts` requires, borrowed for the view's life.
        unsafe { DeviceSlice::from_parts(0x1000, 4, ctx, home as sys::CUstream) }
    }

    #[test]
    fn stream_ordered_arguments_must_be_on_the_launch_stream() {
        let ctx = fake_context();
        let mine = 0x5000 as sys::CUstream;
        let (ordered, plain) = (view(&ctx, 0x5000), view(&ctx, 0));
        // SAFETY: the view covers memory that `self` owns or borrows (see the SAFETY comment of
        // this impl or function), released as `from_parts` requires, borrowed for the view's life.
        let mut m: DeviceSliceMut<'_, f32> =
            unsafe { DeviceSliceMut::from_parts(0x2000, 4, &ctx, 0x6000 as sys::CUstream) };
        let n = 4i32;
        // Scalars and views of memory without a stream: nothing to check.
        assert_eq!((&n, plain, &n).stream_mismatch(mine), None);
        assert_eq!(().stream_mismatch(mine), None);
        // Views ordered on the launch stream pass; another stream is the first mismatch.
        assert_eq!((ordered, &n).stream_mismatch(mine), None);
        assert_eq!(
            (&ordered, &n, &mut m).stream_mismatch(mine),
            Some(0x6000 as sys::CUstream)
        );
        assert_eq!(
            (m.reborrow(),).stream_mismatch(0x6000 as sys::CUstream),
            None
        );
        // The default stream's identity: memory ordered on the legacy stream passes a launch on
        // the null handle (without the per-thread feature).
        let legacy = view(&ctx, sys::CU_STREAM_LEGACY as usize);
        let null_identity = stream_identity(ptr::null_mut());
        assert_eq!(
            (legacy,).stream_mismatch(null_identity).is_none(),
            !cfg!(feature = "per-thread-default-stream")
        );
        // The error names both streams.
        let stream = ManuallyDrop::new(unsafe_stream(&ctx, mine));
        match check_stream_order(&(&n, view(&ctx, 0x7000)), &stream) {
            Err(Error::StreamMismatch {
                expected, found, ..
            }) => assert_eq!((expected, found), (0x7000, 0x5000)),
            other => panic!("{other:?}"),
        }
        assert!(check_stream_order(&(&n, ordered), &stream).is_ok());
        // A packed buffer remembers the stream of the views pushed into it.
        let mut buf = ParamBuffer::new();
        buf.push_arg(ordered).unwrap().push(1u32).unwrap();
        assert!(check_buffer_stream_order(&buf, &stream).is_ok());
        let mut other = ParamBuffer::new();
        other.push_arg(view(&ctx, 0x7000)).unwrap();
        assert!(matches!(
            check_buffer_stream_order(&other, &stream),
            Err(Error::StreamMismatch {
                expected: 0x7000,
                ..
            })
        ));
        // Two views ordered on different streams cannot share a buffer.
        assert!(matches!(
            other.push_arg(ordered),
            Err(Error::StreamMismatch { .. })
        ));
    }

    /// A stream handle that is never given to the driver, and never dropped.
    fn unsafe_stream(ctx: &Context, raw: sys::CUstream) -> Stream {
        // SAFETY: the stream is never used with the driver and never dropped (ManuallyDrop at
        // the caller).
        unsafe { Stream::from_raw(raw, ctx) }
    }

    #[test]
    fn a_function_launches_only_in_its_context() {
        let ctx = fake_context();
        let other = ManuallyDrop::new(
            // SAFETY: as in fake_context.
            unsafe { Context::from_raw(0x10 as sys::CUcontext, Device::from_raw(0)) },
        );
        // SAFETY: never launched or given to the driver.
        let f = unsafe { FunctionRef::borrow_raw(ptr::null_mut(), &ctx) };
        let mine = ManuallyDrop::new(unsafe_stream(&ctx, 0x5000 as sys::CUstream));
        let theirs = ManuallyDrop::new(unsafe_stream(&other, 0x6000 as sys::CUstream));
        assert!(f.check_context(&mine).is_ok());
        match f.check_context(&theirs) {
            Err(Error::ContextMismatch {
                expected, found, ..
            }) => assert_eq!((expected, found), (0, 0x10)),
            other => panic!("{other:?}"),
        }
    }
}
