//! GPU tests: context-independent libraries and kernels (Library Management), and the JIT
//! errors of lazily compiled libraries.

use cuda_driver::module::ModuleError;
use cuda_driver::prelude::*;
use cuda_driver::{
    jit::JitOptions, library::LibraryOptions, types::ContextFlags, types::FunctionAttribute,
    types::StreamFlags, Context, Device, DeviceBuffer, Error, Kernel, LaunchConfig, Library,
    Stream,
};

use crate::common::TEST_KERNELS;
use crate::module::BAD_PTX;

pub(crate) const LIBRARY: &str = include_str!("../ptx/library.ptx");

const LIBRARY_NUL: &str = concat!(include_str!("../ptx/library.ptx"), "\0");

/// Launches `myKernel(out, n)` on `ctx` (n >= 256, so every managed_data element is
/// incremented) and checks `out[i] == i`.
fn run_my_kernel(kernel: &Kernel, ctx: &Context, n: usize) {
    let stream = Stream::new(ctx, StreamFlags::NON_BLOCKING).unwrap();
    let mut out = DeviceBuffer::from_slice(ctx, &vec![-1i32; n]).unwrap();
    let cfg = LaunchConfig::for_num_elems(n).unwrap();
    // SAFETY: myKernel(int* out, int n) writes out[0..n) and the library's managed
    // variables; out holds n ints; the grid has at least 256 threads.
    unsafe { kernel.launch(&stream, &cfg, (out.as_view_mut(), &(n as i32))) }.unwrap();
    stream.synchronize().unwrap();
    let expected: Vec<i32> = (0..n as i32).collect();
    assert_eq!(out.to_vec().unwrap(), expected);
}

/// The library's managed `launch_count` (one int), read on the host in `ctx`.
fn launch_count(library: &Library, ctx: &Context) -> Vec<i32> {
    let count = library.managed::<i32>("launch_count").unwrap();
    count.view(ctx).to_vec().unwrap()
}

#[gpu_test]
fn one_library_launches_in_every_device_and_shares_its_managed_variables() {
    let ctx = gpu_or_skip!();
    let library = Library::load_data(LIBRARY).unwrap();
    let kernel = library.kernel("myKernel").unwrap();
    assert_eq!(kernel.name(), "myKernel");

    let mut launches = 0;
    for dev in Device::all().unwrap() {
        let dctx = dev.primary_context().unwrap();
        run_my_kernel(&kernel, &dctx, 300);
        launches += 1;
    }
    // Once more on the test's context, with another size.
    run_my_kernel(&kernel, &ctx, 1000);
    launches += 1;

    let count = library.managed::<i32>("launch_count").unwrap();
    assert_eq!(count.len(), 1);
    assert_eq!(count.view(&ctx).to_vec().unwrap(), vec![launches]);
    let data = library.managed::<f32>("managed_data").unwrap();
    assert_eq!((data.len(), data.bytes()), (256, 1024));
    assert_eq!(
        data.view(&ctx).to_vec().unwrap(),
        vec![launches as f32; 256]
    );
    // The same address from every context: one managed allocation (looked up again once the
    // first handle is gone: one handle per variable at a time).
    let address = data.as_raw();
    drop(data);
    assert_eq!(
        address,
        library
            .managed::<[f32; 256]>("managed_data")
            .unwrap()
            .as_raw()
    );
}

#[gpu_test]
fn managed_variables_are_written_and_read_on_the_host() {
    let ctx = gpu_or_skip!();
    let library = Library::load_data(LIBRARY).unwrap();
    let kernel = library.kernel("myKernel").unwrap();
    run_my_kernel(&kernel, &ctx, 256);
    let mut data = library.managed::<f32>("managed_data").unwrap();
    ctx.synchronize().unwrap();
    // SAFETY: the only context that runs kernels of this library is synchronised, and no
    // launch happens while the slice lives; the device supports managed memory (a GPU test
    // machine).
    let host: Vec<f32> = unsafe { data.as_host_slice() }.to_vec();
    assert_eq!(host, vec![1.0; 256]);

    let start: Vec<f32> = (0..256).map(|i| i as f32 * 0.5 + 10.0).collect();
    data.view_mut(&ctx).copy_from_host(&start).unwrap();
    run_my_kernel(&kernel, &ctx, 256);
    let expected: Vec<f32> = start.iter().map(|v| v + 1.0).collect();
    let mut back = vec![0.0f32; 256];
    data.view(&ctx).copy_to_host(&mut back).unwrap();
    assert_eq!(back, expected);

    // SAFETY: as above: all work is done and none is launched while the slice lives.
    unsafe { data.as_host_slice_mut() }.fill(100.0);
    run_my_kernel(&kernel, &ctx, 256);
    assert_eq!(data.view(&ctx).to_vec().unwrap(), vec![101.0; 256]);
}

