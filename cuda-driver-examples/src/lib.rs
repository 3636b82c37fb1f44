//! Shared helpers for the examples.
//!
//! * [`ptx`]: the PTX of every kernel under `ptx/`, embedded and NUL-terminated.
//! * For the safe examples (`examples/*.rs` without the `raw_` prefix): [`run_example`], their
//!   `main`, which turns a [`Failure`] into one sentence on stderr and exit status 1, and
//!   [`check!`] for checking results.
//! * For the raw ports of the seed documents (`examples/raw_*.rs`, which use only
//!   `cuda_driver_sys`): [`raw_init_or_exit`], the seed's `checkDriver` as [`check_driver!`]
//!   (over [`check_cuda_driver`]), [`ensure!`] for checking results, [`raw_create_context`],
//!   and small readers for the JIT's output buffers and option values.
#![deny(missing_docs)]

use std::borrow::Cow;
use std::ffi::{c_char, c_void, CStr};
use std::process::ExitCode;

use cuda_driver_sys::*;

pub mod bench;
#[cfg(unix)]
pub mod ipc;

/// The PTX of the kernels under `ptx/` (compiled by `cargo xtask build-kernels` with the
/// pinned nvcc of CUDA 13.0, PTX ISA 9.0), each NUL-terminated so that raw C APIs can take
/// `NAME.as_ptr()` (`cuModuleLoadData`, `cuLibraryLoadData`), and `NAME.len()` is the C
/// `strlen(NAME) + 1` that `cuLinkAddData` wants.
///
/// The kernels are `extern "C"`: the names below are the PTX entry names.
pub mod ptx {
    /// `ptx/vector_add.cu`: `VecAdd(const float* A, const float* B, float* C, int N)`,
    /// `C[i] = A[i] + B[i]` for `i < N` (the CUDA programming guide's vectorAddDrv).
    pub const VECTOR_ADD: &str = concat!(include_str!("../../ptx/vector_add.ptx"), "\0");

    /// `ptx/link_main.cu` (relocatable, `-rdc=true`):
    /// `scale_add(float* out, const float* in, float s, int n)`,
    /// `out[i] = helper_op(in[i], s)` for `i < n`. `helper_op` is an unresolved extern,
    /// defined in [`LINK_HELPER`]: load the two through `cuLinkCreate`.
    pub const LINK_MAIN: &str = concat!(include_str!("../../ptx/link_main.ptx"), "\0");

    /// `ptx/link_helper.cu` (relocatable, `-rdc=true`): the device function
    /// `float helper_op(float x, float s)` returning `x * s + 1.0f`, which [`LINK_MAIN`]
    /// calls. No kernels.
    pub const LINK_HELPER: &str = concat!(include_str!("../../ptx/link_helper.ptx"), "\0");

    /// `ptx/param_buffer.cu`:
    /// `param_buffer(int i, float4 f4, char c, float f, float* out, float2 f2)`, the
    /// parameter list of the programming guide's packed-parameter example; one thread writes
    /// 11 words to `out`: bits of `i`, `f4.x..w`, bits of `(int)c`, `f`, `f2.x`, `f2.y`, and
    /// the low and high 32 bits of `out` itself.
    pub const PARAM_BUFFER: &str = concat!(include_str!("../../ptx/param_buffer.ptx"), "\0");

    /// `ptx/library.cu`, for context-independent loading: `__managed__ int launch_count`,
    /// `__managed__ float managed_data[256]` and `myKernel(int* out, int n)`, which writes
    /// `out[i] = i` for `i < n`, adds 1.0 to `managed_data[i]` for `i < 256` and 1 to
    /// `launch_count` once per launch.
    pub const LIBRARY: &str = concat!(include_str!("../../ptx/library.ptx"), "\0");

    /// `ptx/bench.cu`, for the launch benchmark: `empty()` and
    /// `add4(const float* a, const float* b, float* c, int n)` (`c[i] = a[i] + b[i]`).
    pub const BENCH: &str = concat!(include_str!("../../ptx/bench.ptx"), "\0");

    /// `ptx/test_kernels.cu`, for the safe crate's GPU tests (each documented in the source):
    ///
    /// * `fill_u32(unsigned* out, unsigned v, int n)`
    /// * `add_u32(unsigned* data, unsigned v, int n)`
    /// * `saxpy(float a, const float* x, float* y, int n)`
    /// * `struct_param(Params p, float* out)` with
    ///   `struct Params { int a; double b; float4 c; }` (size 32, alignment 16)
    /// * `use_dyn_shared(float* out, int n)` (dynamic shared memory)
    /// * `read_globals(float* out)` and `increment_counter()`, over the module's
    ///   `__device__ int dev_counter` and `__constant__ float const_table[16]`
    /// * `vector_types(float2 a, float4 b, int4 c, double2 d, float* out)`
    /// * `sleep_ns(unsigned ns)`
    /// * `grid_sync_sum(const int* in, int* partial, int* total, int n)` (cooperative launch
    ///   only)
    pub const TEST_KERNELS: &str = concat!(include_str!("../../ptx/test_kernels.ptx"), "\0");

