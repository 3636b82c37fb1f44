//! GPU tests, more of issue #13: sparse and deferred-mapping arrays mapped onto physical
//! memory, array planes (NV12), half arrays, texture gather, the texture descriptor's fields
//! (read modes, sRGB, border colour, address modes), resource views, im2col tensor maps, and
//! 3D copies between contexts.

use cuda_driver::half::f16;
use cuda_driver::prelude::*;
use cuda_driver::{
    AddressMode, AllocationProps, Array, Array3DFlags, ArrayDescriptor, ArrayFormat,
    ArraySparsePropertiesFlags, Context, ContextFlags, Copy2D, Copy3D, DeviceAttribute,
    DeviceBuffer, Error, ErrorCode, FilterMode, Float2, LaunchConfig, MemCreateUsageFlags,
    MipmappedArray, Module, PhysicalAllocation, ResourceDesc, ResourceViewDesc, ResourceViewFormat,
    SparseRegion, Stream, StreamFlags, TensorMapDataType, TensorMapFloatOOBfill, TensorMapIm2col,
    TensorMapIm2colWide, TensorMapL2promotion, TensorMapSwizzle, TextureDesc, TextureObject,
    Uchar2, Uchar4,
};

use crate::common::{note, skip, xorshift32};

const TEX: &str = include_str!("../ptx/tex_kernels.ptx");

fn floats(n: usize, seed: u32) -> Vec<f32> {
    xorshift32(n, seed)
        .map(|x| (x % 65_536) as f32 * 0.25)
        .collect()
}

fn stream(ctx: &Context) -> Stream {
    Stream::new(ctx, StreamFlags::NON_BLOCKING).unwrap()
}

fn grid2(w: usize, h: usize) -> LaunchConfig {
    LaunchConfig::new(((w as u32).div_ceil(16), (h as u32).div_ceil(16)), (16, 16))
}

/// Samples `tex` at the points `uv` with `tex_sample_2d` (`channels` 1: `tex2D<float>`) or
/// `tex_sample_2d_rgba` (`channels` 4: `tex2D<float4>`); `channels` floats per point.
fn sample(
    ctx: &Context,
    module: &Module,
    tex: &TextureObject<'_>,
    uv: &[(f32, f32)],
    channels: usize,
) -> Vec<f32> {
    let name = match channels {
        1 => "tex_sample_2d",
        4 => "tex_sample_2d_rgba",
        _ => unreachable!("1 or 4 channels"),
    };
    let f = module.function(name).unwrap();
    let u: Vec<f32> = uv.iter().map(|p| p.0).collect();
    let v: Vec<f32> = uv.iter().map(|p| p.1).collect();
    let u = DeviceBuffer::from_slice(ctx, &u).unwrap();
    let v = DeviceBuffer::from_slice(ctx, &v).unwrap();
    let mut out = DeviceBuffer::<f32>::zeroed(ctx, uv.len() * channels).unwrap();
    let n = uv.len() as i32;
    let s = stream(ctx);
    // SAFETY: tex_sample_2d[_rgba](cudaTextureObject_t, const float*, const float*, float*,
    // int) reads n coordinates and writes n * channels floats; all alive until the sync.
    unsafe {
        f.launch(
            &s,
            &LaunchConfig::new(1, 64),
            (tex, u.as_view(), v.as_view(), out.as_view_mut(), &n),
        )
    }
    .unwrap();
    s.synchronize().unwrap();
    out.to_vec().unwrap()
}

/// `tex_gather_2d` at the points `uv`: channel `comp` of the four texels of each footprint.
fn gather(
    ctx: &Context,
    module: &Module,
    tex: &TextureObject<'_>,
    uv: &[(f32, f32)],
    comp: i32,
) -> Vec<[f32; 4]> {
    let f = module.function("tex_gather_2d").unwrap();
    let u: Vec<f32> = uv.iter().map(|p| p.0).collect();
    let v: Vec<f32> = uv.iter().map(|p| p.1).collect();
    let u = DeviceBuffer::from_slice(ctx, &u).unwrap();
    let v = DeviceBuffer::from_slice(ctx, &v).unwrap();
    let mut out = DeviceBuffer::<f32>::zeroed(ctx, uv.len() * 4).unwrap();
    let n = uv.len() as i32;
    let s = stream(ctx);
    // SAFETY: tex_gather_2d(tex, const float*, const float*, float*, int, int) reads n
    // coordinates and writes 4 n floats.
    unsafe {
        f.launch(
            &s,
            &LaunchConfig::new(1, 64),
            (tex, u.as_view(), v.as_view(), out.as_view_mut(), &n, &comp),
        )
    }
    .unwrap();
    s.synchronize().unwrap();
    out.to_vec()
        .unwrap()
        .chunks(4)
        .map(|c| [c[0], c[1], c[2], c[3]])
        .collect()
}

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

