//! GPU tests: sparse and deferred-mapping CUDA arrays mapped onto physical memory.

use cuda_driver::prelude::*;
use cuda_driver::{
    memory::vmm::AllocationProps, memory::vmm::PhysicalAllocation, memory::vmm::SparseRegion,
    memory::Array, memory::Copy2D, texture::ResourceDesc, texture::TextureDesc,
    texture::TextureObject, types::Array3DFlags, types::ArraySparsePropertiesFlags,
    types::DeviceAttribute, types::ErrorCode, types::MemCreateUsageFlags, Context, DeviceBuffer,
    Module,
};

use crate::common::{floats_by_quarters, grid2, note, stream, TEX_KERNELS};

/// Every texel of a `w × h` float texture through `tex_fetch_2d` (unnormalised centres).
fn fetch_all(
    ctx: &Context,
    module: &Module,
    tex: &TextureObject<'_>,
    w: usize,
    h: usize,
) -> Vec<f32> {
    let f = module.function("tex_fetch_2d").unwrap();
    let mut out = DeviceBuffer::<f32>::zeroed(ctx, w * h).unwrap();
    let (wi, hi) = (w as i32, h as i32);
    let s = stream(ctx);
    // SAFETY: tex_fetch_2d(tex, float*, int, int) writes w * h floats.
    unsafe { f.launch(&s, &grid2(w, h), (tex, out.as_view_mut(), &wi, &hi)) }.unwrap();
    s.synchronize().unwrap();
    out.to_vec().unwrap()
}

/// The physical-memory properties of a sparse array's tile pool on `ctx`'s device.
fn tile_pool_props(ctx: &Context) -> AllocationProps {
    AllocationProps::device(ctx.device()).with_usage(MemCreateUsageFlags::TILE_POOL)
}

#[gpu_test]
fn sparse_arrays_map_tiles_of_physical_memory() {
    let ctx = gpu_or_skip!();
    let dev = ctx.device();
    crate::common::require_attribute(dev, DeviceAttribute::SPARSE_CUDA_ARRAY_SUPPORTED, "the device has no sparse CUDA arrays (CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED is 0)");
    let (w, h) = (512usize, 512usize);
    let mut arr = Array::<f32>::new_2d(&ctx, w, h, Array3DFlags::SPARSE).unwrap();
    assert!(arr
        .descriptor()
        .unwrap()
        .flags
        .contains(Array3DFlags::SPARSE));
    let props = arr.sparse_properties().unwrap();
    let [tw, th, td] = props.tile_extent;
    note(format!("sparse f32 tile: {tw} x {th} x {td}, {props:?}"));
    assert!(
        tw > 0 && th > 0 && tw as usize <= w && th as usize <= h,
        "{props:?}"
    );
    assert!(td <= 1, "a 2D array's tiles are one deep: {props:?}");
    // An array (not a mipmapped one) has no mip levels: the tail starts at level 0 and has a
    // size only when it is the single tail of the whole array.
    assert_eq!(props.miptail_first_level, 0, "{props:?}");
    if !props
        .flags
        .contains(ArraySparsePropertiesFlags::SINGLE_MIPTAIL)
    {
        assert_eq!(props.miptail_size, 0, "{props:?}");
    }
    // Memory requirements are for deferred-mapping arrays only.
    let e = arr.memory_requirements(dev).unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::INVALID_VALUE), "{e:?}");

    // One tile, the second on the diagonal, onto physical memory of the tile pool.
    let (tw, th) = (tw as usize, th as usize);
    let pool_props = tile_pool_props(&ctx);
    let gran = pool_props.minimum_granularity().unwrap();
    let tile_bytes = tw * th * td.max(1) as usize * 4;
    let pool =
        PhysicalAllocation::new(&ctx, tile_bytes.div_ceil(gran) * gran, &pool_props).unwrap();
    let region = SparseRegion::Level {
        level: 0,
        layer: 0,
        offset: [tw as u32, th as u32, 0],
        extent: [tw as u32, th as u32, 1],
    };
    let s = stream(&ctx);
    // SAFETY: `arr` and `pool` outlive the mapping: it is unmapped (and the stream
    // synchronised) below, before either is dropped; copies run after the sync.
    unsafe { s.map_array(&arr, region, &pool, 0) }.unwrap();
    s.synchronize().unwrap();
    let data = floats_by_quarters(tw * th, 21);
    Copy2D::new(tw, th)
        .from_host(&data, tw)
        .to_array(&mut arr)
        .dst_origin(tw, th)
        .run()
        .unwrap();
    let mut back = vec![0.0f32; tw * th];
    Copy2D::new(tw, th)
        .from_array(&arr)
        .src_origin(tw, th)
        .to_host(&mut back, tw)
        .run()
        .unwrap();
    assert_eq!(back, data, "the mapped tile keeps what was written");
    // The data lives in the pool: unmapped and mapped again, the tile reads the same.
    // SAFETY: no work uses the region (the copies above returned); remapped as above.
    unsafe { s.unmap_array(&arr, region) }.unwrap();
    // SAFETY: as for the first mapping.
    unsafe { s.map_array(&arr, region, &pool, 0) }.unwrap();
    s.synchronize().unwrap();
    back.fill(0.0);
    Copy2D::new(tw, th)
        .from_array(&arr)
        .src_origin(tw, th)
        .to_host(&mut back, tw)
        .run()
        .unwrap();
    assert_eq!(back, data, "the remapped tile reads the pool's data");
    // SAFETY: the copies are done; nothing else uses the region.
    unsafe { s.unmap_array(&arr, region) }.unwrap();
    s.synchronize().unwrap();
}

