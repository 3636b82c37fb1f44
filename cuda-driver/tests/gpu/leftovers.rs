//! GPU tests: the issue #14 leftovers: occupancy with flags, stream callbacks, capture into
//! an existing graph, unified-address and batched copies, batched prefetch/discard, 1D array
//! copies and the 2D array descriptor, unaligned 2D copies, cuMemAllocHost, pools by
//! location, the remaining graph node operations and user objects.

use crate::common::skip;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};

use cuda_driver::prelude::*;
use cuda_driver::types::OccupancyFlags;
use cuda_driver::{
    Array, Array3DFlags, AttachFlags, BatchMemOp, CaptureMode, Copy2D, DeviceBuffer, Error, Graph,
    GraphInstantiateFlags, LaunchConfig, ManagedBuffer, MemAllocationType, MemLocation, MemPool,
    Module, PinnedBuffer, Stream, StreamFlags, UserObject,
};

use crate::common::TEST_KERNELS;

fn unsupported(r: &Error) -> bool {
    matches!(r, Error::Unsupported { .. })
}

#[gpu_test]
fn occupancy_with_flags_matches_the_plain_query() {
    let ctx = gpu_or_skip!();
    let m = Module::load_data(&ctx, TEST_KERNELS).unwrap();
    let f = m.function("fill_u32").unwrap();
    let plain = f.max_active_blocks_per_multiprocessor(128, 0).unwrap();
    let flagged = f
        .max_active_blocks_per_multiprocessor_with_flags(128, 0, OccupancyFlags::DEFAULT)
        .unwrap();
    assert_eq!(plain, flagged);
    assert!(flagged > 0);
    let s = f
        .max_potential_block_size_with_flags(0, 0, OccupancyFlags::DISABLE_CACHING_OVERRIDE)
        .unwrap();
    assert!(s.block_size > 0 && s.min_grid_size > 0);
    // A block larger than any device allows: no block fits (the driver answers 0 or an
    // error), and the context is usable after.
    let r = f.max_active_blocks_per_multiprocessor_with_flags(1 << 20, 0, OccupancyFlags::DEFAULT);
    assert!(matches!(r, Ok(0) | Err(_)), "{r:?}");
    assert!(f.max_active_blocks_per_multiprocessor(128, 0).is_ok());
}

#[gpu_test]
fn add_callback_runs_after_earlier_work_and_refuses_capture() {
    let ctx = gpu_exclusive_or_skip!();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let mut buf = DeviceBuffer::<u32>::zeroed(&ctx, 1024).unwrap();
    buf.as_view_mut().memset_async(7u32, &s).unwrap();
    let (tx, rx) = mpsc::channel();
    s.add_callback(move |status| tx.send(status.is_ok()).unwrap())
        .unwrap();
    assert!(rx.recv().unwrap());
    s.synchronize().unwrap();
    assert!(buf.to_vec().unwrap().iter().all(|&v| v == 7));
    // Refused while capturing; the capture stays valid.
    // SAFETY: nothing captured uses memory.
    let g = unsafe {
        s.capture(CaptureMode::THREAD_LOCAL, |st| {
            assert!(matches!(
                st.add_callback(|_| ()),
                Err(Error::HostFnNotReplayable { .. })
            ));
            Ok(())
        })
    }
    .unwrap();
    drop(g);
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
        Err(Error::GraphMismatch { .. })
    ));
}