/// `got` is `want` within `tol`, relative to values above 1 in magnitude.
fn close(got: &[f32], want: &[f32], tol: f32, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * w.abs().max(1.0),
            "{what}: element {i} is {g}, expected {w} (±{tol}); all: {got:?}"
        );
    }
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
    let data = floats(tw * th, 21);
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
    let data = floats(w * h, 22);
    arr.copy_from_host(&data).unwrap();
    let mut back = vec![0.0f32; w * h];
    arr.copy_to_host(&mut back).unwrap();
    assert_eq!(back, data);
    // A texture reads it too.
    let module = Module::load_data(&ctx, TEX).unwrap();
    {
        let tex =
            TextureObject::new(&ResourceDesc::array(&arr), &TextureDesc::new(), None).unwrap();
        assert_eq!(fetch_all(&ctx, &module, &tex, w, h), data);
    }
    // SAFETY: the kernel and copies are done (synchronised above).
    unsafe { s.unmap_array(&arr, whole) }.unwrap();
    s.synchronize().unwrap();
}

#[gpu_test]
fn nv12_arrays_split_into_luma_and_chroma_planes() {
    let ctx = gpu_or_skip!();
    // A single-planar array has no planes: the driver's INVALID_VALUE, as documented.
    let plain = Array::<f32>::new_2d(&ctx, 8, 8, Array3DFlags::empty()).unwrap();
    let e = plain.plane::<f32>(0).unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::INVALID_VALUE), "{e:?}");

    let (w, h) = (64usize, 32usize);
    // NV12 has three channels (Y, U, V); the element type is the escape hatch's (any).
    let mut desc = ArrayDescriptor::of::<u8>(w, h, 0, Array3DFlags::empty());
    desc.format = ArrayFormat::NV12;
    desc.channels = 3;
    let mut nv12 = match Array::<u8>::with_descriptor(&ctx, &desc) {
        Ok(a) => a,
        Err(first) if first.code().is_some() => {
            // Some drivers want video arrays marked for the video engines.
            desc.flags = Array3DFlags::VIDEO_ENCODE_DECODE;
            match Array::<u8>::with_descriptor(&ctx, &desc) {
                Ok(a) => a,
                Err(e) if e.code().is_some() => skip(format!(
                    "the driver creates no NV12 array here: {first} (and with \
                     VIDEO_ENCODE_DECODE: {e})"
                )),
                Err(e) => panic!("{e:?}"),
            }
        }
        Err(e) => panic!("refused in Rust: {e:?}"),
    };
    note(format!("NV12 array flags: {:?}", desc.flags));
    // Plane 0: the luma, one 8-bit channel of the full size; plane 1: the chroma, two 8-bit
    // channels of half the size.
    {
        let y = nv12.plane::<u8>(0).unwrap();
        let d = y.desc();
        assert_eq!(
            (d.width, d.height, d.format, d.channels),
            (w, h, ArrayFormat::UNSIGNED_INT8, 1)
        );
        let uv = nv12.plane::<Uchar2>(1).unwrap();
        let d = uv.desc();
        assert_eq!(
            (d.width, d.height, d.format, d.channels),
            (w / 2, h / 2, ArrayFormat::UNSIGNED_INT8, 2)
        );
    }
    // A plane read as the wrong element type is refused in Rust; a plane past the last by
    // the driver.
    assert!(matches!(
        nv12.plane::<f32>(0),
        Err(Error::ElementFormat { .. })
    ));
    let e = nv12.plane::<u8>(2).unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::INVALID_VALUE), "{e:?}");
    // The planes are distinct storage: each keeps what was written to it.
    let luma: Vec<u8> = (0..w * h).map(|i| (i * 7 % 251) as u8).collect();
    let chroma: Vec<Uchar2> = (0..w * h / 4)
        .map(|i| Uchar2::new((i % 256) as u8, (255 - i % 256) as u8))
        .collect();
    nv12.plane_mut::<u8>(0)
        .unwrap()
        .copy_from_host(&luma)
        .unwrap();
    nv12.plane_mut::<Uchar2>(1)
        .unwrap()
        .copy_from_host(&chroma)
        .unwrap();
    let mut luma_back = vec![0u8; w * h];
    nv12.plane::<u8>(0)
        .unwrap()
        .copy_to_host(&mut luma_back)
        .unwrap();
    assert_eq!(luma_back, luma);
    let mut chroma_back = vec![Uchar2::default(); w * h / 4];
    nv12.plane::<Uchar2>(1)
        .unwrap()
        .copy_to_host(&mut chroma_back)
        .unwrap();
    assert_eq!(chroma_back, chroma);
}

