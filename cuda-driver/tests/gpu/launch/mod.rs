//! GPU tests: launches (Execution Control): checked, unchecked and through views, extended
//! attributes, packed parameter buffers, structs and vector types by value, dynamic shared
//! memory, cooperative and cluster launches, argument checks and bad configurations.
//! Functions (attributes, loading, parameter layouts): `function`; what a checked launch
//! refuses about streams and contexts: `checks`. Occupancy: `occupancy`.

use cuda_driver::launch::LaunchError;
use cuda_driver::prelude::*;
use cuda_driver::{
    launch::LaunchAttributes, launch::ParamBuffer, launch::ParamInfo, types::ContextFlags,
    types::DeviceAttribute, types::ErrorCode, vector::Double2, vector::Float2, vector::Float4,
    vector::Int4, Context, DeviceBuffer, DeviceRepr, Error, LaunchConfig, Library, Module, Stream,
};

use crate::common::{skip, stream, xorshift32, TEST_KERNELS};

mod checks;
mod function;

const PARAM_BUFFER: &str = include_str!("../../ptx/param_buffer.ptx");

const CLUSTER: &str = include_str!("../../ptx/cluster.ptx");

/// Non-zero, position-dependent floats, different per `seed`.
fn floats(n: usize, seed: u32) -> Vec<f32> {
    xorshift32(n, seed)
        .map(|x| (x % 10_000) as f32 * 0.25 + 1.0)
        .collect()
}

pub(crate) fn kernels(ctx: &Context) -> Module {
    Module::load_data(ctx, TEST_KERNELS).unwrap()
}

/// Runs saxpy through `launch` and checks y = a * x + y.
fn check_saxpy(
    ctx: &Context,
    launch: impl FnOnce(&Stream, &LaunchConfig, f32, &DeviceBuffer<f32>, &mut DeviceBuffer<f32>, i32),
) {
    let s = stream(ctx);
    let (x, y) = (floats(10_001, 11), floats(10_001, 12));
    let dx = DeviceBuffer::from_slice(ctx, &x).unwrap();
    let mut dy = DeviceBuffer::from_slice(ctx, &y).unwrap();
    let cfg = LaunchConfig::for_num_elems(x.len()).unwrap();
    launch(&s, &cfg, 2.5, &dx, &mut dy, x.len() as i32);
    s.synchronize().unwrap();
    let expected: Vec<f32> = x.iter().zip(&y).map(|(x, y)| 2.5 * x + y).collect();
    assert_eq!(dy.to_vec().unwrap(), expected);
}

#[gpu_test]
fn saxpy_checked_unchecked_and_through_views() {
    let ctx = gpu_or_skip!();
    let m = kernels(&ctx);
    let f = m.function("saxpy").unwrap();
    check_saxpy(&ctx, |s, cfg, a, x, y, n| {
        // SAFETY: saxpy(float a, const float* x, float* y, int n); x and y hold n floats.
        unsafe { f.launch(s, cfg, (&a, x.as_view(), y.as_view_mut(), &n)) }.unwrap();
    });
    check_saxpy(&ctx, |s, cfg, a, x, y, n| {
        // SAFETY: as above, arguments matching by construction.
        unsafe { f.launch_unchecked(s, cfg, (&a, x.as_view(), y.as_view_mut(), &n)) }.unwrap();
    });
    check_saxpy(&ctx, |s, cfg, a, x, y, n| {
        // SAFETY: as above, with views in place of the buffers.
        unsafe { f.launch(s, cfg, (&a, x.as_view(), &y.as_view_mut(), &n)) }.unwrap();
    });
    check_saxpy(&ctx, |s, cfg, a, x, y, n| {
        // SAFETY: as above, through cuLaunchKernelEx without attributes.
        unsafe {
            f.launch_ex(
                s,
                cfg,
                &LaunchAttributes::new(),
                (&a, x.as_view(), y.as_view_mut(), &n),
            )
        }
        .unwrap();
    });
    check_saxpy(&ctx, |s, cfg, a, x, y, n| {
        // SAFETY: as above.
        unsafe {
            f.launch_ex_unchecked(
                s,
                cfg,
                &LaunchAttributes::new(),
                (&a, x.as_view(), y.as_view_mut(), &n),
            )
        }
        .unwrap();
    });
    // The same through a library Kernel.
    let lib = Library::load_data(TEST_KERNELS).unwrap();
    let k = lib.kernel("saxpy").unwrap();
    check_saxpy(&ctx, |s, cfg, a, x, y, n| {
        // SAFETY: as above.
        unsafe { k.launch(s, cfg, (&a, x.as_view(), y.as_view_mut(), &n)) }.unwrap();
    });
    check_saxpy(&ctx, |s, cfg, a, x, y, n| {
        // SAFETY: as above.
        unsafe { k.launch_unchecked(s, cfg, (&a, x.as_view(), y.as_view_mut(), &n)) }.unwrap();
    });
}

