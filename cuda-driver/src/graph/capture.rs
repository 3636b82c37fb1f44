//! Stream capture: recording the work queued on streams into a [`Graph`].

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::ptr;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use super::{Graph, GraphNode};
use crate::entry_point::newer;
use crate::error::{Error, Result};
use crate::stream::Stream;
use crate::types::ErrorCode;

use crate::types::StreamCaptureMode as CaptureMode;
use crate::types::StreamCaptureStatus as CaptureStatus;
use crate::types::StreamUpdateCaptureDependenciesFlags;

/// A stream's capture state (`cuStreamGetCaptureInfo`).
#[doc(alias = "cuStreamGetCaptureInfo")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CaptureInfo {
    /// Whether the stream is capturing, and whether the capture is still valid.
    pub status: CaptureStatus,
    /// The capture sequence's id, unique in the process (0 when not capturing).
    pub id: u64,
    /// The raw graph being captured into (null when not capturing). A safe handle to it,
    /// valid while the capture runs, is [`Capture::graph`](super::Capture::graph) in
    /// [`Stream::capture_with`].
    pub graph: sys::CUgraph,
    /// How many nodes the next captured operation will depend on.
    pub dependency_count: usize,
}

impl Stream {
    /// Begins capturing the work queued on this stream (and on streams that join it through
    /// event waits) into a graph, in `mode`: [`CaptureMode::GLOBAL`] refuses calls not allowed
    /// during capture on every thread while it runs, [`CaptureMode::THREAD_LOCAL`] on this
    /// thread, [`CaptureMode::RELAXED`] nowhere. End it with [`end_capture`](Self::end_capture)
    /// on this thread (global and thread-local modes).
    ///
    /// Whatever the mode, synchronizing the whole context while one of its streams is being
    /// captured, on any thread, fails with `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED` and
    /// invalidates the capture: [`Context::synchronize`](crate::Context::synchronize). Capture
    /// on a context that other threads do not synchronize meanwhile. (The crate's host access
    /// to managed and page-locked memory waits for the memory's own stream only; synchronizing
    /// the stream being captured fails the same way, and they then hand out no host access.)
    ///
    /// Kernels launched through this crate onto a captured stream are kept loaded by the graph
    /// (see the [graph module docs](crate::graph::Graph)).
    ///
    /// # Safety
    /// The captured work refers to device memory by address: the memory it uses stays
    /// allocated while the graph, or any graph or exec made from it, can run.
    #[wraps(cuStreamBeginCapture_v2)]
    #[track_caller]
    pub unsafe fn begin_capture(&self, mode: CaptureMode) -> Result<()> {
        let _cur = self.context().enter()?;
        call!(
            // SAFETY: the stream is alive.
            unsafe { sys::cuStreamBeginCapture_v2(self.as_raw(), mode.as_raw()) },
        )?;
        crate::stream::capture_begun();
        Ok(())
    }

    /// Ends the capture begun on this stream and returns the graph.
    /// [`Error::CaptureInvalidated`] when an operation invalidated it (a synchronizing call
    /// during a global capture, or a context synchronization on any thread, such as
    /// [`Context::synchronize`](crate::Context::synchronize)), [`Error::CaptureWrongThread`]
    /// when it was begun on another thread in the global or thread-local mode. After that
    /// refusal the driver may have ended the capture and discarded its graph (driver 580
    /// does): [`capture_status`](Self::capture_status) tells whether it goes on.
    #[wraps(cuStreamEndCapture)]
    #[track_caller]
    pub fn end_capture(&self) -> Result<Graph> {
        let _cur = self.context().enter()?;
        super::capture_scope::check_not_scoped(self)?;
        let g = self.end_capture_raw()?;
        // SAFETY: the graph the capture made, owned by the caller now.
        Ok(unsafe { Graph::from_raw(g) })
    }

