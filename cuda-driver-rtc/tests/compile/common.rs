//! Shared helpers: the libraries, or a skip that says where they were searched.

use cuda_driver_rtc::{NvJitLink, Nvrtc};
pub use cuda_driver_test_harness::{note, skip};

/// The variable that turns a missing library into a failure (`.ci/run` sets it).
pub const REQUIRE_VAR: &str = "CUDA_DRIVER_REQUIRE_NVRTC";

/// Skips (or, with [`REQUIRE_VAR`]` = 1`, fails) because a library is missing.
#[track_caller]
fn missing(what: &str, e: cuda_driver_rtc::Error) -> ! {
    if std::env::var(REQUIRE_VAR).is_ok_and(|v| v.trim() == "1") {
        panic!("{REQUIRE_VAR}=1 but {what} is missing: {e}");
    }
    match e {
        cuda_driver_rtc::Error::LibraryNotFound(l) => skip(format!(
            "no {what}: {} not found in {} places (CUDA_DRIVER_RTC_*, CUDA_PATH, CUDA_HOME, \
             VIRTUAL_ENV, .venv, python3, the system's loader); install the pinned wheels into \
             .venv with .ci/run",
            l.library,
            l.tried.len()
        )),
        e => panic!("{what} was found but does not work: {e}"),
    }
}

/// NVRTC, or a skip.
#[track_caller]
pub fn nvrtc() -> &'static Nvrtc {
    Nvrtc::load().unwrap_or_else(|e| missing("NVRTC", e))
}

/// nvJitLink (and NVRTC, to compile its inputs), or a skip.
#[track_caller]
pub fn nvjitlink() -> &'static NvJitLink {
    nvrtc();
    NvJitLink::load().unwrap_or_else(|e| missing("nvJitLink", e))
}

/// A templated kernel: `scale<T>(T* x, T factor, int n)`.
pub const SCALE: &str = r#"
template <typename T>
__global__ void scale(T* x, T factor, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= factor;
}
"#;

/// `extern "C"` SAXPY.
pub const SAXPY: &str = r#"
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

/// A unique temporary directory for one test.
pub fn temp_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!(
        "cuda-driver-rtc-test-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}
