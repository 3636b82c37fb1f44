//! The collectives (all-reduce, broadcast, reduce, all-gather, reduce-scatter) and
//! point-to-point send/receive of a [`Communicator`], queued on a `cuda-driver` stream with
//! `cuda-driver` views.
//!
//! Each operation checks, before any NCCL call: the communicator is live and no group is
//! open on this thread (a grouped operation goes through [`Group`](crate::Group)); the stream
//! belongs to the communicator's context; every view is of that context and, when its memory
//! is ordered on a stream, ordered on this one (`DeviceSlice::check_stream`, the rules of
//! `cuda-driver`'s async copies); the lengths agree; ranks are in range. Then it makes one
//! NCCL call with the communicator's context current.
//!
//! **Why the buffers outlive the queued work.** The views borrow their owners for the call,
//! and NCCL has queued the operation on the stream when the call returns (a non-blocking
//! communicator is polled until then). Memory that is not stream-ordered is released only
//! after the work of its context (`cuMemFree` waits for it; the other releases synchronise
//! first: `docs/SOUNDNESS.md`, M2), and NCCL's kernels are work of that context;
//! stream-ordered memory is freed on its own stream, which is checked to be the operation's.
//! Only the GPU reads and writes the buffers; the host never touches them.

use std::ffi::c_void;
use std::mem::size_of;

use cuda_driver::handle::Handle;
use cuda_driver::{DeviceSlice, DeviceSliceMut, Stream};

use crate::comm::{c_int_arg, Communicator};
use crate::element::{Element, ReduceOp};
use crate::error::{Error, Result};

/// A device address as NCCL's `const void*`.
#[inline]
fn src<T: Element>(view: &DeviceSlice<'_, T>) -> *const c_void {
    view.as_raw() as usize as *const c_void
}

/// A device address as NCCL's `void*`.
#[inline]
fn dst<T: Element>(view: &DeviceSliceMut<'_, T>) -> *mut c_void {
    view.as_raw() as usize as *mut c_void
}

/// The address of element `index` of a view with more than `index` elements.
#[inline]
fn element<T: Element>(base: *mut c_void, index: usize) -> *mut c_void {
    (base as usize + index * size_of::<T>()) as *mut c_void
}

/// `Ok` when the destination and source lengths (in elements) agree.
#[inline]
fn check_len(what: &'static str, dst: usize, src: usize) -> Result<()> {
    if dst == src {
        Ok(())
    } else {
        Err(Error::Cuda(cuda_driver::Error::LengthMismatch {
            what,
            dst,
            src,
        }))
    }
}

/// `len * ranks`, or the overflow as an error.
#[inline]
fn times_ranks<T>(what: &'static str, len: usize, ranks: usize) -> Result<usize> {
    len.checked_mul(ranks).ok_or_else(|| {
        Error::Cuda(cuda_driver::Error::SizeOverflow {
            what,
            count: len,
            size: ranks * size_of::<T>(),
        })
    })
}

impl Communicator {
    /// `rank` as NCCL's `int`, when it is a rank of the communicator.
    #[inline]
    fn rank_arg(&self, what: &'static str, rank: usize) -> Result<std::ffi::c_int> {
        if rank >= self.size() {
            return Err(Error::RankOutOfRange {
                what,
                rank,
                size: self.size(),
            });
        }
        c_int_arg(what, "rank", rank)
    }

    /// `len / size` for an in-place all-gather or reduce-scatter over a view of `len`
    /// elements, one equal part per rank.
    #[inline]
    fn part(&self, what: &'static str, len: usize) -> Result<usize> {
        if len % self.size() != 0 {
            return Err(Error::InvalidArgument(format!(
                "{what}: the buffer's {len} elements do not split into {} equal parts",
                self.size()
            )));
        }
        Ok(len / self.size())
    }

    /// Reduces `send` over all ranks with `op` into `recv` on every rank; the lengths must
    /// agree (and be the same on every rank). Queued on `stream`.
    ///
    /// Calls `ncclAllReduce`
    /// ([NCCL docs](https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/api/colls.html#ncclallreduce)).
    #[doc(alias = "ncclAllReduce")]
    #[track_caller]
    pub fn all_reduce<T: Element>(
        &self,
        send: &DeviceSlice<'_, T>,
        recv: &mut DeviceSliceMut<'_, T>,
        op: ReduceOp,
        stream: &Stream,
    ) -> Result<()> {
        self.all_reduce_op(send, recv, op, stream, false)
    }

