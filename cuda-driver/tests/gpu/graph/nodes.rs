//! GPU tests: graph nodes by kind: every node kind executed, parameters of the wrong kind
//! refused, host nodes (counts, panics), copy nodes between host, arrays and device memory,
//! batch memory-operation nodes, kernel node attributes, library kernels as nodes, the
//! generic parameter setters, graph-side setters seen by fresh instantiations, user objects.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use cuda_driver::graph::GraphError;
use cuda_driver::launch::LaunchError;
use cuda_driver::memory::LayoutError;
use cuda_driver::prelude::*;
use cuda_driver::{
    graph::BatchMemOp, graph::Graph, graph::MemsetParams, graph::UserObject, types::EventFlags,
    types::GraphInstantiateFlags, types::GraphNodeType, types::StreamFlags, DeviceBuffer, Error,
    Event, LaunchConfig, Library, Module, Stream,
};

use crate::common::{skip, stream, unsupported, TEST_KERNELS};
use crate::graph::{kernels, wait_for_sole_owner, GRAPH_KERNELS};

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
    let before = cuda_driver::stream::host_fn_panic_count();
    let g = Graph::new().unwrap();
    g.add_host(&[], || panic!("graph host node panics"))
        .unwrap();
    let exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
    exec.launch(&s).unwrap();
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert!(cuda_driver::stream::host_fn_panic_count() >= before + 2);
}

#[gpu_test]
fn node_parameters_of_the_wrong_kind_are_refused() {
    let _ctx = gpu_or_skip!();
    let g = Graph::new().unwrap();
    let e = g.add_empty(&[]).unwrap();
    match e.as_memset() {
        Err(Error::Graph(GraphError::NodeKind {
            expected, found, ..
        })) => {
            assert_eq!(expected, GraphNodeType::MEMSET);
            assert_eq!(found, GraphNodeType::EMPTY);
        }
        other => panic!("{other:?}"),
    }
    assert!(e.as_kernel().is_err());
    assert!(e.as_host().is_err());
}

