//! GPU tests: copies and memsets: views, device to device, host to device on a stream,
//! memsets of 8, 16 and 32 bits, length mismatches and out-of-bounds copies refused, blocking
//! copies against blocking and non-blocking streams, unified and batched copies, copies
//! between contexts (cuMemcpyPeer, cuMemcpy3DPeer), 2D and 3D copies between every kind of
//! memory, pitched memory by rows, unaligned 2D copies.

use std::time::Duration;

use cuda_driver::memory::LayoutError;
use cuda_driver::prelude::*;
use cuda_driver::{
    memory::Array, memory::Copy2D, memory::Copy3D, memory::Pitched2D, types::Array3DFlags,
    types::ContextFlags, types::ErrorCode, types::PinnedFlags, types::StreamFlags, Context, Device,
    DeviceBuffer, Error, PinnedBuffer, Stream,
};

use crate::common::{
    floats_by_halves, floats_by_quarters, skip, still_usable, stream, unsupported,
};
use crate::memory::{block, floats, words};

#[gpu_test]
fn views_copy_exactly_their_elements() {
    let ctx = gpu_or_skip!();
    let data = words(1000, 3);
    let mut buf = DeviceBuffer::from_slice(&ctx, &data).unwrap();
    let patch = words(100, 4);
    buf.slice_mut(300..400)
        .unwrap()
        .copy_from_host(&patch)
        .unwrap();
    let mut expect = data.clone();
    expect[300..400].copy_from_slice(&patch);
    assert_eq!(buf.to_vec().unwrap(), expect);

    // Reads of sub-views, and views of views.
    let view = buf.slice(250..450).unwrap();
    assert_eq!(view.len(), 200);
    assert_eq!(view.as_raw(), buf.as_raw() + 250 * 4);
    assert_eq!(view.to_vec().unwrap(), expect[250..450]);
    let inner = view.slice(50..=51).unwrap();
    let mut two = [0u32; 2];
    inner.copy_to_host(&mut two).unwrap();
    assert_eq!(two, [expect[300], expect[301]]);

    // Disjoint mutable halves: copy the second half over the first.
    let mut all = buf.as_view_mut();
    let (mut lo, hi) = all.split_at_mut(500).unwrap();
    lo.copy_from_device(&hi.as_view()).unwrap();
    let got = buf.to_vec().unwrap();
    assert_eq!(got[..500], expect[500..]);
    assert_eq!(got[500..], expect[500..]);
}

#[gpu_test]
fn device_to_device_copies_blocking_and_async() {
    let ctx = gpu_or_skip!();
    let data = floats(4096, 5);
    let src = DeviceBuffer::from_slice(&ctx, &data).unwrap();
    let mut dst = DeviceBuffer::<f32>::zeroed(&ctx, 4096).unwrap();
    dst.copy_from_device(&src.as_view()).unwrap();
    assert_eq!(dst.to_vec().unwrap(), data);

    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let mut dst2 = DeviceBuffer::<f32>::zeroed(&ctx, 1024).unwrap();
    dst2.copy_from_device_async(&src.slice(1024..2048).unwrap(), &stream)
        .unwrap();
    dst2.slice_mut(..16)
        .unwrap()
        .copy_from_device_async(&src.slice(4080..).unwrap(), &stream)
        .unwrap();
    stream.synchronize().unwrap();
    let got = dst2.to_vec().unwrap();
    assert_eq!(got[..16], data[4080..]);
    assert_eq!(got[16..], data[1040..2048]);
}

