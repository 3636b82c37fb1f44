//! GPU tests: unified addressing (Unified Addressing): pointer attributes of every kind of
//! memory, managed range attributes after advice and prefetches, batched prefetch and
//! discard.

use cuda_driver::prelude::*;
use cuda_driver::types::MemLocationType;
use cuda_driver::{
    memory::unified::PointerInfo, memory::ManagedBuffer, memory::MemLocation, types::AttachFlags,
    types::DeviceAttribute, types::ErrorCode, types::MemAdvice, types::MemRangeAttribute,
    types::MemoryType, types::PinnedFlags, types::StreamFlags, DeviceBuffer, PinnedBuffer, Stream,
};

use crate::child::pattern;
use crate::common::{note, skip, unsupported};

/// `CU_DEVICE_CPU`: the host, as a range attribute's device ordinal.
const DEVICE_CPU: i32 = -1;

/// `CU_DEVICE_INVALID`: no device, as a range attribute's device ordinal.
const DEVICE_INVALID: i32 = -2;

#[gpu_test]
fn pointer_attributes_of_device_pinned_and_managed_memory() {
    let ctx = gpu_or_skip!();
    let dev = ctx.device();
    let ordinal = dev.as_raw();
    let ctx_raw = ctx.as_raw() as usize;

    // Device memory, queried at an interior address.
    let buf = DeviceBuffer::from_slice(&ctx, &pattern(1, 4096)).unwrap();
    let inner = buf.slice(100..).unwrap();
    let a = inner.pointer_attributes().unwrap();
    assert_eq!(a.memory_type, MemoryType::DEVICE.as_raw());
    assert_eq!(a.context, ctx_raw);
    assert_eq!(a.device_ordinal, ordinal);
    // In the view's context, device memory is reached at its own address.
    assert_eq!(a.device_pointer, inner.as_raw(), "{a:?}");
    assert_eq!(a.range_start, buf.as_raw());
    assert!(a.range_size >= buf.bytes(), "{a:?}");
    assert!(!a.is_managed);
    assert!(a.mapped);
    assert_ne!(a.buffer_id, 0);
    let info = PointerInfo::query(inner.as_raw()).unwrap();
    assert_eq!(info.memory_type.as_raw(), a.memory_type);
    let other = DeviceBuffer::<u32>::zeroed(&ctx, 16).unwrap();
    let b = cuda_driver::memory::unified::pointer_attributes(other.as_raw()).unwrap();
    assert_ne!(b.buffer_id, a.buffer_id, "buffer ids are unique");
    assert_eq!(b.range_start, other.as_raw());

    // SYNC_MEMOPS, the settable attribute, reads back.
    let view = buf.as_view();
    view.set_sync_memops(true).unwrap();
    assert!(view.pointer_attributes().unwrap().sync_memops);
    view.set_sync_memops(false).unwrap();
    assert!(!view.pointer_attributes().unwrap().sync_memops);
    assert_eq!(buf.to_vec().unwrap(), pattern(1, 4096));

    // Page-locked host memory, through its device pointer.
    let pinned = PinnedBuffer::from_slice(&ctx, &[7u32; 1024], PinnedFlags::DEVICEMAP).unwrap();
    let dptr = pinned.device_ptr().unwrap();
    let p = cuda_driver::memory::unified::pointer_attributes(dptr).unwrap();
    assert_eq!(p.memory_type, MemoryType::HOST.as_raw());
    assert_eq!(p.host_pointer, pinned.as_raw() as usize);
    assert_eq!(p.device_pointer, dptr);
    assert_eq!(p.context, ctx_raw);
    assert!(!p.is_managed);
    assert!(p.range_size >= pinned.bytes(), "{p:?}");

    // Managed memory.
    let ms = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let m = ManagedBuffer::from_slice(&ms, &[3u32; 4096], AttachFlags::GLOBAL).unwrap();
    let ma = m.as_view().pointer_attributes().unwrap();
    assert!(ma.is_managed);
    // The driver reports managed memory as device (or unified) memory.
    assert!(
        ma.memory_type == MemoryType::DEVICE.as_raw()
            || ma.memory_type == MemoryType::UNIFIED.as_raw(),
        "{ma:?}"
    );
    assert_eq!(ma.range_start, m.as_raw());
    assert!(ma.range_size >= m.as_view().bytes());
    assert_eq!(ma.context, ctx_raw);
    assert_eq!(ma.device_pointer, m.as_raw());
    assert_eq!(
        ma.host_pointer as u64,
        m.as_raw(),
        "managed memory: one address"
    );

    // An address CUDA does not know: zeros (documented), not an error.
    let x = 0u64;
    let unknown =
        cuda_driver::memory::unified::pointer_attributes(&x as *const u64 as u64).unwrap();
    note(format!("attributes of a stack address: {unknown:?}"));
}

