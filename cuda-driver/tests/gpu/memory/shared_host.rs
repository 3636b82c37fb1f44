//! GPU tests: page-locked memory shared with host functions and graph host nodes
//! ([`SharedPinnedBuffer`]): simpleCallback's and simpleCudaGraphs' host callbacks reading a
//! device result without raw addresses, every use ordered after the one before, the program's
//! guard waiting for them, and the hostile cases (handles dropped early, another stream and
//! thread, a guard held or forgotten while a graph runs, refused streams, a panicking
//! closure).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use cuda_driver::context::wait_for_deferred_releases;
use cuda_driver::error::drop_error_count;
use cuda_driver::graph::Graph;
use cuda_driver::graph::GraphError;
use cuda_driver::memory::SharedPinnedBuffer;
use cuda_driver::prelude::*;
use cuda_driver::stream::host_fn_panic_count;
use cuda_driver::types::{
    ContextFlags, GraphInstantiateFlags, StreamCaptureMode as CaptureMode, StreamFlags,
};
use cuda_driver::{Context, DeviceBuffer, Error, LaunchConfig, Module, Stream};

use crate::memory::{block, words};

const N: usize = 1 << 16;

fn sum(d: &[u32]) -> u64 {
    d.iter().map(|&x| u64::from(x)).sum()
}

/// simpleCallback: a device result is copied into page-locked memory on one stream, a host
/// function queued on *another* stream reads and changes it (it runs after the copy: the
/// uses are chained), a copy back to the device queued after it sees the change, and the
/// program's guard waits for all of it. The device work is held back behind a blocked host
/// function, so every use is still pending when the next is queued.
#[gpu_test]
fn a_host_function_on_another_stream_sees_a_device_result_copied_into_shared_page_locked_memory() {
    let ctx = gpu_exclusive_or_skip!();
    let a = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let b = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let data = words(N, 61);
    let dev = DeviceBuffer::from_slice(&ctx, &data).unwrap();
    let mut out = DeviceBuffer::<u32>::new(&ctx, N).unwrap();
    let shared = SharedPinnedBuffer::<u32>::zeroed(&ctx, N).unwrap();
    let gate = block(&a);
    shared.copy_from_device_async(&dev, &a).unwrap();
    let seen = Arc::new(AtomicU64::new(0));
    let s = seen.clone();
    shared
        .launch_host_fn(&b, move |d| {
            s.store(sum(d), Ordering::SeqCst);
            d.iter_mut().for_each(|x| *x = x.wrapping_add(1));
        })
        .unwrap();
    shared.copy_to_device_async(&mut out, &a).unwrap();
    // Nothing has run yet: no guard without waiting.
    assert!(shared.try_lock().unwrap().is_none());
    assert_eq!(seen.load(Ordering::SeqCst), 0);
    drop(gate);
    drop(dev); // dropped while the copy may still run: cuMemFree waits for it
    let g = shared.lock().unwrap();
    assert_eq!(
        seen.load(Ordering::SeqCst),
        sum(&data),
        "the function saw the copy"
    );
    let plus1: Vec<u32> = data.iter().map(|x| x.wrapping_add(1)).collect();
    assert_eq!(&*g, &plus1[..]);
    drop(g);
    a.synchronize().unwrap();
    assert_eq!(
        out.to_vec().unwrap(),
        plus1,
        "the copy back saw the function's change"
    );
    assert_eq!(shared.skipped_host_nodes(), 0);
}

