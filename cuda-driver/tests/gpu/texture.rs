//! GPU tests: CUDA arrays, pitched memory, 2D/3D copies, texture and surface objects, tensor
//! maps; with bad input (zero extents, refused flags, copies out of bounds, broken
//! tensor-map rules) and the context usable afterwards.

use cuda_driver::prelude::*;
use cuda_driver::{
    AddressMode, Array, Array3DFlags, ArrayDescriptor, ArrayFormat, Context, Copy2D, Copy3D,
    DeviceBuffer, Error, FilterMode, LaunchConfig, MipmappedArray, Module, Pitched2D, ResourceDesc,
    ResourceViewDesc, ResourceViewFormat, Stream, StreamFlags, SurfaceObject, TensorMapDataType,
    TensorMapTiled, TextureDesc, TextureObject,
};

use crate::common::xorshift32;

const TEX: &str = include_str!("../ptx/tex_kernels.ptx");
const TMA: &str = include_str!("../ptx/tma_kernels.ptx");

fn floats(n: usize, seed: u32) -> Vec<f32> {
    xorshift32(n, seed)
        .map(|x| (x % 65_536) as f32 * 0.5)
        .collect()
}

fn stream(ctx: &Context) -> Stream {
    Stream::new(ctx, StreamFlags::NON_BLOCKING).unwrap()
}

/// A small copy that must work: the context is still usable.
fn still_usable(ctx: &Context) {
    let b = DeviceBuffer::from_slice(ctx, &[1u32, 2, 3]).unwrap();
    assert_eq!(b.to_vec().unwrap(), [1, 2, 3]);
}

fn grid2(w: usize, h: usize) -> LaunchConfig {
    LaunchConfig::new(((w as u32).div_ceil(16), (h as u32).div_ceil(16)), (16, 16))
}

#[gpu_test]
fn arrays_of_every_shape_round_trip() {
    let ctx = gpu_or_skip!();
    let none = Array3DFlags::empty();
    let cases: Vec<(&str, Array<f32>)> = vec![
        ("1d", Array::new_1d(&ctx, 100, none).unwrap()),
        ("2d", Array::new_2d(&ctx, 33, 17, none).unwrap()),
        ("3d", Array::new_3d(&ctx, 9, 7, 5, none).unwrap()),
        (
            "layered 1d",
            Array::new_layered_1d(&ctx, 31, 4, none).unwrap(),
        ),
        (
            "layered 2d",
            Array::new_layered_2d(&ctx, 16, 8, 3, none).unwrap(),
        ),
        ("cubemap", Array::new_cubemap(&ctx, 8, none).unwrap()),
        (
            "cubemap layered",
            Array::new_cubemap_layered(&ctx, 4, 2, none).unwrap(),
        ),
        (
            "surface",
            Array::new_2d(&ctx, 8, 8, Array3DFlags::SURFACE_LDST).unwrap(),
        ),
        (
            "gather",
            Array::new_2d(&ctx, 8, 8, Array3DFlags::TEXTURE_GATHER).unwrap(),
        ),
    ];
    for (i, (name, mut a)) in cases.into_iter().enumerate() {
        let data = floats(a.len(), i as u32 + 1);
        a.copy_from_host(&data).unwrap();
        let mut back = vec![0.0f32; a.len()];
        a.copy_to_host(&mut back).unwrap();
        assert_eq!(back, data, "{name}");
        let d = a.descriptor().unwrap();
        assert_eq!(
            (d.width, d.format, d.channels),
            (a.width(), ArrayFormat::FLOAT, 1),
            "{name}"
        );
        assert_eq!((d.height, d.depth), (a.height(), a.depth()), "{name}");
        assert!(
            d.flags
                .contains(a.desc().flags & (Array3DFlags::LAYERED | Array3DFlags::CUBEMAP)),
            "{name}"
        );
    }
    // Vector elements: four channels.
    let mut a = Array::<cuda_driver::Uchar4>::new_2d(&ctx, 5, 3, none).unwrap();
    let data: Vec<_> = (0..15u8)
        .map(|i| cuda_driver::Uchar4::new(i, i + 1, i + 2, i + 3))
        .collect();
    a.copy_from_host(&data).unwrap();
    let mut back = vec![cuda_driver::Uchar4::default(); 15];
    a.copy_to_host(&mut back).unwrap();
    assert_eq!(back, data);
    assert_eq!(a.descriptor().unwrap().channels, 4);
}