#[gpu_test]
fn managed_range_attributes_follow_advice_and_prefetches() {
    let ctx = gpu_or_skip!();
    let dev = ctx.device();
    crate::common::require_attribute(
        dev,
        DeviceAttribute::CONCURRENT_MANAGED_ACCESS,
        "the device cannot prefetch managed memory (no concurrent managed access)",
    );
    let ordinal = dev.as_raw();
    let n = 1 << 20; // 4 MiB of u32
    let data: Vec<u32> = crate::common::xorshift32(n, 5).collect();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let m = ManagedBuffer::from_slice(&s, &data, AttachFlags::GLOBAL).unwrap();
    // The first MiB is advised and prefetched; the rest is left alone.
    let view = m.as_view();
    let part = view.slice(0..n / 4).unwrap();
    let rest = view.slice(n / 2..).unwrap();
    let here = MemLocation::device(dev);

    part.advise(MemAdvice::SET_READ_MOSTLY, here).unwrap();
    assert_eq!(
        part.range_attribute(MemRangeAttribute::READ_MOSTLY)
            .unwrap(),
        1
    );
    assert_eq!(
        rest.range_attribute(MemRangeAttribute::READ_MOSTLY)
            .unwrap(),
        0
    );

    part.advise(MemAdvice::SET_PREFERRED_LOCATION, here)
        .unwrap();
    assert_eq!(
        part.range_attribute(MemRangeAttribute::PREFERRED_LOCATION)
            .unwrap(),
        ordinal
    );
    assert_eq!(
        part.range_attribute(MemRangeAttribute::PREFERRED_LOCATION_TYPE)
            .unwrap() as u32,
        MemLocationType::DEVICE.as_raw()
    );
    assert_eq!(
        part.range_attribute(MemRangeAttribute::PREFERRED_LOCATION_ID)
            .unwrap(),
        ordinal
    );
    assert_eq!(
        rest.range_attribute(MemRangeAttribute::PREFERRED_LOCATION)
            .unwrap(),
        DEVICE_INVALID
    );

    part.prefetch(here, &s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(
        part.range_attribute(MemRangeAttribute::LAST_PREFETCH_LOCATION)
            .unwrap(),
        ordinal
    );
    part.prefetch(MemLocation::host(), &s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(
        part.range_attribute(MemRangeAttribute::LAST_PREFETCH_LOCATION)
            .unwrap(),
        DEVICE_CPU
    );
    assert_eq!(
        part.range_attribute(MemRangeAttribute::LAST_PREFETCH_LOCATION_TYPE)
            .unwrap() as u32,
        MemLocationType::HOST.as_raw()
    );
    // Several at once agree with one at a time.
    assert_eq!(
        part.range_attributes(&[
            MemRangeAttribute::READ_MOSTLY,
            MemRangeAttribute::PREFERRED_LOCATION,
            MemRangeAttribute::LAST_PREFETCH_LOCATION,
        ])
        .unwrap(),
        [1, ordinal, DEVICE_CPU]
    );
    // Undoing the advice shows too.
    part.advise(MemAdvice::UNSET_READ_MOSTLY, here).unwrap();
    part.advise(MemAdvice::UNSET_PREFERRED_LOCATION, here)
        .unwrap();
    assert_eq!(
        part.range_attributes(&[
            MemRangeAttribute::READ_MOSTLY,
            MemRangeAttribute::PREFERRED_LOCATION
        ])
        .unwrap(),
        [0, DEVICE_INVALID]
    );
    // Hints only: the data is unchanged.
    assert_eq!(m.to_vec().unwrap(), data);

    // The allocation around an interior address.
    let (base, size) = view.slice(12345..).unwrap().address_range().unwrap();
    assert_eq!(base, m.as_raw());
    assert!(size >= n * 4, "{size}");
    let d = DeviceBuffer::<u32>::zeroed(&ctx, 10_000).unwrap();
    let (base, size) = d.slice(9_999..).unwrap().address_range().unwrap();
    assert_eq!(base, d.as_raw());
    assert!(size >= 40_000, "{size}");
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
fn pointer_attributes() {
    let ctx = gpu_or_skip!();
    let buf = DeviceBuffer::<f64>::new(&ctx, 32).unwrap();
    let info = PointerInfo::query(buf.as_raw()).unwrap();
    assert_eq!(info.memory_type, MemoryType::DEVICE);
    assert_eq!(info.device_ordinal, 0);
    assert_eq!(info.context, Some(ctx.as_raw()));
    // An address inside the allocation.
    let inner = PointerInfo::query(buf.slice(5..).unwrap().as_raw()).unwrap();
    assert_eq!(inner, info);

    let pinned = PinnedBuffer::<u8>::zeroed(&ctx, 100, PinnedFlags::empty()).unwrap();
    let info = PointerInfo::of_host(pinned.as_ptr()).unwrap();
    assert_eq!(info.memory_type, MemoryType::HOST);
    assert_eq!(info.device_ordinal, 0);

    // Memory CUDA does not know: an error, except where heterogeneous memory management
    // makes all host memory addressable (then it is not page-locked memory of a context).
    match PointerInfo::of_host(&0u64 as *const u64) {
        Err(e) => assert_eq!(e.code(), Some(ErrorCode::INVALID_VALUE), "{e:?}"),
        Ok(info) => assert_ne!(info.context, Some(ctx.as_raw()), "{info:?}"),
    }
}
