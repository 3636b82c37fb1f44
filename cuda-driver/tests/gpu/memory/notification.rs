//! Asynchronous notifications and hardware decompression (the memory management group's
//! device-level calls).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use cuda_driver::memory::{AsyncNotification, Decompression};
use cuda_driver::prelude::*;
use cuda_driver::types::{DeviceAttribute, MemDecompressAlgorithm, StreamFlags};
use cuda_driver::Error;

#[gpu_test]
fn async_notifications_register_and_unregister_on_drop_and_by_hand() {
    let ctx = gpu_or_skip!();
    let device = ctx.device();
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let first = device
        .register_async_notification(move |_: AsyncNotification| {
            c.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    assert_eq!(first.device(), device);
    // A second registration on the same device, from another thread, dropped there.
    let second = std::thread::spawn(move || {
        device
            .register_async_notification(|_| panic!("no notification is expected"))
            .unwrap()
    })
    .join()
    .unwrap();
    let drops = cuda_driver::error::drop_error_count();
    std::thread::spawn(move || drop(second)).join().unwrap();
    first.unregister().unwrap();
    assert_eq!(cuda_driver::error::drop_error_count(), drops);
    // Nothing went over budget in this test.
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    // The context is still usable.
    let buf = DeviceBuffer::from_slice(&ctx, &[1u32, 2, 3]).unwrap();
    assert_eq!(buf.to_vec().unwrap(), [1, 2, 3]);
}

#[gpu_test]
fn decompression_is_refused_clearly_where_the_gpu_has_no_engine_and_checks_its_inputs() {
    let ctx = gpu_or_skip!();
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let src = DeviceBuffer::from_slice(&ctx, &[0u8; 64]).unwrap();
    let mut dst = DeviceBuffer::<u8>::zeroed(&ctx, 256).unwrap();
    let mut actual = DeviceBuffer::<u32>::zeroed(&ctx, 1).unwrap();
    // An empty batch does nothing, whatever the GPU.
    stream.decompress_batch(&mut []).unwrap();
    let mask = ctx
        .device()
        .attribute(DeviceAttribute::MEM_DECOMPRESS_ALGORITHM_MASK)
        .unwrap();
    let mut ops = [Decompression {
        src: src.as_view(),
        dst: dst.as_view_mut(),
        actual: actual.as_view_mut(),
        algo: MemDecompressAlgorithm::ALGORITHM_DEFLATE,
    }];
    let r = stream.decompress_batch(&mut ops);
    if mask == 0 {
        // H100/H200: no decompression engine, refused before the driver.
        assert!(
            matches!(r, Err(Error::FeatureUnsupported { attribute, .. })
                if attribute == "CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK"),
            "{r:?}"
        );
    } else {
        // Garbage input on a GPU with the engine: whatever the driver says, the stream and
        // the context stay usable and nothing is written past the views.
        let _ = r.and_then(|()| stream.synchronize());
    }
    // No algorithm, or two at once, is refused before the driver on every GPU.
    let mut none = [Decompression {
        src: src.as_view(),
        dst: dst.as_view_mut(),
        actual: actual.as_view_mut(),
        algo: MemDecompressAlgorithm::empty(),
    }];
    assert!(stream.decompress_batch(&mut none).is_err());
    // An `actual` with no room for the size word is refused.
    let mut no_room = [Decompression {
        src: src.as_view(),
        dst: dst.as_view_mut(),
        actual: actual.as_view_mut().into_slice_mut(0..0).unwrap(),
        algo: MemDecompressAlgorithm::ALGORITHM_DEFLATE,
    }];
    assert!(stream.decompress_batch(&mut no_room).is_err());
    stream.synchronize().unwrap();
    assert_eq!(dst.to_vec().unwrap(), vec![0u8; 256]);
}
