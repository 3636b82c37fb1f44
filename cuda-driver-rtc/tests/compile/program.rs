//! Compiling: outputs, logs, lowered names, headers, options, threads.

use cuda_driver_rtc::{compile_ptx, Arch, CppStd, Options, Program};

use crate::common::{nvrtc, SAXPY, SCALE};

#[gpu_test]
fn a_kernel_compiles_to_ptx_with_its_entry_and_an_empty_log() {
    nvrtc();
    let mut p = Program::new("saxpy.cu", SAXPY).unwrap();
    let c = p.compile(&Options::new()).unwrap();
    let ptx = c.ptx().unwrap();
    assert!(ptx.as_str().contains(".visible .entry saxpy("), "{ptx}");
    assert!(ptx.as_str().contains(".target sm_75"), "NVRTC 13's default");
    assert_eq!(ptx.as_bytes_with_nul().last(), Some(&0));
    assert!(c.cubin().is_err() && c.lto_ir().is_err());
    assert_eq!(c.log(), "");
    assert_eq!(p.log().unwrap(), "");
    assert!(!c.from_cache());
    // The one-call helper.
    let ptx2 = compile_ptx(SAXPY, &Options::new()).unwrap();
    assert_eq!(ptx2.as_str(), ptx.as_str());
}

#[gpu_test]
fn a_real_architecture_gives_a_cubin_and_ptx() {
    nvrtc();
    let mut p = Program::new("saxpy.cu", SAXPY).unwrap();
    let c = p.compile(&Options::new().arch(Arch::sm(8, 0))).unwrap();
    let cubin = c.cubin().unwrap();
    assert_eq!(&cubin.as_bytes()[..4], b"\x7fELF");
    assert!(c.ptx().unwrap().as_str().contains(".target sm_80"));
    assert_eq!(c.arch(), Some(Arch::sm(8, 0)));
    // The image to load is the machine code.
    assert_eq!(
        c.image().unwrap().image_bytes(),
        cubin.as_bytes(),
        "the CUBIN is preferred"
    );
}

#[gpu_test]
fn a_template_instantiated_twice_has_two_lowered_names() {
    nvrtc();
    let mut p = Program::new("scale.cu", SCALE).unwrap();
    p.add_name_expression("scale<float>").unwrap();
    p.add_name_expression("scale<double>").unwrap();
    let c = p.compile(&Options::new()).unwrap();
    assert_eq!(
        c.lowered_name("scale<float>").unwrap(),
        "_Z5scaleIfEvPT_S0_i"
    );
    assert_eq!(
        c.lowered_name("scale<double>").unwrap(),
        "_Z5scaleIdEvPT_S0_i"
    );
    let names: Vec<_> = c.lowered_names().collect();
    assert_eq!(names.len(), 2);
    assert_eq!(names[0].0, "scale<float>");
    // Both are entries of the PTX, under those names.
    let ptx = c.ptx().unwrap().as_str();
    for (_, lowered) in names {
        assert!(
            ptx.contains(&format!(".entry {lowered}(")),
            "{lowered} not in the PTX"
        );
    }
}

#[gpu_test]
fn headers_in_memory_are_included_and_nested() {
    nvrtc();
    let mut p = Program::with_headers(
        "main.cu",
        r#"#include "config.h"
           extern "C" __global__ void fill(int* x) { x[threadIdx.x] = VALUE; }"#,
        &[
            (
                "config.h",
                "#include \"inner/value.h\"\n#define VALUE (INNER * 2)\n",
            ),
            ("inner/value.h", "#define INNER 21\n"),
        ],
    )
    .unwrap();
    let ptx = p.compile(&Options::new()).unwrap();
    let text = ptx.ptx().unwrap().as_str();
    assert!(text.contains("42"), "VALUE expanded to 42:\n{text}");
}

