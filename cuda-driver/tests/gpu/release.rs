//! GPU tests: the driver behaviours the crate's release mechanism relies on.
//!
//! Memory that is not stream-ordered is released by a call that the crate documents as
//! waiting for device work still using it (`cuMemFree_v2` for device, pitched and managed
//! memory). Views of such memory may be used on any stream of their context, so the
//! soundness of dropping such an owner while work queued through its views is pending rests
//! on that wait. These tests prove it on the GPU: work is queued on a non-blocking stream
//! behind a kernel that sleeps, the owner is dropped, and when the drop returns the stream
//! must be idle and the memory the work wrote must not be a later allocation's.
//!
//! `// SAFETY:` comments in `cuda-driver/src` that rely on these waits name these tests.

use cuda_driver::prelude::*;
use cuda_driver::{Context, DeviceBuffer, LaunchConfig, Module, Pitched2D, Stream, StreamFlags};

use crate::common::TEST_KERNELS;

/// How long the kernel queued in front of the work sleeps: long enough that a release that
/// did not wait returns well before the stream is idle.
const SLEEP_NS: u32 = 200_000_000;

/// Queues `sleep_ns(SLEEP_NS)` on `stream`, so that what is queued after it is still pending
/// for a while.
fn queue_sleep(module: &Module, stream: &Stream) {
    let f = module.function("sleep_ns").unwrap();
    let cfg = LaunchConfig::new(1u32, 1u32);
    // SAFETY: sleep_ns(unsigned ns) takes one u32 and touches no memory.
    unsafe { f.launch(stream, &cfg, (&SLEEP_NS,)) }.unwrap();
}

/// After `drop_owner` returns, the stream must be idle: the release waited for the work.
/// Then a new allocation of the same size, written with zeros, must keep them after the
/// stream has been synchronised: the pending memset did not land in it.
fn assert_release_waited(ctx: &Context, stream: &Stream, words: usize) {
    assert!(
        stream.query().unwrap(),
        "the release returned while work queued through the owner's views was still pending"
    );
    let mut victim = DeviceBuffer::<u32>::new(ctx, words).unwrap();
    victim.copy_from_host(&vec![0u32; words]).unwrap();
    stream.synchronize().unwrap();
    ctx.synchronize().unwrap();
    assert!(victim.to_vec().unwrap().iter().all(|&w| w == 0));
}

#[gpu_test]
fn cu_mem_free_waits_for_work_queued_through_views_on_another_stream() {
    let ctx = gpu_exclusive_or_skip!();
    let module = Module::load_data(&ctx, TEST_KERNELS).unwrap();
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let words = 4 << 20;
    let mut buf = DeviceBuffer::<u32>::new(&ctx, words).unwrap();
    queue_sleep(&module, &stream);
    buf.memset_async(0xABAB_ABABu32, &stream).unwrap();
    drop(buf);
    assert_release_waited(&ctx, &stream, words);
}

#[gpu_test]
fn cu_mem_free_of_pitched_memory_waits_for_work_queued_on_another_stream() {
    let ctx = gpu_exclusive_or_skip!();
    let module = Module::load_data(&ctx, TEST_KERNELS).unwrap();
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let (width, height) = (2048usize, 2048usize);
    let mut pitched = Pitched2D::<u32>::new(&ctx, width, height).unwrap();
    queue_sleep(&module, &stream);
    pitched
        .view_mut()
        .memset_2d_async(0xABAB_ABABu32, &stream)
        .unwrap();
    drop(pitched);
    assert_release_waited(&ctx, &stream, width * height);
}
