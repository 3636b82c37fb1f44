//! [`Function`]: a kernel of a module in one context (`CUfunction`).
//!
//! Its attributes (`cuFuncGetAttribute` and friends, Execution Control) are in
//! `launch/function.rs`, its launches in `launch/`.

use std::ffi::{c_void, CStr};
use std::ptr;
use std::sync::Arc;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use super::{Keep, Module, ModuleInner};
use crate::context::current::Current;
use crate::context::Context;
use crate::entry_point::newer;
use crate::error::Result;
use crate::handle::{Handle, OwnedHandle};
use crate::params::{KernelParams, ParamCache};

/// Who keeps a [`Function`]'s code loaded.
#[derive(Clone)]
pub(crate) enum FunctionOwner {
    /// A kernel of a module.
    Module(Arc<ModuleInner>),
    /// A kernel of code that `Keep` (a library) keeps loaded, in one context.
    Kept(#[allow(dead_code)] Keep, Context),
}

/// A kernel of a module in one context (`CUfunction`), ready to launch.
///
/// A `Function` holds its [`Module`](crate::Module) (or library) and context through an `Arc`,
/// so it can never outlive the code it refers to: there is no lifetime to track, and a
/// function can be stored and sent anywhere (`Send + Sync`). It caches its name and, on the
/// first checked launch, its parameter list, against which every
/// [`launch`](Function::launch) checks its arguments.
///
/// Launching methods are documented with [`launch`](Function::launch); occupancy queries
/// with [`max_active_blocks_per_multiprocessor`](Function::max_active_blocks_per_multiprocessor);
/// attributes with [`attribute`](Function::attribute).
#[wraps(CUfunction)]
#[derive(Clone)]
pub struct Function {
    raw: sys::CUfunction,
    owner: FunctionOwner,
    params: ParamCache,
}

// SAFETY: a CUfunction may be used from any host thread; the owner keeps its module loaded.
unsafe impl Send for Function {}
// SAFETY: attribute setters and launches are thread-safe in the driver; the caches are
// OnceLocks.
unsafe impl Sync for Function {}

impl std::fmt::Debug for Function {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Function")
            .field("raw", &self.raw)
            .field("name", &self.params.known_name())
            .finish()
    }
}

impl Handle for Function {
    type Raw = sys::CUfunction;

    /// The raw `CUfunction`, valid while `self` lives.
    #[inline]
    fn as_raw(&self) -> sys::CUfunction {
        self.raw
    }
}

impl OwnedHandle for Function {
    type Parent<'p> = &'p Module;

    /// Wraps a function of `module`, which the handle keeps loaded (a function is never
    /// released on its own: owning one is keeping its code loaded). Its parameter count is
    /// unknown, so a checked launch probes the driver for it (see [`params`](Self::params)).
    /// (A function of a module the caller keeps loaded is a [`FunctionRef::borrow_raw`].)
    ///
    /// # Safety
    /// `raw` is a function of `module` (from `cuModuleGetFunction` or
    /// `cuModuleEnumerateFunctions` on `module.as_raw()`).
    unsafe fn from_raw(raw: sys::CUfunction, module: &Module) -> Function {
        Function::new(
            raw,
            FunctionOwner::Module(module.inner.clone()),
            ParamCache::unnamed(None),
        )
    }

    /// The raw `CUfunction`, giving up this handle: it stays valid while its module is loaded
    /// (by another handle, or by the caller).
    fn into_raw(self) -> sys::CUfunction {
        self.raw
    }
}

impl Function {
    pub(crate) fn new(raw: sys::CUfunction, owner: FunctionOwner, params: ParamCache) -> Function {
        Function { raw, owner, params }
    }

    /// The context the function belongs to; it launches only on streams of this context.
    #[inline]
    pub fn context(&self) -> &Context {
        match &self.owner {
            FunctionOwner::Module(m) => &m.ctx,
            FunctionOwner::Kept(_, ctx) => ctx,
        }
    }
}

impl KernelParams for Function {
    const PARAM_INFO_CALL: &'static str = "cuFuncGetParamInfo";

    #[inline(always)]
    fn param_cache(&self) -> &ParamCache {
        &self.params
    }

    #[track_caller]
    fn param_query_available(&self) -> Result<()> {
        newer::cuFuncGetParamInfo().map(|_| ())
    }

    type QueryScope<'a> = Current<'a>;

    #[track_caller]
    fn enter_for_queries(&self) -> Result<Current<'_>> {
        self.context().enter()
    }

    #[track_caller]
    fn query_param(&self, index: usize) -> Result<(sys::CUresult, usize, usize)> {
        // SAFETY: the function is alive: its owner keeps the module loaded, in the context
        // made current by `enter_for_queries`.
        unsafe { query_param(self.raw, index) }
    }

    fn driver_name(&self) -> Option<String> {
        // SAFETY: the function is alive: its owner keeps the module loaded.
        unsafe { driver_name(self.raw) }
    }

    fn raw_handle(&self) -> *mut c_void {
        self.raw.cast()
    }
}

/// `cuFuncGetParamInfo` for parameter `index` of `f`: `(result, offset, size)`.
///
/// # Safety
/// `f` is a live function of a module loaded in the current context.
#[track_caller]
unsafe fn query_param(f: sys::CUfunction, index: usize) -> Result<(sys::CUresult, usize, usize)> {
    let get = newer::cuFuncGetParamInfo()?;
    let (mut offset, mut size) = (0, 0);
    // SAFETY: `f` is alive (the caller's guarantee); writes two size_t.
    let r = unsafe { get(f, index, &mut offset, &mut size) };
    Ok((r, offset, size))
}