/// Every handle the program holds is dropped right after queuing, on another thread: the
/// host function's handle keeps the memory until it has run; it is freed afterwards on the
/// release thread, without errors. A closure that panics is contained and its use still
/// completes (the next guard is handed out).
#[gpu_test]
fn shared_page_locked_memory_outlives_handles_dropped_early_on_another_thread() {
    let ctx = gpu_exclusive_or_skip!();
    let stream = Arc::new(Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap());
    let data = words(N, 62);
    let dev = Arc::new(DeviceBuffer::from_slice(&ctx, &data).unwrap());
    let errors = drop_error_count();
    let (tx, rx) = mpsc::channel();
    let gate = block(&stream);
    let t = {
        let (ctx, stream, dev) = (ctx.clone(), stream.clone(), dev.clone());
        std::thread::spawn(move || {
            let shared = SharedPinnedBuffer::<u32>::zeroed(&ctx, N).unwrap();
            shared.copy_from_device_async(&*dev, &stream).unwrap();
            shared
                .launch_host_fn(&stream, move |d| {
                    let _ = tx.send(d.to_vec());
                })
                .unwrap();
            drop(shared); // the last handle of the program
        })
    };
    t.join().unwrap();
    drop(gate);
    let got = rx.recv_timeout(Duration::from_secs(30)).unwrap();
    assert_eq!(got, data);
    stream.synchronize().unwrap();
    wait_for_deferred_releases().unwrap();
    assert_eq!(drop_error_count(), errors);

    // A panicking closure: caught and counted, its use completes.
    let panics = host_fn_panic_count();
    let shared = SharedPinnedBuffer::<u32>::zeroed(&ctx, 16).unwrap();
    shared
        .launch_host_fn(&stream, |_| {
            panic!("a host function over shared memory panics")
        })
        .unwrap();
    let mut g = shared.lock().unwrap();
    g[0] = 7;
    drop(g);
    stream.synchronize().unwrap();
    assert_eq!(host_fn_panic_count(), panics + 1);
    assert_eq!(shared.lock().unwrap()[0], 7);
}

/// simpleCudaGraphs' host node: a graph's host node reads page-locked memory the program
/// shares with it. A launch while the program holds a guard, or while a use is pending,
/// skips the node's closure (counted) and never reads memory a copy is writing; a forgotten
/// guard keeps it skipping, never racing.
#[gpu_test]
fn a_graph_host_node_reads_shared_page_locked_memory_only_when_nothing_else_has_it() {
    let ctx = gpu_or_skip!();
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let data = words(N, 63);
    let dev = DeviceBuffer::from_slice(&ctx, &data).unwrap();
    let shared = SharedPinnedBuffer::<u32>::zeroed(&ctx, N).unwrap();
    let seen = Arc::new(AtomicU64::new(0));
    let graph = Graph::new().unwrap();
    let s = seen.clone();
    graph
        .add_host_with(&[], &shared, move |d| {
            s.fetch_add(sum(d), Ordering::SeqCst);
        })
        .unwrap();
    let exec = graph.instantiate(GraphInstantiateFlags::empty()).unwrap();
    drop(graph); // the exec holds the node's handle
    shared.copy_from_device_async(&dev, &stream).unwrap();
    // On the same stream after the copy: the copy's use has completed when the node runs.
    exec.launch(&stream).unwrap();
    stream.synchronize().unwrap();
    assert_eq!(seen.load(Ordering::SeqCst), sum(&data));
    assert_eq!(shared.skipped_host_nodes(), 0);

    // A guard held across a launch: the node skips.
    let g = shared.lock().unwrap();
    exec.launch(&stream).unwrap();
    stream.synchronize().unwrap();
    assert_eq!(shared.skipped_host_nodes(), 1);
    assert_eq!(seen.load(Ordering::SeqCst), sum(&data));
    drop(g);

    // A use pending on another stream (a copy of other data held back on the device behind a
    // sleeping kernel, so that no host-function thread is occupied): a node launched meanwhile
    // skips; should the machine be so slow that the node runs only after the copy completed,
    // it reads the copy's whole result. Never a mix of the two (a read during the copy).
    let other = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let data2 = words(N, 66);
    let dev2 = DeviceBuffer::from_slice(&ctx, &data2).unwrap();
    let module = Module::load_data(&ctx, crate::common::TEST_KERNELS).unwrap();
    let sleep = module.function("sleep_ns").unwrap();
    let ns = 1_000_000_000u32;
    // SAFETY: sleep_ns(unsigned) takes one 32-bit word and touches no memory.
    unsafe { sleep.launch(&other, &LaunchConfig::new(1u32, 1u32), (&ns,)) }.unwrap();
    shared.copy_from_device_async(&dev2, &other).unwrap();
    let before = seen.load(Ordering::SeqCst);
    exec.launch(&stream).unwrap();
    stream.synchronize().unwrap();
    let read = seen.load(Ordering::SeqCst) - before;
    if read == 0 {
        assert_eq!(shared.skipped_host_nodes(), 2);
    } else {
        crate::common::note("the node ran after the pending copy completed");
        assert_eq!(read, sum(&data2), "the node read memory a copy was writing");
    }
    let skipped = shared.skipped_host_nodes();
    drop(shared.lock().unwrap());
    let before = seen.load(Ordering::SeqCst);
    exec.launch(&stream).unwrap();
    stream.synchronize().unwrap();
    assert_eq!(seen.load(Ordering::SeqCst) - before, sum(&data2));

    // A forgotten guard: never handed out again, the node skips for ever (no race, no UB).
    std::mem::forget(shared.lock().unwrap());
    assert!(shared.try_lock().unwrap().is_none());
    exec.launch(&stream).unwrap();
    stream.synchronize().unwrap();
    assert_eq!(shared.skipped_host_nodes(), skipped + 1);
    drop(exec);
    drop(shared);
}