#[gpu_test]
fn unified_and_batched_copies_move_the_data() {
    let ctx = gpu_or_skip!();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let src: Vec<u32> = (0..4096).collect();
    let a = DeviceBuffer::from_slice(&ctx, &src).unwrap();
    let mut b = DeviceBuffer::<u32>::zeroed(&ctx, 4096).unwrap();
    b.as_view_mut().copy_from_unified(&a.as_view()).unwrap();
    assert_eq!(b.to_vec().unwrap(), src);
    let mut c = DeviceBuffer::<u32>::zeroed(&ctx, 4096).unwrap();
    c.as_view_mut()
        .copy_from_unified_async(&b.as_view(), &s)
        .unwrap();
    s.synchronize().unwrap();
    assert_eq!(c.to_vec().unwrap(), src);
    // Length mismatch: typed error.
    let short = DeviceBuffer::<u32>::zeroed(&ctx, 3).unwrap();
    assert!(matches!(
        c.as_view_mut().copy_from_unified(&short.as_view()),
        Err(Error::LengthMismatch { .. })
    ));

    // Batches (CUDA 12.8+).
    let mut d1 = DeviceBuffer::<u32>::zeroed(&ctx, 4096).unwrap();
    let mut d2 = DeviceBuffer::<u32>::zeroed(&ctx, 4096).unwrap();
    let r = s.copy_batch(
        &mut [d1.as_view_mut(), d2.as_view_mut()],
        &[a.as_view(), c.as_view()],
    );
    match r {
        Err(e) if unsupported(&e) => skip("cuMemcpyBatchAsync needs CUDA 12.8"),
        r => {
            r.unwrap();
            s.synchronize().unwrap();
            assert_eq!(d1.to_vec().unwrap(), src);
            assert_eq!(d2.to_vec().unwrap(), src);
            let mut e1 = DeviceBuffer::<u32>::zeroed(&ctx, 4096).unwrap();
            s.copy_batch_3d(&mut [e1.as_view_mut()], &[a.as_view()])
                .unwrap();
            s.synchronize().unwrap();
            assert_eq!(e1.to_vec().unwrap(), src);
            assert!(matches!(
                s.copy_batch(&mut [e1.as_view_mut()], &[]),
                Err(Error::LengthMismatch { .. })
            ));
        }
    }
}

#[gpu_test]
fn batched_prefetch_and_discard_keep_managed_memory_usable() {
    let ctx = gpu_or_skip!();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let mut m = ManagedBuffer::<u32>::zeroed(&s, 1 << 16, AttachFlags::GLOBAL).unwrap();
    m.as_mut_slice().unwrap().fill(5);
    let dev = MemLocation::device(ctx.device());
    match s.prefetch_batch(&[m.as_view()], dev) {
        Err(e) if unsupported(&e) => {
            skip("batched prefetch needs CUDA 13.0");
        }
        Err(e) if format!("{e}").contains("NOT_SUPPORTED") => {
            skip(format!("managed prefetch not supported here: {e}"));
        }
        r => r.unwrap(),
    }
    s.synchronize().unwrap();
    assert!(m.as_slice().unwrap().iter().all(|&v| v == 5));
    s.discard_and_prefetch_batch(&mut [m.as_view_mut()], dev)
        .unwrap();
    s.discard_batch(&mut [m.as_view_mut()]).unwrap();
    s.synchronize().unwrap();
    // Discarded contents are unspecified but writable again.
    m.as_view_mut().memset_async(9u32, &s).unwrap();
    s.synchronize().unwrap();
    assert!(m.as_slice().unwrap().iter().all(|&v| v == 9));
}

