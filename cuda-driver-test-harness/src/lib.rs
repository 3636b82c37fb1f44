//! The runner of the GPU test binaries (`tests/gpu` of cuda-driver-sys and cuda-driver, built
//! with `harness = false`).
//!
//! A test is a plain function marked [`#[gpu_test]`](gpu_test) instead of `#[test]`; the
//! marker registers it (with `inventory`), so a new test or a new test file needs no list.
//! The binary's `main` is [`main`]. The runner prints what libtest prints and takes its
//! usual options (filters, `--exact`, `--skip`, `--list`, `--nocapture`, `--test-threads`,
//! `--show-output`, `-q`), so `cargo test`, CI's log readers and the GPU bundle's `run.sh`
//! read it as they read libtest. One thing is new: a test that cannot run here calls
//! [`skip`] with the reason, at any point of its body (no GPU, one GPU where it needs two, a
//! driver or device without the feature), and is reported as
//!
//! ```text
//! test memory::pinned_round_trip ... ignored, no GPU: CUDA_ERROR_STUB_LIBRARY (...)
//! ```
//!
//! and counted among the ignored tests of the closing `test result:` line. With
//! `CUDA_DRIVER_REQUIRE_GPU=1` a skip is a failure instead, whatever its reason, except a
//! test that needs more GPUs than required ([`skip_needs_gpus`]): `CUDA_DRIVER_REQUIRE_GPU=N`
//! says the machine has N GPUs, so a test needing two fails for lack of them only with
//! `CUDA_DRIVER_REQUIRE_GPU=2` (the GPU bundle's `run.sh` sets it to the machine's count).
//!
//! # Why a runner of our own
//!
//! libtest (stable) has no way to ignore a test once it runs, so skips counted as passes.
//! `libtest-mimic` 0.8 decides "ignored" before a trial runs: that covers "no GPU" at start-up
//! but not a test that finds one GPU where it needs two, or an older driver, from inside its
//! body. `libtest2-mimic` can (`ignore_for`) but is an experimental 0.0.x. What the binaries
//! need is small (a thread per test with the test's name, a panic hook that keeps messages
//! off the terminal, one line per result, libtest's summary), so it is written here, in a
//! crate that is never published.
//!
//! # Output
//!
//! Without stable output capture, what a test prints itself reaches the terminal at once, so
//! tests say things with [`note`] instead, which shows with the failure (or with
//! `--nocapture` / `--show-output`). Panic messages of a test's thread are kept the same way
//! and shown under `failures:`. Each result is one line, written whole when the test ends.

use std::any::Any;
use std::cell::RefCell;
use std::fmt::{self, Display};
use std::io::{self, Write};
use std::panic::{self, AssertUnwindSafe};
use std::process::ExitCode;
use std::sync::{mpsc, Arc};
use std::time::Instant;

#[doc(inline)]
pub use cuda_driver_test_harness_macros::{gpu_test, test};
#[doc(hidden)]
pub use inventory;

/// The environment variable that turns every skip into a failure when it is `1`.
pub const REQUIRE_GPU_VAR: &str = "CUDA_DRIVER_REQUIRE_GPU";

/// One registered test (written by [`#[gpu_test]`](gpu_test)).
pub struct Test {
    module: &'static str,
    name: &'static str,
    run: fn(),
}

impl Test {
    #[doc(hidden)]
    pub const fn new(module: &'static str, name: &'static str, run: fn()) -> Test {
        Test { module, name, run }
    }

    /// The name libtest would give: the module path without the crate, then the function.
    pub fn full_name(&self) -> String {
        match self.module.split_once("::") {
            Some((_crate, path)) => format!("{path}::{}", self.name),
            None => self.name.to_string(),
        }
    }
}

inventory::collect!(Test);

/// Whether skips are failures: `CUDA_DRIVER_REQUIRE_GPU` set to a number of GPUs, 1 or more.
pub fn require_gpu() -> bool {
    required_gpus() > 0
}

