//! GPU tests: occupancy (Occupancy): active blocks per multiprocessor and potential block
//! sizes, with and without flags, and sizes the driver's `int` cannot hold.

use cuda_driver::prelude::*;
use cuda_driver::types::OccupancyFlags;
use cuda_driver::{
    types::DeviceAttribute, types::FunctionAttribute, DeviceBuffer, Error, Function, Library,
    Module,
};

use crate::common::TEST_KERNELS;
use crate::launch::kernels;

#[gpu_test]
fn occupancy_is_sane() {
    let ctx = gpu_exclusive_or_skip!();
    let dev = ctx.device();
    let sms = dev
        .attribute(DeviceAttribute::MULTIPROCESSOR_COUNT)
        .unwrap() as u32;
    let f: Function = kernels(&ctx).function("fill_u32").unwrap();
    let per_sm = f.max_active_blocks_per_multiprocessor(256, 0).unwrap();
    assert!((1..=32).contains(&per_sm), "{per_sm} blocks of 256 per SM");
    let fewer = f.max_active_blocks_per_multiprocessor(1024, 0).unwrap();
    assert!(fewer <= per_sm, "{fewer} blocks of 1024 vs {per_sm} of 256");

    let suggestion = f.max_potential_block_size(0, 0).unwrap();
    assert!(
        (32..=1024).contains(&suggestion.block_size) && suggestion.block_size % 32 == 0,
        "{suggestion:?}"
    );
    assert!(
        suggestion.min_grid_size >= sms,
        "{suggestion:?} on {sms} SMs"
    );
    let limited = f.max_potential_block_size(0, 128).unwrap();
    assert!(limited.block_size <= 128, "{limited:?}");

    let smem = f.available_dynamic_shared_memory_per_block(1, 256).unwrap();
    assert!(smem >= 16 * 1024, "{smem} bytes");

    // The same through a library kernel in this context.
    let k = Library::load_data(TEST_KERNELS)
        .unwrap()
        .kernel("fill_u32")
        .unwrap();
    assert_eq!(
        k.max_active_blocks_per_multiprocessor(&ctx, 256, 0)
            .unwrap(),
        per_sm
    );
    assert_eq!(k.max_potential_block_size(&ctx, 0, 0).unwrap(), suggestion);
    assert!(
        k.available_dynamic_shared_memory_per_block(&ctx, 1, 256)
            .unwrap()
            >= 16 * 1024
    );
    // Registers of the two are the same code's.
    assert_eq!(
        k.attribute(FunctionAttribute::NUM_REGS, dev).unwrap(),
        f.attribute(FunctionAttribute::NUM_REGS).unwrap()
    );
}

/// Issue 23: the occupancy queries take block sizes and block counts as `u32`, the driver as
/// `int`: a value above `i32::MAX` is `InvalidArgument` before the driver is called (never a
/// negative int), and the context stays usable.
#[gpu_test]
fn occupancy_queries_refuse_sizes_the_drivers_int_cannot_hold() {
    use cuda_driver::types::OccupancyFlags;
    let ctx = gpu_or_skip!();
    let f: Function = kernels(&ctx).function("fill_u32").unwrap();
    let flags = OccupancyFlags::DEFAULT;
    let refused = |r: Result<(), Error>| matches!(r, Err(Error::InvalidArgument(_)));
    for v in [i32::MAX as u32 + 1, u32::MAX] {
        assert!(refused(
            f.max_active_blocks_per_multiprocessor(v, 0).map(drop)
        ));
        assert!(refused(
            f.max_active_blocks_per_multiprocessor_with_flags(v, 0, flags)
                .map(drop)
        ));
        assert!(refused(f.max_potential_block_size(0, v).map(drop)));
        assert!(refused(
            f.max_potential_block_size_with_flags(0, v, flags).map(drop)
        ));
        assert!(refused(
            f.available_dynamic_shared_memory_per_block(v, 256)
                .map(drop)
        ));
        assert!(refused(
            f.available_dynamic_shared_memory_per_block(1, v).map(drop)
        ));
    }
    assert!(f.max_active_blocks_per_multiprocessor(256, 0).unwrap() >= 1);
    let buf = DeviceBuffer::from_slice(&ctx, &[4u32; 8]).unwrap();
    assert_eq!(buf.to_vec().unwrap(), [4; 8]);
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
