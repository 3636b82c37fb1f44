//! Linking with nvJitLink: LTO-IR, PTX, CUBINs and fatbins into one CUBIN; failures with the
//! error log.

use std::path::PathBuf;
use std::process::Command;

use cuda_driver_rtc::{Arch, Cubin, Error, LinkOptions, Linker, LtoIr, Options, Program, Ptx};

use crate::common::{nvjitlink, nvrtc, skip, temp_dir};

/// A device function in one program...
pub const HELPER: &str = "__device__ float twice(float x) { return 2.0f * x; }\n";
/// ...called by a kernel of another.
pub const MAIN: &str = r#"
__device__ float twice(float x);
extern "C" __global__ void apply(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = twice(x[i]) + 1.0f;
}
"#;

fn compile(name: &str, src: &str, opts: &Options) -> cuda_driver_rtc::Compiled {
    Program::new(name, src).unwrap().compile(opts).unwrap()
}

fn is_elf(c: &Cubin) -> bool {
    c.as_bytes().starts_with(b"\x7fELF")
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[gpu_test]
fn lto_ir_of_two_programs_links_into_one_cubin() {
    nvjitlink();
    let lto = Options::new()
        .arch(Arch::compute(8, 0))
        .lto(true)
        .relocatable(true);
    let helper = compile("helper.cu", HELPER, &lto);
    let main = compile("main.cu", MAIN, &lto);
    let mut l = Linker::new(&LinkOptions::new().arch(Arch::sm(8, 0)).lto(true)).unwrap();
    l.add_lto_ir(helper.lto_ir().unwrap(), "helper").unwrap();
    l.add_lto_ir(main.lto_ir().unwrap(), "main").unwrap();
    let cubin = l.complete().unwrap();
    assert!(is_elf(&cubin));
    assert!(contains(cubin.as_bytes(), b"apply"));
    assert_eq!(l.error_log().unwrap(), "");
    // With -verbose, the info log tells what nvJitLink did.
    let mut l = Linker::new(
        &LinkOptions::new()
            .arch(Arch::sm(8, 0))
            .lto(true)
            .raw("-verbose"),
    )
    .unwrap();
    l.add_lto_ir(helper.lto_ir().unwrap(), "helper").unwrap();
    l.add_lto_ir(main.lto_ir().unwrap(), "main").unwrap();
    l.complete().unwrap();
    assert!(!l.info_log().unwrap().is_empty());
}

#[gpu_test]
fn ptx_and_cubins_link_too() {
    nvjitlink();
    let rdc = Options::new().relocatable(true);
    let helper = compile("helper.cu", HELPER, &rdc.clone().arch(Arch::sm(8, 0)));
    let main = compile("main.cu", MAIN, &rdc.arch(Arch::compute(8, 0)));
    let mut l = Linker::new(&LinkOptions::new().arch(Arch::sm(8, 0))).unwrap();
    l.add_cubin(helper.cubin().unwrap(), "helper").unwrap();
    l.add_ptx(main.ptx().unwrap(), "main").unwrap();
    let cubin = l.complete().unwrap();
    assert!(is_elf(&cubin));
    assert!(contains(cubin.as_bytes(), b"apply"));
}

/// nvcc next to NVRTC (the wheels' `bin`), under `CUDA_PATH`, or on `PATH`.
fn nvcc() -> Option<PathBuf> {
    let n = nvrtc();
    let next_to = PathBuf::from(n.location())
        .parent()
        .and_then(|lib| lib.parent())
        .map(|root| root.join("bin/nvcc"));
    let from_env = std::env::var_os("CUDA_PATH").map(|p| PathBuf::from(p).join("bin/nvcc"));
    let on_path = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("nvcc"))
            .find(|f| f.is_file())
    });
    [next_to, from_env, on_path]
        .into_iter()
        .flatten()
        .find(|p| p.is_file())
}

