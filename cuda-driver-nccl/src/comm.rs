//! Communicators: creation from a unique id (one rank per process, or several devices in one
//! process), split, finalize, destroy, abort, and waiting for their work with a timeout.

use std::cell::Cell;
use std::ffi::c_int;
use std::fmt;
use std::marker::PhantomData;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::time::{Duration, Instant};

use cuda_driver::handle::Handle;
use cuda_driver::{Context, Device, Stream};

use crate::config::CommConfig;
use crate::error::{report_drop_error, Error, NcclResult, Progress, Result};
use crate::library::check;
use crate::library::Nccl;
use crate::scope::{self, Scope};
use crate::sys;

/// The id every rank of a new communicator passes to [`Communicator::init_rank`]: created
/// once (`ncclGetUniqueId`, by one rank), then distributed by the program (the bytes, over
/// any channel: [`rendezvous`](crate::rendezvous) does it over TCP).
///
/// It holds the address rank 0's NCCL listens on for the others; it is not secret, but a
/// rank given bytes that are not an id fails to connect (an NCCL error), nothing worse.
#[derive(Clone, Copy)]
#[doc(alias = "ncclUniqueId")]
pub struct UniqueId(sys::ncclUniqueId);

impl UniqueId {
    /// The size of an id in bytes (`NCCL_UNIQUE_ID_BYTES`).
    pub const BYTES: usize = sys::NCCL_UNIQUE_ID_BYTES as usize;

    /// A new id (`ncclGetUniqueId` of the process's library, [`Nccl::get`]).
    #[doc(alias = "ncclGetUniqueId")]
    #[track_caller]
    pub fn new() -> Result<UniqueId> {
        Nccl::get()?.unique_id()
    }

    /// The id whose bytes are `bytes` (as another rank's [`to_bytes`](Self::to_bytes) gave).
    pub fn from_bytes(bytes: [u8; UniqueId::BYTES]) -> UniqueId {
        let mut id = sys::ncclUniqueId::default();
        for (d, s) in id.internal.iter_mut().zip(bytes) {
            *d = s as _;
        }
        UniqueId(id)
    }

    /// The id's bytes, to send to the other ranks.
    pub fn to_bytes(&self) -> [u8; UniqueId::BYTES] {
        let mut out = [0u8; UniqueId::BYTES];
        for (d, s) in out.iter_mut().zip(self.0.internal) {
            *d = s as u8;
        }
        out
    }

    pub(crate) fn from_raw(raw: sys::ncclUniqueId) -> UniqueId {
        UniqueId(raw)
    }

    /// The raw id.
    pub fn as_raw(&self) -> &sys::ncclUniqueId {
        &self.0
    }
}

impl fmt::Debug for UniqueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.to_bytes();
        write!(f, "UniqueId(")?;
        for x in &b[..8] {
            write!(f, "{x:02x}")?;
        }
        write!(f, "..)")
    }
}

impl PartialEq for UniqueId {
    fn eq(&self, other: &Self) -> bool {
        self.to_bytes() == other.to_bytes()
    }
}

impl Eq for UniqueId {}

/// An NCCL communicator (`ncclComm_t`): one rank of a group of ranks, each on its own GPU,
/// that run collectives together. Owned: destroyed when dropped (see [`Drop`](#impl-Drop-for-Communicator)).
///
/// It lives in its device's primary context: its streams and buffers must be of that context
/// ([`Error::NotPrimaryContext`] at creation, `ContextMismatch` at use). Its operations are
/// queued on a [`Stream`] and follow `cuda-driver`'s stream-order rules (see the crate docs).
///
/// `Send` but not `Sync`: NCCL allows a communicator to be used from any thread, but not
/// from two at once.
///
/// ```compile_fail,E0277
/// fn shared_between_threads<T: Sync>() {}
/// shared_between_threads::<cuda_driver_nccl::Communicator>();
/// ```
#[doc(alias = "ncclComm_t")]
pub struct Communicator {
    /// Null once aborted (or consumed by `finalize`/`destroy`).
    raw: Cell<sys::ncclComm_t>,
    /// Where NCCL wrote the handle; freed once NCCL destroyed or aborted the communicator.
    slot: Cell<Option<HandleSlot>>,
    nccl: &'static Nccl,
    ctx: Context,
    rank: usize,
    size: usize,
    /// `Some`: created non-blocking, every wait bounded by this.
    timeout: Option<Duration>,
    _not_sync: PhantomData<Cell<()>>,
}

// SAFETY: NCCL allows a communicator to be used from any host thread, one thread at a time
// (it is !Sync through the Cell); the context is Send + Sync, the library is never unloaded, and
// the handle's slot is heap memory written by NCCL atomically and freed once, by the owner.
unsafe impl Send for Communicator {}

impl fmt::Debug for Communicator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Communicator")
            .field("raw", &self.raw.get())
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("device", &self.ctx.device())
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// The checks every creation makes: no group open, a primary context.
fn check_creation(what: &'static str, ctx: &Context) -> Result<()> {
    if scope::is_open() {
        return Err(Error::InGroup { what });
    }
    if !ctx.is_primary() {
        return Err(Error::NotPrimaryContext {
            what,
            context: ctx.as_raw() as usize,
        });
    }
    Ok(())
}

