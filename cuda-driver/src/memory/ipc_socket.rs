//! Sending exported memory to another process over a Unix socket: a memory pool's or a
//! physical allocation's file descriptor (`SCM_RIGHTS`) and a pool allocation's pointer-export
//! data, in framed messages that the receiver checks before it trusts them.
//!
//! The exports themselves are [`MemPool::export_fd`], [`AsyncDeviceBuffer::export_pointer`] and
//! [`PhysicalAllocation::export_fd`]; [`IpcSocket`] carries them to a child or a peer process
//! and imports them there ([`MemPool::import_fd`], [`PhysicalAllocation::import_fd`]).
//!
//! Every message is a 16-byte header (a magic value, a version, the message kind, the number of
//! file descriptors it carries, the payload length) and a payload of at most
//! [`IpcSocket::MAX_PAYLOAD`] bytes. The receiver takes ownership of every descriptor the
//! kernel hands it ([`OwnedFd`]) as soon as `recvmsg` returns, so a malformed message (garbage
//! bytes, a wrong kind, a missing, extra or truncated descriptor) is an [`IpcSocketError`] and
//! closes whatever came with it: nothing is leaked and nothing is trusted.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::Path;

use cuda_driver_macros::uses;

use crate::context::Context;
use crate::device::Device;
use crate::error::Error;
use crate::memory::pool::{AsyncDeviceBuffer, MemPool, PoolPtrExportData};
use crate::memory::vmm::PhysicalAllocation;
use crate::repr::DeviceRepr;

/// The first bytes of every message.
const MAGIC: [u8; 8] = *b"CUDRVIPC";
/// The version of the message format.
const VERSION: u8 = 1;
/// Header size in bytes.
const HEADER: usize = 16;
/// The most descriptors one `recvmsg` makes room for; more are discarded by the kernel
/// (`MSG_CTRUNC`) and the message refused.
const MAX_FDS: usize = 8;

/// What a message carries (the header's kind byte).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum IpcMessageKind {
    /// Bytes ([`IpcSocket::send_bytes`]).
    Bytes,
    /// A descriptor and bytes ([`IpcSocket::send_fd`]).
    Fd,
    /// A memory pool's descriptor ([`IpcSocket::send_pool`]).
    Pool,
    /// A pool allocation's export data and size ([`IpcSocket::send_pool_pointer`]).
    PoolPointer,
    /// A physical allocation's descriptor and size ([`IpcSocket::send_allocation`]).
    Allocation,
}

impl IpcMessageKind {
    const fn code(self) -> u8 {
        match self {
            IpcMessageKind::Bytes => 1,
            IpcMessageKind::Fd => 2,
            IpcMessageKind::Pool => 3,
            IpcMessageKind::PoolPointer => 4,
            IpcMessageKind::Allocation => 5,
        }
    }

    fn from_code(code: u8) -> Option<IpcMessageKind> {
        Some(match code {
            1 => IpcMessageKind::Bytes,
            2 => IpcMessageKind::Fd,
            3 => IpcMessageKind::Pool,
            4 => IpcMessageKind::PoolPointer,
            5 => IpcMessageKind::Allocation,
            _ => return None,
        })
    }

    /// The descriptors a message of this kind carries.
    const fn fds(self) -> usize {
        match self {
            IpcMessageKind::Bytes | IpcMessageKind::PoolPointer => 0,
            IpcMessageKind::Fd | IpcMessageKind::Pool | IpcMessageKind::Allocation => 1,
        }
    }
}

