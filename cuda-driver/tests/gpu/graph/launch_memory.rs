//! GPU tests: memory a graph launch allocates and does not free (`GraphMemory`, one owner per
//! launch from `GraphExec::launch_with_memory`): freed after the launch on a stream or
//! synchronously, by a free node of another graph (the graphMemoryNodes sample's separate free
//! graph), viewed safely after the launch; and what is refused.

use std::sync::mpsc;

use cuda_driver::prelude::*;
use cuda_driver::{
    error::drop_error_count, graph::Graph, graph::GraphAllocation, graph::GraphMemory,
    graph::MemsetParams, types::ContextFlags, types::GraphInstantiateFlags,
    types::StreamCaptureMode as CaptureMode, types::StreamFlags, Context, DeviceBuffer, Error,
    Stream,
};

const N: usize = 1 << 16;

/// A graph that allocates `N` u32 and fills them with `value`, without freeing them.
fn alloc_graph(ctx: &Context, value: u32) -> (Graph, GraphAllocation) {
    let g = Graph::new().unwrap();
    let (node, alloc) = g.add_mem_alloc(&[], ctx.device(), N * 4).unwrap();
    // SAFETY: the memset node is ordered after the allocation node; N u32 fit.
    let view = unsafe { alloc.view_mut::<u32>(N, ctx) };
    // SAFETY: the view is used by this node of the allocating graph only, after its allocation.
    unsafe { g.add_memset(&[*node], &view, value).unwrap() };
    (g, alloc)
}

/// graphMemoryNodes: one graph allocates and writes, a second graph only frees; each launch
/// of the first hands out that launch's memory, which the next launch of the second frees.
/// Owners of a third graph are refused by the free graph; owners swapped through `&mut` stay
/// whole.
#[gpu_test]
fn a_free_node_of_another_graph_frees_each_launchs_memory() {
    let ctx = gpu_or_skip!();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let s2 = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let (g1, alloc) = alloc_graph(&ctx, 0x7777_0001);
    let addr = alloc.as_raw();
    let g2 = Graph::new().unwrap();
    g2.add_mem_free(&[], alloc).unwrap();
    let e1 = g1.instantiate(GraphInstantiateFlags::empty()).unwrap();
    let e2 = g2.instantiate(GraphInstantiateFlags::empty()).unwrap();
    // The free graph is launched only with the memory it frees.
    assert!(matches!(e2.launch(&s), Err(Error::InvalidArgument(_))));
    assert!(matches!(
        e2.launch_with_memory(&s, Vec::new()),
        Err(Error::InvalidArgument(_))
    ));
    for round in 0..4 {
        let mem = e1.launch_with_memory(&s, Vec::new()).unwrap();
        assert_eq!(mem.len(), 1);
        assert_eq!(mem[0].as_raw(), addr);
        assert_eq!(mem[0].bytes(), N * 4);
        // A safe view after the launch, on the launch's stream only.
        let v = mem[0].view::<u32>().unwrap();
        assert_eq!(v.len(), N);
        assert!(v.to_vec().unwrap().iter().all(|&x| x == 0x7777_0001));
        let mut out = DeviceBuffer::<u32>::zeroed(&ctx, N).unwrap();
        assert!(matches!(
            out.copy_from_device_async(&v, &s2),
            Err(Error::StreamMismatch { .. })
        ));
        // Freed by the other graph, launched on this or another stream (ordered after s).
        let on = if round % 2 == 0 { &s } else { &s2 };
        assert!(e2.launch_with_memory(on, mem).unwrap().is_empty());
    }
    // Owners are checked against the free nodes: memory of a third graph is refused (and
    // dropped with the refusal: freed on its stream).
    let (g3, _a3) = alloc_graph(&ctx, 3);
    let e3 = g3.instantiate(GraphInstantiateFlags::empty()).unwrap();
    let mut mem = e1.launch_with_memory(&s, Vec::new()).unwrap();
    let other = e3.launch_with_memory(&s2, Vec::new()).unwrap();
    mem.extend(other);
    assert!(matches!(
        e2.launch_with_memory(&s, mem),
        Err(Error::InvalidArgument(_))
    ));
    // Both owners were freed with the refusal: both execs launch again.
    let mem = e1.launch_with_memory(&s, Vec::new()).unwrap();
    drop(e3.launch_with_memory(&s2, Vec::new()).unwrap());
    e2.launch_with_memory(&s2, mem).unwrap();
    // Owners swapped through `&mut` carry their memory, stream and graph with them.
    let mut x = e1
        .launch_with_memory(&s, Vec::new())
        .unwrap()
        .pop()
        .unwrap();
    let mut y = e3
        .launch_with_memory(&s2, Vec::new())
        .unwrap()
        .pop()
        .unwrap();
    std::mem::swap(&mut x, &mut y);
    assert_eq!(y.as_raw(), addr);
    assert_eq!(y.stream().as_raw(), s.as_raw());
    e2.launch_with_memory(&s2, vec![y]).unwrap();
    assert!(matches!(e3.launch(&s2), Err(Error::InvalidArgument(_))));
    drop(x); // the third graph's memory, freed on s2
    drop(e1.launch_with_memory(&s, Vec::new()).unwrap());
    drop(e3.launch_with_memory(&s2, Vec::new()).unwrap());
    s.synchronize().unwrap();
    s2.synchronize().unwrap();
}

