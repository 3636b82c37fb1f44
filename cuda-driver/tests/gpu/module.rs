//! GPU tests: modules (Module Management): loading from PTX, files, fat binaries and with
//! options, info and error logs, functions and globals (and exclusive handles to them), the
//! JIT linker; what the safe loaders refuse (images the driver would read out of bounds or
//! follow pointers in); the raw-handle round trips of Module, Function, Library, Kernel and
//! Linker.

use cuda_driver::module::ModuleError;
use cuda_driver::prelude::*;
use cuda_driver::{
    jit::JitOptions, library::LibraryOptions, module::Linker, types::ErrorCode,
    types::JitInputType, types::StreamFlags, Context, DeviceBuffer, DeviceSliceMut, Error,
    Function, Kernel, LaunchConfig, Library, Module, Stream,
};

use crate::common::{xorshift32, TEST_KERNELS};
use crate::library::LIBRARY;

pub(crate) const LINK_MAIN: &str = include_str!("../ptx/link_main.ptx");

pub(crate) const LINK_HELPER: &str = include_str!("../ptx/link_helper.ptx");

/// Broken PTX: a valid header, then an instruction that does not exist.
pub(crate) const BAD_PTX: &str = ".version 7.0\n.target sm_75\n.address_size 64\n\
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
    // No option set: the raw cuModuleLoadData, which keeps no info log or wall time.
    assert_eq!((module.info_log(), module.wall_time_ms()), ("", None));
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
    assert!(
        matches!(e, Error::Module(ModuleError::SizeMismatch { .. })),
        "{e}"
    );
    assert!(matches!(
        counter.copy_from_host(&[1, 2]),
        Err(Error::LengthMismatch { .. })
    ));
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
    assert!(
        matches!(e, Error::Module(ModuleError::MalformedImage { .. })),
        "{e}"
    );
    // A truncated cubin is refused before the driver sees it.
    let e = Module::load_data(&ctx, b"\x7fELF\x02\x01\x01\x00").unwrap_err();
    assert!(
        matches!(e, Error::Module(ModuleError::MalformedImage { .. })),
        "{e}"
    );
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

/// `__fatBinC_Wrapper_t { int magic; int version; const unsigned long long* data; void* filename_or_fatbins; }`
/// pointing at `data`: the driver would follow the pointer.
fn fatbin_wrapper(data: u64) -> Vec<u8> {
    let mut b = 0x4662_43B1u32.to_le_bytes().to_vec();
    b.extend_from_slice(&1u32.to_le_bytes());
    b.extend_from_slice(&data.to_le_bytes());
    b.extend_from_slice(&0u64.to_le_bytes());
    b
}

fn is_malformed(r: Result<impl std::fmt::Debug, Error>, kind: &str) {
    match r {
        Err(Error::Module(ModuleError::MalformedImage { kind: k, reason })) => {
            assert_eq!(k, kind, "{reason}");
            assert!(!reason.is_empty());
        }
        other => panic!("expected MalformedImage({kind}), got {other:?}"),
    }
}

