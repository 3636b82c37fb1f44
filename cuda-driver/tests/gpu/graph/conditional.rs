//! GPU tests: conditional graph nodes: while, if, if/else and switch bodies chosen by a kernel,
//! and the refusal of a conditional handle of another graph.

use cuda_driver::graph::GraphError;
use cuda_driver::prelude::*;
use cuda_driver::types::GraphCondAssignFlags;
use cuda_driver::{
    graph::Graph, jit::JitOptions, module::Linker, types::GraphConditionalNodeType,
    types::GraphInstantiateFlags, types::GraphNodeType, types::JitInputType, Context, DeviceBuffer,
    Error, LaunchConfig, Module,
};

use crate::common::stream;
use crate::graph::kernels;

const GRAPH_CONDITIONAL: &str = include_str!("../../ptx/graph_conditional.ptx");

/// The kernels of ptx/graph_conditional.cu (relocatable code calling
/// cudaGraphSetConditional), linked with the device runtime the crate finds
/// (`Module::load_with_device_runtime`: `CUDA_DRIVER_CUDADEVRT`, `CUDA_PATH`, the pinned wheels
/// in a `.venv`, `/usr/local/cuda`, ...). Where it finds none, the error names every place it
/// looked, and the test fails with it.
pub(crate) fn conditional_kernels(ctx: &Context) -> Module {
    let lib = cuda_driver::module::find_device_runtime(&[]).unwrap_or_else(|e| panic!("{e}"));
    crate::common::note(format!("device runtime: {}", lib.display()));
    Module::load_with_device_runtime(ctx, GRAPH_CONDITIONAL, "graph_conditional.ptx", &[]).unwrap()
}

/// Skips the test when the driver is older than `major.minor` (what `feature` needs).
fn require_driver(major: u32, minor: u32, feature: &str) {
    let v = cuda_driver::driver_version().unwrap();
    if v < (major, minor) {
        crate::common::skip(format!(
            "{feature} needs CUDA {major}.{minor}, the driver is {}.{}",
            v.0, v.1
        ));
    }
}

/// A graph: a kernel sets `handle` of a conditional node of `kind` with `bodies` bodies,
/// body `i` adding 1 to `hits[i]`. Launched once per value of `values` (the setter updated in
/// the exec each time); after each launch `hits` must equal what `expect(value)` chose.
fn run_conditional(
    ctx: &Context,
    kind: GraphConditionalNodeType,
    bodies: usize,
    values: &[u32],
    expect: impl Fn(u32) -> Option<usize>,
) {
    let s = stream(ctx);
    let cm = conditional_kernels(ctx);
    let set = cm.function("set_condition").unwrap();
    let m = kernels(ctx);
    let inc = m.function("inc").unwrap();
    let one = LaunchConfig::new(1u32, 32u32);
    let mut hits: Vec<_> = (0..bodies)
        .map(|_| DeviceBuffer::<i32>::zeroed(ctx, 1).unwrap())
        .collect();
    let g = Graph::new().unwrap();
    let handle = match g.conditional_handle(ctx, 0, GraphCondAssignFlags::DEFAULT) {
        Err(e @ Error::Unsupported { .. }) => {
            crate::common::skip(format!("conditional nodes need CUDA 12.3: {e}"))
        }
        h => h.unwrap(),
    };
    // SAFETY: set_condition(handle, unsigned) touches no memory.
    let setter = unsafe { g.add_kernel(&[], &set, &one, (handle, &values[0])).unwrap() };
    let node = g
        .add_conditional(&[*setter], ctx, handle, kind, bodies as u32)
        .unwrap();
    assert_eq!(node.node_type().unwrap(), GraphNodeType::CONDITIONAL);
    assert_eq!(node.body_count(), bodies);
    for (i, h) in hits.iter_mut().enumerate() {
        let body = node.body(i).unwrap();
        // SAFETY: h outlives the graph and its exec; inc(int*, int) gets 1 element.
        unsafe {
            body.add_kernel(&[], &inc, &one, (h.as_view_mut(), &1i32))
                .unwrap()
        };
    }
    assert!(node.body(bodies).is_err());
    let mut exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
    let mut expected = vec![0i32; bodies];
    for &value in values {
        // SAFETY: as for the node.
        unsafe {
            exec.set_kernel_node(setter, &set, &one, (handle, &value))
                .unwrap()
        };
        exec.launch(&s).unwrap();
        s.synchronize().unwrap();
        if let Some(i) = expect(value) {
            expected[i] += 1;
        }
        let got: Vec<i32> = hits.iter().map(|h| h.to_vec().unwrap()[0]).collect();
        assert_eq!(got, expected, "after the launch with condition {value}");
    }
}

#[gpu_test]
fn if_else_conditional_runs_the_body_the_kernel_chose() {
    let ctx = gpu_or_skip!();
    require_driver(12, 8, "an if node with an else body");
    // Body 0 when the condition is non-zero, body 1 (else) when it is zero.
    run_conditional(
        &ctx,
        GraphConditionalNodeType::IF,
        2,
        &[1, 0, 7, 0, 0, u32::MAX],
        |v| Some(if v != 0 { 0 } else { 1 }),
    );
}

