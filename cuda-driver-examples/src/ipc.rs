//! Two processes of one example: the example re-executes itself as a child that connects
//! back over a Unix socket, through which the two exchange messages and file descriptors
//! (`SCM_RIGHTS`). Used by `mem_map_ipc_drv` and `simple_ipc`.

use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::Failure;

/// The environment variable that tells a child its socket's path.
const SOCKET_VAR: &str = "CUDA_DRIVER_EXAMPLE_SOCKET";
/// How long either side waits for the other.
const TIMEOUT: Duration = Duration::from_secs(60);

/// In the child process: the connection to the parent. `None` in the parent.
pub fn connect_to_parent() -> Result<Option<Peer>, Failure> {
    let Ok(path) = std::env::var(SOCKET_VAR) else {
        return Ok(None);
    };
    let stream = UnixStream::connect(path)?;
    stream.set_read_timeout(Some(TIMEOUT))?;
    Ok(Some(Peer(stream)))
}

/// The child process, killed (if still running) and reaped when dropped.
pub struct Child {
    proc: Option<std::process::Child>,
    path: PathBuf,
}

impl Child {
    /// Waits for the child and fails unless it exited successfully.
    pub fn wait(mut self) -> Result<(), Failure> {
        let status = self.proc.take().map(|mut p| p.wait()).transpose()?;
        match status {
            Some(s) if !s.success() => Err(format!("the child process failed ({s})").into()),
            _ => Ok(()),
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if let Some(mut p) = self.proc.take() {
            let _ = p.kill();
            let _ = p.wait();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Starts this program again as a child (its output goes to this program's), and returns it
/// with the connection to it.
pub fn spawn_self() -> Result<(Child, Peer), Failure> {
    let path =
        std::env::temp_dir().join(format!("cuda-driver-example-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path)?;
    listener.set_nonblocking(true)?;
    let proc = Command::new(std::env::current_exe()?)
        .env(SOCKET_VAR, &path)
        .stdin(Stdio::null())
        .spawn()?;
    let mut child = Child {
        proc: Some(proc),
        path,
    };
    let start = Instant::now();
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                stream.set_nonblocking(false)?;
                stream.set_read_timeout(Some(TIMEOUT))?;
                return Ok((child, Peer(stream)));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let exited = child
                    .proc
                    .as_mut()
                    .map(|p| p.try_wait())
                    .transpose()?
                    .flatten();
                if let Some(s) = exited {
                    return Err(format!("the child process exited ({s}) before connecting").into());
                }
                if start.elapsed() > TIMEOUT {
                    return Err("the child process never connected".into());
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// One end of the connection between the two processes.
pub struct Peer(UnixStream);

impl Peer {
    /// Sends one message (length-prefixed).
    pub fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.0.write_all(&(bytes.len() as u64).to_le_bytes())?;
        self.0.write_all(bytes)
    }

    /// Receives one message sent with [`send`](Self::send).
    pub fn recv(&mut self) -> io::Result<Vec<u8>> {
        let mut len = [0u8; 8];
        self.0.read_exact(&mut len)?;
        let mut buf = vec![0u8; u64::from_le_bytes(len) as usize];
        self.0.read_exact(&mut buf)?;
        Ok(buf)
    }

    /// Receives a message of exactly `N` bytes.
    pub fn recv_array<const N: usize>(&mut self) -> io::Result<[u8; N]> {
        self.recv()?
            .try_into()
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "unexpected message size"))
    }

    /// Sends a file descriptor (`SCM_RIGHTS`): the receiver gets its own descriptor of the
    /// same open file.
    pub fn send_fd(&mut self, fd: BorrowedFd<'_>) -> io::Result<()> {
        let byte = [b'F'];
        let mut iov = libc::iovec {
            iov_base: byte.as_ptr() as *mut libc::c_void,
            iov_len: 1,
        };
        // u64 words: aligned for cmsghdr.
        let mut cbuf = [0u64; 8];
        // SAFETY: CMSG_SPACE is a pure computation.
        let space = unsafe { libc::CMSG_SPACE(size_of::<libc::c_int>() as u32) } as usize;
        assert!(space <= size_of_val(&cbuf));
        // SAFETY: msghdr is plain data; all-zero is a valid empty header.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        // SAFETY: msg_control points to `space` bytes, room for one header with one int;
        // CMSG_FIRSTHDR returns a pointer into it, written before the call.
        unsafe {
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(size_of::<libc::c_int>() as u32) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>(), fd.as_raw_fd());
        }
        // SAFETY: `msg` and everything it points to live across the call.
        let n = unsafe { libc::sendmsg(self.0.as_raw_fd(), &msg, 0) };
        match n {
            1 => Ok(()),
            n if n < 0 => Err(io::Error::last_os_error()),
            _ => Err(io::Error::new(
                io::ErrorKind::WriteZero,
                "sendmsg sent nothing",
            )),
        }
    }

    /// Receives a file descriptor sent with [`send_fd`](Self::send_fd) (close-on-exec).
    pub fn recv_fd(&mut self) -> io::Result<OwnedFd> {
        let mut byte = [0u8];
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut cbuf = [0u64; 8];
        // SAFETY: msghdr is plain data; all-zero is a valid empty header.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr().cast();
        msg.msg_controllen = size_of_val(&cbuf) as _;
        // SAFETY: `msg` points to live buffers of the sizes it states.
        let n = unsafe { libc::recvmsg(self.0.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n == 0 || byte[0] != b'F' {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "expected a file descriptor message",
            ));
        }
        // SAFETY: the kernel filled msg_control with msg_controllen bytes of headers;
        // CMSG_FIRSTHDR/CMSG_DATA stay inside them.
        unsafe {
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            if !cmsg.is_null()
                && (*cmsg).cmsg_level == libc::SOL_SOCKET
                && (*cmsg).cmsg_type == libc::SCM_RIGHTS
            {
                let fd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>());
                // SAFETY: SCM_RIGHTS installed a new descriptor in this process for us.
                return Ok(OwnedFd::from_raw_fd(fd));
            }
        }
        Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the message carried no file descriptor",
        ))
    }
}
