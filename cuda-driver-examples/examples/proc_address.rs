//! Seed 002 (CUDA C++ Programming Guide, appendix "Driver API", L.5 Driver Entry Point
//! Access) with the safe API of `cuda_driver::entry_point`: no `unsafe` to look a function
//! up, because each marker of `entry_point::pfn` ties the function pointer type to the symbol,
//! CUDA version and stream flavour it belongs to.
//!
//! * `cuStreamBeginCapture` at CUDA 10.0 and at 10.1 are two ABIs at two addresses
//!   (`cuStreamBeginCapture(stream)` and `cuStreamBeginCapture_v2(stream, mode)`); the v2
//!   pointer is called on a real stream (begin capture, end capture, destroy the graph).
//! * The newest version the running driver offers, asked for at `driver_version()`.
//! * The per-thread default stream flavour of `cuLaunchKernel` (`cuLaunchKernel_ptsz`) is
//!   another function than the legacy one.
//! * A function at a version older than the one that introduced it
//!   (`CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT`), and a symbol the driver does not have
//!   (`CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND`).
//!
//! Run: `cargo run -p cuda-driver-examples --example proc_address`

use std::process::ExitCode;

use cuda_driver::entry_point::{self, pfn, proc_address};
use cuda_driver::handle::Handle;
use cuda_driver::{
    sys, types::ErrorCode, types::ProcAddressFlags, types::ProcAddressStatus, types::StreamFlags,
    Device, Error, Stream,
};
use cuda_driver_examples::{check, run_example, Failure};

/// A driver call made through a looked-up pointer returns a raw `CUresult`.
fn ok(r: sys::CUresult, call: &str) -> Result<(), Failure> {
    let code = ErrorCode::from_raw(r);
    if code == ErrorCode::SUCCESS {
        Ok(())
    } else {
        Err(format!("{call} failed: {code}").into())
    }
}

fn main() -> ExitCode {
    run_example(run)
}

