//! Context management beyond creation and the stack: `cuCtxCreate_v4` with its parameters,
//! flags, ids, the device, persisting L2 lines and execution affinity.

use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use super::{Context, ContextFlags, Inner, Release};
use crate::device::Device;
use crate::entry_point::newer;
use crate::error::{report_drop_error, Result};
use crate::handle::Handle;
use crate::init;

use crate::types::CigDataType;

/// Destroys a green context (from a [`Context`]'s `Drop`, on the release path).
pub(super) fn destroy_green(green: sys::CUgreenCtx) {
    match newer::cuGreenCtxDestroy() {
        // SAFETY: `green` was created by cuGreenCtxCreate and owned by the Context being
        // dropped; every object created in it held a clone, so none is left.
        Ok(f) => report_drop_error("cuGreenCtxDestroy", unsafe { f(green) }),
        Err(e) => crate::error::report_drop_problem(&e),
    }
}

/// The parameters of `cuCtxCreate_v4` (`CUctxCreateParams`): execution affinity (a limit on
/// the SMs the context may use) and CUDA-in-graphics (CIG) sharing.
///
/// CIG needs a Direct3D 12 command queue, which these Linux machines lack: it is wrapped
/// ([`with_cig`](Self::with_cig)) but untested here.
#[derive(Debug, Clone, Default)]
pub struct ContextCreateParams {
    sm_count: Option<u32>,
    cig: Option<(CigDataType, *mut c_void)>,
}

// SAFETY: the CIG pointer is only handed to the driver at creation; the caller of `with_cig`
// promised it stays valid, and it is never dereferenced here.
unsafe impl Send for ContextCreateParams {}
// SAFETY: as above; nothing mutates through a shared reference.
unsafe impl Sync for ContextCreateParams {}

impl ContextCreateParams {
    /// Parameters with nothing set (a plain context).
    pub fn new() -> Self {
        Self::default()
    }

    /// Limits the context to `count` SMs (`CU_EXEC_AFFINITY_TYPE_SM_COUNT`); the driver
    /// rounds it up to what the device can partition (see
    /// [`Context::exec_affinity_sm_count`]). Needs MPS or a device that
    /// [`supports it`](Device::supports_exec_affinity).
    pub fn sm_count(mut self, count: u32) -> Self {
        self.sm_count = Some(count);
        self
    }

    /// Shares a graphics API's command queue with the context (CUDA in graphics).
    ///
    /// # Safety
    /// `data` is what `kind` says (a `ID3D12CommandQueue*` for
    /// `CigDataType::D3D12_COMMAND_QUEUE`) and stays valid for the context's whole life.
    pub unsafe fn with_cig(mut self, kind: CigDataType, data: *mut c_void) -> Self {
        self.cig = Some((kind, data));
        self
    }
}

