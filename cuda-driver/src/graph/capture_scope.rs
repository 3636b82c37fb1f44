//! A stream capture in progress, with its graph and its dependency nodes: [`Capture`],
//! handed to the closure of [`Stream::capture_with`] and [`Stream::capture_into_with`].

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
use crate::error::{Error, Result};
use crate::stream::Stream;
use crate::types::StreamCaptureMode as CaptureMode;
use crate::types::StreamUpdateCaptureDependenciesFlags;

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
        let mut status = sys::CU_STREAM_CAPTURE_STATUS_NONE;
        let (mut id, mut graph, mut deps, mut n) = (0, ptr::null_mut(), ptr::null(), 0);
        call!(
            // SAFETY: the stream is alive; writes the outputs.
            unsafe {
                newer::cuStreamGetCaptureInfo_v2()?(
                    self.stream.as_raw(),
                    &mut status,
                    &mut id,
                    &mut graph,
                    &mut deps,
                    &mut n,
                )
            },
        )?;
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

    /// Makes `nodes`, nodes of the captured graph ([`Error::GraphMismatch`] otherwise), the
    /// set the next captured operation depends on (`CU_STREAM_SET_CAPTURE_DEPENDENCIES`).
    #[wraps(cuStreamUpdateCaptureDependencies)]
    #[track_caller]
    pub fn set_dependencies(&self, nodes: &[GraphNode<'_>]) -> Result<()> {
        self.update(
            nodes,
            StreamUpdateCaptureDependenciesFlags::SET_CAPTURE_DEPENDENCIES,
        )
    }

    /// Adds `nodes`, nodes of the captured graph ([`Error::GraphMismatch`] otherwise), to the
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
        let graph = ManuallyDrop::new(unsafe { Graph::from_raw(raw) });
        let (end, r) = run_scoped(self, &graph, f);
        let graph = ManuallyDrop::into_inner(graph);
        let owned = match end {
            Ok(g) if g == raw => Ok(graph),
            Ok(g) => {
                // The driver handed over another graph (never seen): own that one instead.
                let _ = graph.into_raw();
                // SAFETY: handed over by cuStreamEndCapture, ours now.
                Ok(unsafe { Graph::from_raw(g) })
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
