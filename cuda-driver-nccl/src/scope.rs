//! The context of one NCCL call, and the caller's context stack kept as it was.
//!
//! NCCL works through the CUDA runtime: it takes its device from the thread's current
//! context (`cudaGetDevice`) and switches devices with `cudaSetDevice`, which makes the
//! device's *primary* context current by replacing the top of the thread's context stack.
//! A [`Scope`] makes the communicator's context (a primary context, see
//! [`Error::NotPrimaryContext`](crate::Error::NotPrimaryContext)) current for the span of one
//! call (nothing but one `cuCtxGetCurrent` when it is current already) and, when the call
//! returns, puts back whatever NCCL replaced and pops what it pushed: the caller's stack is the
//! same afterwards, as after every operation of `cuda-driver`.

use std::cell::Cell;
use std::marker::PhantomData;
use std::panic::Location;
use std::ptr;

use cuda_driver::handle::Handle;
use cuda_driver::{types::ErrorCode, Context};
use cuda_driver_sys as cu;

use crate::error::{report_drop_error, Error, Result};

thread_local! {
    /// Whether a [`Group`](crate::Group) is open on this thread: the operations that must not
    /// be deferred to a group's end refuse to run then.
    static OPEN: Cell<bool> = const { Cell::new(false) };
}

/// Whether a [`Group`](crate::Group) is open on the calling thread.
#[inline]
pub(crate) fn is_open() -> bool {
    OPEN.with(Cell::get)
}

/// Records that the calling thread opened (`true`) or ended (`false`) a group.
#[inline]
pub(crate) fn set_open(open: bool) {
    OPEN.with(|o| o.set(open));
}

/// A CUDA driver call's result as the crate's error.
#[inline]
#[track_caller]
pub(crate) fn cu_check(code: cu::CUresult, call: &'static str) -> Result<()> {
    if code == cu::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(Error::Cuda(cuda_driver::Error::Driver {
            call,
            code: ErrorCode::from_raw(code),
            location: Location::caller(),
        }))
    }
}

/// `ctx` current on this thread for the span of one NCCL call; see the module docs. `!Send`:
/// it may have pushed onto this thread's stack.
#[must_use = "the context is current only while the scope lives"]
pub(crate) struct Scope<'a> {
    ctx: &'a Context,
    pushed: bool,
    /// Whether the stack is read again when the call returns; see [`Scope::enter_for_op`].
    check_after: bool,
    _not_send: PhantomData<*const ()>,
}

impl<'a> Scope<'a> {
    /// Makes `ctx` current until the scope drops. Refuses inside a host function, where
    /// CUDA calls are forbidden, before any driver call.
    #[inline]
    #[track_caller]
    pub(crate) fn enter(ctx: &'a Context) -> Result<Scope<'a>> {
        Self::enter_with(ctx, true)
    }

    /// [`enter`](Self::enter) for one operation on one communicator outside a group (a
    /// collective or a send or receive that NCCL runs before it returns). When `ctx` was
    /// current already, nothing is read when the call returns: NCCL switches devices only
    /// with `cudaSetDevice`, to the communicator's device or back to the one it found
    /// current, and both are `ctx`'s device, whose primary context `ctx` is (a communicator's
    /// context is a primary context, checked when it is made), so `ctx` is current
    /// afterwards (GPU test `checks::the_caller_s_context_stack_is_left_as_it_was`, with the
    /// communicator's context current and with a created one). When `ctx` was pushed, the
    /// stack is checked and popped as for `enter`.
    #[inline]
    #[track_caller]
    pub(crate) fn enter_for_op(ctx: &'a Context) -> Result<Scope<'a>> {
        Self::enter_with(ctx, false)
    }

    #[inline]
    #[track_caller]
    fn enter_with(ctx: &'a Context, check_after: bool) -> Result<Scope<'a>> {
        cuda_driver::external::check_not_in_host_function()?;
        let mut cur = ptr::null_mut();
        // SAFETY: writes one CUcontext to a valid pointer.
        cu_check(unsafe { cu::cuCtxGetCurrent(&mut cur) }, "cuCtxGetCurrent")?;
        if cur == ctx.as_raw() {
            return Ok(Scope {
                ctx,
                pushed: false,
                check_after,
                _not_send: PhantomData,
            });
        }
        cu_check(
            // SAFETY: the context is alive while `ctx` is, and the scope borrows it.
            unsafe { cu::cuCtxPushCurrent_v2(ctx.as_raw()) },
            "cuCtxPushCurrent_v2",
        )?;
        Ok(Scope {
            ctx,
            pushed: true,
            check_after: true,
            _not_send: PhantomData,
        })
    }

    /// Puts `ctx` back on top if the call replaced it, then pops it if [`enter`] pushed it.
    ///
    /// [`enter`]: Self::enter
    fn restore(&self) -> Result<()> {
        if !self.check_after {
            return Ok(());
        }
        let mut cur = ptr::null_mut();
        // SAFETY: writes one CUcontext to a valid pointer.
        cu_check(unsafe { cu::cuCtxGetCurrent(&mut cur) }, "cuCtxGetCurrent")?;
        if cur != self.ctx.as_raw() {
            cu_check(
                // SAFETY: the context is alive (borrowed by the scope); this replaces the top
                // of the stack, which is where NCCL's cudaSetDevice put another context.
                unsafe { cu::cuCtxSetCurrent(self.ctx.as_raw()) },
                "cuCtxSetCurrent",
            )?;
        }
        if self.pushed {
            let mut popped = ptr::null_mut();
            cu_check(
                // SAFETY: the top of the stack is `ctx`, pushed by `enter` on this thread (the
                // scope is !Send); writes one CUcontext.
                unsafe { cu::cuCtxPopCurrent_v2(&mut popped) },
                "cuCtxPopCurrent_v2",
            )?;
        }
        Ok(())
    }
}

impl Drop for Scope<'_> {
    #[inline]
    fn drop(&mut self) {
        if let Err(e) = self.restore() {
            report_drop_error("restoring the context stack after an NCCL call", &e);
        }
    }
}