#[gpu_test]
fn async_host_copies_on_a_stream() {
    let ctx = gpu_or_skip!();
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let data = words(1 << 16, 6);
    let src = PinnedBuffer::from_slice(&ctx, &data, PinnedFlags::empty()).unwrap();
    let mut dst = PinnedBuffer::<u32>::zeroed(&ctx, data.len(), PinnedFlags::empty()).unwrap();
    let mut buf = DeviceBuffer::<u32>::new(&ctx, data.len()).unwrap();
    // SAFETY: neither host buffer is touched until the stream is synchronised.
    unsafe {
        buf.copy_from_host_async(&src, &stream).unwrap();
        buf.copy_to_host_async(&mut dst, &stream).unwrap();
    }
    stream.synchronize().unwrap();
    assert_eq!(&dst[..], &data[..]);

    // Views, and pageable memory (the driver stages it).
    let mut pageable = vec![0u32; 100];
    let patch = words(100, 7);
    // SAFETY: `patch` and `pageable` are not touched until the stream is synchronised.
    unsafe {
        buf.slice_mut(10..110)
            .unwrap()
            .copy_from_host_async(&patch, &stream)
            .unwrap();
        buf.slice(5..105)
            .unwrap()
            .copy_to_host_async(&mut pageable, &stream)
            .unwrap();
    }
    stream.synchronize().unwrap();
    assert_eq!(pageable[..5], data[5..10]);
    assert_eq!(pageable[5..], patch[..95]);
}

#[gpu_test]
fn memsets_of_8_16_and_32_bits() {
    let ctx = gpu_or_skip!();
    let mut bytes = DeviceBuffer::<u8>::new(&ctx, 1000).unwrap();
    bytes.memset(0xA5u8).unwrap();
    assert_eq!(bytes.to_vec().unwrap(), vec![0xA5u8; 1000]);
    bytes.slice_mut(10..20).unwrap().memset(0x3Cu8).unwrap();
    let got = bytes.to_vec().unwrap();
    assert!(got[..10].iter().all(|&b| b == 0xA5));
    assert!(got[10..20].iter().all(|&b| b == 0x3C));
    assert!(got[20..].iter().all(|&b| b == 0xA5));

    let mut halves = DeviceBuffer::<[u16; 3]>::new(&ctx, 100).unwrap();
    halves.memset(0xBEEFu16).unwrap();
    assert_eq!(halves.to_vec().unwrap(), vec![[0xBEEFu16; 3]; 100]);

    let mut floats = DeviceBuffer::<f32>::new(&ctx, 1000).unwrap();
    floats.memset(555.0f32.to_bits()).unwrap();
    assert_eq!(floats.to_vec().unwrap(), vec![555.0f32; 1000]);
    let mut wide = DeviceBuffer::<f64>::new(&ctx, 10).unwrap();
    wide.memset(0x4000_0000u32).unwrap();
    assert_eq!(
        wide.to_vec().unwrap(),
        vec![f64::from_bits(0x4000_0000_4000_0000); 10]
    );

    // Async, on a stream.
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    bytes.memset_async(0x11u8, &stream).unwrap();
    halves
        .slice_mut(50..)
        .unwrap()
        .memset_async(0x1234u16, &stream)
        .unwrap();
    floats
        .slice_mut(..500)
        .unwrap()
        .memset_async(7.5f32.to_bits(), &stream)
        .unwrap();
    stream.synchronize().unwrap();
    assert_eq!(bytes.to_vec().unwrap(), vec![0x11u8; 1000]);
    let h = halves.to_vec().unwrap();
    assert_eq!(h[..50], vec![[0xBEEFu16; 3]; 50]);
    assert_eq!(h[50..], vec![[0x1234u16; 3]; 50]);
    let f = floats.to_vec().unwrap();
    assert!(f[..500].iter().all(|&x| x == 7.5));
    assert!(f[500..].iter().all(|&x| x == 555.0));

    // A width that does not divide the element size is refused.
    assert!(matches!(
        bytes.memset(1u16),
        Err(Error::Layout(LayoutError::MemsetWidth { .. }))
    ));
    assert!(matches!(
        halves.memset_async(1u32, &stream),
        Err(Error::Layout(LayoutError::MemsetWidth { .. }))
    ));
}

