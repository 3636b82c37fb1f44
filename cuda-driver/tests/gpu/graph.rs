//! Graphs: every node kind executed, captures, execs, updates, conditionals, keep-alives and
//! the typed errors of bad input.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use cuda_driver::prelude::*;
use cuda_driver::types::GraphCondAssignFlags;
use cuda_driver::{
    BatchMemOp, CaptureMode, CaptureStatus, Context, DeviceBuffer, Error, ErrorCode, Event,
    EventFlags, Graph, GraphConditionalNodeType, GraphDebugDotFlags, GraphInstantiateFlags,
    GraphMemAttribute, GraphNodeType, JitInputType, JitOptions, LaunchConfig, Linker, Module,
    Stream, StreamFlags,
};

pub(crate) const GRAPH_KERNELS: &str = include_str!("../ptx/graph_kernels.ptx");
const GRAPH_CONDITIONAL: &str = include_str!("../ptx/graph_conditional.ptx");

pub(crate) fn stream(ctx: &Context) -> Stream {
    Stream::new(ctx, StreamFlags::NON_BLOCKING).unwrap()
}

pub(crate) fn kernels(ctx: &Context) -> Module {
    Module::load_data(ctx, GRAPH_KERNELS).unwrap()
}

/// libcudadevrt.a, which implements cudaGraphSetConditional: from CUDA_PATH, or the pinned
/// wheels in the repository's .venv.
fn cudadevrt() -> std::path::PathBuf {
    let mut candidates = Vec::new();
    for var in ["CUDA_PATH", "CUDA_HOME"] {
        if let Ok(p) = std::env::var(var) {
            candidates.push(std::path::Path::new(&p).join("lib64/libcudadevrt.a"));
            candidates.push(std::path::Path::new(&p).join("lib/libcudadevrt.a"));
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    if let Ok(rd) = std::fs::read_dir(root.join(".venv/lib")) {
        for py in rd.flatten() {
            candidates.push(
                py.path()
                    .join("site-packages/nvidia/cu13/lib/libcudadevrt.a"),
            );
        }
    }
    candidates
        .into_iter()
        .find(|p| p.is_file())
        .expect("libcudadevrt.a not found (set CUDA_PATH or install the pinned wheels into .venv)")
}

pub(crate) fn conditional_kernels(ctx: &Context) -> Module {
    let mut linker = Linker::new(ctx, &JitOptions::new()).unwrap();
    linker
        .add_data(
            JitInputType::PTX,
            GRAPH_CONDITIONAL,
            "graph_conditional.ptx",
        )
        .unwrap();
    linker.add_file(JitInputType::LIBRARY, cudadevrt()).unwrap();
    let cubin = linker.complete().unwrap();
    Module::load_data(ctx, &cubin[..]).unwrap()
}

#[gpu_test]
fn every_node_kind_runs() {
    let ctx = gpu_or_skip!();
    let s = stream(&ctx);
    let m = kernels(&ctx);
    let inc = m.function("inc").unwrap();
    let n = 1000usize;
    let ni = n as i32;
    let mut a = DeviceBuffer::<i32>::from_slice(&ctx, &vec![-1; n]).unwrap();
    let mut b = DeviceBuffer::<i32>::zeroed(&ctx, n).unwrap();
    let mut c = DeviceBuffer::<i32>::zeroed(&ctx, n).unwrap();
    let mut flag = DeviceBuffer::<u32>::zeroed(&ctx, 1).unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    // Timed: the record node is verified by the time from an event recorded before each launch.
    let ev = Arc::new(Event::new(&ctx, EventFlags::DEFAULT).unwrap());
    let cfg = LaunchConfig::for_num_elems(n).unwrap();

    let g = Graph::new().unwrap();
    // SAFETY: a, b, c, flag outlive the graph and its exec; inc(int*, int) gets n elements.
    let (memset, kernel, memcpy) = unsafe {
        let memset = g.add_memset(&[], &a.as_view_mut(), 5u32).unwrap();
        let kernel = g
            .add_kernel(&[*memset], &inc, &cfg, (a.as_view_mut(), &ni))
            .unwrap();
        let memcpy = g
            .add_memcpy(&[*kernel], &b.as_view_mut(), &a.as_view())
            .unwrap();
        (memset, kernel, memcpy)
    };
    let k = calls.clone();
    let host = g
        .add_host(&[*memcpy], move || {
            k.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let rec = g.add_event_record(&[*host], &ev).unwrap();
    let wait = g.add_event_wait(&[*rec], &ev).unwrap();
    let empty = g.add_empty(&[*wait]).unwrap();
    // A child graph adding 1 to b, after the copy.
    let child = Graph::new().unwrap();
    // SAFETY: b outlives the graphs; n elements.
    unsafe {
        child
            .add_kernel(&[], &inc, &cfg, (b.as_view_mut(), &ni))
            .unwrap()
    };
    let child_node = g.add_child_graph(&[empty], &child).unwrap();
    drop(child);
    // Graph-allocated memory: allocate, fill with 9, copy to c, free.
    let (alloc_node, alloc) = g.add_mem_alloc(&[], ctx.device(), n * 4).unwrap();
    // SAFETY: the view is used only between the allocation and its free node.
    let tmp = unsafe { alloc.view_mut::<i32>(n, &ctx) };
    // SAFETY: c outlives the graph; tmp is allocated while these nodes run.
    let (set_tmp, copy_tmp) = unsafe {
        let set_tmp = g.add_memset(&[*alloc_node], &tmp, 9u32).unwrap();
        let copy_tmp = g
            .add_memcpy(&[*set_tmp], &c.as_view_mut(), &tmp.as_view())
            .unwrap();
        (set_tmp, copy_tmp)
    };
    let _ = set_tmp;
    let free = g.add_mem_free(&[*copy_tmp], alloc).unwrap();
    // A batch memory operation writing 77 to `flag`.
    // SAFETY: flag is a live 4-byte allocation of ctx, outliving the graph.
    unsafe {
        g.add_batch_mem_op(
            &[*free],
            &ctx,
            &[BatchMemOp::WriteValue32 {
                address: flag.as_view_mut().as_raw(),
                value: 77,
            }],
        )
        .unwrap()
    };

    assert_eq!(memset.node_type().unwrap(), GraphNodeType::MEMSET);
    assert_eq!(kernel.node_type().unwrap(), GraphNodeType::KERNEL);
    assert_eq!(child_node.node_type().unwrap(), GraphNodeType::GRAPH);
    assert_eq!(g.node_count().unwrap(), 13);
    assert_eq!(memset.as_memset().unwrap().params().unwrap().value, 5);
    assert_eq!(kernel.launch_config().unwrap().grid, cfg.grid);

    let exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
    drop(g);
    for round in 1..=2 {
        let start = Event::new(&ctx, EventFlags::DEFAULT).unwrap();
        start.record(&s).unwrap();
        exec.launch(&s).unwrap();
        s.synchronize().unwrap();
        // The record node ran after `start`: never recorded (round 1), or recorded by the
        // previous launch (round 2), the elapsed time would be an error or negative.
        let ms = start.elapsed_ms(&ev).unwrap();
        assert!(ms >= 0.0, "{ms}");
        assert_eq!(a.to_vec().unwrap(), vec![6; n]);
        assert_eq!(b.to_vec().unwrap(), vec![7; n]);
        assert_eq!(c.to_vec().unwrap(), vec![9; n]);
        assert_eq!(flag.to_vec().unwrap(), vec![77]);
        assert_eq!(calls.load(Ordering::SeqCst), round);
        c.memset(0u32).unwrap();
        flag.memset(0u32).unwrap();
    }
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
        Err(Error::GraphMismatch { .. })
    ));
}

#[gpu_test]
fn host_node_counts_exactly_100_launches() {
    let ctx = gpu_or_skip!();
    let s = stream(&ctx);
    let calls = Arc::new(AtomicUsize::new(0));
    let g = Graph::new().unwrap();
    let k = calls.clone();
    g.add_host(&[], move || {
        k.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    let exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
    drop(g);
    for _ in 0..100 {
        exec.launch(&s).unwrap();
    }
    s.synchronize().unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 100);
    drop(exec);
    // The closure is freed once the exec is gone: only our handle remains.
    wait_for_sole_owner(&calls);
}

#[gpu_test]
fn host_node_panic_is_caught_and_counted() {
    let ctx = gpu_or_skip!();
    let s = stream(&ctx);
    let before = cuda_driver::host_fn_panic_count();
    let g = Graph::new().unwrap();
    g.add_host(&[], || panic!("graph host node panics"))
        .unwrap();
    let exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
    exec.launch(&s).unwrap();
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert!(cuda_driver::host_fn_panic_count() >= before + 2);
}

#[gpu_test]
fn multi_stream_capture_with_events() {
    let ctx = gpu_exclusive_or_skip!();
    let s1 = stream(&ctx);
    let s2 = stream(&ctx);
    let m = kernels(&ctx);
    let axpb = m.function("axpb").unwrap();
    let n = 4096usize;
    let ni = n as i32;
    let mut x = DeviceBuffer::<f32>::from_slice(&ctx, &vec![1.0; n]).unwrap();
    let mut y = DeviceBuffer::<f32>::from_slice(&ctx, &vec![1.0; n]).unwrap();
    let fork = Event::new(&ctx, EventFlags::DISABLE_TIMING).unwrap();
    let join = Event::new(&ctx, EventFlags::DISABLE_TIMING).unwrap();
    let cfg = LaunchConfig::for_num_elems(n).unwrap();
    // SAFETY: x and y outlive the graph and its exec.
    let graph = unsafe {
        s1.capture(CaptureMode::THREAD_LOCAL, |s1| {
            fork.record(s1)?;
            s2.wait_event(&fork)?;
            axpb.launch(s1, &cfg, (x.as_view_mut(), &2.0f32, &1.0f32, &ni))?;
            axpb.launch(&s2, &cfg, (y.as_view_mut(), &3.0f32, &0.0f32, &ni))?;
            join.record(&s2)?;
            s1.wait_event(&join)?;
            assert_eq!(s2.capture_status()?, CaptureStatus::ACTIVE);
            Ok(())
        })
        .unwrap()
    };
    assert_eq!(s1.capture_status().unwrap(), CaptureStatus::NONE);
    let kernels: Vec<_> = graph
        .nodes()
        .unwrap()
        .into_iter()
        .filter(|n| n.node_type().unwrap() == GraphNodeType::KERNEL)
        .collect();
    assert_eq!(kernels.len(), 2);
    // The two kernels are independent (captured on two streams).
    assert!(kernels.iter().all(|k| k.dependencies().unwrap().is_empty()));
    let exec = graph.instantiate(GraphInstantiateFlags::empty()).unwrap();
    exec.launch(&s1).unwrap();
    s1.synchronize().unwrap();
    assert_eq!(x.to_vec().unwrap(), vec![3.0; n]);
    assert_eq!(y.to_vec().unwrap(), vec![3.0; n]);
    exec.launch(&s1).unwrap();
    s1.synchronize().unwrap();
    assert_eq!(x.to_vec().unwrap(), vec![7.0; n]);
    assert_eq!(y.to_vec().unwrap(), vec![9.0; n]);
}

#[gpu_test]
fn exec_update_changes_kernel_arguments() {
    let ctx = gpu_or_skip!();
    let s = stream(&ctx);
    let m = kernels(&ctx);
    let axpb = m.function("axpb").unwrap();
    let n = 512usize;
    let ni = n as i32;
    let mut x = DeviceBuffer::<f32>::from_slice(&ctx, &vec![1.0; n]).unwrap();
    let cfg = LaunchConfig::for_num_elems(n).unwrap();
    let g = Graph::new().unwrap();
    // SAFETY: x outlives the graph and exec; axpb(float*, float, float, int).
    let node = unsafe {
        g.add_kernel(&[], &axpb, &cfg, (x.as_view_mut(), &2.0f32, &0.0f32, &ni))
            .unwrap()
    };
    let mut exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(x.to_vec().unwrap(), vec![2.0; n]);
    // Per-node update: x = x * 1 + 5.
    // SAFETY: as above.
    unsafe {
        exec.set_kernel_node(node, &axpb, &cfg, (x.as_view_mut(), &1.0f32, &5.0f32, &ni))
            .unwrap()
    };
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(x.to_vec().unwrap(), vec![7.0; n]);
    // Wrong argument sizes are refused before the driver.
    // SAFETY: refused before any call.
    let r = unsafe {
        exec.set_kernel_node(node, &axpb, &cfg, (x.as_view_mut(), &1.0f64, &5.0f32, &ni))
    };
    assert!(
        matches!(r, Err(Error::ArgumentSize { index: 1, .. })),
        "{r:?}"
    );
    // Whole-graph update from a graph of the same topology: x = x * 0 + 1.
    let g2 = Graph::new().unwrap();
    // SAFETY: as above.
    unsafe {
        g2.add_kernel(&[], &axpb, &cfg, (x.as_view_mut(), &0.0f32, &1.0f32, &ni))
            .unwrap()
    };
    exec.update(&g2).unwrap();
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(x.to_vec().unwrap(), vec![1.0; n]);
    // Disabled, the node does nothing.
    exec.set_node_enabled(*node, false).unwrap();
    assert!(!exec.node_enabled(*node).unwrap());
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(x.to_vec().unwrap(), vec![1.0; n]);
    assert_eq!(exec.flags().unwrap(), GraphInstantiateFlags::empty());
}

#[gpu_test]
fn update_with_another_topology_is_a_typed_error() {
    let ctx = gpu_or_skip!();
    let s = stream(&ctx);
    let g = Graph::new().unwrap();
    g.add_empty(&[]).unwrap();
    let mut exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
    let g2 = Graph::new().unwrap();
    let a = g2.add_empty(&[]).unwrap();
    g2.add_empty(&[a]).unwrap();
    match exec.update(&g2) {
        Err(Error::GraphUpdate { reason, .. }) => {
            assert_eq!(
                reason,
                cuda_driver::GraphExecUpdateResult::ERROR_TOPOLOGY_CHANGED
            )
        }
        other => panic!("{other:?}"),
    }
    // The exec still works.
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
}

#[gpu_test]
fn node_parameters_of_the_wrong_kind_are_refused() {
    let _ctx = gpu_or_skip!();
    let g = Graph::new().unwrap();
    let e = g.add_empty(&[]).unwrap();
    match e.as_memset() {
        Err(Error::NodeKind {
            expected, found, ..
        }) => {
            assert_eq!(expected, GraphNodeType::MEMSET);
            assert_eq!(found, GraphNodeType::EMPTY);
        }
        other => panic!("{other:?}"),
    }
    assert!(e.as_kernel().is_err());
    assert!(e.as_host().is_err());
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
        Err(Error::GraphMismatch {
            expected, found, ..
        }) => {
            assert_eq!(expected, g1.as_raw() as usize);
            assert_eq!(found, g2.as_raw() as usize);
        }
        other => panic!("{other:?}"),
    }
    // g2 is still usable.
    g2.add_empty(&[]).unwrap();
}

#[gpu_test]
fn exec_keeps_its_module_loaded() {
    let ctx = gpu_exclusive_or_skip!();
    let s = stream(&ctx);
    let n = 256usize;
    let ni = n as i32;
    let mut x = DeviceBuffer::<i32>::zeroed(&ctx, n).unwrap();
    let exec = {
        let m = kernels(&ctx);
        let inc = m.function("inc").unwrap();
        let g = Graph::new().unwrap();
        let cfg = LaunchConfig::for_num_elems(n).unwrap();
        // SAFETY: x outlives the exec.
        unsafe {
            g.add_kernel(&[], &inc, &cfg, (x.as_view_mut(), &ni))
                .unwrap()
        };
        g.instantiate(GraphInstantiateFlags::empty()).unwrap()
        // m, inc and g are dropped here: the exec keeps the module loaded.
    };
    exec.launch(&s).unwrap();
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(x.to_vec().unwrap(), vec![2; n]);
    // A captured launch keeps its module loaded too.
    let exec2 = {
        let m = kernels(&ctx);
        let inc = m.function("inc").unwrap();
        let cfg = LaunchConfig::for_num_elems(n).unwrap();
        // SAFETY: x outlives the graph and its exec.
        let g = unsafe {
            s.capture(CaptureMode::RELAXED, |s| {
                inc.launch(s, &cfg, (x.as_view_mut(), &ni))
            })
            .unwrap()
        };
        g.instantiate(GraphInstantiateFlags::empty()).unwrap()
    };
    exec2.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(x.to_vec().unwrap(), vec![3; n]);
}

#[gpu_test]
fn host_functions_in_captures() {
    let ctx = gpu_exclusive_or_skip!();
    let s = stream(&ctx);
    let calls = Arc::new(AtomicUsize::new(0));
    let k = calls.clone();
    // SAFETY: the captured work uses no device memory.
    let g = unsafe {
        s.capture(CaptureMode::THREAD_LOCAL, |s| {
            // A FnOnce cannot be replayed: refused, and the capture goes on.
            match s.launch_host_fn(|| ()) {
                Err(Error::HostFnNotReplayable { .. }) => {}
                other => panic!("{other:?}"),
            }
            s.launch_host_fn_repeatable(move || {
                k.fetch_add(1, Ordering::SeqCst);
            })
        })
        .unwrap()
    };
    let exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
    drop(g);
    for _ in 0..3 {
        exec.launch(&s).unwrap();
    }
    s.synchronize().unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    // Outside captures both run once.
    let k = calls.clone();
    s.launch_host_fn_repeatable(move || {
        k.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    s.synchronize().unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 4);
}

#[gpu_test]
fn scoped_capture_always_ends() {
    let ctx = gpu_exclusive_or_skip!();
    let s = stream(&ctx);
    // SAFETY: nothing is captured.
    let r = unsafe {
        s.capture(CaptureMode::THREAD_LOCAL, |_| {
            Err(Error::InvalidArgument("early return".into()))
        })
    };
    assert!(matches!(r, Err(Error::InvalidArgument(_))));
    assert_eq!(s.capture_status().unwrap(), CaptureStatus::NONE);
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: nothing is captured.
        let _ = unsafe { s.capture(CaptureMode::THREAD_LOCAL, |_| panic!("inside capture")) };
    }));
    assert!(panicked.is_err());
    assert_eq!(s.capture_status().unwrap(), CaptureStatus::NONE);
    // Capture info while capturing.
    // SAFETY: nothing is captured.
    unsafe { s.begin_capture(CaptureMode::RELAXED).unwrap() };
    let info = s.capture_info().unwrap();
    assert_eq!(info.status, CaptureStatus::ACTIVE);
    assert!(info.id != 0 && !info.graph.is_null());
    let g = s.end_capture().unwrap();
    assert_eq!(g.node_count().unwrap(), 0);
    // The thread's capture mode can be exchanged and restored.
    let old = cuda_driver::exchange_thread_capture_mode(CaptureMode::RELAXED).unwrap();
    assert_eq!(
        cuda_driver::exchange_thread_capture_mode(old).unwrap(),
        CaptureMode::RELAXED
    );
}