    #[track_caller]
    pub(crate) fn all_reduce_op<T: Element>(
        &self,
        send: &DeviceSlice<'_, T>,
        recv: &mut DeviceSliceMut<'_, T>,
        op: ReduceOp,
        stream: &Stream,
        grouped: bool,
    ) -> Result<()> {
        const WHAT: &str = "ncclAllReduce";
        let comm = self.ready(WHAT, grouped)?;
        self.check_stream(WHAT, stream)?;
        check_len(WHAT, recv.len(), send.len())?;
        send.check_stream(WHAT, stream)?;
        recv.check_stream(WHAT, stream)?;
        let f = self
            .nccl()
            .function(self.nccl().functions().ncclAllReduce, WHAT)?;
        let (s, r, n, st) = (src(send), dst(recv), send.len(), stream.as_raw());
        self.call(WHAT, comm, grouped, |c| {
            // SAFETY: `s` and `r` are `n` elements of T of live device memory of the stream's
            // context, which is the communicator's (checked); they outlive the queued work
            // (module docs); `recv` is borrowed exclusively. The data type is T's; the
            // communicator is live and its context current.
            unsafe { f(s, r, n, T::DATA_TYPE.as_raw(), op.as_raw(), c, st) }
        })
    }

    /// [`all_reduce`](Self::all_reduce) in place: `buf` is reduced over all ranks and holds
    /// the result on every rank.
    #[doc(alias = "ncclAllReduce")]
    #[track_caller]
    pub fn all_reduce_in_place<T: Element>(
        &self,
        buf: &mut DeviceSliceMut<'_, T>,
        op: ReduceOp,
        stream: &Stream,
    ) -> Result<()> {
        self.all_reduce_in_place_op(buf, op, stream, false)
    }

    #[track_caller]
    pub(crate) fn all_reduce_in_place_op<T: Element>(
        &self,
        buf: &mut DeviceSliceMut<'_, T>,
        op: ReduceOp,
        stream: &Stream,
        grouped: bool,
    ) -> Result<()> {
        const WHAT: &str = "ncclAllReduce";
        let comm = self.ready(WHAT, grouped)?;
        self.check_stream(WHAT, stream)?;
        buf.check_stream(WHAT, stream)?;
        let f = self
            .nccl()
            .function(self.nccl().functions().ncclAllReduce, WHAT)?;
        let (p, n, st) = (dst(buf), buf.len(), stream.as_raw());
        self.call(WHAT, comm, grouped, |c| {
            // SAFETY: as in `all_reduce_op`, with one buffer both sent and received (NCCL's
            // in-place form: sendbuff == recvbuff).
            unsafe { f(p, p, n, T::DATA_TYPE.as_raw(), op.as_raw(), c, st) }
        })
    }

    /// Copies `send` of rank `root` into `recv` on every rank. `send` is read on the root
    /// only, where it is required and its length must be `recv`'s; other ranks may pass
    /// `None`.
    ///
    /// Calls `ncclBroadcast`
    /// ([NCCL docs](https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/api/colls.html#ncclbroadcast)).
    #[doc(alias = "ncclBroadcast")]
    #[track_caller]
    pub fn broadcast<T: Element>(
        &self,
        send: Option<&DeviceSlice<'_, T>>,
        recv: &mut DeviceSliceMut<'_, T>,
        root: usize,
        stream: &Stream,
    ) -> Result<()> {
        self.broadcast_op(send, recv, root, stream, false)
    }

