//! Shared helpers of the GPU tests.

use std::io::Write;

use cuda_driver::{Context, Device};

/// The kernels of `ptx/test_kernels.cu`, compiled by `cargo xtask build-kernels`.
#[allow(dead_code)]
pub const TEST_KERNELS: &str = include_str!("../../../ptx/test_kernels.ptx");

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

/// `let ctx = gpu_or_skip!();` at the top of every GPU test.
macro_rules! gpu_or_skip {
    () => {
        match $crate::common::gpu() {
            Some(ctx) => ctx,
            None => return,
        }
    };
}
