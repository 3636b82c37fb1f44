//! GPU tests: executable graphs: instantiation with parameters and uploads, whole-graph
//! updates (and the typed refusal of another topology), per-node updates of kernel, memset,
//! memcpy, host, child graph, event record and wait nodes, enabling and disabling nodes, the
//! refusal of a node of another graph, and what an exec keeps alive or leaks rather than
//! frees.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use cuda_driver::graph::GraphError;
use cuda_driver::launch::LaunchError;
use cuda_driver::prelude::*;
use cuda_driver::types::GraphInstantiateResult;
use cuda_driver::{
    graph::Graph, graph::GraphExec, graph::InstantiateOptions, graph::MemsetParams,
    types::EventFlags, types::GraphInstantiateFlags, types::StreamCaptureMode as CaptureMode,
    DeviceBuffer, Error, Event, LaunchConfig, Stream,
};
use cuda_driver_sys as sys;

use crate::common::stream;
use crate::graph::kernels;

/// A host function that blocks a stream until the gate is opened (or 10 s have passed), so
/// that work queued behind it is provably held back. Dropping the gate opens it, so a failing
/// test never leaves the stream blocked.
struct Gate(Arc<(Mutex<bool>, Condvar)>);

impl Gate {
    fn block(stream: &Stream) -> Gate {
        let state = Arc::new((Mutex::new(false), Condvar::new()));
        let s = state.clone();
        stream
            .launch_host_fn(move || {
                let (open, cv) = &*s;
                let guard = open.lock().unwrap_or_else(|e| e.into_inner());
                let _ = cv.wait_timeout_while(guard, Duration::from_secs(10), |o| !*o);
            })
            .unwrap();
        Gate(state)
    }

    fn open(&self) {
        let (open, cv) = &*self.0;
        *open.lock().unwrap_or_else(|e| e.into_inner()) = true;
        cv.notify_all();
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        self.open();
    }
}

/// Launches `exec` on `s`, tells whether the launch was still pending 200 ms later, then opens
/// `gate` and waits for the launch.
fn held_back(exec: &GraphExec, s: &Stream, gate: &Gate) -> bool {
    exec.launch(s).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let pending = !s.query().unwrap();
    gate.open();
    s.synchronize().unwrap();
    pending
}

#[gpu_test]
fn exec_memset_update_fills_the_new_target_with_the_new_value() {
    let ctx = gpu_or_skip!();
    let s = stream(&ctx);
    let n = 1000usize;
    let mut a = DeviceBuffer::<u32>::zeroed(&ctx, n).unwrap();
    let mut b = DeviceBuffer::<u32>::zeroed(&ctx, n).unwrap();
    let g = Graph::new().unwrap();
    // SAFETY: a and b outlive the graph and its exec; the host reads them only after the
    // launches are synchronized.
    let node = unsafe { g.add_memset(&[], &a.as_view_mut(), 5u32).unwrap() };
    let mut exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(a.to_vec().unwrap(), vec![5; n]);
    a.memset(0u32).unwrap();

    // The exec's memset now fills the first half of b with 9.
    let params =
        MemsetParams::fill(&b.as_view_mut().into_slice_mut(..n / 2).unwrap(), 9u32).unwrap();
    assert_eq!(params.width, n / 2);
    // SAFETY: as above.
    unsafe { exec.set_memset_node(node, &ctx, params).unwrap() };
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(a.to_vec().unwrap(), vec![0; n], "the old target was filled");
    let mut expected = vec![9; n / 2];
    expected.resize(n, 0);
    assert_eq!(b.to_vec().unwrap(), expected);
    // The graph's node is unchanged: a fresh exec fills a with 5.
    assert_eq!(node.params().unwrap().value, 5);
    let fresh = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
    fresh.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(a.to_vec().unwrap(), vec![5; n]);
}

