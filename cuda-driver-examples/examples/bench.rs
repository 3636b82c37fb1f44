//! The same work through raw `cuda_driver_sys` calls, through the safe `cuda_driver` API and,
//! where it has the operation, through cudarc's safe driver API (on one stream and with two
//! streams), in one process: kernel launches of 0 to 64 parameters, copies of 4 KiB to 1 GiB
//! in every direction, allocation, module and library loading, events, and the rows of the
//! capability issues (virtual memory, IPC, pools, graphs, 2D copies, textures, tensor maps,
//! typed launches). One table, `metric | raw | ours | ours/raw | cudarc/raw | cudarc 2s/raw |
//! target | status | multi-modal`, where each ratio is the median over the rounds of that
//! round's cost ratio against raw (above 1: slower than raw; for bandwidths, the ratio of the
//! times, `raw GB/s / side GB/s`), with its quartiles.
//!
//! Run: `cargo run --release -p cuda-driver-examples --example bench -- [--json FILE] [--quick]`
//!
//! * `--json FILE` also writes every sample, the device, the driver, the date and the targets
//!   to FILE, which `cargo xtask bench-report FILE` turns into `docs/bench.md`,
//!   `docs/bench.svg` and `docs/bench-sizes.svg`.
//! * `--quick` shrinks every count and size, for a smoke run.
//!
//! How it is fair: all sides use the device's primary context; raw and ours use one stream,
//! the same buffers, function handles, grid and synchronisation points; cudarc uses its own
//! buffers and streams, as its users do. Every metric is warmed up once on each side, then
//! measured in rounds; a round measures every side once, back to back, the order rotating
//! from round to round, and the metric's ratio is the median of the rounds' paired ratios (a
//! noisy host moves both samples of a round together). Every result is checked outside the
//! timed regions (the kernels' output, the copied bytes), and a wrong result makes the
//! program exit non-zero; a missed target does not.
//!
//! Each safe metric's comment lists the driver calls the safe API makes per iteration.

use std::ffi::{c_int, c_uint, c_void};
use std::fmt;
use std::process::ExitCode;
use std::ptr::null_mut;
use std::time::{Duration, Instant, SystemTime};

use cuda_driver::prelude::*;
use cuda_driver::{
    sys, types::EventFlags, types::PinnedFlags, types::StreamFlags, Context, Device, DeviceBuffer,
    DeviceRepr, Event, LaunchConfig, Module, PinnedBuffer, Stream,
};
use cuda_driver_examples::bench::{
    first_difference, median, utc_date, Metric, Report, XorShift, CUDARC, CUDARC_2S, OURS, RAW,
};
use cuda_driver_examples::ptx;

/// Launches and event records are enqueued in batches of this many, the stream synchronized
/// between batches outside the timed region, so the driver's queue never fills (a full
/// queue makes the host wait for the GPU, and both sides would then measure the GPU).
const BATCH: usize = 500;
/// Threads per block of every add4 launch.
const BLOCK: u32 = 256;
/// Elements of the add4 launches: small, so the GPU keeps up with the host.
const ADD4_N: usize = 1 << 14;
const MIB: usize = 1 << 20;

/// Counts and sizes; `--quick` shrinks them.
struct Config {
    quick: bool,
    /// Timed rounds per metric (after one warm-up round).
    rounds: usize,
    /// Launches per sample.
    launches: usize,
    round_trips: usize,
    /// The copy sweep's sizes, in bytes.
    copy_sizes: &'static [usize],
    /// Bytes a host copy sample moves at least (the count of copies is this over the size,
    /// within `copy_min_reps..=copy_max_reps`).
    copy_budget: usize,
    copy_min_reps: usize,
    copy_max_reps: usize,
    /// The allocation sweep's sizes and the pairs per sample of each (synchronous,
    /// stream-ordered).
    alloc_sizes: &'static [(usize, usize, usize)],
    /// Allocations per sample of the capability rows (VMM, pools).
    #[cfg_attr(not(unix), allow(dead_code))]
    allocs: usize,
    #[cfg_attr(not(unix), allow(dead_code))]
    alloc_bytes: usize,
    /// Loads per sample of the small and of the large PTX.
    loads: (usize, usize),
    events: usize,
    /// Repetitions of the 2D copies.
    copy_reps: usize,
}

const KIB: usize = 1 << 10;
const GIB: usize = 1 << 30;

impl Config {
    fn full() -> Config {
        Config {
            quick: false,
            rounds: 7,
            launches: 20_000,
            round_trips: 5_000,
            copy_sizes: &[4 * KIB, 64 * KIB, MIB, 16 * MIB, 256 * MIB, GIB],
            copy_budget: 256 * MIB,
            copy_min_reps: 2,
            copy_max_reps: 2_000,
            alloc_sizes: &[
                (4 * KIB, 2_000, 5_000),
                (MIB, 1_000, 5_000),
                (256 * MIB, 100, 2_000),
            ],
            allocs: 2_000,
            alloc_bytes: MIB,
            loads: (100, 10),
            events: 50_000,
            copy_reps: 4,
        }
    }

    fn quick() -> Config {
        Config {
            quick: true,
            rounds: 3,
            launches: 2_000,
            round_trips: 500,
            copy_sizes: &[4 * KIB, 64 * KIB, MIB, 16 * MIB],
            copy_budget: 16 * MIB,
            copy_min_reps: 1,
            copy_max_reps: 200,
            alloc_sizes: &[(4 * KIB, 200, 500), (MIB, 100, 500)],
            allocs: 200,
            alloc_bytes: MIB,
            loads: (3, 1),
            events: 5_000,
            copy_reps: 2,
        }
    }
}

/// A size as the metric names show it.
fn size_name(bytes: usize) -> String {
    if bytes >= GIB && bytes % GIB == 0 {
        format!("{} GiB", bytes / GIB)
    } else if bytes >= MIB && bytes % MIB == 0 {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= KIB && bytes % KIB == 0 {
        format!("{} KiB", bytes / KIB)
    } else {
        format!("{bytes} B")
    }
}

/// The two sides of the rows that only raw and ours have.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Side {
    Raw,
    Safe,
}

/// Every side a row can have.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Who {
    Raw,
    Ours,
    /// cudarc on its default stream (one stream: no event tracking).
    Cudarc,
    /// cudarc on the first of two streams it created (multi-stream mode: every use of a
    /// buffer waits for and records its events).
    Cudarc2,
}

impl Who {
    /// The index of the side in the report's samples.
    fn index(self) -> usize {
        match self {
            Who::Raw => RAW,
            Who::Ours => OURS,
            Who::Cudarc => CUDARC,
            Who::Cudarc2 => CUDARC_2S,
        }
    }

    fn name(self) -> &'static str {
        cuda_driver_examples::bench::SIDES[self.index()]
    }
}

/// Raw and ours.
const TWO: &[Who] = &[Who::Raw, Who::Ours];
/// Raw, ours and cudarc on one and on two streams.
const ALL: &[Who] = &[Who::Raw, Who::Ours, Who::Cudarc, Who::Cudarc2];

/// Why the benchmark stopped.
enum Failure {
    /// The safe API returned an error.
    Safe(cuda_driver::Error),
    /// A raw driver call failed.
    Raw {
        call: &'static str,
        code: sys::CUresult,
    },
    /// A result was wrong.
    Wrong(String),
    /// Bad command line or output file.
    Usage(String),
    /// A cudarc call failed.
    Cudarc(cudarc::driver::DriverError),
    /// A cuda-driver-rtc call (or a raw NVRTC call) failed.
    Rtc(cuda_driver_rtc::Error),
    /// A cuda-driver-nccl call failed.
    Nccl(cuda_driver_nccl::Error),
    /// A failure while measuring a metric.
    In {
        metric: String,
        side: &'static str,
        source: Box<Failure>,
    },
}

impl From<cudarc::driver::DriverError> for Failure {
    fn from(e: cudarc::driver::DriverError) -> Failure {
        Failure::Cudarc(e)
    }
}

impl From<cuda_driver_rtc::Error> for Failure {
    fn from(e: cuda_driver_rtc::Error) -> Failure {
        Failure::Rtc(e)
    }
}

impl From<cuda_driver_nccl::Error> for Failure {
    fn from(e: cuda_driver_nccl::Error) -> Failure {
        Failure::Nccl(e)
    }
}

impl From<cuda_driver::Error> for Failure {
    fn from(e: cuda_driver::Error) -> Failure {
        Failure::Safe(e)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Safe(e) => write!(f, "{e}"),
            Failure::Raw { call, code } => write!(
                f,
                "{call} failed: {}",
                cuda_driver::types::ErrorCode::from_raw(*code)
            ),
            Failure::Wrong(s) => write!(f, "wrong result: {s}"),
            Failure::Usage(s) => write!(f, "{s}"),
            Failure::In {
                metric,
                side,
                source,
            } => write!(f, "{metric} ({side} side): {source}"),
            Failure::Cudarc(e) => write!(f, "cudarc: {e:?}"),
            Failure::Rtc(e) => write!(f, "{e}"),
            Failure::Nccl(e) => write!(f, "{e}"),
        }
    }
}

type Res<T> = Result<T, Failure>;

/// Calls a `cuda_driver_sys` function (inside an `unsafe` block) and returns
/// [`Failure::Raw`] from the enclosing function or closure when it does not succeed: the
/// raw side's one check per call, as the safe side's `?`.
macro_rules! raw {
    ($call:ident ( $($arg:expr),* $(,)? )) => {{
        let code = sys::$call($($arg),*);
        if code != sys::CUDA_SUCCESS {
            return Err(Failure::Raw { call: stringify!($call), code });
        }
    }};
}

