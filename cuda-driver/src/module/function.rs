//! [`Function`]: a kernel of a module in one context (`CUfunction`).
//!
//! Its attributes (`cuFuncGetAttribute` and friends, Execution Control) are in
//! `launch/function.rs`, its launches in `launch/`.

use std::ffi::{c_void, CStr};
use std::ptr;
use std::sync::Arc;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use super::{Keep, ModuleInner};
use crate::context::Context;
use crate::entry_point::newer;
use crate::error::Result;
use crate::params::{KernelParams, ParamCache};

/// Who keeps a [`Function`]'s code loaded.
#[derive(Clone)]
pub(crate) enum FunctionOwner {
    /// A kernel of a module.
    Module(Arc<ModuleInner>),
    /// A kernel of code that `Keep` (a library) keeps loaded, in one context.
    Kept(#[allow(dead_code)] Keep, Context),
    /// A handle given to [`Function::from_raw`]: the caller keeps the module loaded.
    Borrowed(Context),
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

impl Function {
    pub(crate) fn new(raw: sys::CUfunction, owner: FunctionOwner, params: ParamCache) -> Function {
        Function { raw, owner, params }
    }

    /// Wraps a function of a module of `ctx` that the caller keeps loaded. Its parameter
    /// count is unknown, so a checked launch probes the driver for it (see
    /// [`params`](Self::params)).
    ///
    /// # Safety
    /// `raw` is a function of a module loaded into `ctx` that stays loaded while the returned
    /// `Function` (or a clone) lives.
    pub unsafe fn from_raw(raw: sys::CUfunction, ctx: &Context) -> Function {
        Function::new(
            raw,
            FunctionOwner::Borrowed(ctx.clone()),
            ParamCache::unnamed(None),
        )
    }

    /// The raw `CUfunction`, valid while `self` lives.
    #[inline]
    pub fn as_raw(&self) -> sys::CUfunction {
        self.raw
    }

    /// The raw `CUfunction`, giving up this handle: it stays valid while its module is loaded
    /// (by another handle, or by the caller).
    pub fn into_raw(self) -> sys::CUfunction {
        self.raw
    }

    /// The context the function belongs to; it launches only on streams of this context.
    #[inline]
    pub fn context(&self) -> &Context {
        match &self.owner {
            FunctionOwner::Module(m) => &m.ctx,
            FunctionOwner::Kept(_, ctx) | FunctionOwner::Borrowed(ctx) => ctx,
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

    #[track_caller]
    fn query_param(&self, index: usize) -> Result<(sys::CUresult, usize, usize)> {
        let f = newer::cuFuncGetParamInfo()?;
        let _cur = self.context().enter()?;
        let (mut offset, mut size) = (0, 0);
        // SAFETY: the function is alive (its owner keeps the module loaded); writes two
        // size_t.
        let r = unsafe { f(self.raw, index, &mut offset, &mut size) };
        Ok((r, offset, size))
    }

    fn driver_name(&self) -> Option<String> {
        let mut p = ptr::null();
        // SAFETY: the function is alive; writes a pointer to a NUL-terminated string that the
        // driver owns while the module is loaded.
        call!(unsafe { newer::cuFuncGetName().ok()?(&mut p, self.raw) }).ok()?;
        if p.is_null() {
            return None;
        }
        // SAFETY: a valid NUL-terminated string, copied at once.
        Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }

    fn raw_handle(&self) -> *mut c_void {
        self.raw.cast()
    }
}