/// Memory the graph leaves allocated, freed after each launch: dropped (stream-ordered),
/// `free_async`, `free` (synchronous), moved to another stream first, dropped on another
/// thread, after the exec is gone; the exec refuses to relaunch while the memory lives.
#[gpu_test]
fn memory_a_graph_leaves_allocated_is_freed_after_each_launch() {
    let ctx = gpu_or_skip!();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let s2 = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let before = drop_error_count();
    let (g, _alloc) = alloc_graph(&ctx, 42);
    let mut exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
    let check = |m: &GraphMemory<'_>| {
        assert!(m
            .view::<u32>()
            .unwrap()
            .to_vec()
            .unwrap()
            .iter()
            .all(|&x| x == 42));
    };
    for way in 0..5 {
        let mut mem = exec.launch_with_memory(&s, Vec::new()).unwrap();
        let m = mem.pop().unwrap();
        check(&m);
        // While it lives, the exec cannot be launched again (the launch would allocate the
        // same address under it).
        assert!(matches!(
            exec.launch_with_memory(&s, Vec::new()),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(exec.launch(&s), Err(Error::InvalidArgument(_))));
        assert!(matches!(exec.update(&g), Err(Error::InvalidArgument(_))));
        match way {
            0 => drop(m),
            1 => m.free_async().unwrap(),
            2 => m.free().unwrap(),
            3 => {
                let mut m = m.move_to_stream(&s2).unwrap();
                m.view_mut::<u32>()
                    .unwrap()
                    .memset_async(1u32, &s2)
                    .unwrap();
                assert!(m
                    .view::<u32>()
                    .unwrap()
                    .to_vec()
                    .unwrap()
                    .iter()
                    .all(|&x| x == 1));
                drop(m); // freed on s2; the relaunch below is on s
            }
            _ => std::thread::scope(|sc| {
                sc.spawn(move || drop(m));
            }),
        }
    }
    // Views with the wrong alignment are refused; wider types see fewer elements.
    let mut mem = exec.launch_with_memory(&s, Vec::new()).unwrap();
    assert_eq!(mem[0].view::<u64>().unwrap().len(), N / 2);
    assert_eq!(mem[0].view_mut::<u8>().unwrap().len(), N * 4);
    // Nor can a new exec of the same graph while the memory lives.
    drop(exec);
    let exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
    assert!(matches!(exec.launch(&s), Err(Error::InvalidArgument(_))));
    // The exec and graph may go first: graph memory outlives them.
    drop(exec);
    drop(g);
    check(&mem[0]);
    drop(mem);
    s.synchronize().unwrap();
    s2.synchronize().unwrap();
    assert_eq!(drop_error_count(), before);
}

/// An exec that frees its memory at its next launch (AUTO_FREE_ON_LAUNCH) hands out no
/// owner (the owner would be freed under it); a move to another context's stream is refused
/// and gives the memory back; a forgotten owner leaks, never aliased by a relaunch.
#[gpu_test]
fn auto_free_execs_hand_out_no_memory_and_moves_across_contexts_are_refused() {
    let ctx = gpu_exclusive_or_skip!();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let (g, _alloc) = alloc_graph(&ctx, 5);
    let auto = g
        .instantiate(GraphInstantiateFlags::AUTO_FREE_ON_LAUNCH)
        .unwrap();
    assert!(matches!(
        auto.launch_with_memory(&s, Vec::new()),
        Err(Error::InvalidArgument(_))
    ));
    auto.launch(&s).unwrap();
    auto.launch(&s).unwrap();
    s.synchronize().unwrap();
    drop(auto);
    // Another graph's memory, moved to a stream of another context: refused, given back.
    let other = Context::new(ctx.device(), ContextFlags::SCHED_AUTO).unwrap();
    let theirs = Stream::new(&other, StreamFlags::NON_BLOCKING).unwrap();
    let (g2, _a2) = alloc_graph(&ctx, 6);
    let e2 = g2.instantiate(GraphInstantiateFlags::empty()).unwrap();
    let mut mem = e2.launch_with_memory(&s, Vec::new()).unwrap();
    let err = mem.pop().unwrap().move_to_stream(&theirs).unwrap_err();
    assert!(matches!(err.error, Error::ContextMismatch { .. }));
    let m = err.buffer;
    assert!(m
        .view::<u32>()
        .unwrap()
        .to_vec()
        .unwrap()
        .iter()
        .all(|&x| x == 6));
    m.free().unwrap();
    // A forgotten owner is never freed: the memory leaks, and no exec of the graph launches
    // again (it would allocate the same address under the forgotten owner).
    let mem = e2.launch_with_memory(&s, Vec::new()).unwrap();
    std::mem::forget(mem);
    assert!(matches!(e2.launch(&s), Err(Error::InvalidArgument(_))));
    assert!(matches!(
        e2.launch_with_memory(&s, Vec::new()),
        Err(Error::InvalidArgument(_))
    ));
    s.synchronize().unwrap();
    let _ = g;
}