/// The number of GPUs `CUDA_DRIVER_REQUIRE_GPU` says the machine has (0: unset, or not a
/// number).
pub fn required_gpus() -> usize {
    std::env::var(REQUIRE_GPU_VAR)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// Whether a skip is a failure: GPUs are required, and the test's want of GPUs (if that is
/// why it skipped) is no more than the machine is said to have.
fn skip_fails(needed: Option<usize>, required: usize) -> bool {
    required > 0 && needed.is_none_or(|n| n <= required)
}

/// The payload of [`skip`]'s unwinding: the reason, and the GPUs the test needed where that
/// is why it skipped.
struct Skipped(String, Option<usize>);

/// Ends the running test as skipped because of `reason` (one line: "no GPU: ...", "1 GPU;
/// this test needs two", "no cuFuncGetParamInfo (driver older than 12.4)").
///
/// The runner reports it as ignored with the reason, or as failed with
/// `CUDA_DRIVER_REQUIRE_GPU=1`. Call it on the test's own thread: it unwinds (dropping the
/// test's values, without the panic hook) up to the runner.
pub fn skip(reason: impl Display) -> ! {
    panic::resume_unwind(Box::new(Skipped(reason.to_string(), None)))
}

/// Ends the running test as skipped because it needs `needed` GPUs and the machine has
/// fewer: ignored, and a failure only where `CUDA_DRIVER_REQUIRE_GPU` requires at least
/// `needed` GPUs.
pub fn skip_needs_gpus(needed: usize, reason: impl Display) -> ! {
    panic::resume_unwind(Box::new(Skipped(reason.to_string(), Some(needed))))
}

/// Records a remark of the running test (which variant it exercised, what the device lacks
/// for a part of it), shown with the test's failure, with `--show-output`, and at once with
/// `--nocapture`. Outside a test (or on another thread) it goes to stderr.
pub fn note(msg: impl Display) {
    let msg = msg.to_string();
    let kept = CURRENT.with(|c| match c.borrow_mut().as_mut() {
        Some(cur) if !cur.nocapture => {
            cur.notes.push(msg.clone());
            true
        }
        _ => false,
    });
    if !kept {
        let _ = writeln!(io::stderr(), "{msg}");
    }
}

/// What the running test's thread keeps: its notes and panic messages.
struct Current {
    nocapture: bool,
    notes: Vec<String>,
}

thread_local! {
    static CURRENT: RefCell<Option<Current>> = const { RefCell::new(None) };
}

/// The end of one test.
enum Outcome {
    Passed,
    Failed(String),
    Skipped(String, Option<usize>),
}

/// The options, as libtest takes them.
#[derive(Debug, Default, PartialEq)]
struct Options {
    filters: Vec<String>,
    skip: Vec<String>,
    exact: bool,
    list: bool,
    nocapture: bool,
    show_output: bool,
    quiet: bool,
    ignored: bool,
    threads: Option<usize>,
}

const USAGE: &str = "\
Usage: <test binary> [OPTIONS] [FILTERS...]

The GPU tests of cuda-driver (cuda-driver-test-harness, options as libtest's):
    --list                  list the tests (--format terse: without the summary)
    --exact                 filters match whole names
    --skip FILTER           leave out tests whose name contains FILTER (repeatable)
    --nocapture             notes and panic messages go to the terminal at once
    --show-output           show the notes of passed tests too
    --test-threads N        run N tests at a time (default: RUST_TEST_THREADS or one per CPU)
    -q, --quiet             one character per test
    --ignored               run only ignored tests (there are none: tests skip at run time)
    --include-ignored       accepted; nothing is ignored before it runs
    --color WHEN, --format pretty|terse, -Z unstable-options: accepted
A test that calls skip(reason) is reported `ignored, <reason>`; CUDA_DRIVER_REQUIRE_GPU=1
makes it a failure.";

fn parse(args: impl IntoIterator<Item = String>) -> Result<Option<Options>, String> {
    let mut o = Options::default();
    let mut args = args.into_iter();
    let mut terse = false;
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let mut value = |what: &str| {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{what} needs a value"))
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "--exact" => o.exact = true,
            "--list" => o.list = true,
            "--nocapture" | "--no-capture" => o.nocapture = true,
            "--show-output" => o.show_output = true,
            "-q" | "--quiet" => o.quiet = true,
            "--ignored" => o.ignored = true,
            "--include-ignored" => {}
            "--skip" => o.skip.push(value("--skip")?),
            "--test-threads" => {
                let v = value("--test-threads")?;
                match v.parse() {
                    Ok(n) if n > 0 => o.threads = Some(n),
                    _ => {
                        return Err(format!(
                            "--test-threads must be a positive number, not `{v}`"
                        ))
                    }
                }
            }
            "--format" => match value("--format")?.as_str() {
                "pretty" => {}
                "terse" => terse = true,
                f => return Err(format!("--format {f} is not supported (pretty, terse)")),
            },
            "--color" => drop(value("--color")?),
            "-Z" => drop(value("-Z")?),
            f if f.starts_with('-') => return Err(format!("unrecognized option `{f}`")),
            _ => o.filters.push(arg),
        }
    }
    o.quiet |= terse;
    Ok(Some(o))
}

impl Options {
    fn selects(&self, name: &str) -> bool {
        let hit = |f: &String| {
            if self.exact {
                name == f
            } else {
                name.contains(f.as_str())
            }
        };
        (self.filters.is_empty() || self.filters.iter().any(hit)) && !self.skip.iter().any(hit)
    }
}

/// Runs the registered tests as libtest would, with the process's arguments; the test
/// binary's `fn main() -> ExitCode { cuda_driver_test_harness::main() }`.
pub fn main() -> ExitCode {
    let opts = match parse(std::env::args().skip(1)) {
        Ok(Some(o)) => o,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("error: {e}\n\n{USAGE}");
            return ExitCode::from(101);
        }
    };
    let mut all: Vec<(String, fn())> = inventory::iter::<Test>
        .into_iter()
        .map(|t| (t.full_name(), t.run))
        .collect();
    all.sort_by(|a, b| a.0.cmp(&b.0));
    let total = all.len();
    // Nothing is ignored before it runs: `--ignored` selects nothing.
    let tests: Vec<_> = all
        .into_iter()
        .filter(|(name, _)| !opts.ignored && opts.selects(name))
        .collect();
    let filtered_out = total - tests.len();
    if opts.list {
        for (name, _) in &tests {
            println!("{name}: test");
        }
        if !opts.quiet {
            println!("\n{} tests, 0 benchmarks", tests.len());
        }
        return ExitCode::SUCCESS;
    }
    if run(&opts, tests, filtered_out) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(101)
    }
}

