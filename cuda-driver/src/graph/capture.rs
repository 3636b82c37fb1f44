//! Stream capture: recording the work queued on streams into a [`Graph`], and a capture in
//! progress lent to a closure ([`Capture`], [`Stream::capture_with`]) with its graph and its
//! dependency nodes.

use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use super::{raw_deps, Graph, GraphNode};
use crate::entry_point::newer;
use crate::error::graph::GraphError;
use crate::error::{Error, Result};
use crate::handle::{Handle, OwnedHandle};
use crate::stream::{RawCaptureInfo, Stream};
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
    /// valid while the capture runs, is [`Capture::graph`](Capture::graph) in
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
    /// [`GraphError::CaptureInvalidated`] when an operation invalidated it (a synchronizing call
    /// during a global capture, or a context synchronization on any thread, such as
    /// [`Context::synchronize`](crate::Context::synchronize)), [`GraphError::CaptureWrongThread`]
    /// when it was begun on another thread in the global or thread-local mode. After that
    /// refusal the driver may have ended the capture and discarded its graph (driver 580
    /// does): [`capture_status`](Self::capture_status) tells whether it goes on.
    #[wraps(cuStreamEndCapture)]
    #[track_caller]
    pub fn end_capture(&self) -> Result<Graph> {
        let _cur = self.context().enter()?;
        check_not_scoped(self)?;
        let g = self.end_capture_raw()?;
        // SAFETY: the graph the capture made, owned by the caller now.
        Ok(unsafe { Graph::from_raw(g, ()) })
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
                    drop(unsafe { Graph::from_raw(g, ()) });
                }
                Err(Error::Graph(GraphError::CaptureInvalidated {
                    location: std::panic::Location::caller(),
                }))
            }
            Some(ErrorCode::STREAM_CAPTURE_WRONG_THREAD) => {
                Err(Error::Graph(GraphError::CaptureWrongThread {
                    location: std::panic::Location::caller(),
                }))
            }
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
        let raw = self.capture_info_raw()?;
        Ok(CaptureInfo {
            status: CaptureStatus::from_raw(raw.status),
            id: raw.id,
            graph: raw.graph,
            dependency_count: raw.dependency_count,
        })
    }

    /// Changes the set of nodes the next captured operation on this stream depends on:
    /// adds `nodes` to it, or (`replace`) makes it `nodes`. The nodes are nodes of the graph
    /// being captured (see [`CaptureInfo::graph`]);
    /// [`Capture::set_dependencies`](Capture::set_dependencies) checks that they are,
    /// and [`Capture::dependencies`](Capture::dependencies) reads the set.
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

/// Ids of the captures that a [`Capture`] scope runs: [`Stream::end_capture`] refuses them.
static SCOPED: Mutex<Vec<u64>> = Mutex::new(Vec::new());
/// How many ids `SCOPED` holds (a lock-free "none" for `end_capture`).
static SCOPED_COUNT: AtomicUsize = AtomicUsize::new(0);

fn scoped() -> std::sync::MutexGuard<'static, Vec<u64>> {
    SCOPED.lock().unwrap_or_else(|p| p.into_inner())
}

/// Refuses to end capture `id` when a [`Capture`] scope runs it (its graph is lent out).
#[track_caller]
pub(crate) fn check_not_scoped(stream: &Stream) -> Result<()> {
    if SCOPED_COUNT.load(Ordering::Acquire) == 0 {
        return Ok(());
    }
    let id = match stream.capture_info() {
        Ok(info) => info.id,
        Err(_) => return Ok(()),
    };
    if id != 0 && scoped().contains(&id) {
        return Err(Error::InvalidStream {
            what: "Stream::end_capture",
            reason: "the capture was begun by Stream::capture_with or capture_into_with, whose \
                     closure holds its graph: it ends when that closure returns",
        });
    }
    Ok(())
}

/// Registers a scoped capture for as long as it lives.
struct ScopedId(u64);

impl ScopedId {
    fn new(id: u64) -> ScopedId {
        scoped().push(id);
        SCOPED_COUNT.fetch_add(1, Ordering::Release);
        ScopedId(id)
    }
}

impl Drop for ScopedId {
    fn drop(&mut self) {
        let mut s = scoped();
        if let Some(i) = s.iter().position(|&x| x == self.0) {
            s.swap_remove(i);
            SCOPED_COUNT.fetch_sub(1, Ordering::Release);
        }
    }
}