/// Why a message could not be sent or received, or what it carried could not be imported.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IpcSocketError {
    /// The socket failed (the peer closed it: [`io::ErrorKind::UnexpectedEof`]; a read
    /// timeout set on the stream: [`io::ErrorKind::WouldBlock`] or `TimedOut`).
    #[error("IPC socket: {0}")]
    Io(#[from] io::Error),
    /// The bytes received are not a message of this format: garbage, another protocol, or a
    /// message cut short. Any descriptor that came with them has been closed.
    #[error("IPC socket: malformed message: {reason}")]
    Malformed {
        /// What was wrong.
        reason: String,
    },
    /// A well-formed message of another kind than the one asked for; its descriptors have
    /// been closed.
    #[error("IPC socket: expected a {expected:?} message, received a {found:?} message")]
    UnexpectedKind {
        /// The kind asked for.
        expected: IpcMessageKind,
        /// The kind received.
        found: IpcMessageKind,
    },
    /// Exporting or importing what the message carries failed in the driver (an fd that is
    /// no CUDA export, a pool made without POSIX fd handles, ...).
    #[error(transparent)]
    Cuda(#[from] Error),
}

/// The result of an [`IpcSocket`] operation.
pub type IpcResult<T> = std::result::Result<T, IpcSocketError>;

fn malformed<T>(reason: impl Into<String>) -> IpcResult<T> {
    Err(IpcSocketError::Malformed {
        reason: reason.into(),
    })
}

/// A pool allocation's export as received by [`IpcSocket::recv_pool_pointer`]: the data to
/// give [`MemPool::import_pointer`] and the allocation's size in bytes, as the sender stated it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct PoolPointerMessage {
    /// The pointer-export data (`CUmemPoolPtrExportData`).
    pub data: PoolPtrExportData,
    /// The size of the exported allocation in bytes, as the sender stated it.
    pub bytes: usize,
}

impl PoolPointerMessage {
    /// The number of `T` elements that fit in the stated size.
    #[allow(clippy::len_without_is_empty)]
    pub fn len<T>(&self) -> usize {
        self.bytes
            .checked_div(std::mem::size_of::<T>())
            .unwrap_or(0)
    }
}

/// One end of a Unix stream socket over which memory exports travel to another process:
/// [`send_pool`](Self::send_pool) / [`recv_pool`](Self::recv_pool),
/// [`send_pool_pointer`](Self::send_pool_pointer) /
/// [`recv_pool_pointer`](Self::recv_pool_pointer), [`send_allocation`](Self::send_allocation) /
/// [`recv_allocation`](Self::recv_allocation), and the building blocks
/// [`send_fd`](Self::send_fd) / [`recv_fd`](Self::recv_fd) and
/// [`send_bytes`](Self::send_bytes) / [`recv_bytes`](Self::recv_bytes).
///
/// Every message is a 16-byte header (a magic value, a version, the message kind, the number
/// of file descriptors it carries, the payload length) and a payload of at most
/// [`MAX_PAYLOAD`](Self::MAX_PAYLOAD) bytes. The receiver takes ownership of every descriptor
/// the kernel hands it ([`OwnedFd`]) as soon as `recvmsg` returns, so a malformed message
/// (garbage bytes, a wrong kind, a missing, extra or truncated descriptor) is an
/// [`IpcSocketError`] and closes whatever came with it: nothing is leaked and nothing is
/// trusted.
///
/// Descriptors cross with `SCM_RIGHTS`: the receiver gets its own descriptor of the same open
/// file, as an [`OwnedFd`] (close-on-exec), and the sender keeps its own. Timeouts are the
/// stream's ([`UnixStream::set_read_timeout`] on [`get_ref`](Self::get_ref)).
///
/// ```no_run
/// use std::os::unix::net::UnixStream;
/// use cuda_driver::memory::pool::{MemPool, MemPoolProps};
/// use cuda_driver::memory::IpcSocket;
/// use cuda_driver::types::MemAllocationHandleType;
/// use cuda_driver::Device;
///
/// # fn parent(stream: UnixStream) -> Result<(), Box<dyn std::error::Error>> {
/// let dev = Device::get(0)?;
/// let props = MemPoolProps::device(dev)
///     .with_handle_types(MemAllocationHandleType::POSIX_FILE_DESCRIPTOR);
/// let pool = MemPool::with_props(dev, &props)?;
/// let mut socket = IpcSocket::new(stream);
/// socket.send_pool(&pool)?; // the child: `socket.recv_pool(dev)?`
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct IpcSocket {
    stream: UnixStream,
}

impl From<UnixStream> for IpcSocket {
    fn from(stream: UnixStream) -> Self {
        IpcSocket::new(stream)
    }
}

impl AsFd for IpcSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.stream.as_fd()
    }
}

impl IpcSocket {
    /// The largest payload a message may have; a header announcing more is refused
    /// ([`IpcSocketError::Malformed`]) before anything is allocated.
    pub const MAX_PAYLOAD: usize = 1 << 20;

