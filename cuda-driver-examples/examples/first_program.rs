// The README's "Your first program", word for word (a test in tests/readme.rs keeps the two,
// and the crate docs' copy, the same): run on the GPU by the bundle, also built with the
// `dynamic-loading` feature of cuda-driver.
use std::process::ExitCode;

use cuda_driver::prelude::*;
use cuda_driver::types::StreamFlags;

/// `scale(float* data, float factor, int n)`, `data[i] *= factor` for every `i < n`: what
/// `nvcc --ptx` makes of a three-line CUDA C kernel (its comment lines left out).
const SCALE_PTX: &str = "
.version 7.0
.target sm_75
.address_size 64

.visible .entry scale(
    .param .u64 scale_param_0,
    .param .f32 scale_param_1,
    .param .u32 scale_param_2
)
{
    .reg .pred %p<2>;
    .reg .f32 %f<4>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<5>;

    ld.param.u64 %rd1, [scale_param_0];
    ld.param.f32 %f1, [scale_param_1];
    ld.param.u32 %r2, [scale_param_2];
    mov.u32 %r3, %ctaid.x;
    mov.u32 %r4, %ntid.x;
    mov.u32 %r5, %tid.x;
    mad.lo.s32 %r1, %r3, %r4, %r5;
    setp.ge.s32 %p1, %r1, %r2;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.s32 %rd3, %r1, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.f32 %f2, [%rd4];
    mul.f32 %f3, %f2, %f1;
    st.global.f32 [%rd4], %f3;
DONE:
    ret;
}
";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), cuda_driver::Error> {
    // Device 0 and its primary context (the one the CUDA runtime uses, too).
    let device = Device::get(0)?;
    let ctx = device.primary_context()?;

    // The driver compiles the PTX for this GPU; `scale` is the kernel's entry name.
    let module = Module::load_data(&ctx, SCALE_PTX)?;
    let scale = module.function("scale")?;

    // 1000 floats copied to device memory.
    let host: Vec<f32> = (0..1000).map(|i| i as f32).collect();
    let mut data = DeviceBuffer::from_slice(&ctx, &host)?;

    // One thread per element, on a stream of our own.
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;
    let cfg = LaunchConfig::for_num_elems(host.len())?;
    let n = host.len() as i32;
    // SAFETY: `scale` takes (float*, float, int), which the arguments are (the launch checks
    // their number and sizes against the kernel's parameters), and it writes only data[..n].
    unsafe { scale.launch(&stream, &cfg, (&mut data.as_view_mut(), &3.0f32, &n))? };
    stream.synchronize()?;

    // Back to the host, every element checked.
    let result = data.to_vec()?;
    assert!(result.iter().zip(&host).all(|(r, h)| *r == 3.0 * h));
    println!("scaled {} floats on {}", result.len(), device.name()?);
    Ok(())
}
