//! Green contexts (CUDA 12.4+, resolved at run time): a device's SMs split into groups, each
//! group a lightweight context that runs its work on those SMs only.
//!
//! 1. [`Device::sm_resource`] gives the device's SMs as a [`DevResource`];
//! 2. [`DevResource::split_by_count`] splits them into groups of at least `min_count` SMs;
//! 3. [`DevResourceDesc::new`] describes the resources one green context gets;
//! 4. [`GreenContext::new`] creates it. [`GreenContext::context`] is an ordinary
//!    [`Context`] (`cuCtxFromGreenCtx`): streams, buffers, modules and launches all work
//!    with it, and it keeps the green context alive (`cuGreenCtxDestroy` when the last clone
//!    of the context and of every object made in it is gone).
//!
//! ```no_run
//! use cuda_driver::{Device, types::DevSmResourceSplitFlags, green::GreenContext, green::DevResourceDesc};
//!
//! let dev = Device::get(0)?;
//! let sms = dev.sm_resource()?;
//! let (groups, _rest) = sms.split_by_count(2, 8, DevSmResourceSplitFlags::empty())?;
//! let green = GreenContext::new(dev, &DevResourceDesc::new(&groups[..1])?)?;
//! let stream = green.create_stream(0)?;
//! # Ok::<(), cuda_driver::Error>(())
//! ```

use std::ptr;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use crate::context::Context;
use crate::count::count_u32;
use crate::device::Device;
use crate::entry_point::newer;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::handle::{Handle, OwnedHandle};
use crate::init;
use crate::stream::Stream;
use crate::types::StreamFlags;

use crate::types::{DevResourceType, DevSmResourceSplitFlags, GreenCtxCreateFlags};

/// A device resource (`CUdevResource`): for now a set of SMs.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub struct DevResource(sys::CUdevResource);

impl std::fmt::Debug for DevResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DevResource")
            .field("kind", &self.kind())
            .field("sm_count", &self.sm_count())
            .finish()
    }
}

fn zero_resource() -> sys::CUdevResource {
    // SAFETY: CUdevResource is plain data (integers and a union of integers), for which all
    // zero bytes are a valid value.
    unsafe { std::mem::zeroed() }
}

impl DevResource {
    /// The resource's kind (`SM`).
    pub fn kind(&self) -> DevResourceType {
        DevResourceType(self.0.type_)
    }

    /// The number of SMs of an SM resource (0 for other kinds).
    pub fn sm_count(&self) -> u32 {
        if self.0.type_ == sys::CU_DEV_RESOURCE_TYPE_SM {
            // SAFETY: the sm member is the one filled for an SM resource.
            unsafe { self.0.__bindgen_anon_1.sm.smCount }
        } else {
            0
        }
    }

    /// The smallest group an SM resource splits into (0 for other kinds).
    pub fn min_sm_partition_size(&self) -> u32 {
        if self.0.type_ == sys::CU_DEV_RESOURCE_TYPE_SM {
            // SAFETY: as in sm_count.
            unsafe { self.0.__bindgen_anon_1.sm.minSmPartitionSize }
        } else {
            0
        }
    }

    /// The raw `CUdevResource`.
    pub fn as_raw(&self) -> &sys::CUdevResource {
        &self.0
    }

    /// Wraps a raw resource.
    pub fn from_raw(raw: sys::CUdevResource) -> Self {
        DevResource(raw)
    }

    /// Splits an SM resource into up to `groups` groups of at least `min_count` SMs each
    /// (rounded up by the driver to the device's granularity) and the SMs left over. Fewer
    /// groups come back when there are not enough SMs; none is
    /// [`Error::ResourceExhausted`]. A group holds at least one SM, so `groups` is capped at
    /// [`sm_count`](Self::sm_count) before the driver is asked: a huge `groups` allocates no
    /// more than that.
    #[wraps(cuDevSmResourceSplitByCount)]
    #[track_caller]
    pub fn split_by_count(
        &self,
        groups: u32,
        min_count: u32,
        flags: DevSmResourceSplitFlags,
    ) -> Result<(Vec<DevResource>, DevResource)> {
        // No more groups than SMs can come back: the output array never needs more room (GPU
        // test green::splitting_into_an_absurd_number_of_groups_returns_what_fits).
        let room = groups.min(self.sm_count().max(1));
        let mut n = room;
        let mut out = vec![zero_resource(); room as usize];
        let mut rest = zero_resource();
        call!(
            // SAFETY: `out` has room for `n` resources; input and rest are valid.
            unsafe {
                newer::cuDevSmResourceSplitByCount()?(
                    out.as_mut_ptr(),
                    &mut n,
                    &self.0,
                    &mut rest,
                    flags.as_raw(),
                    min_count,
                )
            },
        )?;
        if n == 0 && groups > 0 {
            return Err(Error::ResourceExhausted {
                what: "DevResource::split_by_count",
                asked: min_count as usize,
                available: self.sm_count() as usize,
            });
        }
        out.truncate(n as usize);
        Ok((
            out.into_iter().map(DevResource).collect(),
            DevResource(rest),
        ))
    }
}