#[gpu_test]
fn length_mismatches_are_refused_before_any_call() {
    let ctx = gpu_or_skip!();
    let data = words(8, 8);
    let mut buf = DeviceBuffer::from_slice(&ctx, &data).unwrap();
    let e = buf.copy_from_host(&[1, 2, 3]).unwrap_err();
    assert!(
        matches!(
            e,
            Error::LengthMismatch {
                what: "copy_from_host",
                dst: 8,
                src: 3
            }
        ),
        "{e:?}"
    );
    let mut nine = [0u32; 9];
    let e = buf.copy_to_host(&mut nine).unwrap_err();
    assert!(
        matches!(e, Error::LengthMismatch { dst: 9, src: 8, .. }),
        "{e:?}"
    );
    let small = DeviceBuffer::<u32>::new(&ctx, 4).unwrap();
    let e = buf.copy_from_device(&small.as_view()).unwrap_err();
    assert!(
        matches!(e, Error::LengthMismatch { dst: 8, src: 4, .. }),
        "{e:?}"
    );
    // Nothing was written.
    assert_eq!(buf.to_vec().unwrap(), data);
}

#[gpu_test]
fn copies_between_contexts_with_cu_memcpy_peer() {
    let ctx = gpu_exclusive_or_skip!();
    let data = words(2048, 19);
    let src = DeviceBuffer::from_slice(&ctx, &data).unwrap();

    // Two contexts of one device.
    let other = Context::new(ctx.device(), ContextFlags::SCHED_AUTO).unwrap();
    let mut dst = DeviceBuffer::<u32>::zeroed(&other, 2048).unwrap();
    dst.copy_from_peer(&src.as_view()).unwrap();
    assert_eq!(dst.to_vec().unwrap(), data);
    let stream = Stream::new(&other, StreamFlags::NON_BLOCKING).unwrap();
    dst.memset_async(0u32, &stream).unwrap();
    dst.slice_mut(1000..)
        .unwrap()
        .copy_from_peer_async(&src.slice(..1048).unwrap(), &stream)
        .unwrap();
    stream.synchronize().unwrap();
    let got = dst.to_vec().unwrap();
    assert!(got[..1000].iter().all(|&x| x == 0));
    assert_eq!(got[1000..], data[..1048]);
    let e = dst.copy_from_peer(&src.slice(1..).unwrap()).unwrap_err();
    assert!(matches!(
        e,
        Error::LengthMismatch {
            dst: 2048,
            src: 2047,
            ..
        }
    ));

    // Two devices, where there are two.
    if Device::count().unwrap() >= 2 {
        let dev1 = Device::get(1).unwrap();
        let ctx1 = dev1.primary_context().unwrap();
        if ctx.device().can_access_peer(dev1).unwrap() {
            match ctx1.enable_peer_access(&ctx) {
                Ok(()) => {}
                Err(e) if e.code() == Some(ErrorCode::PEER_ACCESS_ALREADY_ENABLED) => {}
                Err(e) => panic!("{e}"),
            }
        }
        let mut far = DeviceBuffer::<u32>::zeroed(&ctx1, 2048).unwrap();
        far.copy_from_peer(&src.as_view()).unwrap();
        assert_eq!(far.to_vec().unwrap(), data);
        let mut back = DeviceBuffer::<u32>::zeroed(&ctx, 2048).unwrap();
        back.copy_from_peer(&far.as_view()).unwrap();
        assert_eq!(back.to_vec().unwrap(), data);
    }
}