#[gpu_test]
fn the_driver_reports_saxpys_parameters() {
    let ctx = gpu_or_skip!();
    let f = kernels(&ctx).function("saxpy").unwrap();
    let Some(params) = f.params().unwrap() else {
        skip("no cuFuncGetParamInfo (a driver older than CUDA 12.4)");
    };
    let p = |offset, size| ParamInfo { offset, size };
    assert_eq!(params, [p(0, 4), p(8, 8), p(16, 8), p(24, 4)]);
    let k = Library::load_data(TEST_KERNELS)
        .unwrap()
        .kernel("saxpy")
        .unwrap();
    assert_eq!(k.params().unwrap().unwrap(), params);
}

/// The test kernels' `struct Params { int a; double b; float4 c; }` (size 32, align 16).
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug)]
struct Params {
    a: i32,
    b: f64,
    c: [f32; 4],
}

// SAFETY: repr(C) of DeviceRepr fields with the device's layout (size 32, align 16); every bit
// pattern of the fields is valid.
unsafe impl DeviceRepr for Params {}

#[gpu_test]
fn a_struct_passes_by_value() {
    let ctx = gpu_or_skip!();
    assert_eq!(
        (
            std::mem::size_of::<Params>(),
            std::mem::align_of::<Params>()
        ),
        (32, 16)
    );
    let f = kernels(&ctx).function("struct_param").unwrap();
    let s = stream(&ctx);
    let p = Params {
        a: -17,
        b: 2.75,
        c: [1.5, -2.5, 3.25, 4.0],
    };
    let mut out = DeviceBuffer::from_slice(&ctx, &[0.0f32; 6]).unwrap();
    // SAFETY: struct_param(Params p, float* out) writes out[0..6).
    unsafe { f.launch(&s, &LaunchConfig::new(1, 1), (&p, out.as_view_mut())) }.unwrap();
    s.synchronize().unwrap();
    assert_eq!(out.to_vec().unwrap(), [-17.0, 2.75, 1.5, -2.5, 3.25, 4.0]);
}

#[gpu_test]
fn vector_types_pass_by_value() {
    let ctx = gpu_or_skip!();
    let f = kernels(&ctx).function("vector_types").unwrap();
    let s = stream(&ctx);
    let (a, b, c, d) = (
        Float2::new(1.5, -2.0),
        Float4::new(3.0, 4.5, -5.0, 6.25),
        Int4::new(7, -8, 9, 10),
        Double2::new(11.5, -12.25),
    );
    let mut out = DeviceBuffer::from_slice(&ctx, &[0.0f32; 12]).unwrap();
    // SAFETY: vector_types(float2, float4, int4, double2, float* out) writes out[0..12).
    unsafe {
        f.launch(
            &s,
            &LaunchConfig::new(1, 1),
            (&a, &b, &c, &d, out.as_view_mut()),
        )
    }
    .unwrap();
    s.synchronize().unwrap();
    assert_eq!(
        out.to_vec().unwrap(),
        [1.5, -2.0, 3.0, 4.5, -5.0, 6.25, 7.0, -8.0, 9.0, 10.0, 11.5, -12.25]
    );
}