#[gpu_test]
fn defines_the_dialect_and_switches_reach_the_compiler() {
    nvrtc();
    let src = r#"
        #if __cplusplus < 202002L
        #error "not C++20"
        #endif
        #ifndef FLAG
        #error "FLAG missing"
        #endif
        static_assert(N == 7, "N is 7");
        extern "C" __global__ void k(float* x) { x[0] = __fdividef(x[1], x[2]); }
    "#;
    let mut p = Program::new("opts.cu", src).unwrap();
    let base = Options::new()
        .std(CppStd::Cpp20)
        .define("N", "7")
        .define_flag("FLAG");
    p.compile(&base.clone().fast_math(true).line_info(true))
        .unwrap();
    // C++17 trips the #error: the options really were applied.
    let e = p
        .compile(&base.clone().std(CppStd::Cpp17))
        .unwrap_err()
        .to_string();
    assert!(e.contains("not C++20"), "{e}");
    // Line info shows up as .loc directives.
    let with = p.compile(&base.clone().line_info(true)).unwrap();
    assert!(with.ptx().unwrap().as_str().contains(".loc"));
    let without = p.compile(&base).unwrap();
    assert!(!without.ptx().unwrap().as_str().contains(".loc"));
}

#[gpu_test]
fn warnings_are_in_the_log_of_a_successful_compile() {
    nvrtc();
    let mut p = Program::new(
        "warn.cu",
        "extern \"C\" __global__ void k() { int unused = 1; }",
    )
    .unwrap();
    let c = p.compile(&Options::new()).unwrap();
    assert!(c.log().contains("warning"), "{}", c.log());
    assert!(c.log().contains("unused"), "{}", c.log());
    assert_eq!(p.log().unwrap(), c.log());
}

#[gpu_test]
fn include_paths_find_headers_on_disk() {
    nvrtc();
    let dir = crate::common::temp_dir("include");
    std::fs::write(dir.join("disk.h"), "#define FROM_DISK 5\n").unwrap();
    let mut p = Program::new(
        "disk.cu",
        "#include \"disk.h\"\nstatic_assert(FROM_DISK == 5, \"\");\n\
         extern \"C\" __global__ void k() {}",
    )
    .unwrap();
    assert!(p.compile(&Options::new()).is_err());
    p.compile(&Options::new().include_path(&dir)).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[gpu_test]
fn a_program_moves_to_another_thread_compiles_and_drops_there() {
    nvrtc();
    let mut p = Program::new("saxpy.cu", SAXPY).unwrap();
    p.add_name_expression("saxpy").unwrap();
    let c = std::thread::spawn(move || {
        let c = p.compile(&Options::new()).unwrap();
        drop(p);
        c
    })
    .join()
    .unwrap();
    assert_eq!(c.lowered_name("saxpy").unwrap(), "saxpy");
}

#[gpu_test]
fn programs_compile_on_many_threads_at_once_and_share_one_for_reading() {
    nvrtc();
    let results: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|i| {
                s.spawn(move || {
                    let src =
                        format!("extern \"C\" __global__ void k{i}(int* x) {{ x[0] = {i}; }}");
                    let mut p = Program::new(&format!("k{i}.cu"), &src).unwrap();
                    p.compile(&Options::new())
                        .unwrap()
                        .ptx()
                        .unwrap()
                        .to_string()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (i, ptx) in results.iter().enumerate() {
        assert!(ptx.contains(&format!(".entry k{i}(")));
    }
    // One compiled program, its log read from several threads.
    let mut p = Program::new("warn.cu", "extern \"C\" __global__ void k() { int u; }").unwrap();
    p.compile(&Options::new()).unwrap();
    let p = &p;
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(move || assert!(p.log().unwrap().contains("warning")));
        }
    });
}

#[gpu_test]
fn a_program_compiles_again_with_other_options() {
    nvrtc();
    let mut p = Program::new("saxpy.cu", SAXPY).unwrap();
    let a = p
        .compile(&Options::new().arch(Arch::compute(8, 0)))
        .unwrap();
    let b = p
        .compile(&Options::new().arch(Arch::compute(9, 0)))
        .unwrap();
    assert!(a.ptx().unwrap().as_str().contains(".target sm_80"));
    assert!(b.ptx().unwrap().as_str().contains(".target sm_90"));
}