impl Context {
    /// Creates a floating context (see [`Context::new`]) with execution affinity or CIG
    /// parameters. Needs a CUDA 12.5 driver ([`Error::Unsupported`](crate::Error) before).
    #[wraps(cuCtxCreate)]
    #[track_caller]
    pub fn with_params(
        device: Device,
        flags: ContextFlags,
        params: &ContextCreateParams,
    ) -> Result<Context> {
        init()?;
        let mut affinity = sys::CUexecAffinityParam {
            type_: sys::CU_EXEC_AFFINITY_TYPE_SM_COUNT,
            param: sys::CUexecAffinityParam_st__bindgen_ty_1 {
                smCount: sys::CUexecAffinitySmCount {
                    val: params.sm_count.unwrap_or(0),
                },
            },
        };
        let mut cig = sys::CUctxCigParam {
            sharedDataType: params.cig.map_or(0, |c| c.0.as_raw()),
            sharedData: params.cig.map_or(ptr::null_mut(), |c| c.1),
        };
        let mut p = sys::CUctxCreateParams {
            execAffinityParams: if params.sm_count.is_some() {
                &mut affinity
            } else {
                ptr::null_mut()
            },
            numExecAffinityParams: params.sm_count.is_some() as i32,
            cigParams: if params.cig.is_some() {
                &mut cig
            } else {
                ptr::null_mut()
            },
        };
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: `p` and what it points to live across the call; writes one CUcontext,
            // which we own and wrap in the next statement.
            unsafe { newer::cuCtxCreate_v4()?(&mut raw, &mut p, flags.as_raw(), device.as_raw()) },
        )?;
        let ctx = Context {
            inner: Arc::new(Inner::new(raw, device, Release::Destroy)),
        };
        let mut popped = ptr::null_mut();
        call!(
            // SAFETY: cuCtxCreate pushed `raw` on this thread's stack just now.
            unsafe { sys::cuCtxPopCurrent_v2(&mut popped) },
        )?;
        Ok(ctx)
    }

    /// Wraps a context made from a green context; destroying it destroys the green context.
    ///
    /// # Safety
    /// `raw` is `cuCtxFromGreenCtx(green)`, `green` is owned by the caller and handed over.
    pub(crate) unsafe fn from_green(
        raw: sys::CUcontext,
        device: Device,
        green: sys::CUgreenCtx,
    ) -> Context {
        Context {
            inner: Arc::new(Inner::new(raw, device, Release::Green(green))),
        }
    }

    /// The green context this context was made from, if any (raw, owned by `self`).
    pub fn green_raw(&self) -> Option<sys::CUgreenCtx> {
        match self.inner.release {
            Release::Green(green) => Some(green),
            Release::Destroy | Release::Primary => None,
        }
    }

    /// Replaces the context's scheduling flags (`SCHED_*`, `MAP_HOST`, ...); CUDA 12.1.
    #[wraps(cuCtxSetFlags)]
    #[track_caller]
    pub fn set_flags(&self, flags: ContextFlags) -> Result<()> {
        let _cur = self.enter()?;
        // SAFETY: a plain value on the current context, which is `self`.
        call!(unsafe { newer::cuCtxSetFlags()?(flags.as_raw()) })
    }

    /// The context's unique id in this process.
    #[wraps(cuCtxGetId)]
    #[track_caller]
    pub fn id(&self) -> Result<u64> {
        let mut id = 0;
        call!(
            // SAFETY: the context is alive while `self` is; writes one unsigned long long.
            unsafe { sys::cuCtxGetId(self.as_raw(), &mut id) },
        )?;
        Ok(id)
    }

    /// The device of this context, as the driver reports it with the context current.
    #[wraps(cuCtxGetDevice)]
    #[track_caller]
    pub fn query_device(&self) -> Result<Device> {
        let _cur = self.enter()?;
        let mut d = 0;
        // SAFETY: writes one CUdevice; the current context is `self`.
        call!(unsafe { sys::cuCtxGetDevice(&mut d) })?;
        Ok(Device::from_raw(d))
    }

    /// The device of this context without making it current; CUDA 13.0.
    #[wraps(cuCtxGetDevice_v2)]
    #[track_caller]
    pub fn query_device_direct(&self) -> Result<Device> {
        let mut d = 0;
        // SAFETY: the context is alive while `self` is; writes one CUdevice.
        call!(unsafe { newer::cuCtxGetDevice_v2()?(&mut d, self.as_raw()) })?;
        Ok(Device::from_raw(d))
    }

    /// Waits for all work of this context without making it current; CUDA 13.0.
    #[wraps(cuCtxSynchronize_v2)]
    #[track_caller]
    pub fn synchronize_direct(&self) -> Result<()> {
        // SAFETY: the context is alive while `self` is.
        call!(unsafe { newer::cuCtxSynchronize_v2()?(self.as_raw()) })
    }

    /// The number of SMs this context may use (its `SM_COUNT` execution affinity).
    #[wraps(cuCtxGetExecAffinity)]
    #[track_caller]
    pub fn exec_affinity_sm_count(&self) -> Result<u32> {
        let _cur = self.enter()?;
        let mut p = sys::CUexecAffinityParam {
            type_: sys::CU_EXEC_AFFINITY_TYPE_SM_COUNT,
            param: sys::CUexecAffinityParam_st__bindgen_ty_1 {
                smCount: sys::CUexecAffinitySmCount { val: 0 },
            },
        };
        call!(
            // SAFETY: writes one CUexecAffinityParam to a valid pointer.
            unsafe { sys::cuCtxGetExecAffinity(&mut p, sys::CU_EXEC_AFFINITY_TYPE_SM_COUNT) },
        )?;
        // SAFETY: for SM_COUNT the driver fills the smCount member.
        Ok(unsafe { p.param.smCount.val })
    }

    /// Resets every persisting L2 cache line of this context to normal.
    #[wraps(cuCtxResetPersistingL2Cache)]
    #[track_caller]
    pub fn reset_persisting_l2_cache(&self) -> Result<()> {
        let _cur = self.enter()?;
        call!(
            // SAFETY: no arguments; acts on the current context, `self`.
            unsafe { sys::cuCtxResetPersistingL2Cache() },
        )
    }
}