/// A stream capture in progress, lent to the closure of [`Stream::capture_with`] or
/// [`Stream::capture_into_with`]: the stream, the graph being captured
/// ([`graph`](Self::graph), the graph `cuStreamGetCaptureInfo` names), and the nodes the next
/// captured operation will depend on ([`dependencies`](Self::dependencies),
/// [`set_dependencies`](Self::set_dependencies)).
///
/// Nodes may be added to the graph during the capture (a conditional node whose body is
/// filled by another capture, as the `graphConditionalNodes` sample's "captured while" does),
/// and made the capture's dependencies so that the captured work goes on after them.
///
/// The capture's graph is valid until the capture ends, which happens when the closure
/// returns: the `Capture` and everything borrowed from it (the graph, its nodes) cannot
/// leave the closure, and [`Stream::end_capture`] refuses to end this capture meanwhile
/// ([`Error::InvalidStream`]), also from another thread (a relaxed-mode capture). Not `Send`:
/// nodes are added to the graph from the capturing thread only.
///
/// ```compile_fail,E0521
/// # fn f(stream: &cuda_driver::Stream) -> cuda_driver::Result<()> {
/// let mut kept = None;
/// // SAFETY: nothing captured.
/// let _graph = unsafe {
///     stream.capture_with(cuda_driver::types::StreamCaptureMode::THREAD_LOCAL, |cap| {
///         kept = Some(cap.graph()); // the graph cannot outlive the capture
///         Ok(())
///     })?
/// };
/// # Ok(()) }
/// ```
#[wraps(cuStreamGetCaptureInfo, cuStreamUpdateCaptureDependencies)]
pub struct Capture<'c> {
    stream: &'c Stream,
    graph: &'c Graph,
    id: u64,
    _not_send: PhantomData<*const ()>,
}

impl std::fmt::Debug for Capture<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capture")
            .field("stream", &self.stream.as_raw())
            .field("graph", &self.graph.as_raw())
            .field("id", &self.id)
            .finish()
    }
}

