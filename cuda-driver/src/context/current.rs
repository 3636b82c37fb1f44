//! Making a context current for the span of one operation, without changing the caller's
//! context stack.
//!
//! Every operation on an object of a context (a buffer, a stream, a module) needs that
//! context current on the calling thread. [`Context::enter`] makes it so for as long as the
//! returned [`Current`] lives: when the context is already on top of the thread's stack it
//! does nothing but one `cuCtxGetCurrent` (the fast path of every copy); otherwise it pushes
//! the context and the guard pops it again. Calls whose context the driver takes from a
//! created stream (launches, stream-ordered allocations and frees, event records and
//! waits) skip even that:
//! [`Context::enter_for_stream_call`]. The caller's stack is the
//! same afterwards as before, also when the operation fails and also in `Drop`. The crate
//! never calls `cuCtxSetCurrent` on its own behalf.

use cuda_driver_macros::call;
use std::marker::PhantomData;
use std::panic::Location;
use std::ptr;

use cuda_driver_sys as sys;

use super::Context;
use crate::error::{report_drop_error, report_drop_problem, Error, Result};
use crate::handle::Handle;
use crate::release::{in_host_fn, release};

/// The context of an operation made current for its span; see the module docs. `!Send`: it
/// may have pushed onto this thread's stack.
#[must_use = "the context is current only while the guard lives"]
pub(crate) struct Current<'a> {
    /// The context this guard pushed, or null when it was current already.
    pushed: sys::CUcontext,
    _ctx: PhantomData<&'a Context>,
    _not_send: PhantomData<*const ()>,
}