#[gpu_test]
fn kernels_are_enumerated_with_their_names() {
    let _ctx = gpu_or_skip!();
    let library = Library::load_data(TEST_KERNELS).unwrap();
    let kernels = match library.kernels() {
        Err(e @ Error::Unsupported { .. }) => crate::common::skip(e),
        r => r.unwrap(),
    };
    let mut names: Vec<&str> = kernels.iter().map(Kernel::name).collect();
    names.sort_unstable();
    for expected in [
        "add_u32",
        "fill_u32",
        "grid_sync_sum",
        "increment_counter",
        "read_globals",
        "saxpy",
        "sleep_ns",
        "struct_param",
        "use_dyn_shared",
        "vector_types",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let lib2 = Library::load_data(LIBRARY).unwrap();
    let only: Vec<String> = lib2
        .kernels()
        .unwrap()
        .iter()
        .map(|k| k.name().to_owned())
        .collect();
    assert_eq!(only, ["myKernel"]);
}

#[gpu_test]
fn a_library_keeps_an_info_log_when_a_jit_option_is_set() {
    let ctx = gpu_or_skip!();
    // The driver writes no info log for code it serves from its on-disk JIT cache: a comment
    // unique to this run makes the JIT compile.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let unique = |what: &str| format!("{TEST_KERNELS}\n// {what} {} {nanos}\n", std::process::id());
    // Verbose: the log the compile at the first use in a context writes (lazy loading).
    let verbose = Library::load_data_with(
        &unique("verbose library"),
        &JitOptions::new().verbose(true),
        &LibraryOptions::new(),
    )
    .unwrap();
    verbose.load_into(&ctx).unwrap();
    let log = verbose.info_log();
    assert!(
        log.contains("saxpy") || log.contains("register"),
        "the verbose log reports the kernels' resources:\n{log}"
    );
    // No option set: the error log only is asked for, so the info log stays empty.
    let quiet = Library::load_data(&unique("quiet library")).unwrap();
    quiet.load_into(&ctx).unwrap();
    assert_eq!(
        (quiet.info_log(), quiet.error_log()),
        (String::new(), String::new())
    );
    assert_eq!(quiet.kernel("saxpy").unwrap().name(), "saxpy");
}

#[gpu_test]
fn kernel_functions_attributes_globals_and_modules() {
    let ctx = gpu_or_skip!();
    let dev = ctx.device();
    let library = Library::load_data_with(
        TEST_KERNELS,
        &JitOptions::new().verbose(true),
        &LibraryOptions::new(),
    )
    .unwrap();

    let kernel = library.kernel("use_dyn_shared").unwrap();
    let max_threads = kernel
        .attribute(FunctionAttribute::MAX_THREADS_PER_BLOCK, dev)
        .unwrap();
    assert!((64..=1024).contains(&max_threads), "{max_threads}");
    kernel
        .set_attribute(
            FunctionAttribute::MAX_DYNAMIC_SHARED_SIZE_BYTES,
            40 * 1024,
            dev,
        )
        .unwrap();
    assert_eq!(
        kernel
            .attribute(FunctionAttribute::MAX_DYNAMIC_SHARED_SIZE_BYTES, dev)
            .unwrap(),
        40 * 1024
    );

    // The kernel as a Function of the library's module in ctx.
    let f = kernel.function(&ctx).unwrap();
    assert_eq!(f.name(), "use_dyn_shared");
    assert_eq!(f.context(), &*ctx);
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let n = 300usize;
    let mut out = DeviceBuffer::from_slice(&ctx, &vec![-1.0f32; n]).unwrap();
    let cfg = LaunchConfig::new(1, n as u32).with_shared_mem(4 * n as u32);
    // SAFETY: use_dyn_shared(float* out, int n): one block of n threads and n floats of
    // dynamic shared memory; out holds n floats.
    unsafe { f.launch(&stream, &cfg, (out.as_view_mut(), &(n as i32))) }.unwrap();
    stream.synchronize().unwrap();
    let expected: Vec<f32> = (0..n).map(|t| (n - 1 - t) as f32).collect();
    assert_eq!(out.to_vec().unwrap(), expected);

    // Globals in this context, through the library and through its module.
    let mut counter = library.global::<i32>("dev_counter", &ctx).unwrap();
    counter.copy_from_host(&[5]).unwrap();
    let module = library.module(&ctx).unwrap();
    let mut table = module.global::<f32>("const_table").unwrap();
    let values: Vec<f32> = (0..16).map(|i| i as f32 * 1.25 + 2.0).collect();
    table.copy_from_host(&values).unwrap();
    let read = library.kernel("read_globals").unwrap();
    let mut out = DeviceBuffer::from_slice(&ctx, &[0.0f32; 16]).unwrap();
    // SAFETY: read_globals(float* out) writes out[0..16).
    unsafe { read.launch(&stream, &LaunchConfig::new(1, 16), (out.as_view_mut(),)) }.unwrap();
    stream.synchronize().unwrap();
    let expected: Vec<f32> = values.iter().map(|v| v + 5.0).collect();
    assert_eq!(out.to_vec().unwrap(), expected);
    // The module's function is the same code.
    let via_module = module.function("read_globals").unwrap();
    assert_eq!(via_module.name(), "read_globals");
}

#[gpu_test]
fn library_unloads_after_its_context_is_destroyed() {
    let primary = gpu_exclusive_or_skip!();
    // Created contexts take much device memory: not while memory-level tests run.
    let dev = primary.device();
    {
        let library = Library::load_data(LIBRARY).unwrap();
        let kernel = library.kernel("myKernel").unwrap();
        let ctx = Context::new(dev, ContextFlags::SCHED_AUTO).unwrap();
        run_my_kernel(&kernel, &ctx, 512);
        let f = kernel.function(&ctx).unwrap();
        drop(f);
        // The created context goes first (nothing of it is left), then the library.
        drop(ctx);
        drop(kernel);
        drop(library);
    }
    // A new library in a new context works.
    let library = Library::load_data(LIBRARY_NUL).unwrap();
    let kernel = library.kernel("myKernel").unwrap();
    let ctx = Context::new(dev, ContextFlags::SCHED_AUTO).unwrap();
    run_my_kernel(&kernel, &ctx, 777);
    assert_eq!(launch_count(&library, &ctx), vec![1]);
    drop(ctx);
}

#[gpu_test]
fn kernels_keep_their_library_loaded() {
    let ctx = gpu_or_skip!();
    let kernel = Library::load_data(LIBRARY)
        .unwrap()
        .kernel("myKernel")
        .unwrap();
    run_my_kernel(&kernel, &ctx, 256);
    let library = kernel.library();
    assert_eq!(launch_count(&library, &ctx), vec![1]);
}

#[gpu_test]
fn preserved_and_static_images_load() {
    let ctx = gpu_or_skip!();
    let preserve = LibraryOptions::new().binary_is_preserved(true);
    // A borrowed image: the library keeps a copy.
    let borrowed = String::from(LIBRARY);
    let lib = Library::load_data_with(&borrowed, &JitOptions::new(), &preserve).unwrap();
    drop(borrowed);
    run_my_kernel(&lib.kernel("myKernel").unwrap(), &ctx, 256);
    // A static NUL-terminated image: read in place.
    let lib = Library::load_static(LIBRARY_NUL, &JitOptions::new(), &preserve).unwrap();
    run_my_kernel(&lib.kernel("myKernel").unwrap(), &ctx, 256);
    // A static image without NUL: copied once.
    let lib = Library::load_static(LIBRARY, &JitOptions::new(), &preserve).unwrap();
    run_my_kernel(&lib.kernel("myKernel").unwrap(), &ctx, 256);
}

#[gpu_test]
fn library_lookups_name_what_is_missing() {
    let ctx = gpu_or_skip!();
    let library = Library::load_data(LIBRARY).unwrap();
    match library.kernel("noKernel") {
        Err(Error::NotFound { kind, name, .. }) => {
            assert_eq!((kind, name.as_str()), ("kernel", "noKernel"))
        }
        other => panic!("expected NotFound, got {other:?}"),
    }
    match library.managed::<i32>("no_managed") {
        Err(Error::NotFound { kind, name, .. }) => {
            assert_eq!((kind, name.as_str()), ("managed variable", "no_managed"))
        }
        other => panic!("expected NotFound, got {other:?}"),
    }
    let e = library.managed::<f64>("launch_count").unwrap_err();
    assert!(
        matches!(e, Error::Module(ModuleError::SizeMismatch { .. })),
        "{e}"
    );
    let e = library.global::<i32>("no_global", &ctx).unwrap_err();
    assert!(matches!(e, Error::NotFound { kind: "global", .. }), "{e}");
    // Still usable.
    run_my_kernel(&library.kernel("myKernel").unwrap(), &ctx, 256);
}

#[gpu_test]
fn malformed_ptx_library_is_a_jit_error() {
    let ctx = gpu_or_skip!();
    let bad = ".version 7.0\n.target sm_75\n.address_size 64\n.visible .entry broken()\n{\n    bogus;\n}\n";
    match Library::load_data(bad) {
        Err(Error::Jit { call, log, .. }) => {
            assert_eq!(call, "cuLibraryLoadData");
            assert!(!log.is_empty());
        }
        // With lazy loading a driver may defer compiling until the library is loaded into a
        // context; the error must come then.
        Ok(lib) => {
            let e = lib
                .kernel("broken")
                .and_then(|k| k.function(&ctx))
                .and_then(|_| lib.module(&ctx))
                .unwrap_err();
            crate::common::note(format!(
                "cuLibraryLoadData deferred the JIT; the error came later: {e}"
            ));
        }
        Err(e) => panic!("expected Error::Jit, got {e:?}"),
    }
    let library = Library::load_data(LIBRARY).unwrap();
    run_my_kernel(&library.kernel("myKernel").unwrap(), &ctx, 256);
}

/// The first error of loading `BAD_PTX` as a library and using it in `ctx`, lazily.
fn lazy_library_error(ctx: &Context) -> Error {
    let lib = match Library::load_data(BAD_PTX) {
        Err(e) => return e,
        Ok(lib) => lib,
    };
    lib.kernel("broken")
        .and_then(|k| k.function(ctx))
        .and_then(|_| lib.module(ctx))
        .and_then(|_| lib.load_into(ctx))
        .expect_err("broken PTX must fail somewhere")
}

#[gpu_test]
fn library_jit_errors_carry_the_log_eagerly_and_lazily() {
    let ctx = gpu_or_skip!();
    match Library::load_data_eager(BAD_PTX, &ctx) {
        Err(Error::Jit { call, log, .. }) => {
            assert!(
                call == "cuLibraryLoadData" || call == "cuLibraryGetModule",
                "{call}"
            );
            assert!(
                log.to_lowercase().contains("error"),
                "the log reports an error:\n{log}"
            );
        }
        other => panic!("expected Error::Jit at an eager load, got {other:?}"),
    }
    match lazy_library_error(&ctx) {
        Error::Jit { log, .. } => assert!(!log.is_empty(), "the JIT explains the error"),
        e => panic!("expected Error::Jit with the log, got {e:?}"),
    }
    // Good code loads eagerly, and the context still works.
    let lib = Library::load_data_eager(LIBRARY, &ctx).unwrap();
    assert!(lib.error_log().is_empty(), "{}", lib.error_log());
    assert_eq!(lib.kernel("myKernel").unwrap().name(), "myKernel");
}