#[gpu_test]
fn half_arrays_round_trip_and_filter_as_floats() {
    let ctx = gpu_or_skip!();
    let module = Module::load_data(&ctx, TEX).unwrap();
    let vals = [0.5f32, 1.5, -2.25, 8.0, 1024.0, -0.125];
    let halves: Vec<f16> = vals.iter().map(|&v| f16::from_f32(v)).collect();
    let mut arr = Array::<f16>::new_2d(&ctx, vals.len(), 1, Array3DFlags::empty()).unwrap();
    let d = arr.descriptor().unwrap();
    assert_eq!((d.format, d.channels), (ArrayFormat::HALF, 1));
    arr.copy_from_host(&halves).unwrap();
    let mut back = vec![f16::ZERO; vals.len()];
    arr.copy_to_host(&mut back).unwrap();
    assert_eq!(back, halves);
    // Point sampling at the texel centres reads each half as a float.
    let centres: Vec<(f32, f32)> = (0..vals.len()).map(|i| (i as f32 + 0.5, 0.5)).collect();
    let tex = TextureObject::new(&ResourceDesc::array(&arr), &TextureDesc::new(), None).unwrap();
    assert_eq!(sample(&ctx, &module, &tex, &centres, 1), vals);
    // Linear filtering between texels (weights of 1/4, 1/2, 3/4: exact in the hardware's
    // 8-bit fraction).
    let tex = TextureObject::new(
        &ResourceDesc::array(&arr),
        &TextureDesc::new()
            .filter(FilterMode::LINEAR)
            .address_mode(AddressMode::CLAMP),
        None,
    )
    .unwrap();
    let xs = [1.0f32, 1.25, 2.0, 3.75, 4.0, 5.5];
    let pts: Vec<(f32, f32)> = xs.iter().map(|&x| (x, 0.5)).collect();
    let want: Vec<f32> = xs
        .iter()
        .map(|&x| {
            let t = x - 0.5;
            let i = t.floor() as usize;
            let a = t - t.floor();
            vals[i] * (1.0 - a) + vals[(i + 1).min(vals.len() - 1)] * a
        })
        .collect();
    close(
        &sample(&ctx, &module, &tex, &pts, 1),
        &want,
        1e-4,
        "linear filtering of halves",
    );
}

