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
use cuda_driver::{
    memory::Pitched2D, types::StreamFlags, Context, DeviceBuffer, LaunchConfig, Module, Stream,
};

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

/// A created context on device 0 beside `ctx` (the primary context): two contexts, so that
/// peer copies cross a context boundary on one GPU.
fn second_context(ctx: &Context) -> Context {
    Context::new(ctx.device(), cuda_driver::types::ContextFlags::empty()).unwrap()
}

#[gpu_test]
fn dropping_the_source_of_a_peer_copy_on_another_contexts_stream_waits_for_the_copy() {
    let a = gpu_exclusive_or_skip!();
    let b = second_context(&a);
    let module_b = Module::load_data(&b, TEST_KERNELS).unwrap();
    let stream_b = Stream::new(&b, StreamFlags::NON_BLOCKING).unwrap();
    let words = 1 << 20;
    let src: Vec<u32> = (0..words as u32).collect();
    let src_a = DeviceBuffer::from_slice(&a, &src).unwrap();
    let mut dst_b = DeviceBuffer::<u32>::new(&b, words).unwrap();
    queue_sleep(&module_b, &stream_b);
    // On the destination's stream: the source (context a) is the foreign side.
    dst_b
        .copy_from_peer_async(&src_a.as_view(), &stream_b)
        .unwrap();
    drop(src_a);
    assert!(
        stream_b.query().unwrap(),
        "the source was released while a copy queued on another context's stream could \
         still read it"
    );
    assert_eq!(dst_b.to_vec().unwrap(), src);
}

#[gpu_test]
fn peer_copies_queue_on_a_stream_of_either_side_and_fence_the_other() {
    let a = gpu_exclusive_or_skip!();
    let b = second_context(&a);
    let module_a = Module::load_data(&a, TEST_KERNELS).unwrap();
    let stream_a = Stream::new(&a, StreamFlags::NON_BLOCKING).unwrap();
    let words = 1 << 20;
    let src: Vec<u32> = (0..words as u32).map(|x| x ^ 0x5A5A_5A5A).collect();
    let src_a = DeviceBuffer::from_slice(&a, &src).unwrap();
    let mut dst_b = DeviceBuffer::<u32>::new(&b, words).unwrap();
    queue_sleep(&module_a, &stream_a);
    // On the source's stream (simpleP2P copies GPU1 -> GPU0 on GPU1's stream): the
    // destination (context b) is the foreign side, and its release waits for the copy.
    dst_b
        .copy_from_peer_async(&src_a.as_view(), &stream_a)
        .unwrap();
    drop(dst_b);
    assert!(
        stream_a.query().unwrap(),
        "the destination was released while a copy queued on another context's stream could \
         still write it"
    );
    // And the data arrives, both ways, on the source side's stream.
    let mut dst_b = DeviceBuffer::<u32>::new(&b, words).unwrap();
    dst_b
        .copy_from_peer_async(&src_a.as_view(), &stream_a)
        .unwrap();
    stream_a.synchronize().unwrap();
    assert_eq!(dst_b.to_vec().unwrap(), src);
    let mut back_a = DeviceBuffer::<u32>::new(&a, words).unwrap();
    back_a
        .copy_from_peer_async(&dst_b.as_view(), &stream_a)
        .unwrap();
    stream_a.synchronize().unwrap();
    assert_eq!(back_a.to_vec().unwrap(), src);
}

#[gpu_test]
fn a_peer_copy_on_a_stream_of_neither_side_is_refused() {
    let a = gpu_exclusive_or_skip!();
    let b = second_context(&a);
    let c = second_context(&a);
    let stream_c = Stream::new(&c, StreamFlags::NON_BLOCKING).unwrap();
    let src_a = DeviceBuffer::<u32>::new(&a, 16).unwrap();
    let mut dst_b = DeviceBuffer::<u32>::new(&b, 16).unwrap();
    let r = dst_b.copy_from_peer_async(&src_a.as_view(), &stream_c);
    assert!(
        matches!(r, Err(cuda_driver::Error::ContextMismatch { .. })),
        "{r:?}"
    );
    // The contexts are still usable.
    dst_b.copy_from_peer(&src_a.as_view()).unwrap();
}

