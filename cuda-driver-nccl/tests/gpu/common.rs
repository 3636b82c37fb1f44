//! Shared helpers of the GPU tests.

use std::io::Read;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use cuda_driver::prelude::*;
use cuda_driver::{types::StreamFlags, Context, Device, DeviceBuffer, Stream};
use cuda_driver_nccl::{CommConfig, Communicator, Element, Nccl};
pub use cuda_driver_test_harness::{note, skip, skip_needs_gpus};

/// The primary context of device `ordinal`; without a driver or a device the test skips.
#[track_caller]
pub fn gpu(ordinal: usize) -> Context {
    match Device::get(ordinal).and_then(|d| d.primary_context()) {
        Ok(ctx) => ctx,
        Err(e) if e.is_no_gpu() => skip(format!("no GPU: {e}")),
        Err(e) => panic!("cannot get device {ordinal}: {e}"),
    }
}

/// The NCCL library; without one the test skips (a failure under CUDA_DRIVER_REQUIRE_GPU).
#[track_caller]
pub fn nccl() -> &'static Nccl {
    match Nccl::get() {
        Ok(n) => n,
        Err(e) => skip(format!("no NCCL: {e}")),
    }
}

/// The primary contexts of devices 0 and 1; the test skips on a machine with one GPU.
#[track_caller]
pub fn two_gpus() -> (Context, Context) {
    let ctx0 = gpu(0);
    let count = Device::count().unwrap();
    if count < 2 {
        skip_needs_gpus(2, format!("{count} GPU; this test needs two"));
    }
    (ctx0, gpu(1))
}

/// A communicator of one rank on `ctx`.
#[track_caller]
pub fn one_rank(ctx: &Context, config: &CommConfig) -> Communicator {
    let id = nccl().unique_id().unwrap();
    Communicator::init_rank(ctx, 1, 0, &id, config).unwrap()
}

/// A blocking stream of `ctx`: ordered after the legacy default stream's work, where the
/// tests' host-to-device copies of pageable memory may still be in flight.
pub fn stream(ctx: &Context) -> Stream {
    Stream::new(ctx, StreamFlags::DEFAULT).unwrap()
}

/// A value of every element type from a small integer (exact in every type).
pub trait FromSmall: Element + PartialEq + std::fmt::Debug {
    fn small(v: u8) -> Self;
}

macro_rules! from_small {
    ($($t:ty => $conv:expr),* $(,)?) => {$(
        impl FromSmall for $t {
            fn small(v: u8) -> Self {
                let f: fn(u8) -> $t = $conv;
                f(v)
            }
        }
    )*};
}

from_small!(
    i8 => |v| v as i8,
    u8 => |v| v,
    i32 => |v| v as i32,
    u32 => |v| v as u32,
    i64 => |v| v as i64,
    u64 => |v| v as u64,
    f32 => |v| v as f32,
    f64 => |v| v as f64,
    half::f16 => |v| half::f16::from_f32(v as f32),
    half::bf16 => |v| half::bf16::from_f32(v as f32),
);

/// `n` small values of `T` (below 100), different per `seed`.
pub fn values<T: FromSmall>(n: usize, seed: u8) -> Vec<T> {
    (0..n)
        .map(|i| T::small(((i * 7 + seed as usize * 13) % 100) as u8))
        .collect()
}

/// A device buffer holding `data`.
pub fn upload<T: Element>(ctx: &Context, data: &[T]) -> DeviceBuffer<T> {
    DeviceBuffer::from_slice(ctx, data).unwrap()
}

/// The contents of `buf`, after `comm` finished the work queued on `stream`.
pub fn download<T: Element>(comm: &Communicator, stream: &Stream, buf: &DeviceBuffer<T>) -> Vec<T> {
    comm.synchronize(stream).unwrap();
    buf.to_vec().unwrap()
}