/// The rule for blocking operations (issue #23): a blocking copy of memory not ordered on a
/// stream runs on the default stream, so it is ordered after the work of blocking streams but
/// not after that of `NON_BLOCKING` streams, whose work it sees once the stream is
/// synchronised.
#[gpu_test]
fn blocking_copies_follow_blocking_streams_not_non_blocking_ones() {
    let ctx = gpu_exclusive_or_skip!();
    let mut buf = DeviceBuffer::<u32>::zeroed(&ctx, 1 << 20).unwrap();
    if !cfg!(feature = "per-thread-default-stream") {
        // A blocking stream: the copy on the (legacy) default stream waits for its memset,
        // held back a while so that a copy not ordered after it would read zeros.
        let blocking = Stream::new(&ctx, StreamFlags::DEFAULT).unwrap();
        let gate = block(&blocking);
        buf.memset_async(7u32, &blocking).unwrap();
        let opener = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            drop(gate);
        });
        assert!(
            buf.to_vec().unwrap().iter().all(|&x| x == 7),
            "a blocking copy was not ordered after a blocking stream's memset"
        );
        opener.join().unwrap();
    } else {
        buf.memset(7u32).unwrap();
    }
    // A non-blocking stream: its memset is held back until the copy has returned, which it
    // does without waiting (a copy that waited would see the memset once the gate gives up).
    let non_blocking = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let gate = block(&non_blocking);
    buf.memset_async(9u32, &non_blocking).unwrap();
    let before_sync = buf.to_vec().unwrap();
    drop(gate);
    assert!(
        before_sync.iter().all(|&x| x == 7),
        "the blocking copy waited for a non-blocking stream's work"
    );
    // Once that stream is synchronised, the blocking copy sees its work.
    non_blocking.synchronize().unwrap();
    assert!(buf.to_vec().unwrap().iter().all(|&x| x == 9));
}

#[gpu_test]
fn pitched_memory_copies_and_memsets_by_rows() {
    let ctx = gpu_or_skip!();
    let (w, h) = (100usize, 37usize);
    let mut p = Pitched2D::<f32>::new(&ctx, w, h).unwrap();
    assert!(p.pitch() >= w * 4 && p.pitch() % 4 == 0);
    let host = floats_by_halves(w * h, 3);
    Copy2D::new(w, h)
        .from_host(&host, w)
        .to_pitched(p.view_mut())
        .run()
        .unwrap();
    let mut row = vec![0.0f32; w];
    p.view().row(5).unwrap().copy_to_host(&mut row).unwrap();
    assert_eq!(row, &host[5 * w..6 * w]);
    // A 2D memset of a sub-rectangle leaves the rest alone.
    p.view_mut()
        .into_rect(10, 3, 20, 4)
        .unwrap()
        .memset_2d(7.0f32.to_bits())
        .unwrap();
    let mut back = vec![0.0f32; w * h];
    Copy2D::new(w, h)
        .from_pitched(p.view())
        .to_host(&mut back, w)
        .run()
        .unwrap();
    for y in 0..h {
        for x in 0..w {
            let inside = (10..30).contains(&x) && (3..7).contains(&y);
            let want = if inside { 7.0 } else { host[y * w + x] };
            assert_eq!(back[y * w + x], want, "({x}, {y})");
        }
    }
    // 8- and 16-bit memsets, on a stream.
    let mut b = Pitched2D::<u16>::new(&ctx, 9, 4).unwrap();
    let s = stream(&ctx);
    b.view_mut().memset_2d_async(0xABCDu16, &s).unwrap();
    s.synchronize().unwrap();
    let mut out = vec![0u16; 36];
    Copy2D::new(9, 4)
        .from_pitched(b.view())
        .to_host(&mut out, 9)
        .run()
        .unwrap();
    assert!(out.iter().all(|&v| v == 0xABCD));
    b.view_mut().memset_2d(0x11u8).unwrap();
    Copy2D::new(9, 4)
        .from_pitched(b.view())
        .to_host(&mut out, 9)
        .run()
        .unwrap();
    assert!(out.iter().all(|&v| v == 0x1111));
    assert!(matches!(
        Pitched2D::<f32>::new(&ctx, 0, 3),
        Err(Error::Layout(LayoutError::ZeroExtent { .. }))
    ));
}