#[gpu_test]
fn capture_ended_on_another_thread_is_refused() {
    let ctx = gpu_exclusive_or_skip!();
    let s = stream(&ctx);
    // SAFETY: nothing is captured.
    unsafe { s.begin_capture(CaptureMode::THREAD_LOCAL).unwrap() };
    let r = std::thread::scope(|sc| sc.spawn(|| s.end_capture().map(|_| ())).join().unwrap());
    assert!(matches!(r, Err(Error::CaptureWrongThread { .. })), "{r:?}");
    // The driver may end the capture with the refusal (driver 580 does); either way the
    // stream says so, and ends up usable.
    match s.capture_status().unwrap() {
        CaptureStatus::NONE => {
            crate::common::note("the refusal ended the capture");
            assert!(s.end_capture().is_err());
        }
        status => {
            assert_eq!(status, CaptureStatus::ACTIVE);
            drop(s.end_capture().unwrap());
        }
    }
    assert_eq!(s.capture_status().unwrap(), CaptureStatus::NONE);
    s.launch_host_fn(|| ()).unwrap();
    s.synchronize().unwrap();
}

#[gpu_test]
fn synchronizing_during_a_global_capture_invalidates_it() {
    let ctx = gpu_exclusive_or_skip!();
    let s = stream(&ctx);
    // SAFETY: nothing is captured.
    unsafe { s.begin_capture(CaptureMode::GLOBAL).unwrap() };
    let e = ctx.synchronize().unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::STREAM_CAPTURE_UNSUPPORTED), "{e}");
    match s.end_capture() {
        Err(Error::CaptureInvalidated { .. }) => {}
        other => panic!("{other:?}"),
    }
    // Stream and context are usable again.
    let mut b = DeviceBuffer::<u32>::zeroed(&ctx, 4).unwrap();
    b.memset(3u32).unwrap();
    s.synchronize().unwrap();
    assert_eq!(b.to_vec().unwrap(), vec![3; 4]);
}