#[gpu_test]
fn unloading_a_module_waits_for_work_queued_through_its_globals() {
    let ctx = gpu_exclusive_or_skip!();
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    // The sleeping kernel comes from a module of its own, kept loaded until it has run.
    let sleeper = Module::load_data(&ctx, TEST_KERNELS).unwrap();
    let module = Module::load_data(&ctx, TEST_KERNELS).unwrap();
    let mut counter = module.global::<i32>("dev_counter").unwrap();
    queue_sleep(&sleeper, &stream);
    counter.memset_async(7u32, &stream).unwrap();
    // The last handles: the unload frees the variable the memset is queued to write.
    drop(counter);
    drop(module);
    assert!(
        stream.query().unwrap(),
        "the module was unloaded while work queued through its global was still pending"
    );
    stream.synchronize().unwrap();
}

#[gpu_test]
fn unloading_a_library_waits_for_work_queued_through_its_globals() {
    let ctx = gpu_exclusive_or_skip!();
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let library = cuda_driver::Library::load_data(TEST_KERNELS).unwrap();
    let mut counter = library.global::<i32>("dev_counter", &ctx).unwrap();
    let sleeper = Module::load_data(&ctx, TEST_KERNELS).unwrap();
    queue_sleep(&sleeper, &stream);
    counter.memset_async(7u32, &stream).unwrap();
    drop(counter);
    drop(library);
    assert!(
        stream.query().unwrap(),
        "the library was unloaded while work queued through its global was still pending"
    );
    stream.synchronize().unwrap();
}

#[gpu_test]
fn cu_mem_free_of_managed_memory_waits_for_work_queued_on_its_stream() {
    let ctx = gpu_exclusive_or_skip!();
    let module = Module::load_data(&ctx, TEST_KERNELS).unwrap();
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let words = 1 << 20;
    let mut managed = cuda_driver::memory::ManagedBuffer::<u32>::zeroed(
        &stream,
        words,
        cuda_driver::types::AttachFlags::GLOBAL,
    )
    .unwrap();
    queue_sleep(&module, &stream);
    managed.memset_async(0xABAB_ABABu32, &stream).unwrap();
    drop(managed);
    assert_release_waited(&ctx, &stream, words);
}

#[gpu_test]
fn cu_array_destroy_waits_for_a_copy_queued_on_another_stream() {
    let ctx = gpu_exclusive_or_skip!();
    let module = Module::load_data(&ctx, TEST_KERNELS).unwrap();
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let (w, h) = (1024usize, 1024usize);
    let src = DeviceBuffer::from_slice(&ctx, &vec![1.0f32; w * h]).unwrap();
    let mut arr = cuda_driver::memory::Array::<f32>::new_2d(
        &ctx,
        w,
        h,
        cuda_driver::types::Array3DFlags::empty(),
    )
    .unwrap();
    queue_sleep(&module, &stream);
    cuda_driver::memory::Copy2D::new(w, h)
        .from_device(src.as_view(), w)
        .to_array(&mut arr)
        .run_async(&stream)
        .unwrap();
    drop(arr);
    assert!(
        stream.query().unwrap(),
        "cuArrayDestroy returned while a copy into the array was still pending"
    );
    stream.synchronize().unwrap();
    ctx.synchronize().unwrap();
}

#[gpu_test]
fn cu_mipmapped_array_destroy_waits_for_a_copy_queued_on_another_stream() {
    let ctx = gpu_exclusive_or_skip!();
    let module = Module::load_data(&ctx, TEST_KERNELS).unwrap();
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let side = 1024usize;
    let src = DeviceBuffer::from_slice(&ctx, &vec![1.0f32; side * side]).unwrap();
    let mut mip = cuda_driver::memory::MipmappedArray::<f32>::new_2d(
        &ctx,
        side,
        side,
        2,
        cuda_driver::types::Array3DFlags::empty(),
    )
    .unwrap();
    queue_sleep(&module, &stream);
    cuda_driver::memory::Copy2D::new(side, side)
        .from_device(src.as_view(), side)
        .to_array(mip.level_mut(0).unwrap())
        .run_async(&stream)
        .unwrap();
    drop(mip);
    assert!(
        stream.query().unwrap(),
        "cuMipmappedArrayDestroy returned while a copy into a level was still pending"
    );
    stream.synchronize().unwrap();
    ctx.synchronize().unwrap();
}