#[gpu_test]
fn copies_between_every_kind_keep_the_data() {
    let ctx = gpu_or_skip!();
    let (w, h, d) = (24usize, 10usize, 3usize);
    let host = floats_by_halves(w * h * d, 9);
    let s = stream(&ctx);
    // host -> linear device (3D, padded pitch 32, 12 rows per slice)
    let mut lin = DeviceBuffer::<f32>::zeroed(&ctx, 32 * 12 * d).unwrap();
    Copy3D::new(w, h, d)
        .from_host(&host, w, h)
        .to_device(lin.as_view_mut(), 32, 12)
        .run()
        .unwrap();
    // linear -> 3D array, on a stream
    let mut arr = Array::<f32>::new_3d(&ctx, w, h, d, Array3DFlags::empty()).unwrap();
    Copy3D::new(w, h, d)
        .from_device(lin.as_view(), 32, 12)
        .to_array(&mut arr)
        .run_async(&s)
        .unwrap();
    s.synchronize().unwrap();
    // array -> array (a sub-box), then array -> host
    let mut arr2 = Array::<f32>::new_3d(&ctx, w, h, d, Array3DFlags::empty()).unwrap();
    Copy3D::new(w, h, d)
        .from_array(&arr)
        .to_array(&mut arr2)
        .run()
        .unwrap();
    let mut back = vec![0.0f32; w * h * d];
    arr2.copy_to_host(&mut back).unwrap();
    assert_eq!(back, host);
    // A 2D window: rows 2..6, columns 4..20 of slice 0 into a pitched image at (1, 1).
    let mut p = Pitched2D::<f32>::new(&ctx, 20, 8).unwrap();
    p.view_mut().memset_2d(0u32).unwrap();
    Copy2D::new(16, 4)
        .from_array(&arr)
        .src_origin(4, 2)
        .to_pitched(p.view_mut())
        .dst_origin(1, 1)
        .run()
        .unwrap();
    let mut img = vec![0.0f32; 20 * 8];
    Copy2D::new(20, 8)
        .from_pitched(p.view())
        .to_host(&mut img, 20)
        .run()
        .unwrap();
    for y in 0..8 {
        for x in 0..20 {
            let inside = (1..17).contains(&x) && (1..5).contains(&y);
            let want = if inside {
                host[(y - 1 + 2) * w + (x - 1 + 4)]
            } else {
                0.0
            };
            assert_eq!(img[y * 20 + x], want, "({x}, {y})");
        }
    }
    // Peer form within one context works too.
    let mut arr3 = Array::<f32>::new_3d(&ctx, w, h, d, Array3DFlags::empty()).unwrap();
    Copy3D::new(w, h, d)
        .from_array(&arr2)
        .to_array(&mut arr3)
        .run_peer()
        .unwrap();
    arr3.copy_to_host(&mut back).unwrap();
    assert_eq!(back, host);
}