#[gpu_test]
fn if_conditional_without_else_runs_nothing_on_zero() {
    let ctx = gpu_or_skip!();
    run_conditional(&ctx, GraphConditionalNodeType::IF, 1, &[0, 3, 0, 1], |v| {
        (v != 0).then_some(0)
    });
}

#[gpu_test]
fn switch_conditional_runs_the_body_of_the_condition() {
    let ctx = gpu_or_skip!();
    require_driver(12, 8, "switch nodes");
    // Body n for condition n; no body for a condition past the last.
    run_conditional(
        &ctx,
        GraphConditionalNodeType::SWITCH,
        4,
        &[2, 0, 3, 1, 2, 4, 100],
        |v| (v < 4).then_some(v as usize),
    );
}

#[gpu_test]
fn while_conditional_loops_n_times() {
    let ctx = gpu_or_skip!();
    let s = stream(&ctx);
    let m = conditional_kernels(&ctx);
    let step = m.function("loop_step").unwrap();
    let mut counter = DeviceBuffer::<i32>::zeroed(&ctx, 1).unwrap();
    let limit = 37i32;
    let g = Graph::new().unwrap();
    let handle = match g.conditional_handle(&ctx, 1, GraphCondAssignFlags::DEFAULT) {
        Err(Error::Unsupported { .. }) => crate::common::skip("conditional nodes need CUDA 12.3"),
        h => h.unwrap(),
    };
    let node = g
        .add_conditional(&[], &ctx, handle, GraphConditionalNodeType::WHILE, 1)
        .unwrap();
    assert_eq!(node.body_count(), 1);
    let body = node.body(0).unwrap();
    let cfg = LaunchConfig::new(1u32, 32u32);
    // SAFETY: counter outlives the graph and exec; loop_step(int*, int, handle).
    unsafe {
        body.add_kernel(&[], &step, &cfg, (counter.as_view_mut(), &limit, handle))
            .unwrap()
    };
    drop(body);
    assert!(node.body(1).is_err());
    let exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(counter.to_vec().unwrap(), vec![limit]);
    // The default (1) applies again at the next launch: one more iteration.
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(counter.to_vec().unwrap(), vec![limit + 1]);
}

#[gpu_test]
fn conditional_handle_of_another_graph_is_refused() {
    let ctx = gpu_or_skip!();
    let g1 = Graph::new().unwrap();
    let g2 = Graph::new().unwrap();
    let h = match g1.conditional_handle(&ctx, 0, GraphCondAssignFlags::empty()) {
        Err(e @ Error::Unsupported { .. }) => {
            crate::common::skip(format!("conditional nodes need CUDA 12.3: {e}"))
        }
        h => h.unwrap(),
    };
    match g2.add_conditional(&[], &ctx, h, GraphConditionalNodeType::IF, 1) {
        Err(Error::Graph(GraphError::Mismatch {
            expected, found, ..
        })) => {
            assert_eq!(expected, g1.as_raw() as usize);
            assert_eq!(found, g2.as_raw() as usize);
        }
        other => panic!("{other:?}"),
    }
    // g2 is still usable.
    g2.add_empty(&[]).unwrap();
}

