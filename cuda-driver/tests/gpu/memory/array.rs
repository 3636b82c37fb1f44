//! GPU tests: CUDA arrays: every shape round trip, bad arrays refused, 1D copies and the 2D
//! descriptor, mipmapped arrays and their level views, NV12 planes, half arrays.

use cuda_driver::half::f16;
use cuda_driver::memory::LayoutError;
use cuda_driver::prelude::*;
use cuda_driver::{
    memory::Array, memory::ArrayDescriptor, memory::Copy2D, memory::MipmappedArray,
    texture::ResourceDesc, texture::TextureDesc, texture::TextureObject, types::AddressMode,
    types::Array3DFlags, types::ArrayFormat, types::ErrorCode, types::FilterMode,
    types::StreamFlags, vector::Uchar2, DeviceBuffer, Error, LaunchConfig, Module, PinnedBuffer,
    Stream,
};

use crate::common::{floats_by_halves, note, skip, still_usable, stream, TEX_KERNELS};
use crate::texture::{close, sample};

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
        let data = floats_by_halves(a.len(), i as u32 + 1);
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
    let mut a = Array::<cuda_driver::vector::Uchar4>::new_2d(&ctx, 5, 3, none).unwrap();
    let data: Vec<_> = (0..15u8)
        .map(|i| cuda_driver::vector::Uchar4::new(i, i + 1, i + 2, i + 3))
        .collect();
    a.copy_from_host(&data).unwrap();
    let mut back = vec![cuda_driver::vector::Uchar4::default(); 15];
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
        Err(Error::Layout(LayoutError::ZeroExtent { .. }))
    ));
    assert!(matches!(
        Array::<f32>::new_2d(&ctx, 4, 0, none),
        Err(Error::Layout(LayoutError::ZeroExtent { .. }))
    ));
    assert!(matches!(
        Array::<f32>::new_3d(&ctx, 4, 4, 0, none),
        Err(Error::Layout(LayoutError::ZeroExtent { .. }))
    ));
    assert!(matches!(
        Array::<f32>::new_cubemap_layered(&ctx, 4, 0, none),
        Err(Error::Layout(LayoutError::ZeroExtent { .. }))
    ));
    let mut d = ArrayDescriptor::of::<f32>(4, 4, 0, none);
    d.format = ArrayFormat::UNSIGNED_INT8;
    assert!(matches!(
        Array::<f32>::with_descriptor(&ctx, &d),
        Err(Error::Layout(LayoutError::ElementFormat { .. }))
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
    let module = Module::load_data(&ctx, TEX_KERNELS).unwrap();
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
    let before = cuda_driver::error::drop_error_count();
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
        cuda_driver::error::drop_error_count(),
        before,
        "an array or a level failed to be destroyed"
    );
    still_usable(&ctx);
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
        Err(Error::Layout(LayoutError::ElementFormat { .. }))
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
    let module = Module::load_data(&ctx, TEX_KERNELS).unwrap();
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
fn one_dimensional_array_copies_and_the_2d_descriptor() {
    let ctx = gpu_or_skip!();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let mut a = Array::<u32>::new_2d_descriptor(&ctx, 64, 0).unwrap();
    let d = a.descriptor_2d().unwrap();
    assert_eq!((d.width, d.height, d.channels), (64, 0, 1));
    let src: Vec<u32> = (100..164).collect();
    a.write_1d(0, &src).unwrap();
    let mut back = vec![0u32; 16];
    a.read_1d(8, &mut back).unwrap();
    assert_eq!(back, src[8..24]);
    // Array → device → array.
    let mut dev = DeviceBuffer::<u32>::zeroed(&ctx, 64).unwrap();
    a.copy_1d_to_device(0, &mut dev.as_view_mut()).unwrap();
    assert_eq!(dev.to_vec().unwrap(), src);
    let mut b = Array::<u32>::new_1d(&ctx, 64, Array3DFlags::empty()).unwrap();
    b.copy_1d_from_device(0, &dev.as_view()).unwrap();
    let mut c = Array::<u32>::new_1d(&ctx, 64, Array3DFlags::empty()).unwrap();
    c.copy_1d_from_array(0, &b, 32, 32).unwrap();
    let mut out = vec![0u32; 32];
    c.read_1d(0, &mut out).unwrap();
    assert_eq!(out, src[32..]);
    // Asynchronous host forms with pinned memory.
    let pinned = PinnedBuffer::from_slice(&ctx, &[1u32, 2, 3, 4], Default::default()).unwrap();
    let mut pinned_out = PinnedBuffer::<u32>::zeroed_alloc_host(&ctx, 4).unwrap();
    // SAFETY: the pinned buffers outlive the synchronisation below and are not touched before.
    unsafe {
        c.write_1d_async(60, &pinned, &s).unwrap();
        c.read_1d_async(60, &mut pinned_out, &s).unwrap();
    }
    s.synchronize().unwrap();
    assert_eq!(&pinned_out[..], &[1, 2, 3, 4]);
    // Bad input: out of bounds, and a 2D array for a 1D copy.
    assert!(matches!(
        c.read_1d(60, &mut [0u32; 8]),
        Err(Error::OutOfBounds { .. })
    ));
    let two_d = Array::<u32>::new_2d_descriptor(&ctx, 8, 8).unwrap();
    assert_eq!(two_d.descriptor_2d().unwrap().height, 8);
    assert!(matches!(
        two_d.read_1d(0, &mut [0u32; 1]),
        Err(Error::Layout(LayoutError::ArrayNot1D { .. }))
    ));
    assert!(matches!(
        Array::<u32>::new_2d_descriptor(&ctx, 0, 4),
        Err(Error::Layout(LayoutError::ZeroExtent { .. }))
    ));
    c.read_1d(0, &mut out).unwrap();
}
