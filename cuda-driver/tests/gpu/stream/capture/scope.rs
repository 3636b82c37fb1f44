//! GPU tests: a capture lent to its closure (`Stream::capture_with`, `capture_into_with`):
//! the graph being captured, to add nodes to (graphConditionalNodes' "captured while"), the
//! capture's dependency nodes themselves, and what cannot end or outlive it.

use cuda_driver::graph::GraphError;
use cuda_driver::prelude::*;
use cuda_driver::types::GraphCondAssignFlags;
use cuda_driver::{
    graph::Graph, types::GraphConditionalNodeType, types::GraphInstantiateFlags,
    types::GraphNodeType, types::StreamCaptureMode as CaptureMode,
    types::StreamCaptureStatus as CaptureStatus, types::StreamFlags, DeviceBuffer, Error,
    LaunchConfig, Stream,
};

use crate::graph::conditional::conditional_kernels;
use crate::graph::kernels;

/// graphConditionalNodes' "captured while": during a capture, a while node is added to the
/// captured graph after the capture's current dependencies, its body filled, and the node made
/// the capture's dependency, so the work captured next runs after the loop.
#[gpu_test]
fn a_while_node_is_added_to_the_graph_being_captured() {
    let ctx = gpu_exclusive_or_skip!();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let cm = conditional_kernels(&ctx);
    let step = cm.function("loop_step").unwrap();
    let m = kernels(&ctx);
    let inc = m.function("inc").unwrap();
    let mut counter = DeviceBuffer::<i32>::zeroed(&ctx, 1).unwrap();
    let mut after = DeviceBuffer::<i32>::zeroed(&ctx, 1).unwrap();
    let limit = 11i32;
    let one = LaunchConfig::new(1u32, 32u32);
    // SAFETY: counter and after outlive the graph and its exec.
    let r = unsafe {
        s.capture_with(CaptureMode::THREAD_LOCAL, |cap| {
            assert_eq!(cap.stream().as_raw(), s.as_raw());
            counter.memset_async(0u32, cap.stream())?;
            let deps = cap.dependencies()?;
            assert_eq!(deps.len(), 1);
            assert_eq!(deps[0].node_type()?, GraphNodeType::MEMSET);
            let g = cap.graph();
            let handle = g.conditional_handle(&ctx, 1, GraphCondAssignFlags::DEFAULT)?;
            let node =
                g.add_conditional(&deps, &ctx, handle, GraphConditionalNodeType::WHILE, 1)?;
            let body = node.body(0)?;
            body.add_kernel(&[], &step, &one, (counter.as_view_mut(), &limit, handle))?;
            cap.set_dependencies(&[*node])?;
            assert_eq!(cap.dependencies()?, vec![*node]);
            inc.launch(cap.stream(), &one, (after.as_view_mut(), &1i32))?;
            // The capture cannot be ended while it is lent out.
            assert!(matches!(
                cap.stream().end_capture(),
                Err(Error::InvalidStream { .. })
            ));
            assert_eq!(cap.stream().capture_status()?, CaptureStatus::ACTIVE);
            Ok(())
        })
    };
    let graph = match r {
        Err(e @ Error::Unsupported { .. }) => {
            crate::common::skip(format!("conditional nodes need CUDA 12.3: {e}"))
        }
        g => g.unwrap(),
    };
    // The conditional node is found in the captured graph with its handle and body.
    let cond = graph
        .nodes()
        .unwrap()
        .into_iter()
        .find(|n| n.node_type().unwrap() == GraphNodeType::CONDITIONAL)
        .unwrap()
        .as_conditional()
        .unwrap();
    assert_eq!(cond.kind(), GraphConditionalNodeType::WHILE);
    assert_eq!(cond.body(0).unwrap().node_count().unwrap(), 1);
    let exec = graph.instantiate(GraphInstantiateFlags::empty()).unwrap();
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(counter.to_vec().unwrap(), vec![limit]);
    assert_eq!(after.to_vec().unwrap(), vec![1]);
}

/// Through every way out: an error or a panic of the closure ends the capture (the stream is
/// usable again); nodes of another graph are not the capture's dependencies; another thread
/// cannot end a relaxed capture while it is lent out; capture_into_with lends the caller's
/// graph.
#[gpu_test]
fn a_lent_capture_always_ends_and_cannot_be_ended_elsewhere() {
    let ctx = gpu_exclusive_or_skip!();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let other = Graph::new().unwrap();
    let foreign = other.add_empty(&[]).unwrap();
    // SAFETY: nothing captured uses memory.
    let r = unsafe {
        s.capture_with(CaptureMode::RELAXED, |cap| {
            let a = cap.graph().add_empty(&[])?;
            assert!(matches!(
                cap.set_dependencies(&[foreign]),
                Err(Error::Graph(GraphError::Mismatch { .. }))
            ));
            cap.add_dependencies(&[a])?;
            assert_eq!(cap.dependencies()?, vec![a]);
            std::thread::scope(|sc| {
                sc.spawn(|| {
                    assert!(matches!(s.end_capture(), Err(Error::InvalidStream { .. })));
                });
            });
            Err(Error::InvalidArgument("stop".into()))
        })
    };
    assert!(matches!(r, Err(Error::InvalidArgument(_))));
    assert_eq!(s.capture_status().unwrap(), CaptureStatus::NONE);
    // A panic: the capture ends, the panic goes on.
    let p = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: nothing captured.
        unsafe {
            s.capture_with(
                CaptureMode::THREAD_LOCAL,
                |cap| -> cuda_driver::Result<()> {
                    cap.graph().add_empty(&[])?;
                    panic!("closure panicked")
                },
            )
        }
    }));
    assert!(p.is_err());
    assert_eq!(s.capture_status().unwrap(), CaptureStatus::NONE);
    // capture_into_with: the lent graph is the caller's.
    let g = Graph::new().unwrap();
    let root = g.add_empty(&[]).unwrap();
    // SAFETY: nothing captured.
    unsafe {
        s.capture_into_with(&g, &[root], CaptureMode::THREAD_LOCAL, |cap| {
            assert_eq!(cap.graph().as_raw(), g.as_raw());
            assert_eq!(cap.dependencies()?, vec![root]);
            Ok(())
        })
        .unwrap()
    };
    assert_eq!(s.capture_status().unwrap(), CaptureStatus::NONE);
    // Plain captures are unaffected.
    // SAFETY: nothing captured.
    unsafe { s.begin_capture(CaptureMode::THREAD_LOCAL).unwrap() };
    s.end_capture().unwrap();
}
