//! Profiler Control: starting and stopping the collection of an attached profiler for one
//! context ([`Context::profiler_start`], [`Context::profiler_stop`], and the scoped
//! [`Context::profiler_range`]).

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use crate::context::Context;
use crate::error::Result;

impl Context {
    /// Starts profile collection for this context by the attached profiling tool.
    ///
    /// A profiler started to wait for it, such as Nsight Systems
    /// (`nsys profile --capture-range=cudaProfilerApi`) or Nsight Compute
    /// (`ncu --profile-from-start off`), collects nothing until the program calls
    /// `cuProfilerStart` and stops collecting at `cuProfilerStop`
    /// ([`profiler_stop`](Self::profiler_stop)), so that a profile covers one phase of a long
    /// program. Without such a tool attached, both calls succeed and do nothing. Starts and
    /// stops are not counted: a start while collection is on, or a stop while it is off, does
    /// nothing, so nested ranges end at the first stop.
    ///
    /// The driver call acts on the current context; this method makes `self` current for the
    /// call only, so the caller's context stack is the same afterwards.
    /// [`profiler_range`](Self::profiler_range) pairs the start with a stop that always runs.
    ///
    /// ```no_run
    /// use cuda_driver::Device;
    ///
    /// let ctx = Device::get(0)?.primary_context()?;
    /// // ... warm-up work the profile should not show ...
    /// ctx.profiler_start()?;
    /// // ... the work to profile ...
    /// ctx.profiler_stop()?;
    /// # Ok::<(), cuda_driver::Error>(())
    /// ```
    #[wraps(cuProfilerStart)]
    #[track_caller]
    pub fn profiler_start(&self) -> Result<()> {
        let _cur = self.enter()?;
        // SAFETY: no arguments; acts on the current context, which `_cur` makes `self`.
        call!(unsafe { sys::cuProfilerStart() })
    }

    /// Stops profile collection for this context by the attached profiling tool (see
    /// [`profiler_start`](Self::profiler_start)). Without such a tool, and when collection is
    /// off already, it does nothing.
    ///
    /// The driver call acts on the current context; this method makes `self` current for the
    /// call only, so the caller's context stack is the same afterwards.
    #[wraps(cuProfilerStop)]
    #[track_caller]
    pub fn profiler_stop(&self) -> Result<()> {
        let _cur = self.enter()?;
        // SAFETY: no arguments; acts on the current context, which `_cur` makes `self`.
        call!(unsafe { sys::cuProfilerStop() })
    }

    /// Starts profile collection for this context (see
    /// [`profiler_start`](Self::profiler_start)) until the returned range is dropped or
    /// [`stop`](ProfilerRange::stop)ped: collection stops however the scope ends, by an early
    /// return or a panic too.
    ///
    /// ```no_run
    /// # use cuda_driver::{Context, Result};
    /// fn step(ctx: &Context) -> Result<()> {
    ///     let range = ctx.profiler_range()?;
    ///     ctx.synchronize()?; // a failure here returns early and stops collection too
    ///     range.stop() // reports a failure of the stop, which a drop only logs
    /// }
    /// ```
    #[wraps(cuProfilerStart, cuProfilerStop)]
    #[track_caller]
    pub fn profiler_range(&self) -> Result<ProfilerRange<'_>> {
        self.profiler_start()?;
        Ok(ProfilerRange { ctx: self })
    }
}

/// Profile collection for one context, on from [`Context::profiler_range`] until this range
/// is dropped or [`stop`](Self::stop)ped.
///
/// Dropping it calls `cuProfilerStop` with the context made current for the call (the
/// caller's stack is left as it is, also when the drop runs during a panic); a failure goes
/// to the [`log`](https://docs.rs/log) crate and [`drop_error_count`](crate::error::drop_error_count),
/// never a panic. It may be dropped on any thread.
///
/// The range borrows its context, so it cannot outlive it:
///
/// ```compile_fail
/// use cuda_driver::{Device, profiler::ProfilerRange, Result};
///
/// fn range() -> Result<ProfilerRange<'static>> {
///     let ctx = Device::get(0)?.primary_context()?;
///     ctx.profiler_range() // borrows `ctx`, which is dropped at the return
/// }
/// ```
#[must_use = "collection stops when the range is dropped"]
#[derive(Debug)]
pub struct ProfilerRange<'a> {
    ctx: &'a Context,
}

impl<'a> ProfilerRange<'a> {
    /// The context whose collection this range controls.
    pub fn context(&self) -> &'a Context {
        self.ctx
    }

    /// Stops collection now, reporting a failure (which dropping the range can only log).
    #[wraps(cuProfilerStop)]
    #[track_caller]
    pub fn stop(self) -> Result<()> {
        let ctx = self.ctx;
        // The stop below replaces the one of `Drop`; the range holds nothing else.
        std::mem::forget(self);
        ctx.profiler_stop()
    }
}

impl Drop for ProfilerRange<'_> {
    fn drop(&mut self) {
        // SAFETY: no arguments; `release` runs it with the range's context current (on the
        // crate's release thread when dropped inside a host function).
        self.ctx
            .release("cuProfilerStop", || unsafe { sys::cuProfilerStop() });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_may_move_between_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<ProfilerRange<'static>>();
    }
}
