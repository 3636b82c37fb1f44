//! GPU tests of cuda-driver-nccl: one binary, one module per area, run by
//! cuda-driver-test-harness (`harness = false`; see cuda-driver's `tests/gpu/main.rs`).
//!
//! A test that cannot run here skips with the reason and is reported `ignored, <reason>`:
//! no GPU, no NCCL library, or one GPU where it needs two ("1 GPU; this test needs two").
//! With `CUDA_DRIVER_REQUIRE_GPU=1` a skip fails instead, but for the tests that need more
//! GPUs than the variable says the machine has (`CUDA_DRIVER_REQUIRE_GPU=2` runs the
//! two-GPU tests for real).
//!
//! `NCCL_NVLS_ENABLE=0` is set first thing (and the crate sets it before loading NCCL): NVLink
//! multicast stays off on the shared GPU hosts these tests run on.

#[macro_use]
extern crate cuda_driver_test_harness;

mod common;

mod checks;
mod lifetime;
mod multi_device;
mod multi_process;
mod one_rank;

fn main() -> std::process::ExitCode {
    std::env::set_var(cuda_driver_nccl::NVLS_VAR, "0");
    cuda_driver_test_harness::main()
}