/// The hostile order: one launch's memory is read on its stream behind a blocked host
/// function and freed there; the exec is launched again on another stream, writing the same
/// address. The reader must still see the first launch's data.
#[gpu_test]
fn a_relaunch_on_another_stream_does_not_overwrite_memory_still_read_on_the_old_one() {
    let ctx = gpu_exclusive_or_skip!();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let t = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let g = Graph::new().unwrap();
    let (node, alloc) = g.add_mem_alloc(&[], ctx.device(), N * 4).unwrap();
    // SAFETY: used by the memset node only, after the allocation node.
    let view = unsafe { alloc.view_mut::<u32>(N, &ctx) };
    // SAFETY: as above. The value differs per launch: the node is updated below.
    let memset = unsafe { g.add_memset(&[*node], &view, 0x1111_1111u32).unwrap() };
    let mut exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
    let mem = exec.launch_with_memory(&s, Vec::new()).unwrap();
    let mut out = DeviceBuffer::<u32>::zeroed(&ctx, N).unwrap();
    let (tx, rx) = mpsc::channel::<()>();
    s.launch_host_fn(move || {
        let _ = rx.recv();
    })
    .unwrap();
    out.copy_from_device_async(&mem[0].view::<u32>().unwrap(), &s)
        .unwrap();
    drop(mem); // freed on s, behind the blocked host function and the copy
               // SAFETY: as for the node.
    unsafe {
        exec.set_memset_node(
            memset,
            &ctx,
            MemsetParams::fill(&view, 0x2222_2222u32).unwrap(),
        )
        .unwrap()
    };
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let _ = tx.send(());
    });
    let mem2 = exec.launch_with_memory(&t, Vec::new()).unwrap();
    t.synchronize().unwrap();
    s.synchronize().unwrap();
    assert!(
        out.to_vec().unwrap().iter().all(|&x| x == 0x1111_1111),
        "a relaunch overwrote graph memory still read on another stream"
    );
    assert!(mem2[0]
        .view::<u32>()
        .unwrap()
        .to_vec()
        .unwrap()
        .iter()
        .all(|&x| x == 0x2222_2222));
}

/// graphMemoryNodes' captured form: a stream-ordered allocation captured into a graph and
/// not freed in it (the buffer given up with `into_raw` during the capture) is allocated anew
/// at each launch, and each launch hands out its owner.
#[gpu_test]
fn memory_allocated_in_a_capture_is_handed_out_per_launch() {
    let ctx = gpu_exclusive_or_skip!();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    // SAFETY: the captured work uses only the memory the capture allocates.
    let g = unsafe {
        s.capture(CaptureMode::THREAD_LOCAL, |s| {
            let mut b = DeviceBuffer::<u32>::new_async(s, N)?;
            b.memset_async(9u32, s)?;
            let _ = b.into_raw(); // left allocated: freed after each launch
            Ok(())
        })
        .unwrap()
    };
    let exec = g.instantiate(GraphInstantiateFlags::empty()).unwrap();
    let mut addr = None;
    for _ in 0..3 {
        let mem = exec.launch_with_memory(&s, Vec::new()).unwrap();
        assert_eq!(mem.len(), 1);
        // The driver may round the size up; the first N words are the captured buffer's.
        assert!(mem[0].bytes() >= N * 4, "{}", mem[0].bytes());
        assert_eq!(*addr.get_or_insert(mem[0].as_raw()), mem[0].as_raw());
        let words = mem[0].view::<u32>().unwrap().to_vec().unwrap();
        assert!(words[..N].iter().all(|&x| x == 9));
    }
    s.synchronize().unwrap();
}