    /// `ptx/cluster.cu` (`compute_90`: needs a Hopper or newer device):
    /// `cluster_info(unsigned* out)`, block `b` writing its cluster rank, the cluster size,
    /// the cluster's rank in the grid and the block index of its cluster's rank-0 block
    /// (read through distributed shared memory) to `out[4b..4b + 4]`.
    pub const CLUSTER: &str = concat!(include_str!("../../ptx/cluster.ptx"), "\0");

    /// `ptx/vmm_kernels.cu`, for the virtual memory, IPC and pool examples:
    /// `write_pattern(unsigned* out, unsigned seed, int n)` (a position- and seed-dependent
    /// word per element), `add_u32(unsigned* data, unsigned v, int n)` and
    /// `vec_add(const float* a, const float* b, float* c, int n)`.
    pub const VMM_KERNELS: &str = concat!(include_str!("../../ptx/vmm_kernels.ptx"), "\0");
    /// `ptx/graph_kernels.ptx`: the kernels of the `graphs` example and the graph rows of the
    /// benchmark (`axpb`, `inc`, `noop`, `reduce_partial`, `reduce_final`).
    pub const GRAPH_KERNELS: &str = concat!(include_str!("../../ptx/graph_kernels.ptx"), "\0");
}

/// What a safe example's `run` fails with: a `cuda_driver::Error`, a failed [`check!`], or
/// any other error, whose `Display` is one sentence saying what went wrong.
pub type Failure = Box<dyn std::error::Error>;

/// A safe example's `main`: calls `run` and, when it fails, prints `error: ` and the error's
/// `Display` (one sentence: without a driver or a device, `cuda_driver::Error` says so
/// plainly) to stderr and returns exit status 1, with no panic and no backtrace.
///
/// ```no_run
/// use std::process::ExitCode;
/// use cuda_driver_examples::{run_example, Failure};
///
/// fn main() -> ExitCode {
///     run_example(run)
/// }
///
/// fn run() -> Result<(), Failure> {
///     let ctx = cuda_driver::Device::get(0)?.primary_context()?;
///     println!("context {:p}", ctx.as_raw());
///     Ok(())
/// }
/// ```
pub fn run_example(run: impl FnOnce() -> Result<(), Failure>) -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Checks a result in a safe example: when `cond` is false, returns from the enclosing
/// function with an error saying `check failed: `, the condition and the formatted message
/// (which [`run_example`] prints). Unlike [`ensure!`] it does not exit, so everything the
/// example holds is dropped (released in the driver) first.
#[macro_export]
macro_rules! check {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(format!(
                "check failed: {}: {}",
                stringify!($cond),
                format_args!($($msg)+)
            )
            .into());
        }
    };
}

/// The seed's `__check_cuda_driver`: on anything but `CUDA_SUCCESS`, prints `file:line`, the
/// text of the call, and the error's name and description (`cuGetErrorName`,
/// `cuGetErrorString`) to stderr, and returns `false`.
pub fn check_cuda_driver(code: CUresult, op: &str, file: &str, line: u32) -> bool {
    if code == CUDA_SUCCESS {
        return true;
    }
    let mut err_name: *const c_char = std::ptr::null();
    let mut err_message: *const c_char = std::ptr::null();
    // SAFETY: both out-pointers are valid for a write of a `*const c_char`; the driver stores
    // a pointer to a static NUL-terminated string, or leaves/sets null for an unknown code.
    let (name_rc, message_rc) = unsafe {
        (
            cuGetErrorName(code, &mut err_name),
            cuGetErrorString(code, &mut err_message),
        )
    };
    let text = |rc: CUresult, s: *const c_char| -> Cow<'static, str> {
        if rc == CUDA_SUCCESS && !s.is_null() {
            // SAFETY: on CUDA_SUCCESS `s` points to one of the driver's static, NUL-terminated
            // strings, which live as long as the loaded library (the whole program).
            unsafe { CStr::from_ptr(s) }.to_string_lossy()
        } else {
            Cow::Owned(format!("CUresult {code}"))
        }
    };
    eprintln!(
        "{file}:{line}  {op} failed. \n  code = {}, message = {}",
        text(name_rc, err_name),
        text(message_rc, err_message)
    );
    false
}

