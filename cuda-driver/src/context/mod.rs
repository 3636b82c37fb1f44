//! Contexts: primary and created, and the per-thread context stack.
//!
//! A CUDA context is the driver's equivalent of a process: allocations, streams, events and
//! modules live in one. Each host thread has a *stack* of current contexts; most driver calls
//! act on the top of the calling thread's stack.
//!
//! * The **primary context** of a device ([`Device::primary_context`]) is the one the CUDA
//!   runtime uses; it is reference counted by the driver (retain/release).
//! * A **created context** ([`Context::new`]) is owned by its [`Context`] handle and
//!   destroyed when the last clone is dropped. It is created *floating* (current on no
//!   thread) and can be used from any thread.
//!
//! Everything created in a context (streams, events, buffers, modules) holds a clone of its
//! [`Context`], so a context outlives all its objects.
//!
//! **No operation changes the caller's context stack.** Every operation on an object makes
//! the object's context current for its own span only: if the context is current already,
//! nothing happens but one `cuCtxGetCurrent` (the common case, and the whole cost on the
//! copy paths); otherwise the operation pushes the context and pops it again before
//! returning, in `Drop` too. Launches, stream-ordered allocations and frees, event records
//! and event waits on a created stream make no context current at all: the driver runs them
//! in the stream's context; nor do event queries, synchronisations and elapsed times. Under a [`ContextGuard`] of context A, using or dropping objects
//! of context B leaves A current.
//!
//! [`Context::push`] pushes a context for a scope and returns a [`ContextGuard`] that pops it
//! on drop; the guard is `!Send`, because the stack it modified belongs to this thread.

use std::marker::PhantomData;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use crate::error::{report_drop_error, report_drop_problem, Error, Result};
pub use crate::release::wait_for_deferred_releases;

mod borrowed;
pub(crate) mod current;
pub(crate) mod fence;

pub(crate) use current::{AnyCurrent, Current};
pub(crate) mod create;
pub(crate) mod primary;

use crate::device::Device;
use crate::handle::{Handle, OwnedHandle};
use crate::init;
use crate::release::{release, SendRaw};

use crate::types::{
    CacheConfig, ContextFlags, FlushGPUDirectRDMAWritesScope, FlushGPUDirectRDMAWritesTarget,
    Limit, SharedMemConfig,
};
pub use borrowed::ContextRef;
pub use create::ContextCreateParams;

/// A CUDA context (`CUcontext`), primary or created. Cloning is cheap and shares it.
///
/// `Send + Sync`: CUDA allows a context to be used from any thread.
#[wraps(CUcontext)]
#[derive(Clone)]
pub struct Context {
    inner: Arc<Inner>,
}

struct Inner {
    raw: sys::CUcontext,
    device: Device,
    /// How the context is released when the last clone drops.
    release: Release,
    /// Set by `into_raw`: the caller releases the context, `Drop` does not.
    released: AtomicBool,
    /// Cross-context uses of this context's memory that its releases wait for.
    fences: fence::Fences,
}

/// How an owned context is released: a release kind, not an ownership flag (a context the
/// crate does not own is a [`ContextRef`], which releases nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Release {
    /// A created context (`cuCtxCreate`, or handed over through `from_raw`): `cuCtxDestroy`.
    Destroy,
    /// One retain of the device's primary context: `cuDevicePrimaryCtxRelease`.
    Primary,
    /// The context of a green context (`cuCtxFromGreenCtx`): the green context is destroyed
    /// with `cuGreenCtxDestroy`.
    Green(sys::CUgreenCtx),
}

impl Inner {
    fn new(raw: sys::CUcontext, device: Device, release: Release) -> Inner {
        Inner {
            raw,
            device,
            release,
            released: AtomicBool::new(false),
            fences: Default::default(),
        }
    }
}

// SAFETY: a CUcontext may be made current and used on any host thread (CUDA Programming Guide,
// Driver API, Context); Inner only holds the handle and releases it once, in Drop.
unsafe impl Send for Inner {}
// SAFETY: as above; no method mutates Inner.
unsafe impl Sync for Inner {}