#[gpu_test]
fn dynamic_shared_memory() {
    let ctx = gpu_or_skip!();
    let f = kernels(&ctx).function("use_dyn_shared").unwrap();
    let s = stream(&ctx);
    for n in [1usize, 33, 256, 1024] {
        let mut out = DeviceBuffer::from_slice(&ctx, &vec![-1.0f32; n]).unwrap();
        let cfg = LaunchConfig::new(1, n as u32).with_shared_mem(4 * n as u32);
        // SAFETY: use_dyn_shared(float* out, int n): one block of n threads with n floats of
        // dynamic shared memory writes out[0..n).
        unsafe { f.launch(&s, &cfg, (out.as_view_mut(), &(n as i32))) }.unwrap();
        s.synchronize().unwrap();
        let expected: Vec<f32> = (0..n).map(|t| (n - 1 - t) as f32).collect();
        assert_eq!(out.to_vec().unwrap(), expected, "n = {n}");
    }
}

#[gpu_test]
fn argument_less_launches() {
    let ctx = gpu_or_skip!();
    let lib = Library::load_data(TEST_KERNELS).unwrap();
    let mut counter = lib.global::<i32>("dev_counter", &ctx).unwrap();
    counter.copy_from_host(&[1000]).unwrap();
    let k = lib.kernel("increment_counter").unwrap();
    let s = stream(&ctx);
    // SAFETY: increment_counter() adds 1 per thread to dev_counter.
    unsafe { k.launch(&s, &LaunchConfig::new(2, 50), ()) }.unwrap();
    // SAFETY: as above.
    unsafe { k.launch_unchecked(&s, &LaunchConfig::new(1, 7), ()) }.unwrap();
    s.synchronize().unwrap();
    assert_eq!(counter.to_vec().unwrap(), [1107]);
}

#[gpu_test]
fn cooperative_launch_synchronises_the_grid() {
    let ctx = gpu_or_skip!();
    let dev = ctx.device();
    if dev.attribute(DeviceAttribute::COOPERATIVE_LAUNCH).unwrap() == 0 {
        skip("the device has no cooperative launch");
    }
    let f = kernels(&ctx).function("grid_sync_sum").unwrap();
    let sms = dev
        .attribute(DeviceAttribute::MULTIPROCESSOR_COUNT)
        .unwrap() as u32;
    let per_sm = f.max_active_blocks_per_multiprocessor(256, 0).unwrap();
    assert!(per_sm >= 1);
    let blocks = sms * per_sm.min(2);
    let n = 200_003usize;
    let input: Vec<i32> = (0..n).map(|i| (i % 7) as i32 + 1).collect();
    let din = DeviceBuffer::from_slice(&ctx, &input).unwrap();
    let mut partial = DeviceBuffer::from_slice(&ctx, &vec![-1i32; blocks as usize]).unwrap();
    let mut total = DeviceBuffer::from_slice(&ctx, &[-1i32]).unwrap();
    let s = stream(&ctx);
    let attrs = LaunchAttributes::new().cooperative(true);
    // SAFETY: grid_sync_sum(const int* in, int* partial, int* total, int n) with a
    // cooperative grid of `blocks` resident blocks of 256 threads; partial holds one int per
    // block, total one.
    unsafe {
        f.launch_ex(
            &s,
            &LaunchConfig::new(blocks, 256),
            &attrs,
            (
                din.as_view(),
                partial.as_view_mut(),
                total.as_view_mut(),
                &(n as i32),
            ),
        )
    }
    .unwrap();
    s.synchronize().unwrap();
    assert_eq!(total.to_vec().unwrap(), [input.iter().sum::<i32>()]);
}

