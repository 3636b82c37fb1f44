//! Multi-process tests: a test re-executes its own binary as a child process that runs the
//! same test in a child role, and the two talk over a Unix socket.
//!
//! * [`spawn_child`] (in the parent) binds a socket, starts
//!   `current_exe --exact <this test> --nocapture` with [`ROLE_VAR`] naming the role and
//!   [`SOCKET_VAR`] the socket's path, and returns the child and the connection.
//! * [`child_role`] (first line of such a test) returns the connection when this process is
//!   the child of that role, and the test then runs the child's side and returns.
//! * [`Channel`] sends byte messages and file descriptors (`SCM_RIGHTS`).
//! * [`Child`] always reaps the process (killing it if it still runs when dropped); a child
//!   that fails (a panic, a non-zero exit) fails the parent's test with its output.

#[cfg(unix)]
pub use unix::*;

/// Child processes and the socket to them (Unix only: file descriptors over SCM_RIGHTS).
#[cfg(unix)]
mod unix {
    use std::io::{self, Read};
    use std::os::unix::net::{UnixListener, UnixStream};
    use std::path::PathBuf;
    use std::process::{Command, ExitStatus, Stdio};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::thread::JoinHandle;
    use std::time::{Duration, Instant};

    /// The environment variable naming the child's role.
    pub const ROLE_VAR: &str = "CUDA_DRIVER_TEST_CHILD_ROLE";
    /// The environment variable holding the socket's path.
    pub const SOCKET_VAR: &str = "CUDA_DRIVER_TEST_CHILD_SOCKET";
    /// How long either side waits for the other before failing.
    const TIMEOUT: Duration = Duration::from_secs(120);

    /// The connection to the parent when this process is the child of `role`.
    pub fn child_role(role: &str) -> Option<Channel> {
        if std::env::var(ROLE_VAR).ok()? != role {
            return None;
        }
        let path = std::env::var(SOCKET_VAR).expect("a child process has the socket path");
        let stream = UnixStream::connect(&path).expect("the child connects to the parent");
        stream.set_read_timeout(Some(TIMEOUT)).unwrap();
        Some(Channel(cuda_driver::memory::IpcSocket::new(stream)))
    }

    /// A child process of a test; reaped when finished or dropped.
    pub struct Child {
        child: Option<std::process::Child>,
        out: Option<JoinHandle<String>>,
        err: Option<JoinHandle<String>>,
        path: PathBuf,
    }