#[gpu_test]
fn texture_gather_returns_the_four_texels_of_the_bilinear_footprint() {
    let ctx = gpu_or_skip!();
    let module = Module::load_data(&ctx, TEX).unwrap();
    let (w, h) = (4usize, 4usize);
    let data: Vec<f32> = (1..=(w * h) as u32).map(|v| v as f32).collect();
    let mut arr = Array::<f32>::new_2d(&ctx, w, h, Array3DFlags::TEXTURE_GATHER).unwrap();
    assert!(arr
        .descriptor()
        .unwrap()
        .flags
        .contains(Array3DFlags::TEXTURE_GATHER));
    arr.copy_from_host(&data).unwrap();
    let tex = TextureObject::new(
        &ResourceDesc::array(&arr),
        &TextureDesc::new().address_mode(AddressMode::CLAMP),
        None,
    )
    .unwrap();
    let pts = [(2.0f32, 1.0f32), (3.0, 3.0), (1.3, 2.8), (1.0, 1.0)];
    // PTX tld4: the footprint's texels counter-clockwise from the lower left, with
    // (i, j) = floor((x, y) - 0.5): (i, j+1), (i+1, j+1), (i+1, j), (i, j).
    let footprint = |x: f32, y: f32, t: &dyn Fn(usize, usize) -> f32| {
        let i = (x - 0.5).floor() as usize;
        let j = (y - 0.5).floor() as usize;
        [t(i, j + 1), t(i + 1, j + 1), t(i + 1, j), t(i, j)]
    };
    let got = gather(&ctx, &module, &tex, &pts, 0);
    for (p, g) in pts.iter().zip(&got) {
        let want = footprint(p.0, p.1, &|x, y| data[y * w + x]);
        assert_eq!(*g, want, "gather at {p:?}");
    }
    // Two channels: `comp` picks the channel gathered.
    let pairs: Vec<Float2> = data.iter().map(|&v| Float2::new(v, -10.0 * v)).collect();
    let mut arr2 = Array::<Float2>::new_2d(&ctx, w, h, Array3DFlags::TEXTURE_GATHER).unwrap();
    arr2.copy_from_host(&pairs).unwrap();
    let tex2 = TextureObject::new(
        &ResourceDesc::array(&arr2),
        &TextureDesc::new().address_mode(AddressMode::CLAMP),
        None,
    )
    .unwrap();
    for comp in 0..2 {
        let got = gather(&ctx, &module, &tex2, &pts, comp);
        for (p, g) in pts.iter().zip(&got) {
            let want = footprint(p.0, p.1, &|x, y| {
                let v = data[y * w + x];
                if comp == 0 {
                    v
                } else {
                    -10.0 * v
                }
            });
            assert_eq!(*g, want, "gather of channel {comp} at {p:?}");
        }
    }
}

/// sRGB to linear, as the texture hardware converts an 8-bit channel.
fn srgb_to_linear(c: u8) -> f32 {
    let c = c as f32 / 255.0;
    if c <= 0.04045 {
        c / 12.92
    } else {
        ((c + 0.055) / 1.055).powf(2.4)
    }
}

