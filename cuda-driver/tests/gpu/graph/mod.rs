//! GPU tests: graphs (Graph Management). Here: the graph itself (edges, queries, DOT output,
//! edge data) and a leak test of build, instantiate and launch cycles; by node kind and use:
//!
//! * `nodes`: every node kind executed, node parameters, host nodes, copy and batch
//!   memory-operation nodes, library kernels as nodes, generic parameters, user objects;
//! * `exec`: executable graphs: instantiation and uploads, whole-graph and per-node updates,
//!   enabled and disabled nodes, what an exec keeps alive;
//! * `memory`: graph memory nodes and the device's graph memory attributes;
//! * `launch_memory`: memory a launch leaves allocated, one owner per launch, freed after it
//!   or by another graph's free node;
//! * `conditional`: while, if/else and switch conditional nodes.
//!
//! Stream capture, which builds graphs from stream work, is tested in `stream::capture`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use cuda_driver::graph::GraphError;
use cuda_driver::prelude::*;
use cuda_driver::{
    graph::EdgeData, graph::Graph, sys, types::ErrorCode, types::GraphDebugDotFlags,
    types::GraphDependencyType, types::GraphInstantiateFlags, Context, DeviceBuffer, Error,
    LaunchConfig, Module,
};

use crate::common::stream;

pub(crate) mod conditional;
mod exec;
mod launch_memory;
mod memory;
mod nodes;

const GRAPH_KERNELS: &str = include_str!("../../ptx/graph_kernels.ptx");

pub(crate) fn kernels(ctx: &Context) -> Module {
    Module::load_data(ctx, GRAPH_KERNELS).unwrap()
}

#[gpu_test]
fn edges_queries_and_dot() {
    let _ctx = gpu_or_skip!();
    let g = Graph::new().unwrap();
    let a = g.add_empty(&[]).unwrap();
    let b = g.add_empty(&[a]).unwrap();
    let c = g.add_empty(&[a]).unwrap();
    let d = g.add_empty(&[]).unwrap();
    g.add_dependencies(&[(b, d), (c, d)]).unwrap();
    assert_eq!(g.root_nodes().unwrap(), vec![a]);
    assert_eq!(g.leaf_nodes().unwrap(), vec![d]);
    assert_eq!(d.dependencies().unwrap().len(), 2);
    assert_eq!(a.dependents().unwrap().len(), 2);
    assert_eq!(g.edges().unwrap().len(), 4);
    g.remove_dependencies(&[(c, d)]).unwrap();
    assert_eq!(g.edges().unwrap().len(), 3);
    assert_eq!(g.leaf_nodes().unwrap().len(), 2);
    match g.edges_with_data() {
        Err(Error::Unsupported { .. }) => crate::common::note("edge data needs CUDA 12.3"),
        e => assert_eq!(e.unwrap().len(), 3),
    }
    let dot = g.debug_dot_string(GraphDebugDotFlags::VERBOSE).unwrap();
    assert!(dot.contains("digraph"), "{dot}");
    // Clone and find.
    let clone = g.try_clone().unwrap();
    let d2 = g.find_in_clone(d, &clone).unwrap();
    assert_eq!(d2.dependencies().unwrap().len(), 1);
    // A node of another graph is no dependency.
    let other = Graph::new().unwrap();
    assert!(matches!(
        other.add_empty(&[a]),
        Err(Error::Graph(GraphError::Mismatch { .. }))
    ));
}

fn rss_pages() -> usize {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

#[gpu_test]
fn a_thousand_cycles_leave_memory_at_baseline() {
    let ctx = gpu_exclusive_or_skip!();
    let s = stream(&ctx);
    let m = kernels(&ctx);
    let inc = m.function("inc").unwrap();
    let n = 1024usize;
    let ni = n as i32;
    let mut x = DeviceBuffer::<i32>::zeroed(&ctx, n).unwrap();
    let cfg = LaunchConfig::for_num_elems(n).unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let cycle = |x: &mut DeviceBuffer<i32>| {
        let g = Graph::new().unwrap();
        // SAFETY: x outlives the graph and its exec.
        let k = unsafe {
            g.add_kernel(&[], &inc, &cfg, (x.as_view_mut(), &ni))
                .unwrap()
        };
        let c = calls.clone();
        g.add_host(&[*k], move || {
            c.fetch_add(1, Ordering::Relaxed);
        })
        .unwrap();
        let exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
        exec.launch(&s).unwrap();
        s.synchronize().unwrap();
    };
    for _ in 0..50 {
        cycle(&mut x);
    }
    ctx.synchronize().unwrap();
    let (free0, _) = ctx.mem_info().unwrap();
    let rss0 = rss_pages();
    for _ in 0..1000 {
        cycle(&mut x);
    }
    ctx.synchronize().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let (free1, _) = ctx.mem_info().unwrap();
    let rss1 = rss_pages();
    assert_eq!(calls.load(Ordering::Relaxed), 1050);
    assert_eq!(x.to_vec().unwrap(), vec![1050; n]);
    // Device memory: within 2 MiB (the driver's own bookkeeping granularity).
    assert!(
        free1 + (2 << 20) >= free0,
        "free device memory fell from {free0} to {free1}"
    );
    // Host memory: within 4 MiB of pages.
    let page = 4096usize;
    assert!(
        rss1 * page <= rss0 * page + (4 << 20),
        "RSS grew from {rss0} to {rss1} pages"
    );
    // Every closure was freed with its graph and exec (user-object destructors run on a
    // driver thread, soon after).
    wait_for_sole_owner(&calls);
}

/// Waits (up to 10 s) until `a` has no other owner, and asserts it.
fn wait_for_sole_owner<T>(a: &Arc<T>) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while Arc::strong_count(a) != 1 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(Arc::strong_count(a), 1);
}