    /// Wraps a connected Unix stream socket.
    pub fn new(stream: UnixStream) -> IpcSocket {
        IpcSocket { stream }
    }

    /// Connects to the Unix socket at `path`.
    pub fn connect(path: impl AsRef<Path>) -> io::Result<IpcSocket> {
        UnixStream::connect(path).map(IpcSocket::new)
    }

    /// Two connected ends (`socketpair`), for example to hand one to a child process.
    pub fn pair() -> io::Result<(IpcSocket, IpcSocket)> {
        let (a, b) = UnixStream::pair()?;
        Ok((IpcSocket::new(a), IpcSocket::new(b)))
    }

    /// The stream (to set timeouts).
    pub fn get_ref(&self) -> &UnixStream {
        &self.stream
    }

    /// The stream, given back.
    pub fn into_inner(self) -> UnixStream {
        self.stream
    }

    /// Sends `bytes` as one message.
    pub fn send_bytes(&mut self, bytes: &[u8]) -> IpcResult<()> {
        self.send(IpcMessageKind::Bytes, None, bytes)
    }

    /// Receives a message sent with [`send_bytes`](Self::send_bytes).
    pub fn recv_bytes(&mut self) -> IpcResult<Vec<u8>> {
        let (_, payload) = self.recv(IpcMessageKind::Bytes)?;
        Ok(payload)
    }

    /// Sends a file descriptor and `payload` as one message (`sendmsg` with `SCM_RIGHTS`).
    #[doc(alias = "SCM_RIGHTS")]
    #[doc(alias = "sendmsg")]
    pub fn send_fd(&mut self, fd: BorrowedFd<'_>, payload: &[u8]) -> IpcResult<()> {
        self.send(IpcMessageKind::Fd, Some(fd), payload)
    }

    /// Receives a message sent with [`send_fd`](Self::send_fd): the descriptor, owned by the
    /// caller (close-on-exec), and the payload.
    #[doc(alias = "recvmsg")]
    pub fn recv_fd(&mut self) -> IpcResult<(OwnedFd, Vec<u8>)> {
        let (fd, payload) = self.recv(IpcMessageKind::Fd)?;
        Ok((one_fd(fd)?, payload))
    }

    /// Exports `pool` as a POSIX file descriptor ([`MemPool::export_fd`], which needs a pool
    /// made with [`MemAllocationHandleType::POSIX_FILE_DESCRIPTOR`]) and sends it. The
    /// exported descriptor is closed here once sent.
    ///
    /// [`MemAllocationHandleType::POSIX_FILE_DESCRIPTOR`]: crate::types::MemAllocationHandleType::POSIX_FILE_DESCRIPTOR
    #[uses(cuMemPoolExportToShareableHandle)]
    pub fn send_pool(&mut self, pool: &MemPool) -> IpcResult<()> {
        let fd = pool.export_fd()?;
        self.send(IpcMessageKind::Pool, Some(fd.as_fd()), &[])
    }

    /// Receives a pool sent with [`send_pool`](Self::send_pool) and imports it for `device`
    /// ([`MemPool::import_fd`]); the received descriptor is closed once imported (or refused).
    /// A descriptor that is not a pool export is the driver's error
    /// ([`IpcSocketError::Cuda`]).
    #[uses(cuMemPoolImportFromShareableHandle)]
    pub fn recv_pool(&mut self, device: Device) -> IpcResult<MemPool> {
        let (fd, _) = self.recv(IpcMessageKind::Pool)?;
        let fd = one_fd(fd)?;
        Ok(MemPool::import_fd(device, fd.as_fd())?)
    }

    /// Exports `buf`, an allocation of a pool shared with [`send_pool`](Self::send_pool)
    /// ([`AsyncDeviceBuffer::export_pointer`]), and sends the export data with its size in
    /// bytes. The receiver imports it with [`MemPool::import_pointer`], whose contract (the
    /// allocation has completed, and is freed here only after the receiver is done with it)
    /// is for the two processes to keep: synchronise `buf`'s stream before sending, and wait
    /// for the receiver's word before dropping `buf`.
    #[uses(cuMemPoolExportPointer)]
    pub fn send_pool_pointer<T: DeviceRepr>(
        &mut self,
        buf: &AsyncDeviceBuffer<'_, T>,
    ) -> IpcResult<()> {
        use crate::memory::owner::DeviceMemory;
        let data = buf.export_pointer()?;
        let bytes = buf.len() * std::mem::size_of::<T>();
        let mut payload = [0u8; 72];
        payload[..64].copy_from_slice(&data.to_bytes());
        payload[64..].copy_from_slice(&(bytes as u64).to_le_bytes());
        self.send(IpcMessageKind::PoolPointer, None, &payload)
    }