/// A resource descriptor (`CUdevResourceDesc`): the resources of one green context. The
/// driver owns it (there is no destroy call).
#[derive(Clone, Copy, Debug)]
pub struct DevResourceDesc(sys::CUdevResourceDesc);

// SAFETY: an opaque handle the driver owns and never frees; usable from any thread.
unsafe impl Send for DevResourceDesc {}
// SAFETY: as above; never mutated.
unsafe impl Sync for DevResourceDesc {}

impl DevResourceDesc {
    /// Describes `resources` (SM groups of one split, or one whole resource).
    #[wraps(cuDevResourceGenerateDesc)]
    #[track_caller]
    pub fn new(resources: &[DevResource]) -> Result<DevResourceDesc> {
        let len = count_u32("DevResourceDesc::new", "resources", resources.len())?;
        let mut raw: Vec<sys::CUdevResource> = resources.iter().map(|r| r.0).collect();
        let mut desc = ptr::null_mut();
        call!(
            // SAFETY: `raw` holds `len` resources; writes one descriptor handle.
            unsafe { newer::cuDevResourceGenerateDesc()?(&mut desc, raw.as_mut_ptr(), len) },
        )?;
        Ok(DevResourceDesc(desc))
    }

    /// The raw handle.
    pub fn as_raw(&self) -> sys::CUdevResourceDesc {
        self.0
    }
}

impl Device {
    /// The device's SMs as a resource.
    #[wraps(cuDeviceGetDevResource)]
    #[track_caller]
    pub fn sm_resource(self) -> Result<DevResource> {
        self.resource(DevResourceType::SM)
    }

    /// A resource of the device of kind `kind`.
    #[wraps(cuDeviceGetDevResource)]
    #[track_caller]
    pub fn resource(self, kind: DevResourceType) -> Result<DevResource> {
        init()?;
        let mut r = zero_resource();
        call!(
            // SAFETY: writes one CUdevResource.
            unsafe { newer::cuDeviceGetDevResource()?(self.as_raw(), &mut r, kind.as_raw()) },
        )?;
        Ok(DevResource(r))
    }
}

impl Context {
    /// A resource of kind `kind` this context may use (its SMs for a green context).
    #[wraps(cuCtxGetDevResource)]
    #[track_caller]
    pub fn resource(&self, kind: DevResourceType) -> Result<DevResource> {
        let mut r = zero_resource();
        call!(
            // SAFETY: the context is alive; writes one CUdevResource.
            unsafe { newer::cuCtxGetDevResource()?(self.as_raw(), &mut r, kind.as_raw()) },
        )?;
        Ok(DevResource(r))
    }
}

/// A green context, owned: the context it converts to ([`context`](Self::context)) holds it,
/// and it is destroyed with the last clone of that context.
#[derive(Clone, Debug)]
pub struct GreenContext {
    ctx: Context,
    raw: sys::CUgreenCtx,
}

// SAFETY: green contexts, like contexts, may be used from any thread.
unsafe impl Send for GreenContext {}
// SAFETY: as above.
unsafe impl Sync for GreenContext {}

impl Handle for GreenContext {
    type Raw = sys::CUgreenCtx;

    /// The raw `CUgreenCtx`, valid while `self` (or a clone of its context) lives.
    #[inline]
    fn as_raw(&self) -> sys::CUgreenCtx {
        self.raw
    }
}

