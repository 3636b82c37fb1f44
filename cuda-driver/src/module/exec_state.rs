//! Execution control leftovers on modules and functions: a function's module, its loading
//! state and explicit loading (lazy loading), the module's functions enumerated, and the
//! process's module loading mode.

use std::ptr;

use cuda_driver_macros::wraps;
use cuda_driver_sys as sys;

use super::function::FunctionOwner;
use super::{Function, Module};
use crate::entry_point::newer;
use crate::error::{check, Result};
use crate::init;
use crate::params::ParamCache;

pub use crate::types::{FunctionLoadingState, ModuleLoadingMode};

impl Function {
    /// The raw module this function belongs to (owned by whoever loaded it).
    #[wraps(cuFuncGetModule)]
    #[track_caller]
    pub fn module_raw(&self) -> Result<sys::CUmodule> {
        let mut m = ptr::null_mut();
        check(
            // SAFETY: the function is alive while `self` is; writes one CUmodule.
            unsafe { sys::cuFuncGetModule(&mut m, self.as_raw()) },
            "cuFuncGetModule",
        )?;
        Ok(m)
    }

    /// Whether the function is loaded on the device yet (with lazy loading,
    /// `CUDA_MODULE_LOADING=LAZY`, functions load at first use); CUDA 12.4.
    #[wraps(cuFuncIsLoaded)]
    #[track_caller]
    pub fn loading_state(&self) -> Result<FunctionLoadingState> {
        let f = newer::cuFuncIsLoaded()?;
        let _cur = self.context().enter()?;
        let mut s = 0;
        // SAFETY: the function is alive; writes one CUfunctionLoadingState.
        check(unsafe { f(&mut s, self.as_raw()) }, "cuFuncIsLoaded")?;
        Ok(FunctionLoadingState(s))
    }

    /// Loads a lazily loaded function now; CUDA 12.4.
    #[wraps(cuFuncLoad)]
    #[track_caller]
    pub fn load(&self) -> Result<()> {
        let f = newer::cuFuncLoad()?;
        let _cur = self.context().enter()?;
        // SAFETY: the function is alive.
        check(unsafe { f(self.as_raw()) }, "cuFuncLoad")
    }
}

impl Module {
    /// The number of functions (kernels) in the module; CUDA 12.4.
    #[wraps(cuModuleGetFunctionCount)]
    #[track_caller]
    pub fn function_count(&self) -> Result<usize> {
        let f = newer::cuModuleGetFunctionCount()?;
        let _cur = self.inner.ctx.enter()?;
        let mut n = 0;
        check(
            // SAFETY: the module is alive; writes one unsigned int.
            unsafe { f(&mut n, self.inner.raw) },
            "cuModuleGetFunctionCount",
        )?;
        Ok(n as usize)
    }

    /// Every function of the module, each keeping the module loaded; CUDA 12.4.
    #[wraps(cuModuleEnumerateFunctions)]
    #[track_caller]
    pub fn functions(&self) -> Result<Vec<Function>> {
        let n = self.function_count()?;
        let f = newer::cuModuleEnumerateFunctions()?;
        let _cur = self.inner.ctx.enter()?;
        let mut raw = vec![ptr::null_mut(); n];
        check(
            // SAFETY: `raw` has room for `n` handles; the module is alive.
            unsafe { f(raw.as_mut_ptr(), n as u32, self.inner.raw) },
            "cuModuleEnumerateFunctions",
        )?;
        Ok(raw
            .into_iter()
            .map(|r| {
                Function::new(
                    r,
                    FunctionOwner::Module(self.inner.clone()),
                    ParamCache::unnamed(None),
                )
            })
            .collect())
    }
}

/// Whether this process loads modules eagerly or lazily (`CUDA_MODULE_LOADING`).
#[wraps(cuModuleGetLoadingMode)]
#[track_caller]
pub fn module_loading_mode() -> Result<ModuleLoadingMode> {
    init()?;
    let mut m = 0;
    check(
        // SAFETY: writes one CUmoduleLoadingMode.
        unsafe { sys::cuModuleGetLoadingMode(&mut m) },
        "cuModuleGetLoadingMode",
    )?;
    Ok(ModuleLoadingMode(m))
}