#[gpu_test]
fn cluster_launch_on_hopper() {
    let ctx = gpu_or_skip!();
    let (major, minor) = ctx.device().compute_capability().unwrap();
    if major < 9 {
        skip(format!(
            "compute capability {major}.{minor} < 9.0 has no thread-block clusters"
        ));
    }
    let m = Module::load_data(&ctx, CLUSTER).unwrap();
    let f = m.function("cluster_info").unwrap();
    let s = stream(&ctx);
    let run = |blocks: u32, cluster: u32| -> Result<Vec<u32>, Error> {
        let mut out = DeviceBuffer::from_slice(&ctx, &vec![u32::MAX; 4 * blocks as usize])?;
        let attrs = LaunchAttributes::new().cluster_dim(cluster);
        // SAFETY: cluster_info(unsigned* out) writes out[4b..4b + 4] for each block b of a
        // one-dimensional grid of `blocks` blocks; out holds 4 * blocks words.
        unsafe {
            f.launch_ex(
                &s,
                &LaunchConfig::new(blocks, 32),
                &attrs,
                (out.as_view_mut(),),
            )
        }?;
        s.synchronize()?;
        out.to_vec()
    };

    let cfg = LaunchConfig::new(16, 32);
    let largest = f
        .max_potential_cluster_size(&cfg, &LaunchAttributes::new())
        .unwrap();
    assert!((4..=16).contains(&largest), "largest cluster {largest}");
    let active = f
        .max_active_clusters(&cfg, &LaunchAttributes::new().cluster_dim(4))
        .unwrap();
    assert!(active >= 1, "{active} clusters of 4");

    for cluster in [2u32, 4, 8] {
        let blocks = 16;
        let out = run(blocks, cluster).unwrap();
        for b in 0..blocks {
            let w = &out[4 * b as usize..4 * b as usize + 4];
            assert_eq!(
                w,
                [b % cluster, cluster, b / cluster, b - b % cluster],
                "block {b}, clusters of {cluster}"
            );
        }
    }

    // The grid given in clusters: 4 clusters of 4 blocks are the 16 blocks above.
    let cfg = LaunchConfig::clusters(4u32, 4u32, 32u32).unwrap();
    assert_eq!(cfg.grid, LaunchConfig::new(16, 32).grid);
    let mut out = DeviceBuffer::from_slice(&ctx, &vec![u32::MAX; 4 * 16]).unwrap();
    // SAFETY: as in `run`, for a grid of 16 blocks.
    unsafe {
        f.launch_ex(
            &s,
            &cfg,
            &LaunchAttributes::new().cluster_dim(4),
            (out.as_view_mut(),),
        )
    }
    .unwrap();
    s.synchronize().unwrap();
    let out = out.to_vec().unwrap();
    assert_eq!(
        &out[4 * 13..4 * 14],
        [1, 4, 3, 12],
        "block 13 of clusters of 4"
    );
    assert!(LaunchConfig::clusters(u32::MAX, 2u32, 32u32).is_err());

    // 64 blocks per cluster is beyond both the portable (8) and non-portable (16) limits.
    let e = run(64, 64).unwrap_err();
    assert!(e.code().is_some(), "a driver error: {e}");
    // The context still launches.
    let out = run(8, 8).unwrap();
    assert_eq!(&out[28..32], [7, 8, 0, 0]);
}

#[gpu_test]
fn priority_attribute() {
    let ctx = gpu_or_skip!();
    let (least, greatest) = ctx.stream_priority_range().unwrap();
    let f = kernels(&ctx).function("saxpy").unwrap();
    for priority in [least, greatest] {
        check_saxpy(&ctx, |s, cfg, a, x, y, n| {
            let attrs = LaunchAttributes::new().priority(priority);
            // SAFETY: saxpy's arguments, as in the tests above.
            unsafe { f.launch_ex(s, cfg, &attrs, (&a, x.as_view(), y.as_view_mut(), &n)) }.unwrap();
        });
    }
}