#[gpu_test]
fn images_with_pointers_or_out_of_bounds_headers_are_refused() {
    let ctx = gpu_or_skip!();
    // Pointers into nowhere: the driver would crash following them (SIGSEGV before the fix).
    for data in [0x10u64, 0xdead_beef_0000, u64::MAX - 7] {
        let wrapper = fatbin_wrapper(data);
        is_malformed(Module::load_data(&ctx, &wrapper), "fat-binary wrapper");
        is_malformed(Library::load_data(&wrapper), "fat-binary wrapper");
        is_malformed(
            Module::load_fat_binary(&ctx, &wrapper),
            "fat-binary wrapper",
        );
        is_malformed(
            Library::load_static(
                Box::leak(wrapper.into_boxed_slice()),
                &JitOptions::new(),
                &LibraryOptions::new().binary_is_preserved(true),
            ),
            "fat-binary wrapper",
        );
    }
    let mut old = 0x1EE5_5A01u32.to_le_bytes().to_vec();
    old.extend_from_slice(&[0x41; 60]);
    is_malformed(Module::load_data(&ctx, &old), "fat binary");
    is_malformed(Library::load_data(&old), "fat binary");

    // A fatbin whose size points past the end.
    let mut fat = 0xBA55_ED50u32.to_le_bytes().to_vec();
    fat.extend_from_slice(&1u16.to_le_bytes());
    fat.extend_from_slice(&16u16.to_le_bytes());
    fat.extend_from_slice(&(1u64 << 20).to_le_bytes());
    is_malformed(Module::load_data(&ctx, &fat), "fatbin");
    is_malformed(Module::load_fat_binary(&ctx, &fat), "fatbin");
    is_malformed(Library::load_data(&fat), "fatbin");

    // An ELF header whose section table lies past the end.
    let mut elf = vec![0u8; 64];
    elf[..4].copy_from_slice(b"\x7fELF");
    elf[4] = 2;
    elf[5] = 1;
    elf[0x34..0x36].copy_from_slice(&64u16.to_le_bytes());
    elf[0x28..0x30].copy_from_slice(&0x10_0000u64.to_le_bytes());
    elf[0x3A..0x3C].copy_from_slice(&64u16.to_le_bytes());
    elf[0x3C..0x3E].copy_from_slice(&3u16.to_le_bytes());
    is_malformed(Module::load_data(&ctx, &elf), "ELF");
    is_malformed(Library::load_data(&elf), "ELF");
    let mut linker = Linker::new(&ctx, &JitOptions::new()).unwrap();
    is_malformed(linker.add_data(JitInputType::CUBIN, &elf, "x.cubin"), "ELF");
    is_malformed(
        linker.add_data(JitInputType::FATBINARY, &fatbin_wrapper(0x10), "x.fatbin"),
        "fat-binary wrapper",
    );

    // Text with a NUL inside, or not UTF-8.
    is_malformed(Module::load_data(&ctx, b".version 8.0\0junk"), "PTX");
    is_malformed(Library::load_data(b"\xff\xfe\x00\x01"), "PTX");

    // A file is read and checked too (cuModuleLoad would have followed the pointer).
    let path = std::env::temp_dir().join(format!(
        "cuda-driver-wrapper-{}-{:?}.fatbin",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::write(&path, fatbin_wrapper(0x10)).unwrap();
    let by_module = Module::load_file(&ctx, &path);
    let by_library = Library::load_file(&path, &JitOptions::new(), &LibraryOptions::new());
    std::fs::remove_file(&path).unwrap();
    is_malformed(by_module, "fat-binary wrapper");
    is_malformed(by_library, "fat-binary wrapper");

    // The context still works.
    let m = Module::load_data(&ctx, TEST_KERNELS).unwrap();
    assert!(!m.function("saxpy").unwrap().as_raw().is_null());
}

#[gpu_test]
fn a_header_only_cubin_loads_or_fails_without_crashing() {
    let ctx = gpu_or_skip!();
    // A valid little-endian ELF64 header with no sections and no segments: in bounds, so the
    // crate hands it to the driver, which has no code to find in it. Whatever the driver makes
    // of it (an error at load, or lazily at first use), nothing crashes and no kernel is found.
    let mut elf = vec![0u8; 64];
    elf[..4].copy_from_slice(b"\x7fELF");
    elf[4] = 2;
    elf[5] = 1;
    elf[6] = 1;
    elf[0x12..0x14].copy_from_slice(&190u16.to_le_bytes()); // EM_CUDA
    elf[0x34..0x36].copy_from_slice(&64u16.to_le_bytes());
    if let Ok(m) = Module::load_data(&ctx, &elf) {
        assert!(m.function("anything").is_err());
    }
    match Library::load_data_eager(&elf, &ctx) {
        Ok(lib) => assert!(lib.kernel("anything").is_err()),
        Err(e) => assert!(e.code().is_some(), "a driver error: {e}"),
    }
    if let Ok(lib) = Library::load_data(&elf) {
        assert!(lib
            .kernel("anything")
            .and_then(|k| k.function(&ctx))
            .is_err());
    }
    // The context still works.
    let m = Module::load_data(&ctx, TEST_KERNELS).unwrap();
    assert!(!m.function("saxpy").unwrap().as_raw().is_null());
}

#[gpu_test]
fn a_second_handle_to_a_global_or_managed_variable_is_refused() {
    let ctx = gpu_or_skip!();
    let module = Module::load_data(&ctx, TEST_KERNELS).unwrap();
    let mut counter = module.global::<i32>("dev_counter").unwrap();
    match module.global::<i32>("dev_counter") {
        Err(Error::AlreadyBorrowed { kind, name }) => {
            assert_eq!((kind, name.as_str()), ("global", "dev_counter"))
        }
        other => panic!("expected AlreadyBorrowed, got {other:?}"),
    }
    // Through a clone of the module and as another type: the same memory.
    let clone = module.clone();
    assert!(matches!(
        clone.global::<[i32; 1]>("dev_counter"),
        Err(Error::AlreadyBorrowed { .. })
    ));
    // Other variables are free; the first handle still works; dropping it frees the name.
    let table = module.global::<f32>("const_table").unwrap();
    counter.copy_from_host(&[7]).unwrap();
    assert_eq!(counter.to_vec().unwrap(), [7]);
    drop(counter);
    assert_eq!(
        module
            .global::<i32>("dev_counter")
            .unwrap()
            .to_vec()
            .unwrap(),
        [7]
    );
    drop(table);

    // A library's global in a context and the same variable through its module there.
    let library = Library::load_data(TEST_KERNELS).unwrap();
    let g = library.global::<i32>("dev_counter", &ctx).unwrap();
    let lib_module = library.module(&ctx).unwrap();
    assert!(matches!(
        lib_module.global::<i32>("dev_counter"),
        Err(Error::AlreadyBorrowed { .. })
    ));
    assert!(matches!(
        library.global::<i32>("dev_counter", &ctx),
        Err(Error::AlreadyBorrowed { .. })
    ));
    drop(g);
    let via_module = lib_module.global::<i32>("dev_counter").unwrap();
    drop(via_module);

    // Managed variables: one address in every context, one handle at a time.
    let library = Library::load_data(LIBRARY).unwrap();
    library.load_into(&ctx).unwrap();
    let data = library.managed::<f32>("managed_data").unwrap();
    match library.managed::<[f32; 256]>("managed_data") {
        Err(Error::AlreadyBorrowed { kind, name }) => {
            assert_eq!((kind, name.as_str()), ("managed variable", "managed_data"))
        }
        other => panic!("expected AlreadyBorrowed, got {other:?}"),
    }
    let address = data.as_raw();
    drop(data);
    assert_eq!(
        library
            .managed::<[f32; 256]>("managed_data")
            .unwrap()
            .as_raw(),
        address
    );
}

/// fill_u32(out, v, n) through `launch` on a fresh buffer; checks every element.
fn check_fill_with(ctx: &Context, launch: impl FnOnce(&Stream, DeviceSliceMut<'_, u32>, u32, i32)) {
    let stream = Stream::new(ctx, StreamFlags::NON_BLOCKING).unwrap();
    let mut out = DeviceBuffer::<u32>::from_slice(ctx, &[1; 256]).unwrap();
    launch(&stream, out.as_view_mut(), 0xC0FFEE, 256);
    stream.synchronize().unwrap();
    assert_eq!(out.to_vec().unwrap(), vec![0xC0FFEE; 256]);
}

#[gpu_test]
fn raw_handles_round_trip() {
    let ctx = gpu_or_skip!();
    let cfg = LaunchConfig::new(1, 256);

    // Module: into_raw gives up ownership; from_raw takes it back (and unloads on drop).
    let raw = Module::load_data(&ctx, TEST_KERNELS).unwrap().into_raw();
    // SAFETY: a live module of ctx, which nothing else unloads.
    let module = unsafe { Module::from_raw(raw, &ctx) };
    assert_eq!(module.as_raw(), raw);
    // Function: into_raw, then from_raw, which keeps the module loaded again.
    let f_raw = module.function("fill_u32").unwrap().into_raw();
    // SAFETY: a function of `module`.
    let f = unsafe { Function::from_raw(f_raw, &module) };
    assert_eq!(f.as_raw(), f_raw);
    check_fill_with(&ctx, |s, out, v, n| {
        // SAFETY: fill_u32(unsigned* out, unsigned v, int n) writes out[0..n).
        unsafe { f.launch(s, &cfg, (out, &v, &n)) }.unwrap();
    });

    // Library and Kernel.
    let lib_raw = Library::load_data(TEST_KERNELS).unwrap().into_raw();
    // SAFETY: a live library, which nothing else unloads.
    let library = unsafe { Library::from_raw(lib_raw, ()) };
    assert_eq!(library.as_raw(), lib_raw);
    let k_raw = library.kernel("fill_u32").unwrap().into_raw();
    // SAFETY: a kernel of `library`.
    let k = unsafe { Kernel::from_raw(k_raw, &library) };
    assert_eq!((k.as_raw(), k.library().as_raw()), (k_raw, lib_raw));
    drop(library); // the kernel keeps it loaded
    check_fill_with(&ctx, |s, out, v, n| {
        // SAFETY: as above.
        unsafe { k.launch(s, &cfg, (out, &v, &n)) }.unwrap();
    });
    if k.params().unwrap().is_some() {
        // A library from a raw handle has no counts: the list is probed, with the same result.
        assert_eq!(k.params().unwrap().unwrap().len(), 3);
        assert_eq!(k.name(), "fill_u32");
    }

    // Linker: into_raw and back; the link still completes.
    let mut linker = Linker::new(&ctx, &JitOptions::new()).unwrap();
    linker
        .add_data(JitInputType::PTX, LINK_MAIN, "link_main.ptx")
        .unwrap();
    let state = linker.into_raw();
    // SAFETY: a live link state of ctx; its option buffers were leaked by into_raw.
    let mut linker = unsafe { Linker::from_raw(state, &ctx) };
    assert_eq!(linker.as_raw(), state);
    linker
        .add_data(JitInputType::PTX, LINK_HELPER, "link_helper.ptx")
        .unwrap();
    assert!(linker.complete().unwrap().starts_with(b"\x7fELF"));
}
