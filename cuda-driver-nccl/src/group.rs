//! Group calls: operations queued together between `ncclGroupStart` and `ncclGroupEnd`; see
//! [`Group`].

use std::marker::PhantomData;
use std::time::Instant;

use cuda_driver::{DeviceSlice, DeviceSliceMut, Stream};

use crate::comm::Communicator;
use crate::element::{Element, ReduceOp};
use crate::error::{report_drop_error, Error, Progress, Result};
use crate::library::check;
use crate::library::Nccl;
use crate::scope::{is_open, set_open, Scope};
use crate::sys;

/// An open group of NCCL operations (`ncclGroupStart` ... `ncclGroupEnd`) on this thread:
/// what several devices of one process run together (a communicator of
/// [`Communicator::init_all`]), sends and receives that must progress together, or
/// operations fused into one launch.
///
/// Between the two, NCCL only records the operations; it queues them on their streams in
/// `ncclGroupEnd`. So the buffers, streams and communicators of a grouped operation must
/// live, unmoved and unused elsewhere, until the group ends: a `Group<'a>` takes its
/// operations' views *by value* for `'a` (the owners stay borrowed, shared or exclusively,
/// until the group is gone) and their streams and communicators by `&'a`. A buffer cannot be
/// dropped while a group holds its view:
///
/// ```compile_fail,E0505
/// # use cuda_driver::prelude::*;
/// # use cuda_driver_nccl::{Communicator, Group, ReduceOp};
/// # fn f(comm: &Communicator, stream: &cuda_driver::Stream) -> cuda_driver_nccl::Result<()> {
/// let mut group = Group::start()?;
/// let mut buf = cuda_driver::DeviceBuffer::<f32>::new(comm.context(), 16)?;
/// group.all_reduce_in_place(comm, buf.as_view_mut(), ReduceOp::SUM, stream)?;
/// drop(buf); // the group has not queued the all-reduce yet
/// group.end()?;
/// # Ok(()) }
/// ```
///
/// The group always ends: [`Group::end`] returns its error, `Drop` reports it. While a group
/// is open on a thread, the operations of [`Communicator`] outside the group (which NCCL would
/// defer to the group's end, past their borrows) and a second group (nested groups end with
/// the outer one, past the inner one's borrows) are refused with [`Error::InGroup`].
///
/// `!Send`: NCCL's group state belongs to the thread.
///
/// ```compile_fail,E0277
/// fn sent_to_another_thread<T: Send>(_: T) {}
/// sent_to_another_thread(cuda_driver_nccl::Group::start());
/// ```
///
/// ```no_run
/// use cuda_driver::prelude::*;
/// use cuda_driver::{Device, DeviceBuffer, Stream, types::StreamFlags};
/// use cuda_driver_nccl::{CommConfig, Communicator, Group, ReduceOp};
///
/// let ctxs = vec![Device::get(0)?.primary_context()?, Device::get(1)?.primary_context()?];
/// let comms = Communicator::init_all(&ctxs, &CommConfig::new())?;
/// let streams = ctxs
///     .iter()
///     .map(|c| Stream::new(c, StreamFlags::NON_BLOCKING))
///     .collect::<Result<Vec<_>, _>>()?;
/// let mut bufs = ctxs
///     .iter()
///     .map(|c| DeviceBuffer::from_slice(c, &[1.0f32; 1024]))
///     .collect::<Result<Vec<_>, _>>()?;
/// let mut group = Group::start()?;
/// for ((comm, stream), buf) in comms.iter().zip(&streams).zip(&mut bufs) {
///     group.all_reduce_in_place(comm, buf.as_view_mut(), ReduceOp::SUM, stream)?;
/// }
/// group.end()?;
/// for (comm, stream) in comms.iter().zip(&streams) {
///     comm.synchronize(stream)?;
/// }
/// assert!(bufs[1].to_vec()?.iter().all(|&x| x == 2.0));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[doc(alias = "ncclGroupStart")]
#[doc(alias = "ncclGroupEnd")]
pub struct Group<'a> {
    nccl: &'static Nccl,
    /// `ncclGroupEnd`, looked up before the group started, so that it can always end.
    end: unsafe extern "C" fn() -> sys::ncclResult_t,
    /// The communicators the group's operations use, once each.
    comms: Vec<&'a Communicator>,
    ended: bool,
    _not_send: PhantomData<*const ()>,
    _borrows: PhantomData<&'a ()>,
}

impl std::fmt::Debug for Group<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group")
            .field("communicators", &self.comms.len())
            .field("ended", &self.ended)
            .finish()
    }
}