/// `n` as a C `int` for NCCL, or [`Error::InvalidArgument`].
pub(crate) fn c_int_arg(what: &'static str, name: &str, n: usize) -> Result<c_int> {
    c_int::try_from(n)
        .map_err(|_| Error::InvalidArgument(format!("{what}: {name} {n} does not fit NCCL's int")))
}

/// Where NCCL writes a new communicator's handle. NCCL's initialisation thread writes it
/// again at its very end, which for a non-blocking creation (and a split) comes after the
/// creating call returned: so the slot is on the heap, and freed only once NCCL has joined that
/// thread (`ncclCommDestroy` and `ncclCommAbort` wait for it first). Wherever that is not
/// known (a failed creation, a split that gave no communicator), it is leaked: one pointer.
/// No `Drop`: dropping leaks it.
struct HandleSlot(NonNull<AtomicPtr<sys::ncclComm>>);

impl HandleSlot {
    fn new() -> HandleSlot {
        HandleSlot(NonNull::from(Box::leak(Box::new(AtomicPtr::new(
            ptr::null_mut(),
        )))))
    }

    /// The `ncclComm_t*` NCCL writes through (`AtomicPtr<T>` has the layout of `*mut T`).
    fn out_ptr(&self) -> *mut sys::ncclComm_t {
        self.0.as_ptr().cast()
    }

    /// The handle NCCL wrote so far (null: none yet).
    fn load(&self) -> sys::ncclComm_t {
        // SAFETY: the slot is allocated until `free`, which takes `self`; NCCL writes it with
        // an atomic release store.
        unsafe { self.0.as_ref() }.load(Ordering::Acquire)
    }

    /// Waits until NCCL wrote a handle, up to `timeout` from `start` (forever without one);
    /// null when it did not.
    fn wait_written(&self, timeout: Option<Duration>, start: Instant) -> sys::ncclComm_t {
        let mut backoff = Backoff::new();
        loop {
            let raw = self.load();
            if !raw.is_null() || timeout.is_some_and(|t| start.elapsed() >= t) {
                return raw;
            }
            backoff.wait();
        }
    }

    /// Frees the slot.
    ///
    /// # Safety
    /// No NCCL thread writes it any more: NCCL destroyed or aborted the communicator.
    unsafe fn free(self) {
        // SAFETY: allocated by `new` as a Box, freed once (this takes `self`); the caller
        // guarantees nothing writes it any more.
        drop(unsafe { Box::from_raw(self.0.as_ptr()) });
    }
}

impl Communicator {
    /// Creates this process's rank `rank` of a communicator of `size` ranks, on the device of
    /// `ctx` (its primary context). Every rank calls it with the same `id` (created by one of
    /// them and distributed, see [`UniqueId`] and [`rendezvous`](crate::rendezvous)) and
    /// `size`, each with its own `rank` and device; it returns when all have joined (or, with
    /// a [timeout](CommConfig::timeout), fails after it).
    ///
    /// Calls `ncclCommInitRankConfig`
    /// ([NCCL docs](https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/api/comms.html#ncclcomminitrankconfig)).
    #[doc(alias = "ncclCommInitRankConfig")]
    #[doc(alias = "ncclCommInitRank")]
    #[track_caller]
    pub fn init_rank(
        ctx: &Context,
        size: usize,
        rank: usize,
        id: &UniqueId,
        config: &CommConfig,
    ) -> Result<Communicator> {
        const WHAT: &str = "ncclCommInitRankConfig";
        check_creation(WHAT, ctx)?;
        if size == 0 || rank >= size {
            return Err(Error::RankOutOfRange {
                what: WHAT,
                rank,
                size,
            });
        }
        let c_size = c_int_arg(WHAT, "size", size)?;
        let c_rank = c_int_arg(WHAT, "rank", rank)?;
        let nccl = Nccl::get()?;
        let f = nccl.function(nccl.functions().ncclCommInitRankConfig, WHAT)?;
        let mut raw_config = config.to_raw()?;
        let slot = HandleSlot::new();
        let start = Instant::now();
        let code = {
            let _scope = Scope::enter(ctx)?;
            // SAFETY: writes one ncclComm_t into the slot, which outlives every write (see
            // `HandleSlot`); the id is passed by value, the config is a
            // NCCL_CONFIG_INITIALIZER of the bindings' header (read during the call); the
            // primary context of the device is current.
            unsafe {
                f(
                    slot.out_ptr(),
                    c_size,
                    *id.as_raw(),
                    c_rank,
                    &mut raw_config,
                )
            }
        };
        Communicator::created(
            nccl,
            slot,
            code,
            WHAT,
            ctx,
            rank,
            size,
            config.timeout,
            start,
        )
    }