    /// Receives a pool allocation's export sent with
    /// [`send_pool_pointer`](Self::send_pool_pointer). Importing it
    /// ([`MemPool::import_pointer`]) stays `unsafe`: the sender's word that the allocation is
    /// complete and stays alive is not something a message can prove.
    #[uses(cuMemPoolImportPointer)]
    pub fn recv_pool_pointer(&mut self) -> IpcResult<PoolPointerMessage> {
        let (_, payload) = self.recv(IpcMessageKind::PoolPointer)?;
        let Ok(payload) = <[u8; 72]>::try_from(payload.as_slice()) else {
            return malformed(format!(
                "a pool pointer message has 72 bytes of payload, this one {}",
                payload.len()
            ));
        };
        let mut data = [0u8; 64];
        data.copy_from_slice(&payload[..64]);
        let mut size = [0u8; 8];
        size.copy_from_slice(&payload[64..]);
        let Ok(bytes) = usize::try_from(u64::from_le_bytes(size)) else {
            return malformed("the allocation size does not fit in usize");
        };
        Ok(PoolPointerMessage {
            data: PoolPtrExportData::from_bytes(data),
            bytes,
        })
    }

    /// Exports `alloc` as a POSIX file descriptor ([`PhysicalAllocation::export_fd`], which
    /// needs an allocation made with
    /// [`MemAllocationHandleType::POSIX_FILE_DESCRIPTOR`](crate::types::MemAllocationHandleType::POSIX_FILE_DESCRIPTOR))
    /// and sends it with its size, which the descriptor does not carry. An allocation of
    /// unknown size (imported or retained without
    /// [`with_known_size`](PhysicalAllocation::with_known_size)) is
    /// [`Error::InvalidArgument`] before anything is exported.
    #[uses(cuMemExportToShareableHandle)]
    pub fn send_allocation(&mut self, alloc: &PhysicalAllocation) -> IpcResult<()> {
        let Some(size) = alloc.size() else {
            return Err(Error::InvalidArgument(
                "IpcSocket::send_allocation: the allocation's size is unknown (record it with \
                 PhysicalAllocation::with_known_size)"
                    .into(),
            )
            .into());
        };
        let fd = alloc.export_fd()?;
        self.send(
            IpcMessageKind::Allocation,
            Some(fd.as_fd()),
            &(size as u64).to_le_bytes(),
        )
    }

    /// Receives an allocation sent with [`send_allocation`](Self::send_allocation) and imports
    /// it ([`PhysicalAllocation::import_fd`]) with the size the sender stated (`cuMemMap`
    /// checks the real one, so a false size is a driver error, not an overrun). The received
    /// descriptor is closed once imported (or refused).
    #[uses(cuMemImportFromShareableHandle)]
    pub fn recv_allocation(&mut self, ctx: &Context) -> IpcResult<PhysicalAllocation> {
        let (fd, payload) = self.recv(IpcMessageKind::Allocation)?;
        let fd = one_fd(fd)?;
        let Ok(size) = <[u8; 8]>::try_from(payload.as_slice()) else {
            return malformed(format!(
                "an allocation message has 8 bytes of payload, this one {}",
                payload.len()
            ));
        };
        let Ok(size) = usize::try_from(u64::from_le_bytes(size)) else {
            return malformed("the allocation size does not fit in usize");
        };
        if size == 0 {
            return malformed("an allocation of 0 bytes");
        }
        Ok(PhysicalAllocation::import_fd(ctx, fd.as_fd())?.with_known_size(size))
    }

