//! Compiling with NVRTC and linking with nvJitLink: no GPU needed, one binary, one module per
//! area.
//!
//! The tests run on cuda-driver-test-harness (`harness = false`), which reports a test that
//! cannot run here as ignored with its reason. Where NVRTC or nvJitLink is not found (a fresh
//! machine before `.ci/run` installed the pinned wheels into `.venv`), every test skips, saying
//! where the libraries were searched; with `CUDA_DRIVER_REQUIRE_NVRTC=1` (set by `.ci/run`,
//! which installs them) it fails instead, and so it does with `CUDA_DRIVER_REQUIRE_GPU` set
//! (the GPU bundle's `run.sh`).

#[macro_use]
extern crate cuda_driver_test_harness;

mod common;

mod cache;
mod errors;
mod library;
mod linker;
mod program;

fn main() -> std::process::ExitCode {
    cuda_driver_test_harness::main()
}