    /// The communicator of a creation call that returned `code` and writes `slot`: owned at
    /// once, and waited for when the call goes on in the background. A failed blocking
    /// creation's handle is not touched (NCCL undoes it); a failed non-blocking one is
    /// aborted, as NCCL documents.
    #[allow(clippy::too_many_arguments)]
    #[track_caller]
    fn created(
        nccl: &'static Nccl,
        slot: HandleSlot,
        code: sys::ncclResult_t,
        what: &'static str,
        ctx: &Context,
        rank: usize,
        size: usize,
        timeout: Option<Duration>,
        start: Instant,
    ) -> Result<Communicator> {
        let progress = check(nccl, code, what);
        // A split in the background writes the handle only when it is done.
        let raw = match progress {
            Ok(Progress::InProgress) => slot.wait_written(timeout, start),
            // A non-blocking split may also answer ncclSuccess before it writes the handle
            // (NCCL 2.28.9 with two ranks on two H100s: GPU test
            // multi_process::two_processes_with_timeouts_run_every_collective).
            Ok(Progress::Done) if timeout.is_some() && slot.load().is_null() => {
                slot.wait_written(timeout, start)
            }
            _ => slot.load(),
        };
        let comm = (!raw.is_null())
            .then(|| Communicator::owning(raw, slot, nccl, ctx, rank, size, timeout));
        match (progress, comm) {
            (Ok(Progress::Done), Some(comm)) if comm.timeout.is_none() => Ok(comm),
            (Ok(_), Some(comm)) => {
                comm.wait_ready(what, start)?;
                Ok(comm)
            }
            (Ok(Progress::InProgress), None) => match timeout {
                Some(timeout) => Err(Error::Timeout { what, timeout }),
                None => Err(Error::InvalidArgument(format!(
                    "{what} returned no communicator"
                ))),
            },
            (Ok(Progress::Done), None) => Err(Error::InvalidArgument(format!(
                "{what} succeeded but returned no communicator"
            ))),
            (Err(e), Some(comm)) => {
                if comm.timeout.is_some() {
                    comm.abort_quietly();
                } else {
                    // Not ours to free: a failed blocking creation is undone by NCCL.
                    comm.forget_handle();
                }
                Err(e)
            }
            (Err(e), None) => Err(e),
        }
    }

    /// Creates a communicator of one rank per context in one process, rank `i` on the
    /// device of `ctxs[i]` (each a primary context, of distinct devices), from a new unique
    /// id: `ncclCommInitRankConfig` for every device inside one group, as
    /// `ncclCommInitAll` does, with `config` for each. Collectives on them must then be
    /// queued together, in a [`Group`](crate::Group).
    ///
    /// When the creation fails, a communicator NCCL created already is aborted if
    /// non-blocking and left to NCCL (which undoes a failed blocking creation) otherwise.
    #[doc(alias = "ncclCommInitAll")]
    #[track_caller]
    pub fn init_all(ctxs: &[Context], config: &CommConfig) -> Result<Vec<Communicator>> {
        const WHAT: &str = "ncclCommInitAll";
        if ctxs.is_empty() {
            return Err(Error::InvalidArgument(format!("{WHAT}: no context")));
        }
        for (i, ctx) in ctxs.iter().enumerate() {
            check_creation(WHAT, ctx)?;
            if ctxs[..i].iter().any(|c| c.device() == ctx.device()) {
                return Err(Error::InvalidArgument(format!(
                    "{WHAT}: device {} appears twice; NCCL needs one rank per device",
                    ctx.device().as_raw()
                )));
            }
        }
        let size = ctxs.len();
        let c_size = c_int_arg(WHAT, "size", size)?;
        let nccl = Nccl::get()?;
        let init = nccl.function(
            nccl.functions().ncclCommInitRankConfig,
            "ncclCommInitRankConfig",
        )?;
        let start_group = nccl.function(nccl.functions().ncclGroupStart, "ncclGroupStart")?;
        let end_group = nccl.function(nccl.functions().ncclGroupEnd, "ncclGroupEnd")?;
        let id = nccl.unique_id()?;
        let mut raw_configs = vec![config.to_raw()?; size];
        let slots: Vec<HandleSlot> = (0..size).map(|_| HandleSlot::new()).collect();
        let start = Instant::now();
        // From here the group is always ended, whatever fails inside it.
        // SAFETY: no arguments; opens a group on this thread (none is open: checked above).
        check(nccl, unsafe { start_group() }, "ncclGroupStart")?;
        let mut first_error = None;
        for (i, ctx) in ctxs.iter().enumerate() {
            let code = match Scope::enter(ctx) {
                // SAFETY: as in `init_rank`, for rank `i` (fits an int: `i < size`); the
                // config is an element of a vector that outlives the group.
                Ok(_scope) => unsafe {
                    init(
                        slots[i].out_ptr(),
                        c_size,
                        *id.as_raw(),
                        i as c_int,
                        &mut raw_configs[i],
                    )
                },
                Err(e) => {
                    first_error.get_or_insert(e);
                    break;
                }
            };
            if let Err(e) = check(nccl, code, "ncclCommInitRankConfig") {
                first_error.get_or_insert(e);
                break;
            }
        }
        let end = {
            let scope = Scope::enter(&ctxs[0]);
            // SAFETY: ends the group opened above, on this thread; the handles and configs it
            // writes and reads outlive it.
            let code = unsafe { end_group() };
            drop(scope);
            check(nccl, code, "ncclGroupEnd")
        };
        let comms: Vec<Option<Communicator>> = slots
            .into_iter()
            .zip(ctxs)
            .enumerate()
            .map(|(rank, (slot, ctx))| {
                let raw = slot.load();
                (!raw.is_null())
                    .then(|| Communicator::owning(raw, slot, nccl, ctx, rank, size, config.timeout))
            })
            .collect();
        let failure = match (first_error, end) {
            (Some(e), _) | (None, Err(e)) => Some(e),
            (None, Ok(_)) => None,
        };
        if let Some(e) = failure {
            for comm in comms.into_iter().flatten() {
                if comm.timeout.is_some() {
                    comm.abort_quietly();
                } else {
                    comm.forget_handle();
                }
            }
            return Err(e);
        }
        let mut out = Vec::with_capacity(size);
        for comm in comms {
            let Some(comm) = comm else {
                return Err(Error::InvalidArgument(format!(
                    "{WHAT} succeeded but returned no communicator"
                )));
            };
            out.push(comm);
        }
        // A non-blocking creation goes on in the background: wait for every rank.
        for comm in &out {
            if let Err(e) = comm.wait_ready(WHAT, start) {
                for c in &out {
                    c.abort_quietly();
                }
                return Err(e);
            }
        }
        Ok(out)
    }