#[gpu_test]
fn texture_read_modes_srgb_border_and_address_modes_sample_as_described() {
    let ctx = gpu_or_skip!();
    let module = Module::load_data(&ctx, TEX).unwrap();
    let s = stream(&ctx);

    // 8-bit data: read as integers, or (the default) as normalised floats, value / 255.
    let bytes = [0u8, 1, 51, 128, 200, 255];
    let n = bytes.len();
    let mut a8 = Array::<u8>::new_2d(&ctx, n, 1, Array3DFlags::empty()).unwrap();
    a8.copy_from_host(&bytes).unwrap();
    {
        let tex = TextureObject::new(
            &ResourceDesc::array(&a8),
            &TextureDesc::new().read_as_integer(true),
            None,
        )
        .unwrap();
        let f = module.function("tex_fetch_u8").unwrap();
        let mut out = DeviceBuffer::<u32>::zeroed(&ctx, n).unwrap();
        let ni = n as i32;
        // SAFETY: tex_fetch_u8(tex, unsigned*, int) writes n words.
        unsafe {
            f.launch(
                &s,
                &LaunchConfig::new(1, 32),
                (&tex, out.as_view_mut(), &ni),
            )
        }
        .unwrap();
        s.synchronize().unwrap();
        let want: Vec<u32> = bytes.iter().map(|&b| b as u32).collect();
        assert_eq!(out.to_vec().unwrap(), want, "read as integer");
    }
    let centres: Vec<(f32, f32)> = (0..n).map(|i| (i as f32 + 0.5, 0.5)).collect();
    {
        let tex = TextureObject::new(&ResourceDesc::array(&a8), &TextureDesc::new(), None).unwrap();
        let want: Vec<f32> = bytes.iter().map(|&b| b as f32 / 255.0).collect();
        close(
            &sample(&ctx, &module, &tex, &centres, 1),
            &want,
            1e-6,
            "normalised float reads",
        );
    }

    // Four 8-bit channels, sRGB: the colour channels are converted to linear, alpha is not.
    let px = [Uchar4::new(0, 128, 255, 128), Uchar4::new(10, 64, 200, 255)];
    let mut rgba = Array::<Uchar4>::new_2d(&ctx, 2, 1, Array3DFlags::empty()).unwrap();
    rgba.copy_from_host(&px).unwrap();
    let unorm = |p: &Uchar4| [p.x, p.y, p.z, p.w].map(|c| c as f32 / 255.0);
    let two = [(0.5f32, 0.5f32), (1.5, 0.5)];
    {
        let tex =
            TextureObject::new(&ResourceDesc::array(&rgba), &TextureDesc::new(), None).unwrap();
        let want: Vec<f32> = px.iter().flat_map(unorm).collect();
        close(&sample(&ctx, &module, &tex, &two, 4), &want, 1e-6, "rgba8");
    }
    {
        let tex = TextureObject::new(
            &ResourceDesc::array(&rgba),
            &TextureDesc::new().srgb(true),
            None,
        )
        .unwrap();
        assert!(tex
            .texture_desc()
            .unwrap()
            .flags()
            .contains(cuda_driver::TextureFlags::SRGB));
        let want: Vec<f32> = px
            .iter()
            .flat_map(|p| {
                [
                    srgb_to_linear(p.x),
                    srgb_to_linear(p.y),
                    srgb_to_linear(p.z),
                    p.w as f32 / 255.0,
                ]
            })
            .collect();
        close(&sample(&ctx, &module, &tex, &two, 4), &want, 2e-3, "sRGB");
    }

    // Border colour: read outside the texture in BORDER mode (normalised coordinates).
    {
        let border = [0.25f32, 0.5, 0.75, 1.0];
        let tex = TextureObject::new(
            &ResourceDesc::array(&rgba),
            &TextureDesc::new()
                .normalized_coords(true)
                .address_mode(AddressMode::BORDER)
                .border_color(border),
            None,
        )
        .unwrap();
        let pts = [
            (-0.25f32, 0.5f32),
            (0.25, 0.5),
            (0.75, 0.5),
            (1.5, 0.5),
            (0.25, 2.0),
        ];
        // The border colour comes back in the texture's format: 8-bit channels read as
        // normalised floats, within one step of 1/255 (an H100 reads 0.5 as 127/255).
        let border_read = border.map(|v| (v * 255.0).round() / 255.0);
        let mut want = Vec::new();
        want.extend(border_read);
        want.extend(unorm(&px[0]));
        want.extend(unorm(&px[1]));
        want.extend(border_read);
        want.extend(border_read);
        close(
            &sample(&ctx, &module, &tex, &pts, 4),
            &want,
            1.0 / 255.0 + 1e-6,
            "border colour",
        );
    }

    // WRAP, MIRROR and CLAMP with normalised coordinates, point filtering, over 0, 10, 20, 30
    // (texel k covers [k/4, (k+1)/4)).
    let mut ramp = Array::<f32>::new_2d(&ctx, 4, 1, Array3DFlags::empty()).unwrap();
    ramp.copy_from_host(&[0.0, 10.0, 20.0, 30.0]).unwrap();
    let us = [0.375f32, 1.125, -0.125, 1.625, 2.375, -1.375];
    let pts: Vec<(f32, f32)> = us.iter().map(|&u| (u, 0.5)).collect();
    let cases: [(AddressMode, [f32; 6]); 3] = [
        // wrap: the fraction of u.
        (AddressMode::WRAP, [10.0, 0.0, 30.0, 20.0, 10.0, 20.0]),
        // mirror: every other period reversed (1.125 -> 0.875, -0.125 -> 0.125,
        // 1.625 -> 0.375, 2.375 -> 0.375, -1.375 -> 0.625).
        (AddressMode::MIRROR, [10.0, 30.0, 0.0, 10.0, 10.0, 20.0]),
        // clamp: the edge texels.
        (AddressMode::CLAMP, [10.0, 30.0, 0.0, 30.0, 30.0, 0.0]),
    ];
    for (mode, want) in cases {
        let tex = TextureObject::new(
            &ResourceDesc::array(&ramp),
            &TextureDesc::new()
                .normalized_coords(true)
                .address_mode(mode),
            None,
        )
        .unwrap();
        assert_eq!(
            sample(&ctx, &module, &tex, &pts, 1),
            want,
            "address mode {mode:?}"
        );
    }
}