#[gpu_test]
fn wrong_arguments_are_refused_before_launching() {
    let ctx = gpu_or_skip!();
    let f = kernels(&ctx).function("saxpy").unwrap();
    if f.params().unwrap().is_none() {
        skip("no cuFuncGetParamInfo (a driver older than CUDA 12.4)");
    }
    let s = stream(&ctx);
    let y0 = floats(512, 5);
    let x = DeviceBuffer::from_slice(&ctx, &floats(512, 6)).unwrap();
    let mut y = DeviceBuffer::from_slice(&ctx, &y0).unwrap();
    let cfg = LaunchConfig::for_num_elems(512).unwrap();

    // SAFETY: refused before any launch (three arguments for four parameters).
    match unsafe { f.launch(&s, &cfg, (&2.0f32, x.as_view(), y.as_view_mut())) } {
        Err(Error::Launch(LaunchError::ArgumentCount {
            kernel,
            expected,
            actual,
        })) => assert_eq!((kernel.as_str(), expected, actual), ("saxpy", 4, 3)),
        other => panic!("expected ArgumentCount, got {other:?}"),
    }
    // SAFETY: refused before any launch (a double for the float a).
    match unsafe { f.launch(&s, &cfg, (&2.0f64, x.as_view(), y.as_view_mut(), &512i32)) } {
        Err(Error::Launch(LaunchError::ArgumentSize {
            kernel,
            index,
            expected,
            actual,
        })) => assert_eq!(
            (kernel.as_str(), index, expected, actual),
            ("saxpy", 0, 4, 8)
        ),
        other => panic!("expected ArgumentSize, got {other:?}"),
    }
    // SAFETY: refused before any launch (an i64 for the int n).
    let e = unsafe {
        f.launch_ex(
            &s,
            &cfg,
            &LaunchAttributes::new(),
            (&2.0f32, x.as_view(), y.as_view_mut(), &512i64),
        )
    }
    .unwrap_err();
    assert!(
        matches!(e, Error::Launch(LaunchError::ArgumentSize { index: 3, .. })),
        "{e}"
    );
    let k = Library::load_data(TEST_KERNELS)
        .unwrap()
        .kernel("saxpy")
        .unwrap();
    // SAFETY: refused before any launch.
    let e = unsafe { k.launch(&s, &cfg, (x.as_view(),)) }.unwrap_err();
    assert!(
        matches!(
            e,
            Error::Launch(LaunchError::ArgumentCount {
                expected: 4,
                actual: 1,
                ..
            })
        ),
        "{e}"
    );

    // Nothing ran: y is unchanged.
    s.synchronize().unwrap();
    assert_eq!(y.to_vec().unwrap(), y0);
    check_saxpy(&ctx, |s, cfg, a, x, y, n| {
        // SAFETY: saxpy's arguments.
        unsafe { f.launch(s, cfg, (&a, x.as_view(), y.as_view_mut(), &n)) }.unwrap();
    });
}