#[gpu_test]
fn one_dimensional_array_copies_and_the_2d_descriptor() {
    let ctx = gpu_or_skip!();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let mut a = Array::<u32>::new_2d_descriptor(&ctx, 64, 0).unwrap();
    let d = a.descriptor_2d().unwrap();
    assert_eq!((d.width, d.height, d.channels), (64, 0, 1));
    let src: Vec<u32> = (100..164).collect();
    a.write_1d(0, &src).unwrap();
    let mut back = vec![0u32; 16];
    a.read_1d(8, &mut back).unwrap();
    assert_eq!(back, src[8..24]);
    // Array → device → array.
    let mut dev = DeviceBuffer::<u32>::zeroed(&ctx, 64).unwrap();
    a.copy_1d_to_device(0, &mut dev.as_view_mut()).unwrap();
    assert_eq!(dev.to_vec().unwrap(), src);
    let mut b = Array::<u32>::new_1d(&ctx, 64, Array3DFlags::empty()).unwrap();
    b.copy_1d_from_device(0, &dev.as_view()).unwrap();
    let mut c = Array::<u32>::new_1d(&ctx, 64, Array3DFlags::empty()).unwrap();
    c.copy_1d_from_array(0, &b, 32, 32).unwrap();
    let mut out = vec![0u32; 32];
    c.read_1d(0, &mut out).unwrap();
    assert_eq!(out, src[32..]);
    // Asynchronous host forms with pinned memory.
    let pinned = PinnedBuffer::from_slice(&ctx, &[1u32, 2, 3, 4], Default::default()).unwrap();
    let mut pinned_out = PinnedBuffer::<u32>::zeroed_alloc_host(&ctx, 4).unwrap();
    // SAFETY: the pinned buffers outlive the synchronisation below and are not touched before.
    unsafe {
        c.write_1d_async(60, &pinned, &s).unwrap();
        c.read_1d_async(60, &mut pinned_out, &s).unwrap();
    }
    s.synchronize().unwrap();
    assert_eq!(&pinned_out[..], &[1, 2, 3, 4]);
    // Bad input: out of bounds, and a 2D array for a 1D copy.
    assert!(matches!(
        c.read_1d(60, &mut [0u32; 8]),
        Err(Error::OutOfBounds { .. })
    ));
    let two_d = Array::<u32>::new_2d_descriptor(&ctx, 8, 8).unwrap();
    assert_eq!(two_d.descriptor_2d().unwrap().height, 8);
    assert!(matches!(
        two_d.read_1d(0, &mut [0u32; 1]),
        Err(Error::ArrayNot1D { .. })
    ));
    assert!(matches!(
        Array::<u32>::new_2d_descriptor(&ctx, 0, 4),
        Err(Error::ZeroExtent { .. })
    ));
    c.read_1d(0, &mut out).unwrap();
}

#[gpu_test]
fn unaligned_2d_copy_and_alloc_host() {
    let ctx = gpu_or_skip!();
    let host: Vec<u32> = (0..12).collect();
    let mut a = Array::<u32>::new_2d(&ctx, 4, 3, Array3DFlags::empty()).unwrap();
    Copy2D::new(4, 3)
        .from_host(&host, 4)
        .to_array(&mut a)
        .run_unaligned()
        .unwrap();
    assert_eq!(a.copy_to_host_vec(), host);
    let p = PinnedBuffer::<u64>::zeroed_alloc_host(&ctx, 100).unwrap();
    assert!(p.iter().all(|&v| v == 0));
    // Page-locked memory of a unified-addressing device has a device address (the same as
    // the host address with unified addressing).
    assert_eq!(p.device_ptr().unwrap(), p.as_ptr() as u64);
}

trait ToVec {
    fn copy_to_host_vec(&self) -> Vec<u32>;
}
impl ToVec for Array<u32> {
    fn copy_to_host_vec(&self) -> Vec<u32> {
        let mut v = vec![0; self.len()];
        self.copy_to_host(&mut v).unwrap();
        v
    }
}

#[gpu_test]
fn pools_by_location() {
    let ctx = gpu_exclusive_or_skip!();
    let loc = MemLocation::device(ctx.device());
    let def = match MemPool::location_default(loc, MemAllocationType::PINNED) {
        Err(e) if unsupported(&e) => {
            skip("pools by location need CUDA 13.0");
        }
        r => r.unwrap(),
    };
    assert_eq!(
        def.as_raw(),
        MemPool::device_default(ctx.device()).unwrap().as_raw()
    );
    let pool = MemPool::new(ctx.device()).unwrap();
    MemPool::set_location_current(loc, MemAllocationType::PINNED, &pool).unwrap();
    let cur = MemPool::location_current(loc, MemAllocationType::PINNED).unwrap();
    assert_eq!(cur, pool.as_raw());
    assert_eq!(
        MemPool::device_current(ctx.device()).unwrap(),
        pool.as_raw()
    );
    MemPool::set_location_current(loc, MemAllocationType::PINNED, &def).unwrap();
    // An invalid allocation type: a driver error, the context usable afterwards.
    assert!(MemPool::location_default(loc, MemAllocationType::INVALID).is_err());
    assert!(MemPool::location_current(loc, MemAllocationType::PINNED).is_ok());
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
        Err(Error::NodeKind { .. })
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