    #[track_caller]
    pub(crate) fn broadcast_op<T: Element>(
        &self,
        send: Option<&DeviceSlice<'_, T>>,
        recv: &mut DeviceSliceMut<'_, T>,
        root: usize,
        stream: &Stream,
        grouped: bool,
    ) -> Result<()> {
        const WHAT: &str = "ncclBroadcast";
        let comm = self.ready(WHAT, grouped)?;
        self.check_stream(WHAT, stream)?;
        let c_root = self.rank_arg(WHAT, root)?;
        recv.check_stream(WHAT, stream)?;
        let s = match send {
            Some(send) => {
                check_len(WHAT, recv.len(), send.len())?;
                send.check_stream(WHAT, stream)?;
                src(send)
            }
            None if self.rank() == root => {
                return Err(Error::InvalidArgument(format!(
                    "{WHAT}: rank {root} is the root and must pass the buffer to send"
                )))
            }
            // Not read off the root: NCCL's in-place form.
            None => dst(recv) as *const c_void,
        };
        let f = self
            .nccl()
            .function(self.nccl().functions().ncclBroadcast, WHAT)?;
        let (r, n, st) = (dst(recv), recv.len(), stream.as_raw());
        self.call(WHAT, comm, grouped, |c| {
            // SAFETY: as in `all_reduce_op`; `s` is the sent view (checked like `recv`), or
            // off the root `recv` itself, which NCCL does not read there.
            unsafe { f(s, r, n, T::DATA_TYPE.as_raw(), c_root, c, st) }
        })
    }

    /// [`broadcast`](Self::broadcast) in place: `buf` of rank `root` is copied into `buf` of
    /// every other rank.
    #[doc(alias = "ncclBroadcast")]
    #[doc(alias = "ncclBcast")]
    #[track_caller]
    pub fn broadcast_in_place<T: Element>(
        &self,
        buf: &mut DeviceSliceMut<'_, T>,
        root: usize,
        stream: &Stream,
    ) -> Result<()> {
        self.broadcast_in_place_op(buf, root, stream, false)
    }

    #[track_caller]
    pub(crate) fn broadcast_in_place_op<T: Element>(
        &self,
        buf: &mut DeviceSliceMut<'_, T>,
        root: usize,
        stream: &Stream,
        grouped: bool,
    ) -> Result<()> {
        const WHAT: &str = "ncclBroadcast";
        let comm = self.ready(WHAT, grouped)?;
        self.check_stream(WHAT, stream)?;
        let c_root = self.rank_arg(WHAT, root)?;
        buf.check_stream(WHAT, stream)?;
        let f = self
            .nccl()
            .function(self.nccl().functions().ncclBroadcast, WHAT)?;
        let (p, n, st) = (dst(buf), buf.len(), stream.as_raw());
        self.call(WHAT, comm, grouped, |c| {
            // SAFETY: as in `all_reduce_in_place_op`.
            unsafe { f(p, p, n, T::DATA_TYPE.as_raw(), c_root, c, st) }
        })
    }

    /// Reduces `send` over all ranks with `op` into `recv` of rank `root`. `recv` is written
    /// on the root only, where it is required and its length must be `send`'s; other ranks
    /// may pass `None`.
    ///
    /// Calls `ncclReduce`
    /// ([NCCL docs](https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/api/colls.html#ncclreduce)).
    #[doc(alias = "ncclReduce")]
    #[track_caller]
    pub fn reduce<T: Element>(
        &self,
        send: &DeviceSlice<'_, T>,
        recv: Option<&mut DeviceSliceMut<'_, T>>,
        op: ReduceOp,
        root: usize,
        stream: &Stream,
    ) -> Result<()> {
        self.reduce_op(send, recv, op, root, stream, false)
    }