#[gpu_test]
fn graph_memory_attributes() {
    let ctx = gpu_exclusive_or_skip!();
    let s = stream(&ctx);
    let dev = ctx.device();
    let g = Graph::new().unwrap();
    let (_node, alloc) = g.add_mem_alloc(&[], dev, 1 << 20).unwrap();
    let alloc_ptr = alloc.as_raw();
    let exec = g
        .instantiate(GraphInstantiateFlags::AUTO_FREE_ON_LAUNCH)
        .unwrap();
    assert!(exec
        .flags()
        .unwrap()
        .contains(GraphInstantiateFlags::AUTO_FREE_ON_LAUNCH));
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert!(
        dev.graph_mem_attribute(GraphMemAttribute::USED_MEM_CURRENT)
            .unwrap()
            >= 1 << 20
    );
    assert!(
        dev.graph_mem_attribute(GraphMemAttribute::RESERVED_MEM_HIGH)
            .unwrap()
            >= 1 << 20
    );
    // Auto-free makes the next launch possible; then free outside the graph.
    exec.launch(&s).unwrap();
    // SAFETY: the launch above allocated it; nothing uses it afterwards.
    unsafe { alloc.free_after_launch(&s).unwrap() };
    s.synchronize().unwrap();
    let _ = alloc_ptr;
    drop(exec);
    drop(g);
    let reserved = dev
        .graph_mem_attribute(GraphMemAttribute::RESERVED_MEM_CURRENT)
        .unwrap();
    // Trimming gives unused reserved memory back: never more reserved afterwards.
    dev.graph_mem_trim().unwrap();
    assert!(
        dev.graph_mem_attribute(GraphMemAttribute::RESERVED_MEM_CURRENT)
            .unwrap()
            <= reserved
    );
    // Resetting a high watermark sets it to the current value (the driver keeps memory
    // associated with graphs in its own granularity, so the current value need not be 0).
    dev.reset_graph_mem_high_watermark(GraphMemAttribute::USED_MEM_HIGH)
        .unwrap();
    let high = dev
        .graph_mem_attribute(GraphMemAttribute::USED_MEM_HIGH)
        .unwrap();
    let current = dev
        .graph_mem_attribute(GraphMemAttribute::USED_MEM_CURRENT)
        .unwrap();
    assert_eq!(high, current);
    // Only the high watermarks can be reset.
    assert!(dev
        .reset_graph_mem_high_watermark(GraphMemAttribute::USED_MEM_CURRENT)
        .is_err());
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
fn an_exec_that_cannot_wait_for_its_launches_leaks_its_closures_rather_than_freeing_them() {
    let ctx = gpu_exclusive_or_skip!();
    let s = stream(&ctx);
    let g = Graph::new().unwrap();
    let node = g.add_host(&[], || ()).unwrap();
    let exec_with = |witness: &Arc<AtomicUsize>| {
        let mut exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
        let w = witness.clone();
        exec.set_host_node(node, move || {
            w.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
        exec.launch(&s).unwrap();
        s.synchronize().unwrap();
        assert_eq!(witness.load(Ordering::SeqCst), 1);
        exec
    };
    // Another stream of the context is being captured: the exec's drop cannot synchronize
    // the context, so the closure it keeps must not be freed.
    let witness = Arc::new(AtomicUsize::new(0));
    let exec = exec_with(&witness);
    let other = stream(&ctx);
    // SAFETY: nothing is captured.
    unsafe { other.begin_capture(CaptureMode::THREAD_LOCAL).unwrap() };
    let errors = cuda_driver::drop_error_count();
    drop(exec);
    assert!(cuda_driver::drop_error_count() > errors);
    assert_eq!(Arc::strong_count(&witness), 2, "the closure was freed");
    drop(other.end_capture());
    // Otherwise a dropped exec frees what it kept.
    let witness = Arc::new(AtomicUsize::new(0));
    drop(exec_with(&witness));
    assert_eq!(Arc::strong_count(&witness), 1);
}

#[gpu_test]
fn copy_nodes_move_rows_between_host_arrays_and_device_memory() {
    use cuda_driver::{Array, Array3DFlags, Copy2D, Copy3D, PinnedBuffer, PinnedFlags};
    let ctx = gpu_or_skip!();
    let s = stream(&ctx);
    let (w, h) = (64usize, 16usize);
    let mut src = PinnedBuffer::<u32>::zeroed(&ctx, w * h, PinnedFlags::empty()).unwrap();
    for (i, v) in src.iter_mut().enumerate() {
        *v = i as u32 * 3 + 1;
    }
    let mut arr = Array::<u32>::new_2d(&ctx, w, h, Array3DFlags::empty()).unwrap();
    let mut dev = DeviceBuffer::<u32>::zeroed(&ctx, w * h).unwrap();
    let mut back = PinnedBuffer::<u32>::zeroed(&ctx, w * h, PinnedFlags::empty()).unwrap();
    let g = Graph::new().unwrap();
    // Host -> array -> device (2D), device -> host (3D of one slice).
    // SAFETY: src, arr, dev and back outlive the graph and the exec; the host reads `back`
    // only after the launches are synchronized.
    let (to_array, to_host) = unsafe {
        let a = g
            .add_copy_2d(
                &[],
                Copy2D::new(w, h).from_host(&src[..], w).to_array(&mut arr),
            )
            .unwrap();
        let b = g
            .add_copy_2d(
                &[*a],
                Copy2D::new(w, h)
                    .from_array(&arr)
                    .to_device(dev.as_view_mut(), w),
            )
            .unwrap();
        let c = g
            .add_copy_3d(
                &[*b],
                Copy3D::new(w, h, 1)
                    .from_device(dev.as_view(), w, h)
                    .to_host(&mut back[..], w, h),
            )
            .unwrap();
        (a, c)
    };
    assert_eq!(to_array.node_type().unwrap(), GraphNodeType::MEMCPY);
    // Bad copies are refused before the driver, and the graph is unchanged.
    // SAFETY: refused before any node is made.
    unsafe {
        assert!(matches!(
            g.add_copy_2d(
                &[],
                Copy2D::new(0, h).from_host(&src[..], w).to_array(&mut arr)
            ),
            Err(Error::ZeroExtent { .. })
        ));
        assert!(matches!(
            g.add_copy_2d(
                &[],
                Copy2D::new(w, h + 1)
                    .from_host(&src[..], w)
                    .to_array(&mut arr)
            ),
            Err(Error::RegionOutOfBounds { .. })
        ));
    }
    assert_eq!(g.node_count().unwrap(), 3);
    let mut exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(&back[..], &src[..]);
    // An exec's memcpy node takes only one-dimensional copies: a 2D one is refused before
    // the driver, and the exec is unchanged.
    let other: Vec<u32> = (0..w * h).map(|i| !(i as u32)).collect();
    let mut other_pinned = PinnedBuffer::<u32>::zeroed(&ctx, w * h, PinnedFlags::empty()).unwrap();
    other_pinned.copy_from_slice(&other);
    // SAFETY: refused before the driver.
    let r = unsafe {
        exec.set_copy_node_2d(
            to_array,
            Copy2D::new(w, h)
                .from_host(&other_pinned[..], w)
                .to_array(&mut arr),
        )
    };
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
    let _ = to_host;
    back.fill(0);
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(&back[..], &src[..]);

    // A one-dimensional copy node (one row of all the elements), updated to another source.
    let g1 = Graph::new().unwrap();
    // SAFETY: src, other_pinned and dev outlive g1 and its exec.
    let row = unsafe {
        g1.add_copy_2d(
            &[],
            Copy2D::new(w * h, 1)
                .from_host(&src[..], w * h)
                .to_device(dev.as_view_mut(), w * h),
        )
    }
    .unwrap();
    let mut exec1 = g1.instantiate(GraphInstantiateFlags::empty()).unwrap();
    exec1.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(dev.to_vec().unwrap(), &src[..]);
    // SAFETY: as above.
    unsafe {
        exec1
            .set_copy_node_2d(
                row,
                Copy2D::new(w * h, 1)
                    .from_host(&other_pinned[..], w * h)
                    .to_device(dev.as_view_mut(), w * h),
            )
            .unwrap()
    };
    exec1.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(dev.to_vec().unwrap(), other);
}

#[gpu_test]
fn mem_op_batch_nodes_write_32_and_64_bit_words() {
    use cuda_driver::{
        DeviceAttribute, MemOpBatch, StreamMemoryBarrierFlags, StreamWriteValueFlags,
    };
    let ctx = gpu_or_skip!();
    let s = stream(&ctx);
    let dev = ctx.device();
    if dev
        .attribute(DeviceAttribute::CAN_USE_64_BIT_STREAM_MEM_OPS)
        .unwrap()
        == 0
    {
        crate::common::skip("no 64-bit stream memory operations on this device");
    }
    let mut w32 = DeviceBuffer::<u32>::zeroed(&ctx, 1).unwrap();
    let mut w64 = DeviceBuffer::<u64>::zeroed(&ctx, 1).unwrap();
    let g = Graph::new().unwrap();
    {
        let (mut v32, mut v64) = (w32.as_view_mut(), w64.as_view_mut());
        let mut batch = MemOpBatch::new();
        batch
            .write_u32(&mut v32, 0xDEAD_BEEF, StreamWriteValueFlags::empty())
            .unwrap()
            .write_u64(
                &mut v64,
                0x0123_4567_89AB_CDEF,
                StreamWriteValueFlags::empty(),
            )
            .unwrap()
            .barrier(StreamMemoryBarrierFlags::empty());
        // SAFETY: both words outlive the graph and its exec; no waits.
        let node = unsafe { g.add_mem_op_batch(&[], &ctx, &mut batch) }.unwrap();
        assert_eq!(node.node_type().unwrap(), GraphNodeType::BATCH_MEM_OP);
    }
    // An empty batch is no node.
    // SAFETY: refused before the driver.
    let empty = unsafe { g.add_mem_op_batch(&[], &ctx, &mut MemOpBatch::new()) };
    assert!(matches!(empty, Err(Error::ZeroExtent { .. })), "{empty:?}");
    assert_eq!(g.node_count().unwrap(), 1);
    let exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(w32.to_vec().unwrap(), [0xDEAD_BEEF]);
    assert_eq!(w64.to_vec().unwrap(), [0x0123_4567_89AB_CDEF]);
}