/// The seed's `checkDriver(op)`: evaluates a driver call and, when it does not return
/// `CUDA_SUCCESS`, prints where and what failed through [`check_cuda_driver`].
///
/// The C macro returns `false` and lets the program carry on; this one then exits with
/// status 1, because every later call of a port would use a handle the failed call never set.
/// Call [`check_cuda_driver`] directly where a failure is expected.
#[macro_export]
macro_rules! check_driver {
    ($op:expr) => {
        if !$crate::check_cuda_driver($op, stringify!($op), file!(), line!()) {
            ::std::process::exit(1);
        }
    };
}

/// Checks a result the way the examples do: when `cond` is false, prints `file:line`, the
/// condition and the formatted message to stderr and exits with status 1.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            eprintln!(
                "{}:{}  check failed: {}: {}",
                file!(),
                line!(),
                stringify!($cond),
                format_args!($($msg)+)
            );
            ::std::process::exit(1);
        }
    };
}

/// `cuInit(0)`, the first call of every raw example, exiting with status 1 and one sentence
/// on stderr when there is no driver (`CUDA_ERROR_STUB_LIBRARY`: the program runs against the
/// stub `libcuda.so.1` that cuda-driver-sys builds where no NVIDIA driver is installed) or no
/// device (`CUDA_ERROR_NO_DEVICE`); any other failure is reported as `checkDriver` does.
pub fn raw_init_or_exit() {
    // SAFETY: cuInit takes no pointers and may be called at any time, from any thread.
    let code = unsafe { cuInit(0) };
    match code {
        CUDA_SUCCESS => {}
        CUDA_ERROR_STUB_LIBRARY => {
            eprintln!(
                "error: no CUDA driver was found (cuInit returned CUDA_ERROR_STUB_LIBRARY: the \
                 libcuda.so.1 loaded is cuda-driver-sys's stub, not the NVIDIA driver)"
            );
            std::process::exit(1);
        }
        CUDA_ERROR_NO_DEVICE => {
            eprintln!("error: no CUDA device was found (cuInit returned CUDA_ERROR_NO_DEVICE)");
            std::process::exit(1);
        }
        _ => {
            check_cuda_driver(code, "cuInit(0)", file!(), line!());
            std::process::exit(1);
        }
    }
}

/// The setup the seed's snippets take for granted: device 0 and a new context on it, current
/// to this thread (`cuDeviceGet`, then `cuCtxCreate` with default flags; CUDA 13's
/// `cuCtxCreate` takes a `CUctxCreateParams*`, null here). Call after [`raw_init_or_exit`];
/// exits as [`check_driver!`] does on failure. The caller destroys the context with
/// `cuCtxDestroy`.
pub fn raw_create_context() -> (CUdevice, CUcontext) {
    let mut device: CUdevice = 0;
    let mut context: CUcontext = std::ptr::null_mut();
    // SAFETY: both out-pointers are live; null CUctxCreateParams is allowed (no execution
    // affinity, no CIG); the ordinal is checked by the driver.
    unsafe {
        check_driver!(cuDeviceGet(&mut device, 0));
        check_driver!(cuCtxCreate(&mut context, std::ptr::null_mut(), 0, device));
    }
    (device, context)
}

/// The text of a log buffer the JIT filled (`CU_JIT_INFO_LOG_BUFFER`,
/// `CU_JIT_ERROR_LOG_BUFFER`): the bytes up to the first NUL, or all of them if there is none.
pub fn log_text(buffer: &[u8]) -> Cow<'_, str> {
    let end = buffer.iter().position(|&b| b == 0).unwrap_or(buffer.len());
    String::from_utf8_lossy(&buffer[..end])
}

/// An `unsigned int` output option value (`CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES`,
/// `CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES` after the call: the bytes of log written), which the
/// JIT stores in the option's `void*` slot itself, in its first four bytes.
pub fn jit_option_u32(value: &*mut c_void) -> u32 {
    let slot: *const *mut c_void = value;
    // SAFETY: `slot` is a live, pointer-aligned `void*`, at least 4 bytes long and aligned
    // for u32; any 4 bytes are a valid u32.
    unsafe { slot.cast::<u32>().read() }
}

/// A `float` output option value (`CU_JIT_WALL_TIME`: milliseconds spent in the compiler or
/// linker), which the JIT stores in the option's `void*` slot itself, in its first four bytes
/// (cuda.h: "Overwrites the option value with the total wall clock time").
pub fn jit_option_f32(value: &*mut c_void) -> f32 {
    f32::from_bits(jit_option_u32(value))
}