impl Context {
    /// Makes this context current on the calling thread until the guard drops; see the
    /// module docs. Refuses inside a host function, before any driver call.
    #[inline]
    #[track_caller]
    pub(crate) fn enter(&self) -> Result<Current<'_>> {
        self.enter_raw(self.as_raw())
    }

    /// [`enter`](Self::enter) for a caller that holds this context's raw handle already
    /// (`raw` must be `self.as_raw()`): the fast path reads nothing through `self`.
    #[inline]
    #[track_caller]
    pub(crate) fn enter_raw(&self, raw: sys::CUcontext) -> Result<Current<'_>> {
        debug_assert_eq!(raw, self.as_raw());
        if in_host_fn() {
            return Err(in_host_fn_error(Location::caller()));
        }
        let mut cur = ptr::null_mut();
        // SAFETY: writes one CUcontext to a valid pointer.
        call!(unsafe { sys::cuCtxGetCurrent(&mut cur) })?;
        if cur == raw {
            Ok(Current {
                pushed: ptr::null_mut(),
                _ctx: PhantomData,
                _not_send: PhantomData,
            })
        } else {
            self.push_for_op()
        }
    }

    #[cold]
    #[inline(never)]
    #[track_caller]
    fn push_for_op(&self) -> Result<Current<'_>> {
        call!(
            // SAFETY: the context is alive while `self` is, and the guard borrows `self`.
            unsafe { sys::cuCtxPushCurrent_v2(self.as_raw()) },
        )?;
        Ok(Current {
            pushed: self.as_raw(),
            _ctx: PhantomData,
            _not_send: PhantomData,
        })
    }

    /// [`enter`](Self::enter) for one driver call that takes its context from `stream`
    /// when `stream` is a created stream: `cuLaunchKernel`, `cuLaunchKernelEx`,
    /// `cuLaunchCooperativeKernel`, `cuMemAllocAsync`, `cuMemAllocFromPoolAsync`,
    /// `cuMemFreeAsync`, `cuEventRecord`, `cuEventRecordWithFlags`, `cuStreamWaitEvent`,
    /// `cuStreamSynchronize` and `cuStreamQuery`
    /// (cuda.h: they need a current context only for a default stream, and a function
    /// launches in its own context, which must be the stream's; an event is recorded on a
    /// stream of its own context). The GPU test
    /// `context::stream_calls_run_in_the_streams_context_whatever_is_current` makes each of
    /// them with no context current and with another one current. For a created
    /// stream this makes no driver call: the call runs whatever the thread's current context
    /// is, or none. The legacy and per-thread default streams (null, `CU_STREAM_LEGACY`,
    /// `CU_STREAM_PER_THREAD`) name the current context's stream, so for them `self` is
    /// entered as usual. `self` must be `stream`'s context. Refuses inside a host function,
    /// as `enter` does.
    #[inline]
    #[track_caller]
    pub(crate) fn enter_for_stream_call(&self, stream: sys::CUstream) -> Result<Current<'_>> {
        if !is_default_stream(stream) {
            if in_host_fn() {
                return Err(in_host_fn_error(Location::caller()));
            }
            return Ok(Current {
                pushed: ptr::null_mut(),
                _ctx: PhantomData,
                _not_send: PhantomData,
            });
        }
        self.enter()
    }

    /// [`enter`](Self::enter) for a call on an event of this context that needs no current
    /// context (`cuEventQuery`, `cuEventSynchronize`, `cuEventElapsedTime`: the driver takes
    /// the context from the events; the GPU test
    /// `context::stream_calls_run_in_the_streams_context_whatever_is_current` makes each with
    /// no context current and with another one current): no driver call. Refuses inside a
    /// host function, as `enter` does.
    #[inline]
    #[track_caller]
    pub(crate) fn enter_for_event_call(&self) -> Result<Current<'_>> {
        if in_host_fn() {
            return Err(in_host_fn_error(Location::caller()));
        }
        Ok(Current {
            pushed: ptr::null_mut(),
            _ctx: PhantomData,
            _not_send: PhantomData,
        })
    }

    /// [`release`](Self::release) of something freed by a call that takes its context from
    /// `stream` (see [`enter_for_stream_call`](Self::enter_for_stream_call)): on a created
    /// stream, outside a host function, `f` runs without a `cuCtxGetCurrent`.
    #[inline]
    pub(crate) fn release_for_stream_call<F>(&self, stream: sys::CUstream, call: &'static str, f: F)
    where
        F: FnOnce() -> sys::CUresult + Send + 'static,
    {
        if !is_default_stream(stream) && !in_host_fn() {
            report_drop_error(call, f());
        } else {
            self.release(call, f);
        }
    }

    /// [`enter`](Self::enter) for `Drop`: reports a failure (see
    /// [`drop_error_count`](crate::error::drop_error_count)) and returns `None` instead of an error.
    pub(crate) fn enter_for_drop(&self) -> Option<Current<'_>> {
        let mut cur = ptr::null_mut();
        // SAFETY: writes one CUcontext to a valid pointer.
        let r = unsafe { sys::cuCtxGetCurrent(&mut cur) };
        if r != sys::CUDA_SUCCESS {
            report_drop_error("cuCtxGetCurrent", r);
            return None;
        }
        if cur == self.as_raw() {
            return Some(Current {
                pushed: ptr::null_mut(),
                _ctx: PhantomData,
                _not_send: PhantomData,
            });
        }
        // SAFETY: the context is alive while `self` is.
        let r = unsafe { sys::cuCtxPushCurrent_v2(self.as_raw()) };
        if r != sys::CUDA_SUCCESS {
            report_drop_error("cuCtxPushCurrent_v2", r);
            return None;
        }
        Some(Current {
            pushed: self.as_raw(),
            _ctx: PhantomData,
            _not_send: PhantomData,
        })
    }

    /// Releases something of this context from `Drop`: runs `f` (one driver call named
    /// `call`) with the context current, reporting a failure; inside a host function, on the
    /// crate's release thread instead (see [`crate::release`]).
    #[inline]
    pub(crate) fn release<F>(&self, call: &'static str, f: F)
    where
        F: FnOnce() -> sys::CUresult + Send + 'static,
    {
        if in_host_fn() {
            let ctx = self.clone();
            release(move || ctx.release_now(call, f));
        } else {
            self.release_now(call, f);
        }
    }

    /// [`release`](Self::release) for a release call that does not wait for device work
    /// still using what it releases (`cuMemUnmap`, `cuIpcCloseMemHandle`,
    /// `cuDestroyExternalMemory`, ...): the context is synchronised first (`cuCtxSynchronize`,
    /// so every stream of the context has finished the work queued through the owner's views),
    /// then `f` runs. When the synchronisation fails (a stream capture in global mode on another
    /// thread forbids it, or the context is broken), `f` does not run: what it would release is
    /// leaked and the problem reported (see [`drop_error_count`](crate::error::drop_error_count)),
    /// since queued work might still touch it. Inside a host function, all of it runs on the
    /// release thread.
    pub(crate) fn release_after_sync<F>(&self, call: &'static str, f: F)
    where
        F: FnOnce() -> sys::CUresult + Send + 'static,
    {
        if in_host_fn() {
            let ctx = self.clone();
            release(move || ctx.release_after_sync_now(call, f));
        } else {
            self.release_after_sync_now(call, f);
        }
    }

    fn release_after_sync_now(&self, call: &'static str, f: impl FnOnce() -> sys::CUresult) {
        if !self.sync_for_release(call) {
            return;
        }
        if let Some(_cur) = self.enter_for_drop() {
            report_drop_error(call, f());
        }
    }

    /// For a release (`call`) that does not wait for device work by itself: waits for the
    /// cross-context uses of this context's memory and synchronises the context. `false`,
    /// with the problem reported, when that failed: the caller must leak what it releases.
    pub(crate) fn sync_for_release(&self, call: &'static str) -> bool {
        if !self.wait_foreign_uses() {
            report_drop_problem(&format_args!(
                "{call} skipped: work queued on another context's stream may still use what it \
                 releases (a wait for it failed); leaked"
            ));
            return false;
        }
        let Some(_cur) = self.enter_for_drop() else {
            return false;
        };
        // SAFETY: no arguments; synchronises the current context, which is `self`.
        let r = unsafe { sys::cuCtxSynchronize() };
        if r != sys::CUDA_SUCCESS {
            report_drop_error("cuCtxSynchronize", r);
            report_drop_problem(&format_args!(
                "{call} skipped: the context could not be synchronised, so work queued through \
                 views may still use what it releases; leaked"
            ));
            return false;
        }
        true
    }

    fn release_now(&self, call: &'static str, f: impl FnOnce() -> sys::CUresult) {
        if !self.wait_foreign_uses() {
            report_drop_problem(&format_args!(
                "{call} skipped: work queued on another context's stream may still use what it \
                 releases (a wait for it failed); leaked"
            ));
            return;
        }
        self.release_unfenced_now(call, f);
    }

    /// [`release`](Self::release) without waiting for cross-context uses: for the fences'
    /// own events.
    pub(crate) fn release_unfenced<F>(&self, call: &'static str, f: F)
    where
        F: FnOnce() -> sys::CUresult + Send + 'static,
    {
        if in_host_fn() {
            let ctx = self.clone();
            release(move || ctx.release_unfenced_now(call, f));
        } else {
            self.release_unfenced_now(call, f);
        }
    }

    fn release_unfenced_now(&self, call: &'static str, f: impl FnOnce() -> sys::CUresult) {
        if let Some(_cur) = self.enter_for_drop() {
            report_drop_error(call, f());
        }
    }
}

impl Drop for Current<'_> {
    #[inline]
    fn drop(&mut self) {
        if !self.pushed.is_null() {
            pop_pushed(self.pushed);
        }
    }
}

/// Whether `stream` is one of the handles that name the current context's default stream:
/// null, `CU_STREAM_LEGACY` (1) or `CU_STREAM_PER_THREAD` (2).
#[inline(always)]
pub(crate) fn is_default_stream(stream: sys::CUstream) -> bool {
    stream.is_null() || stream == sys::CU_STREAM_LEGACY || stream == sys::CU_STREAM_PER_THREAD
}

#[cold]
#[inline(never)]
fn pop_pushed(pushed: sys::CUcontext) {
    let mut popped = ptr::null_mut();
    // SAFETY: `enter` pushed `pushed` on this thread (the guard is !Send), and every
    // operation between the push and now leaves the stack as it found it; writes one
    // CUcontext.
    let r = unsafe { sys::cuCtxPopCurrent_v2(&mut popped) };
    if r != sys::CUDA_SUCCESS {
        report_drop_error("cuCtxPopCurrent_v2", r);
    } else if popped != pushed {
        report_drop_problem(&Error::ContextStackMismatch {
            expected: pushed as usize,
            found: popped as usize,
        });
    }
}

#[cold]
#[inline(never)]
fn in_host_fn_error(location: &'static Location<'static>) -> Error {
    Error::InHostCallback { location }
}

/// A context made current for a call that needs *some* current context but belongs to none
/// (a context-independent kernel's parameter query, instantiating a graph): the caller's
/// current context when there is one (nothing changes), otherwise device 0's primary context,
/// pushed for the span of the call and popped again.
#[must_use = "the context is current only while the guard lives"]
pub(crate) struct AnyCurrent {
    /// The primary context this guard pushed, if it pushed one.
    pushed: Option<Context>,
    _not_send: PhantomData<*const ()>,
}

impl AnyCurrent {
    #[track_caller]
    pub(crate) fn enter() -> Result<AnyCurrent> {
        if in_host_fn() {
            return Err(in_host_fn_error(Location::caller()));
        }
        crate::init()?;
        let mut cur = ptr::null_mut();
        // SAFETY: writes one CUcontext to a valid pointer.
        call!(unsafe { sys::cuCtxGetCurrent(&mut cur) })?;
        if !cur.is_null() {
            return Ok(AnyCurrent {
                pushed: None,
                _not_send: PhantomData,
            });
        }
        let primary = crate::device::Device::get(0)?.primary_context()?;
        call!(
            // SAFETY: the primary context is alive while `pushed` holds it.
            unsafe { sys::cuCtxPushCurrent_v2(primary.as_raw()) },
        )?;
        Ok(AnyCurrent {
            pushed: Some(primary),
            _not_send: PhantomData,
        })
    }
}

impl Drop for AnyCurrent {
    fn drop(&mut self) {
        if let Some(ctx) = self.pushed.take() {
            pop_pushed(ctx.as_raw());
        }
    }
}