    /// Splits the communicator: the ranks that pass the same `color` form a new
    /// communicator, ordered by `key` (then by their rank here); a rank that passes `None`
    /// (`NCCL_SPLIT_NOCOLOR`) joins none and gets `None`. Every rank must call it. With
    /// `config` `None` the new communicator inherits this one's configuration (and timeout).
    ///
    /// Calls `ncclCommSplit`
    /// ([NCCL docs](https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/api/comms.html#ncclcommsplit)).
    #[doc(alias = "ncclCommSplit")]
    #[track_caller]
    pub fn split(
        &self,
        color: Option<u32>,
        key: i32,
        config: Option<&CommConfig>,
    ) -> Result<Option<Communicator>> {
        const WHAT: &str = "ncclCommSplit";
        let raw = self.ready(WHAT, false)?;
        let c_color = match color {
            None => sys::NCCL_SPLIT_NOCOLOR,
            Some(c) => c_int_arg(WHAT, "color", c as usize)?,
        };
        let f = self
            .nccl
            .function(self.nccl.functions().ncclCommSplit, WHAT)?;
        let mut raw_config = config.map(CommConfig::to_raw).transpose()?;
        let config_ptr = raw_config
            .as_mut()
            .map_or(ptr::null_mut(), |c| c as *mut sys::ncclConfig_t);
        let timeout = config.map_or(self.timeout, |c| c.timeout);
        let slot = HandleSlot::new();
        let start = Instant::now();
        let code = {
            let _scope = Scope::enter(&self.ctx)?;
            // SAFETY: the communicator is live (not aborted) and its context current; writes
            // one ncclComm_t into the slot, which outlives every write (see `HandleSlot`); the
            // config is null or a NCCL_CONFIG_INITIALIZER read during the call.
            unsafe { f(raw, c_color, key, slot.out_ptr(), config_ptr) }
        };
        if color.is_none() {
            // No communicator to free the slot with: it is leaked (NCCL may write it later).
            if check(self.nccl, code, WHAT)? == Progress::InProgress {
                self.wait_ready(WHAT, start)?;
            }
            return Ok(None);
        }
        // Rank and size of the new communicator are NCCL's to decide: asked once it is ready.
        let mut comm =
            Communicator::created(self.nccl, slot, code, WHAT, &self.ctx, 0, 1, timeout, start)?;
        (comm.rank, comm.size) = comm.query_rank_and_size()?;
        Ok(Some(comm))
    }

    /// A communicator owning `raw`, which NCCL wrote into `slot`.
    fn owning(
        raw: sys::ncclComm_t,
        slot: HandleSlot,
        nccl: &'static Nccl,
        ctx: &Context,
        rank: usize,
        size: usize,
        timeout: Option<Duration>,
    ) -> Communicator {
        Communicator {
            raw: Cell::new(raw),
            slot: Cell::new(Some(slot)),
            nccl,
            ctx: ctx.clone(),
            rank,
            size,
            timeout,
            _not_sync: PhantomData,
        }
    }

    /// Frees the handle's slot once NCCL destroyed or aborted the communicator (which joined
    /// its initialisation thread, the slot's last writer).
    fn free_slot(&self) {
        if let Some(slot) = self.slot.take() {
            // SAFETY: called after ncclCommDestroy or ncclCommAbort returned success for this
            // communicator: they wait for its initialisation thread first.
            unsafe { slot.free() };
        }
    }

