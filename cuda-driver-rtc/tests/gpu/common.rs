//! Shared helpers: the GPU and the libraries, or a skip with the reason.

use cuda_driver::{Context, Device};
use cuda_driver_rtc::{NvJitLink, Nvrtc};
pub use cuda_driver_test_harness::{note, skip};

/// Device 0 and its primary context; without a driver or a device the test skips.
#[track_caller]
pub fn gpu() -> (Device, Context) {
    match Device::get(0).and_then(|d| Ok((d, d.primary_context()?))) {
        Ok(g) => g,
        Err(e) if e.is_no_gpu() => skip(format!("no GPU: {e}")),
        Err(e) => panic!("cannot get device 0: {e}"),
    }
}

/// NVRTC, or a skip naming how many places were searched.
#[track_caller]
pub fn nvrtc() -> &'static Nvrtc {
    Nvrtc::load().unwrap_or_else(|e| skip(format!("no NVRTC: {}", first_line(&e))))
}

/// nvJitLink, or a skip.
#[track_caller]
pub fn nvjitlink() -> &'static NvJitLink {
    NvJitLink::load().unwrap_or_else(|e| skip(format!("no nvJitLink: {}", first_line(&e))))
}

fn first_line(e: &cuda_driver_rtc::Error) -> String {
    let text = e.to_string();
    format!(
        "{} ({} lines of places searched)",
        text.lines().next().unwrap_or_default(),
        text.lines().count().saturating_sub(2)
    )
}

/// A templated kernel: `scale<T>(T* x, T factor, int n)`.
pub const SCALE: &str = r#"
template <typename T>
__global__ void scale(T* x, T factor, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= factor;
}
"#;

/// `extern "C"` SAXPY: `y = a * x + y`.
pub const SAXPY: &str = r#"
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;