fn run() -> Result<(), Failure> {
    let ctx = Device::get(0)?.primary_context()?;
    let (major, minor) = cuda_driver::driver_version()?;
    let driver = (major * 1000 + minor * 10) as i32;
    println!("driver supports CUDA {major}.{minor} ({driver})");

    // 1. A function by explicit version: cuStreamBeginCapture is `_v1(stream)` at 10.0 and
    //    `_v2(stream, mode)` at 10.1. The markers carry the matching PFN type.
    let begin_v1 = entry_point::get::<pfn::cuStreamBeginCapture_v10000>()?;
    let begin_v2 = entry_point::get::<pfn::cuStreamBeginCapture_v10010>()?;
    println!(
        "cuStreamBeginCapture at 10000: {:p}, at 10010: {:p}",
        begin_v1 as *const (), begin_v2 as *const ()
    );
    check!(
        begin_v1 as usize != begin_v2 as usize,
        "the two ABIs of cuStreamBeginCapture must be different functions"
    );

    // Call the v2 pointer on a real stream: begin capture, check the stream is capturing,
    // end capture into a graph (empty: nothing was queued), destroy the graph.
    let is_capturing = entry_point::get::<pfn::cuStreamIsCapturing_v10000>()?;
    let end_capture = entry_point::get::<pfn::cuStreamEndCapture_v10000>()?;
    let graph_nodes = entry_point::get::<pfn::cuGraphGetNodes_v10000>()?;
    let graph_destroy = entry_point::get::<pfn::cuGraphDestroy_v10000>()?;
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;
    // SAFETY: `begin_v2` is cuStreamBeginCapture_v2 (its type says so, from the marker); the
    // stream is a live stream of the current context, not the legacy one, and not capturing.
    let r = unsafe { begin_v2(stream.as_raw(), sys::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) };
    ok(r, "cuStreamBeginCapture_v2")?;
    let mut status = sys::CU_STREAM_CAPTURE_STATUS_NONE;
    // SAFETY: live stream; writes one status.
    let r = unsafe { is_capturing(stream.as_raw(), &mut status) };
    ok(r, "cuStreamIsCapturing")?;
    check!(
        status == sys::CU_STREAM_CAPTURE_STATUS_ACTIVE,
        "after cuStreamBeginCapture_v2 the stream must be capturing (status {status})"
    );
    let mut graph: sys::CUgraph = std::ptr::null_mut();
    // SAFETY: the stream is capturing, begun on this thread; writes one CUgraph, which we own
    // and destroy below.
    let r = unsafe { end_capture(stream.as_raw(), &mut graph) };
    ok(r, "cuStreamEndCapture")?;
    check!(!graph.is_null(), "cuStreamEndCapture must return a graph");
    let mut nodes = usize::MAX;
    // SAFETY: `graph` is live; a null node array asks only for the count.
    let counted = unsafe { graph_nodes(graph, std::ptr::null_mut(), &mut nodes) };
    // SAFETY: `graph` came from cuStreamEndCapture and is destroyed once, here.
    let destroyed = unsafe { graph_destroy(graph) };
    ok(counted, "cuGraphGetNodes")?;
    ok(destroyed, "cuGraphDestroy")?;
    check!(
        nodes == 0,
        "nothing was captured, yet the graph has {nodes} nodes"
    );
    println!("cuStreamBeginCapture_v2 through its pointer: captured an empty graph, destroyed it");

    // 2. The newest version the running driver offers: ask at the driver's own version. On a
    //    driver up to CUDA 13.0 (the newest cuda.h this crate knows), that is _v2.
    let newest = proc_address(c"cuStreamBeginCapture", driver, ProcAddressFlags::DEFAULT)?;
    let at_10010 = proc_address(c"cuStreamBeginCapture", 10010, ProcAddressFlags::DEFAULT)?;
    println!("cuStreamBeginCapture at the driver's version {driver}: {newest:p}");
    if driver <= sys::CUDA_VERSION as i32 {
        check!(
            newest == at_10010,
            "on a CUDA {major}.{minor} driver the newest cuStreamBeginCapture is _v2"
        );
        println!("  = cuStreamBeginCapture_v2, the newest ABI up to CUDA 13.0");
    } else if newest != at_10010 {
        println!(
            "  a newer ABI than cuStreamBeginCapture_v2 (this driver is newer than cuda.h 13.0)"
        );
    }

    // 3. The per-thread default stream flavour of cuLaunchKernel.
    let legacy = entry_point::get::<pfn::cuLaunchKernel_v4000>()?;
    let per_thread = entry_point::get::<pfn::cuLaunchKernel_v7000_ptsz>()?;
    println!(
        "cuLaunchKernel: legacy stream {:p}, per-thread default stream {:p}",
        legacy as *const (), per_thread as *const ()
    );
    check!(
        legacy as usize != per_thread as usize,
        "cuLaunchKernel and cuLaunchKernel_ptsz must be different functions"
    );
    let by_flag = proc_address(
        c"cuLaunchKernel",
        7000,
        ProcAddressFlags::PER_THREAD_DEFAULT_STREAM,
    )?;
    check!(
        by_flag.as_ptr() as usize == per_thread as usize,
        "the per-thread flag must give cuLaunchKernel_ptsz"
    );

    // 4. What cannot be had: cuLibraryLoadData exists since CUDA 12.0, not at 11.0 ...
    match proc_address(c"cuLibraryLoadData", 11000, ProcAddressFlags::DEFAULT) {
        Err(
            e @ Error::EntryPoint {
                status: ProcAddressStatus::VERSION_NOT_SUFFICIENT,
                ..
            },
        ) => println!("cuLibraryLoadData at 11000: {e}"),
        other => {
            return Err(format!(
                "cuLibraryLoadData at 11000 must be VERSION_NOT_SUFFICIENT, got {other:?}"
            )
            .into())
        }
    }
    // ... and no driver has cuNoSuchFunction.
    match proc_address(c"cuNoSuchFunction", driver, ProcAddressFlags::DEFAULT) {
        Err(
            e @ Error::EntryPoint {
                status: ProcAddressStatus::SYMBOL_NOT_FOUND,
                ..
            },
        ) => println!("cuNoSuchFunction: {e}"),
        other => {
            return Err(format!("cuNoSuchFunction must be SYMBOL_NOT_FOUND, got {other:?}").into())
        }
    }

    println!("all checks passed");
    Ok(())
}
