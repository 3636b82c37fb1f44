//! GPU tests: tensor maps (Tensor Map Object Management): a tiled map loaded with TMA, im2col
//! maps and their rules.

use cuda_driver::prelude::*;
use cuda_driver::tensor_map::TensorMapError;
use cuda_driver::{
    tensor_map::TensorMapIm2col, tensor_map::TensorMapIm2colWide, tensor_map::TensorMapTiled,
    types::ErrorCode, types::TensorMapDataType, types::TensorMapFloatOOBfill,
    types::TensorMapL2promotion, types::TensorMapSwizzle, DeviceBuffer, Error, LaunchConfig,
    Module,
};

use crate::common::{note, skip, still_usable, stream};

const TMA: &str = include_str!("../ptx/tma_kernels.ptx");

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
            Error::TensorMap(TensorMapError::Rule {
                rule: "global strides",
                ..
            })
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
        matches!(
            e,
            Error::TensorMap(TensorMapError::Rule { rule: "bounds", .. })
        ),
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
        Err(Error::TensorMap(TensorMapError::Rule {
            rule: "bounds",
            ..
        }))
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
    let rule = |r: cuda_driver::Result<cuda_driver::tensor_map::TensorMap>| match r {
        Err(Error::TensorMap(TensorMapError::Rule { rule, .. })) => rule,
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

/// The driver refuses a misaligned base address itself (`CUDA_ERROR_INVALID_VALUE`): 16 bytes,
/// 32 with 32-byte interleave, for tiled and im2col maps. An encoder whose rules held once
/// leaves that rule to the driver (`driver_checks_alignment` in tensor_map.rs) and explains
/// the refusal as the rule, the error a first encode gives.
#[gpu_test]
fn the_driver_refuses_a_misaligned_base_address() {
    use cuda_driver::sys;
    use std::ffi::c_void;
    let ctx = gpu_or_skip!();
    let (major, minor) = ctx.device().compute_capability().unwrap();
    if major < 9 {
        skip(format!(
            "compute capability {major}.{minor} has no tensor maps"
        ));
    }
    let buf = DeviceBuffer::<f32>::zeroed(&ctx, 64 * 64 + 64).unwrap();
    let base = buf.as_view().as_raw();
    let current = ctx.push().unwrap();
    // Tiled f32 maps over `base + offset` (the driver's answer).
    let tiled_raw = |offset: u64,
                     dims: &[u64],
                     strides: &[u64],
                     boxes: &[u32],
                     interleave: sys::CUtensorMapInterleave| {
        assert!(dims.len() <= 5 && strides.len() + 1 == dims.len() && boxes.len() == dims.len());
        let es = [1u32; 5];
        let mut m = sys::CUtensorMap { opaque: [0; 16] };
        // SAFETY: `dims`, `boxes` and the element strides have at least `dims.len()` entries,
        // `strides` one fewer (asserted); writes only the map.
        unsafe {
            sys::cuTensorMapEncodeTiled(
                &mut m,
                sys::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
                dims.len() as u32,
                (base + offset) as *mut c_void,
                dims.as_ptr(),
                strides.as_ptr(),
                boxes.as_ptr(),
                es.as_ptr(),
                interleave,
                sys::CU_TENSOR_MAP_SWIZZLE_NONE,
                sys::CU_TENSOR_MAP_L2_PROMOTION_NONE,
                sys::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
        }
    };
    let expected = |accepted: bool| {
        if accepted {
            sys::CUDA_SUCCESS
        } else {
            sys::CUDA_ERROR_INVALID_VALUE
        }
    };
    // Tiled, rank 2, no interleave: 16-byte alignment.
    let (dims, strides, boxes) = ([64u64, 64], [256u64], [32u32, 32]);
    for (offset, accepted) in [
        (0u64, true),
        (4, false),
        (8, false),
        (12, false),
        (16, true),
    ] {
        let r = tiled_raw(
            offset,
            &dims,
            &strides,
            &boxes,
            sys::CU_TENSOR_MAP_INTERLEAVE_NONE,
        );
        assert_eq!(r, expected(accepted), "tiled, base + {offset}");
    }
    // Tiled, rank 3, 32-byte interleave: 32-byte alignment.
    for (offset, accepted) in [(0u64, true), (16, false), (32, true)] {
        let r = tiled_raw(
            offset,
            &[8, 64, 4],
            &[128, 8192],
            &[8, 8, 1],
            sys::CU_TENSOR_MAP_INTERLEAVE_32B,
        );
        assert_eq!(
            r,
            expected(accepted),
            "tiled with 32-byte interleave, base + {offset}"
        );
    }
    // Im2col: NHWC f16, 64 channels, 16 x 16 pixels, 2 images (as in the test above): 16
    // bytes.
    let (c, w, h, n) = (64u64, 16u64, 16u64, 2u64);
    let halves = DeviceBuffer::<u16>::zeroed(&ctx, (c * w * h * n) as usize + 64).unwrap();
    let hbase = halves.as_view().as_raw();
    let (di, si) = ([c, w, h, n], [c * 2, c * 2 * w, c * 2 * w * h]);
    let (lower, upper, ei) = ([-1i32, -1], [0i32, 0], [1u32; 4]);
    for (offset, accepted) in [(0u64, true), (8, false), (16, true)] {
        let mut m = sys::CUtensorMap { opaque: [0; 16] };
        // SAFETY: rank-4 arrays (three strides, two corner coordinates each); writes only
        // the map.
        let r = unsafe {
            sys::cuTensorMapEncodeIm2col(
                &mut m,
                sys::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                4,
                (hbase + offset) as *mut c_void,
                di.as_ptr(),
                si.as_ptr(),
                lower.as_ptr(),
                upper.as_ptr(),
                64,
                128,
                ei.as_ptr(),
                sys::CU_TENSOR_MAP_INTERLEAVE_NONE,
                sys::CU_TENSOR_MAP_SWIZZLE_NONE,
                sys::CU_TENSOR_MAP_L2_PROMOTION_NONE,
                sys::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
        };
        assert_eq!(r, expected(accepted), "im2col, base + {offset}");
    }
    drop(current);

    // The crate: a first encode refuses in Rust; once the rules held, the driver refuses and
    // the error is the same rule; the encoder and the context stay usable.
    let is_alignment = |r: cuda_driver::Result<()>| {
        matches!(
            r,
            Err(Error::TensorMap(TensorMapError::Rule {
                rule: "base address alignment",
                ..
            }))
        )
    };
    let tiled = TensorMapTiled::new(TensorMapDataType::FLOAT32, &dims, &strides, &boxes);
    let shifted = buf.as_view().slice(1..).unwrap();
    let mut map = tiled.encode(&buf.as_view()).unwrap();
    assert!(
        is_alignment(tiled.encode_into(&shifted, &mut map)),
        "after the rules held"
    );
    let fresh = TensorMapTiled::new(TensorMapDataType::FLOAT32, &dims, &strides, &boxes);
    assert!(
        is_alignment(fresh.encode(&shifted).map(drop)),
        "a first encode"
    );
    // The raw-address encodes work in the current context.
    let current = ctx.push().unwrap();
    // SAFETY: the buffer holds the tensor at both addresses (64 floats to spare).
    let r = unsafe { tiled.encode_raw_into(base + 8, &mut map) };
    assert!(is_alignment(r), "a raw address after the rules held");
    // SAFETY: as above.
    unsafe { tiled.encode_raw_into(base + 16, &mut map) }.unwrap();
    drop(current);
    let im2col = TensorMapIm2col::new(
        TensorMapDataType::FLOAT16,
        &di,
        &si,
        &lower,
        &upper,
        64,
        128,
    );
    im2col.encode(&halves.as_view()).unwrap();
    let shifted_halves = halves.as_view().slice(4..).unwrap();
    assert!(
        is_alignment(im2col.encode(&shifted_halves).map(drop)),
        "im2col after the rules held"
    );
    im2col.encode_into(&halves.as_view(), &mut map).unwrap();
    still_usable(&ctx);
}