#[gpu_test]
fn copy_nodes_move_rows_between_host_arrays_and_device_memory() {
    use cuda_driver::{
        memory::Array, memory::Copy2D, memory::Copy3D, types::Array3DFlags, types::PinnedFlags,
        PinnedBuffer,
    };
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
            Err(Error::Layout(LayoutError::ZeroExtent { .. }))
        ));
        assert!(matches!(
            g.add_copy_2d(
                &[],
                Copy2D::new(w, h + 1)
                    .from_host(&src[..], w)
                    .to_array(&mut arr)
            ),
            Err(Error::Layout(LayoutError::RegionOutOfBounds { .. }))
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
        stream_memop::MemOpBatch, types::DeviceAttribute, types::StreamMemoryBarrierFlags,
        types::StreamWriteValueFlags,
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
    assert!(
        matches!(empty, Err(Error::Layout(LayoutError::ZeroExtent { .. }))),
        "{empty:?}"
    );
    assert_eq!(g.node_count().unwrap(), 1);
    let exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(w32.to_vec().unwrap(), [0xDEAD_BEEF]);
    assert_eq!(w64.to_vec().unwrap(), [0x0123_4567_89AB_CDEF]);
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
            matches!(
                r,
                Err(Error::Launch(LaunchError::ArgumentSize { index: 1, .. }))
            ),
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

#[gpu_test]
fn graph_node_leftovers() {
    let ctx = gpu_or_skip!();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let m = Module::load_data(&ctx, TEST_KERNELS).unwrap();
    let f = m.function("fill_u32").unwrap();
    let mut a = DeviceBuffer::<u32>::zeroed(&ctx, 256).unwrap();
    let flag = DeviceBuffer::<u32>::zeroed(&ctx, 2).unwrap();
    let n = 256i32;
    let cfg = LaunchConfig::for_num_elems(256).unwrap();
    let g = Graph::new().unwrap();
    // SAFETY: the buffers outlive the graph and its exec; fill_u32(out, v, n).
    let (k1, k2, batch) = unsafe {
        let k1 = g
            .add_kernel(&[], &f, &cfg, (a.as_view_mut(), &1u32, &n))
            .unwrap();
        let k2 = g
            .add_kernel(&[*k1], &f, &cfg, (a.as_view_mut(), &2u32, &n))
            .unwrap();
        let batch = g
            .add_batch_mem_op(
                &[*k2],
                &ctx,
                &[BatchMemOp::WriteValue32 {
                    address: flag.as_view().as_raw(),
                    value: 11,
                }],
            )
            .unwrap();
        (k1, k2, batch)
    };
    // Kernel node attributes.
    k1.set_priority(0).unwrap();
    assert_eq!(k1.priority().unwrap(), 0);
    k2.copy_attributes_from(k1).unwrap();
    assert_eq!(k2.priority().unwrap(), k1.priority().unwrap());
    // Batch memory operation parameters.
    let batch = batch.as_batch_mem_op().unwrap();
    let addr = flag.as_view().as_raw();
    assert_eq!(
        batch.ops().unwrap(),
        [BatchMemOp::WriteValue32 {
            address: addr,
            value: 11
        }]
    );
    // SAFETY: `flag` outlives the graph.
    unsafe {
        batch
            .set_ops(
                &ctx,
                &[BatchMemOp::WriteValue32 {
                    address: addr + 4,
                    value: 12,
                }],
            )
            .unwrap()
    };
    assert_eq!(
        batch.ops().unwrap(),
        [BatchMemOp::WriteValue32 {
            address: addr + 4,
            value: 13 - 1
        }]
    );
    // Host node parameters.
    let host = g.add_host(&[], || ()).unwrap();
    let (hf, data) = host.params_raw().unwrap();
    assert!(hf.is_some() && !data.is_null());
    // Wrong node type: typed error.
    assert!(matches!(
        (*k1).as_batch_mem_op(),
        Err(Error::Graph(GraphError::NodeKind { .. }))
    ));

    let mut exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
    // SAFETY: `flag` outlives the exec.
    unsafe {
        exec.set_batch_mem_op_node(
            batch,
            &ctx,
            &[BatchMemOp::WriteValue32 {
                address: addr,
                value: 21,
            }],
        )
        .unwrap()
    };
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(flag.to_vec().unwrap(), [21, 0]);
    assert!(a.to_vec().unwrap().iter().all(|&v| v == 2));
}

#[gpu_test]
fn generic_node_params_and_user_objects() {
    let ctx = gpu_or_skip!();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let mut a = DeviceBuffer::<u32>::zeroed(&ctx, 64).unwrap();
    let g = Graph::new().unwrap();
    // SAFETY: `a` outlives the graph and exec.
    let node = unsafe { g.add_memset(&[], &a.as_view_mut(), 4u32) }.unwrap();
    // Rewrite the memset value through the generic setter.
    // SAFETY: a plain C struct; zero is valid.
    let mut p: cuda_driver::sys::CUgraphNodeParams = unsafe { std::mem::zeroed() };
    p.type_ = cuda_driver::sys::CU_GRAPH_NODE_TYPE_MEMSET;
    p.__bindgen_anon_1.memset = cuda_driver::sys::CUDA_MEMSET_NODE_PARAMS_v2 {
        dst: a.as_view().as_raw(),
        pitch: 0,
        value: 6,
        elementSize: 4,
        width: 64,
        height: 1,
        ctx: ctx.as_raw(),
    };
    // SAFETY: valid memset parameters for live memory.
    match unsafe { node.set_params_raw(&mut p) } {
        Err(e) if unsupported(&e) => {
            skip("cuGraphNodeSetParams needs CUDA 12.2");
        }
        r => r.unwrap(),
    }
    let mut exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert!(a.to_vec().unwrap().iter().all(|&v| v == 6));
    // SAFETY: as above, value 8, this exec only.
    unsafe {
        p.__bindgen_anon_1.memset.value = 8;
        exec.set_node_params_raw(*node, &mut p).unwrap();
    }
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert!(a.to_vec().unwrap().iter().all(|&v| v == 8));

    // User objects: the value lives while a handle or the graph holds a reference.
    struct Flag(Arc<AtomicUsize>);
    impl Drop for Flag {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let dropped = Arc::new(AtomicUsize::new(0));
    let obj = UserObject::new(Flag(dropped.clone())).unwrap();
    let obj2 = obj.try_clone().unwrap();
    let g2 = Graph::new().unwrap();
    g2.retain_user_object(&obj).unwrap();
    drop(obj);
    drop(obj2);
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        0,
        "the graph still holds it"
    );
    let obj3 = UserObject::new(0u8).unwrap();
    g2.retain_user_object(&obj3).unwrap();
    // SAFETY: g2 holds the reference taken just above.
    unsafe { g2.release_user_object(&obj3) }.unwrap();
    drop(g2);
    for _ in 0..100 {
        if dropped.load(Ordering::SeqCst) == 1 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(dropped.load(Ordering::SeqCst), 1);
}