    fn drain(r: impl Read + Send + 'static) -> JoinHandle<String> {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::BufReader::new(r).read_to_string(&mut s);
            s
        })
    }

    /// Starts this test again in a child process with `role`, and returns it with the
    /// connection to it.
    #[track_caller]
    pub fn spawn_child(role: &str) -> (Child, Channel) {
        static N: AtomicUsize = AtomicUsize::new(0);
        let test = std::thread::current()
            .name()
            .expect("the test runner names the test thread after the test")
            .to_string();
        let path = std::env::temp_dir().join(format!(
            "cuda-driver-test-{}-{}.sock",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path).expect("bind the test socket");
        listener.set_nonblocking(true).unwrap();
        let mut cmd = Command::new(std::env::current_exe().expect("the test binary's path"));
        cmd.args(["--exact", &test, "--nocapture", "--test-threads=1"])
            .env(ROLE_VAR, role)
            .env(SOCKET_VAR, &path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut proc = cmd.spawn().expect("start the child process");
        let out = drain(proc.stdout.take().unwrap());
        let err = drain(proc.stderr.take().unwrap());
        let mut child = Child {
            child: Some(proc),
            out: Some(out),
            err: Some(err),
            path,
        };
        let start = Instant::now();
        let stream = loop {
            match listener.accept() {
                Ok((s, _)) => break s,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let exited = child.child.as_mut().unwrap().try_wait().unwrap().is_some();
                    if exited || start.elapsed() > TIMEOUT {
                        child.fail("the child never connected");
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => child.fail(&format!("accept failed: {e}")),
            }
        };
        stream.set_nonblocking(false).unwrap();
        stream.set_read_timeout(Some(TIMEOUT)).unwrap();
        (child, Channel(cuda_driver::memory::IpcSocket::new(stream)))
    }

    impl Child {
        /// Waits for the child (killing it after the timeout) and returns its status and
        /// output.
        fn reap(&mut self) -> Option<(ExitStatus, String)> {
            let mut proc = self.child.take()?;
            let start = Instant::now();
            let status = loop {
                match proc.try_wait() {
                    Ok(Some(s)) => break s,
                    Ok(None) if start.elapsed() < TIMEOUT => {
                        std::thread::sleep(Duration::from_millis(10))
                    }
                    _ => {
                        let _ = proc.kill();
                        break proc.wait().expect("reap the killed child");
                    }
                }
            };
            let out = self.out.take().map(|h| h.join().unwrap_or_default());
            let err = self.err.take().map(|h| h.join().unwrap_or_default());
            Some((
                status,
                format!(
                    "--- child stdout ---\n{}\n--- child stderr ---\n{}",
                    out.unwrap_or_default(),
                    err.unwrap_or_default()
                ),
            ))
        }

        /// Waits for the child to exit; a failed child fails the test with its output.
        #[track_caller]
        pub fn finish(mut self) {
            let (status, output) = self.reap().expect("not reaped yet");
            assert!(
                status.success(),
                "the child process failed ({status}):\n{output}"
            );
            if !output.contains("1 passed") {
                panic!("the child process ran no test:\n{output}");
            }
        }

        /// Fails the test with `what` and the child's output (killing and reaping it).
        #[track_caller]
        pub fn fail(&mut self, what: &str) -> ! {
            if let Some(p) = self.child.as_mut() {
                let _ = p.kill();
            }
            let output = self.reap().map(|(s, o)| format!("({s})\n{o}"));
            panic!("{what}; child: {}", output.unwrap_or_default());
        }

        /// The value of `r`, or the test fails with the child's output.
        #[track_caller]
        pub fn check<T>(&mut self, r: io::Result<T>, what: &str) -> T {
            match r {
                Ok(v) => v,
                Err(e) => self.fail(&format!("{what}: {e}")),
            }
        }
    }

    impl Drop for Child {
        fn drop(&mut self) {
            if let Some(p) = self.child.as_mut() {
                let _ = p.kill();
            }
            let _ = self.reap();
            let _ = std::fs::remove_file(&self.path);
        }
    }

    /// One end of the connection between a test and its child: the crate's
    /// [`IpcSocket`](cuda_driver::memory::IpcSocket) (framed messages, file descriptors over
    /// `SCM_RIGHTS`), with `io::Result`s for [`Child::check`].
    pub struct Channel(pub cuda_driver::memory::IpcSocket);

    fn io(e: cuda_driver::memory::IpcSocketError) -> io::Error {
        match e {
            cuda_driver::memory::IpcSocketError::Io(e) => e,
            e => io::Error::other(e),
        }
    }

    impl Channel {
        /// Sends one message.
        pub fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
            self.0.send_bytes(bytes).map_err(io)
        }

        /// Receives one message sent with [`send`](Self::send).
        pub fn recv(&mut self) -> io::Result<Vec<u8>> {
            self.0.recv_bytes().map_err(io)
        }

        /// Sends a `u64`.
        pub fn send_u64(&mut self, v: u64) -> io::Result<()> {
            self.send(&v.to_le_bytes())
        }

        /// Receives a `u64`.
        pub fn recv_u64(&mut self) -> io::Result<u64> {
            let b = self.recv()?;
            let b: [u8; 8] = b
                .try_into()
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not a u64"))?;
            Ok(u64::from_le_bytes(b))
        }

        /// Receives a 64-byte handle.
        pub fn recv_64(&mut self) -> io::Result<[u8; 64]> {
            self.recv()?
                .try_into()
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not 64 bytes"))
        }
    }
}

/// The number of open file descriptors of this process (`/proc/self/fd`).
pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .count()
}

/// The words `write_pattern(out, seed, n)` of ptx/vmm_kernels.cu writes.
pub fn pattern(seed: u32, n: usize) -> Vec<u32> {
    (0..n as u32)
        .map(|i| {
            let mut x = i.wrapping_mul(2_654_435_761).wrapping_add(seed);
            x ^= x >> 15;
            x.wrapping_mul(2_246_822_519).wrapping_add(seed)
        })
        .collect()
}

/// The kernels of ptx/vmm_kernels.cu.
pub const VMM_KERNELS: &str = include_str!("../ptx/vmm_kernels.ptx");