    #[track_caller]
    pub(super) fn end_capture_raw(&self) -> Result<sys::CUgraph> {
        let _cur = self.context().enter()?;
        let mut g = ptr::null_mut();
        // SAFETY: the stream is alive; writes one graph handle.
        let r = call!(unsafe { sys::cuStreamEndCapture(self.as_raw(), &mut g) });
        let code = r
            .as_ref()
            .map_or_else(|e| e.code(), |()| Some(ErrorCode::SUCCESS));
        // The driver may end the capture also when refusing the call from another thread
        // (driver 580 does): count it ended only once the stream says it is no longer
        // capturing, so that the count never falls below the captures in progress.
        if code != Some(ErrorCode::STREAM_CAPTURE_WRONG_THREAD)
            || self.capture_status_raw().ok() == Some(sys::CU_STREAM_CAPTURE_STATUS_NONE)
        {
            crate::stream::capture_ended();
        }
        match code {
            Some(ErrorCode::SUCCESS) => Ok(g),
            Some(ErrorCode::STREAM_CAPTURE_INVALIDATED) => {
                if !g.is_null() {
                    // SAFETY: a graph handed back with the error is ours to destroy.
                    drop(unsafe { Graph::from_raw(g) });
                }
                Err(Error::CaptureInvalidated {
                    location: std::panic::Location::caller(),
                })
            }
            Some(ErrorCode::STREAM_CAPTURE_WRONG_THREAD) => Err(Error::CaptureWrongThread {
                location: std::panic::Location::caller(),
            }),
            _ => r.map(|()| g),
        }
    }

    /// Captures the work `f` queues on this stream into a graph: begins the capture in
    /// `mode`, runs `f`, and always ends the capture, also when `f` returns an error (which
    /// is returned, the graph discarded) or panics (the panic goes on after the capture ended).
    ///
    /// ```no_run
    /// # use cuda_driver::{types::StreamCaptureMode as CaptureMode, graph::Graph, types::GraphInstantiateFlags, Stream, types::StreamFlags};
    /// # fn f(stream: &Stream) -> cuda_driver::Result<()> {
    /// // SAFETY: the captured work uses no device memory.
    /// let graph = unsafe {
    ///     stream.capture(CaptureMode::THREAD_LOCAL, |s| s.launch_host_fn_repeatable(|| ()))?
    /// };
    /// let exec = graph.instantiate(GraphInstantiateFlags::empty())?;
    /// exec.launch(stream)?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Safety
    /// As for [`begin_capture`](Self::begin_capture).
    #[wraps(cuStreamBeginCapture_v2, cuStreamEndCapture)]
    #[track_caller]
    pub unsafe fn capture<F>(&self, mode: CaptureMode, f: F) -> Result<Graph>
    where
        F: FnOnce(&Stream) -> Result<()>,
    {
        // SAFETY: the caller's guarantees.
        unsafe { self.begin_capture(mode)? };
        let r = catch_unwind(AssertUnwindSafe(|| f(self)));
        let end = self.end_capture();
        match r {
            Err(panic) => {
                drop(end);
                resume_unwind(panic)
            }
            Ok(Err(e)) => Err(e),
            Ok(Ok(())) => end,
        }
    }

