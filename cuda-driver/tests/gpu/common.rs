//! Shared helpers of the GPU tests.

use std::io::Write;
use std::ops::Deref;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use cuda_driver::{Context, Device};

/// The kernels of `ptx/test_kernels.cu`, compiled by `cargo xtask build-kernels`.
#[allow(dead_code)]
pub const TEST_KERNELS: &str = include_str!("../ptx/test_kernels.ptx");

/// `n` position-dependent pseudo-random words (xorshift32), different per `seed` and never
/// zero: the source of the tests' data (each module maps them to the values it needs).
#[allow(dead_code)]
pub fn xorshift32(n: usize, seed: u32) -> impl Iterator<Item = u32> {
    let mut x = seed.wrapping_mul(0x9E37_79B9) | 1;
    (0..n).map(move |_| {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x
    })
}

/// Whether a skipped GPU test must fail instead (`CUDA_DRIVER_REQUIRE_GPU=1`).
pub fn require_gpu() -> bool {
    std::env::var("CUDA_DRIVER_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

/// The primary context of device 0, or `None` after printing why the test skips.
///
/// Panics when the driver reports an error other than "no driver"/"no device", or when
/// `CUDA_DRIVER_REQUIRE_GPU=1` is set and there is no GPU.
#[track_caller]
pub fn gpu() -> Option<Context> {
    match Device::get(0).and_then(|d| d.primary_context()) {
        Ok(ctx) => Some(ctx),
        Err(e) if e.is_no_gpu() => {
            let test = std::thread::current().name().unwrap_or("?").to_string();
            if require_gpu() {
                panic!("CUDA_DRIVER_REQUIRE_GPU=1 but {test} found no GPU: {e}");
            }
            // Written to the real stderr, past libtest's output capture, so skips are seen.
            let _ = writeln!(std::io::stderr(), "SKIP {test}: {e}");
            None
        }
        Err(e) => panic!("cannot get device 0: {e}"),
    }
}

/// Tests run in parallel threads of one process. Most share the GPU freely (a read lock);
/// a test that blocks a stream, or asserts on process- or device-wide state (free device
/// memory, the drop-error count, the context stack around created contexts), takes the GPU
/// exclusively (the write lock), so that no other test's synchronising call can wait on its
/// blocked work or disturb what it measures.
static GPU_LOCK: RwLock<()> = RwLock::new(());

#[allow(dead_code)]
enum Guard {
    Shared(RwLockReadGuard<'static, ()>),
    Exclusive(RwLockWriteGuard<'static, ()>),
}

/// The primary context of device 0, held with the test's share of the GPU. Derefs to the
/// [`Context`].
pub struct Gpu {
    ctx: Context,
    _guard: Guard,
}

impl Deref for Gpu {
    type Target = Context;
    fn deref(&self) -> &Context {
        &self.ctx
    }
}

#[track_caller]
pub fn gpu_shared() -> Option<Gpu> {
    let guard = Guard::Shared(GPU_LOCK.read().unwrap_or_else(|e| e.into_inner()));
    gpu().map(|ctx| Gpu { ctx, _guard: guard })
}

#[track_caller]
pub fn gpu_exclusive() -> Option<Gpu> {
    let guard = Guard::Exclusive(GPU_LOCK.write().unwrap_or_else(|e| e.into_inner()));
    gpu().map(|ctx| Gpu { ctx, _guard: guard })
}

/// `let ctx = gpu_or_skip!();` at the top of every GPU test: the GPU shared with other tests.
macro_rules! gpu_or_skip {
    () => {
        match $crate::common::gpu_shared() {
            Some(ctx) => ctx,
            None => return,
        }
    };
}

/// `let ctx = gpu_exclusive_or_skip!();`: the GPU for this test alone (see `GPU_LOCK`).
macro_rules! gpu_exclusive_or_skip {
    () => {
        match $crate::common::gpu_exclusive() {
            Some(ctx) => ctx,
            None => return,
        }
    };
}
