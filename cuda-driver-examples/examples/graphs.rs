//! NVIDIA's simpleCudaGraphs with the safe API: a two-stage sum reduction of a vector, built
//! once from explicit graph nodes (the input copied host to device, a memset, two kernels, the
//! result copied device to host, a host node printing it) and once by capturing the same work
//! from a stream; each graph is instantiated, cloned, and the execs of the graph and of its
//! clone launched several times, the result checked every time.
//!
//! Run: `cargo run -p cuda-driver-examples --example graphs`

use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use cuda_driver::prelude::*;
use cuda_driver::{
    graph::Graph, memory::Copy2D, types::GraphInstantiateFlags, types::PinnedFlags,
    types::StreamCaptureMode as CaptureMode, types::StreamFlags, Device, DeviceBuffer,
    LaunchConfig, Module, PinnedBuffer, Stream,
};
use cuda_driver_examples::{check, ptx, run_example, Failure};

const N: usize = 1 << 20;
const BLOCKS: usize = 64;
const THREADS: u32 = 256;
const LAUNCHES: usize = 3;

/// The pinned result's host address, read by the host node.
#[derive(Clone, Copy)]
struct HostPtr(usize);

fn main() -> ExitCode {
    run_example(run)
}

fn run() -> Result<(), Failure> {
    let ctx = Device::get(0)?.primary_context()?;
    let module = Module::load_data(&ctx, ptx::GRAPH_KERNELS)?;
    let partial_k = module.function("reduce_partial")?;
    let final_k = module.function("reduce_final")?;
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;

    // Input: small integers, whose sum is exact in f32, in page-locked memory (graph copies
    // and stream copies read it while the host goes on).
    let mut input = PinnedBuffer::<f32>::zeroed(&ctx, N, PinnedFlags::empty())?;
    for (i, x) in input.iter_mut().enumerate() {
        *x = (i % 7) as f32;
    }
    let expected: f32 = input.iter().map(|&x| x as f64).sum::<f64>() as f32;
    let mut d_in = DeviceBuffer::<f32>::zeroed(&ctx, N)?;
    let mut d_partial = DeviceBuffer::<f32>::zeroed(&ctx, BLOCKS)?;
    let mut d_result = DeviceBuffer::<f32>::zeroed(&ctx, 1)?;
    // The result is copied back into pinned memory, which the host node reads.
    let mut result = PinnedBuffer::<f32>::zeroed(&ctx, 1, PinnedFlags::empty())?;
    let host = HostPtr(result.as_mut_ptr() as usize);
    let printed = Arc::new(AtomicUsize::new(0));
    let (n, m) = (i32::try_from(N)?, i32::try_from(BLOCKS)?);
    let cfg1 = LaunchConfig::new(BLOCKS as u32, THREADS);
    let cfg2 = LaunchConfig::new(1u32, THREADS);

    // 1. Explicit nodes: copy in -> memset(partial) -> reduce_partial -> reduce_final ->
    //    copy out -> host print.
    let explicit = Graph::new()?;
    let p = printed.clone();
    let print_explicit = move || {
        // SAFETY: the pinned float outlives the graph; the copy writing it finished before
        // this node runs.
        let v = unsafe { std::ptr::read_volatile(host.0 as *const f32) };
        println!("  host node: result = {v}");
        p.fetch_add(1, Ordering::SeqCst);
    };
    // SAFETY: reduce_partial(const float*, float*, int) and reduce_final(const float*, float*,
    // int) get buffers of N, BLOCKS and 1 floats; those buffers and the pinned input and
    // result outlive the graphs and execs; the host touches them only after synchronizing.
    unsafe {
        let copy_in = explicit.add_copy_2d(
            &[],
            Copy2D::new(N, 1)
                .from_host(&input[..], N)
                .to_device(d_in.as_view_mut(), N),
        )?;
        let clear = explicit.add_memset(&[*copy_in], &d_partial.as_view_mut(), 0u32)?;
        let stage1 = explicit.add_kernel(
            &[*clear],
            &partial_k,
            &cfg1,
            (d_in.as_view(), d_partial.as_view_mut(), &n),
        )?;
        let stage2 = explicit.add_kernel(
            &[*stage1],
            &final_k,
            &cfg2,
            (d_partial.as_view(), d_result.as_view_mut(), &m),
        )?;
        let copy_out = explicit.add_copy_2d(
            &[*stage2],
            Copy2D::new(1, 1)
                .from_device(d_result.as_view(), 1)
                .to_host(&mut result[..], 1),
        )?;
        explicit.add_host(&[*copy_out], print_explicit)?;
    }

    // 2. The same work captured from the stream.
    let p = printed.clone();
    let print_captured = move || {
        // SAFETY: as above.
        let v = unsafe { std::ptr::read_volatile(host.0 as *const f32) };
        println!("  host node (captured): result = {v}");
        p.fetch_add(1, Ordering::SeqCst);
    };
    // SAFETY: as above.
    let captured = unsafe {
        stream.capture(CaptureMode::THREAD_LOCAL, |s| {
            d_in.as_view_mut().copy_from_host_async(&input[..], s)?;
            d_partial.memset_async(0u32, s)?;
            partial_k.launch(s, &cfg1, (d_in.as_view(), d_partial.as_view_mut(), &n))?;
            final_k.launch(s, &cfg2, (d_partial.as_view(), d_result.as_view_mut(), &m))?;
            d_result.as_view().copy_to_host_async(&mut result[..], s)?;
            s.launch_host_fn_repeatable(print_captured)
        })?
    };

    let mut runs = 0;
    for (name, graph) in [("explicit", &explicit), ("captured", &captured)] {
        println!("{name} graph: {} nodes", graph.node_count()?);
        let clone = graph.try_clone()?;
        for (which, g) in [("graph", graph), ("clone", &clone)] {
            let exec = g.instantiate(GraphInstantiateFlags::empty())?;
            for i in 0..LAUNCHES {
                result[0] = -1.0;
                exec.launch(&stream)?;
                stream.synchronize()?;
                runs += 1;
                let got = result[0];
                check!(
                    got == expected,
                    "{name} {which} launch {i}: sum {got}, expected {expected}"
                );
            }
        }
    }
    check!(
        printed.load(Ordering::SeqCst) == runs,
        "the host nodes ran {} times for {runs} launches",
        printed.load(Ordering::SeqCst)
    );
    println!("graphs: {runs} launches, every sum {expected}: OK");
    Ok(())
}