/// The environment variable that makes this test binary a child rank of the named test.
pub const CHILD_VAR: &str = "CUDA_DRIVER_NCCL_TEST_CHILD";

/// How long a multi-process test waits for its children and the rendezvous.
pub const RANK_TIMEOUT: Duration = Duration::from_secs(120);

/// The name of the running test (the runner names the test's thread after it).
fn test_name() -> String {
    std::thread::current()
        .name()
        .expect("the test runner names the test thread after the test")
        .to_string()
}

/// Whether this process is a child rank started by [`spawn_ranks`] for the running test.
pub fn is_child() -> bool {
    std::env::var(CHILD_VAR).is_ok_and(|t| t == test_name())
}

/// Child ranks `1..world` of the running test: this test binary again, running only this
/// test, with the variables torchrun sets (`RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `MASTER_ADDR`,
/// `MASTER_PORT` on the loopback address) and `NCCL_NVLS_ENABLE=0`. Returns rank 0's
/// listener for the unique id and the children.
pub fn spawn_ranks(world: usize) -> (TcpListener, Vec<Rank>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let port = listener.local_addr().unwrap().port();
    let test = test_name();
    let children = (1..world)
        .map(|rank| {
            let mut child = Command::new(std::env::current_exe().unwrap())
                .args(["--exact", &test, "--nocapture", "--test-threads=1"])
                .env(CHILD_VAR, &test)
                .env("RANK", rank.to_string())
                .env("WORLD_SIZE", world.to_string())
                .env("LOCAL_RANK", rank.to_string())
                .env("MASTER_ADDR", "127.0.0.1")
                .env("MASTER_PORT", port.to_string())
                .env(cuda_driver_nccl::NVLS_VAR, "0")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start a child rank");
            let out = drain(child.stdout.take().unwrap());
            let err = drain(child.stderr.take().unwrap());
            Rank {
                rank,
                child: Some(child),
                out: Some(out),
                err: Some(err),
            }
        })
        .collect();
    (listener, children)
}

fn drain(mut r: impl Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = r.read_to_string(&mut s);
        s
    })
}

/// A child rank; reaped (killed first if it still runs) when dropped.
pub struct Rank {
    rank: usize,
    child: Option<Child>,
    out: Option<JoinHandle<String>>,
    err: Option<JoinHandle<String>>,
}

impl Rank {
    /// Waits for the child (killing it after `timeout`): its success and output.
    fn reap(&mut self, timeout: Duration) -> Option<(bool, String)> {
        let mut child = self.child.take()?;
        let start = Instant::now();
        let ok = loop {
            match child.try_wait() {
                Ok(Some(s)) => break s.success(),
                Ok(None) if start.elapsed() < timeout => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break false;
                }
            }
        };
        let out = self.out.take().map(|h| h.join().unwrap_or_default());
        let err = self.err.take().map(|h| h.join().unwrap_or_default());
        Some((
            ok,
            format!(
                "--- rank {} stdout ---\n{}\n--- rank {} stderr ---\n{}",
                self.rank,
                out.unwrap_or_default(),
                self.rank,
                err.unwrap_or_default()
            ),
        ))
    }

    /// Waits for the child; a child that failed or ran no test fails the test with its output.
    #[track_caller]
    pub fn finish(mut self) {
        let (ok, output) = self.reap(RANK_TIMEOUT).expect("not reaped yet");
        assert!(ok, "child rank failed:\n{output}");
        assert!(
            output.contains("1 passed"),
            "child rank ran no test:\n{output}"
        );
    }

    /// Waits for the child, whatever its end (for a child that dies on purpose).
    pub fn reap_any(mut self) -> String {
        self.reap(RANK_TIMEOUT).map(|(_, o)| o).unwrap_or_default()
    }
}

impl Drop for Rank {
    fn drop(&mut self) {
        if let Some(c) = self.child.as_mut() {
            let _ = c.kill();
        }
        let _ = self.reap(Duration::ZERO);
    }
}