    /// `ncclCommUserRank` and `ncclCommCount`.
    fn query_rank_and_size(&self) -> Result<(usize, usize)> {
        let raw = self.ready("ncclCommCount", true)?;
        let count = self
            .nccl
            .function(self.nccl.functions().ncclCommCount, "ncclCommCount")?;
        let user_rank = self
            .nccl
            .function(self.nccl.functions().ncclCommUserRank, "ncclCommUserRank")?;
        let (mut n, mut r) = (0, 0);
        // SAFETY: a live communicator; each writes one int.
        check(self.nccl, unsafe { count(raw, &mut n) }, "ncclCommCount")?;
        // SAFETY: as above.
        let code = unsafe { user_rank(raw, &mut r) };
        check(self.nccl, code, "ncclCommUserRank")?;
        match (usize::try_from(r), usize::try_from(n)) {
            (Ok(r), Ok(n)) if r < n => Ok((r, n)),
            _ => Err(Error::InvalidArgument(format!(
                "NCCL reported rank {r} of {n} ranks"
            ))),
        }
    }

    /// This process's rank in the communicator (`ncclCommUserRank`).
    #[doc(alias = "ncclCommUserRank")]
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks (`ncclCommCount`).
    #[doc(alias = "ncclCommCount")]
    pub fn size(&self) -> usize {
        self.size
    }

    /// The communicator's context: its device's primary context.
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// The communicator's device (`ncclCommCuDevice`).
    #[doc(alias = "ncclCommCuDevice")]
    pub fn device(&self) -> Device {
        self.ctx.device()
    }