/// Uses are refused on a stream being captured, a stream of another context and the
/// per-thread default stream, with mismatched lengths, and inside a host function (where
/// taking a guard could wait for the host function itself); nothing is queued by a refused
/// use, and the buffer stays usable.
#[gpu_test]
fn refused_uses_of_shared_page_locked_memory_queue_nothing() {
    let ctx = gpu_or_skip!();
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let shared = SharedPinnedBuffer::<u32>::from_slice(&ctx, &words(64, 64)).unwrap();
    let dev = DeviceBuffer::from_slice(&ctx, &words(64, 65)).unwrap();

    let other = Context::new(ctx.device(), ContextFlags::SCHED_AUTO).unwrap();
    let foreign = Stream::new(&other, StreamFlags::NON_BLOCKING).unwrap();
    let e = shared.launch_host_fn(&foreign, |_| {}).unwrap_err();
    assert!(matches!(e, Error::ContextMismatch { .. }), "{e:?}");

    let e = shared
        .copy_from_device_async(&dev, &Stream::per_thread(&ctx))
        .unwrap_err();
    assert!(matches!(e, Error::InvalidStream { .. }), "{e:?}");

    let short = DeviceBuffer::<u32>::new(&ctx, 63).unwrap();
    let e = shared.copy_from_device_async(&short, &stream).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { .. }), "{e:?}");

    // SAFETY: nothing else is queued on `stream` while it is captured; the capture ends below.
    unsafe { stream.begin_capture(CaptureMode::RELAXED) }.unwrap();
    let e = shared.launch_host_fn(&stream, |_| {}).unwrap_err();
    assert!(
        matches!(e, Error::Graph(GraphError::HostFnNotReplayable { .. })),
        "{e:?}"
    );
    let e = shared.copy_from_device_async(&dev, &stream).unwrap_err();
    assert!(
        matches!(e, Error::Graph(GraphError::HostFnNotReplayable { .. })),
        "{e:?}"
    );
    drop(stream.end_capture().unwrap());

    // Inside a host function: refused before any lock.
    let (tx, rx) = mpsc::channel();
    let inner = shared.clone();
    stream
        .launch_host_fn(move || {
            let _ = tx.send((
                inner.lock().map(drop).unwrap_err(),
                inner.try_lock().map(drop).unwrap_err(),
            ));
        })
        .unwrap();
    let (e1, e2) = rx.recv_timeout(Duration::from_secs(30)).unwrap();
    assert!(matches!(e1, Error::InHostCallback { .. }), "{e1:?}");
    assert!(matches!(e2, Error::InHostCallback { .. }), "{e2:?}");
    stream.synchronize().unwrap();

    // Still usable, and nothing was queued by the refusals.
    shared.copy_from_device_async(&dev, &stream).unwrap();
    assert_eq!(&*shared.lock().unwrap(), &words(64, 65)[..]);
}