#[gpu_test]
fn edge_data_is_added_queried_and_removed() {
    let ctx = gpu_or_skip!();
    let s = stream(&ctx);
    let m = kernels(&ctx);
    let inc = m.function("inc").unwrap();
    let n = 256usize;
    let ni = n as i32;
    let cfg = LaunchConfig::for_num_elems(n).unwrap();
    let mut x = DeviceBuffer::<i32>::zeroed(&ctx, n).unwrap();
    let mut y = DeviceBuffer::<i32>::zeroed(&ctx, n).unwrap();
    let g = Graph::new().unwrap();
    let a = g.add_empty(&[]).unwrap();
    let b = g.add_empty(&[]).unwrap();
    // SAFETY: x and y outlive the graph and its exec; inc(int*, int) gets n elements.
    let (k1, k2) = unsafe {
        (
            g.add_kernel(&[], &inc, &cfg, (x.as_view_mut(), &ni))
                .unwrap(),
            g.add_kernel(&[], &inc, &cfg, (y.as_view_mut(), &ni))
                .unwrap(),
        )
    };
    let plain = EdgeData::default();
    assert_eq!(plain.kind, GraphDependencyType::DEFAULT);
    // A programmatic edge out of k1's launch-order port.
    let programmatic = EdgeData {
        from_port: sys::CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER as u8,
        to_port: 0,
        kind: GraphDependencyType::PROGRAMMATIC,
    };
    match g.add_dependencies_with_data(&[(a, b, plain), (*k1, *k2, programmatic)]) {
        Err(e @ Error::Unsupported { .. }) => {
            crate::common::skip(format!("edge data needs CUDA 12.3: {e}"))
        }
        r => r.unwrap(),
    }
    let edges = g.edges_with_data().unwrap();
    assert_eq!(edges.len(), 2, "{edges:?}");
    assert!(edges.contains(&(a, b, plain)), "{edges:?}");
    assert_eq!(b.dependencies().unwrap(), vec![a]);
    // Driver 580 keeps a programmatic edge between kernels that do not synchronize on the
    // grid dependency as a default one; where it keeps the data, a query without edge data
    // would lose it, and is refused.
    if edges.contains(&(*k1, *k2, programmatic)) {
        match g.edges() {
            Err(e) => assert_eq!(e.code(), Some(ErrorCode::LOSSY_QUERY), "{e}"),
            Ok(v) => panic!("a lossy edge query succeeded: {v:?}"),
        }
    } else {
        assert!(edges.contains(&(*k1, *k2, plain)), "{edges:?}");
        crate::common::note("the programmatic edge was stored as a default one");
    }

    // The graph runs (programmatic launches need compute capability 9.0).
    if ctx.device().compute_capability().unwrap() >= (9, 0) {
        let exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
        exec.launch(&s).unwrap();
        s.synchronize().unwrap();
        assert_eq!(x.to_vec().unwrap(), vec![1; n]);
        assert_eq!(y.to_vec().unwrap(), vec![1; n]);
    } else {
        crate::common::note("programmatic edges not launched below compute capability 9.0");
    }

    let stored = edges
        .iter()
        .find(|e| e.0 == *k1 && e.1 == *k2)
        .expect("the kernels' edge")
        .2;
    g.remove_dependencies_with_data(&[(*k1, *k2, stored)])
        .unwrap();
    assert_eq!(g.edges_with_data().unwrap(), vec![(a, b, plain)]);
    // Only default edges left: the plain query works again.
    assert_eq!(g.edges().unwrap(), vec![(a, b)]);
    g.remove_dependencies_with_data(&[(a, b, plain)]).unwrap();
    assert!(g.edges_with_data().unwrap().is_empty());
    assert_eq!(g.root_nodes().unwrap().len(), 4);
}
