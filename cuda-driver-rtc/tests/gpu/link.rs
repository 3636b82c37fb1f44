//! Programs linked by nvJitLink, loaded and launched.

use cuda_driver::prelude::*;
use cuda_driver::{types::StreamFlags, DeviceBuffer, LaunchConfig, Module, Stream};
use cuda_driver_rtc::{LinkOptions, Linker, Options, Program};

use crate::common::{gpu, note, nvjitlink, nvrtc};

const HELPER: &str = "__device__ float twice(float x) { return 2.0f * x; }\n";
const MAIN: &str = r#"
__device__ float twice(float x);
extern "C" __global__ void apply(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = twice(x[i]) + 1.0f;
}
"#;

fn run_apply(module: &Module, ctx: &cuda_driver::Context) {
    let apply = module.function("apply").unwrap();
    let host: Vec<f32> = (0..777).map(|i| i as f32 - 100.0).collect();
    let mut x = DeviceBuffer::from_slice(ctx, &host).unwrap();
    let stream = Stream::new(ctx, StreamFlags::NON_BLOCKING).unwrap();
    let cfg = LaunchConfig::for_num_elems(host.len()).unwrap();
    let n = host.len() as i32;
    // SAFETY: apply(float*, int) writes x[..n].
    unsafe {
        apply
            .launch(&stream, &cfg, (&mut x.as_view_mut(), &n))
            .unwrap()
    };
    stream.synchronize().unwrap();
    let got = x.to_vec().unwrap();
    for (i, (g, h)) in got.iter().zip(&host).enumerate() {
        assert_eq!(*g, 2.0 * h + 1.0, "element {i}");
    }
}

#[gpu_test]
fn an_lto_program_of_two_sources_links_loads_and_runs() {
    let (device, ctx) = gpu();
    nvrtc();
    let lib = nvjitlink();
    let lto = Options::new().lto(true).relocatable(true);
    let helper = Program::new("helper.cu", HELPER)
        .unwrap()
        .compile_for(&device, &lto)
        .unwrap();
    let main = Program::new("main.cu", MAIN)
        .unwrap()
        .compile_for(&device, &lto)
        .unwrap();
    let mut linker = Linker::for_device(&device, &LinkOptions::new().lto(true)).unwrap();
    linker
        .add_lto_ir(helper.lto_ir().unwrap(), "helper")
        .unwrap();
    linker.add_lto_ir(main.lto_ir().unwrap(), "main").unwrap();
    let cubin = linker.complete().unwrap();
    note(format!(
        "nvJitLink {} linked {} bytes for {:?}",
        lib.version(),
        cubin.as_bytes().len(),
        main.target().map(|t| t.arch())
    ));
    let module = Module::load_data(&ctx, &cubin).unwrap();
    run_apply(&module, &ctx);
    // The same CUBIN as a context-independent library.
    let library = cuda_driver::Library::load_data(&cubin).unwrap();
    run_apply(&library.module(&ctx).unwrap(), &ctx);
}

#[gpu_test]
fn relocatable_ptx_links_with_a_cubin_for_the_device() {
    let (device, ctx) = gpu();
    nvrtc();
    nvjitlink();
    let rdc = Options::new().relocatable(true).prefer_cubin(true);
    let helper = Program::new("helper.cu", HELPER)
        .unwrap()
        .compile_for(&device, &rdc)
        .unwrap();
    let main = Program::new("main.cu", MAIN)
        .unwrap()
        .compile_for(&device, &rdc)
        .unwrap();
    let mut linker = Linker::for_device(&device, &LinkOptions::new()).unwrap();
    linker.add_cubin(helper.cubin().unwrap(), "helper").unwrap();
    linker.add_ptx(main.ptx().unwrap(), "main").unwrap();
    let cubin = linker.complete().unwrap();
    run_apply(&Module::load_data(&ctx, &cubin).unwrap(), &ctx);
}