#[gpu_test]
fn bad_arrays_are_refused_and_the_context_survives() {
    let ctx = gpu_or_skip!();
    let none = Array3DFlags::empty();
    assert!(matches!(
        Array::<f32>::new_1d(&ctx, 0, none),
        Err(Error::ZeroExtent { .. })
    ));
    assert!(matches!(
        Array::<f32>::new_2d(&ctx, 4, 0, none),
        Err(Error::ZeroExtent { .. })
    ));
    assert!(matches!(
        Array::<f32>::new_3d(&ctx, 4, 4, 0, none),
        Err(Error::ZeroExtent { .. })
    ));
    assert!(matches!(
        Array::<f32>::new_cubemap_layered(&ctx, 4, 0, none),
        Err(Error::ZeroExtent { .. })
    ));
    let mut d = ArrayDescriptor::of::<f32>(4, 4, 0, none);
    d.format = ArrayFormat::UNSIGNED_INT8;
    assert!(matches!(
        Array::<f32>::with_descriptor(&ctx, &d),
        Err(Error::ElementFormat { .. })
    ));
    // A combination the driver refuses: a cubemap face size past the device's limit.
    let e = Array::<f32>::new_cubemap(&ctx, 1 << 20, none).unwrap_err();
    assert!(e.code().is_some(), "{e:?}");
    // A whole-array copy of the wrong length.
    let mut a = Array::<f32>::new_2d(&ctx, 4, 4, none).unwrap();
    assert!(matches!(
        a.copy_from_host(&[0.0; 15]),
        Err(Error::LengthMismatch { .. })
    ));
    still_usable(&ctx);
}

#[gpu_test]
fn mipmapped_levels_shrink_and_are_sampled_by_lod() {
    let ctx = gpu_or_skip!();
    let mut m = MipmappedArray::<f32>::new_2d(&ctx, 16, 16, 4, Array3DFlags::empty()).unwrap();
    for l in 0..4u32 {
        let mut lv = m.level_mut(l).unwrap();
        let side = 16 >> l;
        assert_eq!((lv.width(), lv.height()), (side, side));
        lv.copy_from_host(&vec![l as f32 * 10.0; side * side])
            .unwrap();
    }
    assert!(matches!(m.level(4), Err(Error::OutOfBounds { .. })));
    let module = Module::load_data(&ctx, TEX).unwrap();
    let f = module.function("tex_lod").unwrap();
    let tex = TextureObject::new(
        &ResourceDesc::mipmapped_array(&m),
        &TextureDesc::new()
            .normalized_coords(true)
            .filter(FilterMode::POINT)
            .mipmap_filter(FilterMode::POINT)
            .mipmap_level_clamp(0.0, 3.0),
        None,
    )
    .unwrap();
    let mut out = DeviceBuffer::<f32>::zeroed(&ctx, 4).unwrap();
    let s = stream(&ctx);
    let levels = 4i32;
    // SAFETY: tex_lod(cudaTextureObject_t, float*, int) writes out[0..levels].
    unsafe {
        f.launch(
            &s,
            &LaunchConfig::new(1, 32),
            (&tex, out.as_view_mut(), &levels),
        )
    }
    .unwrap();
    s.synchronize().unwrap();
    assert_eq!(out.to_vec().unwrap(), [0.0, 10.0, 20.0, 30.0]);
}

