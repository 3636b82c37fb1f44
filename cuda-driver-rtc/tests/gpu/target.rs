//! `compile_for` on the real driver: the choice between PTX and a CUBIN follows the versions,
//! and what it produces loads.

use cuda_driver::prelude::*;
use cuda_driver::{types::StreamFlags, DeviceBuffer, LaunchConfig, Stream};
use cuda_driver_rtc::{Arch, Error, Options, Program, Version};

use crate::common::{gpu, note, nvrtc, SAXPY};

#[gpu_test]
fn compile_for_chooses_by_the_versions_and_the_driver_loads_the_result() {
    let (device, ctx) = gpu();
    let nvrtc = nvrtc();
    let (major, minor) = cuda_driver::driver_version().unwrap();
    let driver = Version::new(major, minor);
    let (cc_major, cc_minor) = device.compute_capability().unwrap();
    let arch = (cc_major * 10 + cc_minor) as u32;
    for prefer_cubin in [false, true] {
        let mut p = Program::new("saxpy.cu", SAXPY).unwrap();
        let opts = Options::new().prefer_cubin(prefer_cubin);
        let compiled = match p.compile_for(&device, &opts) {
            Ok(c) => c,
            Err(e @ Error::DriverTooOld { .. }) => {
                // The one case where nothing loads: a compiler of a newer major version.
                assert!(nvrtc.version().major > driver.major, "{e}");
                note(format!("{e}"));
                return;
            }
            Err(e) => panic!("{e}"),
        };
        let target = *compiled.target().unwrap();
        note(format!(
            "NVRTC {} ({}), driver CUDA {driver}, device sm_{arch}, prefer_cubin {prefer_cubin}: {}",
            nvrtc.version(),
            nvrtc.location(),
            target.arch()
        ));
        assert_eq!(target.driver_version(), driver);
        assert_eq!(target.device_arch(), arch);
        // PTX only where the driver is at least as new as the compiler; a CUBIN otherwise,
        // and then for the device's own major architecture.
        let newer = nvrtc.version() > driver;
        assert_eq!(target.arch().is_real(), newer || prefer_cubin, "{target:?}");
        if target.arch().is_real() {
            assert_eq!(target.arch().code() / 10, arch / 10);
            assert!(compiled.cubin().is_ok());
        } else {
            assert!(compiled.cubin().is_err());
        }
        assert!(target.arch().code() <= arch);
        // And it loads and runs.
        let module = compiled.load(&ctx).unwrap();
        let saxpy = module.function("saxpy").unwrap();
        let mut y = DeviceBuffer::from_slice(&ctx, &[1.0f32; 256]).unwrap();
        let x = DeviceBuffer::from_slice(&ctx, &[2.0f32; 256]).unwrap();
        let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
        let cfg = LaunchConfig::for_num_elems(256).unwrap();
        let n = 256i32;
        // SAFETY: saxpy(float, const float*, float*, int) reads x[..n], writes y[..n].
        unsafe {
            saxpy
                .launch(
                    &stream,
                    &cfg,
                    (&0.5f32, &x.as_view(), &mut y.as_view_mut(), &n),
                )
                .unwrap()
        };
        stream.synchronize().unwrap();
        assert!(y.to_vec().unwrap().iter().all(|&v| v == 2.0));
    }
}

#[gpu_test]
fn compile_for_refuses_options_that_set_the_architecture() {
    let (device, _ctx) = gpu();
    nvrtc();
    let mut p = Program::new("saxpy.cu", SAXPY).unwrap();
    for opts in [
        Options::new().arch(Arch::compute(7, 5)),
        Options::new().raw("-arch=sm_80"),
    ] {
        let e = p.compile_for(&device, &opts).unwrap_err();
        assert!(matches!(e, Error::InvalidOptions(_)), "{e:?}");
    }
}