    #[track_caller]
    pub(crate) fn reduce_op<T: Element>(
        &self,
        send: &DeviceSlice<'_, T>,
        recv: Option<&mut DeviceSliceMut<'_, T>>,
        op: ReduceOp,
        root: usize,
        stream: &Stream,
        grouped: bool,
    ) -> Result<()> {
        const WHAT: &str = "ncclReduce";
        let comm = self.ready(WHAT, grouped)?;
        self.check_stream(WHAT, stream)?;
        let c_root = self.rank_arg(WHAT, root)?;
        send.check_stream(WHAT, stream)?;
        let r = match recv {
            Some(recv) => {
                check_len(WHAT, recv.len(), send.len())?;
                recv.check_stream(WHAT, stream)?;
                dst(recv)
            }
            None if self.rank() == root => {
                return Err(Error::InvalidArgument(format!(
                    "{WHAT}: rank {root} is the root and must pass the buffer to receive"
                )))
            }
            // Not written off the root (nccl.h: "recvbuff may be NULL on all calls except for
            // root device").
            None => std::ptr::null_mut(),
        };
        let f = self
            .nccl()
            .function(self.nccl().functions().ncclReduce, WHAT)?;
        let (s, n, st) = (src(send), send.len(), stream.as_raw());
        self.call(WHAT, comm, grouped, |c| {
            // SAFETY: as in `all_reduce_op`; `r` is the received view (checked like `send`),
            // or null off the root, where NCCL does not write it.
            unsafe { f(s, r, n, T::DATA_TYPE.as_raw(), op.as_raw(), c_root, c, st) }
        })
    }

    /// [`reduce`](Self::reduce) in place: `buf` is reduced over all ranks into `buf` of rank
    /// `root` (the other ranks' `buf` is only read).
    #[doc(alias = "ncclReduce")]
    #[track_caller]
    pub fn reduce_in_place<T: Element>(
        &self,
        buf: &mut DeviceSliceMut<'_, T>,
        op: ReduceOp,
        root: usize,
        stream: &Stream,
    ) -> Result<()> {
        self.reduce_in_place_op(buf, op, root, stream, false)
    }

    #[track_caller]
    pub(crate) fn reduce_in_place_op<T: Element>(
        &self,
        buf: &mut DeviceSliceMut<'_, T>,
        op: ReduceOp,
        root: usize,
        stream: &Stream,
        grouped: bool,
    ) -> Result<()> {
        const WHAT: &str = "ncclReduce";
        let comm = self.ready(WHAT, grouped)?;
        self.check_stream(WHAT, stream)?;
        let c_root = self.rank_arg(WHAT, root)?;
        buf.check_stream(WHAT, stream)?;
        let f = self
            .nccl()
            .function(self.nccl().functions().ncclReduce, WHAT)?;
        let (p, n, st) = (dst(buf), buf.len(), stream.as_raw());
        self.call(WHAT, comm, grouped, |c| {
            // SAFETY: as in `all_reduce_in_place_op`.
            unsafe { f(p, p, n, T::DATA_TYPE.as_raw(), op.as_raw(), c_root, c, st) }
        })
    }

    /// Gathers `send` of every rank into `recv` of every rank, rank `i`'s at element
    /// `i * send.len()`: `recv` holds `size() * send.len()` elements.
    ///
    /// Calls `ncclAllGather`
    /// ([NCCL docs](https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/api/colls.html#ncclallgather)).
    #[doc(alias = "ncclAllGather")]
    #[track_caller]
    pub fn all_gather<T: Element>(
        &self,
        send: &DeviceSlice<'_, T>,
        recv: &mut DeviceSliceMut<'_, T>,
        stream: &Stream,
    ) -> Result<()> {
        self.all_gather_op(send, recv, stream, false)
    }

    #[track_caller]
    pub(crate) fn all_gather_op<T: Element>(
        &self,
        send: &DeviceSlice<'_, T>,
        recv: &mut DeviceSliceMut<'_, T>,
        stream: &Stream,
        grouped: bool,
    ) -> Result<()> {
        const WHAT: &str = "ncclAllGather";
        let comm = self.ready(WHAT, grouped)?;
        self.check_stream(WHAT, stream)?;
        check_len(
            WHAT,
            recv.len(),
            times_ranks::<T>(WHAT, send.len(), self.size())?,
        )?;
        send.check_stream(WHAT, stream)?;
        recv.check_stream(WHAT, stream)?;
        let f = self
            .nccl()
            .function(self.nccl().functions().ncclAllGather, WHAT)?;
        let (s, r, n, st) = (src(send), dst(recv), send.len(), stream.as_raw());
        self.call(WHAT, comm, grouped, |c| {
            // SAFETY: as in `all_reduce_op`; `recv` holds `size * n` elements (checked).
            unsafe { f(s, r, n, T::DATA_TYPE.as_raw(), c, st) }
        })
    }