/// Issue #23, hole 6: the levels of a mipmapped array are borrowed views, never owned
/// arrays. Each level is written and read through them (whole-level copies, the copy
/// builders, and the 1D copies of a 1D mipmapped array); swapping two exclusive views swaps
/// what they borrow and moves no level out (each array keeps its own); and dropping the
/// arrays destroys every level once, with no release failing. (That a level cannot be moved
/// out through `mem::swap`/`mem::replace` is the `compile_fail` examples on `ArrayRefMut`.)
#[gpu_test]
fn mipmap_level_views_write_and_read_levels_and_a_swap_of_views_moves_no_level() {
    let ctx = gpu_exclusive_or_skip!();
    let none = Array3DFlags::empty();
    let before = cuda_driver::drop_error_count();
    let mut a = MipmappedArray::<f32>::new_2d(&ctx, 8, 8, 3, none).unwrap();
    let mut b = MipmappedArray::<f32>::new_2d(&ctx, 8, 8, 3, none).unwrap();
    let area = |l: u32| (8usize >> l) * (8usize >> l);
    for l in 0..3u32 {
        a.level_mut(l)
            .unwrap()
            .copy_from_host(&vec![l as f32; area(l)])
            .unwrap();
        b.level_mut(l)
            .unwrap()
            .copy_from_host(&vec![100.0 + l as f32; area(l)])
            .unwrap();
    }
    let read = |m: &MipmappedArray<f32>, l: u32| {
        let level = m.level(l).unwrap();
        let mut v = vec![0.0f32; level.len()];
        level.copy_to_host(&mut v).unwrap();
        v
    };
    for l in 0..3u32 {
        assert_eq!(read(&a, l), vec![l as f32; area(l)], "level {l} of a");
        assert_eq!(
            read(&b, l),
            vec![100.0 + l as f32; area(l)],
            "level {l} of b"
        );
    }
    // Swapping two exclusive views swaps the borrows, nothing else.
    {
        let mut va = a.level_mut(1).unwrap();
        let mut vb = b.level_mut(1).unwrap();
        std::mem::swap(&mut va, &mut vb);
        va.copy_from_host(&[7.0; 16]).unwrap(); // level 1 of b
        vb.copy_from_host(&[8.0; 16]).unwrap(); // level 1 of a
    }
    assert_eq!(read(&a, 1), [8.0; 16]);
    assert_eq!(read(&b, 1), [7.0; 16]);
    // The copy builders take views where they take arrays: level 0 of a into level 0 of b.
    Copy2D::new(8, 8)
        .from_array(a.level(0).unwrap())
        .to_array(b.level_mut(0).unwrap())
        .run()
        .unwrap();
    assert_eq!(read(&b, 0), [0.0; 64]);
    // The 1D copies on a level of a 1D mipmapped array (level 1: 8 elements).
    let mut line =
        MipmappedArray::<u32>::new(&ctx, &ArrayDescriptor::of::<u32>(16, 0, 0, none), 2).unwrap();
    line.level_mut(1).unwrap().write_1d(2, &[5, 6, 7]).unwrap();
    let mut got = [0u32; 3];
    line.level(1).unwrap().read_1d(2, &mut got).unwrap();
    assert_eq!(got, [5, 6, 7]);
    assert!(matches!(
        line.level(1).unwrap().read_1d(6, &mut got),
        Err(Error::OutOfBounds { .. })
    ));
    drop((a, b, line));
    assert_eq!(
        cuda_driver::drop_error_count(),
        before,
        "an array or a level failed to be destroyed"
    );
    still_usable(&ctx);
}

#[gpu_test]
fn pitched_memory_copies_and_memsets_by_rows() {
    let ctx = gpu_or_skip!();
    let (w, h) = (100usize, 37usize);
    let mut p = Pitched2D::<f32>::new(&ctx, w, h).unwrap();
    assert!(p.pitch() >= w * 4 && p.pitch() % 4 == 0);
    let host = floats(w * h, 3);
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
        Err(Error::ZeroExtent { .. })
    ));
}