impl GreenContext {
    /// Creates a green context on `device` with the resources of `desc`, with its default
    /// stream (`CU_GREEN_CTX_DEFAULT_STREAM`, which the driver requires).
    #[wraps(cuGreenCtxCreate)]
    #[track_caller]
    pub fn new(device: Device, desc: &DevResourceDesc) -> Result<GreenContext> {
        init()?;
        // Looked up before the green context exists, so that the call below cannot fail to
        // find it after the creation (the lookup is cached).
        newer::cuCtxFromGreenCtx()?;
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: writes one CUgreenCtx, owned from here on.
            unsafe {
                newer::cuGreenCtxCreate()?(
                    &mut raw,
                    desc.as_raw(),
                    device.as_raw(),
                    GreenCtxCreateFlags::DEFAULT_STREAM.as_raw(),
                )
            },
        )?;
        let mut ctx = ptr::null_mut();
        // SAFETY: `raw` is the green context created above.
        let r = call!(unsafe { newer::cuCtxFromGreenCtx()?(&mut ctx, raw) });
        if let Err(e) = r {
            if let Ok(d) = newer::cuGreenCtxDestroy() {
                // SAFETY: created above and not handed out; destroyed once.
                let r = unsafe { d(raw) };
                crate::error::report_drop_error("cuGreenCtxDestroy", r);
            }
            return Err(e);
        }
        // SAFETY: `ctx` is cuCtxFromGreenCtx(raw) and `raw` is handed over.
        let ctx = unsafe { Context::from_green(ctx, device, raw) };
        Ok(GreenContext { ctx, raw })
    }

    /// The context form of this green context, for every API that takes a [`Context`].
    #[wraps(cuCtxFromGreenCtx)]
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// A resource of this green context (its SMs).
    #[wraps(cuGreenCtxGetDevResource)]
    #[track_caller]
    pub fn resource(&self, kind: DevResourceType) -> Result<DevResource> {
        let mut r = zero_resource();
        call!(
            // SAFETY: the green context is alive; writes one CUdevResource.
            unsafe { newer::cuGreenCtxGetDevResource()?(self.raw, &mut r, kind.as_raw()) },
        )?;
        Ok(DevResource(r))
    }

    /// The green context's unique id; CUDA 12.9.
    #[wraps(cuGreenCtxGetId)]
    #[track_caller]
    pub fn id(&self) -> Result<u64> {
        let mut id = 0;
        // SAFETY: the green context is alive; writes one unsigned long long.
        call!(unsafe { newer::cuGreenCtxGetId()?(self.raw, &mut id) })?;
        Ok(id)
    }

    /// Creates a non-blocking stream whose work runs on this green context's SMs; CUDA 12.5.
    #[wraps(cuGreenCtxStreamCreate)]
    #[track_caller]
    pub fn create_stream(&self, priority: i32) -> Result<Stream> {
        let mut s = ptr::null_mut();
        call!(
            // SAFETY: writes one CUstream, wrapped (owned) in the next statement.
            unsafe {
                newer::cuGreenCtxStreamCreate()?(
                    &mut s,
                    self.raw,
                    StreamFlags::NON_BLOCKING.as_raw(),
                    priority,
                )
            },
        )?;
        // SAFETY: `s` was just created in this green context, whose Context is `self.ctx`.
        Ok(unsafe { Stream::from_raw(s, &self.ctx) })
    }

    /// Records `event` (of this green context's context) to complete when all work queued
    /// in the green context so far is done.
    #[wraps(cuGreenCtxRecordEvent)]
    #[track_caller]
    pub fn record_event(&self, event: &Event) -> Result<()> {
        let _cur = self.ctx.enter()?;
        call!(
            // SAFETY: green context and event are alive.
            unsafe { newer::cuGreenCtxRecordEvent()?(self.raw, event.as_raw()) },
        )
    }

    /// Makes later work of this green context wait for `event`.
    #[wraps(cuGreenCtxWaitEvent)]
    #[track_caller]
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        let _cur = self.ctx.enter()?;
        call!(
            // SAFETY: green context and event are alive.
            unsafe { newer::cuGreenCtxWaitEvent()?(self.raw, event.as_raw()) },
        )
    }
}

impl Stream {
    /// The raw green context this stream was created in, if any.
    #[wraps(cuStreamGetGreenCtx)]
    #[track_caller]
    pub fn green_context_raw(&self) -> Result<Option<sys::CUgreenCtx>> {
        let _cur = self.context().enter()?;
        let mut g = ptr::null_mut();
        // SAFETY: the stream is alive; writes one CUgreenCtx.
        call!(unsafe { newer::cuStreamGetGreenCtx()?(self.as_raw(), &mut g) })?;
        Ok((!g.is_null()).then_some(g))
    }
}
