//! GPU tests: stream memory operations (Stream Memory Operations): waits and writes of 32-
//! and 64-bit values, batches (too many refused), and their operands of stream-ordered memory
//! kept on its stream.

use cuda_driver::prelude::*;
use cuda_driver::{
    stream_memop::MemOpBatch, types::ContextFlags, types::StreamFlags, types::StreamWaitValueFlags,
    types::StreamWriteValueFlags, Context, DeviceBuffer, Error, Stream,
};

use crate::common::stream;

#[gpu_test]
fn write_and_wait_values() {
    let ctx = gpu_or_skip!();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let mut flag = DeviceBuffer::<u32>::zeroed(&ctx, 1).unwrap();
    let mut data = DeviceBuffer::<u32>::zeroed(&ctx, 4).unwrap();
    s.write_value_u32(&mut flag.as_view_mut(), 42, StreamWriteValueFlags::empty())
        .unwrap();
    s.wait_value_u32(&flag.as_view(), 42, StreamWaitValueFlags::EQ)
        .unwrap();
    data.memset_async(9u32, &s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(flag.to_vec().unwrap(), [42]);
    assert_eq!(data.to_vec().unwrap(), [9; 4]);
    let mut w64 = DeviceBuffer::<u64>::zeroed(&ctx, 1).unwrap();
    match s.write_value_u64(
        &mut w64.as_view_mut(),
        u64::MAX - 1,
        StreamWriteValueFlags::empty(),
    ) {
        Err(Error::FeatureUnsupported { .. }) => {}
        r => {
            r.unwrap();
            s.wait_value_u64(&w64.as_view(), u64::MAX - 1, StreamWaitValueFlags::GEQ)
                .unwrap();
            s.synchronize().unwrap();
            assert_eq!(w64.to_vec().unwrap(), [u64::MAX - 1]);
        }
    }
    // A batch: write 1 then 2 to two words.
    let mut a = DeviceBuffer::<u32>::zeroed(&ctx, 1).unwrap();
    let mut b = DeviceBuffer::<u32>::zeroed(&ctx, 1).unwrap();
    let (mut va, mut vb) = (a.as_view_mut(), b.as_view_mut());
    let mut batch = MemOpBatch::new();
    batch
        .write_u32(&mut va, 1, StreamWriteValueFlags::empty())
        .unwrap();
    batch
        .write_u32(&mut vb, 2, StreamWriteValueFlags::empty())
        .unwrap();
    s.batch_mem_ops(&mut batch).unwrap();
    s.synchronize().unwrap();
    drop(batch);
    assert_eq!(
        (a.to_vec().unwrap(), b.to_vec().unwrap()),
        (vec![1], vec![2])
    );
    // Bad input: an empty view.
    let empty = DeviceBuffer::<u32>::zeroed(&ctx, 0).unwrap();
    assert!(matches!(
        s.wait_value_u32(&empty.as_view(), 0, StreamWaitValueFlags::GEQ),
        Err(Error::OutOfBounds { .. })
    ));
    s.synchronize().unwrap();
}

/// Issue 23: a batch of more than `MAX_BATCH_MEM_OPS` operations is refused before the
/// driver is called (`ResourceExhausted`), a full batch is either run or refused by the
/// driver, and the stream stays usable either way.
#[gpu_test]
fn a_batch_of_too_many_mem_ops_is_refused_and_the_stream_stays_usable() {
    use cuda_driver::{stream_memop::MAX_BATCH_MEM_OPS, types::StreamMemoryBarrierFlags};
    let ctx = gpu_or_skip!();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let mut batch = MemOpBatch::new();
    for _ in 0..=MAX_BATCH_MEM_OPS {
        batch.barrier(StreamMemoryBarrierFlags::GPU);
    }
    match s.batch_mem_ops(&mut batch) {
        Err(Error::ResourceExhausted {
            asked, available, ..
        }) => {
            assert_eq!(
                (asked, available),
                (MAX_BATCH_MEM_OPS + 1, MAX_BATCH_MEM_OPS)
            );
        }
        r => panic!("a batch of {} operations: {r:?}", MAX_BATCH_MEM_OPS + 1),
    }
    let mut full = MemOpBatch::new();
    for _ in 0..MAX_BATCH_MEM_OPS {
        full.barrier(StreamMemoryBarrierFlags::GPU);
    }
    match s.batch_mem_ops(&mut full) {
        Ok(()) => crate::common::note("the driver ran a full batch"),
        Err(e) => crate::common::note(format!("the driver refused a full batch: {e}")),
    }
    s.synchronize().unwrap();
    let mut flag = DeviceBuffer::<u32>::zeroed(&ctx, 1).unwrap();
    s.write_value_u32(&mut flag.as_view_mut(), 7, StreamWriteValueFlags::empty())
        .unwrap();
    s.synchronize().unwrap();
    assert_eq!(flag.to_vec().unwrap(), [7]);
}

#[gpu_test]
fn stream_memory_operations_on_stream_ordered_memory_stay_on_its_stream() {
    use cuda_driver::{
        stream_memop::MemOpBatch, types::StreamWaitValueFlags, types::StreamWriteValueFlags,
    };
    let ctx = gpu_or_skip!();
    let (home, other) = (stream(&ctx), stream(&ctx));
    let mut word = DeviceBuffer::<u32>::new_async(&home, 1).unwrap();
    word.memset_async(0u32, &home).unwrap();
    // On another stream: refused before the driver, for single operations and batches.
    let e = other
        .write_value_u32(&mut word.as_view_mut(), 7, StreamWriteValueFlags::empty())
        .unwrap_err();
    assert!(matches!(e, Error::StreamMismatch { .. }), "{e:?}");
    let e = other
        .wait_value_u32(&word.as_view(), 0, StreamWaitValueFlags::GEQ)
        .unwrap_err();
    assert!(matches!(e, Error::StreamMismatch { .. }), "{e:?}");
    {
        let mut v = word.as_view_mut();
        let mut batch = MemOpBatch::new();
        batch
            .write_u32(&mut v, 9, StreamWriteValueFlags::empty())
            .unwrap();
        let e = other.batch_mem_ops(&mut batch).unwrap_err();
        assert!(matches!(e, Error::StreamMismatch { .. }), "{e:?}");
        // On its own stream the check lets it through (whether the driver takes memory
        // operations on pool memory is its own matter: driver 580 answers
        // CUDA_ERROR_INVALID_VALUE).
        let r = home.batch_mem_ops(&mut batch);
        assert!(!matches!(r, Err(Error::StreamMismatch { .. })), "{r:?}");
    }
    let r = home.write_value_u32(&mut word.as_view_mut(), 5, StreamWriteValueFlags::empty());
    assert!(!matches!(r, Err(Error::StreamMismatch { .. })), "{r:?}");
    home.synchronize().unwrap();
    // A view of another context's memory is refused too.
    let other_ctx = Context::new(ctx.device(), ContextFlags::empty()).unwrap();
    let mut foreign = DeviceBuffer::<u32>::zeroed(&other_ctx, 1).unwrap();
    let e = home
        .write_value_u32(
            &mut foreign.as_view_mut(),
            1,
            StreamWriteValueFlags::empty(),
        )
        .unwrap_err();
    assert!(matches!(e, Error::ContextMismatch { .. }), "{e:?}");
}