#[gpu_test]
fn resource_views_select_mipmap_levels_and_layers() {
    let ctx = gpu_or_skip!();
    let module = Module::load_data(&ctx, TEX).unwrap();
    let s = stream(&ctx);
    // Level l holds 10 l + 5.
    let mut m = MipmappedArray::<f32>::new_2d(&ctx, 16, 16, 4, Array3DFlags::empty()).unwrap();
    for l in 0..4u32 {
        let side = 16usize >> l;
        m.level_mut(l)
            .unwrap()
            .copy_from_host(&vec![l as f32 * 10.0 + 5.0; side * side])
            .unwrap();
    }
    let lod = module.function("tex_lod").unwrap();
    let read_lods = |tex: &TextureObject<'_>, levels: i32| {
        let mut out = DeviceBuffer::<f32>::zeroed(&ctx, levels as usize).unwrap();
        // SAFETY: tex_lod(tex, float*, int) writes `levels` floats.
        unsafe {
            lod.launch(
                &s,
                &LaunchConfig::new(1, 32),
                (tex, out.as_view_mut(), &levels),
            )
        }
        .unwrap();
        s.synchronize().unwrap();
        out.to_vec().unwrap()
    };
    let desc = TextureDesc::new()
        .normalized_coords(true)
        .mipmap_filter(FilterMode::POINT)
        .mipmap_level_clamp(0.0, 3.0);
    {
        let tex = TextureObject::new(&ResourceDesc::mipmapped_array(&m), &desc, None).unwrap();
        assert_eq!(read_lods(&tex, 4), [5.0, 15.0, 25.0, 35.0]);
    }
    // A view of levels 2..=3: level 2 is the view's level 0, and the clamps are relative to
    // it (a maximum of 1 is level 3).
    let view = ResourceViewDesc::new(ResourceViewFormat::FLOAT_1X32, 16, 16, 0).mipmap_levels(2, 3);
    {
        let tex = TextureObject::new(
            &ResourceDesc::mipmapped_array(&m),
            &desc.mipmap_level_clamp(0.0, 1.0),
            Some(&view),
        )
        .unwrap();
        let got = tex.resource_view_desc().unwrap();
        assert_eq!(
            (got.as_raw().firstMipmapLevel, got.as_raw().lastMipmapLevel),
            (2, 3)
        );
        assert_eq!(read_lods(&tex, 3), [25.0, 35.0, 35.0]);
    }

    // A view of layers 1..=2 of a 3-layer array: the view's layer 0 is the array's layer 1.
    let (w, h) = (8usize, 8usize);
    let mut layered = Array::<f32>::new_layered_2d(&ctx, w, h, 3, Array3DFlags::empty()).unwrap();
    let data = floats(w * h * 3, 23);
    layered.copy_from_host(&data).unwrap();
    let view = ResourceViewDesc::new(ResourceViewFormat::FLOAT_1X32, w, h, 3).layers(1, 2);
    let tex = TextureObject::new(
        &ResourceDesc::array(&layered),
        &TextureDesc::new().normalized_coords(true),
        Some(&view),
    )
    .unwrap();
    let f = module.function("tex_layered").unwrap();
    let mut out = DeviceBuffer::<f32>::zeroed(&ctx, w * h * 2).unwrap();
    let (wi, hi, layers) = (w as i32, h as i32, 2i32);
    // SAFETY: tex_layered(tex, float*, int, int, int) writes w * h * layers floats.
    unsafe {
        f.launch(
            &s,
            &grid2(w, h),
            (&tex, out.as_view_mut(), &wi, &hi, &layers),
        )
    }
    .unwrap();
    s.synchronize().unwrap();
    let got = out.to_vec().unwrap();
    for l in 0..2 {
        for i in 0..w * h {
            assert_eq!(
                got[l * w * h + i],
                -data[(l + 1) * w * h + i] + l as f32,
                "view layer {l}, texel {i}"
            );
        }
    }
}