/// Fails with [`Failure::Wrong`] unless `cond`.
macro_rules! check {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(Failure::Wrong(format!($($msg)+)));
        }
    };
}

// After the macros, which it uses.
#[path = "bench_parts/future.rs"]
mod future;
#[path = "bench_parts/nccl.rs"]
mod nccl;
#[path = "bench_parts/sweeps.rs"]
mod sweeps;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench: {e}");
            ExitCode::FAILURE
        }
    }
}

struct Args {
    json: Option<String>,
    quick: bool,
    /// Only the rows whose name contains this (`--only TEXT`), with `--rounds` rounds.
    only: Option<String>,
    rounds: Option<usize>,
    line: String,
}

fn parse_args() -> Res<Args> {
    let mut args = Args {
        json: None,
        quick: false,
        only: None,
        rounds: None,
        line: String::new(),
    };
    let mut shown = Vec::new();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--json" => {
                let file = it
                    .next()
                    .ok_or_else(|| Failure::Usage("--json needs a file name".into()))?;
                shown.push(format!("--json {file}"));
                args.json = Some(file);
            }
            "--quick" => {
                shown.push(a.clone());
                args.quick = true;
            }
            "--only" => {
                let text = it
                    .next()
                    .ok_or_else(|| Failure::Usage("--only needs a text".into()))?;
                shown.push(format!("--only {text:?}"));
                args.only = Some(text);
            }
            "--rounds" => {
                let n = it
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|&n: &usize| n > 0)
                    .ok_or_else(|| Failure::Usage("--rounds needs a positive number".into()))?;
                shown.push(format!("--rounds {n}"));
                args.rounds = Some(n);
            }
            "-h" | "--help" => {
                println!(
                    "usage: bench [--json FILE] [--quick] [--only TEXT] [--rounds N]\n\
                     Measures the same work through cuda_driver_sys and cuda_driver and prints \
                     one table of medians; --json also writes them to FILE."
                );
                std::process::exit(0);
            }
            other => {
                return Err(Failure::Usage(format!(
                    "unknown argument `{other}` (usage: bench [--json FILE] [--quick] [--only TEXT] [--rounds N])"
                )))
            }
        }
    }
    args.line = format!(
        "cargo run --release -p cuda-driver-examples --example bench --{}",
        shown.iter().map(|s| format!(" {s}")).collect::<String>()
    );
    Ok(args)
}

fn run() -> Res<()> {
    let args = parse_args()?;
    let cfg = if args.quick {
        Config::quick()
    } else {
        Config::full()
    };
    let date_utc = utc_date(SystemTime::now());

    // The first driver call: without a driver or a device this is where the program stops,
    // with the error's one sentence.
    let dev = Device::get(0)?;
    let ctx = dev.primary_context()?;
    // The raw side's calls act on the current context: make it this one, once.
    ctx.set_current()?;
    let (cc_major, cc_minor) = dev.compute_capability()?;
    let (drv_major, drv_minor) = cuda_driver::driver_version()?;
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;

    let mut r = Runner {
        rounds: args.rounds.unwrap_or(cfg.rounds),
        metrics: Vec::new(),
        only: args.only.clone(),
    };
    let started = Instant::now();
    eprintln!(
        "bench: {} rounds per metric on {}{}...",
        r.rounds,
        dev.name()?,
        if cfg.quick { " (--quick)" } else { "" }
    );
    // First: its IPC helper is this program re-executed, which must not get further.
    vmm_ipc_pools(&mut r, &cfg, &ctx, &stream)?;
    // cudarc on the same device: two handles of the primary context, one used only with its
    // default stream (one-stream mode), the other with two streams it created (multi-stream
    // mode: its buffers' uses record and wait for events).
    let rc = sweeps::Cudarc::new()?;
    ctx.set_current()?;
    sweeps::launches(&mut r, &cfg, &ctx, &stream, &rc)?;
    sweeps::copies(&mut r, &cfg, &ctx, &rc)?;
    sweeps::allocations(&mut r, &cfg, &ctx, &stream, &rc)?;
    sweeps::loading(&mut r, &cfg, &ctx, &stream, &rc)?;
    events(&mut r, &cfg, &ctx, &stream, &rc)?;
    hand_off(&mut r, &cfg, &ctx, &stream)?;
    graphs(&mut r, &cfg, &ctx, &stream)?;
    textures_and_2d_copies(&mut r, &cfg, &ctx)?;
    rtc_compile(&mut r, &cfg)?;
    let nccl_library = nccl::all_reduce(&mut r, &cfg, &ctx, &stream)?;
    future::rows(&mut r, &cfg, &ctx, &stream)?;

    let mut notes = vec![
        format!(
            "Every metric is warmed up once per side, then measured in {} rounds; a round \
             measures every side once, back to back, the order rotating from round to round. \
             A ratio is the median over the rounds of that round's cost ratio against raw \
             (p25-p75 of those ratios in brackets); targets are judged on our median paired \
             ratio. A side whose samples split into clusters separated by a gap wider than \
             twice the wider cluster (and than 3 % of the median) is flagged multi-modal.",
            r.rounds
        ),
        format!(
            "Launches and event records: host time (monotonic clock) of the enqueue loop, \
             {} calls per sample in batches of {BATCH}, the stream synchronized between \
             batches outside the timed region so the driver's queue never fills. The sweep \
             launches empty() (0 parameters), args1(out), add4(a, b, c, n), args16 and args64 \
             (an out pointer and 15 or 63 unsigned values); checked and unchecked through a \
             tuple (up to 12 arguments) or, for 16 and 64, a KernelArgs implementation of the \
             benchmark's own over the pointer and an array; packed through a ParamBuffer \
             (raw: the same bytes through cuLaunchKernel's `extra`, the others raw through \
             kernelParams); typed through the launchers cuda-driver-build generates (up to 12 parameters).",
            cfg.launches
        ),
        "Round trip: median over the iterations of (launch empty(); synchronize the stream)."
            .into(),
        format!(
            "Copies: host clock around the repeated copy plus one synchronisation (raw and \
             ours: the synchronous cuMemcpy*_v2 calls and one cuCtxSynchronize; cudarc: its \
             stream-ordered memcpy_htod/memcpy_dtoh, each followed by a stream synchronize \
             as a synchronous copy is, and memcpy_dtod, with one stream synchronize); \
             each sample moves at least {} (16 times that device to device) in {}..={} \
             copies; time per copy (us) up to 64 \
             KiB, GB/s (10^9 bytes per second, device-to-device counting bytes read plus \
             written) above. The warm-up sample of each side compares every copied byte; \
             each timed sample compares the first and last MiB, cleared before.",
            size_name(cfg.copy_budget),
            cfg.copy_min_reps,
            cfg.copy_max_reps
        ),
        "Allocation: host clock around allocate-and-free pairs; the stream-ordered ones \
         (cuMemAllocAsync/cuMemFreeAsync, cudarc's CudaStream::alloc and drop) end with one \
         stream synchronisation, inside the timed region. cudarc has no synchronous \
         allocation on a device with memory pools."
            .into(),
        format!(
            "Module and library loading: host clock around loads of a small PTX \
             (ptx/bench.ptx, {} loads per sample) and a large one (ptx/bench_large.ptx, {}), \
             each with its unload; the driver's JIT cache serves every side alike. cudarc: \
             CudaContext::load_module(Ptx::from_src(..)) (it copies the text into a CString). \
             Ours reads no kernel parameter metadata at load (the first checked launch asks \
             the driver); its library loads pass the JIT error-log options, whose driver cost \
             alone the rows 'raw, and raw with the crate's 2 JIT error-log options' measure.",
            cfg.loads.0, cfg.loads.1
        ),
        "Floors: where the driver forces a call the raw side does not make, a row measures \
         the raw side with that call (the floor) in its raw column against ours, in the same \
         rounds, and the target applies to that row. The exec kernel-argument update needs a \
         current context (cuGraphExecKernelNodeSetParams crashed driver 580 without one): \
         its floor is the raw update after one cuCtxGetCurrent. A first checked launch must \
         learn the kernel's parameters, and CUDA 13.0 reports them one index at a time with \
         no count: cuKernelGetParamInfo for each parameter, then once past the last, which \
         fails with CUDA_ERROR_INVALID_VALUE (the driver's error path costs about 1 us, 20 \
         times a successful query, on driver 580); the library round trip's floor is the raw \
         round trip with those 5 queries of add4. A small all-reduce (4 KiB, 1 MiB: NCCL's \
         host enqueue, about 5 us) must know the current context, since NCCL switches devices \
         with cudaSetDevice, which would replace a caller's context: its floor is the raw \
         ncclAllReduce after one cuCtxGetCurrent."
            .into(),
        "Multi-stream hand-off: a stream-ordered buffer (4 KiB) moved to a second \
         non-blocking stream and back with AsyncDeviceBuffer::move_to_stream, against raw \
         cuEventRecord on the old stream + cuStreamWaitEvent on the new one with one event \
         per stream made once; host time per hand-off, in batches of 500 with both streams \
         synchronized between batches, outside the timed region."
            .into(),
        "cuEventElapsedTime: both sides call the CUDA 2.0 version (cuda.h 13.0 maps the name \
         to the CUDA 12.8 one), which the raw side looks up once with cuGetProcAddress."
            .into(),
        "Raw and ours share the device's primary context (current throughout), one \
         non-blocking stream, the buffers and the function handles; ours makes the context \
         current with one cuCtxGetCurrent per call, which raw does not, except for launches, \
         stream-ordered allocations and frees, event records, event waits, stream \
         synchronisations and stream queries on a created stream, whose context the driver \
         takes from the stream, and event queries, \
         synchronisations and elapsed times, whose context it takes from the events."
            .into(),
        format!(
            "cudarc {} (crates.io, features driver, nvrtc (for its Ptx type only), std, \
             dynamic-loading, cuda-13000), used through its safe API as its documentation \
             shows: CudaContext::new(0) (the primary context), launch_builder + arg + launch, \
             memcpy_htod/dtoh/dtod with its own CudaSlice buffers, page-locked host memory \
             from alloc_pinned_with_flags(len, 0) (alloc_pinned would make it \
             write-combined), memset_zeros, alloc + drop, load_module, CudaEvent::record. \
             'cudarc' runs on its default stream (the legacy stream; no stream created, so \
             no event tracking); 'cudarc 2s' on the first of two streams created with \
             new_stream (multi-stream mode: each buffer use waits for and records events).",
            sweeps::CUDARC_VERSION
        ),
        format!(
            "Runtime compilation (cuda-driver-rtc): host clock around {} compiles of \
             ptx/bench.cu to PTX (--gpu-architecture=compute_75) per sample, with the NVRTC \
             that Nvrtc::load finds, the same library for both sides: raw = \
             nvrtcCreateProgram + nvrtcCompileProgram + nvrtcGetPTXSize + nvrtcGetPTX + \
             nvrtcDestroyProgram, the source and options C strings made once; ours = \
             Program::with_library (C strings of the name and source, nvrtcCreateProgram, \
             nvrtcSetFlowCallback) + compile (the option's C string, nvrtcCompileProgram, the \
             PTX copied into a String, the CUBIN and LTO-IR sizes asked for, the log read) + \
             drop. Without NVRTC the row is left out.",
            rtc_compiles(&cfg)
        ),
        "Ratio: cost / raw cost (for bandwidths raw GB/s / side GB/s); above 1 the side is \
         slower than the raw calls."
            .into(),
    ];
    notes.push(future::NOTE.into());
    notes.push(match nccl_library {
        Some(library) => format!(
            "All-reduce (NCCL): f32 sums on a communicator of one rank of the device's primary \
             context, {library}, on the benchmark's stream with the same buffers: raw \
             ncclAllReduce against Communicator::all_reduce; host clock around the calls \
             ({BATCH} per sample up to 1 MiB, as time per all-reduce; 8 of 256 MiB, as GB/s of \
             the buffer's size) and one stream synchronisation. The warm-up sample compares \
             every element with the input, the others the first KiB and the last element."
        ),
        None => "All-reduce (NCCL): skipped, no NCCL library could be loaded.".into(),
    });
    let report = Report {
        device: dev.name()?,
        compute_capability: format!("{cc_major}.{cc_minor}"),
        driver_version: format!("{drv_major}.{drv_minor}"),
        date_utc,
        command: args.line,
        quick: cfg.quick,
        rounds: r.rounds,
        notes,
        metrics: r.metrics,
    };

    println!(
        "{} (compute capability {}), driver CUDA {}, {}{}",
        report.device,
        report.compute_capability,
        report.driver_version,
        report.date_utc,
        if cfg.quick { ", --quick" } else { "" }
    );
    println!();
    print!("{}", report.table());
    println!();
    for n in &report.notes {
        println!("* {n}");
    }
    println!("({:.0} s)", started.elapsed().as_secs_f64());
    if let Some(file) = &args.json {
        std::fs::write(file, report.to_json())
            .map_err(|e| Failure::Usage(format!("cannot write {file}: {e}")))?;
        println!("wrote {file}");
    }
    Ok(())
}

