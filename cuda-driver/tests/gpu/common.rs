//! Shared helpers of the GPU tests.

use std::ops::Deref;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use cuda_driver::prelude::*;
use cuda_driver::{
    types::DeviceAttribute, types::StreamFlags, Context, Device, DeviceBuffer, Error, LaunchConfig,
    Stream,
};
pub use cuda_driver_test_harness::{note, skip, skip_needs_gpus};

/// The kernels of `ptx/test_kernels.cu`, compiled by `cargo xtask build-kernels`.
#[allow(dead_code)]
pub const TEST_KERNELS: &str = include_str!("../ptx/test_kernels.ptx");

/// The kernels of `ptx/tex_kernels.cu` (textures, surfaces, arrays).
#[allow(dead_code)]
pub const TEX_KERNELS: &str = include_str!("../ptx/tex_kernels.ptx");

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

/// The primary context of device 0; without a driver or a device the test skips (see
/// [`skip`]).
///
/// Panics when the driver reports an error other than "no driver"/"no device".
#[track_caller]
pub fn gpu() -> Context {
    match Device::get(0).and_then(|d| d.primary_context()) {
        Ok(ctx) => ctx,
        Err(e) if e.is_no_gpu() => skip(match e.code() {
            Some(code) => format!("no GPU: {} from {}", code.name(), e.call().unwrap_or("?")),
            None => format!("no GPU: {e}"),
        }),
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
pub fn gpu_shared() -> Gpu {
    let guard = Guard::Shared(GPU_LOCK.read().unwrap_or_else(|e| e.into_inner()));
    Gpu {
        ctx: gpu(),
        _guard: guard,
    }
}

#[track_caller]
pub fn gpu_exclusive() -> Gpu {
    let guard = Guard::Exclusive(GPU_LOCK.write().unwrap_or_else(|e| e.into_inner()));
    Gpu {
        ctx: gpu(),
        _guard: guard,
    }
}

/// `let ctx = gpu_or_skip!();` at the top of every GPU test: the GPU shared with other tests,
/// or the test skips (no driver, no device).
macro_rules! gpu_or_skip {
    () => {
        $crate::common::gpu_shared()
    };
}

/// `let ctx = gpu_exclusive_or_skip!();`: the GPU for this test alone (see `GPU_LOCK`), or
/// the test skips.
macro_rules! gpu_exclusive_or_skip {
    () => {
        $crate::common::gpu_exclusive()
    };
}

/// Skips the test with `reason` unless `dev` reports a non-zero `attr`.
#[allow(dead_code)]
#[track_caller]
pub fn require_attribute(dev: Device, attr: DeviceAttribute, reason: impl std::fmt::Display) {
    if dev.attribute(attr).unwrap() == 0 {
        skip(reason);
    }
}

/// Whether `r` says the driver is too old for the call.
#[allow(dead_code)]
pub fn unsupported(r: &Error) -> bool {
    matches!(r, Error::Unsupported { .. })
}

/// The value of `r`; skips the test when `r` says the driver is too old for the call.
#[allow(dead_code)]
#[track_caller]
pub fn or_skip<T>(r: Result<T, Error>, what: &str) -> T {
    match r {
        Err(e @ Error::Unsupported { .. }) => skip(format!("{what}: {e}")),
        r => r.unwrap(),
    }
}

/// A non-blocking stream of `ctx`.
#[allow(dead_code)]
pub fn stream(ctx: &Context) -> Stream {
    Stream::new(ctx, StreamFlags::NON_BLOCKING).unwrap()
}

/// A small copy that must work: the context is still usable.
#[allow(dead_code)]
pub fn still_usable(ctx: &Context) {
    let b = DeviceBuffer::from_slice(ctx, &[1u32, 2, 3]).unwrap();
    assert_eq!(b.to_vec().unwrap(), [1, 2, 3]);
}

/// A 2D grid of 16 x 16 blocks covering `w` x `h` threads.
#[allow(dead_code)]
pub fn grid2(w: usize, h: usize) -> LaunchConfig {
    LaunchConfig::new(((w as u32).div_ceil(16), (h as u32).div_ceil(16)), (16, 16))
}

/// `n` floats from [`xorshift32`], multiples of 0.5 below 32768 (exact in `f32`).
#[allow(dead_code)]
pub fn floats_by_halves(n: usize, seed: u32) -> Vec<f32> {
    xorshift32(n, seed)
        .map(|x| (x % 65_536) as f32 * 0.5)
        .collect()
}

/// `n` floats from [`xorshift32`], multiples of 0.25 below 16384.
#[allow(dead_code)]
pub fn floats_by_quarters(n: usize, seed: u32) -> Vec<f32> {
    xorshift32(n, seed)
        .map(|x| (x % 65_536) as f32 * 0.25)
        .collect()
}
