//! GPU tests: modules (load from PTX, file and with options; logs; functions; globals) and the
//! JIT linker.

use cuda_driver::prelude::*;
use cuda_driver::{
    CacheConfig, Context, DeviceAttribute, DeviceBuffer, Error, ErrorCode, FunctionAttribute,
    JitInputType, JitOptions, LaunchConfig, Library, Linker, Module, Stream, StreamFlags,
};

use crate::common::{xorshift32, TEST_KERNELS};

const LINK_MAIN: &str = include_str!("../ptx/link_main.ptx");
const LINK_HELPER: &str = include_str!("../ptx/link_helper.ptx");

/// Broken PTX: a valid header, then an instruction that does not exist.
const BAD_PTX: &str = ".version 7.0\n.target sm_75\n.address_size 64\n\
    .visible .entry broken(.param .u64 p)\n{\n    frobnicate.u32 %r1, 42;\n    ret;\n}\n";

/// Non-zero, position-dependent floats, different per `seed`.
fn floats(n: usize, seed: u32) -> Vec<f32> {
    xorshift32(n, seed)
        .map(|x| (x % 10_000) as f32 * 0.5 + 1.0)
        .collect()
}

/// Launches `fill_u32(out, v, n)` from `module` and checks every element.
fn check_fill(ctx: &Context, module: &Module, v: u32) {
    let f = module.function("fill_u32").unwrap();
    let stream = Stream::new(ctx, StreamFlags::NON_BLOCKING).unwrap();
    let n = 1000usize;
    let mut out = DeviceBuffer::<u32>::from_slice(ctx, &vec![1u32; n]).unwrap();
    let cfg = LaunchConfig::for_num_elems(n).unwrap();
    // SAFETY: fill_u32(unsigned* out, unsigned v, int n) writes out[0..n); out has n elements.
    unsafe { f.launch(&stream, &cfg, (out.as_view_mut(), &v, &(n as i32))) }.unwrap();
    stream.synchronize().unwrap();
    assert_eq!(out.to_vec().unwrap(), vec![v; n]);
}

/// saxpy through `module`, checked against the host.
fn check_saxpy(ctx: &Context, module: &Module) {
    let f = module.function("saxpy").unwrap();
    let stream = Stream::new(ctx, StreamFlags::NON_BLOCKING).unwrap();
    let (x, y) = (floats(4099, 1), floats(4099, 2));
    let dx = DeviceBuffer::from_slice(ctx, &x).unwrap();
    let mut dy = DeviceBuffer::from_slice(ctx, &y).unwrap();
    let (a, n) = (1.5f32, x.len() as i32);
    let cfg = LaunchConfig::for_num_elems(x.len()).unwrap();
    // SAFETY: saxpy(float a, const float* x, float* y, int n); x and y hold n floats.
    unsafe { f.launch(&stream, &cfg, (&a, dx.as_view(), dy.as_view_mut(), &n)) }.unwrap();
    stream.synchronize().unwrap();
    let expected: Vec<f32> = x.iter().zip(&y).map(|(x, y)| a * x + y).collect();
    assert_eq!(dy.to_vec().unwrap(), expected);
}

#[gpu_test]
fn load_ptx_and_launch() {
    let ctx = gpu_or_skip!();
    let module = Module::load_data(&ctx, TEST_KERNELS).unwrap();
    assert!(!module.as_raw().is_null());
    assert_eq!(module.context(), &*ctx);
    check_fill(&ctx, &module, 0xA5A5_0001);
    check_saxpy(&ctx, &module);
    // A NUL-terminated copy loads the same (no copy is made then).
    let with_nul = format!("{TEST_KERNELS}\0");
    check_fill(&ctx, &Module::load_data(&ctx, &with_nul).unwrap(), 77);
    // And so does a &CStr.
    let c = std::ffi::CString::new(TEST_KERNELS).unwrap();
    check_fill(&ctx, &Module::load_data(&ctx, c.as_c_str()).unwrap(), 78);
}

#[gpu_test]
fn load_with_options_keeps_the_info_log() {
    let ctx = gpu_or_skip!();
    let opts = JitOptions::new()
        .verbose(true)
        .max_registers(32)
        .optimization_level(3)
        .generate_line_info(true)
        .target_from_context();
    // The driver keeps compiled PTX in an on-disk cache across processes and writes no info
    // log for a load it serves from there; a comment unique to this run makes the JIT run.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let ptx = format!("{TEST_KERNELS}\n// run {} {nanos}\n", std::process::id());
    let module = Module::load_data_with(&ctx, &ptx, &opts).unwrap();
    let log = module.info_log();
    assert!(!log.is_empty(), "a verbose JIT writes an info log");
    assert!(
        log.contains("saxpy") || log.contains("register"),
        "the verbose log reports the kernels' resources:\n{log}"
    );
    assert!(module.wall_time_ms().unwrap() >= 0.0);
    let saxpy = module.function("saxpy").unwrap();
    let regs = saxpy.num_registers().unwrap();
    assert!(
        (1..=32).contains(&regs),
        "{regs} registers with max_registers(32)"
    );
    check_saxpy(&ctx, &module);
}

