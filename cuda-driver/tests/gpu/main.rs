//! GPU tests of cuda-driver: one binary, one module per group of the CUDA Driver API reference
//! (laid out as `cuda-driver/src` is: `memory::copy`, `graph::exec`, `stream::capture`, ...),
//! and the cross-cutting `release`, `callback`, `child` and `common`.
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

// Cross-cutting: panics at the FFI boundary, the child-process helper, the release
// mechanism's driver behaviours.
mod callback;
mod child;
mod release;

// One module per group of the CUDA Driver API reference, as cuda-driver/src is laid out.
#[cfg(unix)]
mod checkpoint;
mod context;
mod coredump;
mod device;
mod entry_point;
mod event;
mod future;
mod graph;
mod green;
mod handle;
#[cfg(unix)]
mod interop;
mod launch;
mod library;
mod logs;
mod memory;
mod module;
mod occupancy;
mod peer;
mod pool;
mod profiler;
mod stream;
mod stream_memop;
mod surface;
mod tensor_map;
mod texture;
mod unified;
mod vmm;

fn main() -> std::process::ExitCode {
    cuda_driver_test_harness::main()
}