/// Counts of a run.
#[derive(Default)]
struct Summary {
    passed: usize,
    failed: Vec<(String, String)>,
    ignored: usize,
}

impl Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} passed; {} failed; {} ignored; 0 measured",
            self.passed,
            self.failed.len(),
            self.ignored
        )
    }
}

fn run(opts: &Options, tests: Vec<(String, fn())>, filtered_out: usize) -> bool {
    let start = Instant::now();
    let required = required_gpus();
    let threads = opts
        .threads
        .or_else(|| std::env::var("RUST_TEST_THREADS").ok()?.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    install_panic_hook();
    let n = tests.len();
    println!("\nrunning {n} test{}", if n == 1 { "" } else { "s" });
    let mut summary = Summary::default();
    let (tx, rx) = mpsc::channel::<(String, Outcome, Vec<String>)>();
    let mut queue = tests.into_iter();
    let mut running = 0;
    let mut column = 0;
    loop {
        while running < threads {
            let Some((name, f)) = queue.next() else { break };
            let done = tx.clone();
            let nocapture = opts.nocapture;
            // Named after the test, as libtest names it (child.rs re-executes the binary with
            // `--exact <thread name>`).
            let spawned = std::thread::Builder::new().name(name.clone()).spawn({
                let name = name.clone();
                move || {
                    let (outcome, notes) = run_one(f, nocapture);
                    let _ = done.send((name, outcome, notes));
                }
            });
            match spawned {
                Ok(_) => running += 1,
                Err(e) => {
                    let _ = tx.send((name, Outcome::Failed(format!("no thread: {e}")), vec![]));
                    running += 1;
                }
            }
        }
        if running == 0 {
            break;
        }
        let Ok((name, outcome, notes)) = rx.recv() else {
            break;
        };
        running -= 1;
        let outcome = match outcome {
            Outcome::Skipped(why, needed) if skip_fails(needed, required) => Outcome::Failed(
                format!("skipped ({why}), which {REQUIRE_GPU_VAR}={required} makes a failure"),
            ),
            o => o,
        };
        let (word, mark) = match &outcome {
            Outcome::Passed => ("ok".to_string(), '.'),
            Outcome::Failed(_) => ("FAILED".to_string(), 'F'),
            Outcome::Skipped(why, _) => (format!("ignored, {}", one_line(why)), 'i'),
        };
        let mut out = io::stdout().lock();
        if opts.quiet {
            let _ = write!(out, "{mark}");
            column += 1;
            if column % 88 == 0 {
                let _ = writeln!(out);
            }
        } else {
            let _ = writeln!(out, "test {name} ... {word}");
            if opts.show_output && matches!(outcome, Outcome::Passed) {
                for n in &notes {
                    let _ = writeln!(out, "    {}", n.replace('\n', "\n    "));
                }
            }
        }
        let _ = out.flush();
        match outcome {
            Outcome::Passed => summary.passed += 1,
            Outcome::Skipped(..) => summary.ignored += 1,
            Outcome::Failed(msg) => {
                let mut text = notes.join("\n");
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(&msg);
                summary.failed.push((name, text));
            }
        }
    }
    if opts.quiet && column % 88 != 0 {
        println!();
    }
    let ok = summary.failed.is_empty();
    if !ok {
        summary.failed.sort();
        println!("\nfailures:\n");
        for (name, text) in &summary.failed {
            println!("---- {name} stdout ----\n{text}\n");
        }
        println!("\nfailures:");
        for (name, _) in &summary.failed {
            println!("    {name}");
        }
    }
    println!(
        "\ntest result: {}. {summary}; {filtered_out} filtered out; finished in {:.2}s\n",
        if ok { "ok" } else { "FAILED" },
        start.elapsed().as_secs_f64()
    );
    ok
}

/// `s` on one line (a reason is printed after `ignored, `).
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Runs one test on this thread (named after it), catching its panic or skip.
fn run_one(f: fn(), nocapture: bool) -> (Outcome, Vec<String>) {
    CURRENT.with(|c| {
        *c.borrow_mut() = Some(Current {
            nocapture,
            notes: Vec::new(),
        })
    });
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    let cur = CURRENT.with(|c| c.borrow_mut().take());
    let mut notes = cur.map(|c| c.notes).unwrap_or_default();
    let outcome = match result {
        Ok(()) => Outcome::Passed,
        Err(payload) => match payload.downcast::<Skipped>() {
            Ok(s) => Outcome::Skipped(s.0, s.1),
            Err(payload) => {
                // The hook kept the message (with its location) as the last note; without
                // one (nocapture, or a panic that skipped the hook) say what the payload says.
                let msg = match notes.last() {
                    Some(m) if m.starts_with(PANIC_PREFIX) => notes.pop().unwrap(),
                    _ if nocapture => "the test panicked (message above)".to_string(),
                    _ => format!("the test panicked: {}", payload_str(&*payload)),
                };
                Outcome::Failed(msg)
            }
        },
    };
    (outcome, notes)
}

const PANIC_PREFIX: &str = "thread '";

fn payload_str(p: &(dyn Any + Send)) -> &str {
    if let Some(s) = p.downcast_ref::<&str>() {
        s
    } else if let Some(s) = p.downcast_ref::<String>() {
        s
    } else {
        "Box<dyn Any>"
    }
}

/// Keeps the panic messages of a test's own thread with the test (libtest captures them);
/// other threads, and `--nocapture`, get the default hook.
fn install_panic_hook() {
    let default: Arc<dyn Fn(&panic::PanicHookInfo<'_>) + Send + Sync> =
        Arc::from(panic::take_hook());
    panic::set_hook(Box::new(move |info| {
        let kept = CURRENT.with(|c| match c.try_borrow_mut() {
            Ok(mut cur) => match cur.as_mut() {
                Some(cur) if !cur.nocapture => {
                    let thread = std::thread::current();
                    let mut msg = format!(
                        "{PANIC_PREFIX}{}' panicked at {}:\n{}",
                        thread.name().unwrap_or("<unnamed>"),
                        info.location().map_or("?".to_string(), |l| l.to_string()),
                        payload_str(info.payload())
                    );
                    let bt = std::backtrace::Backtrace::capture();
                    if bt.status() == std::backtrace::BacktraceStatus::Captured {
                        msg.push_str(&format!("\nstack backtrace:\n{bt}"));
                    } else {
                        msg.push_str(
                            "\nnote: run with `RUST_BACKTRACE=1` environment variable to display \
                             a backtrace",
                        );
                    }
                    cur.notes.push(msg);
                    true
                }
                _ => false,
            },
            Err(_) => false,
        });
        if !kept {
            default(info);
        }
    }));
}

#[cfg(test)]
mod tests {
    // Not `use super::*`: the crate's `test` (the guard against `#[test]` in the GPU test
    // binaries) would shadow libtest's here.
    use super::{
        install_panic_hook, note, one_line, parse, run_one, skip, skip_fails, Options, Outcome,
        Test,
    };

    fn args(s: &str) -> Result<Option<Options>, String> {
        parse(s.split_whitespace().map(String::from))
    }

    #[test]
    fn options_as_libtest_takes_them() {
        let o = args("--exact ipc::a --nocapture --test-threads=1 --skip x --skip=y -q")
            .unwrap()
            .unwrap();
        assert_eq!(
            o,
            Options {
                filters: vec!["ipc::a".into()],
                skip: vec!["x".into(), "y".into()],
                exact: true,
                nocapture: true,
                quiet: true,
                threads: Some(1),
                ..Options::default()
            }
        );
        assert_eq!(args("--test-threads 4").unwrap().unwrap().threads, Some(4));
        assert!(args("--test-threads=0").is_err());
        assert!(args("--bogus").is_err());
        assert!(args("--format json").is_err());
        assert!(args("--help").unwrap().is_none());
    }

    #[test]
    fn filters_and_skips_select_names() {
        let o = args("memory ipc --skip leak").unwrap().unwrap();
        assert!(o.selects("memory::copies"));
        assert!(o.selects("ipc::legacy"));
        assert!(!o.selects("ipc::leak_free"));
        assert!(!o.selects("stream::a"));
        let o = args("--exact memory::copies").unwrap().unwrap();
        assert!(o.selects("memory::copies"));
        assert!(!o.selects("memory::copies_twice"));
    }

    #[test]
    fn names_drop_the_crate() {
        assert_eq!(
            Test::new("gpu::memory", "a", || {}).full_name(),
            "memory::a"
        );
        assert_eq!(Test::new("gpu", "a", || {}).full_name(), "a");
    }

    #[test]
    fn a_skip_is_an_outcome_and_a_panic_keeps_its_message() {
        install_panic_hook();
        let (o, _) = run_one(|| skip("no GPU here"), false);
        assert!(matches!(o, Outcome::Skipped(ref w, None) if w == "no GPU here"));
    }

    #[test]
    fn skips_fail_where_the_gpus_they_need_are_required() {
        // The panic message below is the hook's: install it whatever order the tests run in.
        install_panic_hook();
        // Not required: every skip is ignored.
        assert!(!skip_fails(None, 0));
        assert!(!skip_fails(Some(2), 0));
        // One GPU required: any skip fails, but a test needing two is only ignored.
        assert!(skip_fails(None, 1));
        assert!(!skip_fails(Some(2), 1));
        // Two required: that test fails too.
        assert!(skip_fails(Some(2), 2));
        assert!(skip_fails(Some(2), 4));
        let (o, notes) = run_one(
            || {
                note("first");
                panic!("boom");
            },
            false,
        );
        assert!(
            matches!(o, Outcome::Failed(ref m) if m.contains("panicked at") && m.contains("boom"))
        );
        assert_eq!(notes, ["first"]);
        assert!(matches!(run_one(|| {}, false).0, Outcome::Passed));
        assert_eq!(one_line("a\n  b"), "a b");
    }
}
