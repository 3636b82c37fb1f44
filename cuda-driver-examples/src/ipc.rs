//! Two processes of one example: the example re-executes itself as a child that connects
//! back over a Unix socket, through which the two exchange messages and file descriptors
//! (the crate's `IpcSocket`). Used by `mem_map_ipc_drv` and `simple_ipc`.

use std::io;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cuda_driver::memory::{IpcSocket, IpcSocketError};

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
    Ok(Some(Peer(IpcSocket::new(stream))))
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
                return Ok((child, Peer(IpcSocket::new(stream))));
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

/// One end of the connection between the two processes: the crate's [`IpcSocket`] (framed
/// messages; exported pools and allocations with their file descriptors over `SCM_RIGHTS`).
pub struct Peer(pub IpcSocket);

fn io(e: IpcSocketError) -> io::Error {
    match e {
        IpcSocketError::Io(e) => e,
        e => io::Error::other(e),
    }
}

impl Peer {
    /// Sends one message.
    pub fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.0.send_bytes(bytes).map_err(io)
    }

    /// Receives one message sent with [`send`](Self::send).
    pub fn recv(&mut self) -> io::Result<Vec<u8>> {
        self.0.recv_bytes().map_err(io)
    }

    /// Receives a message of exactly `N` bytes.
    pub fn recv_array<const N: usize>(&mut self) -> io::Result<[u8; N]> {
        self.recv()?
            .try_into()
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "unexpected message size"))
    }
}