#[gpu_test]
fn copies_out_of_bounds_are_refused_before_the_driver() {
    let ctx = gpu_or_skip!();
    let mut arr = Array::<f32>::new_2d(&ctx, 16, 8, Array3DFlags::empty()).unwrap();
    let host = vec![1.0f32; 16 * 8];
    let e = Copy2D::new(16, 8)
        .from_host(&host, 16)
        .to_array(&mut arr)
        .dst_origin(1, 0)
        .run()
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Layout(LayoutError::RegionOutOfBounds {
                operand: "destination",
                axis: "x",
                ..
            })
        ),
        "{e:?}"
    );
    let e = Copy2D::new(16, 9)
        .from_host(&host, 16)
        .to_array(&mut arr)
        .run()
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Layout(LayoutError::RegionOutOfBounds {
                operand: "source",
                ..
            })
        ),
        "{e:?}"
    );
    let buf = DeviceBuffer::<f32>::zeroed(&ctx, 100).unwrap();
    let e = Copy2D::new(10, 11)
        .from_device(buf.as_view(), 10)
        .to_array(&mut arr)
        .run()
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Layout(LayoutError::RegionOutOfBounds {
                operand: "source",
                axis: "bytes",
                ..
            })
        ),
        "{e:?}"
    );
    let e = Copy2D::new(11, 2)
        .from_device(buf.as_view(), 10)
        .to_array(&mut arr)
        .run()
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Layout(LayoutError::RegionOutOfBounds {
                axis: "x (bytes)",
                ..
            })
        ),
        "{e:?}"
    );
    // Host memory on a stream without the unsafe form.
    let s = stream(&ctx);
    let e = Copy2D::new(16, 8)
        .from_host(&host, 16)
        .to_array(&mut arr)
        .run_async(&s)
        .unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    still_usable(&ctx);
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
fn peer_3d_copies_move_data_between_contexts() {
    let ctx = gpu_or_skip!();
    let dev = ctx.device();
    let a = Context::new(dev, ContextFlags::SCHED_AUTO).unwrap();
    let b = Context::new(dev, ContextFlags::SCHED_AUTO).unwrap();
    let (w, h, d) = (20usize, 6usize, 3usize);
    let host = floats_by_quarters(w * h * d, 24);
    let src = DeviceBuffer::from_slice(&a, &host).unwrap();
    let mut arr = Array::<f32>::new_3d(&b, w, h, d, Array3DFlags::empty()).unwrap();
    // The one-context copy refuses operands of two contexts; the peer copy takes them.
    let e = Copy3D::new(w, h, d)
        .from_device(src.as_view(), w, h)
        .to_array(&mut arr)
        .run()
        .unwrap_err();
    assert!(matches!(e, Error::ContextMismatch { .. }), "{e:?}");
    Copy3D::new(w, h, d)
        .from_device(src.as_view(), w, h)
        .to_array(&mut arr)
        .run_peer()
        .unwrap();
    let mut back = vec![0.0f32; w * h * d];
    arr.copy_to_host(&mut back).unwrap();
    assert_eq!(back, host, "linear memory of A -> array of B");

    // A sub-box of B's array into linear memory of A, on a stream of A (the destination's).
    let (bw, bh, bd) = (w - 4, h - 2, d - 1);
    let mut dst = DeviceBuffer::<f32>::zeroed(&a, w * h * d).unwrap();
    let sa = stream(&a);
    Copy3D::new(bw, bh, bd)
        .from_array(&arr)
        .src_origin(4, 2, 1)
        .to_device(dst.as_view_mut(), w, h)
        .run_peer_async(&sa)
        .unwrap();
    sa.synchronize().unwrap();
    let got = dst.to_vec().unwrap();
    for z in 0..d {
        for y in 0..h {
            for x in 0..w {
                let want = if x < bw && y < bh && z < bd {
                    host[(z + 1) * w * h + (y + 2) * w + (x + 4)]
                } else {
                    0.0
                };
                assert_eq!(got[z * w * h + y * w + x], want, "({x}, {y}, {z})");
            }
        }
    }
    // Array to array across contexts, blocking.
    let mut arr_a = Array::<f32>::new_3d(&a, w, h, d, Array3DFlags::empty()).unwrap();
    Copy3D::new(w, h, d)
        .from_array(&arr)
        .to_array(&mut arr_a)
        .run_peer()
        .unwrap();
    back.fill(0.0);
    arr_a.copy_to_host(&mut back).unwrap();
    assert_eq!(back, host, "array of B -> array of A");
    // A stream of the source's context is refused: the copy runs on the destination's.
    let sb = stream(&b);
    let e = Copy3D::new(w, h, d)
        .from_array(&arr)
        .to_device(dst.as_view_mut(), w, h)
        .run_peer_async(&sb)
        .unwrap_err();
    assert!(matches!(e, Error::ContextMismatch { .. }), "{e:?}");
}
