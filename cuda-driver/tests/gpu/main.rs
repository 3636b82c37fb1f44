//! GPU tests of cuda-driver: one binary, one module per area.
//!
//! Each test asks [`common::gpu`] for the primary context of device 0. Without a driver or a
//! device the test prints `SKIP <test>: <reason>` to stderr (past libtest's capture, so it is
//! seen) and returns; with `CUDA_DRIVER_REQUIRE_GPU=1` it fails instead, so a GPU run cannot
//! pass by skipping.

#[macro_use]
mod common;

mod child;
mod context;
mod context_more;
mod device;
mod entry_point;
mod graph;
mod green;
mod interop;
mod ipc;
mod launch;
mod launch_checks;
mod leftovers;
mod library;
mod loading;
mod mem_pool;
mod memory;
mod module;
mod multi_gpu;
mod stream;
mod stream_memop;
mod texture;
mod vmm;