#[gpu_test]
fn im2col_tensor_maps_encode_and_their_rules_are_checked() {
    let ctx = gpu_or_skip!();
    // NHWC, f16: 64 channels, 16 x 16 pixels, 2 images (bytes 128 per pixel).
    let (c, w, h, n) = (64u64, 16u64, 16u64, 2u64);
    let buf = DeviceBuffer::<u16>::zeroed(&ctx, (c * w * h * n) as usize).unwrap();
    let dims = [c, w, h, n];
    let strides = [c * 2, c * 2 * w, c * 2 * w * h];
    let im2col = |lower: &[i32], channels: u32| {
        TensorMapIm2col::new(
            TensorMapDataType::FLOAT16,
            &dims,
            &strides,
            lower,
            &[0, 0],
            channels,
            128,
        )
    };
    // Rules broken: refused in Rust with the rule named, on any device.
    let rule = |r: cuda_driver::Result<cuda_driver::TensorMap>| match r {
        Err(Error::TensorMapRule { rule, .. }) => rule,
        other => panic!("expected a rule error, got {other:?}"),
    };
    assert_eq!(
        rule(im2col(&[-200, 0], 64).encode(&buf.as_view())),
        "pixel box corners"
    );
    assert_eq!(
        rule(im2col(&[-1, -1], 257).encode(&buf.as_view())),
        "channels per pixel"
    );
    assert_eq!(
        rule(
            TensorMapIm2col::new(
                TensorMapDataType::FLOAT16,
                &[c, w],
                &[c * 2],
                &[],
                &[],
                64,
                128
            )
            .encode(&buf.as_view())
        ),
        "rank"
    );
    let short = buf.as_view().slice(..(c * w * h * n) as usize - 1).unwrap();
    assert_eq!(rule(im2col(&[-1, -1], 64).encode(&short)), "bounds");
    let wide = TensorMapIm2colWide::new(TensorMapDataType::FLOAT16, &dims, &strides, -1, 0, 64, 16);
    assert_eq!(
        rule(
            wide.clone()
                .swizzle(TensorMapSwizzle::NONE)
                .encode(&buf.as_view())
        ),
        "interleave/swizzle"
    );

    let (major, minor) = ctx.device().compute_capability().unwrap();
    if major < 9 {
        skip(format!(
            "compute capability {major}.{minor} has no tensor maps (the rule checks above ran)"
        ));
    }
    // Valid im2col maps of rank 3, 4 and 5 encode; different parameters, different maps.
    let map = im2col(&[-1, -1], 64).encode(&buf.as_view()).unwrap();
    assert!(map.as_raw().opaque.iter().any(|&x| x != 0));
    let tuned = im2col(&[-1, -1], 64)
        .swizzle(TensorMapSwizzle::SWIZZLE_128B)
        .l2_promotion(TensorMapL2promotion::L2_128B)
        .oob_fill(TensorMapFloatOOBfill::NAN_REQUEST_ZERO_FMA)
        .encode(&buf.as_view())
        .unwrap();
    assert_ne!(tuned.as_raw().opaque, map.as_raw().opaque);
    let nwc = TensorMapIm2col::new(
        TensorMapDataType::FLOAT16,
        &[c, w, n],
        &[c * 2, c * 2 * w],
        &[-1],
        &[0],
        64,
        16,
    )
    .encode(&buf.as_view())
    .unwrap();
    assert!(nwc.as_raw().opaque.iter().any(|&x| x != 0));
    let ndhwc = TensorMapIm2col::new(
        TensorMapDataType::FLOAT16,
        &[c, 4, 4, 4, n],
        &[c * 2, c * 2 * 4, c * 2 * 16, c * 2 * 64],
        &[-1, -1, -1],
        &[0, 0, 0],
        64,
        64,
    )
    .encode(&buf.as_view())
    .unwrap();
    assert!(ndhwc.as_raw().opaque.iter().any(|&x| x != 0));

    // Im2col-wide: compute capability 10.0 and up, says the reference.
    match wide.encode(&buf.as_view()) {
        Ok(m) => {
            assert!(m.as_raw().opaque.iter().any(|&x| x != 0));
            note(format!(
                "im2col-wide encoded on compute capability {major}.{minor}"
            ));
        }
        Err(e)
            if major < 10
                && matches!(
                    e.code(),
                    Some(ErrorCode::NOT_SUPPORTED | ErrorCode::INVALID_VALUE)
                ) =>
        {
            note(format!(
                "im2col-wide refused by the driver on compute capability {major}.{minor} \
                 (it needs 10.0): {e}"
            ));
        }
        Err(e @ (Error::Unsupported { .. } | Error::EntryPoint { .. })) => skip(format!(
            "the driver has no cuTensorMapEncodeIm2colWide: {e}"
        )),
        Err(e) => panic!("im2col-wide on {major}.{minor}: {e:?}"),
    }
}

#[gpu_test]
fn peer_3d_copies_move_data_between_contexts() {
    let ctx = gpu_or_skip!();
    let dev = ctx.device();
    let a = Context::new(dev, ContextFlags::SCHED_AUTO).unwrap();
    let b = Context::new(dev, ContextFlags::SCHED_AUTO).unwrap();
    let (w, h, d) = (20usize, 6usize, 3usize);
    let host = floats(w * h * d, 24);
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
