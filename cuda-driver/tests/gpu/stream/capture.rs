//! GPU tests: stream capture: captures across streams joined by events, into an existing
//! graph, with host functions, scoped captures that always end, captures ended on another
//! thread, global captures invalidated by a synchronising call, capture dependency updates.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use cuda_driver::graph::GraphError;
use cuda_driver::prelude::*;
use cuda_driver::{
    graph::Graph, graph::GraphRef, types::ErrorCode, types::EventFlags,
    types::GraphInstantiateFlags, types::GraphNodeType, types::StreamCaptureMode as CaptureMode,
    types::StreamCaptureStatus as CaptureStatus, types::StreamFlags, DeviceBuffer, Error, Event,
    LaunchConfig, Stream,
};

mod scope;

use crate::common::{skip, stream, unsupported};
use crate::graph::kernels;

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
                Err(Error::Graph(GraphError::HostFnNotReplayable { .. })) => {}
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
    let old = cuda_driver::graph::exchange_thread_capture_mode(CaptureMode::RELAXED).unwrap();
    assert_eq!(
        cuda_driver::graph::exchange_thread_capture_mode(old).unwrap(),
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
    assert!(
        matches!(r, Err(Error::Graph(GraphError::CaptureWrongThread { .. }))),
        "{r:?}"
    );
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
        Err(Error::Graph(GraphError::CaptureInvalidated { .. })) => {}
        other => panic!("{other:?}"),
    }
    // Stream and context are usable again.
    let mut b = DeviceBuffer::<u32>::zeroed(&ctx, 4).unwrap();
    b.memset(3u32).unwrap();
    s.synchronize().unwrap();
    assert_eq!(b.to_vec().unwrap(), vec![3; 4]);
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
        let cg = unsafe { GraphRef::borrow_raw(info.graph) };
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
fn capture_into_appends_to_an_existing_graph() {
    let ctx = gpu_exclusive_or_skip!();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let mut a = DeviceBuffer::<u32>::zeroed(&ctx, 256).unwrap();
    let g = Graph::new().unwrap();
    // SAFETY: `a` outlives the graph and its exec.
    let first = unsafe { g.add_memset(&[], &a.as_view_mut(), 3u32) }.unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    // SAFETY: the captured host function uses no device memory.
    let r = unsafe {
        s.capture_into(&g, &[*first], CaptureMode::THREAD_LOCAL, |st| {
            st.launch_host_fn_repeatable(move || {
                c.fetch_add(1, Ordering::SeqCst);
            })
        })
    };
    match r {
        Err(e) if unsupported(&e) => {
            skip("cuStreamBeginCaptureToGraph needs CUDA 12.3");
        }
        r => r.unwrap(),
    }
    assert_eq!(g.node_count().unwrap(), 2);
    let exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert!(a.to_vec().unwrap().iter().all(|&v| v == 3));
    // A dependency of another graph is refused.
    let other = Graph::new().unwrap();
    let n = other.add_empty(&[]).unwrap();
    assert!(matches!(
        // SAFETY: nothing is captured.
        unsafe { s.capture_into(&g, &[n], CaptureMode::THREAD_LOCAL, |_| Ok(())) },
        Err(Error::Graph(GraphError::Mismatch { .. }))
    ));
}