    /// [`all_gather`](Self::all_gather) in place: `buf` holds `size()` equal parts, and
    /// this rank's part (at `rank() * part`) is sent; every part is filled on every rank.
    #[doc(alias = "ncclAllGather")]
    #[track_caller]
    pub fn all_gather_in_place<T: Element>(
        &self,
        buf: &mut DeviceSliceMut<'_, T>,
        stream: &Stream,
    ) -> Result<()> {
        self.all_gather_in_place_op(buf, stream, false)
    }

    #[track_caller]
    pub(crate) fn all_gather_in_place_op<T: Element>(
        &self,
        buf: &mut DeviceSliceMut<'_, T>,
        stream: &Stream,
        grouped: bool,
    ) -> Result<()> {
        const WHAT: &str = "ncclAllGather";
        let comm = self.ready(WHAT, grouped)?;
        self.check_stream(WHAT, stream)?;
        let part = self.part(WHAT, buf.len())?;
        buf.check_stream(WHAT, stream)?;
        let f = self
            .nccl()
            .function(self.nccl().functions().ncclAllGather, WHAT)?;
        let r = dst(buf);
        let s = element::<T>(r, self.rank() * part);
        let st = stream.as_raw();
        self.call(WHAT, comm, grouped, |c| {
            // SAFETY: as in `all_reduce_in_place_op`; `s` is this rank's part of `buf`
            // (`rank * part + part <= len`), NCCL's in-place form.
            unsafe { f(s, r, part, T::DATA_TYPE.as_raw(), c, st) }
        })
    }

    /// Reduces `send` (`size() * recv.len()` elements) over all ranks with `op` and leaves
    /// part `i` of the result (elements `i * recv.len()..`) in `recv` of rank `i`.
    ///
    /// Calls `ncclReduceScatter`
    /// ([NCCL docs](https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/api/colls.html#ncclreducescatter)).
    #[doc(alias = "ncclReduceScatter")]
    #[track_caller]
    pub fn reduce_scatter<T: Element>(
        &self,
        send: &DeviceSlice<'_, T>,
        recv: &mut DeviceSliceMut<'_, T>,
        op: ReduceOp,
        stream: &Stream,
    ) -> Result<()> {
        self.reduce_scatter_op(send, recv, op, stream, false)
    }

    #[track_caller]
    pub(crate) fn reduce_scatter_op<T: Element>(
        &self,
        send: &DeviceSlice<'_, T>,
        recv: &mut DeviceSliceMut<'_, T>,
        op: ReduceOp,
        stream: &Stream,
        grouped: bool,
    ) -> Result<()> {
        const WHAT: &str = "ncclReduceScatter";
        let comm = self.ready(WHAT, grouped)?;
        self.check_stream(WHAT, stream)?;
        check_len(
            WHAT,
            times_ranks::<T>(WHAT, recv.len(), self.size())?,
            send.len(),
        )?;
        send.check_stream(WHAT, stream)?;
        recv.check_stream(WHAT, stream)?;
        let f = self
            .nccl()
            .function(self.nccl().functions().ncclReduceScatter, WHAT)?;
        let (s, r, n, st) = (src(send), dst(recv), recv.len(), stream.as_raw());
        self.call(WHAT, comm, grouped, |c| {
            // SAFETY: as in `all_reduce_op`; `send` holds `size * n` elements (checked).
            unsafe { f(s, r, n, T::DATA_TYPE.as_raw(), op.as_raw(), c, st) }
        })
    }

    /// [`reduce_scatter`](Self::reduce_scatter) in place: `buf` holds `size()` equal parts
    /// and is reduced over all ranks; this rank's part of the result lands in its part of
    /// `buf` (at `rank() * part`), the rest of `buf` is left undefined.
    #[doc(alias = "ncclReduceScatter")]
    #[track_caller]
    pub fn reduce_scatter_in_place<T: Element>(
        &self,
        buf: &mut DeviceSliceMut<'_, T>,
        op: ReduceOp,
        stream: &Stream,
    ) -> Result<()> {
        self.reduce_scatter_in_place_op(buf, op, stream, false)
    }