/// Runs the metrics and keeps their samples.
struct Runner {
    rounds: usize,
    metrics: Vec<Metric>,
    /// Only rows whose name contains this are measured.
    only: Option<String>,
}

/// A row's name, unit, direction, target and place in a sweep.
struct Row {
    name: String,
    unit: &'static str,
    higher_is_better: bool,
    target: Option<f64>,
    sweep: Option<String>,
    size: Option<usize>,
    args: Option<u32>,
}

impl Row {
    fn new(name: String, unit: &'static str, higher_is_better: bool, target: Option<f64>) -> Row {
        Row {
            name,
            unit,
            higher_is_better,
            target,
            sweep: None,
            size: None,
            args: None,
        }
    }

    /// The row is the point `size` (bytes) of `sweep`.
    fn sized(mut self, sweep: &str, size: usize) -> Row {
        self.sweep = Some(sweep.to_string());
        self.size = Some(size);
        self
    }

    /// The row is the point `args` (parameters) of `sweep`.
    fn with_args(mut self, sweep: &str, args: u32) -> Row {
        self.sweep = Some(sweep.to_string());
        self.args = Some(args);
        self
    }
}

impl Runner {
    /// Warms up every side in `sides` with one sample each (`warm` = true), then takes
    /// `rounds` rounds, each measuring every side once, back to back, in an order that
    /// rotates from round to round (and reverses every other cycle), so each side goes first
    /// and last equally often. `sample` returns one sample of the given side, in the row's
    /// unit; `warm` asks it to check its result fully.
    fn measure(
        &mut self,
        row: Row,
        sides: &[Who],
        mut sample: impl FnMut(Who, bool) -> Res<f64>,
    ) -> Res<()> {
        let full = format!("{} [{}]", row.name, row.unit);
        if self
            .only
            .as_ref()
            .is_some_and(|o| !full.contains(o.as_str()))
        {
            return Ok(());
        }
        let mut m = Metric::new(full.clone(), row.unit, row.higher_is_better, row.target);
        m.sweep = row.sweep;
        m.size = row.size.map(|s| s as u64);
        m.args = row.args;
        let mut one = |who: Who, warm: bool| -> Res<f64> {
            let v = sample(who, warm).map_err(|e| Failure::In {
                metric: full.clone(),
                side: who.name(),
                source: Box::new(e),
            })?;
            if !(v.is_finite() && v > 0.0) {
                return Err(Failure::In {
                    metric: full.clone(),
                    side: who.name(),
                    source: Box::new(Failure::Wrong(format!("sample {v} is not positive"))),
                });
            }
            Ok(v)
        };
        for &who in sides {
            one(who, true)?;
        }
        let n = sides.len();
        for round in 0..self.rounds {
            let mut order: Vec<Who> = (0..n).map(|i| sides[(i + round) % n]).collect();
            if (round / n) % 2 == 1 {
                order.reverse();
            }
            for who in order {
                let v = one(who, false)?;
                m.samples[who.index()].push(v);
            }
        }
        eprintln!("bench: {}", m.name);
        self.metrics.push(m);
        Ok(())
    }

    /// [`measure`](Self::measure) for raw and ours alone, with [`Side`].
    fn run(
        &mut self,
        name: String,
        unit: &'static str,
        higher_is_better: bool,
        target: Option<f64>,
        mut sample: impl FnMut(Side) -> Res<f64>,
    ) -> Res<()> {
        self.measure(
            Row::new(name, unit, higher_is_better, target),
            TWO,
            |who, _| match who {
                Who::Raw => sample(Side::Raw),
                _ => sample(Side::Safe),
            },
        )
    }

    /// [`run`](Self::run) for a bandwidth in GB/s (10^9 bytes per second, higher is better,
    /// target 1.02): `sample` moves `bytes` bytes and returns the time it took.
    fn bandwidth(
        &mut self,
        name: String,
        bytes: usize,
        mut sample: impl FnMut(Side) -> Res<Duration>,
    ) -> Res<()> {
        self.run(name, "GB/s", true, Some(1.02), |side| {
            Ok(bytes as f64 / secs(sample(side)?) / 1e9)
        })
    }
}

/// Nanoseconds per call of `count` calls of `call`, enqueued in batches of [`BATCH`], with
/// the stream synchronized between batches, outside the timed region.
#[inline(always)]
fn enqueue_ns(count: usize, stream: sys::CUstream, mut call: impl FnMut() -> Res<()>) -> Res<f64> {
    let mut total = Duration::ZERO;
    let mut left = count;
    while left > 0 {
        let n = left.min(BATCH);
        let start = Instant::now();
        for _ in 0..n {
            call()?;
        }
        total += start.elapsed();
        // SAFETY: `stream` is a live stream of the current context.
        unsafe { raw!(cuStreamSynchronize(stream)) };
        left -= n;
    }
    Ok(total.as_nanos() as f64 / count as f64)
}

/// Host time of `count` calls of `body` followed by one call of `end` (the metric's end
/// point: a synchronisation, or nothing), the timed region of every metric that is not
/// enqueued in batches.
#[inline(always)]
fn time_loop(
    count: usize,
    end: impl FnOnce() -> Res<()>,
    mut body: impl FnMut() -> Res<()>,
) -> Res<Duration> {
    let start = Instant::now();
    for _ in 0..count {
        body()?;
    }
    end()?;
    Ok(start.elapsed())
}

/// No end point: for [`time_loop`] where each call is complete when it returns.
fn no_end() -> Res<()> {
    Ok(())
}