impl Drop for Inner {
    fn drop(&mut self) {
        if *self.released.get_mut() {
            return;
        }
        let (raw, device) = (SendRaw(self.raw), self.device);
        let green = SendRaw(match self.release {
            Release::Green(g) => g,
            Release::Destroy | Release::Primary => ptr::null_mut(),
        });
        let primary = self.release == Release::Primary;
        release(move || {
            let raw = raw.get();
            let green = green.get();
            if !green.is_null() {
                create::destroy_green(green);
            } else if primary {
                // SAFETY: this Inner held exactly one retain of the device's primary context,
                // taken in Context::retain_primary; it is released once, here.
                let r = unsafe { sys::cuDevicePrimaryCtxRelease_v2(device.as_raw()) };
                report_drop_error("cuDevicePrimaryCtxRelease_v2", r);
            } else {
                // SAFETY: `raw` was created by cuCtxCreate (or handed over through from_raw)
                // and was owned by this Inner; every object created in it held a clone of the
                // Arc, so none is left.
                let r = unsafe { sys::cuCtxDestroy_v2(raw) };
                report_drop_error("cuCtxDestroy_v2", r);
            }
        });
    }
}

impl PartialEq for Context {
    fn eq(&self, other: &Self) -> bool {
        self.inner.raw == other.inner.raw
    }
}

impl Eq for Context {}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("raw", &self.inner.raw)
            .field("device", &self.inner.device)
            .field("release", &self.inner.release)
            .finish()
    }
}

impl Handle for Context {
    type Raw = sys::CUcontext;

    /// The raw `CUcontext`, for `cuda_driver_sys` calls. It stays valid while `self` lives.
    #[inline]
    fn as_raw(&self) -> sys::CUcontext {
        self.inner.raw
    }
}

impl OwnedHandle for Context {
    type Parent<'p> = Device;

    /// Takes ownership of a context created with `cuCtxCreate` on `device`; it is destroyed
    /// when the last clone (and the last object created in it) is dropped. (A context to
    /// borrow, such as the current one of a program that mixes libraries, is a
    /// [`ContextRef::borrow_raw`].)
    ///
    /// # Safety
    /// `raw` is a live context created by `cuCtxCreate*` on `device`, that nothing else will
    /// destroy.
    unsafe fn from_raw(raw: sys::CUcontext, device: Device) -> Context {
        Context {
            inner: Arc::new(Inner::new(raw, device, Release::Destroy)),
        }
    }

    /// Gives up the crate's ownership and returns the raw `CUcontext`: the crate no longer
    /// releases it, the caller does, as this context's `Drop` would have: a created context
    /// with `cuCtxDestroy`, a primary one with `cuDevicePrimaryCtxRelease` (one retain), a
    /// green one by destroying its green context ([`green_raw`](Context::green_raw), read
    /// before) with `cuGreenCtxDestroy`. Clones of the context and objects created in it keep
    /// working until then; releasing it while they live is the caller's to avoid.
    fn into_raw(self) -> sys::CUcontext {
        self.inner.released.store(true, Ordering::Relaxed);
        self.inner.raw
    }
}

