//! GPU tests: what the safe loaders refuse (images the driver would read out of bounds or
//! follow pointers in), JIT logs of lazily compiled libraries, exclusive handles to module
//! globals and managed variables, parameter counts read from the image, and the raw-handle
//! round trips of Module, Function, Library, Kernel and Linker.

use cuda_driver::prelude::*;
use cuda_driver::{
    Context, DeviceBuffer, DeviceSliceMut, Error, Function, JitInputType, JitOptions, Kernel,
    LaunchConfig, Library, LibraryOptions, Linker, Module, Stream, StreamFlags,
};

use crate::common::TEST_KERNELS;

const LIBRARY: &str = include_str!("../ptx/library.ptx");
const LINK_MAIN: &str = include_str!("../ptx/link_main.ptx");
const LINK_HELPER: &str = include_str!("../ptx/link_helper.ptx");

/// Broken PTX: a valid header, then an instruction that does not exist.
const BAD_PTX: &str = ".version 7.0\n.target sm_75\n.address_size 64\n\
    .visible .entry broken(.param .u64 p)\n{\n    frobnicate.u32 %r1, 42;\n    ret;\n}\n";

/// The kernels of `test_kernels.cu`.
const KERNELS: [&str; 10] = [
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
];

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
        Err(Error::MalformedImage { kind: k, reason }) => {
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

/// The parameter list as the driver reports it when probed (no count known).
fn probed(f: &Function, ctx: &Context) -> Vec<cuda_driver::ParamInfo> {
    // SAFETY: `f`'s module stays loaded while `f` lives, which outlives the copy.
    let raw = unsafe { Function::from_raw(f.as_raw(), ctx) };
    raw.params().unwrap().unwrap().to_vec()
}

#[gpu_test]
fn parameter_counts_from_the_image_match_the_driver() {
    let ctx = gpu_or_skip!();
    let module = Module::load_data(&ctx, TEST_KERNELS).unwrap();
    if module
        .function("saxpy")
        .unwrap()
        .params()
        .unwrap()
        .is_none()
    {
        crate::common::skip("no cuFuncGetParamInfo (a driver older than CUDA 12.4)");
    }
    let library = Library::load_data(TEST_KERNELS).unwrap();
    for name in KERNELS {
        let f = module.function(name).unwrap();
        let counted = f.params().unwrap().unwrap().to_vec();
        assert_eq!(counted, probed(&f, &ctx), "{name}");
        let k = library.kernel(name).unwrap();
        assert_eq!(k.params().unwrap().unwrap(), &counted[..], "{name}");
    }
    // A linked cubin: the counts come from its .nv.info sections.
    let mut linker = Linker::new(&ctx, &JitOptions::new()).unwrap();
    linker
        .add_data(JitInputType::PTX, LINK_MAIN, "link_main.ptx")
        .unwrap();
    linker
        .add_data(JitInputType::PTX, LINK_HELPER, "link_helper.ptx")
        .unwrap();
    let cubin = linker.complete().unwrap();
    let m = Module::load_data(&ctx, &cubin).unwrap();
    let f = m.function("scale_add").unwrap();
    let counted = f.params().unwrap().unwrap().to_vec();
    assert_eq!(counted.len(), 4);
    assert_eq!(counted, probed(&f, &ctx));
    let k = Library::load_data(&cubin)
        .unwrap()
        .kernel("scale_add")
        .unwrap();
    assert_eq!(k.params().unwrap().unwrap(), &counted[..]);
}

/// fill_u32(out, v, n) through `launch` on a fresh buffer; checks every element.
fn check_fill(ctx: &Context, launch: impl FnOnce(&Stream, DeviceSliceMut<'_, u32>, u32, i32)) {
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
    // Function: into_raw, then from_raw while the module stays loaded.
    let f_raw = module.function("fill_u32").unwrap().into_raw();
    // SAFETY: a function of `module`, loaded while `f` lives.
    let f = unsafe { Function::from_raw(f_raw, &ctx) };
    assert_eq!(f.as_raw(), f_raw);
    check_fill(&ctx, |s, out, v, n| {
        // SAFETY: fill_u32(unsigned* out, unsigned v, int n) writes out[0..n).
        unsafe { f.launch(s, &cfg, (out, &v, &n)) }.unwrap();
    });

    // Library and Kernel.
    let lib_raw = Library::load_data(TEST_KERNELS).unwrap().into_raw();
    // SAFETY: a live library, which nothing else unloads.
    let library = unsafe { Library::from_raw(lib_raw) };
    assert_eq!(library.as_raw(), lib_raw);
    let k_raw = library.kernel("fill_u32").unwrap().into_raw();
    // SAFETY: a kernel of `library`.
    let k = unsafe { Kernel::from_raw(k_raw, &library) };
    assert_eq!((k.as_raw(), k.library().as_raw()), (k_raw, lib_raw));
    drop(library); // the kernel keeps it loaded
    check_fill(&ctx, |s, out, v, n| {
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
