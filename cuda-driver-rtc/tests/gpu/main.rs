//! GPU tests of cuda-driver-rtc: what NVRTC and nvJitLink produce, loaded with cuda-driver and
//! launched, results checked. One binary, one module per area.
//!
//! Tests are marked `#[gpu_test]` and run by cuda-driver-test-harness (`harness = false`). A
//! test that cannot run here (no driver or device, no NVRTC) skips with the reason; with
//! `CUDA_DRIVER_REQUIRE_GPU=1` (the GPU bundle's `run.sh`) it fails instead.

#[macro_use]
extern crate cuda_driver_test_harness;

mod common;

mod launch;
mod link;
mod target;

fn main() -> std::process::ExitCode {
    cuda_driver_test_harness::main()
}