impl Context {
    /// Creates a context on `device` with `flags`, *floating*: unlike a bare `cuCtxCreate`,
    /// which pushes the new context on the calling thread's stack, this pops it again, so the
    /// caller's stack is unchanged (no operation of this crate changes it). Push it with
    /// [`push`](Self::push) to make it current for a scope, or just use it: every object
    /// makes its context current for the span of each operation. The context is destroyed
    /// when the last clone of the handle (and of every object created in it) is dropped.
    ///
    /// Calls `cuCtxCreate_v2`, the form every driver since CUDA 3.2 provides, and
    /// `cuCtxPopCurrent_v2`.
    #[wraps(cuCtxCreate)]
    #[track_caller]
    pub fn new(device: Device, flags: ContextFlags) -> Result<Context> {
        init()?;
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: writes one CUcontext to a valid pointer; on success we own the context and
            // wrap it in the next statement.
            unsafe { sys::cuCtxCreate_v2(&mut raw, flags.as_raw(), device.as_raw()) },
        )?;
        let ctx = Context {
            inner: Arc::new(Inner::new(raw, device, Release::Destroy)),
        };
        let mut popped = ptr::null_mut();
        call!(
            // SAFETY: cuCtxCreate pushed `raw` on this thread's stack just now; writes one
            // CUcontext.
            unsafe { sys::cuCtxPopCurrent_v2(&mut popped) },
        )?;
        Ok(ctx)
    }

    /// The device this context runs on.
    pub fn device(&self) -> Device {
        self.inner.device
    }

    /// Whether this is the device's primary context.
    pub fn is_primary(&self) -> bool {
        self.inner.release == Release::Primary
    }

    /// This context, borrowed: the form that functions taking a context the crate may not
    /// own accept.
    #[inline]
    pub fn as_context_ref(&self) -> ContextRef<'_> {
        // SAFETY: the context is alive while `self` is borrowed.
        unsafe { ContextRef::borrow_raw(self.inner.raw) }
    }

    /// The context current on the calling thread (top of its stack), if any, as a raw handle
    /// that this crate does not own.
    #[wraps(cuCtxGetCurrent)]
    #[track_caller]
    pub fn current_raw() -> Result<Option<sys::CUcontext>> {
        init()?;
        let mut cur = ptr::null_mut();
        // SAFETY: writes one CUcontext to a valid pointer.
        call!(unsafe { sys::cuCtxGetCurrent(&mut cur) })?;
        Ok((!cur.is_null()).then_some(cur))
    }

    /// Whether this context is current on the calling thread.
    #[track_caller]
    pub fn is_current(&self) -> Result<bool> {
        Ok(Self::current_raw()? == Some(self.inner.raw))
    }

    /// Makes this context current on the calling thread, replacing the top of its stack
    /// (pushing it if the stack is empty).
    #[wraps(cuCtxSetCurrent)]
    #[track_caller]
    pub fn set_current(&self) -> Result<()> {
        call!(
            // SAFETY: the context is alive while `self` is.
            unsafe { sys::cuCtxSetCurrent(self.inner.raw) },
        )
    }

    /// Pushes this context on the calling thread's stack until the returned guard is dropped.
    ///
    /// Calls `cuCtxPushCurrent_v2`; the guard's drop wraps `cuCtxPopCurrent_v2`.
    ///
    /// ```no_run
    /// use cuda_driver::{Context, types::ContextFlags, Device};
    /// let dev = Device::get(0)?;
    /// let a = Context::new(dev, ContextFlags::SCHED_AUTO)?;
    /// let b = Context::new(dev, ContextFlags::SCHED_AUTO)?; // b is current now
    /// {
    ///     let _g = a.push()?;
    ///     assert!(a.is_current()?);
    /// } // popped: b is current again
    /// assert!(b.is_current()?);
    /// # Ok::<(), cuda_driver::Error>(())
    /// ```
    #[wraps(cuCtxPopCurrent_v2, cuCtxPushCurrent)]
    #[track_caller]
    pub fn push(&self) -> Result<ContextGuard<'_>> {
        call!(
            // SAFETY: the context is alive for the guard's lifetime, which borrows `self`.
            unsafe { sys::cuCtxPushCurrent_v2(self.inner.raw) },
        )?;
        Ok(ContextGuard {
            ctx: self,
            _not_send: PhantomData,
        })
    }

    /// Blocks until all work in this context is done.
    #[wraps(cuCtxSynchronize)]
    #[track_caller]
    pub fn synchronize(&self) -> Result<()> {
        let _cur = self.enter()?;
        // SAFETY: no arguments; acts on the current context, which is `self`.
        call!(unsafe { sys::cuCtxSynchronize() })
    }

    /// A limit of this context (stack size, printf FIFO size, malloc heap size, ...).
    #[wraps(cuCtxGetLimit)]
    #[track_caller]
    pub fn limit(&self, limit: Limit) -> Result<usize> {
        let _cur = self.enter()?;
        let mut v = 0;
        call!(
            // SAFETY: writes one size_t to a valid pointer.
            unsafe { sys::cuCtxGetLimit(&mut v, limit.0) },
        )?;
        Ok(v)
    }

    /// Sets a limit of this context.
    #[wraps(cuCtxSetLimit)]
    #[track_caller]
    pub fn set_limit(&self, limit: Limit, value: usize) -> Result<()> {
        let _cur = self.enter()?;
        call!(
            // SAFETY: plain value arguments on the current context.
            unsafe { sys::cuCtxSetLimit(limit.0, value) },
        )
    }

    /// The preferred L1/shared memory split.
    #[wraps(cuCtxGetCacheConfig)]
    #[track_caller]
    pub fn cache_config(&self) -> Result<CacheConfig> {
        let _cur = self.enter()?;
        let mut v = 0;
        call!(
            // SAFETY: writes one CUfunc_cache to a valid pointer.
            unsafe { sys::cuCtxGetCacheConfig(&mut v) },
        )?;
        Ok(CacheConfig(v))
    }

    /// Sets the preferred L1/shared memory split.
    #[wraps(cuCtxSetCacheConfig)]
    #[track_caller]
    pub fn set_cache_config(&self, config: CacheConfig) -> Result<()> {
        let _cur = self.enter()?;
        call!(
            // SAFETY: plain value argument on the current context.
            unsafe { sys::cuCtxSetCacheConfig(config.0) },
        )
    }

    /// The shared memory bank size configuration.
    ///
    /// Calls `cuCtxGetSharedMemConfig` (deprecated by NVIDIA: on current GPUs it is fixed).
    #[wraps(cuCtxGetSharedMemConfig)]
    #[track_caller]
    pub fn shared_mem_config(&self) -> Result<SharedMemConfig> {
        let _cur = self.enter()?;
        let mut v = 0;
        call!(
            // SAFETY: writes one CUsharedconfig to a valid pointer.
            unsafe { sys::cuCtxGetSharedMemConfig(&mut v) },
        )?;
        Ok(SharedMemConfig(v))
    }

    /// Sets the shared memory bank size configuration.
    ///
    /// Calls `cuCtxSetSharedMemConfig` (deprecated by NVIDIA: a no-op on current GPUs).
    #[wraps(cuCtxSetSharedMemConfig)]
    #[track_caller]
    pub fn set_shared_mem_config(&self, config: SharedMemConfig) -> Result<()> {
        let _cur = self.enter()?;
        call!(
            // SAFETY: plain value argument on the current context.
            unsafe { sys::cuCtxSetSharedMemConfig(config.0) },
        )
    }

    /// The API version the context was created with (such as 3020).
    #[wraps(cuCtxGetApiVersion)]
    #[track_caller]
    pub fn api_version(&self) -> Result<u32> {
        let mut v = 0;
        call!(
            // SAFETY: the context is alive; writes one unsigned int.
            unsafe { sys::cuCtxGetApiVersion(self.inner.raw, &mut v) },
        )?;
        Ok(v)
    }

    /// The flags the context was created with.
    #[wraps(cuCtxGetFlags)]
    #[track_caller]
    pub fn flags(&self) -> Result<ContextFlags> {
        let _cur = self.enter()?;
        let mut v = 0;
        // SAFETY: writes one unsigned int to a valid pointer.
        call!(unsafe { sys::cuCtxGetFlags(&mut v) })?;
        Ok(ContextFlags(v))
    }

    /// The range of stream priorities as `(least, greatest)`; numerically, greatest <= least.
    #[wraps(cuCtxGetStreamPriorityRange)]
    #[track_caller]
    pub fn stream_priority_range(&self) -> Result<(i32, i32)> {
        let _cur = self.enter()?;
        let (mut least, mut greatest) = (0, 0);
        call!(
            // SAFETY: writes two ints to valid pointers.
            unsafe { sys::cuCtxGetStreamPriorityRange(&mut least, &mut greatest) },
        )?;
        Ok((least, greatest))
    }
}