    #[track_caller]
    pub(crate) fn reduce_scatter_in_place_op<T: Element>(
        &self,
        buf: &mut DeviceSliceMut<'_, T>,
        op: ReduceOp,
        stream: &Stream,
        grouped: bool,
    ) -> Result<()> {
        const WHAT: &str = "ncclReduceScatter";
        let comm = self.ready(WHAT, grouped)?;
        self.check_stream(WHAT, stream)?;
        let part = self.part(WHAT, buf.len())?;
        buf.check_stream(WHAT, stream)?;
        let f = self
            .nccl()
            .function(self.nccl().functions().ncclReduceScatter, WHAT)?;
        let s = dst(buf);
        let r = element::<T>(s, self.rank() * part);
        let st = stream.as_raw();
        self.call(WHAT, comm, grouped, |c| {
            // SAFETY: as in `all_reduce_in_place_op`; `r` is this rank's part of `buf`,
            // NCCL's in-place form.
            unsafe { f(s, r, part, T::DATA_TYPE.as_raw(), op.as_raw(), c, st) }
        })
    }

    /// Sends `buf` to rank `peer`, which receives it with [`recv`](Self::recv) of the same
    /// length. Alone it blocks the stream until the peer receives; sends and receives that
    /// must progress together (an exchange) go in one [`Group`](crate::Group).
    ///
    /// Calls `ncclSend`
    /// ([NCCL docs](https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/api/p2p.html#ncclsend)).
    #[doc(alias = "ncclSend")]
    #[track_caller]
    pub fn send<T: Element>(
        &self,
        buf: &DeviceSlice<'_, T>,
        peer: usize,
        stream: &Stream,
    ) -> Result<()> {
        self.send_op(buf, peer, stream, false)
    }

    #[track_caller]
    pub(crate) fn send_op<T: Element>(
        &self,
        buf: &DeviceSlice<'_, T>,
        peer: usize,
        stream: &Stream,
        grouped: bool,
    ) -> Result<()> {
        const WHAT: &str = "ncclSend";
        let comm = self.ready(WHAT, grouped)?;
        self.check_stream(WHAT, stream)?;
        let c_peer = self.rank_arg(WHAT, peer)?;
        buf.check_stream(WHAT, stream)?;
        let f = self
            .nccl()
            .function(self.nccl().functions().ncclSend, WHAT)?;
        let (s, n, st) = (src(buf), buf.len(), stream.as_raw());
        self.call(WHAT, comm, grouped, |c| {
            // SAFETY: as in `all_reduce_op`, for the one (read) view.
            unsafe { f(s, n, T::DATA_TYPE.as_raw(), c_peer, c, st) }
        })
    }

    /// Receives into `buf` what rank `peer` sends with [`send`](Self::send) (of the same
    /// length).
    ///
    /// Calls `ncclRecv`
    /// ([NCCL docs](https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/api/p2p.html#ncclrecv)).
    #[doc(alias = "ncclRecv")]
    #[track_caller]
    pub fn recv<T: Element>(
        &self,
        buf: &mut DeviceSliceMut<'_, T>,
        peer: usize,
        stream: &Stream,
    ) -> Result<()> {
        self.recv_op(buf, peer, stream, false)
    }

    #[track_caller]
    pub(crate) fn recv_op<T: Element>(
        &self,
        buf: &mut DeviceSliceMut<'_, T>,
        peer: usize,
        stream: &Stream,
        grouped: bool,
    ) -> Result<()> {
        const WHAT: &str = "ncclRecv";
        let comm = self.ready(WHAT, grouped)?;
        self.check_stream(WHAT, stream)?;
        let c_peer = self.rank_arg(WHAT, peer)?;
        buf.check_stream(WHAT, stream)?;
        let f = self
            .nccl()
            .function(self.nccl().functions().ncclRecv, WHAT)?;
        let (r, n, st) = (dst(buf), buf.len(), stream.as_raw());
        self.call(WHAT, comm, grouped, |c| {
            // SAFETY: as in `all_reduce_op`, for the one (written, exclusively borrowed) view.
            unsafe { f(r, n, T::DATA_TYPE.as_raw(), c_peer, c, st) }
        })
    }
}