#[gpu_test]
fn bad_launch_configurations_fail_and_the_context_recovers() {
    let ctx = gpu_exclusive_or_skip!();
    // A created context takes much device memory: not while memory-level tests run.
    let dev = ctx.device();
    let m = kernels(&ctx);
    let saxpy = m.function("saxpy").unwrap();
    let s = stream(&ctx);
    let x = DeviceBuffer::from_slice(&ctx, &floats(4096, 1)).unwrap();
    let mut y = DeviceBuffer::from_slice(&ctx, &floats(4096, 2)).unwrap();

    // 2048 threads per block: more than any device allows.
    // SAFETY: saxpy's arguments; the launch is refused.
    let e = unsafe {
        saxpy.launch(
            &s,
            &LaunchConfig::new(2, 2048),
            (&1.0f32, x.as_view(), y.as_view_mut(), &4096i32),
        )
    }
    .unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::INVALID_VALUE), "{e}");
    assert_eq!(e.call(), Some("cuLaunchKernel"));

    // More dynamic shared memory than a block may have.
    let optin = dev
        .attribute(DeviceAttribute::MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        .unwrap() as u32;
    let dyn_shared = m.function("use_dyn_shared").unwrap();
    let mut out = DeviceBuffer::from_slice(&ctx, &[0.0f32; 32]).unwrap();
    let cfg = LaunchConfig::new(1, 32).with_shared_mem(optin + 1);
    // SAFETY: use_dyn_shared's arguments; the launch is refused.
    let e = unsafe { dyn_shared.launch(&s, &cfg, (out.as_view_mut(), &32i32)) }.unwrap_err();
    assert!(
        matches!(
            e.code(),
            Some(ErrorCode::INVALID_VALUE | ErrorCode::LAUNCH_OUT_OF_RESOURCES)
        ),
        "{e}"
    );

    // A Function launches only on streams of its own context.
    let other = Context::new(dev, ContextFlags::SCHED_AUTO).unwrap();
    let other_stream = stream(&other);
    // SAFETY: refused before any launch.
    let e = unsafe {
        saxpy.launch(
            &other_stream,
            &LaunchConfig::new(1, 1),
            (&1.0f32, x.as_view(), y.as_view_mut(), &1i32),
        )
    }
    .unwrap_err();
    assert!(matches!(e, Error::ContextMismatch { .. }), "{e}");
    drop(other_stream);
    drop(other);

    // The same context still computes correctly.
    check_saxpy(&ctx, |s, cfg, a, x, y, n| {
        // SAFETY: saxpy's arguments.
        unsafe { saxpy.launch(s, cfg, (&a, x.as_view(), y.as_view_mut(), &n)) }.unwrap();
    });
}

