//! GPU tests of cuda-driver: one binary, one module per area.
//!
//! Tests are marked `#[gpu_test]` (not `#[test]`) and run by cuda-driver-test-harness
//! (`harness = false`), which prints what libtest prints. Each test asks [`common::gpu`] for
//! the primary context of device 0. A test that cannot run here (no driver or device, one GPU
//! where it needs two, a driver or device without the feature) calls [`common::skip`] with
//! the reason and is reported `ignored, <reason>`; with `CUDA_DRIVER_REQUIRE_GPU=1` it fails
//! instead, so a GPU run cannot pass by skipping.

// `#[gpu_test]` in every module (and `#[test]` made an error: it would never run here).
#[macro_use]
extern crate cuda_driver_test_harness;

#[macro_use]
mod common;

mod callback;
mod child;
mod context;
mod context_more;
mod device;
mod diagnostics;
mod entry_point;
mod graph;
mod graph_more;
mod green;
#[cfg(unix)]
mod interop;
#[cfg(unix)]
mod ipc;
mod launch;
mod launch_checks;
mod leftovers;
mod leftovers_more;
mod library;
mod loading;
mod mem_pool;
mod memory;
mod module;
mod multi_gpu;
mod profiler;
mod release;
mod stream;
mod stream_memop;
mod texture;
mod texture_more;
mod vmm;

fn main() -> std::process::ExitCode {
    cuda_driver_test_harness::main()
}