impl<'a> Group<'a> {
    /// Opens a group on this thread (`ncclGroupStart`); [`Error::InGroup`] when one is open
    /// already.
    ///
    /// [NCCL docs](https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/api/group.html#ncclgroupstart)
    #[doc(alias = "ncclGroupStart")]
    #[track_caller]
    pub fn start() -> Result<Group<'a>> {
        const WHAT: &str = "ncclGroupStart";
        if is_open() {
            return Err(Error::InGroup { what: WHAT });
        }
        cuda_driver::external::check_not_in_host_function()?;
        let nccl = Nccl::get()?;
        let f = nccl.function(nccl.functions().ncclGroupStart, WHAT)?;
        let end = nccl.function(nccl.functions().ncclGroupEnd, "ncclGroupEnd")?;
        // SAFETY: no arguments; opens a group on this thread, which has none open.
        check(nccl, unsafe { f() }, WHAT)?;
        set_open(true);
        Ok(Group {
            nccl,
            end,
            comms: Vec::new(),
            ended: false,
            _not_send: PhantomData,
            _borrows: PhantomData,
        })
    }

    fn record(&mut self, comm: &'a Communicator) {
        if !self.comms.iter().any(|c| std::ptr::eq(*c, comm)) {
            self.comms.push(comm);
        }
    }

    /// [`Communicator::all_reduce`] in the group.
    #[doc(alias = "ncclAllReduce")]
    #[track_caller]
    pub fn all_reduce<T: Element>(
        &mut self,
        comm: &'a Communicator,
        send: DeviceSlice<'a, T>,
        mut recv: DeviceSliceMut<'a, T>,
        op: ReduceOp,
        stream: &'a Stream,
    ) -> Result<()> {
        comm.all_reduce_op(&send, &mut recv, op, stream, true)?;
        self.record(comm);
        Ok(())
    }

    /// [`Communicator::all_reduce_in_place`] in the group.
    #[doc(alias = "ncclAllReduce")]
    #[track_caller]
    pub fn all_reduce_in_place<T: Element>(
        &mut self,
        comm: &'a Communicator,
        mut buf: DeviceSliceMut<'a, T>,
        op: ReduceOp,
        stream: &'a Stream,
    ) -> Result<()> {
        comm.all_reduce_in_place_op(&mut buf, op, stream, true)?;
        self.record(comm);
        Ok(())
    }

    /// [`Communicator::broadcast`] in the group.
    #[doc(alias = "ncclBroadcast")]
    #[track_caller]
    pub fn broadcast<T: Element>(
        &mut self,
        comm: &'a Communicator,
        send: Option<DeviceSlice<'a, T>>,
        mut recv: DeviceSliceMut<'a, T>,
        root: usize,
        stream: &'a Stream,
    ) -> Result<()> {
        comm.broadcast_op(send.as_ref(), &mut recv, root, stream, true)?;
        self.record(comm);
        Ok(())
    }

    /// [`Communicator::broadcast_in_place`] in the group.
    #[doc(alias = "ncclBroadcast")]
    #[track_caller]
    pub fn broadcast_in_place<T: Element>(
        &mut self,
        comm: &'a Communicator,
        mut buf: DeviceSliceMut<'a, T>,
        root: usize,
        stream: &'a Stream,
    ) -> Result<()> {
        comm.broadcast_in_place_op(&mut buf, root, stream, true)?;
        self.record(comm);
        Ok(())
    }

    /// [`Communicator::reduce`] in the group.
    #[doc(alias = "ncclReduce")]
    #[track_caller]
    pub fn reduce<T: Element>(
        &mut self,
        comm: &'a Communicator,
        send: DeviceSlice<'a, T>,
        recv: Option<DeviceSliceMut<'a, T>>,
        op: ReduceOp,
        root: usize,
        stream: &'a Stream,
    ) -> Result<()> {
        let mut recv = recv;
        comm.reduce_op(&send, recv.as_mut(), op, root, stream, true)?;
        self.record(comm);
        Ok(())
    }

    /// [`Communicator::reduce_in_place`] in the group.
    #[doc(alias = "ncclReduce")]
    #[track_caller]
    pub fn reduce_in_place<T: Element>(
        &mut self,
        comm: &'a Communicator,
        mut buf: DeviceSliceMut<'a, T>,
        op: ReduceOp,
        root: usize,
        stream: &'a Stream,
    ) -> Result<()> {
        comm.reduce_in_place_op(&mut buf, op, root, stream, true)?;
        self.record(comm);
        Ok(())
    }

    /// [`Communicator::all_gather`] in the group.
    #[doc(alias = "ncclAllGather")]
    #[track_caller]
    pub fn all_gather<T: Element>(
        &mut self,
        comm: &'a Communicator,
        send: DeviceSlice<'a, T>,
        mut recv: DeviceSliceMut<'a, T>,
        stream: &'a Stream,
    ) -> Result<()> {
        comm.all_gather_op(&send, &mut recv, stream, true)?;
        self.record(comm);
        Ok(())
    }

    /// [`Communicator::all_gather_in_place`] in the group.
    #[doc(alias = "ncclAllGather")]
    #[track_caller]
    pub fn all_gather_in_place<T: Element>(
        &mut self,
        comm: &'a Communicator,
        mut buf: DeviceSliceMut<'a, T>,
        stream: &'a Stream,
    ) -> Result<()> {
        comm.all_gather_in_place_op(&mut buf, stream, true)?;
        self.record(comm);
        Ok(())
    }

    /// [`Communicator::reduce_scatter`] in the group.
    #[doc(alias = "ncclReduceScatter")]
    #[track_caller]
    pub fn reduce_scatter<T: Element>(
        &mut self,
        comm: &'a Communicator,
        send: DeviceSlice<'a, T>,
        mut recv: DeviceSliceMut<'a, T>,
        op: ReduceOp,
        stream: &'a Stream,
    ) -> Result<()> {
        comm.reduce_scatter_op(&send, &mut recv, op, stream, true)?;
        self.record(comm);
        Ok(())
    }

    /// [`Communicator::reduce_scatter_in_place`] in the group.
    #[doc(alias = "ncclReduceScatter")]
    #[track_caller]
    pub fn reduce_scatter_in_place<T: Element>(
        &mut self,
        comm: &'a Communicator,
        mut buf: DeviceSliceMut<'a, T>,
        op: ReduceOp,
        stream: &'a Stream,
    ) -> Result<()> {
        comm.reduce_scatter_in_place_op(&mut buf, op, stream, true)?;
        self.record(comm);
        Ok(())
    }

    /// [`Communicator::send`] in the group.
    #[doc(alias = "ncclSend")]
    #[track_caller]
    pub fn send<T: Element>(
        &mut self,
        comm: &'a Communicator,
        buf: DeviceSlice<'a, T>,
        peer: usize,
        stream: &'a Stream,
    ) -> Result<()> {
        comm.send_op(&buf, peer, stream, true)?;
        self.record(comm);
        Ok(())
    }

    /// [`Communicator::recv`] in the group.
    #[doc(alias = "ncclRecv")]
    #[track_caller]
    pub fn recv<T: Element>(
        &mut self,
        comm: &'a Communicator,
        mut buf: DeviceSliceMut<'a, T>,
        peer: usize,
        stream: &'a Stream,
    ) -> Result<()> {
        comm.recv_op(&mut buf, peer, stream, true)?;
        self.record(comm);
        Ok(())
    }

    /// Ends the group (`ncclGroupEnd`): NCCL queues its operations on their streams. A
    /// non-blocking communicator of the group is then waited for as after any of its calls
    /// (bounded by its timeout; an error or a timeout aborts it).
    ///
    /// [NCCL docs](https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/api/group.html#ncclgroupend)
    #[doc(alias = "ncclGroupEnd")]
    #[track_caller]
    pub fn end(mut self) -> Result<()> {
        self.finish()
    }

    #[track_caller]
    fn finish(&mut self) -> Result<()> {
        const WHAT: &str = "ncclGroupEnd";
        if self.ended {
            return Ok(());
        }
        self.ended = true;
        let start = Instant::now();
        let code = {
            // NCCL switches devices for the communicators it launches on, and puts back the
            // device it found: enter one of theirs, then the scope repairs the stack.
            let scope = self.comms.first().map(|c| Scope::enter(c.context()));
            // SAFETY: ends the group this guard opened on this thread (the guard is !Send),
            // whatever happened since; its operations' buffers, streams and communicators are
            // borrowed for 'a, which outlives this call.
            let code = unsafe { (self.end)() };
            set_open(false);
            if let Some(Err(e)) = scope {
                return Err(e);
            }
            code
        };
        if check(self.nccl, code, WHAT)? == Progress::InProgress {
            for comm in &self.comms {
                if comm.timeout().is_some() && !comm.is_aborted() {
                    comm.wait_ready(WHAT, start)?;
                }
            }
        }
        Ok(())
    }
}

impl Drop for Group<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.finish() {
            report_drop_error("ending an NCCL group", &e);
        }
    }
}