/// A context pushed on the calling thread's stack by [`Context::push`]; pops it on drop.
///
/// It refuses to pop a context that is not its own: if the top of the stack is another
/// context when the guard drops (someone pushed without popping), nothing is popped and the
/// problem is counted in [`drop_error_count`](crate::error::drop_error_count).
///
/// `!Send`, because the stack belongs to the thread that pushed:
///
/// ```compile_fail
/// fn assert_send<T: Send>(_: T) {}
/// let ctx: cuda_driver::Context = unimplemented!();
/// assert_send(ctx.push().unwrap());
/// ```
#[must_use = "the context is popped when the guard is dropped"]
pub struct ContextGuard<'a> {
    ctx: &'a Context,
    _not_send: PhantomData<*const ()>,
}

impl ContextGuard<'_> {
    /// The pushed context.
    pub fn context(&self) -> &Context {
        self.ctx
    }

    /// Pops the context now, returning an error instead of only counting it when the
    /// context is not on top of the stack.
    #[wraps(cuCtxPopCurrent)]
    #[track_caller]
    pub fn pop(self) -> Result<()> {
        let this = std::mem::ManuallyDrop::new(self);
        this.pop_inner()
    }

    #[track_caller]
    fn pop_inner(&self) -> Result<()> {
        let mut cur = ptr::null_mut();
        // SAFETY: writes one CUcontext to a valid pointer.
        call!(unsafe { sys::cuCtxGetCurrent(&mut cur) })?;
        if cur != self.ctx.as_raw() {
            return Err(Error::ContextStackMismatch {
                expected: self.ctx.as_raw() as usize,
                found: cur as usize,
            });
        }
        let mut popped = ptr::null_mut();
        call!(
            // SAFETY: the top of the stack is our context, pushed by Context::push on this thread
            // (the guard is !Send); writes one CUcontext.
            unsafe { sys::cuCtxPopCurrent_v2(&mut popped) },
        )
    }
}