impl<'c> Capture<'c> {
    /// The stream being captured (the capture's origin stream).
    #[inline]
    pub fn stream(&self) -> &'c Stream {
        self.stream
    }

    /// The graph being captured, to add nodes to during the capture (its keep-alives, such
    /// as kernels of kernel nodes, go to it and so to the captured graph).
    #[wraps(cuStreamGetCaptureInfo)]
    #[inline]
    pub fn graph(&self) -> &Graph {
        self.graph
    }

    /// The capture's id, unique in the process.
    #[inline]
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The nodes of the graph that the next operation captured on the stream will depend
    /// on (`cuStreamGetCaptureInfo`'s dependency array).
    #[wraps(cuStreamGetCaptureInfo)]
    #[track_caller]
    pub fn dependencies(&self) -> Result<Vec<GraphNode<'_>>> {
        let _cur = self.stream.context().enter()?;
        let RawCaptureInfo {
            status,
            graph,
            deps,
            dependency_count: n,
            ..
        } = self.stream.capture_info_raw()?;
        if status != sys::CU_STREAM_CAPTURE_STATUS_ACTIVE || graph != self.graph.raw {
            return Err(Error::InvalidStream {
                what: "Capture::dependencies",
                reason: "the capture was invalidated",
            });
        }
        if n == 0 || deps.is_null() {
            return Ok(Vec::new());
        }
        // SAFETY: the driver's array of `n` nodes of the captured graph, valid until the next
        // call on the stream; copied at once.
        let raw = unsafe { std::slice::from_raw_parts(deps, n) }.to_vec();
        Ok(self.graph.wrap_nodes(raw))
    }

    /// Makes `nodes`, nodes of the captured graph ([`GraphError::Mismatch`] otherwise), the
    /// set the next captured operation depends on (`CU_STREAM_SET_CAPTURE_DEPENDENCIES`).
    #[wraps(cuStreamUpdateCaptureDependencies)]
    #[track_caller]
    pub fn set_dependencies(&self, nodes: &[GraphNode<'_>]) -> Result<()> {
        self.update(
            nodes,
            StreamUpdateCaptureDependenciesFlags::SET_CAPTURE_DEPENDENCIES,
        )
    }

    /// Adds `nodes`, nodes of the captured graph ([`GraphError::Mismatch`] otherwise), to the
    /// set the next captured operation depends on (`CU_STREAM_ADD_CAPTURE_DEPENDENCIES`).
    #[wraps(cuStreamUpdateCaptureDependencies)]
    #[track_caller]
    pub fn add_dependencies(&self, nodes: &[GraphNode<'_>]) -> Result<()> {
        self.update(
            nodes,
            StreamUpdateCaptureDependenciesFlags::ADD_CAPTURE_DEPENDENCIES,
        )
    }

    #[track_caller]
    fn update(
        &self,
        nodes: &[GraphNode<'_>],
        flags: StreamUpdateCaptureDependenciesFlags,
    ) -> Result<()> {
        let mut raw = raw_deps(self.graph, nodes)?;
        let _cur = self.stream.context().enter()?;
        call!(
            // SAFETY: the stream is alive and capturing into the graph `raw`'s nodes belong to
            // (checked); `raw` holds `len` nodes.
            unsafe {
                newer::cuStreamUpdateCaptureDependencies_v1()?(
                    self.stream.as_raw(),
                    raw.as_mut_ptr(),
                    raw.len(),
                    flags.as_raw(),
                )
            },
        )
    }
}

/// What `f` did: returned its result, or panicked.
type Outcome = std::thread::Result<Result<()>>;

/// Runs `f` on a capture begun on `stream` into `graph`, then ends the capture: the result of
/// the end and what `f` did.
#[track_caller]
fn run_scoped<F>(stream: &Stream, graph: &Graph, f: F) -> (Result<sys::CUgraph>, Outcome)
where
    F: FnOnce(&Capture<'_>) -> Result<()>,
{
    let id = match stream.capture_info() {
        Ok(info) => info.id,
        Err(e) => return (stream.end_capture_raw(), Ok(Err(e))),
    };
    let registered = ScopedId::new(id);
    let cap = Capture {
        stream,
        graph,
        id,
        _not_send: PhantomData,
    };
    let r = catch_unwind(AssertUnwindSafe(|| f(&cap)));
    drop(registered);
    (stream.end_capture_raw(), r)
}

/// `f`'s result; a panic goes on.
fn settle(r: Outcome) -> Result<()> {
    match r {
        Ok(r) => r,
        Err(panic) => resume_unwind(panic),
    }
}

impl Stream {
    /// Captures the work `f` queues on this stream into a graph, as
    /// [`capture`](Self::capture) does, lending `f` the capture itself ([`Capture`]): the graph
    /// being captured, to add nodes to, and the capture's dependency nodes, to read and
    /// replace. The capture always ends when `f` returns (its error is returned, the graph
    /// discarded) or panics (the panic goes on after the end).
    ///
    /// Conditional nodes added to the captured graph during the capture are found again in
    /// the returned graph ([`GraphNode::as_conditional`]).
    ///
    /// # Safety
    /// As for [`begin_capture`](Self::begin_capture).
    #[wraps(cuStreamBeginCapture_v2, cuStreamGetCaptureInfo, cuStreamEndCapture)]
    #[track_caller]
    pub unsafe fn capture_with<F>(&self, mode: CaptureMode, f: F) -> Result<Graph>
    where
        F: FnOnce(&Capture<'_>) -> Result<()>,
    {
        // SAFETY: the caller's guarantees.
        unsafe { self.begin_capture(mode)? };
        let raw = match self.capture_info() {
            Ok(info) => info.graph,
            Err(e) => {
                let _ = self.end_capture_raw();
                return Err(e);
            }
        };
        // The capture owns the graph until it ends; this value is made the owner only then.
        // SAFETY: the capture's live graph; this value never destroys it unless the end
        // hands it over (below).
        let graph = ManuallyDrop::new(unsafe { Graph::from_raw(raw, ()) });
        let (end, r) = run_scoped(self, &graph, f);
        let graph = ManuallyDrop::into_inner(graph);
        let owned = match end {
            Ok(g) if g == raw => Ok(graph),
            Ok(g) => {
                // The driver handed over another graph (never seen): own that one instead.
                let _ = graph.into_raw();
                // SAFETY: handed over by cuStreamEndCapture, ours now.
                Ok(unsafe { Graph::from_raw(g, ()) })
            }
            Err(e) => {
                // The end destroyed the graph (an invalidated capture) or kept it: not ours.
                let _ = graph.into_raw();
                Err(e)
            }
        };
        // A panic or an error of `f` discards the graph (destroyed here).
        settle(r)?;
        owned
    }

    /// Captures the work `f` queues on this stream into the existing `graph`, as
    /// [`capture_into`](Self::capture_into) does, lending `f` the capture ([`Capture`],
    /// whose graph is `graph`).
    ///
    /// # Safety
    /// As for [`begin_capture`](Self::begin_capture).
    #[wraps(
        cuStreamBeginCaptureToGraph,
        cuStreamGetCaptureInfo,
        cuStreamEndCapture
    )]
    #[track_caller]
    pub unsafe fn capture_into_with<F>(
        &self,
        graph: &Graph,
        dependencies: &[GraphNode<'_>],
        mode: CaptureMode,
        f: F,
    ) -> Result<()>
    where
        F: FnOnce(&Capture<'_>) -> Result<()>,
    {
        // SAFETY: the caller's guarantees.
        unsafe { self.begin_capture_into(graph, dependencies, mode)? };
        let (end, r) = run_scoped(self, graph, f);
        settle(r)?;
        end.map(|_| ())
    }
}