    /// The timeout it was created with; `Some` for a non-blocking communicator.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// The library it belongs to.
    pub fn nccl(&self) -> &'static Nccl {
        self.nccl
    }

    /// The raw handle (null once aborted), for calls this crate does not wrap. The
    /// communicator keeps owning it.
    pub fn as_raw(&self) -> sys::ncclComm_t {
        self.raw.get()
    }

    /// Whether the communicator was aborted (by [`abort`](Self::abort), an asynchronous
    /// error or a timeout).
    pub fn is_aborted(&self) -> bool {
        self.raw.get().is_null()
    }

    /// The handle for an operation `what`, or why it cannot run: the communicator was
    /// aborted, or (unless the operation is `grouped`) a group is open on this thread.
    #[inline]
    pub(crate) fn ready(&self, what: &'static str, grouped: bool) -> Result<sys::ncclComm_t> {
        let raw = self.raw.get();
        if raw.is_null() {
            return Err(Error::Aborted { what });
        }
        if !grouped && scope::is_open() {
            return Err(Error::InGroup { what });
        }
        Ok(raw)
    }

    /// `Ok` when `stream` belongs to the communicator's context.
    #[inline]
    pub(crate) fn check_stream(&self, what: &'static str, stream: &Stream) -> Result<()> {
        if stream.context().as_raw() == self.ctx.as_raw() {
            Ok(())
        } else {
            Err(Error::Cuda(cuda_driver::Error::ContextMismatch {
                what,
                expected: self.ctx.as_raw() as usize,
                found: stream.context().as_raw() as usize,
            }))
        }
    }

    /// Makes one NCCL call `f` on the communicator with its context current; outside a
    /// group, waits for a non-blocking communicator to finish it (see [`CommConfig`]).
    #[inline]
    #[track_caller]
    pub(crate) fn call(
        &self,
        what: &'static str,
        raw: sys::ncclComm_t,
        grouped: bool,
        f: impl FnOnce(sys::ncclComm_t) -> sys::ncclResult_t,
    ) -> Result<()> {
        // Only a non-blocking communicator (one with a timeout) can answer "in progress" and
        // wait: a blocking one reads no clock (a clock read on every operation is measurable
        // next to a small all-reduce).
        let start = self.timeout.map(|_| Instant::now());
        let code = {
            // Inside a group NCCL may switch to other communicators' devices at the group's
            // end: the full check then.
            let _scope = if grouped {
                Scope::enter(&self.ctx)?
            } else {
                Scope::enter_for_op(&self.ctx)?
            };
            f(raw)
        };
        match check(self.nccl, code, what)? {
            Progress::Done => Ok(()),
            Progress::InProgress if grouped => Ok(()),
            Progress::InProgress => self.wait_ready(what, start.unwrap_or_else(Instant::now)),
        }
    }

    /// The communicator's state (`ncclCommGetAsyncError`): `SUCCESS`, `IN_PROGRESS` (a
    /// non-blocking call goes on) or the error it failed with.
    fn state(&self, what: &'static str) -> Result<NcclResult> {
        let raw = self.ready(what, true)?;
        let f = self.nccl.function(
            self.nccl.functions().ncclCommGetAsyncError,
            "ncclCommGetAsyncError",
        )?;
        let mut state = sys::ncclSuccess;
        // SAFETY: a live communicator; writes one ncclResult_t. No CUDA call: no context
        // needed.
        let code = unsafe { f(raw, &mut state) };
        check(self.nccl, code, "ncclCommGetAsyncError")?;
        Ok(NcclResult::from_raw(state))
    }

    /// The communicator's asynchronous error, if it has one (`ncclCommGetAsyncError`): a
    /// peer that died or whose connection broke, a failed kernel, a failed non-blocking call.
    /// A communicator with an error is aborted (as NCCL requires) and [`Error::Async`]
    /// returned.
    #[doc(alias = "ncclCommGetAsyncError")]
    #[track_caller]
    pub fn check_async_error(&self) -> Result<()> {
        const WHAT: &str = "ncclCommGetAsyncError";
        // An error aborts the communicator, which an open group may still refer to.
        self.ready(WHAT, false)?;
        match self.state(WHAT)? {
            NcclResult::SUCCESS | NcclResult::IN_PROGRESS => Ok(()),
            code => Err(self.failed(WHAT, code)),
        }
    }

    /// Aborts after an asynchronous error and returns it.
    #[cold]
    fn failed(&self, what: &'static str, code: NcclResult) -> Error {
        let last_error = self.nccl.last_error();
        self.abort_quietly();
        Error::Async {
            what,
            code,
            last_error,
        }
    }

    /// Aborts after a timeout and returns it.
    #[cold]
    fn timed_out(&self, what: &'static str, timeout: Duration) -> Error {
        self.abort_quietly();
        Error::Timeout { what, timeout }
    }

    /// Waits until a call of a non-blocking communicator finished (its state leaves
    /// `ncclInProgress`); aborts on an error or after the timeout counted from `start`.
    pub(crate) fn wait_ready(&self, what: &'static str, start: Instant) -> Result<()> {
        let mut backoff = Backoff::new();
        loop {
            match self.state(what)? {
                NcclResult::SUCCESS => return Ok(()),
                NcclResult::IN_PROGRESS => {}
                code => return Err(self.failed(what, code)),
            }
            if let Some(t) = self.timeout {
                if start.elapsed() >= t {
                    return Err(self.timed_out(what, t));
                }
            }
            backoff.wait();
        }
    }

    /// Waits until the work queued on `stream` is done, watching the communicator meanwhile:
    /// an asynchronous error (a peer died, a connection broke) aborts it and returns
    /// [`Error::Async`]; with a timeout (the communicator's, see [`CommConfig::timeout`]),
    /// work not done in time aborts it (which stops its GPU work, so the stream drains) and
    /// returns [`Error::Timeout`]. Without a timeout it waits as long as the work runs.
    ///
    /// Polls `cuStreamQuery` and `ncclCommGetAsyncError`, as NCCL's documentation
    /// recommends instead of `cuStreamSynchronize` where a peer may fail.
    #[track_caller]
    pub fn synchronize(&self, stream: &Stream) -> Result<()> {
        self.wait_stream(stream, self.timeout)
    }

    /// [`synchronize`](Self::synchronize) with `timeout` instead of the communicator's.
    #[track_caller]
    pub fn synchronize_timeout(&self, stream: &Stream, timeout: Duration) -> Result<()> {
        self.wait_stream(stream, Some(timeout))
    }

    #[track_caller]
    fn wait_stream(&self, stream: &Stream, timeout: Option<Duration>) -> Result<()> {
        const WHAT: &str = "synchronize";
        self.ready(WHAT, false)?;
        self.check_stream(WHAT, stream)?;
        let start = Instant::now();
        let mut backoff = Backoff::new();
        loop {
            let done = stream.query()?;
            match self.state(WHAT)? {
                NcclResult::SUCCESS | NcclResult::IN_PROGRESS => {}
                code => return Err(self.failed(WHAT, code)),
            }
            if done {
                return Ok(());
            }
            if let Some(t) = timeout {
                if start.elapsed() >= t {
                    let e = self.timed_out(WHAT, t);
                    // The abort stops NCCL's kernels: let the stream drain before the
                    // caller reuses it (bounded: a stream that never drains is left).
                    let drained = Instant::now();
                    while !stream.query().unwrap_or(true) && drained.elapsed() < t {
                        backoff.wait();
                    }
                    return Err(e);
                }
            }
            backoff.wait();
        }
    }

    /// Aborts the communicator (`ncclCommAbort`): stops its operations, on the GPU too
    /// (their results are undefined; the memory they used is not touched afterwards), and
    /// frees it. Afterwards every operation returns [`Error::Aborted`]. Refused while a group
    /// is open on this thread ([`Error::InGroup`]): the group still refers to it.
    ///
    /// [NCCL docs](https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/api/comms.html#ncclcommabort)
    #[doc(alias = "ncclCommAbort")]
    #[track_caller]
    pub fn abort(&self) -> Result<()> {
        const WHAT: &str = "ncclCommAbort";
        let raw = self.ready(WHAT, false)?;
        let f = self
            .nccl
            .function(self.nccl.functions().ncclCommAbort, WHAT)?;
        let _scope = Scope::enter(&self.ctx)?;
        self.raw.set(ptr::null_mut());
        // SAFETY: a live communicator, taken out of `self` above (never used again); its
        // context is current.
        check(self.nccl, unsafe { f(raw) }, WHAT)?;
        self.free_slot();
        Ok(())
    }

    /// [`abort`](Self::abort) after a failure: never fails (a failure to abort is counted
    /// as a drop error).
    pub(crate) fn abort_quietly(&self) {
        // Never under an open group, which may refer to the communicator (the callers are
        // outside one: this is a second line).
        if scope::is_open() {
            return;
        }
        let raw = self.raw.replace(ptr::null_mut());
        if raw.is_null() {
            return;
        }
        if let Err(e) = self.abort_raw(raw) {
            report_drop_error("aborting an NCCL communicator", &e);
        }
    }

    fn abort_raw(&self, raw: sys::ncclComm_t) -> Result<()> {
        let f = self
            .nccl
            .function(self.nccl.functions().ncclCommAbort, "ncclCommAbort")?;
        let _scope = Scope::enter(&self.ctx)?;
        // SAFETY: a live communicator handed over by the caller, never used again.
        check(self.nccl, unsafe { f(raw) }, "ncclCommAbort")?;
        self.free_slot();
        Ok(())
    }

    /// Finalizes the communicator (`ncclCommFinalize`: every rank calls it; it completes the
    /// operations queued on it and disconnects from the peers), then destroys it
    /// (`ncclCommDestroy`). With a timeout, a finalization that does not complete in time
    /// aborts it and returns [`Error::Timeout`]. The communicators of one process
    /// ([`init_all`](Self::init_all)) are finalized together with
    /// [`finalize_all`](Self::finalize_all): each waits for the others.
    #[doc(alias = "ncclCommFinalize")]
    #[track_caller]
    pub fn finalize(self) -> Result<()> {
        let raw = self.ready("ncclCommFinalize", false)?;
        self.raw.set(ptr::null_mut());
        // Aborted or destroyed by `finalize_raw`: the drop that follows has nothing to free.
        self.finalize_raw(raw)
    }

    /// Finalizes communicators of one process together (those of
    /// [`init_all`](Self::init_all)): `ncclCommFinalize` for each inside one group, a wait for
    /// each (bounded by its timeout; a failure or a timeout aborts them all), then
    /// `ncclCommDestroy` for each. Finalizing them one at a time would wait forever, as each
    /// waits for the others.
    #[doc(alias = "ncclCommFinalize")]
    #[track_caller]
    pub fn finalize_all(comms: Vec<Communicator>) -> Result<()> {
        const WHAT: &str = "ncclCommFinalize";
        let Some(first) = comms.first() else {
            return Ok(());
        };
        let nccl = first.nccl;
        let mut raws = Vec::with_capacity(comms.len());
        for c in &comms {
            raws.push(c.ready(WHAT, false)?);
        }
        let finalize = nccl.function(nccl.functions().ncclCommFinalize, WHAT)?;
        let start_group = nccl.function(nccl.functions().ncclGroupStart, "ncclGroupStart")?;
        let end_group = nccl.function(nccl.functions().ncclGroupEnd, "ncclGroupEnd")?;
        let start = Instant::now();
        // SAFETY: no arguments; opens a group on this thread (none is open: `ready` checked).
        check(nccl, unsafe { start_group() }, "ncclGroupStart")?;
        // From here the group is always ended, and every communicator finalized or aborted.
        let mut failure = None;
        for (c, &raw) in comms.iter().zip(&raws) {
            let code = match Scope::enter(&c.ctx) {
                // SAFETY: a live communicator (checked above); its context is current.
                Ok(_scope) => unsafe { finalize(raw) },
                Err(e) => {
                    failure.get_or_insert(e);
                    continue;
                }
            };
            if let Err(e) = check(nccl, code, WHAT) {
                failure.get_or_insert(e);
            }
        }
        let end = {
            let scope = Scope::enter(&first.ctx);
            // SAFETY: ends the group opened above, on this thread.
            let code = unsafe { end_group() };
            drop(scope);
            check(nccl, code, "ncclGroupEnd")
        };
        if let Err(e) = end {
            failure.get_or_insert(e);
        }
        if failure.is_none() {
            for c in &comms {
                if let Err(e) = c.wait_ready(WHAT, start) {
                    failure = Some(e);
                    break;
                }
            }
        }
        if let Some(e) = failure {
            for c in &comms {
                c.abort_quietly();
            }
            return Err(e);
        }
        let mut result = Ok(());
        for c in &comms {
            let raw = c.raw.replace(ptr::null_mut());
            if let Err(e) = c.destroy_raw(raw) {
                result = result.and(Err(e));
            }
        }
        result
    }

    /// Destroys the communicator (`ncclCommDestroy`) and returns its error, where `Drop`
    /// only reports it. Without a [`finalize`](Self::finalize) first, NCCL finalizes it
    /// here, which waits for the other ranks on this host.
    #[doc(alias = "ncclCommDestroy")]
    #[track_caller]
    pub fn destroy(self) -> Result<()> {
        let raw = self.ready("ncclCommDestroy", false)?;
        self.raw.set(ptr::null_mut());
        self.destroy_raw(raw)
    }

    /// Lets go of the handle without freeing it (NCCL frees it, or it is leaked): the
    /// communicator drops as an aborted one.
    fn forget_handle(self) {
        self.raw.set(ptr::null_mut());
    }

    fn destroy_raw(&self, raw: sys::ncclComm_t) -> Result<()> {
        let f = self
            .nccl
            .function(self.nccl.functions().ncclCommDestroy, "ncclCommDestroy")?;
        let _scope = Scope::enter(&self.ctx)?;
        // SAFETY: a live communicator handed over by the caller, never used again; its
        // context is current.
        check(self.nccl, unsafe { f(raw) }, "ncclCommDestroy")?;
        self.free_slot();
        Ok(())
    }

    /// Finalizes `raw` (taken out of `self`), waits (bounded by the timeout, then aborts),
    /// and destroys it.
    fn finalize_raw(&self, raw: sys::ncclComm_t) -> Result<()> {
        const WHAT: &str = "ncclCommFinalize";
        let f = self
            .nccl
            .function(self.nccl.functions().ncclCommFinalize, WHAT)?;
        let start = Instant::now();
        let code = {
            let _scope = Scope::enter(&self.ctx)?;
            // SAFETY: a live communicator; its context is current.
            unsafe { f(raw) }
        };
        // Put the handle back while waiting, so a failure aborts it.
        self.raw.set(raw);
        let waited = match check(self.nccl, code, WHAT) {
            Err(e) => Err(e),
            Ok(_) => self.wait_ready(WHAT, start),
        };
        match waited {
            Ok(()) => {
                let raw = self.raw.replace(ptr::null_mut());
                self.destroy_raw(raw)
            }
            Err(e) => {
                self.abort_quietly();
                Err(e)
            }
        }
    }
}