#[gpu_test]
fn exec_memcpy_update_copies_between_the_new_buffers() {
    let ctx = gpu_or_skip!();
    let s = stream(&ctx);
    let n = 3000usize;
    let data1: Vec<u32> = crate::common::xorshift32(n, 1).collect();
    let data2: Vec<u32> = crate::common::xorshift32(n, 2).collect();
    let src1 = DeviceBuffer::from_slice(&ctx, &data1).unwrap();
    let src2 = DeviceBuffer::from_slice(&ctx, &data2).unwrap();
    let mut dst1 = DeviceBuffer::<u32>::zeroed(&ctx, n).unwrap();
    let mut dst2 = DeviceBuffer::<u32>::zeroed(&ctx, n).unwrap();
    let g = Graph::new().unwrap();
    // SAFETY: the buffers outlive the graph and its exec.
    let node = unsafe {
        g.add_memcpy(&[], &dst1.as_view_mut(), &src1.as_view())
            .unwrap()
    };
    let mut exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(dst1.to_vec().unwrap(), data1);
    dst1.memset(0u32).unwrap();

    // SAFETY: as above.
    unsafe {
        exec.set_memcpy_node(node, &dst2.as_view_mut(), &src2.as_view())
            .unwrap()
    };
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(dst1.to_vec().unwrap(), vec![0; n], "the old copy ran");
    assert_eq!(dst2.to_vec().unwrap(), data2);
    // Lengths that differ are refused before the driver; the exec keeps the last copy.
    // SAFETY: refused before any call.
    let r = unsafe {
        exec.set_memcpy_node(
            node,
            &dst1.as_view_mut().into_slice_mut(..n - 1).unwrap(),
            &src1.as_view(),
        )
    };
    assert!(matches!(r, Err(Error::LengthMismatch { .. })), "{r:?}");
    dst2.memset(0u32).unwrap();
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(dst2.to_vec().unwrap(), data2);
    assert_eq!(dst1.to_vec().unwrap(), vec![0; n]);
}