#[gpu_test]
fn copies_between_every_kind_keep_the_data() {
    let ctx = gpu_or_skip!();
    let (w, h, d) = (24usize, 10usize, 3usize);
    let host = floats(w * h * d, 9);
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
            Error::RegionOutOfBounds {
                operand: "destination",
                axis: "x",
                ..
            }
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
            Error::RegionOutOfBounds {
                operand: "source",
                ..
            }
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
            Error::RegionOutOfBounds {
                operand: "source",
                axis: "bytes",
                ..
            }
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
            Error::RegionOutOfBounds {
                axis: "x (bytes)",
                ..
            }
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
fn textures_over_arrays_linear_and_pitched_memory_read_the_data() {
    let ctx = gpu_or_skip!();
    let module = Module::load_data(&ctx, TEX).unwrap();
    let s = stream(&ctx);
    let (w, h) = (40usize, 24usize);
    let host = floats(w * h, 5);
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
        Err(Error::ZeroExtent { .. })
    ));
    still_usable(&ctx);
}

#[gpu_test]
fn filtering_address_modes_and_border_color_sample_as_described() {
    let ctx = gpu_or_skip!();
    let module = Module::load_data(&ctx, TEX).unwrap();
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
    let module = Module::load_data(&ctx, TEX).unwrap();
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
    layered.copy_from_host(&floats(8 * 8 * 3, 4)).unwrap();
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

#[gpu_test]
fn surfaces_write_arrays_and_need_the_flag() {
    let ctx = gpu_or_skip!();
    let module = Module::load_data(&ctx, TEX).unwrap();
    let s = stream(&ctx);
    let (w, h) = (37usize, 21usize);
    let arr = Array::<f32>::new_2d(&ctx, w, h, Array3DFlags::SURFACE_LDST).unwrap();
    {
        let surf = SurfaceObject::new(&arr).unwrap();
        let f = module.function("surf_write_2d").unwrap();
        let (wi, hi, scale) = (w as i32, h as i32, 0.5f32);
        // SAFETY: surf_write_2d(surf, int, int, float) writes the w x h array.
        unsafe { f.launch(&s, &grid2(w, h), (&surf, &wi, &hi, &scale)) }.unwrap();
        s.synchronize().unwrap();
        assert_eq!(
            surf.resource_desc().unwrap().resType,
            cuda_driver::sys::CU_RESOURCE_TYPE_ARRAY
        );
    }
    let mut back = vec![0.0f32; w * h];
    arr.copy_to_host(&mut back).unwrap();
    for (i, &v) in back.iter().enumerate() {
        assert_eq!(v, i as f32 * 0.5, "element {i}");
    }
    let plain = Array::<f32>::new_2d(&ctx, 4, 4, Array3DFlags::empty()).unwrap();
    assert!(matches!(
        SurfaceObject::new(&plain),
        Err(Error::MissingArrayFlag { .. })
    ));
    still_usable(&ctx);
}

#[gpu_test]
fn tensor_map_loads_a_tile_with_tma() {
    let ctx = gpu_or_skip!();
    let (major, _) = ctx.device().compute_capability().unwrap();
    let (w, h) = (96usize, 80usize);
    let host: Vec<f32> = (0..w * h).map(|i| i as f32).collect();
    let buf = DeviceBuffer::from_slice(&ctx, &host).unwrap();
    // Rules broken: refused in Rust, on any device.
    let e = TensorMapTiled::new(
        TensorMapDataType::FLOAT32,
        &[w as u64, h as u64],
        &[(w * 4 + 4) as u64],
        &[32, 16],
    )
    .encode(&buf.as_view())
    .unwrap_err();
    assert!(
        matches!(
            e,
            Error::TensorMapRule {
                rule: "global strides",
                ..
            }
        ),
        "{e:?}"
    );
    let e = TensorMapTiled::new(
        TensorMapDataType::FLOAT32,
        &[w as u64, h as u64 + 1],
        &[(w * 4) as u64],
        &[32, 16],
    )
    .encode(&buf.as_view())
    .unwrap_err();
    assert!(
        matches!(e, Error::TensorMapRule { rule: "bounds", .. }),
        "{e:?}"
    );
    if major < 9 {
        crate::common::skip(format!(
            "compute capability {major}.x has no TMA (the rule checks above ran)"
        ));
    }
    let (bw, bh) = (32usize, 16usize);
    let map = TensorMapTiled::new(
        TensorMapDataType::FLOAT32,
        &[w as u64, h as u64],
        &[(w * 4) as u64],
        &[bw as u32, bh as u32],
    )
    .encode(&buf.as_view())
    .unwrap();
    // Encoding into an existing map (here one of another tensor) gives the same map, also
    // the second time, through the cached rule check, which still checks the bounds.
    let enc = TensorMapTiled::new(
        TensorMapDataType::FLOAT32,
        &[w as u64, h as u64],
        &[(w * 4) as u64],
        &[bw as u32, bh as u32],
    );
    let mut again = TensorMapTiled::new(TensorMapDataType::FLOAT32, &[64, 8], &[256], &[16, 8])
        .encode(&buf.as_view())
        .unwrap();
    assert_ne!(again.as_raw().opaque, map.as_raw().opaque);
    for _ in 0..2 {
        enc.encode_into(&buf.as_view(), &mut again).unwrap();
        assert_eq!(again.as_raw().opaque, map.as_raw().opaque);
    }
    let short = buf.as_view().slice(..w * h - 1).unwrap();
    assert!(matches!(
        enc.encode_into(&short, &mut again),
        Err(Error::TensorMapRule { rule: "bounds", .. })
    ));
    let module = Module::load_data(&ctx, TMA).unwrap();
    let f = module.function("tma_load_tile").unwrap();
    let s = stream(&ctx);
    let mut out = DeviceBuffer::<f32>::zeroed(&ctx, bw * bh).unwrap();
    // A tile inside, and one hanging over the right and bottom edges (zero-filled).
    for (x0, y0) in [(8i32, 5i32), (80, 72)] {
        let (bwi, bhi) = (bw as i32, bh as i32);
        // SAFETY: tma_load_tile(const __grid_constant__ CUtensorMap, float*, int, int, int, int)
        // writes bw*bh floats; the map describes `buf`, alive until the sync.
        unsafe {
            f.launch(
                &s,
                &LaunchConfig::new(1, 128),
                (&map, out.as_view_mut(), &x0, &y0, &bwi, &bhi),
            )
        }
        .unwrap();
        s.synchronize().unwrap();
        let got = out.to_vec().unwrap();
        for ty in 0..bh {
            for tx in 0..bw {
                let (x, y) = (x0 as usize + tx, y0 as usize + ty);
                let want = if x < w && y < h { host[y * w + x] } else { 0.0 };
                assert_eq!(
                    got[ty * bw + tx],
                    want,
                    "tile ({x0}, {y0}) element ({tx}, {ty})"
                );
            }
        }
    }
    // The same map pointed at another buffer reads that one.
    let host2: Vec<f32> = host.iter().map(|v| -v).collect();
    let buf2 = DeviceBuffer::from_slice(&ctx, &host2).unwrap();
    let mut map2 = map;
    map2.replace_address(&buf2.as_view()).unwrap();
    let (x0, y0, bwi, bhi) = (0i32, 0i32, bw as i32, bh as i32);
    // SAFETY: as above, over buf2.
    unsafe {
        f.launch(
            &s,
            &LaunchConfig::new(1, 128),
            (&map2, out.as_view_mut(), &x0, &y0, &bwi, &bhi),
        )
    }
    .unwrap();
    s.synchronize().unwrap();
    assert_eq!(out.to_vec().unwrap()[1], -1.0);
    still_usable(&ctx);
}
