//! GPU tests: texture objects (Texture Object Management) over arrays, linear and pitched
//! memory: filtering, address modes and border colours, read modes and sRGB, gather, layered
//! and cubemap textures, resource views; with bad input and the context usable afterwards.

use cuda_driver::memory::LayoutError;
use cuda_driver::prelude::*;
use cuda_driver::{
    memory::Array, memory::Copy2D, memory::MipmappedArray, memory::Pitched2D,
    texture::ResourceDesc, texture::ResourceViewDesc, texture::TextureDesc, texture::TextureObject,
    types::AddressMode, types::Array3DFlags, types::FilterMode, types::ResourceViewFormat,
    vector::Float2, vector::Uchar4, Context, DeviceBuffer, Error, LaunchConfig, Module,
};

use crate::common::{
    floats_by_halves, floats_by_quarters, grid2, still_usable, stream, TEX_KERNELS,
};

#[gpu_test]
fn textures_over_arrays_linear_and_pitched_memory_read_the_data() {
    let ctx = gpu_or_skip!();
    let module = Module::load_data(&ctx, TEX_KERNELS).unwrap();
    let s = stream(&ctx);
    let (w, h) = (40usize, 24usize);
    let host = floats_by_halves(w * h, 5);
    let fetch = module.function("tex_fetch_2d").unwrap();
    let (wi, hi) = (w as i32, h as i32);
    let mut out = DeviceBuffer::<f32>::zeroed(&ctx, w * h).unwrap();
    // From an array.
    let mut arr = Array::<f32>::new_2d(&ctx, w, h, Array3DFlags::empty()).unwrap();
    arr.copy_from_host(&host).unwrap();
    {
        let tex =
            TextureObject::new(&ResourceDesc::array(&arr), &TextureDesc::new(), None).unwrap();
        // SAFETY: tex_fetch_2d(tex, float*, int, int) writes w*h floats.
        unsafe { fetch.launch(&s, &grid2(w, h), (&tex, out.as_view_mut(), &wi, &hi)) }.unwrap();
        s.synchronize().unwrap();
        assert_eq!(out.to_vec().unwrap(), host);
        let td = tex.texture_desc().unwrap();
        assert_eq!(td.filter_mode(), FilterMode::POINT);
        let rd = tex.resource_desc().unwrap();
        assert_eq!(rd.resType, cuda_driver::sys::CU_RESOURCE_TYPE_ARRAY);
    }
    // From pitched memory.
    let mut p = Pitched2D::<f32>::new(&ctx, w, h).unwrap();
    Copy2D::new(w, h)
        .from_host(&host, w)
        .to_pitched(p.view_mut())
        .run()
        .unwrap();
    out.memset(0u32).unwrap();
    {
        let tex = TextureObject::new(&ResourceDesc::pitch_2d(p.view()), &TextureDesc::new(), None)
            .unwrap();
        // SAFETY: as above.
        unsafe { fetch.launch(&s, &grid2(w, h), (&tex, out.as_view_mut(), &wi, &hi)) }.unwrap();
        s.synchronize().unwrap();
        assert_eq!(out.to_vec().unwrap(), host);
    }
    // From linear memory.
    let lin = DeviceBuffer::from_slice(&ctx, &host).unwrap();
    let mut out2 = DeviceBuffer::<f32>::zeroed(&ctx, w * h).unwrap();
    {
        let tex = TextureObject::new(
            &ResourceDesc::linear(lin.as_view()),
            &TextureDesc::new(),
            None,
        )
        .unwrap();
        let n = (w * h) as i32;
        let f = module.function("tex_fetch_linear").unwrap();
        // SAFETY: tex_fetch_linear(tex, float*, int) writes n floats.
        unsafe {
            f.launch(
                &s,
                &LaunchConfig::for_num_elems(w * h).unwrap(),
                (&tex, out2.as_view_mut(), &n),
            )
        }
        .unwrap();
        s.synchronize().unwrap();
        assert_eq!(out2.to_vec().unwrap(), host);
    }
    // Empty linear memory: refused in Rust.
    let empty = DeviceBuffer::<f32>::new(&ctx, 0).unwrap();
    assert!(matches!(
        TextureObject::new(
            &ResourceDesc::linear(empty.as_view()),
            &TextureDesc::new(),
            None
        ),
        Err(Error::Layout(LayoutError::ZeroExtent { .. }))
    ));
    still_usable(&ctx);
}