    /// Sends one message: the header and `payload` in one `sendmsg`, `fd` attached to its
    /// first byte; the rest, if the kernel took only part, with `send`.
    fn send(
        &mut self,
        kind: IpcMessageKind,
        fd: Option<BorrowedFd<'_>>,
        payload: &[u8],
    ) -> IpcResult<()> {
        debug_assert_eq!(kind.fds(), usize::from(fd.is_some()));
        if payload.len() > Self::MAX_PAYLOAD {
            return Err(Error::InvalidArgument(format!(
                "IpcSocket: a payload of {} bytes is more than MAX_PAYLOAD ({})",
                payload.len(),
                Self::MAX_PAYLOAD
            ))
            .into());
        }
        let mut msg = Vec::with_capacity(HEADER + payload.len());
        msg.extend_from_slice(&MAGIC);
        msg.push(VERSION);
        msg.push(kind.code());
        msg.push(u8::from(fd.is_some()));
        msg.push(0);
        msg.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        msg.extend_from_slice(payload);
        let sent = sendmsg_fd(self.stream.as_raw_fd(), &msg, fd)?;
        let mut rest = &msg[sent..];
        while !rest.is_empty() {
            // SAFETY: `rest` is a live buffer of `rest.len()` bytes; MSG_NOSIGNAL: a closed
            // peer is EPIPE, not a signal.
            let n = unsafe {
                libc::send(
                    self.stream.as_raw_fd(),
                    rest.as_ptr().cast(),
                    rest.len(),
                    libc::MSG_NOSIGNAL,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e.into());
            }
            rest = &rest[n as usize..];
        }
        Ok(())
    }

    /// Receives one message of `expected` kind: its descriptor (when the kind carries one) and
    /// payload. Every descriptor received is owned from the moment `recvmsg` returns, and
    /// closed unless handed back.
    fn recv(&mut self, expected: IpcMessageKind) -> IpcResult<(Option<OwnedFd>, Vec<u8>)> {
        let mut fds = Vec::new();
        let mut header = [0u8; HEADER];
        self.recv_exact(&mut header, &mut fds)?;
        let (kind, nfds, len) = parse_header(&header)?;
        let mut payload = vec![0u8; len];
        self.recv_exact(&mut payload, &mut fds)?;
        if fds.len() != nfds {
            return malformed(format!(
                "the header announces {nfds} file descriptor(s), {} came",
                fds.len()
            ));
        }
        if kind != expected {
            return Err(IpcSocketError::UnexpectedKind {
                expected,
                found: kind,
            });
        }
        Ok((fds.pop(), payload))
    }

    /// Fills `buf` with `recvmsg` calls, each with room for descriptors, which are pushed to
    /// `fds` (owned) as they come.
    fn recv_exact(&mut self, buf: &mut [u8], fds: &mut Vec<OwnedFd>) -> IpcResult<()> {
        let mut filled = 0;
        while filled < buf.len() {
            match recvmsg_fds(self.stream.as_raw_fd(), &mut buf[filled..], fds) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the peer closed the socket in the middle of a message",
                    )
                    .into())
                }
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
            if fds.len() > MAX_FDS {
                return malformed("more file descriptors than any message carries");
            }
        }
        Ok(())
    }
}

/// The descriptor of a message whose kind carries one (`recv` checked the count).
fn one_fd(fd: Option<OwnedFd>) -> IpcResult<OwnedFd> {
    match fd {
        Some(fd) => Ok(fd),
        None => malformed("the message carried no file descriptor"),
    }
}

/// Checks a header: magic, version, kind, descriptor count for the kind, payload length.
fn parse_header(h: &[u8; HEADER]) -> IpcResult<(IpcMessageKind, usize, usize)> {
    if h[..8] != MAGIC {
        return malformed("no message header (wrong magic bytes)");
    }
    if h[8] != VERSION {
        return malformed(format!(
            "message format version {}, expected {VERSION}",
            h[8]
        ));
    }
    let Some(kind) = IpcMessageKind::from_code(h[9]) else {
        return malformed(format!("unknown message kind {}", h[9]));
    };
    let nfds = usize::from(h[10]);
    if nfds != kind.fds() {
        return malformed(format!(
            "a {kind:?} message carries {} file descriptor(s), the header says {nfds}",
            kind.fds()
        ));
    }
    if h[11] != 0 {
        return malformed("reserved header byte is not 0");
    }
    let len = u32::from_le_bytes([h[12], h[13], h[14], h[15]]) as usize;
    if len > IpcSocket::MAX_PAYLOAD {
        return malformed(format!(
            "a payload of {len} bytes is more than MAX_PAYLOAD ({})",
            IpcSocket::MAX_PAYLOAD
        ));
    }
    Ok((kind, nfds, len))
}