#[gpu_test]
fn deferred_mapping_arrays_are_backed_by_the_memory_they_are_mapped_onto() {
    let ctx = gpu_or_skip!();
    let dev = ctx.device();
    crate::common::require_attribute(dev, DeviceAttribute::DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED, "the device has no deferred-mapping CUDA arrays (CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED is 0)");
    let (w, h) = (200usize, 120usize);
    let mut arr = Array::<f32>::new_2d(&ctx, w, h, Array3DFlags::DEFERRED_MAPPING).unwrap();
    let req = arr.memory_requirements(dev).unwrap();
    note(format!("deferred-mapping {w} x {h} f32 array: {req:?}"));
    assert!(req.size >= w * h * 4, "{req:?}");
    assert!(req.alignment.is_power_of_two(), "{req:?}");
    // Sparse properties are for sparse arrays only.
    let e = arr.sparse_properties().unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::INVALID_VALUE), "{e:?}");

    let pool_props = tile_pool_props(&ctx);
    let gran = pool_props.minimum_granularity().unwrap();
    let pool = PhysicalAllocation::new(&ctx, req.size.div_ceil(gran) * gran, &pool_props).unwrap();
    // The region is ignored for a deferred-mapping array: the whole array is mapped.
    let whole = SparseRegion::Level {
        level: 0,
        layer: 0,
        offset: [0; 3],
        extent: [w as u32, h as u32, 1],
    };
    let s = stream(&ctx);
    // SAFETY: `arr` and `pool` outlive the mapping, unmapped below before either drops.
    unsafe { s.map_array(&arr, whole, &pool, 0) }.unwrap();
    s.synchronize().unwrap();
    let data = floats_by_quarters(w * h, 22);
    arr.copy_from_host(&data).unwrap();
    let mut back = vec![0.0f32; w * h];
    arr.copy_to_host(&mut back).unwrap();
    assert_eq!(back, data);
    // A texture reads it too.
    let module = Module::load_data(&ctx, TEX_KERNELS).unwrap();
    {
        let tex =
            TextureObject::new(&ResourceDesc::array(&arr), &TextureDesc::new(), None).unwrap();
        assert_eq!(fetch_all(&ctx, &module, &tex, w, h), data);
    }
    // SAFETY: the kernel and copies are done (synchronised above).
    unsafe { s.unmap_array(&arr, whole) }.unwrap();
    s.synchronize().unwrap();
}