#[gpu_test]
fn filtering_address_modes_and_border_color_sample_as_described() {
    let ctx = gpu_or_skip!();
    let module = Module::load_data(&ctx, TEX_KERNELS).unwrap();
    let f = module.function("tex_sample_2d").unwrap();
    let s = stream(&ctx);
    // A 4x1 ramp 0, 10, 20, 30.
    let mut arr = Array::<f32>::new_2d(&ctx, 4, 1, Array3DFlags::empty()).unwrap();
    arr.copy_from_host(&[0.0, 10.0, 20.0, 30.0]).unwrap();
    let u = DeviceBuffer::from_slice(&ctx, &[1.0f32, 1.5, -3.0, 5.5]).unwrap();
    let v = DeviceBuffer::from_slice(&ctx, &[0.5f32; 4]).unwrap();
    let mut out = DeviceBuffer::<f32>::zeroed(&ctx, 4).unwrap();
    let n = 4i32;
    let sample = |desc: TextureDesc, out: &mut DeviceBuffer<f32>| {
        let tex = TextureObject::new(&ResourceDesc::array(&arr), &desc, None).unwrap();
        // SAFETY: tex_sample_2d(tex, const float*, const float*, float*, int), n = 4.
        unsafe {
            f.launch(
                &s,
                &LaunchConfig::new(1, 32),
                (&tex, u.as_view(), v.as_view(), out.as_view_mut(), &n),
            )
        }
        .unwrap();
        s.synchronize().unwrap();
        out.to_vec().unwrap()
    };
    // Linear filtering at x = 1.0 is halfway between texels 0 and 1; at 1.5 texel 1 exactly.
    // Border mode with colour 42 outside.
    let got = sample(
        TextureDesc::new()
            .filter(FilterMode::LINEAR)
            .address_mode(AddressMode::BORDER)
            .border_color([42.0, 0.0, 0.0, 0.0]),
        &mut out,
    );
    assert_eq!(got[0], 5.0);
    assert_eq!(got[1], 10.0);
    assert_eq!(got[2], 42.0);
    assert_eq!(got[3], 42.0);
    // Clamp, point filtering: outside reads the edge texels.
    let got = sample(
        TextureDesc::new().address_mode(AddressMode::CLAMP),
        &mut out,
    );
    assert_eq!(got, [10.0, 10.0, 0.0, 30.0]);
}

#[gpu_test]
fn layered_and_cubemap_textures_address_layers_and_faces() {
    let ctx = gpu_or_skip!();
    let module = Module::load_data(&ctx, TEX_KERNELS).unwrap();
    let s = stream(&ctx);
    // Cubemap: face f holds f + 1.
    let mut cube = Array::<f32>::new_cubemap(&ctx, 4, Array3DFlags::empty()).unwrap();
    let data: Vec<f32> = (0..6)
        .flat_map(|f| std::iter::repeat_n(f as f32 + 1.0, 16))
        .collect();
    cube.copy_from_host(&data).unwrap();
    let tex = TextureObject::new(
        &ResourceDesc::array(&cube),
        &TextureDesc::new()
            .normalized_coords(true)
            .seamless_cubemap(true),
        None,
    )
    .unwrap();
    let mut out = DeviceBuffer::<f32>::zeroed(&ctx, 6).unwrap();
    let f = module.function("tex_cubemap_faces").unwrap();
    // SAFETY: tex_cubemap_faces(tex, float*) writes 6 floats.
    unsafe { f.launch(&s, &LaunchConfig::new(1, 32), (&tex, out.as_view_mut())) }.unwrap();
    s.synchronize().unwrap();
    assert_eq!(out.to_vec().unwrap(), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    // A resource view restricted to one layer of a layered texture.
    let mut layered = Array::<f32>::new_layered_2d(&ctx, 8, 8, 3, Array3DFlags::empty()).unwrap();
    layered
        .copy_from_host(&floats_by_halves(8 * 8 * 3, 4))
        .unwrap();
    let view = ResourceViewDesc::new(ResourceViewFormat::FLOAT_1X32, 8, 8, 3).layers(1, 2);
    let tex = TextureObject::new(
        &ResourceDesc::array(&layered),
        &TextureDesc::new(),
        Some(&view),
    )
    .unwrap();
    let got = tex.resource_view_desc().unwrap();
    assert_eq!((got.as_raw().firstLayer, got.as_raw().lastLayer), (1, 2));
}

/// Samples `tex` at the points `uv` with `tex_sample_2d` (`channels` 1: `tex2D<float>`) or
/// `tex_sample_2d_rgba` (`channels` 4: `tex2D<float4>`); `channels` floats per point.
pub(crate) fn sample(
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

/// `got` is `want` within `tol`, relative to values above 1 in magnitude.
pub(crate) fn close(got: &[f32], want: &[f32], tol: f32, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * w.abs().max(1.0),
            "{what}: element {i} is {g}, expected {w} (±{tol}); all: {got:?}"
        );
    }
}

#[gpu_test]
fn texture_gather_returns_the_four_texels_of_the_bilinear_footprint() {
    let ctx = gpu_or_skip!();
    let module = Module::load_data(&ctx, TEX_KERNELS).unwrap();
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
    let module = Module::load_data(&ctx, TEX_KERNELS).unwrap();
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
            .contains(cuda_driver::types::TextureFlags::SRGB));
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
    let module = Module::load_data(&ctx, TEX_KERNELS).unwrap();
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
    let data = floats_by_quarters(w * h * 3, 23);
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
