//! Graphs, the APIs that `graph.rs` leaves out: per-node updates of executable graphs (memset,
//! host, child graph, event record and wait nodes, enabling), graph-side node setters seen by
//! fresh instantiations, instantiation with parameters and uploads, capture dependency updates,
//! edge data, library kernels as nodes, if/else and switch conditional nodes, and the typed
//! refusal of a per-node update naming a node of another graph.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use cuda_driver::prelude::*;
use cuda_driver::types::{GraphCondAssignFlags, GraphInstantiateResult};
use cuda_driver::{
    sys, CaptureMode, Context, DeviceBuffer, EdgeData, Error, ErrorCode, Event, EventFlags, Graph,
    GraphConditionalNodeType, GraphDependencyType, GraphExec, GraphInstantiateFlags, GraphNodeType,
    GraphRef, InstantiateOptions, LaunchConfig, Library, MemsetParams, Stream,
};

use crate::graph::{conditional_kernels, kernels, stream, GRAPH_KERNELS};

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
fn graph_node_setters_change_fresh_execs_and_leave_old_ones_alone() {
    let ctx = gpu_or_skip!();
    let s = stream(&ctx);
    let m = kernels(&ctx);
    let inc = m.function("inc").unwrap();
    let n = 512usize;
    let ni = n as i32;
    let half = (n / 2) as i32;
    let cfg = LaunchConfig::for_num_elems(n).unwrap();
    let mut a = DeviceBuffer::<i32>::zeroed(&ctx, n).unwrap();
    let mut b = DeviceBuffer::<i32>::zeroed(&ctx, n).unwrap();
    let mut b2 = DeviceBuffer::<i32>::zeroed(&ctx, n).unwrap();
    let (old, new) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let g = Graph::new().unwrap();
    // a = 1; a += 1; b = a; host.
    // SAFETY: a, b, b2 outlive the graph and its execs; inc(int*, int) stays within n.
    let (ms, k, cp) = unsafe {
        let ms = g.add_memset(&[], &a.as_view_mut(), 1u32).unwrap();
        let k = g
            .add_kernel(&[*ms], &inc, &cfg, (a.as_view_mut(), &ni))
            .unwrap();
        let cp = g.add_memcpy(&[*k], &b.as_view_mut(), &a.as_view()).unwrap();
        (ms, k, cp)
    };
    let o = old.clone();
    let host = g
        .add_host(&[*cp], move || {
            o.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let exec_old = g.instantiate(GraphInstantiateFlags::empty()).unwrap();

    // a = 10; a[..n/2] += 1; b2 = a; the other closure.
    // SAFETY: as above.
    unsafe {
        ms.set_params(MemsetParams::fill(&a.as_view_mut(), 10u32).unwrap())
            .unwrap();
        k.set(&inc, &cfg, (a.as_view_mut(), &half)).unwrap();
        cp.set(&b2.as_view_mut(), &a.as_view()).unwrap();
    }
    let k2 = new.clone();
    host.set(move || {
        k2.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    assert_eq!(ms.params().unwrap().value, 10);
    assert_eq!(cp.params_raw().unwrap().dstDevice, b2.as_view().as_raw());
    let exec_new = g.instantiate(GraphInstantiateFlags::empty()).unwrap();

    exec_old.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(a.to_vec().unwrap(), vec![2; n]);
    assert_eq!(b.to_vec().unwrap(), vec![2; n]);
    assert_eq!(
        b2.to_vec().unwrap(),
        vec![0; n],
        "the old exec copied to b2"
    );
    assert_eq!(
        (old.load(Ordering::SeqCst), new.load(Ordering::SeqCst)),
        (1, 0)
    );

    exec_new.launch(&s).unwrap();
    s.synchronize().unwrap();
    let mut expected = vec![11; n / 2];
    expected.resize(n, 10);
    assert_eq!(a.to_vec().unwrap(), expected);
    assert_eq!(b.to_vec().unwrap(), vec![2; n], "the new exec copied to b");
    assert_eq!(b2.to_vec().unwrap(), expected);
    assert_eq!(
        (old.load(Ordering::SeqCst), new.load(Ordering::SeqCst)),
        (1, 1)
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
        Err(Error::GraphInstantiate { reason, .. }) => {
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
fn capture_dependency_updates_decide_what_the_next_captured_node_follows() {
    // Captures: no other test may synchronize the context meanwhile.
    let ctx = gpu_exclusive_or_skip!();
    let s = stream(&ctx);
    let m = kernels(&ctx);
    let inc = m.function("inc").unwrap();
    let n = 1024usize;
    let ni = n as i32;
    let cfg = LaunchConfig::for_num_elems(n).unwrap();
    let mut x = DeviceBuffer::<i32>::zeroed(&ctx, n).unwrap();
    let mut y = DeviceBuffer::<i32>::zeroed(&ctx, n).unwrap();

    // SAFETY: x and y outlive the captured graph and its exec.
    unsafe { s.begin_capture(CaptureMode::THREAD_LOCAL).unwrap() };
    let captured = (|| -> cuda_driver::Result<_> {
        // A: x += 1.
        // SAFETY: inc(int*, int) gets n elements of x.
        unsafe { inc.launch(&s, &cfg, (x.as_view_mut(), &ni))? };
        let info = s.capture_info()?;
        let mut counts = vec![info.dependency_count];
        // SAFETY: the graph being captured into, alive until the capture ends (after `cg` is
        // dropped); only this thread uses it meanwhile.
        let cg = unsafe { GraphRef::from_raw(info.graph) };
        // M, added by hand: y = 7. The next captured node follows M only, not A.
        // SAFETY: y outlives the graph and its exec.
        let set_y = unsafe { cg.add_memset(&[], &y.as_view_mut(), 7u32)? };
        s.update_capture_dependencies(&[*set_y], true)?;
        counts.push(s.capture_info()?.dependency_count);
        // C: y += 1, after M.
        // SAFETY: inc(int*, int) gets n elements of y.
        unsafe { inc.launch(&s, &cfg, (y.as_view_mut(), &ni))? };
        // E, an empty node added to the set: D follows C and E.
        let extra = cg.add_empty(&[])?;
        s.update_capture_dependencies(&[extra], false)?;
        counts.push(s.capture_info()?.dependency_count);
        // D: y += 1.
        // SAFETY: as for C.
        unsafe { inc.launch(&s, &cfg, (y.as_view_mut(), &ni))? };
        Ok((set_y.as_raw(), extra.as_raw(), counts))
    })();
    // Ended before anything may panic, so that the stream never stays capturing.
    let g = s.end_capture().unwrap();
    let (set_y, extra, counts) = captured.unwrap();
    // After A: {A}; replaced: {M}; added to after C: {C, E}.
    assert_eq!(counts, vec![1, 1, 2]);

    assert_eq!(g.node_count().unwrap(), 5);
    let mut kernels: Vec<_> = g
        .nodes()
        .unwrap()
        .into_iter()
        .filter(|k| k.node_type().unwrap() == GraphNodeType::KERNEL)
        .map(|k| {
            let mut deps: Vec<_> = k
                .dependencies()
                .unwrap()
                .iter()
                .map(|d| d.as_raw())
                .collect();
            deps.sort();
            (deps, k.as_raw())
        })
        .collect();
    kernels.sort_by_key(|(deps, _)| deps.len());
    assert_eq!(kernels.len(), 3);
    // A follows nothing; C follows M alone; D follows C and E.
    assert!(kernels[0].0.is_empty());
    assert_eq!(kernels[1].0, vec![set_y]);
    let mut d_deps = vec![kernels[1].1, extra];
    d_deps.sort();
    assert_eq!(kernels[2].0, d_deps);

    let exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
    for round in 1..=2 {
        exec.launch(&s).unwrap();
        s.synchronize().unwrap();
        assert_eq!(x.to_vec().unwrap(), vec![round; n]);
        assert_eq!(y.to_vec().unwrap(), vec![9; n]);
    }
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

#[gpu_test]
fn library_kernel_nodes_run_and_keep_their_library_loaded() {
    let ctx = gpu_or_skip!();
    let s = stream(&ctx);
    let n = 2000usize;
    let ni = n as i32;
    let cfg = LaunchConfig::for_num_elems(n).unwrap();
    let mut x = DeviceBuffer::<i32>::from_slice(&ctx, &vec![40; n]).unwrap();
    let g = Graph::new().unwrap();
    let node = {
        let library = Library::load_data(GRAPH_KERNELS).unwrap();
        let inc = library.kernel("inc").unwrap();
        // Wrong argument sizes are refused before the driver.
        // SAFETY: refused before any node is made.
        let r = unsafe { g.add_library_kernel(&[], &inc, &ctx, &cfg, (x.as_view_mut(), &1u64)) };
        assert!(
            matches!(r, Err(Error::ArgumentSize { index: 1, .. })),
            "{r:?}"
        );
        // SAFETY: x outlives the graph and its exec; inc(int*, int) gets n elements.
        unsafe {
            g.add_library_kernel(&[], &inc, &ctx, &cfg, (x.as_view_mut(), &ni))
                .unwrap()
        }
        // The library and its kernel are dropped here: the graph keeps them loaded.
    };
    assert_eq!(node.node_type().unwrap(), GraphNodeType::KERNEL);
    assert_eq!(node.launch_config().unwrap().grid, cfg.grid);
    assert_eq!(g.node_count().unwrap(), 1);
    let exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
    drop(g);
    exec.launch(&s).unwrap();
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(x.to_vec().unwrap(), vec![42; n]);
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