    /// Captures the work `f` queues on this stream into the existing `graph`, after the
    /// nodes `dependencies` of it (none: the captured work starts at the graph's roots), in
    /// `mode`. The capture always ends, also when `f` fails (the error is returned) or panics;
    /// the nodes it added stay in `graph`.
    ///
    /// # Safety
    /// As for [`begin_capture`](Self::begin_capture).
    #[wraps(cuStreamBeginCaptureToGraph, cuStreamEndCapture)]
    #[track_caller]
    pub unsafe fn capture_into<F>(
        &self,
        graph: &Graph,
        dependencies: &[GraphNode<'_>],
        mode: CaptureMode,
        f: F,
    ) -> Result<()>
    where
        F: FnOnce(&Stream) -> Result<()>,
    {
        // SAFETY: the caller's guarantees.
        unsafe { self.begin_capture_into(graph, dependencies, mode)? };
        let r = catch_unwind(AssertUnwindSafe(|| f(self)));
        // The graph handed back is `graph` itself, still owned by the caller.
        let end = self.end_capture_raw().map(|_| ());
        match r {
            Err(panic) => {
                drop(end);
                resume_unwind(panic)
            }
            Ok(Err(e)) => Err(e),
            Ok(Ok(())) => end,
        }
    }

    /// Begins a capture into `graph` after `dependencies`.
    ///
    /// # Safety
    /// As for [`begin_capture`](Self::begin_capture).
    #[track_caller]
    pub(super) unsafe fn begin_capture_into(
        &self,
        graph: &Graph,
        dependencies: &[GraphNode<'_>],
        mode: CaptureMode,
    ) -> Result<()> {
        let _cur = self.context().enter()?;
        let deps = super::raw_deps(graph, dependencies)?;
        // Captured nodes (memory nodes among them) reach the graph outside the crate's node
        // calls: its memory nodes are read at instantiation.
        graph.book.lock().inexact = true;
        call!(
            // SAFETY: the stream and the graph are alive; `deps` holds `deps.len()` nodes of
            // the graph; no edge data (null: default edges).
            unsafe {
                newer::cuStreamBeginCaptureToGraph()?(
                    self.as_raw(),
                    graph.as_raw(),
                    deps.as_ptr(),
                    ptr::null(),
                    deps.len(),
                    mode.as_raw(),
                )
            },
        )?;
        crate::stream::capture_begun();
        Ok(())
    }

    /// Whether the stream is capturing, and whether that capture is still valid.
    #[wraps(cuStreamIsCapturing)]
    #[track_caller]
    pub fn capture_status(&self) -> Result<CaptureStatus> {
        let _cur = self.context().enter()?;
        Ok(CaptureStatus::from_raw(self.capture_status_raw()?))
    }

    /// The stream's capture state.
    #[wraps(cuStreamGetCaptureInfo)]
    #[track_caller]
    pub fn capture_info(&self) -> Result<CaptureInfo> {
        let _cur = self.context().enter()?;
        let mut status = sys::CU_STREAM_CAPTURE_STATUS_NONE;
        let (mut id, mut graph, mut deps, mut n) = (0, ptr::null_mut(), ptr::null(), 0);
        call!(
            // SAFETY: the stream is alive; writes the outputs.
            unsafe {
                newer::cuStreamGetCaptureInfo_v2()?(
                    self.as_raw(),
                    &mut status,
                    &mut id,
                    &mut graph,
                    &mut deps,
                    &mut n,
                )
            },
        )?;
        Ok(CaptureInfo {
            status: CaptureStatus::from_raw(status),
            id,
            graph,
            dependency_count: n,
        })
    }

    /// Changes the set of nodes the next captured operation on this stream depends on:
    /// adds `nodes` to it, or (`replace`) makes it `nodes`. The nodes are nodes of the graph
    /// being captured (see [`CaptureInfo::graph`]);
    /// [`Capture::set_dependencies`](super::Capture::set_dependencies) checks that they are,
    /// and [`Capture::dependencies`](super::Capture::dependencies) reads the set.
    #[wraps(cuStreamUpdateCaptureDependencies)]
    #[track_caller]
    pub fn update_capture_dependencies(
        &self,
        nodes: &[GraphNode<'_>],
        replace: bool,
    ) -> Result<()> {
        let _cur = self.context().enter()?;
        let mut raw: Vec<_> = nodes.iter().map(|n| n.as_raw()).collect();
        let flags = if replace {
            StreamUpdateCaptureDependenciesFlags::SET_CAPTURE_DEPENDENCIES
        } else {
            StreamUpdateCaptureDependenciesFlags::ADD_CAPTURE_DEPENDENCIES
        };
        call!(
            // SAFETY: the stream is alive; `raw` holds `len` nodes.
            unsafe {
                newer::cuStreamUpdateCaptureDependencies_v1()?(
                    self.as_raw(),
                    raw.as_mut_ptr(),
                    raw.len(),
                    flags.as_raw(),
                )
            },
        )
    }
}

/// Sets the calling thread's capture mode to `mode` and returns the previous one: what this
/// thread may call while captures run (see [`Stream::begin_capture`]).
#[wraps(cuThreadExchangeStreamCaptureMode)]
#[track_caller]
pub fn exchange_thread_capture_mode(mode: CaptureMode) -> Result<CaptureMode> {
    crate::init()?;
    let mut m = mode.as_raw();
    call!(
        // SAFETY: reads and writes one enum value.
        unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut m) },
    )?;
    Ok(CaptureMode::from_raw(m))
}