impl Drop for ContextGuard<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.pop_inner() {
            report_drop_problem(&e);
        }
    }
}

impl Context {
    /// Makes GPUDirect RDMA writes to this context's memory visible (`target`
    /// `CURRENT_CTX`, `scope` `TO_OWNER` or `TO_ALL_DEVICES`).
    #[wraps(cuFlushGPUDirectRDMAWrites)]
    #[track_caller]
    pub fn flush_gpudirect_rdma_writes(
        &self,
        target: FlushGPUDirectRDMAWritesTarget,
        scope: FlushGPUDirectRDMAWritesScope,
    ) -> Result<()> {
        let _cur = self.enter()?;
        call!(
            // SAFETY: plain values on the current context.
            unsafe { sys::cuFlushGPUDirectRDMAWrites(target.as_raw(), scope.as_raw()) },
        )
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use super::{Context, Release};
    use crate::device::Device;
    use crate::handle::{Handle, OwnedHandle};

    #[test]
    fn into_raw_gives_up_the_release_for_every_clone() {
        // SAFETY: a fake handle: given up below before any clone could release it, and never
        // given to the driver.
        let ctx = unsafe { Context::from_raw(0x10 as crate::sys::CUcontext, Device::from_raw(0)) };
        assert_eq!(ctx.inner.release, Release::Destroy);
        assert!(!ctx.is_primary() && ctx.green_raw().is_none());
        let clone = ctx.clone();
        assert_eq!(ctx.into_raw(), 0x10 as crate::sys::CUcontext);
        // The clone still names the context, and its drop releases nothing.
        assert_eq!(clone.as_raw(), 0x10 as crate::sys::CUcontext);
        assert!(clone.inner.released.load(Ordering::Relaxed));
        drop(clone);
    }
}
