//! Compiled programs loaded as modules and libraries and launched: a templated kernel
//! instantiated twice, typed launchers checked at load, cached outputs.

use cuda_driver::prelude::*;
use cuda_driver::{
    types::StreamFlags, DeviceBuffer, DeviceSlice, DeviceSliceMut, LaunchConfig, Stream,
};
use cuda_driver_rtc::{Cache, Error, Options, Program};

use crate::common::{gpu, nvrtc, SAXPY, SCALE};

const N: usize = 1000;

#[gpu_test]
fn a_templated_kernel_instantiated_twice_runs_both_instantiations() {
    let (device, ctx) = gpu();
    nvrtc();
    let mut p = Program::new("scale.cu", SCALE).unwrap();
    p.add_name_expression("scale<float>").unwrap();
    p.add_name_expression("scale<int>").unwrap();
    let compiled = p.compile_for(&device, &Options::new()).unwrap();
    let module = compiled.load(&ctx).unwrap();
    let scale_f = module
        .function(compiled.lowered_name("scale<float>").unwrap())
        .unwrap();
    let scale_i = module
        .function(compiled.lowered_name("scale<int>").unwrap())
        .unwrap();

    let floats: Vec<f32> = (0..N).map(|i| i as f32 * 0.5).collect();
    let ints: Vec<i32> = (0..N as i32).map(|i| i - 300).collect();
    let mut xf = DeviceBuffer::from_slice(&ctx, &floats).unwrap();
    let mut xi = DeviceBuffer::from_slice(&ctx, &ints).unwrap();
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let cfg = LaunchConfig::for_num_elems(N).unwrap();
    let n = N as i32;
    // SAFETY: scale<float>(float*, float, int) and scale<int>(int*, int, int); each writes
    // x[..n] of a buffer of n elements, read after the stream is synchronised.
    unsafe {
        scale_f
            .launch(&stream, &cfg, (&mut xf.as_view_mut(), &1.5f32, &n))
            .unwrap();
        scale_i
            .launch(&stream, &cfg, (&mut xi.as_view_mut(), &-3i32, &n))
            .unwrap();
    }
    stream.synchronize().unwrap();
    let got_f = xf.to_vec().unwrap();
    let got_i = xi.to_vec().unwrap();
    for i in 0..N {
        assert_eq!(got_f[i], floats[i] * 1.5, "float element {i}");
        assert_eq!(got_i[i], ints[i] * -3, "int element {i}");
    }
    // The launch checks the arguments against the instantiation: a double for a float is
    // refused, nothing launched.
    // SAFETY: refused before the driver (the sizes differ).
    let e = unsafe { scale_f.launch(&stream, &cfg, (&mut xf.as_view_mut(), &1.5f64, &n)) };
    assert!(e.is_err());
}

#[gpu_test]
fn a_compiled_program_loads_as_a_library_and_its_kernels_launch() {
    let (device, ctx) = gpu();
    nvrtc();
    let mut p = Program::new("scale.cu", SCALE).unwrap();
    p.add_name_expression("scale<double>").unwrap();
    let compiled = p.compile_for(&device, &Options::new()).unwrap();
    let library = compiled.load_library().unwrap();
    let kernel = library
        .kernel(compiled.lowered_name("scale<double>").unwrap())
        .unwrap();
    let host: Vec<f64> = (0..N).map(|i| i as f64).collect();
    let mut x = DeviceBuffer::from_slice(&ctx, &host).unwrap();
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let cfg = LaunchConfig::for_num_elems(N).unwrap();
    let n = N as i32;
    // SAFETY: scale<double>(double*, double, int) writes x[..n].
    unsafe {
        kernel
            .launch(&stream, &cfg, (&mut x.as_view_mut(), &0.25f64, &n))
            .unwrap()
    };
    stream.synchronize().unwrap();
    let got = x.to_vec().unwrap();
    assert!(got.iter().zip(&host).all(|(g, h)| *g == h * 0.25));
}

cuda_driver_rtc::typed_kernel! {
    /// `saxpy(float a, const float* x, float* y, int n)`
    struct Saxpy(a: f32, x: DeviceSlice<'_, f32>, y: DeviceSliceMut<'_, f32>, n: i32);
}