#[gpu_test]
fn load_from_a_file() {
    let ctx = gpu_or_skip!();
    let path = std::env::temp_dir().join(format!(
        "cuda-driver-test-{}-{:?}.ptx",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::write(&path, TEST_KERNELS).unwrap();
    let module = Module::load_file(&ctx, &path);
    std::fs::remove_file(&path).unwrap();
    let module = module.unwrap();
    check_saxpy(&ctx, &module);

    let missing = Module::load_file(&ctx, "/nonexistent/cuda-driver/none.ptx").unwrap_err();
    assert_eq!(missing.code(), Some(ErrorCode::FILE_NOT_FOUND), "{missing}");
}

#[gpu_test]
fn malformed_ptx_is_a_jit_error_with_the_log_and_the_context_still_works() {
    let ctx = gpu_or_skip!();
    match Module::load_data(&ctx, BAD_PTX) {
        Err(Error::Jit {
            call, code, log, ..
        }) => {
            assert_eq!(call, "cuModuleLoadDataEx");
            assert_eq!(code, ErrorCode::INVALID_PTX, "{log}");
            assert!(!log.is_empty(), "the JIT explains the error");
            assert!(
                log.to_lowercase().contains("error"),
                "the log reports an error:\n{log}"
            );
        }
        other => panic!("expected Error::Jit, got {other:?}"),
    }
    // The same context loads and runs good code afterwards.
    check_saxpy(&ctx, &Module::load_data(&ctx, TEST_KERNELS).unwrap());
}

#[gpu_test]
fn unknown_kernel_is_not_found_naming_it() {
    let ctx = gpu_or_skip!();
    let module = Module::load_data(&ctx, TEST_KERNELS).unwrap();
    match module.function("no_such_kernel") {
        Err(Error::NotFound { kind, name, code }) => {
            assert_eq!((kind, name.as_str()), ("kernel", "no_such_kernel"));
            assert_eq!(code, ErrorCode::NOT_FOUND);
        }
        other => panic!("expected NotFound, got {other:?}"),
    }
    let e = module.global::<i32>("no_such_global").unwrap_err();
    assert!(
        e.to_string().contains("global `no_such_global` not found"),
        "{e}"
    );
    // The module and context still work.
    check_fill(&ctx, &module, 3);
}

#[gpu_test]
fn globals_are_read_and_written() {
    let ctx = gpu_or_skip!();
    let module = Module::load_data(&ctx, TEST_KERNELS).unwrap();
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();

    let mut counter = module.global::<i32>("dev_counter").unwrap();
    assert_eq!((counter.len(), counter.bytes()), (1, 4));
    counter.copy_from_host(&[40]).unwrap();
    let mut table = module.global::<f32>("const_table").unwrap();
    assert_eq!(table.len(), 16);
    let values = floats(16, 3);
    table.copy_from_host(&values).unwrap();
    assert_eq!(table.to_vec().unwrap(), values);

    // read_globals(out): out[i] = const_table[i] + dev_counter.
    let read = module.function("read_globals").unwrap();
    let mut out = DeviceBuffer::from_slice(&ctx, &[-1.0f32; 16]).unwrap();
    // SAFETY: read_globals(float* out) writes out[0..16); out holds 16 floats.
    unsafe { read.launch(&stream, &LaunchConfig::new(1, 32), (out.as_view_mut(),)) }.unwrap();
    stream.synchronize().unwrap();
    let expected: Vec<f32> = values.iter().map(|v| v + 40.0).collect();
    assert_eq!(out.to_vec().unwrap(), expected);

    // increment_counter() adds one per thread: 3 blocks of 64.
    let inc = module.function("increment_counter").unwrap();
    // SAFETY: increment_counter() takes no parameters and only updates dev_counter.
    unsafe { inc.launch(&stream, &LaunchConfig::new(3, 64), ()) }.unwrap();
    stream.synchronize().unwrap();
    let mut now = [0i32];
    counter.copy_to_host(&mut now).unwrap();
    assert_eq!(now, [40 + 192]);

    // The same variable as one array (once the first handle to it is gone: one handle per
    // variable at a time), and sizes that do not divide are refused.
    drop(table);
    let whole = module.global::<[f32; 16]>("const_table").unwrap();
    assert_eq!(
        whole.to_vec().unwrap(),
        vec![<[f32; 16]>::try_from(values).unwrap()]
    );
    let e = module.global::<f64>("dev_counter").unwrap_err();
    assert!(matches!(e, Error::SizeMismatch { .. }), "{e}");
    assert!(matches!(
        counter.copy_from_host(&[1, 2]),
        Err(Error::LengthMismatch { .. })
    ));
}

#[gpu_test]
fn function_attributes() {
    let ctx = gpu_or_skip!();
    let dev = ctx.device();
    let module = Module::load_data(&ctx, TEST_KERNELS).unwrap();
    let f = module.function("use_dyn_shared").unwrap();
    assert_eq!(f.name(), "use_dyn_shared");
    let max_threads = f.max_threads_per_block().unwrap();
    assert!((64..=1024).contains(&max_threads), "{max_threads}");
    assert!(f.num_registers().unwrap() > 0);
    assert_eq!(f.static_shared_bytes().unwrap(), 0);
    let ptx_version = f.attribute(FunctionAttribute::PTX_VERSION).unwrap();
    assert!(
        ptx_version >= 75,
        "compiled for compute_75 or later: {ptx_version}"
    );

    // Opt in to more dynamic shared memory than the default 48 KiB where the device has it.
    let optin = dev
        .attribute(DeviceAttribute::MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        .unwrap();
    let want = optin.min(64 * 1024);
    f.set_attribute(FunctionAttribute::MAX_DYNAMIC_SHARED_SIZE_BYTES, want)
        .unwrap();
    assert_eq!(
        f.attribute(FunctionAttribute::MAX_DYNAMIC_SHARED_SIZE_BYTES)
            .unwrap(),
        want
    );
    f.set_cache_config(CacheConfig::PREFER_SHARED).unwrap();

    // use_dyn_shared with all of that memory: out[t] = n - 1 - t.
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let n = 512usize;
    let mut out = DeviceBuffer::from_slice(&ctx, &vec![-1.0f32; n]).unwrap();
    let cfg = LaunchConfig::new(1, n as u32).with_shared_mem(want as u32);
    // SAFETY: use_dyn_shared(float* out, int n) with one block of n threads and at least
    // n * 4 bytes of dynamic shared memory writes out[0..n).
    unsafe { f.launch(&stream, &cfg, (out.as_view_mut(), &(n as i32))) }.unwrap();
    stream.synchronize().unwrap();
    let expected: Vec<f32> = (0..n).map(|t| (n - 1 - t) as f32).collect();
    assert_eq!(out.to_vec().unwrap(), expected);
}

#[gpu_test]
fn functions_keep_their_module_loaded() {
    let ctx = gpu_or_skip!();
    let f = {
        let module = Module::load_data(&ctx, TEST_KERNELS).unwrap();
        module.function("fill_u32").unwrap()
    }; // the module handle is gone; the function holds it
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let mut out = DeviceBuffer::<u32>::from_slice(&ctx, &[9; 64]).unwrap();
    // SAFETY: fill_u32 writes out[0..64).
    unsafe {
        f.launch(
            &stream,
            &LaunchConfig::new(1, 64),
            (out.as_view_mut(), &5u32, &64i32),
        )
    }
    .unwrap();
    stream.synchronize().unwrap();
    assert_eq!(out.to_vec().unwrap(), vec![5; 64]);
}

#[gpu_test]
fn fat_binary_loads_refuse_other_images() {
    let ctx = gpu_or_skip!();
    let e = Module::load_fat_binary(&ctx, TEST_KERNELS).unwrap_err();
    assert!(matches!(e, Error::MalformedImage { .. }), "{e}");
    // A truncated cubin is refused before the driver sees it.
    let e = Module::load_data(&ctx, b"\x7fELF\x02\x01\x01\x00").unwrap_err();
    assert!(matches!(e, Error::MalformedImage { .. }), "{e}");
}

/// scale_add(out, in, s, n) of the linked program: out[i] = in[i] * s + 1.
fn check_scale_add(
    ctx: &Context,
    f: impl FnOnce(&Stream, &LaunchConfig, &mut DeviceBuffer<f32>, &DeviceBuffer<f32>, f32, i32),
) {
    let stream = Stream::new(ctx, StreamFlags::NON_BLOCKING).unwrap();
    let input = floats(2048, 7);
    let din = DeviceBuffer::from_slice(ctx, &input).unwrap();
    let mut out = DeviceBuffer::from_slice(ctx, &vec![-1.0f32; input.len()]).unwrap();
    let cfg = LaunchConfig::for_num_elems(input.len()).unwrap();
    f(&stream, &cfg, &mut out, &din, 3.0, input.len() as i32);
    stream.synchronize().unwrap();
    let expected: Vec<f32> = input.iter().map(|x| x * 3.0 + 1.0).collect();
    assert_eq!(out.to_vec().unwrap(), expected);
}

#[gpu_test]
fn linker_links_two_ptx_files_into_a_module_and_a_library() {
    let ctx = gpu_or_skip!();
    let mut linker = Linker::new(&ctx, &JitOptions::new().verbose(true)).unwrap();
    linker
        .add_data(JitInputType::PTX, LINK_MAIN, "link_main.ptx")
        .unwrap();
    linker
        .add_data(JitInputType::PTX, LINK_HELPER, "link_helper.ptx")
        .unwrap();
    let cubin = linker.complete().unwrap();
    assert!(cubin.starts_with(b"\x7fELF"), "the linker outputs a cubin");
    assert!(linker.wall_time_ms() >= 0.0);
    drop(linker); // the cubin is ours, not the link state's

    let module = Module::load_data(&ctx, &cubin).unwrap();
    let f = module.function("scale_add").unwrap();
    check_scale_add(&ctx, |stream, cfg, out, input, s, n| {
        // SAFETY: scale_add(float* out, const float* in, float s, int n); both hold n floats.
        unsafe { f.launch(stream, cfg, (out.as_view_mut(), input.as_view(), &s, &n)) }.unwrap();
    });

    let library = Library::load_data(&cubin).unwrap();
    let k = library.kernel("scale_add").unwrap();
    check_scale_add(&ctx, |stream, cfg, out, input, s, n| {
        // SAFETY: as above.
        unsafe { k.launch(stream, cfg, (out.as_view_mut(), input.as_view(), &s, &n)) }.unwrap();
    });
}

#[gpu_test]
fn linker_errors_carry_the_log_and_the_context_still_works() {
    let ctx = gpu_or_skip!();
    // link_main alone leaves helper_op unresolved.
    let mut linker = Linker::new(&ctx, &JitOptions::new()).unwrap();
    linker
        .add_data(JitInputType::PTX, LINK_MAIN, "link_main.ptx")
        .unwrap();
    match linker.complete() {
        Err(Error::Jit { call, log, .. }) => {
            assert_eq!(call, "cuLinkComplete");
            assert!(
                log.contains("helper_op"),
                "the log names the missing symbol:\n{log}"
            );
        }
        other => panic!("expected Error::Jit, got {other:?}"),
    }
    // Broken PTX fails at add time with its own log.
    let mut linker = Linker::new(&ctx, &JitOptions::new()).unwrap();
    match linker.add_data(JitInputType::PTX, BAD_PTX, "bad.ptx") {
        Err(Error::Jit { log, .. }) => assert!(!log.is_empty()),
        other => panic!("expected Error::Jit, got {other:?}"),
    }
    drop(linker);
    check_saxpy(&ctx, &Module::load_data(&ctx, TEST_KERNELS).unwrap());
}

#[gpu_test]
fn linker_adds_files() {
    let ctx = gpu_or_skip!();
    let dir = std::env::temp_dir();
    let tag = format!("{}-{:?}", std::process::id(), std::thread::current().id());
    let (main, helper) = (
        dir.join(format!("cuda-driver-main-{tag}.ptx")),
        dir.join(format!("cuda-driver-helper-{tag}.ptx")),
    );
    std::fs::write(&main, LINK_MAIN).unwrap();
    std::fs::write(&helper, LINK_HELPER).unwrap();
    let mut linker = Linker::new(&ctx, &JitOptions::new()).unwrap();
    let added = linker
        .add_file(JitInputType::PTX, &main)
        .and_then(|()| linker.add_file(JitInputType::PTX, &helper));
    let _ = (std::fs::remove_file(&main), std::fs::remove_file(&helper));
    added.unwrap();
    let module = Module::load_data(&ctx, &linker.complete().unwrap()).unwrap();
    let f = module.function("scale_add").unwrap();
    check_scale_add(&ctx, |stream, cfg, out, input, s, n| {
        // SAFETY: as in the linker test above.
        unsafe { f.launch(stream, cfg, (out.as_view_mut(), input.as_view(), &s, &n)) }.unwrap();
    });
}
