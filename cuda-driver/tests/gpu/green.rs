//! Green contexts: SM splits, descriptors, green contexts as ordinary contexts, their streams
//! and events, and kernels confined to their SMs (checked from %smid).

use std::collections::BTreeSet;

use cuda_driver::prelude::*;
use cuda_driver::{
    green::DevResourceDesc, green::GreenContext, types::DevResourceType,
    types::DevSmResourceSplitFlags, types::EventFlags, DeviceBuffer, Error, Event, LaunchConfig,
    Module,
};

const PTX: &str = include_str!("../ptx/green.ptx");

/// The set of SMs a green context's kernel ran on: many blocks of `record_smid`.
fn smids_of(green: &GreenContext, blocks: u32) -> BTreeSet<u32> {
    let ctx = green.context();
    let m = Module::load_data(ctx, PTX).unwrap();
    let f = m.function("record_smid").unwrap();
    let s = green.create_stream(0).unwrap();
    let mut out = DeviceBuffer::<u32>::zeroed(ctx, blocks as usize).unwrap();
    // SAFETY: record_smid(unsigned int*) writes out[blockIdx.x], one per block.
    unsafe { f.launch(&s, &LaunchConfig::new(blocks, 32), (out.as_view_mut(),)) }.unwrap();
    s.synchronize().unwrap();
    out.to_vec().unwrap().into_iter().collect()
}

#[gpu_test]
fn split_sms_and_confine_kernels() {
    let ctx = gpu_exclusive_or_skip!();
    let dev = ctx.device();
    let sms = match dev.sm_resource() {
        Err(e @ Error::Unsupported { .. }) => {
            crate::common::skip(format!("green contexts need CUDA 12.4: {e}"))
        }
        r => r.unwrap(),
    };
    assert_eq!(sms.kind(), DevResourceType::SM);
    let total = dev
        .attribute(cuda_driver::types::DeviceAttribute::MULTIPROCESSOR_COUNT)
        .unwrap();
    assert_eq!(sms.sm_count() as i32, total);
    // A quarter of the SMs per group: the driver rounds a group up to its granularity (a
    // request for half of an H100's 132 SMs gets 72, and a second such group does not fit).
    let quarter = sms.sm_count() / 4;
    let (groups, rest) = sms
        .split_by_count(
            2,
            quarter.max(sms.min_sm_partition_size()),
            DevSmResourceSplitFlags::empty(),
        )
        .unwrap();
    assert!(groups.iter().all(|g| g.sm_count() >= quarter));
    assert!(groups.iter().map(|g| g.sm_count()).sum::<u32>() + rest.sm_count() <= sms.sm_count());
    assert_eq!(groups.len(), 2, "{groups:?} rest {rest:?}");
    let greens: Vec<GreenContext> = groups
        .iter()
        .map(|g| {
            GreenContext::new(dev, &DevResourceDesc::new(std::slice::from_ref(g)).unwrap()).unwrap()
        })
        .collect();
    for (g, group) in greens.iter().zip(&groups) {
        let r = g.resource(DevResourceType::SM).unwrap();
        assert_eq!(r.sm_count(), group.sm_count());
        assert_eq!(
            g.context()
                .resource(DevResourceType::SM)
                .unwrap()
                .sm_count(),
            group.sm_count()
        );
    }
    let a = smids_of(&greens[0], 4 * total as u32);
    let b = smids_of(&greens[1], 4 * total as u32);
    assert!(a.len() <= groups[0].sm_count() as usize, "{a:?}");
    assert!(b.len() <= groups[1].sm_count() as usize, "{b:?}");
    assert!(a.is_disjoint(&b), "green contexts shared SMs: {a:?} {b:?}");
    // Ids, streams and events.
    let id0 = greens[0].id();
    if let (Ok(x), Ok(y)) = (&id0, &greens[1].id()) {
        assert_ne!(x, y);
    }
    let s = greens[0].create_stream(0).unwrap();
    assert_eq!(s.green_context_raw().unwrap(), Some(greens[0].as_raw()));
    let e = Event::new(greens[0].context(), EventFlags::DEFAULT).unwrap();
    greens[0].record_event(&e).unwrap();
    greens[1].wait_event(&e).unwrap();
    e.synchronize().unwrap();
    // Bad input: more groups of the whole device than exist.
    let err = sms.split_by_count(1, sms.sm_count() + 1, DevSmResourceSplitFlags::empty());
    assert!(err.is_err());
    // The primary context is still usable.
    let buf = DeviceBuffer::from_slice(&ctx, &[1u32, 2, 3]).unwrap();
    assert_eq!(buf.to_vec().unwrap(), [1, 2, 3]);
}

/// Issue 23: a split into `u32::MAX` groups asks the driver with room for at most one group
/// per SM (not `u32::MAX` resources) and returns the groups that fit.
#[gpu_test]
fn splitting_into_an_absurd_number_of_groups_returns_what_fits() {
    let ctx = gpu_or_skip!();
    let sms = match ctx.device().sm_resource() {
        Err(e @ Error::Unsupported { .. }) => {
            crate::common::skip(format!("green contexts need CUDA 12.4: {e}"))
        }
        r => r.unwrap(),
    };
    let min = sms.min_sm_partition_size().max(1);
    let (groups, rest) = sms
        .split_by_count(u32::MAX, min, DevSmResourceSplitFlags::empty())
        .unwrap();
    assert!(!groups.is_empty());
    assert!(groups.len() <= sms.sm_count() as usize, "{groups:?}");
    assert!(groups.iter().all(|g| g.sm_count() >= min), "{groups:?}");
    assert!(groups.iter().map(|g| g.sm_count()).sum::<u32>() + rest.sm_count() <= sms.sm_count());
    let buf = DeviceBuffer::from_slice(&ctx, &[1u32, 2, 3]).unwrap();
    assert_eq!(buf.to_vec().unwrap(), [1, 2, 3]);
}