/// The raw side's `cuLaunchKernel` of `f` on `s`: a grid of `grid` blocks of `block` threads
/// (one-dimensional), no dynamic shared memory, the arguments in `params` or `extra`.
///
/// # Safety
/// As for `cuLaunchKernel`: `f` is a live function (or kernel) of the current context, `s` a
/// live stream of it, `params` or `extra` describe `f`'s parameters and stay alive for the
/// call, and the kernel stays in bounds of the memory they point to.
#[inline(always)]
unsafe fn raw_launch(
    f: sys::CUfunction,
    grid: c_uint,
    block: c_uint,
    s: sys::CUstream,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> Res<()> {
    // SAFETY: the caller's guarantees.
    unsafe {
        raw!(cuLaunchKernel(
            f, grid, 1, 1, block, 1, 1, 0, s, params, extra
        ))
    };
    Ok(())
}

/// Blocks until the current context is idle (the copies' and memsets' end point, the same
/// raw call on both sides).
fn ctx_sync() -> Res<()> {
    // SAFETY: no arguments; acts on the current context.
    unsafe { raw!(cuCtxSynchronize()) };
    Ok(())
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

// ---------------------------------------------------------------------------------------
// Launches
// ---------------------------------------------------------------------------------------

/// `n` pseudo-random floats in [1, 2): their sums are exact in f32.
fn random_f32(rng: &mut XorShift, n: usize) -> Vec<f32> {
    (0..n)
        .map(|_| f32::from_bits(0x3F80_0000 | (rng.next_u64() >> 41) as u32))
        .collect()
}

/// Sets every 32-bit word of `buf` to `value` and waits (untimed preparation, the same raw
/// call before either side's sample).
fn fill_words<T: DeviceRepr>(buf: &DeviceBuffer<T>, value: u32) -> Res<()> {
    check!(
        buf.bytes() % 4 == 0,
        "fill_words: {} bytes are not whole words",
        buf.bytes()
    );
    // SAFETY: `buf` is a live allocation of `bytes()` bytes, 4-byte aligned, in the current
    // context.
    unsafe { raw!(cuMemsetD32(buf.as_raw(), value, buf.bytes() / 4)) };
    ctx_sync()
}

/// Copies `buf[offset..offset + out.len()]` into `out` (untimed checking). The copy is ordered
/// on the legacy default stream; callers synchronize other streams first.
fn read_back<T: DeviceRepr>(buf: &DeviceBuffer<T>, offset: usize, out: &mut [T]) -> Res<()> {
    check!(
        offset
            .checked_add(out.len())
            .is_some_and(|end| end <= buf.len()),
        "read_back: {offset}..+{} is outside a buffer of {}",
        out.len(),
        buf.len()
    );
    let src = buf.as_raw() + (offset * size_of::<T>()) as u64;
    // SAFETY: the range is inside `buf` (checked); `out` is valid for as many bytes of
    // writes, and any bytes are a valid T (T: DeviceRepr).
    unsafe {
        raw!(cuMemcpyDtoH(
            out.as_mut_ptr().cast::<c_void>(),
            src,
            size_of_val(out)
        ))
    };
    Ok(())
}

/// A device buffer holding `data` (untimed preparation).
fn upload<T: DeviceRepr>(ctx: &Context, data: &[T]) -> Res<DeviceBuffer<T>> {
    let buf = DeviceBuffer::<T>::new(ctx, data.len())?;
    // SAFETY: `buf` holds `data.len()` elements of T, as many bytes as `data`.
    unsafe {
        raw!(cuMemcpyHtoD(
            buf.as_raw(),
            data.as_ptr().cast(),
            size_of_val(data)
        ))
    };
    Ok(buf)
}

/// The add4 launches' fixture: inputs, output and what the output must be.
struct Add4 {
    a: DeviceBuffer<f32>,
    b: DeviceBuffer<f32>,
    c: DeviceBuffer<f32>,
    /// `n`, as the kernel's `int n` parameter.
    n: c_int,
    expected: Vec<f32>,
}

impl Add4 {
    fn new(ctx: &Context) -> Res<Add4> {
        let mut rng = XorShift::new(0xADD4);
        let ha = random_f32(&mut rng, ADD4_N);
        let hb = random_f32(&mut rng, ADD4_N);
        let expected = ha.iter().zip(&hb).map(|(x, y)| x + y).collect();
        Ok(Add4 {
            a: upload(ctx, &ha)?,
            b: upload(ctx, &hb)?,
            c: DeviceBuffer::<f32>::new(ctx, ADD4_N)?,
            n: ADD4_N as c_int,
            expected,
        })
    }

    /// The launch configuration of every add4 launch: one thread per element.
    fn config(&self) -> LaunchConfig {
        LaunchConfig::new(grid(ADD4_N), BLOCK)
    }

    /// Clears c (untimed), so that launches that did nothing cannot pass [`Add4::check`].
    fn clear(&self) -> Res<()> {
        fill_words(&self.c, 0)
    }

    /// Checks every element of c against a + b (untimed; the launches' stream has been
    /// synchronized).
    fn check(&self) -> Res<()> {
        let mut got = vec![0.0f32; ADD4_N];
        read_back(&self.c, 0, &mut got)?;
        if let Some(i) = first_difference(&got, &self.expected) {
            return Err(Failure::Wrong(format!(
                "add4: c[{i}] = {}, expected {}",
                got[i], self.expected[i]
            )));
        }
        Ok(())
    }
}

fn grid(n: usize) -> c_uint {
    n.div_ceil(BLOCK as usize) as c_uint
}

// ---------------------------------------------------------------------------------------
// Copies and memset
// ---------------------------------------------------------------------------------------

/// Compares `got` with `want`, naming the first difference.
fn compare(what: &str, got: &[u32], want: &[u32]) -> Res<()> {
    if let Some(i) = first_difference(got, want) {
        return Err(Failure::Wrong(format!(
            "{what}: word {i} is {:#010x}, expected {:#010x}",
            got.get(i).copied().unwrap_or(0),
            want.get(i).copied().unwrap_or(0)
        )));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------------------

fn events(
    r: &mut Runner,
    cfg: &Config,
    ctx: &Context,
    stream: &Stream,
    rc: &sweeps::Cudarc,
) -> Res<()> {
    let count = cfg.events;
    let s = stream.as_raw();
    let ev = Event::new(ctx, EventFlags::DEFAULT)?;
    let e = ev.as_raw();
    // cudarc: an event with timing (as ours) of each of its contexts, recorded on its stream.
    let ev1 = rc
        .one
        .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))?;
    let ev2 = rc
        .two
        .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))?;
    r.measure(
        Row::new("cuEventRecord".into(), "ns/call", false, Some(1.02)),
        ALL,
        |who, _| match who {
            Who::Raw => enqueue_ns(count, s, || {
                // SAFETY: event and stream are live, of the current context.
                unsafe { raw!(cuEventRecord(e, s)) };
                Ok(())
            }),
            // Safe: Event::record = a context comparison + cuEventRecord (no cuCtxGetCurrent on
            // a created stream).
            Who::Ours => enqueue_ns(count, s, || Ok(ev.record(stream)?)),
            // cudarc: CudaEvent::record = a context comparison + cuCtxSetCurrent +
            // cuEventRecord.
            Who::Cudarc => enqueue_ns(count, rc.s1.cu_stream().cast(), || Ok(ev1.record(&rc.s1)?)),
            Who::Cudarc2 => enqueue_ns(count, rc.s2.cu_stream().cast(), || Ok(ev2.record(&rc.s2)?)),
        },
    )?;

    // Two events recorded one after the other on the stream, both completed.
    let start_ev = Event::new(ctx, EventFlags::DEFAULT)?;
    let end_ev = Event::new(ctx, EventFlags::DEFAULT)?;
    start_ev.record(stream)?;
    end_ev.record(stream)?;
    stream.synchronize()?;
    // The raw side calls the same driver function as the safe side: the first
    // cuEventElapsedTime (CUDA 2.0), looked up once with cuGetProcAddress with the flags the
    // safe crate uses, as a program that supports CUDA 12.0 drivers must (cuda.h 13.0 maps
    // the name to the CUDA 12.8 version).
    let mut fp: *mut c_void = null_mut();
    let mut status: sys::CUdriverProcAddressQueryResult = 0;
    // SAFETY: NUL-terminated name; out-pointers live.
    unsafe {
        raw!(cuGetProcAddress_v2(
            c"cuEventElapsedTime".as_ptr(),
            &mut fp,
            2000,
            sys::CU_GET_PROC_ADDRESS_LEGACY_STREAM as u64,
            &mut status
        ))
    };
    check!(
        !fp.is_null() && status == sys::CU_GET_PROC_ADDRESS_SUCCESS,
        "cuGetProcAddress(cuEventElapsedTime, 2000) found nothing (status {status})"
    );
    // SAFETY: the driver returned the CUDA 2.0 cuEventElapsedTime, whose type is this PFN.
    let elapsed_v1: unsafe extern "C" fn(*mut f32, sys::CUevent, sys::CUevent) -> sys::CUresult =
        unsafe { std::mem::transmute(fp) };
    let (e0, e1) = (start_ev.as_raw(), end_ev.as_raw());
    let mut raw_ms = f32::NAN;
    let mut safe_ms = f32::NAN;
    r.run(
        "cuEventElapsedTime".into(),
        "ns/call",
        false,
        Some(1.05),
        |side| {
            let t = match side {
                Side::Raw => time_loop(count, no_end, || {
                    let mut ms = 0.0f32;
                    // SAFETY: both events are live, recorded and completed.
                    let code = unsafe { elapsed_v1(&mut ms, e0, e1) };
                    if code != sys::CUDA_SUCCESS {
                        return Err(Failure::Raw {
                            call: "cuEventElapsedTime",
                            code,
                        });
                    }
                    raw_ms = std::hint::black_box(ms);
                    Ok(())
                })?,
                // Safe: Event::elapsed_ms = the cached entry point (an atomic load) +
                // cuEventElapsedTime (v1); no cuCtxGetCurrent (the driver takes the context
                // from the events).
                Side::Safe => time_loop(count, no_end, || {
                    safe_ms = std::hint::black_box(start_ev.elapsed_ms(&end_ev)?);
                    Ok(())
                })?,
            };
            Ok(secs(t) * 1e9 / count as f64)
        },
    )?;
    // (Not measured under --only: both stay NaN.)
    check!(
        (raw_ms.is_nan() && safe_ms.is_nan())
            || (raw_ms.is_finite() && raw_ms >= 0.0 && raw_ms == safe_ms),
        "cuEventElapsedTime: raw {raw_ms} ms, safe {safe_ms} ms"
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Virtual memory, IPC and memory pools
// ---------------------------------------------------------------------------------------

/// Map + set access + unmap of 2 MiB, IPC open + close (of memory a helper process exports:
/// a process cannot open its own handles) and allocation + free from a custom pool on a
/// stream. Called first among the groups, because the helper is this program re-executed,
/// which serves the handle from here and exits.
#[cfg(not(unix))]
fn vmm_ipc_pools(_: &mut Runner, _: &Config, _: &Context, _: &Stream) -> Res<()> {
    // The IPC row needs a helper process reached over a Unix socket.
    Ok(())
}

#[cfg(unix)]
fn vmm_ipc_pools(r: &mut Runner, cfg: &Config, ctx: &Context, stream: &Stream) -> Res<()> {
    use cuda_driver::{
        memory::pool::MemPool, memory::pool::MemPoolProps, memory::vmm::AddressRange,
        memory::vmm::AllocationProps, memory::vmm::MemAccessDesc, memory::vmm::PhysicalAllocation,
        memory::IpcMemHandle, types::DeviceAttribute, types::IpcMemFlags,
    };
    use cuda_driver_examples::ipc::{connect_to_parent, spawn_self};
    use std::sync::Arc;

    let wrong = |e: Box<dyn std::error::Error>| Failure::Wrong(e.to_string());
    let size = 2 * MIB;
    // The helper: export one allocation, wait until the parent is done, exit.
    if let Some(mut parent) = connect_to_parent().map_err(wrong)? {
        let buf = DeviceBuffer::<u8>::new(ctx, size)?;
        let sent = parent.send(&buf.ipc_handle()?.to_bytes());
        let done = sent.and_then(|()| parent.recv());
        std::process::exit(if done.is_ok() { 0 } else { 1 });
    }
    let dev = ctx.device();
    let count = cfg.allocs;

    if dev.attribute(DeviceAttribute::VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)? != 0 {
        let props = AllocationProps::device(dev);
        let phys = Arc::new(PhysicalAllocation::new(ctx, size, &props)?);
        let range = AddressRange::reserve(ctx, size, 0)?;
        let (ptr, handle) = (range.as_raw(), phys.as_raw());
        let raw_desc = MemAccessDesc::read_write(dev).as_raw();
        r.run(
            format!(
                "cuMemMap + cuMemSetAccess + cuCtxSynchronize + cuMemUnmap, {}",
                size_name(size)
            ),
            "us/cycle",
            false,
            Some(1.03),
            |side| {
                let t = match side {
                    // What a C program that may have queued work through the mapping does:
                    // wait for it before unmapping (cuMemUnmap does not wait).
                    Side::Raw => time_loop(count, no_end, || {
                        // SAFETY: the range and the allocation are live and `size` bytes each;
                        // the mapping is undone in the same iteration.
                        unsafe {
                            raw!(cuMemMap(ptr, size, 0, handle, 0));
                            raw!(cuMemSetAccess(ptr, size, &raw_desc, 1));
                            raw!(cuCtxSynchronize());
                            raw!(cuMemUnmap(ptr, size));
                        }
                        Ok(())
                    })?,
                    // Safe: AddressRange::map = bounds checks + a claim (a mutex and a map
                    // entry) + cuCtxGetCurrent + cuMemMap + cuMemSetAccess (read-write for the
                    // range's device, which the mapping's views need) + an Arc clone; drop =
                    // cuCtxGetCurrent + cuCtxSynchronize + cuMemUnmap + the claim's release +
                    // Arc clones and decrements.
                    Side::Safe => time_loop(count, no_end, || {
                        drop(range.map::<u8>(0, phys.clone(), 0, size)?);
                        Ok(())
                    })?,
                };
                Ok(secs(t) * 1e6 / count as f64)
            },
        )?;
    }

    {
        let (child, mut peer) = spawn_self().map_err(wrong)?;
        let bytes: [u8; 64] = peer
            .recv_array()
            .map_err(|e| Failure::Wrong(format!("the IPC helper: {e}")))?;
        let h = IpcMemHandle::from_bytes(bytes);
        let raw_h = h.as_raw();
        let flags = IpcMemFlags::LAZY_ENABLE_PEER_ACCESS;
        let n = (count / 10).max(10);
        let result = r.run(
            "cuIpcOpenMemHandle + cuIpcCloseMemHandle".into(),
            "us/pair",
            false,
            Some(1.03),
            |side| {
                let t = match side {
                    Side::Raw => time_loop(n, no_end, || {
                        let mut p: sys::CUdeviceptr = 0;
                        // SAFETY: a handle of the helper's live allocation; closed right after.
                        unsafe {
                            raw!(cuIpcOpenMemHandle_v2(&mut p, raw_h, flags.as_raw()));
                            raw!(cuIpcCloseMemHandle(p));
                        }
                        Ok(())
                    })?,
                    // Safe: IpcMemHandle::open = size check + cuCtxGetCurrent +
                    // cuIpcOpenMemHandle_v2 + cuMemGetAddressRange_v2 (the length check) + a
                    // Context clone; drop = cuCtxGetCurrent + cuIpcCloseMemHandle.
                    Side::Safe => time_loop(n, no_end, || {
                        // SAFETY: the allocation outlives the benchmark.
                        drop(unsafe { h.open::<u8>(ctx, size, flags) }?);
                        Ok(())
                    })?,
                };
                Ok(secs(t) * 1e6 / n as f64)
            },
        );
        let _ = peer.send(b"done");
        child.wait().map_err(wrong)?;
        result?;
    }

    if dev.attribute(DeviceAttribute::MEMORY_POOLS_SUPPORTED)? != 0 {
        let bytes = cfg.alloc_bytes;
        let pool = MemPool::with_props(dev, &MemPoolProps::device(dev))?;
        pool.set_release_threshold(u64::MAX)?;
        let (p, s) = (pool.as_raw(), stream.as_raw());
        r.run(
            format!(
                "cuMemAllocFromPoolAsync + cuMemFreeAsync, custom pool, {}, one sync",
                size_name(bytes)
            ),
            "us/pair",
            false,
            Some(1.03),
            |side| {
                let sync = || {
                    // SAFETY: live stream.
                    unsafe { raw!(cuStreamSynchronize(s)) };
                    Ok(())
                };
                let t = match side {
                    Side::Raw => time_loop(count, sync, || {
                        let mut ptr: sys::CUdeviceptr = 0;
                        // SAFETY: live pool and stream; freed in stream order right after.
                        unsafe {
                            raw!(cuMemAllocFromPoolAsync(&mut ptr, bytes, p, s));
                            raw!(cuMemFreeAsync(ptr, s));
                        }
                        Ok(())
                    })?,
                    // Safe: MemPool::alloc_async = size and stream checks +
                    // cuMemAllocFromPoolAsync; free_async = cuMemFreeAsync (a created stream
                    // names its context: no cuCtxGetCurrent).
                    Side::Safe => time_loop(count, sync, || {
                        Ok(pool.alloc_async::<u8>(stream, bytes)?.free_async()?)
                    })?,
                };
                Ok(secs(t) * 1e6 / count as f64)
            },
        )?;
        pool.trim_to(0)?;
    }
    Ok(())
}

/// The multi-stream hand-off of a stream-ordered buffer: moving it from one stream to another
/// and back (`AsyncDeviceBuffer::move_to_stream`) against the raw calls that order the streams,
/// `cuEventRecord` on the old stream and `cuStreamWaitEvent` on the new one, with an event of
/// each stream made once (as the crate's streams keep one). Host time per hand-off, enqueued in
/// batches with both streams synchronized between them, outside the timed region.
fn hand_off(r: &mut Runner, cfg: &Config, ctx: &Context, stream: &Stream) -> Res<()> {
    let count = cfg.events;
    let other = Stream::new(ctx, StreamFlags::NON_BLOCKING)?;
    let (s, o) = (stream.as_raw(), other.as_raw());
    let ev_s = Event::new(ctx, EventFlags::DISABLE_TIMING)?;
    let ev_o = Event::new(ctx, EventFlags::DISABLE_TIMING)?;
    let (es, eo) = (ev_s.as_raw(), ev_o.as_raw());
    // One sample: `count` hand-offs (count / 2 round trips) by `round_trip`, in batches.
    let sample = |round_trip: &mut dyn FnMut() -> Res<()>| -> Res<f64> {
        let mut total = Duration::ZERO;
        let mut left = count / 2;
        while left > 0 {
            let n = left.min(BATCH / 2);
            let start = Instant::now();
            for _ in 0..n {
                round_trip()?;
            }
            total += start.elapsed();
            // SAFETY: live streams of the current context.
            unsafe {
                raw!(cuStreamSynchronize(s));
                raw!(cuStreamSynchronize(o));
            }
            left -= n;
        }
        Ok(total.as_nanos() as f64 / (count / 2 * 2) as f64)
    };
    let mut buf = Some(DeviceBuffer::<u8>::new_async(stream, 4 * KIB)?);
    r.run(
        "multi-stream hand-off of a stream-ordered buffer (move_to_stream) vs cuEventRecord + \
         cuStreamWaitEvent"
            .into(),
        "ns/hand-off",
        false,
        Some(1.05),
        |side| match side {
            Side::Raw => sample(&mut || {
                // SAFETY: live events and streams of the current context.
                unsafe {
                    raw!(cuEventRecord(es, s));
                    raw!(cuStreamWaitEvent(o, es, 0));
                    raw!(cuEventRecord(eo, o));
                    raw!(cuStreamWaitEvent(s, eo, 0));
                }
                Ok(())
            }),
            // Safe: move_to_stream = the context and default-stream checks + cuEventRecord of
            // the old stream's own event + cuStreamWaitEvent (no cuCtxGetCurrent between
            // created streams).
            Side::Safe => sample(&mut || {
                let b = buf.take().expect("the buffer is put back after each move");
                let b = b.move_to_stream(&other).map_err(cuda_driver::Error::from)?;
                buf = Some(b.move_to_stream(stream).map_err(cuda_driver::Error::from)?);
                Ok(())
            }),
        },
    )?;
    if let Some(b) = buf {
        b.free_async()?;
    }
    stream.synchronize()?;
    other.synchronize()?;
    Ok(())
}

/// Kernel-argument updates (and context checks) per sample.
fn updates_count(reps: usize) -> usize {
    reps * 10
}

/// The graph rows: instantiating a 100-node graph, launching an instantiated graph, a
/// kernel-argument update of an exec, and a step of 1,000 kernels as individual launches
/// against one graph launch (host time per kernel). Raw: the same graphs through
/// `cuGraph*` calls on the raw handles; safe: `Graph`, `GraphExec`.
fn graphs(r: &mut Runner, cfg: &Config, ctx: &Context, stream: &Stream) -> Res<()> {
    use cuda_driver::{graph::Graph, graph::GraphExec, types::GraphInstantiateFlags};

    let module = Module::load_data(ctx, ptx::GRAPH_KERNELS)?;
    let noop = module.function("noop")?;
    let inc = module.function("inc")?;
    let f_noop = noop.as_raw();
    let s = stream.as_raw();
    let one = LaunchConfig::new(1, 1);
    let reps = if cfg.quick { 20 } else { 200 };

    // A chain of `n` noop kernel nodes, built with the safe API (the raw side instantiates
    // and launches the same CUgraph).
    let chain = |n: usize| -> Res<Graph> {
        let g = Graph::new()?;
        let mut prev = None;
        for _ in 0..n {
            let deps: Vec<_> = prev.into_iter().collect();
            // SAFETY: noop() takes no parameters and touches no memory.
            let k = unsafe { g.add_kernel(&deps, &noop, &one, ())? };
            prev = Some(*k);
        }
        Ok(g)
    };

    // Instantiate + destroy of a 100-node graph.
    let g100 = chain(100)?;
    let raw_g100 = g100.as_raw();
    r.run(
        "graph instantiate + destroy, 100 kernel nodes".into(),
        "us/instantiate",
        false,
        Some(1.03),
        |side| {
            let t = match side {
                Side::Raw => time_loop(reps, no_end, || {
                    let mut e = null_mut();
                    // SAFETY: a live graph; the exec is destroyed at once.
                    unsafe {
                        raw!(cuGraphInstantiateWithFlags(&mut e, raw_g100, 0));
                        raw!(cuGraphExecDestroy(e));
                    }
                    Ok(())
                })?,
                Side::Safe => time_loop(reps, no_end, || {
                    drop(g100.instantiate(GraphInstantiateFlags::empty())?);
                    Ok(())
                })?,
            };
            Ok(secs(t) * 1e6 / reps as f64)
        },
    )?;

    // Launch of an instantiated graph (10 noop nodes).
    let g10 = chain(10)?;
    let exec10 = g10.instantiate(GraphInstantiateFlags::empty())?;
    let raw_exec10 = exec10.as_raw();
    let launches = cfg.launches.min(20_000);
    r.run(
        "graph launch, 10 kernel nodes".into(),
        "us/launch",
        false,
        Some(1.03),
        |side| {
            let ns = match side {
                Side::Raw => enqueue_ns(launches, s, || {
                    // SAFETY: a live exec and stream.
                    unsafe { raw!(cuGraphLaunch(raw_exec10, s)) };
                    Ok(())
                })?,
                Side::Safe => enqueue_ns(launches, s, || Ok(exec10.launch(stream)?))?,
            };
            Ok(ns / 1e3)
        },
    )?;

    // The context check that the safe side of most rows adds to the raw call (the exec
    // update below needs a current context: cuGraphExecKernelNodeSetParams crashed driver 580
    // without one). No target: both sides ask the driver the same question.
    let check_reps = updates_count(reps);
    r.run(
        "context check: cuCtxGetCurrent (raw) / Context::current_raw (ours)".into(),
        "ns/call",
        false,
        None,
        |side| {
            let t = match side {
                Side::Raw => time_loop(check_reps, no_end, || {
                    let mut c = null_mut();
                    // SAFETY: writes one CUcontext.
                    unsafe { raw!(cuCtxGetCurrent(&mut c)) };
                    std::hint::black_box(c);
                    Ok(())
                })?,
                Side::Safe => time_loop(check_reps, no_end, || {
                    std::hint::black_box(Context::current_raw()?);
                    Ok(())
                })?,
            };
            Ok(secs(t) * 1e9 / check_reps as f64)
        },
    )?;

    // Kernel-argument update of an exec: inc(x, n) with n alternating.
    let mut x = DeviceBuffer::<i32>::zeroed(ctx, 1024)?;
    let gi = Graph::new()?;
    let n0 = 1024i32;
    let icfg = LaunchConfig::for_num_elems(1024)?;
    // SAFETY: inc(int*, int) on 1024 ints of x, which outlives the graph and exec.
    let node = unsafe { gi.add_kernel(&[], &inc, &icfg, (x.as_view_mut(), &n0))? };
    let mut exec_i: GraphExec = gi.instantiate(GraphInstantiateFlags::empty())?;
    let (raw_exec_i, raw_node) = (exec_i.as_raw(), node.as_raw());
    let f_inc = inc.as_raw();
    let px = x.as_view_mut().as_raw();
    let updates = updates_count(reps);
    // The raw update loop; with `check_context`, preceded by the cuCtxGetCurrent that the
    // safe update needs (the driver crashes without a current context).
    let raw_update = |check_context: bool| -> Res<Duration> {
        let (mut p, mut n) = (px, 512i32);
        let mut args: [*mut c_void; 2] = [(&raw mut p).cast(), (&raw mut n).cast()];
        // SAFETY: an all-zero CUDA_KERNEL_NODE_PARAMS is valid before filling.
        let mut kp: sys::CUDA_KERNEL_NODE_PARAMS = unsafe { std::mem::zeroed() };
        kp.func = f_inc;
        kp.gridDimX = icfg.grid.x;
        kp.gridDimY = 1;
        kp.gridDimZ = 1;
        kp.blockDimX = icfg.block.x;
        kp.blockDimY = 1;
        kp.blockDimZ = 1;
        kp.kernelParams = args.as_mut_ptr();
        time_loop(updates, no_end, || {
            if check_context {
                let mut c = null_mut();
                // SAFETY: writes one CUcontext.
                unsafe { raw!(cuCtxGetCurrent(&mut c)) };
                std::hint::black_box(c);
            }
            // SAFETY: a kernel node of the exec; the arguments match inc.
            unsafe { raw!(cuGraphExecKernelNodeSetParams_v2(raw_exec_i, raw_node, &kp)) };
            Ok(())
        })
    };
    // The safe update next to the raw one: no target, since the driver forces the context
    // check (the floor row below is what the update is judged against).
    r.run(
        "exec kernel-argument update".into(),
        "us/update",
        false,
        None,
        |side| {
            let t = match side {
                Side::Raw => raw_update(false)?,
                Side::Safe => {
                    let n = 512i32;
                    time_loop(updates, no_end, || {
                        // SAFETY: as above.
                        unsafe {
                            exec_i.set_kernel_node(node, &inc, &icfg, (x.as_view_mut(), &n))?
                        };
                        Ok(())
                    })?
                }
            };
            Ok(secs(t) * 1e6 / updates as f64)
        },
    )?;
    // The update judged against its floor, the raw update after the one cuCtxGetCurrent the
    // driver forces (in the raw column), measured in the same rounds.
    let n_floor = 512i32;
    r.run(
        "exec kernel-argument update vs its floor: raw after cuCtxGetCurrent (raw column)".into(),
        "us/update",
        false,
        Some(1.03),
        |side| {
            let t = match side {
                Side::Raw => raw_update(true)?,
                Side::Safe => time_loop(updates, no_end, || {
                    // SAFETY: as above.
                    unsafe {
                        exec_i.set_kernel_node(node, &inc, &icfg, (x.as_view_mut(), &n_floor))?
                    };
                    Ok(())
                })?,
            };
            Ok(secs(t) * 1e6 / updates as f64)
        },
    )?;
    // What the context check alone costs next to the update: raw against raw preceded by
    // cuCtxGetCurrent (in the "ours" column). No target; it explains the rows above.
    r.run(
        "exec kernel-argument update: raw, and raw after cuCtxGetCurrent (ours column)".into(),
        "us/update",
        false,
        None,
        |side| {
            let t = match side {
                Side::Raw => raw_update(false)?,
                Side::Safe => raw_update(true)?,
            };
            Ok(secs(t) * 1e6 / updates as f64)
        },
    )?;
    drop(exec_i);

    // A step of 1,000 kernels: individual launches against one graph launch, host time per
    // kernel (the step's enqueue, then one synchronization outside the timed region).
    let step = 1000usize;
    let g1000 = chain(step)?;
    let exec1000 = g1000.instantiate(GraphInstantiateFlags::empty())?;
    exec1000.upload(stream)?;
    let raw_exec1000 = exec1000.as_raw();
    let steps = if cfg.quick { 5 } else { 20 };
    r.run(
        "1,000-kernel step, individual launches".into(),
        "us/kernel",
        false,
        Some(1.03),
        |side| {
            let mut total = Duration::ZERO;
            for _ in 0..steps {
                let start = Instant::now();
                for _ in 0..step {
                    match side {
                        // SAFETY: noop() takes no parameters.
                        Side::Raw => unsafe {
                            raw_launch(f_noop, 1, 1, s, null_mut(), null_mut())?
                        },
                        // SAFETY: as above.
                        Side::Safe => unsafe { noop.launch(stream, &one, ())? },
                    }
                }
                total += start.elapsed();
                stream.synchronize()?;
            }
            Ok(secs(total) * 1e6 / (steps * step) as f64)
        },
    )?;
    r.run(
        "1,000-kernel step, one graph launch".into(),
        "us/kernel",
        false,
        Some(1.03),
        |side| {
            let mut total = Duration::ZERO;
            for _ in 0..steps {
                let start = Instant::now();
                match side {
                    // SAFETY: a live exec and stream.
                    Side::Raw => unsafe { raw!(cuGraphLaunch(raw_exec1000, s)) },
                    Side::Safe => exec1000.launch(stream)?,
                }
                total += start.elapsed();
                stream.synchronize()?;
            }
            Ok(secs(total) * 1e6 / (steps * step) as f64)
        },
    )?;
    Ok(())
}

// ---------------------------------------------------------------------------------------
// 2D copies, arrays, texture objects, tensor maps (issue 13)
// ---------------------------------------------------------------------------------------

/// 2D copies of a 4096 x 4096 f32 image in pitched memory (host to device from page-locked
/// memory, device to device), copies into and out of a 2D array, texture object create +
/// destroy and tensor-map encoding: raw `CUDA_MEMCPY2D` / `cuTexObjectCreate` /
/// `cuTensorMapEncodeTiled` against `Copy2D`, `TextureObject` and `TensorMapTiled`.
fn textures_and_2d_copies(r: &mut Runner, cfg: &Config, ctx: &Context) -> Res<()> {
    use cuda_driver::{
        memory::Array, memory::Copy2D, memory::Pitched2D, tensor_map::TensorMapTiled,
        texture::ResourceDesc, texture::TextureDesc, texture::TextureObject, types::Array3DFlags,
        types::TensorMapDataType,
    };
    let side = if cfg.quick { 1024 } else { 4096 };
    let reps = cfg.copy_reps.max(2) * 2;
    let bytes = side * side * 4;
    let mut rng = XorShift::new(0x2D2D);
    let mut words = vec![0u32; side * side];
    rng.fill_nonzero_u32(&mut words);
    let host: Vec<f32> = words
        .iter()
        .map(|&w| f32::from_bits(w & 0x3FFF_FFFF | 0x0080_0000))
        .collect();
    let pinned = PinnedBuffer::from_slice(ctx, &host, PinnedFlags::empty())?;
    let mut a = Pitched2D::<f32>::new(ctx, side, side)?;
    let mut b = Pitched2D::<f32>::new(ctx, side, side)?;
    let mut arr = Array::<f32>::new_2d(ctx, side, side, Array3DFlags::empty())?;
    let (pa, pb, pitch) = (a.as_raw(), b.as_raw(), a.pitch());
    let arr_raw = arr.as_raw();
    let row = side * 4;
    // SAFETY (of every raw copy below): plain C struct, zeroed = unused fields.
    let raw2d = |src_t, src_dev, src_host: *const c_void, src_arr, dst_t, dst_dev, dst_arr| {
        // SAFETY: the raw call's arguments name live memory and descriptors of the checked extents.
        let mut p: sys::CUDA_MEMCPY2D = unsafe { std::mem::zeroed() };
        p.srcMemoryType = src_t;
        p.srcDevice = src_dev;
        p.srcHost = src_host;
        p.srcArray = src_arr;
        p.srcPitch = if src_t == sys::CU_MEMORYTYPE_HOST {
            row
        } else {
            pitch
        };
        p.dstMemoryType = dst_t;
        p.dstDevice = dst_dev;
        p.dstArray = dst_arr;
        p.dstPitch = pitch;
        p.WidthInBytes = row;
        p.Height = side;
        p
    };
    let verify = |what: &str, img: &Pitched2D<f32>| -> Res<()> {
        let mut back = vec![0.0f32; side * side];
        Copy2D::new(side, side)
            .from_pitched(img.view())
            .to_host(&mut back, side)
            .run()?;
        if let Some(i) = first_difference(&back, &host) {
            return Err(Failure::Wrong(format!(
                "{what}: element {i} is {}, expected {}",
                back[i], host[i]
            )));
        }
        Ok(())
    };
    let name = |what: &str| format!("{what}, {side}x{side} f32 pitched");

    // Host (page-locked) to pitched device memory.
    let h2d = raw2d(
        sys::CU_MEMORYTYPE_HOST,
        0,
        pinned.as_ptr().cast(),
        null_mut(),
        sys::CU_MEMORYTYPE_DEVICE,
        pa,
        null_mut(),
    );
    r.bandwidth(name("copy 2D HtoD"), reps * bytes, |side_| {
        fill_pitched(&mut a)?;
        let t = match side_ {
            // SAFETY: the descriptor names live memory of the right extents.
            Side::Raw => time_loop(reps, ctx_sync, || {
                // SAFETY: the raw call's arguments name live memory and descriptors of the checked extents.
                unsafe { raw!(cuMemcpy2D(&h2d)) };
                Ok(())
            })?,
            // Safe: Copy2D = region checks + cuCtxGetCurrent + cuMemcpy2D_v2.
            Side::Safe => time_loop(reps, ctx_sync, || {
                Ok(Copy2D::new(side, side)
                    .from_host(&pinned, side)
                    .to_pitched(a.view_mut())
                    .run()?)
            })?,
        };
        verify("2D HtoD", &a)?;
        Ok(t)
    })?;

    // Pitched to pitched (device to device), bytes read + written.
    let d2d = raw2d(
        sys::CU_MEMORYTYPE_DEVICE,
        pa,
        std::ptr::null(),
        null_mut(),
        sys::CU_MEMORYTYPE_DEVICE,
        pb,
        null_mut(),
    );
    r.bandwidth(
        name("copy 2D DtoD (read + write)"),
        2 * reps * bytes,
        |side_| {
            fill_pitched(&mut b)?;
            let t = match side_ {
                // SAFETY: as above.
                Side::Raw => time_loop(reps, ctx_sync, || {
                    // SAFETY: the raw call's arguments name live memory and descriptors of the checked extents.
                    unsafe { raw!(cuMemcpy2D(&d2d)) };
                    Ok(())
                })?,
                Side::Safe => time_loop(reps, ctx_sync, || {
                    Ok(Copy2D::new(side, side)
                        .from_pitched(a.view())
                        .to_pitched(b.view_mut())
                        .run()?)
                })?,
            };
            verify("2D DtoD", &b)?;
            Ok(t)
        },
    )?;

    // Pitched into the array, and out of it again.
    let into = raw2d(
        sys::CU_MEMORYTYPE_DEVICE,
        pa,
        std::ptr::null(),
        null_mut(),
        sys::CU_MEMORYTYPE_ARRAY,
        0,
        arr_raw,
    );
    r.bandwidth(
        format!("copy pitched -> array, {side}x{side} f32 (read + write)"),
        2 * reps * bytes,
        |side_| {
            let t = match side_ {
                // SAFETY: as above.
                Side::Raw => time_loop(reps, ctx_sync, || {
                    // SAFETY: the raw call's arguments name live memory and descriptors of the checked extents.
                    unsafe { raw!(cuMemcpy2D(&into)) };
                    Ok(())
                })?,
                Side::Safe => time_loop(reps, ctx_sync, || {
                    Ok(Copy2D::new(side, side)
                        .from_pitched(a.view())
                        .to_array(&mut arr)
                        .run()?)
                })?,
            };
            fill_pitched(&mut b)?;
            Copy2D::new(side, side)
                .from_array(&arr)
                .to_pitched(b.view_mut())
                .run()?;
            verify("pitched -> array", &b)?;
            Ok(t)
        },
    )?;
    let mut out_of = raw2d(
        sys::CU_MEMORYTYPE_ARRAY,
        0,
        std::ptr::null(),
        arr_raw,
        sys::CU_MEMORYTYPE_DEVICE,
        pb,
        null_mut(),
    );
    out_of.srcPitch = 0;
    r.bandwidth(
        format!("copy array -> pitched, {side}x{side} f32 (read + write)"),
        2 * reps * bytes,
        |side_| {
            fill_pitched(&mut b)?;
            let t = match side_ {
                // SAFETY: as above.
                Side::Raw => time_loop(reps, ctx_sync, || {
                    // SAFETY: the raw call's arguments name live memory and descriptors of the checked extents.
                    unsafe { raw!(cuMemcpy2D(&out_of)) };
                    Ok(())
                })?,
                Side::Safe => time_loop(reps, ctx_sync, || {
                    Ok(Copy2D::new(side, side)
                        .from_array(&arr)
                        .to_pitched(b.view_mut())
                        .run()?)
                })?,
            };
            verify("array -> pitched", &b)?;
            Ok(t)
        },
    )?;

    // Texture object create + destroy over the array.
    let count = cfg.events / 10;
    let desc = TextureDesc::new();
    // SAFETY: plain C struct, zeroed = unused.
    let mut res: sys::CUDA_RESOURCE_DESC = unsafe { std::mem::zeroed() };
    res.resType = sys::CU_RESOURCE_TYPE_ARRAY;
    res.res.array.hArray = arr_raw;
    r.run(
        "cuTexObjectCreate + cuTexObjectDestroy".into(),
        "ns/pair",
        false,
        Some(1.03),
        |side_| {
            let t = match side_ {
                Side::Raw => time_loop(count, no_end, || {
                    let mut tex = 0;
                    // SAFETY: the descriptors are valid; the object is destroyed right away.
                    unsafe {
                        raw!(cuTexObjectCreate(
                            &mut tex,
                            &res,
                            desc.as_raw(),
                            std::ptr::null()
                        ))
                    };
                    // SAFETY: created just above.
                    unsafe { raw!(cuTexObjectDestroy(tex)) };
                    Ok(())
                })?,
                // Safe: cuCtxGetCurrent + cuTexObjectCreate; drop: cuCtxGetCurrent + cuTexObjectDestroy.
                Side::Safe => time_loop(count, no_end, || {
                    drop(std::hint::black_box(TextureObject::new(
                        &ResourceDesc::array(&arr),
                        &desc,
                        None,
                    )?));
                    Ok(())
                })?,
            };
            Ok(secs(t) * 1e9 / count as f64)
        },
    )?;

    // Tensor-map encode (the rule checks on the safe side) over the pitched image's first
    // rows as a packed tensor.
    let dims = [side as u64, 64];
    let strides = [pitch as u64];
    let boxes = [64u32, 64];
    let es = [1u32, 1];
    let mut raw_map = sys::CUtensorMap { opaque: [0; 16] };
    let enc = TensorMapTiled::new(TensorMapDataType::FLOAT32, &dims, &strides, &boxes);
    // SAFETY: as below; a first map to re-encode.
    let mut safe_map = unsafe { enc.encode_raw(a.view().row(0)?.as_raw()) }?;
    let view = a.view().row(0)?;
    let base = view.as_raw();
    r.run(
        "cuTensorMapEncodeTiled".into(),
        "ns/call",
        false,
        Some(1.03),
        |side_| {
            let t = match side_ {
                Side::Raw => time_loop(count, no_end, || {
                    // SAFETY: arrays of rank 2 (strides 1); the address is live pitched memory.
                    unsafe {
                        raw!(cuTensorMapEncodeTiled(
                            &mut raw_map,
                            sys::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
                            2,
                            base as *mut c_void,
                            dims.as_ptr(),
                            strides.as_ptr(),
                            boxes.as_ptr(),
                            es.as_ptr(),
                            sys::CU_TENSOR_MAP_INTERLEAVE_NONE,
                            sys::CU_TENSOR_MAP_SWIZZLE_NONE,
                            sys::CU_TENSOR_MAP_L2_PROMOTION_NONE,
                            sys::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE
                        ))
                    };
                    std::hint::black_box(&raw_map);
                    Ok(())
                })?,
                // Safe: the rule checks (once; then the address's alignment) +
                // cuTensorMapEncodeTiled into an existing map, as the raw side does. The tensor
                // spans 64 rows of the pitched image, whose first row's view covers only `side`
                // elements, so encode over the raw address.
                Side::Safe => time_loop(count, no_end, || {
                    // SAFETY: the address holds 64 rows of `pitch` bytes.
                    unsafe { enc.encode_raw_into(base, &mut safe_map) }?;
                    std::hint::black_box(&safe_map);
                    Ok(())
                })?,
            };
            Ok(secs(t) * 1e9 / count as f64)
        },
    )?;

    Ok(())
}

/// Sets every element of a pitched image to zero and waits (untimed preparation).
fn fill_pitched(img: &mut cuda_driver::memory::Pitched2D<f32>) -> Res<()> {
    img.view_mut().memset_2d(0u32)?;
    ctx_sync()
}

/// Compiles per sample of the runtime-compilation row.
fn rtc_compiles(cfg: &Config) -> usize {
    if cfg.quick {
        1
    } else {
        5
    }
}

/// Calls a raw NVRTC function (inside an `unsafe` block) of the library `$nv` and returns
/// [`Failure::Rtc`] when it does not succeed: the raw side's one check per call.
macro_rules! nvrtc_raw {
    ($nv:ident . $call:ident ( $($arg:expr),* $(,)? )) => {{
        let code = $nv.$call($($arg),*);
        if code != cuda_driver_rtc::sys::nvrtc::NVRTC_SUCCESS {
            return Err(Failure::Rtc(cuda_driver_rtc::Error::Nvrtc {
                call: stringify!($call),
                code: cuda_driver_rtc::NvrtcResult(code),
            }));
        }
    }};
}

/// Runtime compilation: `ptx/bench.cu` compiled to PTX through cuda-driver-rtc's `Program` and
/// through the raw NVRTC calls, with the same library, source and option (target 1.02). Left
/// out, with a line on stderr, where NVRTC is not found.
fn rtc_compile(r: &mut Runner, cfg: &Config) -> Res<()> {
    use std::ffi::CString;

    use cuda_driver_rtc::{Arch, Options, Program};

    const SOURCE: &str = include_str!("../../ptx/bench.cu");
    let nvrtc = match cuda_driver_rtc::Nvrtc::load() {
        Ok(n) => n,
        Err(e) => {
            let text = e.to_string();
            eprintln!(
                "bench: no runtime-compilation row: {}",
                text.lines().next().unwrap_or_default()
            );
            return Ok(());
        }
    };
    let count = rtc_compiles(cfg);
    let options = Options::new().arch(Arch::compute(7, 5));
    let c_source = CString::new(SOURCE).map_err(|e| Failure::Wrong(e.to_string()))?;
    let c_name = c"bench.cu";
    let c_option = c"--gpu-architecture=compute_75";
    let option_ptrs = [c_option.as_ptr()];
    let check_ptx = |ptx: &[u8]| -> Res<()> {
        check!(
            ptx.windows(12).any(|w| w == b".entry add4(")
                && ptx.windows(14).any(|w| w == b".target sm_75\n"),
            "the PTX of ptx/bench.cu lacks add4 or its target"
        );
        Ok(())
    };
    r.run(
        format!("NVRTC compile to PTX, ptx/bench.cu ({} B)", SOURCE.len()),
        "ms",
        false,
        Some(1.02),
        |side| {
            let t = match side {
                Side::Raw => time_loop(count, no_end, || {
                    let nv = nvrtc.as_raw();
                    let mut prog = null_mut();
                    let mut size = 0usize;
                    let mut ptx = Vec::new();
                    // SAFETY: NUL-terminated source, name and option that live for the calls;
                    // the program is destroyed at the end; the PTX buffer holds the size
                    // NVRTC reported.
                    unsafe {
                        nvrtc_raw!(nv.nvrtcCreateProgram(
                            &mut prog,
                            c_source.as_ptr(),
                            c_name.as_ptr(),
                            0,
                            std::ptr::null(),
                            std::ptr::null(),
                        ));
                        nvrtc_raw!(nv.nvrtcCompileProgram(prog, 1, option_ptrs.as_ptr()));
                        nvrtc_raw!(nv.nvrtcGetPTXSize(prog, &mut size));
                        ptx.resize(size, 0u8);
                        nvrtc_raw!(nv.nvrtcGetPTX(prog, ptx.as_mut_ptr().cast()));
                        nvrtc_raw!(nv.nvrtcDestroyProgram(&mut prog));
                    }
                    check_ptx(&ptx)
                })?,
                // Safe: Program::with_library + compile + drop (see the note).
                Side::Safe => time_loop(count, no_end, || {
                    let mut p = Program::with_library(nvrtc, "bench.cu", SOURCE, &[])?;
                    let compiled = p.compile(&options)?;
                    check_ptx(compiled.ptx()?.as_bytes_with_nul())
                })?,
            };
            Ok(secs(t) * 1e3 / count as f64)
        },
    )
}
