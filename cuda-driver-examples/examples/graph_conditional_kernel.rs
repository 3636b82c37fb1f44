//! The CUDA sample graphConditionalNodes with the safe API and the project's tools: kernels
//! that set a graph's conditional handle from device code (`cudaGraphSetConditional`), built
//! by cuda-driver-build with `device_runtime(true)` (relocatable code whose generated
//! `Kernels::load` links it with the toolkit's device runtime, libcudadevrt.a, found at build
//! time or where the program runs), drive an if/else node, a while loop and a switch node.
//!
//! Run: `cargo run -p cuda-driver-examples --example graph_conditional_kernel`

use std::process::ExitCode;

use cuda_driver::graph::Graph;
use cuda_driver::prelude::*;
use cuda_driver::types::GraphCondAssignFlags;
use cuda_driver::types::{GraphConditionalNodeType, GraphInstantiateFlags, StreamFlags};
use cuda_driver::{Device, DeviceBuffer, LaunchConfig, Stream};
use cuda_driver_examples::typed::graph_conditional::Kernels;
use cuda_driver_examples::{check, run_example, Failure};

fn main() -> ExitCode {
    run_example(run)
}

fn run() -> Result<(), Failure> {
    let ctx = Device::get(0)?.primary_context()?;
    // Links the PTX with libcudadevrt.a (cuLinkAddFile), then loads it.
    let k = Kernels::load(&ctx)?;
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;
    let one = LaunchConfig::new(1u32, 32u32);

    // if/else: a kernel sets the condition; body 0 (then) writes 1, body 1 (else) writes 2.
    let mut out = DeviceBuffer::<u32>::zeroed(&ctx, 1)?;
    let g = Graph::new()?;
    let handle = g.conditional_handle(&ctx, 0, GraphCondAssignFlags::empty())?;
    let mut value = 1u32;
    // SAFETY: set_condition(handle, unsigned) touches no memory.
    let setter = unsafe { g.add_kernel(&[], k.set_condition.function(), &one, (handle, &value))? };
    let node = g.add_conditional(&[*setter], &ctx, handle, GraphConditionalNodeType::IF, 2)?;
    for (i, v) in [1u32, 2].into_iter().enumerate() {
        // SAFETY: `out` outlives the graph and its exec.
        unsafe { node.body(i)?.add_memset(&[], &out.as_view_mut(), v)? };
    }
    let mut exec = g.instantiate(GraphInstantiateFlags::empty())?;
    for (cond, want) in [(1u32, 1u32), (0, 2)] {
        value = cond;
        // SAFETY: as for the node.
        unsafe {
            exec.set_kernel_node(setter, k.set_condition.function(), &one, (handle, &value))?
        };
        exec.launch(&stream)?;
        stream.synchronize()?;
        let got = out.to_vec()?[0];
        check!(
            got == want,
            "if/else with condition {cond}: body wrote {got}, expected {want}"
        );
    }
    drop(exec);

    // while: the body's kernel counts and keeps the loop running while counter < limit.
    let mut counter = DeviceBuffer::<i32>::zeroed(&ctx, 1)?;
    let limit = 10i32;
    let g = Graph::new()?;
    let handle = g.conditional_handle(&ctx, 1, GraphCondAssignFlags::DEFAULT)?;
    let node = g.add_conditional(&[], &ctx, handle, GraphConditionalNodeType::WHILE, 1)?;
    // SAFETY: `counter` outlives the graph and exec; loop_step(int*, int, handle) writes one int.
    unsafe {
        node.body(0)?.add_kernel(
            &[],
            k.loop_step.function(),
            &one,
            (counter.as_view_mut(), &limit, handle),
        )?
    };
    let exec = g.instantiate(GraphInstantiateFlags::empty())?;
    exec.launch(&stream)?;
    stream.synchronize()?;
    let n = counter.to_vec()?[0];
    check!(n == limit, "the while loop ran {n} times, expected {limit}");
    drop(exec);

    // switch: the kernel picks one of three bodies (none for a value past the last).
    let g = Graph::new()?;
    let handle = g.conditional_handle(&ctx, 0, GraphCondAssignFlags::empty())?;
    let mut value = 0u32;
    // SAFETY: set_condition(handle, unsigned) touches no memory.
    let setter = unsafe { g.add_kernel(&[], k.set_condition.function(), &one, (handle, &value))? };
    let node = g.add_conditional(
        &[*setter],
        &ctx,
        handle,
        GraphConditionalNodeType::SWITCH,
        3,
    )?;
    for (i, v) in [100u32, 200, 300].into_iter().enumerate() {
        // SAFETY: `out` outlives the graph and its exec.
        unsafe { node.body(i)?.add_memset(&[], &out.as_view_mut(), v)? };
    }
    let mut exec = g.instantiate(GraphInstantiateFlags::empty())?;
    out.memset(0u32)?;
    for (cond, want) in [(2u32, 300u32), (0, 100), (7, 100)] {
        value = cond;
        // SAFETY: as for the node.
        unsafe {
            exec.set_kernel_node(setter, k.set_condition.function(), &one, (handle, &value))?
        };
        exec.launch(&stream)?;
        stream.synchronize()?;
        let got = out.to_vec()?[0];
        check!(got == want, "switch on {cond}: {got}, expected {want}");
    }
    println!(
        "graphConditionalNodes: if/else, while ({limit} iterations) and switch nodes driven by \
         kernels linked with the device runtime"
    );
    Ok(())
}
