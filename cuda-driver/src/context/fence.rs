//! Fences for memory of a context used on a stream of another context.
//!
//! Memory that is not stream-ordered may be used on any stream of its own context, and its
//! release waits for that work: `cuMemFree` waits by itself (proved by the GPU test
//! `release::cu_mem_free_waits_for_work_queued_through_views_on_another_stream`), and the
//! kinds whose release call does not wait synchronise their context first
//! ([`Context::release_after_sync`]). Neither covers a stream of *another* context, which
//! only peer copies (`cuMemcpyPeer*`, `cuMemcpy3DPeer*`) and kernel arguments of another
//! context's memory can reach. So every such use records an event on the stream it was
//! queued on and leaves it here, with the memory's context; every release of memory of that
//! context waits for the events first (and leaks the memory, reporting it, when a wait fails,
//! since the work might still run). The check costs one relaxed atomic load on every release
//! and nothing on the paths that stay in one context.

use cuda_driver_macros::call;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use cuda_driver_sys as sys;

use super::Context;
use crate::error::{report_drop_problem, Result};
use crate::release::SendRaw;

/// The pending cross-context uses of one context's memory: events recorded on streams of
/// other contexts, each with its own context (which destroys it).
#[derive(Default)]
pub(super) struct Fences {
    any: AtomicBool,
    list: Mutex<Vec<(SendRaw<sys::CUevent>, Context)>>,
}

impl Fences {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(SendRaw<sys::CUevent>, Context)>> {
        self.list.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// An event recorded on `stream` (of the current context), or the error.
fn record_fence(stream: sys::CUstream) -> Result<SendRaw<sys::CUevent>> {
    let mut event = ptr::null_mut();
    call!(
        // SAFETY: writes one CUevent, owned by the caller or destroyed here.
        unsafe { sys::cuEventCreate(&mut event, sys::CU_EVENT_DISABLE_TIMING) },
    )?;
    // SAFETY: `event` and `stream` are of the current context.
    let r = call!(unsafe { sys::cuEventRecord(event, stream) });
    if r.is_err() {
        // SAFETY: created above, never recorded, owned here.
        unsafe { sys::cuEventDestroy_v2(event) };
    }
    r.map(|()| SendRaw(event))
}

/// Destroys a fence event of `ctx` (any context may be current; the event names its own).
fn destroy(event: SendRaw<sys::CUevent>, ctx: &Context) {
    // SAFETY: the event was created by cuEventCreate in `fence_foreign_use` and is owned by
    // the fence list, which gives it up here, once.
    ctx.release_unfenced("cuEventDestroy_v2", move || unsafe {
        sys::cuEventDestroy_v2(event.get())
    });
}

impl Context {
    /// Notes that work just queued on `stream`, a stream of `stream_ctx` (another context),
    /// uses memory of this context: every later release of this context's memory waits for
    /// that work first. Records one event on `stream`, and drops the fences already passed.
    #[cold]
    #[inline(never)]
    #[track_caller]
    pub(crate) fn fence_foreign_use(
        &self,
        stream_ctx: &Context,
        stream: sys::CUstream,
    ) -> Result<()> {
        let _cur = stream_ctx.enter()?;
        match record_fence(stream) {
            Ok(event) => {
                let mut list = self.inner.fences.lock();
                // Fences whose work is done need no wait: drop them, so the list stays as
                // long as the cross-context work in flight.
                list.retain(|(e, ctx)| {
                    // SAFETY: a live event of the list.
                    let done =
                        unsafe { sys::cuEventQuery(SendRaw(e.0).get()) } == sys::CUDA_SUCCESS;
                    if done {
                        destroy(SendRaw(e.0), ctx);
                    }
                    !done
                });
                list.push((event, stream_ctx.clone()));
                self.inner.fences.any.store(true, Ordering::Release);
                Ok(())
            }
            // No event (out of resources): wait for the work now instead; when that fails too
            // the stream's context is broken and its queued work will not run.
            Err(_) => call!(
                // SAFETY: `stream` is a live stream of the current context.
                unsafe { sys::cuStreamSynchronize(stream) },
            ),
        }
    }

    /// Waits for every cross-context use of this context's memory noted so far (see
    /// [`fence_foreign_use`](Self::fence_foreign_use)). `false`, with the failure reported,
    /// when a wait failed: the work may still run, and the caller must not release the memory.
    #[inline]
    pub(crate) fn wait_foreign_uses(&self) -> bool {
        match self.wait_foreign_uses_checked() {
            Ok(()) => true,
            Err(e) => {
                report_drop_problem(&format_args!("{e}"));
                false
            }
        }
    }

    /// [`wait_foreign_uses`](Self::wait_foreign_uses), returning the failed wait's error.
    #[inline]
    #[track_caller]
    pub(crate) fn wait_foreign_uses_checked(&self) -> Result<()> {
        if !self.inner.fences.any.load(Ordering::Acquire) {
            return Ok(());
        }
        self.wait_foreign_uses_slow()
    }

    #[cold]
    #[inline(never)]
    #[track_caller]
    fn wait_foreign_uses_slow(&self) -> Result<()> {
        let mut list = self.inner.fences.lock();
        while let Some((event, ctx)) = list.pop() {
            // SAFETY: a live event of the list; the wait needs no current context.
            let r = call!(unsafe { sys::cuEventSynchronize(SendRaw(event.0).get()) });
            if r.is_err() {
                list.push((event, ctx));
                return r;
            }
            destroy(event, &ctx);
        }
        self.inner.fences.any.store(false, Ordering::Release);
        Ok(())
    }
}