/// Destroys the communicator (`ncclCommDestroy`). Unless it was finalized, NCCL finalizes it
/// first, which completes its operations and waits for the other ranks on this host: a
/// blocking communicator waits there, as in C; a non-blocking one (created with a timeout) is
/// finalized and freed in the background, so dropping it never waits for a peer. Communicators
/// of one process ([`init_all`](Communicator::init_all)) may be dropped one after the other:
/// NCCL frees them when the last one goes. An aborted communicator has nothing left to free;
/// one dropped while a [`Group`](crate::Group) is open on the thread is leaked (NCCL would
/// defer its destruction into the group). Failures are reported to `log` and counted
/// ([`drop_error_count`](crate::drop_error_count)), never panicking.
impl Drop for Communicator {
    fn drop(&mut self) {
        let raw = self.raw.replace(ptr::null_mut());
        if raw.is_null() {
            return;
        }
        let result = if scope::is_open() {
            // NCCL would defer the destruction to the group's end: leaked instead.
            Err(Error::InGroup {
                what: "dropping a Communicator (its handle is leaked)",
            })
        } else {
            self.destroy_raw(raw)
        };
        if let Err(e) = result {
            report_drop_error("destroying an NCCL communicator", &e);
        }
    }
}

/// Polling with a growing pause: a few yields, then sleeps from 20 µs up to 1 ms.
pub(crate) struct Backoff {
    round: u32,
}