/// Room for `MAX_FDS` descriptors in a control buffer, in `u64` words (aligned for cmsghdr).
const CBUF_WORDS: usize = 16;

/// `sendmsg` of `bytes` (not empty) with `fd` attached (`SCM_RIGHTS`); the bytes sent.
fn sendmsg_fd(sock: RawFd, bytes: &[u8], fd: Option<BorrowedFd<'_>>) -> io::Result<usize> {
    let mut iov = libc::iovec {
        iov_base: bytes.as_ptr() as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    let mut cbuf = [0u64; CBUF_WORDS];
    // SAFETY: msghdr is plain data; all-zero is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if let Some(fd) = fd {
        // SAFETY: CMSG_SPACE is a pure computation.
        let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) };
        debug_assert!(space as usize <= std::mem::size_of_val(&cbuf));
        msg.msg_control = cbuf.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        // SAFETY: msg_control points to `space` zeroed bytes, room for one header with one
        // int (CMSG_SPACE); CMSG_FIRSTHDR returns a pointer into them, written before the call.
        unsafe {
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>(), fd.as_raw_fd());
        }
    }
    loop {
        // SAFETY: `msg` and everything it points to (iov, bytes, cbuf) live across the call;
        // the descriptor is borrowed for it (the kernel duplicates it for the receiver).
        let n = unsafe { libc::sendmsg(sock, &msg, libc::MSG_NOSIGNAL) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// One `recvmsg` into `buf` (close-on-exec descriptors); every descriptor in the control data
/// is pushed to `fds` as an [`OwnedFd`]. A truncated control buffer (`MSG_CTRUNC`: the kernel
/// closed the descriptors that did not fit) is `InvalidData`, after taking the ones that fit.
fn recvmsg_fds(sock: RawFd, buf: &mut [u8], fds: &mut Vec<OwnedFd>) -> io::Result<usize> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut cbuf = [0u64; CBUF_WORDS];
    // SAFETY: msghdr is plain data; all-zero is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&cbuf) as _;
    // SAFETY: `msg` points to live buffers of the sizes it states.
    let n = unsafe { libc::recvmsg(sock, &mut msg, libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel filled msg_control with msg_controllen bytes of well-formed headers;
    // CMSG_FIRSTHDR/CMSG_NXTHDR/CMSG_DATA stay inside them, and each SCM_RIGHTS header holds
    // (cmsg_len - CMSG_LEN(0)) / sizeof(int) descriptors, new in this process and owned by
    // nobody else: each is wrapped in an OwnedFd at once.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(cmsg).cast::<libc::c_int>();
                let bytes = ((*cmsg).cmsg_len as usize).saturating_sub(libc::CMSG_LEN(0) as usize);
                for i in 0..bytes / std::mem::size_of::<libc::c_int>() {
                    let fd = std::ptr::read_unaligned(data.add(i));
                    if fd >= 0 {
                        fds.push(OwnedFd::from_raw_fd(fd));
                    }
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    if msg.msg_flags & libc::MSG_CTRUNC != 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "more file descriptors than any message carries (control data truncated)",
        ));
    }
    Ok(n as usize)
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::os::fd::{AsFd, OwnedFd};

    use super::*;
    use proptest::prelude::*;

    /// A pipe: (read end, write end).
    fn pipe() -> (std::fs::File, OwnedFd) {
        let mut fds = [0; 2];
        // SAFETY: writes two descriptors, owned by the values built next.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: fresh descriptors from pipe2, owned here.
        unsafe {
            (
                std::fs::File::from_raw_fd(fds[0]),
                OwnedFd::from_raw_fd(fds[1]),
            )
        }
    }

    /// Whether every copy of a pipe's write end is closed: the read end sees end-of-file (the
    /// only way to know that a descriptor sent over the socket was not leaked).
    fn all_writers_closed(mut r: std::fs::File) -> bool {
        let mut b = [0u8; 1];
        // SAFETY: sets O_NONBLOCK on a descriptor owned by `r`.
        unsafe { libc::fcntl(r.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
        matches!(r.read(&mut b), Ok(0))
    }

    #[test]
    fn bytes_and_descriptors_cross_and_are_owned_by_the_receiver() {
        let (mut a, mut b) = IpcSocket::pair().unwrap();
        a.send_bytes(b"hello").unwrap();
        assert_eq!(b.recv_bytes().unwrap(), b"hello");
        a.send_bytes(&[]).unwrap();
        assert_eq!(b.recv_bytes().unwrap(), b"");
        let (r, w) = pipe();
        a.send_fd(w.as_fd(), b"payload").unwrap();
        drop(w);
        let (got, payload) = b.recv_fd().unwrap();
        assert_eq!(payload, b"payload");
        // The received descriptor is the pipe's write end.
        let mut f = std::fs::File::from(got);
        f.write_all(b"x").unwrap();
        drop(f);
        let mut r = r;
        let mut s = String::new();
        r.read_to_string(&mut s).unwrap();
        assert_eq!(s, "x");
        // A large payload crosses whole.
        let big = vec![7u8; IpcSocket::MAX_PAYLOAD];
        let t = std::thread::spawn(move || {
            a.send_bytes(&big).unwrap();
            a
        });
        assert_eq!(b.recv_bytes().unwrap().len(), IpcSocket::MAX_PAYLOAD);
        let mut a = t.join().unwrap();
        // Too large is refused before anything is sent.
        let e = a
            .send_bytes(&vec![0; IpcSocket::MAX_PAYLOAD + 1])
            .unwrap_err();
        assert!(
            matches!(e, IpcSocketError::Cuda(Error::InvalidArgument(_))),
            "{e:?}"
        );
    }

    #[test]
    fn a_message_of_another_kind_is_refused_and_its_descriptor_closed() {
        let (mut a, mut b) = IpcSocket::pair().unwrap();
        let (r, w) = pipe();
        a.send_fd(w.as_fd(), &[]).unwrap();
        drop(w);
        let e = b.recv_bytes().unwrap_err();
        assert!(
            matches!(
                e,
                IpcSocketError::UnexpectedKind {
                    expected: IpcMessageKind::Bytes,
                    found: IpcMessageKind::Fd
                }
            ),
            "{e:?}"
        );
        assert!(all_writers_closed(r), "the refused descriptor was leaked");
        // A bytes message where a pool is expected: refused, nothing imported.
        a.send_bytes(b"not a pool").unwrap();
        assert!(matches!(
            b.recv_fd(),
            Err(IpcSocketError::UnexpectedKind { .. })
        ));
    }

    /// Writes raw bytes to the socket, with `fds` attached.
    fn send_raw(a: &IpcSocket, bytes: &[u8], fds: &[BorrowedFd<'_>]) {
        let mut iov = libc::iovec {
            iov_base: bytes.as_ptr() as *mut libc::c_void,
            iov_len: bytes.len(),
        };
        let mut cbuf = [0u64; 16];
        // SAFETY: as in sendmsg_fd, for `fds.len()` ints (at most 8, which fit).
        unsafe {
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            if !fds.is_empty() {
                let n = (fds.len() * 4) as u32;
                msg.msg_control = cbuf.as_mut_ptr().cast();
                msg.msg_controllen = libc::CMSG_SPACE(n) as _;
                let cmsg = libc::CMSG_FIRSTHDR(&msg);
                (*cmsg).cmsg_level = libc::SOL_SOCKET;
                (*cmsg).cmsg_type = libc::SCM_RIGHTS;
                (*cmsg).cmsg_len = libc::CMSG_LEN(n) as _;
                let data = libc::CMSG_DATA(cmsg).cast::<libc::c_int>();
                for (i, fd) in fds.iter().enumerate() {
                    std::ptr::write_unaligned(data.add(i), fd.as_raw_fd());
                }
            }
            assert_eq!(
                libc::sendmsg(a.as_fd().as_raw_fd(), &msg, 0),
                bytes.len() as isize
            );
        }
    }

    fn header(kind: u8, nfds: u8, len: u32) -> Vec<u8> {
        let mut h = MAGIC.to_vec();
        h.extend_from_slice(&[VERSION, kind, nfds, 0]);
        h.extend_from_slice(&len.to_le_bytes());
        h
    }

    #[test]
    fn garbage_and_wrong_descriptor_counts_are_errors_and_close_every_descriptor() {
        let cases: Vec<(Vec<u8>, usize)> = vec![
            // Not a header at all, with a descriptor.
            (b"GARBAGE!GARBAGE!".to_vec(), 1),
            // A pool message without its descriptor.
            (header(3, 1, 0), 0),
            // A bytes message with a descriptor it does not announce.
            (header(1, 0, 0), 1),
            // An fd message with three descriptors.
            (header(2, 1, 0), 3),
            // A header that lies about the count.
            (header(3, 0, 0), 1),
            // An unknown kind, a wrong version, a reserved byte, an absurd length.
            (header(200, 0, 0), 1),
            (
                {
                    let mut h = header(1, 0, 0);
                    h[8] = 99;
                    h
                },
                1,
            ),
            (
                {
                    let mut h = header(1, 0, 0);
                    h[11] = 1;
                    h
                },
                0,
            ),
            (header(1, 0, u32::MAX), 1),
            // A pool pointer message of the wrong size.
            (
                {
                    let mut h = header(4, 0, 3);
                    h.extend_from_slice(&[1, 2, 3]);
                    h
                },
                0,
            ),
        ];
        for (i, (bytes, nfds)) in cases.into_iter().enumerate() {
            let (a, mut b) = IpcSocket::pair().unwrap();
            let (r, w) = pipe();
            let copies: Vec<_> = (0..nfds).map(|_| w.as_fd()).collect();
            send_raw(&a, &bytes, &copies);
            drop(w);
            drop(a);
            let e = match i % 3 {
                0 => b.recv_fd().map(drop),
                1 => b.recv_bytes().map(drop),
                _ => b.recv_pool_pointer().map(drop),
            }
            .unwrap_err();
            assert!(
                matches!(
                    e,
                    IpcSocketError::Malformed { .. }
                        | IpcSocketError::UnexpectedKind { .. }
                        | IpcSocketError::Io(_)
                ),
                "case {i}: {e:?}"
            );
            assert!(!e.to_string().is_empty());
            drop(b);
            assert!(all_writers_closed(r), "case {i}: a descriptor was leaked");
        }
    }

    #[test]
    fn more_descriptors_than_fit_are_refused_and_none_is_leaked() {
        let (a, mut b) = IpcSocket::pair().unwrap();
        let (r, w) = pipe();
        // 8 fit in the sender's buffer; the receiver's holds MAX_FDS: fine, but too many
        // for the message.
        let copies: Vec<_> = (0..8).map(|_| w.as_fd()).collect();
        send_raw(&a, &header(2, 1, 0), &copies);
        drop(w);
        assert!(b.recv_fd().is_err());
        drop((a, b));
        assert!(all_writers_closed(r));
    }

    #[test]
    fn a_peer_that_closes_mid_message_is_an_eof_error() {
        let (a, mut b) = IpcSocket::pair().unwrap();
        let mut h = header(1, 0, 10);
        h.extend_from_slice(b"abc");
        send_raw(&a, &h, &[]);
        drop(a);
        match b.recv_bytes() {
            Err(IpcSocketError::Io(e)) => assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof),
            other => panic!("{other:?}"),
        }
        let (a, mut b) = IpcSocket::pair().unwrap();
        drop(a);
        assert!(matches!(b.recv_bytes(), Err(IpcSocketError::Io(_))));
    }

    #[test]
    fn pool_pointer_messages_round_trip() {
        let (mut a, mut b) = IpcSocket::pair().unwrap();
        let mut payload = [0u8; 72];
        payload[..64].copy_from_slice(&[9; 64]);
        payload[64..].copy_from_slice(&4096u64.to_le_bytes());
        a.send(IpcMessageKind::PoolPointer, None, &payload).unwrap();
        let m = b.recv_pool_pointer().unwrap();
        assert_eq!(m.data, PoolPtrExportData::from_bytes([9; 64]));
        assert_eq!((m.bytes, m.len::<u32>(), m.len::<()>()), (4096, 1024, 0));
    }

    proptest! {
        #[test]
        fn random_bytes_never_panic_and_are_errors_or_messages(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let (a, mut b) = IpcSocket::pair().unwrap();
            (&a.stream).write_all(&bytes).unwrap();
            drop(a);
            // Either an error or, by chance, a well-formed bytes message.
            let _ = b.recv_bytes();
            let _ = b.recv_fd();
        }
    }
}
