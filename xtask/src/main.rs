//! Project chores: `cargo xtask <task> [options]`.
//!
//! Every task that writes generated files has a `--check` mode that regenerates into memory
//! and fails on any difference from what is committed.

mod bench_report;
mod bindgen;
mod bundle;
mod coverage;
mod dynload;
mod homes;
mod imports;
mod kernels;
mod layers;
mod nccl;
mod ptx_copies;
mod readme;
mod rtc_bindgen;
mod scan;
mod util;

use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <task> [options]

tasks:
  bindgen [--check]              generate the bindings, their dynamic-loading twin, the stub
                                 library source, cuda-driver's types.rs and entry point
                                 markers, the #[wraps] table, and cuda-driver-nccl's nccl.h
                                 bindings
  bindgen-rtc [--check]          generate cuda-driver-rtc's raw bindings from nvrtc.h and nvJitLink.h
                                 of the pinned wheels in .venv
  build-kernels [--check] [--arch compute_XX]
                                 compile ptx/*.cu to ptx/*.ptx with nvcc (default compute_75), and
                                 copy those a package's tests embed into it (cuda-driver/tests/ptx)
  check-imports [--release] [--list]
                                 check that cuda-driver binaries import no cu* symbol newer than CUDA 12.0
  check-layers [--deny-root-imports] [--graph]
                                 check that cuda-driver/src's top-level modules form no cycle and
                                 lower layers import no higher ones; list imports through the
                                 crate root (failing on them with --deny-root-imports)
  check-homes [--list] [--warn-only]
                                 check that each #[wraps(cuX)] in cuda-driver/src stands in the
                                 home of cuX's group of the reference (--list: the table)
  bench-report [--check] [FILE.json] [--out DIR]
                                 write DIR/bench.md, bench.svg and bench-sizes.svg (default docs/,
                                 FILE default docs/bench.json, copied there) from bench --json
  coverage [--missing] [--min PERCENT]
                                 per group of the Driver API reference, the cuda.h functions a
                                 safe wrapper in cuda-driver/src calls
  gpu-bundle [--out DIR]         build the GPU tests and examples into target/gpu-bundle with run.sh
  check-readme                   after `cargo package`: build and run the README's programs from
                                 the packages, as a new crate would, and compare the output the
                                 README quotes with runs
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((task, rest)) = args.split_first() else {
        eprint!("{USAGE}");
        return ExitCode::from(2);
    };
    let result = match task.as_str() {
        "bindgen" => bindgen::run(rest),
        "bindgen-rtc" => rtc_bindgen::run(rest),
        "build-kernels" => kernels::run(rest),
        "check-imports" => imports::run(rest),
        "check-layers" => layers::run(rest),
        "check-homes" => homes::run(rest),
        "bench-report" => bench_report::run(rest),
        "gpu-bundle" => bundle::run(rest),
        "coverage" => coverage::run(rest),
        "check-readme" => readme::run(rest),
        "-h" | "--help" | "help" => {
            print!("{USAGE}");
            Ok(())
        }
        other => Err(format!("unknown task `{other}`\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask {task}: error: {e}");
            ExitCode::FAILURE
        }
    }
}