impl Backoff {
    pub(crate) fn new() -> Backoff {
        Backoff { round: 0 }
    }

    pub(crate) fn wait(&mut self) {
        self.round = self.round.saturating_add(1);
        if self.round <= 16 {
            std::thread::yield_now();
        } else {
            let us = (20u64 << ((self.round - 16).min(6))).min(1000);
            std::thread::sleep(Duration::from_micros(us));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_id_bytes_round_trip() {
        let mut bytes = [0u8; UniqueId::BYTES];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (i * 7 + 3) as u8;
        }
        let id = UniqueId::from_bytes(bytes);
        assert_eq!(id.to_bytes(), bytes);
        assert_eq!(UniqueId::from_bytes(id.to_bytes()), id);
        assert_eq!(format!("{id:?}"), "UniqueId(030a11181f262d34..)");
    }

    #[test]
    fn a_handle_slot_holds_what_nccl_writes_and_frees_once() {
        let slot = HandleSlot::new();
        assert!(slot.load().is_null());
        assert!(slot
            .wait_written(Some(Duration::from_millis(1)), Instant::now())
            .is_null());
        let fake = 0x1000usize;
        // What NCCL's thread does: one atomic store through the `ncclComm_t*`.
        let out = slot.out_ptr() as usize;
        std::thread::spawn(move || {
            let out = out as *const AtomicPtr<sys::ncclComm>;
            // SAFETY: the slot is alive until `free` below, after the join.
            unsafe { (*out).store(fake as sys::ncclComm_t, Ordering::Release) }
        })
        .join()
        .unwrap();
        assert_eq!(slot.wait_written(None, Instant::now()) as usize, fake);
        // SAFETY: the writer was joined.
        unsafe { slot.free() };
    }

    #[test]
    fn counts_beyond_int_are_refused() {
        assert!(c_int_arg("x", "size", c_int::MAX as usize).is_ok());
        let e = c_int_arg("ncclCommInitRankConfig", "size", c_int::MAX as usize + 1).unwrap_err();
        assert!(e.to_string().contains("does not fit"), "{e}");
    }

    #[test]
    fn the_backoff_pause_stays_bounded() {
        let mut b = Backoff::new();
        for _ in 0..40 {
            b.wait();
        }
        assert!(b.round >= 40);
    }
}