/// A conditional node found again where it is not at hand (among the graph's nodes, through
/// a fresh borrow of a body, on another thread) gives its handle and bodies; what is not a
/// conditional node of this graph tree is refused (another kind, a clone's node, a destroyed
/// node's nested records).
#[gpu_test]
fn a_conditional_node_found_among_the_graphs_nodes_gives_its_handle_and_bodies() {
    let ctx = gpu_or_skip!();
    require_driver(12, 8, "an if node with an else body");
    let s = stream(&ctx);
    let m = kernels(&ctx);
    let inc = m.function("inc").unwrap();
    let one = LaunchConfig::new(1u32, 32u32);
    let mut hits = DeviceBuffer::<i32>::zeroed(&ctx, 3).unwrap();
    let g = Graph::new().unwrap();
    let outer_h = g
        .conditional_handle(&ctx, 1, GraphCondAssignFlags::DEFAULT)
        .unwrap();
    let empty = g.add_empty(&[]).unwrap();
    {
        // Created here, filled elsewhere: the node value is dropped at once.
        let node = g
            .add_conditional(&[empty], &ctx, outer_h, GraphConditionalNodeType::IF, 2)
            .unwrap();
        // A nested if node in body 0, with its own handle (of the same graph).
        let inner_h = g
            .conditional_handle(&ctx, 1, GraphCondAssignFlags::DEFAULT)
            .unwrap();
        node.body(0)
            .unwrap()
            .add_conditional(&[], &ctx, inner_h, GraphConditionalNodeType::IF, 1)
            .unwrap();
    }
    assert!(matches!(
        empty.as_conditional(),
        Err(Error::Graph(GraphError::NodeKind { .. }))
    ));
    // Found among the graph's nodes, on another thread (the graph is Send).
    let outer_raw = outer_h.as_raw();
    let g = std::thread::spawn(move || {
        let found = g
            .nodes()
            .unwrap()
            .into_iter()
            .find(|n| n.node_type().unwrap() == GraphNodeType::CONDITIONAL)
            .unwrap()
            .as_conditional()
            .unwrap();
        assert_eq!(found.handle().as_raw(), outer_raw);
        assert_eq!(found.kind(), GraphConditionalNodeType::IF);
        assert_eq!(found.body_count(), 2);
        drop(found);
        g
    })
    .join()
    .unwrap();
    let outer = g.root_nodes().unwrap()[0].dependents().unwrap()[0]
        .as_conditional()
        .unwrap();
    {
        let (b0, b1) = (outer.body(0).unwrap(), outer.body(1).unwrap());
        // SAFETY: hits outlives the graph and exec; inc(int*, int) touches 1 element.
        unsafe {
            b1.add_kernel(&[], &inc, &one, (hits.as_view_mut(), &1i32))
                .unwrap()
        };
        // The nested node, found through a fresh borrow of body 0, gets its body filled.
        let inner = b0.nodes().unwrap()[0].as_conditional().unwrap();
        assert_ne!(inner.handle(), outer_h);
        let ib = inner.body(0).unwrap();
        let third = hits.as_view_mut().into_slice_mut(2..3).unwrap();
        // SAFETY: as above; element 2.
        unsafe { ib.add_kernel(&[], &inc, &one, (third, &1i32)).unwrap() };
    }
    let exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    // Outer condition 1: body 0 runs (the inner if, condition 1: element 2); not the else.
    assert_eq!(hits.to_vec().unwrap(), vec![0, 0, 1]);
    // A clone's conditional node is not this graph's: never the original's bodies.
    match g.try_clone() {
        Ok(clone) => {
            let n = clone
                .nodes()
                .unwrap()
                .into_iter()
                .find(|n| n.node_type().unwrap() == GraphNodeType::CONDITIONAL)
                .unwrap();
            assert!(matches!(n.as_conditional(), Err(Error::NotFound { .. })));
        }
        Err(e) => crate::common::note(format!("graphs with conditional nodes are not cloned: {e}")),
    }
    // A destroyed conditional node: its handle may come back for another node; the record
    // (and its nested records) are gone.
    let g2 = Graph::new().unwrap();
    let h2 = g2
        .conditional_handle(&ctx, 0, GraphCondAssignFlags::DEFAULT)
        .unwrap();
    let n2 = g2
        .add_conditional(&[], &ctx, h2, GraphConditionalNodeType::IF, 1)
        .unwrap();
    let raw = n2.as_raw();
    let plain = *n2;
    drop(n2);
    // SAFETY: no copy of the node handle is used afterwards.
    unsafe { plain.destroy().unwrap() };
    let e = g2.add_empty(&[]).unwrap();
    if e.as_raw() == raw {
        assert!(matches!(
            e.as_conditional(),
            Err(Error::Graph(GraphError::NodeKind { .. }))
        ));
    }
    assert_eq!(g2.node_count().unwrap(), 1);
}

/// The device runtime through the linker's own API (`Linker::add_device_runtime`), and a
/// garbage library (a file that is no archive) added as the device runtime: a link error with
/// the driver's log, never undefined behaviour; the context stays usable.
#[gpu_test]
fn the_linker_adds_the_device_runtime_and_refuses_a_garbage_library() {
    let ctx = gpu_or_skip!();
    let mut linker = Linker::new(&ctx, &JitOptions::new()).unwrap();
    linker
        .add_data(
            JitInputType::PTX,
            GRAPH_CONDITIONAL,
            "graph_conditional.ptx",
        )
        .unwrap();
    let lib = linker.add_device_runtime(&[]).unwrap();
    assert!(lib.is_file());
    let cubin = linker.complete().unwrap();
    let m = Module::load_data(&ctx, &cubin[..]).unwrap();
    m.function("set_condition").unwrap();
    m.function("loop_step").unwrap();

    let garbage = std::env::temp_dir().join(format!("garbage-cudadevrt-{}.a", std::process::id()));
    std::fs::write(&garbage, b"!<arch>\nthis is no archive member").unwrap();
    let mut linker = Linker::new(&ctx, &JitOptions::new()).unwrap();
    linker
        .add_data(
            JitInputType::PTX,
            GRAPH_CONDITIONAL,
            "graph_conditional.ptx",
        )
        .unwrap();
    let r = linker
        .add_file(JitInputType::LIBRARY, &garbage)
        .and_then(|()| linker.complete().map(drop));
    let _ = std::fs::remove_file(&garbage);
    let e = r.unwrap_err();
    assert!(
        matches!(e, Error::Jit { .. } | Error::Driver { .. }),
        "{e:?}"
    );
    crate::common::still_usable(&ctx);
}