#[gpu_test]
fn a_fatbin_from_nvcc_links() {
    nvjitlink();
    let Some(nvcc) = nvcc() else {
        skip("no nvcc to make a fatbin with (next to NVRTC, in CUDA_PATH or on PATH)");
    };
    let dir = temp_dir("fatbin");
    let src = dir.join("helper.cu");
    std::fs::write(&src, HELPER).unwrap();
    let out = dir.join("helper.fatbin");
    let status = Command::new(&nvcc)
        .args(["--fatbin", "-rdc=true", "-arch=sm_80", "-o"])
        .arg(&out)
        .arg(&src)
        .output()
        .unwrap();
    if !status.status.success() {
        skip(format!(
            "nvcc --fatbin failed: {}",
            String::from_utf8_lossy(&status.stderr).trim()
        ));
    }
    let fatbin = std::fs::read(&out).unwrap();
    let main = compile(
        "main.cu",
        MAIN,
        &Options::new().relocatable(true).arch(Arch::sm(8, 0)),
    );
    let mut l = Linker::new(&LinkOptions::new().arch(Arch::sm(8, 0))).unwrap();
    l.add_fatbin(&fatbin, "helper").unwrap();
    l.add_cubin(main.cubin().unwrap(), "main").unwrap();
    let cubin = l.complete().unwrap();
    assert!(is_elf(&cubin));
    let _ = std::fs::remove_dir_all(&dir);
}

#[gpu_test]
fn an_undefined_function_is_a_link_error_with_the_log() {
    nvjitlink();
    let lto = Options::new()
        .arch(Arch::compute(8, 0))
        .lto(true)
        .relocatable(true);
    let main = compile("main.cu", MAIN, &lto);
    let mut l = Linker::new(&LinkOptions::new().arch(Arch::sm(8, 0)).lto(true)).unwrap();
    l.add_lto_ir(main.lto_ir().unwrap(), "main").unwrap();
    let e = l.complete().unwrap_err();
    let Error::Link { call, log, .. } = &e else {
        panic!("expected Error::Link, got {e:?}");
    };
    assert_eq!(*call, "nvJitLinkComplete");
    assert!(
        log.contains("twice"),
        "the log names the missing symbol: {log}"
    );
    assert_eq!(&l.error_log().unwrap(), log);
}

#[gpu_test]
fn garbage_inputs_and_bad_options_are_errors() {
    nvjitlink();
    // No architecture: nvJitLink says which option is missing.
    match Linker::new(&LinkOptions::new()) {
        Err(e @ Error::Link { .. }) => assert!(e.to_string().contains("MISSING_ARCH"), "{e}"),
        Ok(mut l) => {
            let e = l.complete().unwrap_err();
            assert!(matches!(e, Error::Link { .. }), "{e:?}");
        }
        Err(e) => panic!("unexpected {e:?}"),
    }
    let e = Linker::new(
        &LinkOptions::new()
            .arch(Arch::sm(8, 0))
            .raw("-no-such-option"),
    )
    .unwrap_err();
    assert!(e.to_string().contains("UNRECOGNIZED_OPTION"), "{e}");

    let garbage = vec![0x5au8; 4096];
    let mut l = Linker::new(&LinkOptions::new().arch(Arch::sm(8, 0)).lto(true)).unwrap();
    let results = [
        l.add_lto_ir(&LtoIr::from_bytes(garbage.clone()), "garbage.ltoir"),
        l.add_cubin(&Cubin::from_bytes(garbage.clone()), "garbage.cubin"),
        l.add_fatbin(&garbage, "garbage.fatbin"),
        l.add_ptx(&Ptx::from_text("this is not PTX"), "garbage.ptx"),
    ];
    // Each is refused when added or when linked, never a crash.
    let mut refused = results.iter().filter(|r| r.is_err()).count();
    if l.complete().is_err() {
        refused += 1;
    }
    assert!(refused > 0);
    for r in results.iter().filter_map(|r| r.as_ref().err()) {
        assert!(matches!(r, Error::Link { .. }), "{r:?}");
    }
    // Empty inputs and NUL bytes in names are refused before nvJitLink.
    let mut l = Linker::new(&LinkOptions::new().arch(Arch::sm(8, 0))).unwrap();
    assert!(matches!(
        l.add_fatbin(&[], "empty"),
        Err(Error::InvalidOptions(_))
    ));
    assert!(matches!(
        l.add_fatbin(&garbage, "a\0b"),
        Err(Error::InteriorNul { offset: 1, .. })
    ));
    assert_eq!(cuda_driver_rtc::drop_error_count(), 0);
}
