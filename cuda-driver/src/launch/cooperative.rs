//! Cooperative launches through `cuLaunchCooperativeKernel` (all blocks resident at once, so
//! grid-wide synchronisation works).

use std::ffi::c_void;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use super::LaunchConfig;
use crate::error::Result;
use crate::handle::Handle;
use crate::module::{Function, FunctionRef};
use crate::stream::Stream;

function_methods! {
    /// Launches the function cooperatively on `stream` with raw kernel parameters.
    ///
    /// # Safety
    /// `params` points to one pointer per kernel parameter, each to a value of the
    /// parameter's type, and the kernel stays in bounds of the memory it is given; `stream`
    /// is of the function's context.
    #[wraps(cuLaunchCooperativeKernel)]
    #[track_caller]
    pub unsafe fn launch_cooperative_raw(
        &self,
        cfg: &LaunchConfig,
        stream: &Stream,
        params: *mut *mut c_void,
    ) -> Result<()> {
        let _cur = self.context().enter()?;
        call!(
            // SAFETY: the caller's guarantees; the function and stream are alive.
            unsafe {
                sys::cuLaunchCooperativeKernel(
                    self.as_raw(),
                    cfg.grid.x,
                    cfg.grid.y,
                    cfg.grid.z,
                    cfg.block.x,
                    cfg.block.y,
                    cfg.block.z,
                    cfg.shared_mem_bytes,
                    stream.as_raw(),
                    params,
                )
            },
        )
    }
}