cuda_driver_rtc::typed_kernel! {
    /// saxpy declared with one parameter too few.
    struct SaxpyShort(a: f32, x: DeviceSlice<'_, f32>, y: DeviceSliceMut<'_, f32>);
}

cuda_driver_rtc::typed_kernel! {
    /// saxpy declared with a double where the kernel takes a float.
    struct SaxpyDouble(a: f64, x: DeviceSlice<'_, f32>, y: DeviceSliceMut<'_, f32>, n: i32);
}

#[gpu_test]
fn a_typed_kernel_is_checked_at_load_and_launches_with_its_declared_types() {
    let (device, ctx) = gpu();
    nvrtc();
    let mut p = Program::new("saxpy.cu", SAXPY).unwrap();
    let module = p
        .compile_for(&device, &Options::new())
        .unwrap()
        .load(&ctx)
        .unwrap();
    let saxpy = Saxpy::new(&module, "saxpy").unwrap();
    let x: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let y0: Vec<f32> = (0..N).map(|i| 1000.0 - i as f32).collect();
    let dx = DeviceBuffer::from_slice(&ctx, &x).unwrap();
    let mut dy = DeviceBuffer::from_slice(&ctx, &y0).unwrap();
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let cfg = LaunchConfig::for_num_elems(N).unwrap();
    // SAFETY: saxpy reads x[..n] and writes y[..n], both of n elements; y is read after the
    // stream is synchronised.
    unsafe {
        saxpy
            .launch(&stream, &cfg, 2.0, dx.as_view(), dy.as_view_mut(), N as i32)
            .unwrap()
    };
    stream.synchronize().unwrap();
    let y = dy.to_vec().unwrap();
    for i in 0..N {
        assert_eq!(y[i], 2.0 * x[i] + y0[i], "element {i}");
    }
    // Declarations that differ from the compiled kernel fail at load, naming the difference.
    let e = SaxpyShort::new(&module, "saxpy").err().unwrap();
    assert!(matches!(e, Error::SignatureMismatch { .. }), "{e:?}");
    assert!(
        e.to_string()
            .contains("3 parameters declared, the kernel has 4"),
        "{e}"
    );
    let e = SaxpyDouble::new(&module, "saxpy").err().unwrap();
    assert!(
        e.to_string()
            .contains("parameter 0 (`a`) is declared with 8 bytes, the kernel's has 4"),
        "{e}"
    );
    // A kernel that is not there is the driver's error, through cuda-driver.
    assert!(matches!(
        Saxpy::new(&module, "no_such_kernel"),
        Err(Error::Driver(_))
    ));
}

#[gpu_test]
fn a_cached_output_loads_and_runs() {
    let (device, ctx) = gpu();
    nvrtc();
    let dir =
        std::env::temp_dir().join(format!("cuda-driver-rtc-gpu-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let opts = Options::new().cache(Cache::new(&dir).unwrap());
    let compile = || {
        let mut p = Program::new("saxpy.cu", SAXPY).unwrap();
        p.compile_for(&device, &opts).unwrap()
    };
    let first = compile();
    let second = compile();
    assert!(!first.from_cache() && second.from_cache());
    assert_eq!(second.target(), first.target());
    let module = second.load(&ctx).unwrap();
    let saxpy = Saxpy::new(&module, "saxpy").unwrap();
    let dx = DeviceBuffer::from_slice(&ctx, &[1.0f32; 64]).unwrap();
    let mut dy = DeviceBuffer::from_slice(&ctx, &[1.0f32; 64]).unwrap();
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let cfg = LaunchConfig::for_num_elems(64).unwrap();
    // SAFETY: as above, 64 elements.
    unsafe {
        saxpy
            .launch(&stream, &cfg, 3.0, dx.as_view(), dy.as_view_mut(), 64)
            .unwrap()
    };
    stream.synchronize().unwrap();
    assert!(dy.to_vec().unwrap().iter().all(|&v| v == 4.0));
    let _ = std::fs::remove_dir_all(&dir);
}
