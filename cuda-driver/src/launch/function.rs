//! A [`Function`]'s attributes (`cuFuncGetAttribute`, `cuFuncSetAttribute`,
//! `cuFuncSetCacheConfig`: Execution Control in the CUDA Driver API reference).

use cuda_driver_macros::wraps;
use cuda_driver_sys as sys;

use crate::context::CacheConfig;
use crate::error::{check, Result};
use crate::module::{Function, FunctionAttribute};

impl Function {
    /// An attribute of the kernel (registers, static shared memory, maximum block size, ...).
    #[wraps(cuFuncGetAttribute)]
    #[track_caller]
    pub fn attribute(&self, attr: FunctionAttribute) -> Result<i32> {
        let _cur = self.context().enter()?;
        let mut v = 0;
        check(
            // SAFETY: the function is alive; writes one int.
            unsafe { sys::cuFuncGetAttribute(&mut v, attr.as_raw(), self.as_raw()) },
            "cuFuncGetAttribute",
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
        check(
            // SAFETY: the function is alive; plain values.
            unsafe { sys::cuFuncSetAttribute(self.as_raw(), attr.as_raw(), value) },
            "cuFuncSetAttribute",
        )
    }

    /// Sets the preferred L1/shared memory split for this kernel.
    #[wraps(cuFuncSetCacheConfig)]
    #[track_caller]
    pub fn set_cache_config(&self, config: CacheConfig) -> Result<()> {
        let _cur = self.context().enter()?;
        check(
            // SAFETY: the function is alive; a plain value.
            unsafe { sys::cuFuncSetCacheConfig(self.as_raw(), config.as_raw()) },
            "cuFuncSetCacheConfig",
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
}
