//! Every bad input is a clear error: invalid source, unknown option, missing header, empty
//! program, NUL bytes, name expressions out of order, outputs that were not produced, a
//! compilation cancelled from another thread.

use std::sync::{Arc, Barrier};

use cuda_driver_rtc::{Arch, Error, Options, Program};

use crate::common::{nvrtc, SAXPY, SCALE};

#[gpu_test]
fn invalid_source_is_a_compile_error_with_the_log() {
    nvrtc();
    let mut p = Program::new("bad.cu", "__global__ void k( { }").unwrap();
    let e = p.compile(&Options::new()).unwrap_err();
    let Error::Compile { name, log } = &e else {
        panic!("expected Error::Compile, got {e:?}");
    };
    assert_eq!(name, "bad.cu");
    assert!(log.contains("bad.cu(1): error"), "{log}");
    let text = e.to_string();
    assert!(
        text.starts_with("program `bad.cu` failed to compile:\nbad.cu(1): error"),
        "{text}"
    );
    // The log stays on the program.
    assert_eq!(&p.log().unwrap(), log);
}

#[gpu_test]
fn an_unknown_option_is_an_error_naming_it() {
    nvrtc();
    let mut p = Program::new("saxpy.cu", SAXPY).unwrap();
    let e = p
        .compile(&Options::new().raw("--no-such-option"))
        .unwrap_err();
    assert!(matches!(e, Error::InvalidOption { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "program `saxpy.cu`: NVRTC rejected an option: nvrtc: error: unrecognized option \
         --no-such-option found"
    );
    // An architecture NVRTC does not support is refused the same way.
    let e = p
        .compile(&Options::new().arch(Arch::compute(3, 0)))
        .unwrap_err();
    assert!(matches!(e, Error::InvalidOption { .. }), "{e:?}");
    assert!(e.to_string().contains("--gpu-architecture"), "{e}");
    // The program is still usable.
    p.compile(&Options::new()).unwrap();
}

#[gpu_test]
fn a_missing_header_is_a_compile_error_naming_it() {
    nvrtc();
    let mut p = Program::with_headers(
        "inc.cu",
        "#include \"present.h\"\n#include \"absent.h\"\n",
        &[("present.h", "")],
    )
    .unwrap();
    let e = p.compile(&Options::new()).unwrap_err();
    assert!(matches!(e, Error::Compile { .. }), "{e:?}");
    assert!(
        e.to_string()
            .contains("cannot open source file \"absent.h\""),
        "{e}"
    );
}

#[gpu_test]
fn an_empty_program_is_refused_before_nvrtc() {
    nvrtc();
    for src in ["", "   \n\t  "] {
        let e = Program::new("empty.cu", src).unwrap_err();
        assert!(matches!(e, Error::EmptyProgram { .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            "program `empty.cu` has an empty source: there is nothing to compile"
        );
    }
}

#[gpu_test]
fn a_nul_byte_anywhere_is_an_error_naming_the_string() {
    nvrtc();
    let nul = |r: Result<Program, Error>, what: &str, offset: usize| {
        let e = r.unwrap_err();
        match &e {
            Error::InteriorNul { what: w, offset: o } => {
                assert!(w.contains(what), "{w} should name {what}");
                assert_eq!(*o, offset);
            }
            other => panic!("expected InteriorNul, got {other:?}"),
        }
    };
    nul(
        Program::new("a.cu", "__global__ void k() {}\0 junk"),
        "source",
        22,
    );
    nul(Program::new("a\0.cu", SAXPY), "name of program", 1);
    nul(
        Program::with_headers("a.cu", SAXPY, &[("h\0.h", "")]),
        "include name",
        1,
    );
    nul(
        Program::with_headers("a.cu", SAXPY, &[("h.h", "x\0")]),
        "text of header `h.h`",
        1,
    );
    let mut p = Program::new("a.cu", SCALE).unwrap();
    let e = p.add_name_expression("scale<float>\0").unwrap_err();
    assert!(matches!(e, Error::InteriorNul { offset: 12, .. }), "{e:?}");
    let e = p.compile(&Options::new().raw("-DX=\0")).unwrap_err();
    assert!(matches!(e, Error::InteriorNul { offset: 4, .. }), "{e:?}");
}

#[gpu_test]
fn name_expressions_go_before_compiling_and_unknown_ones_are_errors() {
    nvrtc();
    let mut p = Program::new("scale.cu", SCALE).unwrap();
    p.add_name_expression("scale<float>").unwrap();
    let c = p.compile(&Options::new()).unwrap();
    let e = c.lowered_name("scale<int>").unwrap_err();
    assert!(matches!(e, Error::UnknownNameExpression { .. }), "{e:?}");
    assert!(e
        .to_string()
        .contains("add it with Program::add_name_expression"));
    let e = p.add_name_expression("scale<int>").unwrap_err();
    assert!(
        matches!(e, Error::NameExpressionAfterCompile { .. }),
        "{e:?}"
    );
    // A name expression that names nothing fails the compilation, with the log.
    let mut p = Program::new("scale.cu", SCALE).unwrap();
    p.add_name_expression("scale<no_such_type>").unwrap();
    let e = p.compile(&Options::new()).unwrap_err();
    assert!(matches!(e, Error::Compile { .. }), "{e:?}");
    assert!(e.to_string().contains("no_such_type"), "{e}");
}

#[gpu_test]
fn outputs_that_were_not_produced_are_errors_saying_why() {
    nvrtc();
    let mut p = Program::new("saxpy.cu", SAXPY).unwrap();
    let virt = p
        .compile(&Options::new().arch(Arch::compute(8, 0)))
        .unwrap();
    let e = virt.cubin().unwrap_err().to_string();
    assert!(
        e.contains("no CUBIN") && e.contains("virtual architecture compute_80"),
        "{e}"
    );
    assert!(virt
        .lto_ir()
        .unwrap_err()
        .to_string()
        .contains("without Options::lto"));
    let lto = p
        .compile(&Options::new().arch(Arch::compute(8, 0)).lto(true))
        .unwrap();
    assert!(lto.lto_ir().is_ok());
    for e in [
        lto.ptx().unwrap_err(),
        lto.cubin().unwrap_err(),
        lto.image().err().unwrap(),
    ] {
        assert!(matches!(e, Error::NoOutput { .. }), "{e:?}");
        assert!(e.to_string().contains("link it with Linker"), "{e}");
    }
}

/// A program that takes NVRTC seconds (four instantiations of an unrolled loop of `sinf`).
const SLOW: &str = r#"
template <int I> __global__ void k(float* x) {
    float a = x[threadIdx.x];
#pragma unroll
    for (int j = 0; j < 64; j++) a = a * 1.0001f + j * I + sinf(a);
    x[threadIdx.x] = a;
}
template __global__ void k<0>(float*);
template __global__ void k<1>(float*);
template __global__ void k<2>(float*);
template __global__ void k<3>(float*);
"#;

#[gpu_test]
fn a_cancelled_program_fails_to_compile_clearly_and_stays_cancelled() {
    nvrtc();
    let mut p = Program::new("slow.cu", SLOW).unwrap();
    let cancel = p.cancel_handle();
    cancel.cancel();
    assert!(cancel.is_cancelled());
    for _ in 0..2 {
        let e = p.compile(&Options::new().arch(Arch::sm(8, 0))).unwrap_err();
        assert!(matches!(e, Error::Cancelled { .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            "the compilation of program `slow.cu` was cancelled"
        );
    }
}

#[gpu_test]
fn a_program_compiling_on_another_thread_is_cancelled_from_this_one_and_dropped_there() {
    nvrtc();
    let mut p = Program::new("slow.cu", SLOW).unwrap();
    let cancel = p.cancel_handle();
    let started = Arc::new(Barrier::new(2));
    let t = {
        let started = started.clone();
        std::thread::spawn(move || {
            started.wait();
            let r = p.compile(&Options::new().arch(Arch::sm(8, 0)));
            // The program goes away on the compiling thread, right after the compilation
            // returned: the owner it was compiled for has given up on it.
            drop(p);
            r
        })
    };
    started.wait();
    // Cancelled while (or just before) NVRTC compiles: its flow callback stops it.
    cancel.cancel();
    let e = t.join().unwrap().unwrap_err();
    assert!(matches!(e, Error::Cancelled { .. }), "{e:?}");
    assert_eq!(cuda_driver_rtc::drop_error_count(), 0);
}