#[gpu_test]
fn exec_host_node_update_runs_the_new_closure_instead() {
    let ctx = gpu_or_skip!();
    let s = stream(&ctx);
    let old = Arc::new(AtomicUsize::new(0));
    let new = Arc::new(AtomicUsize::new(0));
    let g = Graph::new().unwrap();
    let o = old.clone();
    let node = g
        .add_host(&[], move || {
            o.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let mut exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(old.load(Ordering::SeqCst), 1);

    let k = new.clone();
    exec.set_host_node(node, move || {
        k.fetch_add(10, Ordering::SeqCst);
    })
    .unwrap();
    for _ in 0..3 {
        exec.launch(&s).unwrap();
    }
    s.synchronize().unwrap();
    assert_eq!(old.load(Ordering::SeqCst), 1, "the replaced closure ran");
    assert_eq!(new.load(Ordering::SeqCst), 30);
    // The exec keeps the new closure; the graph still holds the old one.
    assert_eq!(Arc::strong_count(&new), 2);
    drop(exec);
    assert_eq!(
        Arc::strong_count(&new),
        1,
        "the exec did not free its closure"
    );
}

#[gpu_test]
fn exec_child_graph_update_runs_the_new_child() {
    let ctx = gpu_or_skip!();
    let s = stream(&ctx);
    let m = kernels(&ctx);
    let inc = m.function("inc").unwrap();
    let n = 777usize;
    let ni = n as i32;
    let cfg = LaunchConfig::for_num_elems(n).unwrap();
    let mut x = DeviceBuffer::<i32>::zeroed(&ctx, n).unwrap();
    let mut y = DeviceBuffer::<i32>::zeroed(&ctx, n).unwrap();
    let (child_x, child_y) = (Graph::new().unwrap(), Graph::new().unwrap());
    // SAFETY: x and y outlive the graphs and the exec; inc(int*, int) gets n elements.
    unsafe {
        child_x
            .add_kernel(&[], &inc, &cfg, (x.as_view_mut(), &ni))
            .unwrap();
        child_y
            .add_kernel(&[], &inc, &cfg, (y.as_view_mut(), &ni))
            .unwrap();
    }
    let g = Graph::new().unwrap();
    let node = g.add_child_graph(&[], &child_x).unwrap();
    let mut exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(x.to_vec().unwrap(), vec![1; n]);
    assert_eq!(y.to_vec().unwrap(), vec![0; n]);

    exec.set_child_graph_node(node, &child_y).unwrap();
    drop(child_y); // the exec runs its own copy
    exec.launch(&s).unwrap();
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(x.to_vec().unwrap(), vec![1; n], "the old child ran");
    assert_eq!(y.to_vec().unwrap(), vec![2; n]);
}

#[gpu_test]
fn event_record_updates_record_the_new_event() {
    let ctx = gpu_or_skip!();
    let s = stream(&ctx);
    let timed = || Arc::new(Event::new(&ctx, EventFlags::DEFAULT).unwrap());
    let (ev1, ev2, ev3) = (timed(), timed(), timed());
    let start = Event::new(&ctx, EventFlags::DEFAULT).unwrap();
    let g = Graph::new().unwrap();
    let rec = g.add_event_record(&[], &ev1).unwrap();
    assert_eq!(rec.event_raw().unwrap(), ev1.as_raw());
    let mut exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
    start.record(&s).unwrap();
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    let t1 = start.elapsed_ms(&ev1).unwrap();
    assert!(t1 >= 0.0, "{t1}");
    // ev2 was never recorded: no elapsed time.
    assert!(start.elapsed_ms(&ev2).is_err());

    // The exec records ev2 now, 20 ms later; ev1 keeps its time.
    std::thread::sleep(Duration::from_millis(20));
    exec.set_event_record_node(rec, &ev2).unwrap();
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(
        start.elapsed_ms(&ev1).unwrap(),
        t1,
        "ev1 was recorded again"
    );
    let t2 = start.elapsed_ms(&ev2).unwrap();
    assert!(t2 >= t1 + 10.0, "ev2 at {t2} ms, ev1 at {t1} ms");

    // Graph side: the node records ev3 in execs instantiated afterwards.
    rec.set_event(&ev3).unwrap();
    assert_eq!(rec.event_raw().unwrap(), ev3.as_raw());
    let fresh = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    fresh.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(start.elapsed_ms(&ev1).unwrap(), t1);
    assert_eq!(
        start.elapsed_ms(&ev2).unwrap(),
        t2,
        "ev2 was recorded again"
    );
    let t3 = start.elapsed_ms(&ev3).unwrap();
    assert!(t3 >= t2 + 10.0, "ev3 at {t3} ms, ev2 at {t2} ms");
}

#[gpu_test]
fn event_wait_updates_make_the_graph_wait_for_the_new_event() {
    // Blocks a stream: no other test may synchronize meanwhile.
    let ctx = gpu_exclusive_or_skip!();
    let s = stream(&ctx);
    let side = stream(&ctx);
    let m = kernels(&ctx);
    let inc = m.function("inc").unwrap();
    let n = 256usize;
    let ni = n as i32;
    let cfg = LaunchConfig::for_num_elems(n).unwrap();
    let mut x = DeviceBuffer::<i32>::zeroed(&ctx, n).unwrap();
    let untimed = || Arc::new(Event::new(&ctx, EventFlags::DISABLE_TIMING).unwrap());
    let (ready, gated) = (untimed(), untimed());
    ready.record(&side).unwrap();
    side.synchronize().unwrap();

    let g = Graph::new().unwrap();
    let wait = g.add_event_wait(&[], &ready).unwrap();
    assert_eq!(wait.event_raw().unwrap(), ready.as_raw());
    // SAFETY: x outlives the graph and its execs; inc(int*, int) gets n elements.
    unsafe {
        g.add_kernel(&[*wait], &inc, &cfg, (x.as_view_mut(), &ni))
            .unwrap()
    };
    let mut exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();

    // `gated` completes only when the gate opens; the graph waits for `ready`: not held back.
    let gate = Gate::block(&side);
    gated.record(&side).unwrap();
    assert!(
        !held_back(&exec, &s, &gate),
        "waited for an event it does not wait for"
    );
    assert_eq!(x.to_vec().unwrap(), vec![1; n]);
    side.synchronize().unwrap();

    // The exec waits for `gated` now: held back until the gate opens.
    let gate = Gate::block(&side);
    gated.record(&side).unwrap();
    exec.set_event_wait_node(wait, &gated).unwrap();
    assert!(
        held_back(&exec, &s, &gate),
        "the exec did not wait for the new event"
    );
    assert_eq!(x.to_vec().unwrap(), vec![2; n]);
    side.synchronize().unwrap();

    // Graph side: a fresh exec waits for `gated` as well.
    wait.set_event(&gated).unwrap();
    assert_eq!(wait.event_raw().unwrap(), gated.as_raw());
    let fresh = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
    let gate = Gate::block(&side);
    gated.record(&side).unwrap();
    assert!(held_back(&fresh, &s, &gate), "the fresh exec did not wait");
    assert_eq!(x.to_vec().unwrap(), vec![3; n]);
    side.synchronize().unwrap();
}

#[gpu_test]
fn disabled_nodes_do_nothing_until_enabled_again() {
    let ctx = gpu_or_skip!();
    let s = stream(&ctx);
    let m = kernels(&ctx);
    let inc = m.function("inc").unwrap();
    let n = 300usize;
    let ni = n as i32;
    let cfg = LaunchConfig::for_num_elems(n).unwrap();
    let mut a = DeviceBuffer::<u32>::zeroed(&ctx, n).unwrap();
    let mut x = DeviceBuffer::<i32>::zeroed(&ctx, n).unwrap();
    let g = Graph::new().unwrap();
    // SAFETY: a and x outlive the graph and its exec; inc(int*, int) gets n elements.
    let (memset, kernel) = unsafe {
        let memset = g.add_memset(&[], &a.as_view_mut(), 4u32).unwrap();
        let kernel = g
            .add_kernel(&[*memset], &inc, &cfg, (x.as_view_mut(), &ni))
            .unwrap();
        (memset, kernel)
    };
    let mut exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
    assert!(exec.node_enabled(*kernel).unwrap());
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(
        (a.to_vec().unwrap(), x.to_vec().unwrap()),
        (vec![4; n], vec![1; n])
    );
    a.memset(0u32).unwrap();

    exec.set_node_enabled(*kernel, false).unwrap();
    exec.set_node_enabled(*memset, false).unwrap();
    assert!(!exec.node_enabled(*kernel).unwrap());
    assert!(!exec.node_enabled(*memset).unwrap());
    exec.launch(&s).unwrap();
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(
        (a.to_vec().unwrap(), x.to_vec().unwrap()),
        (vec![0; n], vec![1; n])
    );

    // Only the kernel enabled again.
    exec.set_node_enabled(*kernel, true).unwrap();
    assert!(exec.node_enabled(*kernel).unwrap());
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(
        (a.to_vec().unwrap(), x.to_vec().unwrap()),
        (vec![0; n], vec![2; n])
    );
    exec.set_node_enabled(*memset, true).unwrap();
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(
        (a.to_vec().unwrap(), x.to_vec().unwrap()),
        (vec![4; n], vec![3; n])
    );
}

#[gpu_test]
fn instantiate_with_upload_and_explicit_upload_then_launch() {
    let ctx = gpu_or_skip!();
    let s = stream(&ctx);
    let m = kernels(&ctx);
    let inc = m.function("inc").unwrap();
    let n = 4096usize;
    let ni = n as i32;
    let cfg = LaunchConfig::for_num_elems(n).unwrap();
    let mut x = DeviceBuffer::<i32>::zeroed(&ctx, n).unwrap();
    let g = Graph::new().unwrap();
    // SAFETY: x outlives the graph and its execs; inc(int*, int) gets n elements.
    unsafe {
        g.add_kernel(&[], &inc, &cfg, (x.as_view_mut(), &ni))
            .unwrap()
    };

    // Uploaded on `s` by the instantiation.
    let uploaded = g
        .instantiate_with(&InstantiateOptions {
            flags: GraphInstantiateFlags::UPLOAD,
            upload_stream: Some(&s),
        })
        .unwrap();
    // The driver does not report UPLOAD (it does not change the exec).
    assert!(!uploaded
        .flags()
        .unwrap()
        .contains(GraphInstantiateFlags::UPLOAD));
    uploaded.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(x.to_vec().unwrap(), vec![1; n]);

    // Other flags reach the driver (it reports AUTO_FREE_ON_LAUNCH; driver 580 does not
    // report USE_NODE_PRIORITY); an explicit upload, then a launch.
    let prio = g
        .instantiate_with(&InstantiateOptions {
            flags: GraphInstantiateFlags::USE_NODE_PRIORITY
                | GraphInstantiateFlags::AUTO_FREE_ON_LAUNCH,
            ..Default::default()
        })
        .unwrap();
    assert!(prio
        .flags()
        .unwrap()
        .contains(GraphInstantiateFlags::AUTO_FREE_ON_LAUNCH));
    prio.upload(&s).unwrap();
    prio.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(x.to_vec().unwrap(), vec![2; n]);

    // A host node cannot run in a device-launchable graph: the typed reason.
    let bad = Graph::new().unwrap();
    bad.add_host(&[], || ()).unwrap();
    match bad.instantiate_with(&InstantiateOptions {
        flags: GraphInstantiateFlags::DEVICE_LAUNCH,
        upload_stream: None,
    }) {
        Err(Error::Graph(GraphError::Instantiate { reason, .. })) => {
            assert_eq!(reason, GraphInstantiateResult::NODE_OPERATION_NOT_SUPPORTED)
        }
        other => panic!("{other:?}"),
    }
    // The graph itself is fine for host launch.
    let ok = bad
        .instantiate_with(&InstantiateOptions::default())
        .unwrap();
    ok.launch(&s).unwrap();
    s.synchronize().unwrap();
}

#[gpu_test]
fn exec_updates_naming_a_node_of_another_graph_are_refused() {
    let ctx = gpu_or_skip!();
    let s = stream(&ctx);
    let n = 64usize;
    let mut a = DeviceBuffer::<u32>::zeroed(&ctx, n).unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let g = Graph::new().unwrap();
    let k = calls.clone();
    g.add_host(&[], move || {
        k.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    let mut exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();

    // Nodes of the same kinds, in another graph.
    let other = Graph::new().unwrap();
    let foreign_host = other.add_host(&[], || ()).unwrap();
    // SAFETY: a outlives `other` (never instantiated).
    let foreign_memset = unsafe { other.add_memset(&[], &a.as_view_mut(), 1u32).unwrap() };
    let foreign_child = other.add_child_graph(&[], &Graph::new().unwrap()).unwrap();
    let ev = Arc::new(Event::new(&ctx, EventFlags::DISABLE_TIMING).unwrap());
    let foreign_record = other.add_event_record(&[], &ev).unwrap();

    let stray = Arc::new(AtomicUsize::new(0));
    let st = stray.clone();
    let r = exec.set_host_node(foreign_host, move || {
        st.fetch_add(1, Ordering::SeqCst);
    });
    assert!(r.is_err(), "a host node of another graph was accepted");
    let params = MemsetParams::fill(&a.as_view_mut(), 2u32).unwrap();
    // SAFETY: a outlives the exec (the update is refused anyway).
    let r = unsafe { exec.set_memset_node(foreign_memset, &ctx, params) };
    assert!(r.is_err(), "a memset node of another graph was accepted");
    let r = exec.set_child_graph_node(foreign_child, &Graph::new().unwrap());
    assert!(
        r.is_err(),
        "a child graph node of another graph was accepted"
    );
    let r = exec.set_event_record_node(foreign_record, &ev);
    assert!(
        r.is_err(),
        "an event record node of another graph was accepted"
    );
    assert!(exec.set_node_enabled(*foreign_memset, false).is_err());
    assert!(exec.node_enabled(*foreign_memset).is_err());
    // The refused closure was dropped, not kept.
    assert_eq!(Arc::strong_count(&stray), 1);

    // The exec still launches, running its own closure and nothing else.
    exec.launch(&s).unwrap();
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(stray.load(Ordering::SeqCst), 0);
    assert_eq!(a.to_vec().unwrap(), vec![0; n]);
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
        matches!(
            r,
            Err(Error::Launch(LaunchError::ArgumentSize { index: 1, .. }))
        ),
        "{r:?}"
    );
    // Repeated updates (the first one checked, the next remembered) keep working, and keep
    // refusing what does not fit: another argument count, and another function whose
    // parameters differ (inc(int*, int)) given axpb's arguments. x = x * 1 + 0, then + 1.
    for b in [0.0f32, 1.0] {
        // SAFETY: as above.
        unsafe {
            exec.set_kernel_node(node, &axpb, &cfg, (x.as_view_mut(), &1.0f32, &b, &ni))
                .unwrap()
        };
        exec.launch(&s).unwrap();
        s.synchronize().unwrap();
        // SAFETY: refused before any call.
        let r = unsafe { exec.set_kernel_node(node, &axpb, &cfg, (x.as_view_mut(), &1.0f32)) };
        assert!(
            matches!(
                r,
                Err(Error::Launch(LaunchError::ArgumentCount {
                    expected: 4,
                    actual: 2,
                    ..
                }))
            ),
            "{r:?}"
        );
        let inc = m.function("inc").unwrap();
        // SAFETY: refused before any call.
        let r =
            unsafe { exec.set_kernel_node(node, &inc, &cfg, (x.as_view_mut(), &1.0f32, &b, &ni)) };
        assert!(
            matches!(r, Err(Error::Launch(LaunchError::ArgumentCount { .. }))),
            "{r:?}"
        );
    }
    assert_eq!(x.to_vec().unwrap(), vec![8.0; n]);
    // The update enters the function's context (the driver crashes without a current one)
    // and leaves the thread's stack as it found it.
    let current = || {
        let mut cur = std::ptr::null_mut();
        // SAFETY: writes one CUcontext.
        assert_eq!(unsafe { sys::cuCtxGetCurrent(&mut cur) }, sys::CUDA_SUCCESS);
        cur
    };
    let before = current();
    // SAFETY: as above.
    unsafe {
        exec.set_kernel_node(node, &axpb, &cfg, (x.as_view_mut(), &1.0f32, &2.0f32, &ni))
            .unwrap()
    };
    assert_eq!(current(), before, "the update changed the context stack");
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(x.to_vec().unwrap(), vec![10.0; n]);
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
        Err(Error::Graph(GraphError::Update { reason, .. })) => {
            assert_eq!(
                reason,
                cuda_driver::types::GraphExecUpdateResult::ERROR_TOPOLOGY_CHANGED
            )
        }
        other => panic!("{other:?}"),
    }
    // The exec still works.
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
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
    let errors = cuda_driver::error::drop_error_count();
    drop(exec);
    assert!(cuda_driver::error::drop_error_count() > errors);
    assert_eq!(Arc::strong_count(&witness), 2, "the closure was freed");
    drop(other.end_capture());
    // Otherwise a dropped exec frees what it kept.
    let witness = Arc::new(AtomicUsize::new(0));
    drop(exec_with(&witness));
    assert_eq!(Arc::strong_count(&witness), 1);
}
