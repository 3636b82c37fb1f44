//! Execution Control of a [`Function`] and of a borrowed [`FunctionRef`] (the functions of
//! that group of the CUDA Driver API reference that take a `CUfunction`): its attributes and cache configuration
//! (`cuFuncGetAttribute`, `cuFuncSetAttribute`, `cuFuncSetCacheConfig`), name and parameters
//! (`cuFuncGetName`, `cuFuncGetParamInfo`), module (`cuFuncGetModule`) and lazy-loading state
//! (`cuFuncIsLoaded`, `cuFuncLoad`).

use std::ptr;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use crate::entry_point::newer;
use crate::error::Result;
use crate::handle::Handle;
use crate::module::{Function, FunctionRef};
use crate::params::{KernelParams, ParamInfo};
use crate::types::CacheConfig;
use crate::types::FunctionAttribute;
use crate::types::FunctionLoadingState;

function_methods! {
    /// An attribute of the kernel (registers, static shared memory, maximum block size, ...).
    #[wraps(cuFuncGetAttribute)]
    #[track_caller]
    pub fn attribute(&self, attr: FunctionAttribute) -> Result<i32> {
        let _cur = self.context().enter()?;
        let mut v = 0;
        call!(
            // SAFETY: the function is alive; writes one int.
            unsafe { sys::cuFuncGetAttribute(&mut v, attr.as_raw(), self.as_raw()) },
        )?;
        Ok(v)
    }

    /// Sets an attribute, such as
    /// [`MAX_DYNAMIC_SHARED_SIZE_BYTES`](FunctionAttribute::MAX_DYNAMIC_SHARED_SIZE_BYTES)
    /// to allow more than 48 KiB of dynamic shared memory, or
    /// [`NON_PORTABLE_CLUSTER_SIZE_ALLOWED`](FunctionAttribute::NON_PORTABLE_CLUSTER_SIZE_ALLOWED).
    #[wraps(cuFuncSetAttribute)]
    #[track_caller]
    pub fn set_attribute(&self, attr: FunctionAttribute, value: i32) -> Result<()> {
        let _cur = self.context().enter()?;
        call!(
            // SAFETY: the function is alive; plain values.
            unsafe { sys::cuFuncSetAttribute(self.as_raw(), attr.as_raw(), value) },
        )
    }

    /// Sets the preferred L1/shared memory split for this kernel.
    #[wraps(cuFuncSetCacheConfig)]
    #[track_caller]
    pub fn set_cache_config(&self, config: CacheConfig) -> Result<()> {
        let _cur = self.context().enter()?;
        call!(
            // SAFETY: the function is alive; a plain value.
            unsafe { sys::cuFuncSetCacheConfig(self.as_raw(), config.as_raw()) },
        )
    }

    /// The most threads a block of this kernel may have on its device
    /// ([`FunctionAttribute::MAX_THREADS_PER_BLOCK`]).
    #[track_caller]
    pub fn max_threads_per_block(&self) -> Result<u32> {
        Ok(self.attribute(FunctionAttribute::MAX_THREADS_PER_BLOCK)? as u32)
    }

    /// Registers used by each thread ([`FunctionAttribute::NUM_REGS`]).
    #[track_caller]
    pub fn num_registers(&self) -> Result<u32> {
        Ok(self.attribute(FunctionAttribute::NUM_REGS)? as u32)
    }

    /// Statically allocated shared memory per block in bytes
    /// ([`FunctionAttribute::SHARED_SIZE_BYTES`]).
    #[track_caller]
    pub fn static_shared_bytes(&self) -> Result<usize> {
        Ok(self.attribute(FunctionAttribute::SHARED_SIZE_BYTES)? as usize)
    }

    /// The kernel's name: the name it was looked up by, or the driver's (`cuFuncGetName`,
    /// CUDA 12.3), cached.
    #[wraps(cuFuncGetName)]
    pub fn name(&self) -> &str {
        self.kernel_name()
    }

    /// The kernel's parameters (offset and size of each), read from the driver on first use
    /// and cached; `None` when the driver cannot report them (older than CUDA 12.4).
    ///
    /// The driver reports one parameter per call and has no parameter count, so it is asked
    /// for parameters by index until it answers `CUDA_ERROR_INVALID_VALUE`: once per handle,
    /// at the first checked launch (or this call), but tools such as compute-sanitizer report
    /// that answer as an API error. Under [`ParamSource::Image`](crate::launch::ParamSource::Image) the
    /// safe loaders read the count from the image instead (PTX: the offsets and sizes too), and
    /// the driver is asked for exactly that many; a function whose count is unknown even then
    /// (a [`FunctionRef`], a function or module from `from_raw`,
    /// [`Module::load_data_unchecked`](crate::Module::load_data_unchecked), a compressed
    /// fatbin) is probed.
    #[wraps(cuFuncGetParamInfo)]
    #[track_caller]
    pub fn params(&self) -> Result<Option<&[ParamInfo]>> {
        KernelParams::params(self)
    }
    /// The raw module this function belongs to (owned by whoever loaded it).
    #[wraps(cuFuncGetModule)]
    #[track_caller]
    pub fn module_raw(&self) -> Result<sys::CUmodule> {
        let mut m = ptr::null_mut();
        call!(
            // SAFETY: the function is alive while `self` is; writes one CUmodule.
            unsafe { sys::cuFuncGetModule(&mut m, self.as_raw()) },
        )?;
        Ok(m)
    }

    /// Whether the function is loaded on the device yet (with lazy loading,
    /// `CUDA_MODULE_LOADING=LAZY`, functions load at first use); CUDA 12.4.
    #[wraps(cuFuncIsLoaded)]
    #[track_caller]
    pub fn loading_state(&self) -> Result<FunctionLoadingState> {
        let _cur = self.context().enter()?;
        let mut s = 0;
        // SAFETY: the function is alive; writes one CUfunctionLoadingState.
        call!(unsafe { newer::cuFuncIsLoaded()?(&mut s, self.as_raw()) })?;
        Ok(FunctionLoadingState(s))
    }

    /// Loads a lazily loaded function now; CUDA 12.4.
    #[wraps(cuFuncLoad)]
    #[track_caller]
    pub fn load(&self) -> Result<()> {
        let _cur = self.context().enter()?;
        // SAFETY: the function is alive.
        call!(unsafe { newer::cuFuncLoad()?(self.as_raw()) })
    }
}