/// The function's name from the driver (`cuFuncGetName`).
///
/// # Safety
/// `f` is a live function.
unsafe fn driver_name(f: sys::CUfunction) -> Option<String> {
    let mut p = ptr::null();
    // SAFETY: `f` is alive (the caller's guarantee); writes a pointer to a NUL-terminated
    // string that the driver owns while the module is loaded.
    call!(unsafe { newer::cuFuncGetName().ok()?(&mut p, f) }).ok()?;
    if p.is_null() {
        return None;
    }
    // SAFETY: a valid NUL-terminated string, copied at once.
    Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// A function of a module the caller keeps loaded (`CUfunction`), borrowed for `'a`: what
/// a raw `CUfunction` from C code becomes. It launches like a [`Function`] (the same
/// [`launch`](FunctionRef::launch) methods, the same checks), keeps nothing loaded, and
/// releases nothing. It is a different type from the owner [`Function`], not a flag inside
/// it, and does not deref to one.
///
/// It borrows the context it belongs to, so it cannot outlive it:
///
/// ```compile_fail,E0597
/// use cuda_driver::module::FunctionRef;
/// # fn f(dev: cuda_driver::Device, raw: cuda_driver::sys::CUfunction) -> cuda_driver::Result<()> {
/// let f: FunctionRef<'_>;
/// {
///     let ctx = dev.primary_context()?;
///     // SAFETY: (for the example) `raw` is a function of a module loaded in `ctx`.
///     f = unsafe { FunctionRef::borrow_raw(raw, &ctx) };
/// } // `ctx` released here, while `f` is still used below
/// let _ = f.context();
/// # Ok(()) }
/// ```
///
/// nor can one borrowed from a [`Function`] outlive it:
///
/// ```compile_fail,E0597
/// use cuda_driver::module::FunctionRef;
/// # fn f(module: &cuda_driver::Module) -> cuda_driver::Result<()> {
/// let borrowed: FunctionRef<'_>;
/// {
///     let owned = module.function("scale")?;
///     borrowed = owned.as_function_ref();
/// } // `owned` dropped here, while `borrowed` is still used below
/// let _ = borrowed.context();
/// # Ok(()) }
/// ```
#[doc(alias = "CUfunction")]
pub struct FunctionRef<'a> {
    raw: sys::CUfunction,
    ctx: &'a Context,
    params: ParamCache,
}

// SAFETY: a CUfunction may be used from any host thread; the caller keeps its module loaded
// for 'a (borrow_raw's contract).
unsafe impl Send for FunctionRef<'_> {}
// SAFETY: launches and attribute queries are thread-safe in the driver; the caches are
// OnceLocks.
unsafe impl Sync for FunctionRef<'_> {}

impl std::fmt::Debug for FunctionRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FunctionRef")
            .field("raw", &self.raw)
            .field("name", &self.params.known_name())
            .finish()
    }
}

impl Handle for FunctionRef<'_> {
    type Raw = sys::CUfunction;

    /// The raw `CUfunction`, valid for the borrow.
    #[inline]
    fn as_raw(&self) -> sys::CUfunction {
        self.raw
    }
}

impl<'a> FunctionRef<'a> {
    /// Borrows a function of a module of `ctx` that the caller keeps loaded. Its parameter
    /// count is unknown, so a checked launch probes the driver for it (see
    /// [`Function::params`]).
    ///
    /// # Safety
    /// `raw` is a function of a module loaded into `ctx` that stays loaded for `'a` and until
    /// every launch of it (and every graph captured from one) has finished.
    #[inline]
    pub unsafe fn borrow_raw(raw: sys::CUfunction, ctx: &'a Context) -> FunctionRef<'a> {
        FunctionRef {
            raw,
            ctx,
            params: ParamCache::unnamed(None),
        }
    }

    /// The context the function belongs to; it launches only on streams of this context.
    #[inline]
    pub fn context(&self) -> &'a Context {
        self.ctx
    }
}

impl Function {
    /// This function, borrowed for as long as `self`: the form a [`FunctionRef`] takes. It
    /// starts with an empty cache (its parameter list is read again on its first checked
    /// launch).
    #[inline]
    pub fn as_function_ref(&self) -> FunctionRef<'_> {
        // SAFETY: `self` keeps the function's module loaded while it is borrowed (for the
        // returned lifetime); that it stays loaded until a launch has finished is each
        // launch's own contract (the last handle to the module is not dropped before).
        unsafe { FunctionRef::borrow_raw(self.raw, self.context()) }
    }
}

impl KernelParams for FunctionRef<'_> {
    const PARAM_INFO_CALL: &'static str = "cuFuncGetParamInfo";

    #[inline(always)]
    fn param_cache(&self) -> &ParamCache {
        &self.params
    }

    #[track_caller]
    fn param_query_available(&self) -> Result<()> {
        newer::cuFuncGetParamInfo().map(|_| ())
    }

    type QueryScope<'b>
        = Current<'b>
    where
        Self: 'b;

    #[track_caller]
    fn enter_for_queries(&self) -> Result<Current<'_>> {
        self.ctx.enter()
    }

    #[track_caller]
    fn query_param(&self, index: usize) -> Result<(sys::CUresult, usize, usize)> {
        // SAFETY: the function is alive: the caller of borrow_raw keeps its module loaded for
        // 'a, in the context made current by `enter_for_queries`.
        unsafe { query_param(self.raw, index) }
    }

    fn driver_name(&self) -> Option<String> {
        // SAFETY: as above.
        unsafe { driver_name(self.raw) }
    }

    fn raw_handle(&self) -> *mut c_void {
        self.raw.cast()
    }
}