/// Pushes the programming guide's six parameters (`param_buffer.cu`), launches through
/// `launch` and checks every word the kernel writes back.
fn check_param_buffer(ctx: &Context, launch: impl FnOnce(&Stream, &ParamBuffer<'_>)) {
    let s = stream(ctx);
    let mut out = DeviceBuffer::from_slice(ctx, &[0.0f32; 11]).unwrap();
    let address = out.as_raw();
    let (i, f4, c, f, f2) = (
        -123_456i32,
        Float4::new(1.25, -2.5, 3.75, -5.0),
        -7i8,
        0.125f32,
        Float2::new(6.5, -7.75),
    );
    {
        let mut params = ParamBuffer::new();
        params
            .push(i)
            .unwrap()
            .push(f4)
            .unwrap()
            .push(c)
            .unwrap()
            .push(f)
            .unwrap()
            .push_arg(out.as_view_mut())
            .unwrap()
            .push(f2)
            .unwrap();
        let offsets: Vec<usize> = params.params().map(|p| p.offset).collect();
        assert_eq!(offsets, [0, 16, 32, 36, 40, 48]);
        assert_eq!(params.len(), 56);
        launch(&s, &params);
    }
    s.synchronize().unwrap();
    let words: Vec<u32> = out.to_vec().unwrap().iter().map(|x| x.to_bits()).collect();
    assert_eq!(words[0], i as u32);
    assert_eq!(words[1..5], [1.25f32, -2.5, 3.75, -5.0].map(f32::to_bits));
    assert_eq!(words[5], c as i32 as u32);
    assert_eq!(words[6], f.to_bits());
    assert_eq!(words[7..9], [6.5f32, -7.75].map(f32::to_bits));
    assert_eq!(words[9], address as u32);
    assert_eq!(words[10], (address >> 32) as u32);
}

#[gpu_test]
fn packed_parameter_buffer() {
    let ctx = gpu_or_skip!();
    let m = Module::load_data(&ctx, PARAM_BUFFER).unwrap();
    let f = m.function("param_buffer").unwrap();
    check_param_buffer(&ctx, |s, params| {
        // SAFETY: the buffer holds param_buffer's parameters in its layout; out holds 11
        // floats.
        unsafe { f.launch_packed(s, &LaunchConfig::new(1, 1), params) }.unwrap();
    });
    check_param_buffer(&ctx, |s, params| {
        // SAFETY: as above.
        unsafe { f.launch_packed_unchecked(s, &LaunchConfig::new(1, 1), params) }.unwrap();
    });
    let lib = Library::load_data(PARAM_BUFFER).unwrap();
    let k = lib.kernel("param_buffer").unwrap();
    check_param_buffer(&ctx, |s, params| {
        // SAFETY: as above.
        unsafe { k.launch_packed(s, &LaunchConfig::new(1, 1), params) }.unwrap();
    });

    // [f32; 4] is 4-byte aligned, float4 16: the checked launch sees the wrong offset.
    if f.params().unwrap().is_some() {
        let s = stream(&ctx);
        let mut out = DeviceBuffer::from_slice(&ctx, &[0.0f32; 11]).unwrap();
        let mut wrong = ParamBuffer::new();
        wrong
            .push(1i32)
            .unwrap()
            .push([1.0f32; 4])
            .unwrap()
            .push(1i8)
            .unwrap()
            .push(1.0f32)
            .unwrap()
            .push_arg(out.as_view_mut())
            .unwrap()
            .push(Float2::default())
            .unwrap();
        // SAFETY: refused before any launch.
        let e = unsafe { f.launch_packed(&s, &LaunchConfig::new(1, 1), &wrong) }.unwrap_err();
        assert!(
            matches!(
                &e,
                Error::Launch(LaunchError::ArgumentOffset { index: 1, .. })
            ),
            "{e}"
        );
    }
}

/// A buffer remembers the parameter list its layout matched, and only that one: launched
/// again on the same kernel it is not compared, on a kernel of other parameters it is (and
/// refused), and a push makes it compared again (and refused).
#[gpu_test]
fn a_matched_parameter_buffer_is_checked_again_for_another_kernel_or_layout() {
    let ctx = gpu_or_skip!();
    let m = Module::load_data(&ctx, PARAM_BUFFER).unwrap();
    let f = m.function("param_buffer").unwrap();
    if f.params().unwrap().is_none() {
        skip("the driver cannot report parameters");
    }
    let tk = Module::load_data(&ctx, crate::common::TEST_KERNELS).unwrap();
    let fill = tk.function("fill_u32").unwrap();
    let s = stream(&ctx);
    let mut out = DeviceBuffer::from_slice(&ctx, &[0.0f32; 11]).unwrap();
    let mut params = ParamBuffer::new();
    params
        .push(5i32)
        .unwrap()
        .push(Float4::new(1.0, 2.0, 3.0, 4.0))
        .unwrap()
        .push(-1i8)
        .unwrap()
        .push(0.5f32)
        .unwrap()
        .push_arg(out.as_view_mut())
        .unwrap()
        .push(Float2::new(8.0, 9.0))
        .unwrap();
    for _ in 0..3 {
        // SAFETY: param_buffer's layout (checked the first time, remembered after); out holds
        // 11 floats.
        unsafe { f.launch_packed(&s, &LaunchConfig::new(1, 1), &params) }.unwrap();
        // fill_u32(unsigned*, unsigned, int) has other parameters: refused every time.
        // SAFETY: refused before any launch.
        let e = unsafe { fill.launch_packed(&s, &LaunchConfig::new(1, 1), &params) }.unwrap_err();
        assert!(
            matches!(e, Error::Launch(LaunchError::ArgumentCount { .. })),
            "{e}"
        );
    }
    params.push(1u32).unwrap();
    // SAFETY: refused before any launch.
    let e = unsafe { f.launch_packed(&s, &LaunchConfig::new(1, 1), &params) }.unwrap_err();
    assert!(
        matches!(
            e,
            Error::Launch(LaunchError::ArgumentCount {
                expected: 6,
                actual: 7,
                ..
            })
        ),
        "{e}"
    );
    s.synchronize().unwrap();
    assert_eq!(out.to_vec().unwrap()[0].to_bits(), 5);
}
