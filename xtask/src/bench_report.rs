//! `cargo xtask bench-report [--check] [FILE.json] [--out DIR]`: turns the JSON that
//! `examples/bench.rs` writes (`--json FILE`, format `cuda-driver-bench 2`) into
//! `DIR/bench.md` (the table, with the device, driver, date, command and how it was measured),
//! `DIR/bench.svg` (per metric, our median paired ratio against raw beside cudarc's on one and
//! two streams, with the quartiles and the target) and `DIR/bench-sizes.svg` (for each sweep,
//! the ratios against the size or the parameter count, on a log axis). `FILE` defaults to
//! `docs/bench.json` and `DIR` to `docs`; a `FILE` elsewhere is copied to `DIR/bench.json`, so
//! the committed JSON is the one the pictures come from.
//!
//! The output is a function of the JSON alone (no clock, no environment), so `--check`
//! regenerates into memory and fails when a committed file differs; without a
//! `docs/bench.json` it prints why it skipped and succeeds (the JSON comes from a GPU run).
//!
//! The JSON is read by a small parser of its own (no dependency); the expected keys are
//! those `cuda_driver_examples::bench::Report::to_json` writes.

use std::fmt::Write as _;
use std::path::PathBuf;

use crate::util::{exact, root, write_or_check};

/// The value of the file's `"format"` key that this reader understands.
const FORMAT: &str = "cuda-driver-bench 2";

/// The sides, in the file's order, with the names the report shows.
const SIDES: [&str; 4] = ["raw", "ours", "cudarc", "cudarc_2s"];
const SIDE_LABELS: [&str; 4] = ["raw", "ours", "cudarc", "cudarc, 2 streams"];
/// Bar colours of ours (by status), cudarc and cudarc on two streams.
const OK: &str = "#2e8b57";
const MISS: &str = "#d62728";
const GREY: &str = "#7f7f7f";
const CUDARC_COLOR: &str = "#1f77b4";
const CUDARC2_COLOR: &str = "#9467bd";

pub fn run(args: &[String]) -> Result<(), String> {
    let mut input: Option<PathBuf> = None;
    let mut out = root().join("docs");
    let mut check = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--out" => {
                out = PathBuf::from(it.next().ok_or("--out needs a directory")?);
            }
            "--check" => check = true,
            s if s.starts_with('-') => return Err(format!("unknown option `{s}`")),
            s if input.is_none() => input = Some(PathBuf::from(s)),
            s => return Err(format!("unexpected argument `{s}`")),
        }
    }
    let input = input.unwrap_or_else(|| out.join("bench.json"));
    if check && !input.exists() {
        println!(
            "bench-report --check: skipped: {} does not exist (it comes from a GPU run: \
             `target/gpu-bundle/run.sh --bench` writes $OUT/bench.json; then \
             `cargo xtask bench-report bench.json` and commit docs/bench.*)",
            input.display()
        );
        return Ok(());
    }
    let text = std::fs::read_to_string(&input)
        .map_err(|e| format!("cannot read {}: {e}", input.display()))?;
    let bench = Bench::from_json(&text).map_err(|e| format!("{}: {e}", input.display()))?;
    let same = |a: &PathBuf, b: &PathBuf| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    let json_out = out.join("bench.json");
    if !same(&input, &json_out) {
        write_or_check(&json_out, &text, check, exact)?;
    }
    write_or_check(&out.join("bench.md"), &markdown(&bench), check, exact)?;
    write_or_check(&out.join("bench.svg"), &svg(&bench), check, exact)?;
    write_or_check(
        &out.join("bench-sizes.svg"),
        &sizes_svg(&bench),
        check,
        exact,
    )?;
    println!(
        "bench-report: {} metrics from {}",
        bench.metrics.len(),
        input.display()
    );
    Ok(())
}

// ------------------------------------------------------------------------------------------
// A small JSON parser
// ------------------------------------------------------------------------------------------

/// A JSON value.
#[derive(Debug, Clone, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<Json>),
    /// Keys in file order.
    Obj(Vec<(String, Json)>),
}

impl Json {
    fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(kv) => kv.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

/// Parses one JSON document (RFC 8259), with nothing but whitespace after it.
fn parse_json(text: &str) -> Result<Json, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
    };
    let v = p.value(0)?;
    p.ws();
    if p.i != p.s.len() {
        return Err(p.err("trailing characters after the JSON value"));
    }
    Ok(v)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn err(&self, what: &str) -> String {
        let line = 1 + self.s[..self.i.min(self.s.len())]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        format!("invalid JSON at byte {} (line {line}): {what}", self.i)
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.i) {
            self.i += 1;
        }
    }

    fn eat(&mut self, lit: &str) -> bool {
        if self.s[self.i..].starts_with(lit.as_bytes()) {
            self.i += lit.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json, String> {
        if depth > 64 {
            return Err(self.err("nested too deeply"));
        }
        self.ws();
        match self.s.get(self.i) {
            None => Err(self.err("unexpected end")),
            Some(b'{') => {
                self.i += 1;
                let mut kv = Vec::new();
                self.ws();
                if self.eat("}") {
                    return Ok(Json::Obj(kv));
                }
                loop {
                    self.ws();
                    if self.s.get(self.i) != Some(&b'"') {
                        return Err(self.err("expected a string key"));
                    }
                    let k = self.string()?;
                    self.ws();
                    if !self.eat(":") {
                        return Err(self.err("expected `:`"));
                    }
                    let v = self.value(depth + 1)?;
                    kv.push((k, v));
                    self.ws();
                    if self.eat(",") {
                        continue;
                    }
                    if self.eat("}") {
                        return Ok(Json::Obj(kv));
                    }
                    return Err(self.err("expected `,` or `}`"));
                }
            }
            Some(b'[') => {
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.eat("]") {
                    return Ok(Json::Arr(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    self.ws();
                    if self.eat(",") {
                        continue;
                    }
                    if self.eat("]") {
                        return Ok(Json::Arr(items));
                    }
                    return Err(self.err("expected `,` or `]`"));
                }
            }
            Some(b'"') => Ok(Json::Str(self.string()?)),
            Some(b't') if self.eat("true") => Ok(Json::Bool(true)),
            Some(b'f') if self.eat("false") => Ok(Json::Bool(false)),
            Some(b'n') if self.eat("null") => Ok(Json::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.err("unexpected character")),
        }
    }

    fn number(&mut self) -> Result<Json, String> {
        let start = self.i;
        let digits = |p: &mut Self| {
            let s = p.i;
            while let Some(b'0'..=b'9') = p.s.get(p.i) {
                p.i += 1;
            }
            p.i > s
        };
        self.eat("-");
        if !digits(self) {
            return Err(self.err("expected digits"));
        }
        if self.eat(".") && !digits(self) {
            return Err(self.err("expected digits after `.`"));
        }
        if let Some(b'e' | b'E') = self.s.get(self.i) {
            self.i += 1;
            if let Some(b'+' | b'-') = self.s.get(self.i) {
                self.i += 1;
            }
            if !digits(self) {
                return Err(self.err("expected digits in the exponent"));
            }
        }
        let text = std::str::from_utf8(&self.s[start..self.i]).expect("ASCII");
        text.parse::<f64>()
            .map(Json::Num)
            .map_err(|e| self.err(&format!("bad number `{text}`: {e}")))
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let h = self
            .s
            .get(self.i..self.i + 4)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .ok_or_else(|| self.err("expected 4 hex digits after \\u"))?;
        self.i += 4;
        Ok(h)
    }

    /// A string literal, the opening quote at `self.i`.
    fn string(&mut self) -> Result<String, String> {
        self.i += 1;
        let mut out = String::new();
        loop {
            let start = self.i;
            while let Some(&b) = self.s.get(self.i) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.i += 1;
            }
            out.push_str(
                std::str::from_utf8(&self.s[start..self.i])
                    .map_err(|_| self.err("invalid UTF-8 in a string"))?,
            );
            match self.s.get(self.i) {
                None => return Err(self.err("unterminated string")),
                Some(b'"') => {
                    self.i += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.i += 1;
                    let c = *self.s.get(self.i).ok_or_else(|| self.err("bad escape"))?;
                    self.i += 1;
                    match c {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let mut cp = self.hex4()?;
                            if (0xD800..0xDC00).contains(&cp) && self.eat("\\u") {
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return Err(self.err("unpaired surrogate"));
                                }
                                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                            }
                            out.push(char::from_u32(cp).ok_or_else(|| self.err("bad \\u escape"))?);
                        }
                        _ => return Err(self.err("bad escape")),
                    }
                }
                Some(_) => return Err(self.err("control character in a string")),
            }
        }
    }
}

// ------------------------------------------------------------------------------------------
// The benchmark's file
// ------------------------------------------------------------------------------------------

/// One side of a row.
#[derive(Debug, Clone, PartialEq)]
struct SideData {
    median: Option<f64>,
    multimodal: bool,
    /// The median paired cost ratio against raw, and its quartiles (not for raw).
    ratio: Option<(f64, f64, f64)>,
}

#[derive(Debug, Clone, PartialEq)]
struct Row {
    name: String,
    unit: String,
    higher_is_better: bool,
    target: Option<f64>,
    sweep: Option<String>,
    size: Option<f64>,
    args: Option<f64>,
    status: String,
    /// By [`SIDES`]; `None` where the side was not measured.
    sides: [Option<SideData>; 4],
}

impl Row {
    fn ratio(&self, side: usize) -> Option<(f64, f64, f64)> {
        self.sides[side].as_ref().and_then(|s| s.ratio)
    }

    fn median(&self, side: usize) -> Option<f64> {
        self.sides[side].as_ref().and_then(|s| s.median)
    }

    /// The row's x in its sweep: the size in bytes, or the parameter count.
    fn x(&self) -> Option<f64> {
        self.size.or(self.args)
    }
}

#[derive(Debug, Clone, PartialEq)]
struct Bench {
    device: String,
    compute_capability: String,
    driver_version: String,
    date_utc: String,
    command: String,
    quick: bool,
    rounds: usize,
    notes: Vec<String>,
    metrics: Vec<Row>,
}

fn str_of(v: &Json, key: &str) -> Result<String, String> {
    match v.get(key) {
        Some(Json::Str(s)) => Ok(s.clone()),
        Some(_) => Err(format!("`{key}` is not a string")),
        None => Err(format!("`{key}` is missing")),
    }
}

fn num_or_null(v: &Json, key: &str) -> Result<Option<f64>, String> {
    match v.get(key) {
        Some(Json::Num(x)) => Ok(Some(*x)),
        Some(Json::Null) => Ok(None),
        Some(_) => Err(format!("`{key}` is not a number or null")),
        None => Err(format!("`{key}` is missing")),
    }
}

fn str_or_null(v: &Json, key: &str) -> Result<Option<String>, String> {
    match v.get(key) {
        Some(Json::Str(s)) => Ok(Some(s.clone())),
        Some(Json::Null) => Ok(None),
        Some(_) => Err(format!("`{key}` is not a string or null")),
        None => Err(format!("`{key}` is missing")),
    }
}

fn bool_of(v: &Json, key: &str) -> Result<bool, String> {
    match v.get(key) {
        Some(Json::Bool(b)) => Ok(*b),
        Some(_) => Err(format!("`{key}` is not a boolean")),
        None => Err(format!("`{key}` is missing")),
    }
}

fn side_of(m: &Json, key: &str) -> Result<Option<SideData>, String> {
    let v = match m.get(key) {
        None | Some(Json::Null) => return Ok(None),
        Some(v @ Json::Obj(_)) => v,
        Some(_) => return Err(format!("`{key}` is not an object or null")),
    };
    let err = |e: String| format!("{key}: {e}");
    let ratio = match v.get("ratio") {
        None => None,
        Some(_) => {
            let r = num_or_null(v, "ratio").map_err(err)?;
            let lo = num_or_null(v, "ratio_p25").map_err(err)?;
            let hi = num_or_null(v, "ratio_p75").map_err(err)?;
            match (r, lo, hi) {
                (Some(r), Some(lo), Some(hi)) => Some((r, lo, hi)),
                _ => None,
            }
        }
    };
    match v.get("samples") {
        Some(Json::Arr(items)) if items.iter().all(|x| matches!(x, Json::Num(_))) => {}
        _ => return Err(err("`samples` is not an array of numbers".into())),
    }
    Ok(Some(SideData {
        median: num_or_null(v, "median").map_err(err)?,
        multimodal: bool_of(v, "multimodal").map_err(err)?,
        ratio,
    }))
}

impl Bench {
    fn from_json(text: &str) -> Result<Bench, String> {
        let v = parse_json(text)?;
        let format = str_of(&v, "format")?;
        if format != FORMAT {
            return Err(format!(
                "format is `{format}`, this reader understands `{FORMAT}`"
            ));
        }
        let rounds = match num_or_null(&v, "rounds")? {
            Some(r) if r >= 0.0 && r.fract() == 0.0 => r as usize,
            _ => return Err("`rounds` is not a count".into()),
        };
        let notes = match v.get("notes") {
            Some(Json::Arr(items)) => items
                .iter()
                .map(|n| match n {
                    Json::Str(s) => Ok(s.clone()),
                    _ => Err("a note is not a string".to_string()),
                })
                .collect::<Result<_, _>>()?,
            None => Vec::new(),
            Some(_) => return Err("`notes` is not an array".into()),
        };
        let Some(Json::Arr(items)) = v.get("metrics") else {
            return Err("`metrics` is missing or not an array".into());
        };
        let metrics = items
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let row = || -> Result<Row, String> {
                    Ok(Row {
                        name: str_of(m, "name")?,
                        unit: str_of(m, "unit")?,
                        higher_is_better: bool_of(m, "higher_is_better")?,
                        target: num_or_null(m, "target")?,
                        sweep: str_or_null(m, "sweep")?,
                        size: num_or_null(m, "size")?,
                        args: num_or_null(m, "args")?,
                        status: str_of(m, "status")?,
                        sides: [
                            side_of(m, SIDES[0])?,
                            side_of(m, SIDES[1])?,
                            side_of(m, SIDES[2])?,
                            side_of(m, SIDES[3])?,
                        ],
                    })
                };
                row().map_err(|e| format!("metric {i}: {e}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Bench {
            device: str_of(&v, "device")?,
            compute_capability: str_of(&v, "compute_capability")?,
            driver_version: str_of(&v, "driver_version")?,
            date_utc: str_of(&v, "date_utc")?,
            command: str_of(&v, "command")?,
            quick: bool_of(&v, "quick")?,
            rounds,
            notes,
            metrics,
        })
    }

    /// The sweeps, in order of first appearance, each with its rows in file order.
    fn sweeps(&self) -> Vec<(&str, Vec<&Row>)> {
        let mut out: Vec<(&str, Vec<&Row>)> = Vec::new();
        for r in &self.metrics {
            let (Some(name), Some(_)) = (r.sweep.as_deref(), r.x()) else {
                continue;
            };
            match out.iter_mut().find(|(n, _)| *n == name) {
                Some((_, rows)) => rows.push(r),
                None => out.push((name, vec![r])),
            }
        }
        out
    }
}

// ------------------------------------------------------------------------------------------
// Markdown
// ------------------------------------------------------------------------------------------

fn fmt_value(v: Option<f64>) -> String {
    match v {
        None => "n/a".to_string(),
        Some(v) if v.abs() >= 1000.0 => format!("{v:.0}"),
        Some(v) if v.abs() >= 100.0 => format!("{v:.1}"),
        Some(v) if v.abs() >= 10.0 => format!("{v:.2}"),
        Some(v) => format!("{v:.3}"),
    }
}

fn fmt_paired(r: Option<(f64, f64, f64)>) -> String {
    r.map_or_else(
        || "-".to_string(),
        |(m, lo, hi)| format!("{m:.3} ({lo:.3}–{hi:.3})"),
    )
}

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|")
}

fn markdown(b: &Bench) -> String {
    let mut o = String::new();
    o.push_str("# Benchmark: the safe crate and cudarc against the raw driver\n\n");
    o.push_str(
        "The same work through raw `cuda-driver-sys` calls, through the safe `cuda-driver` \
         API (ours) and, where it has the operation, through cudarc's safe driver API on one \
         stream and on two, in one process and on one GPU \
         (`cuda-driver-examples/examples/bench.rs`). Each ratio is a cost ratio against raw, \
         above 1 slower (for bandwidths raw GB/s over the side's GB/s): the median over the \
         rounds of that round's ratio, the sides of a round measured back to back, with the \
         25th–75th percentiles of those ratios in brackets. Targets apply to ours.\n\n",
    );
    o.push_str("![ours/raw and cudarc/raw per metric](bench.svg)\n\n");
    o.push_str("![ratio against size for the sweeps](bench-sizes.svg)\n\n");
    let _ = writeln!(
        o,
        "- Device: {} (compute capability {})",
        b.device, b.compute_capability
    );
    let _ = writeln!(o, "- Driver: CUDA {}", b.driver_version);
    let _ = writeln!(o, "- Date: {}", b.date_utc);
    let _ = writeln!(o, "- Command: `{}`", b.command);
    let _ = writeln!(
        o,
        "- Rounds: {} per metric, after one warm-up sample per side{}",
        b.rounds,
        if b.quick {
            "; **--quick** (reduced counts and sizes)"
        } else {
            ""
        }
    );
    let with_target: Vec<&Row> = b.metrics.iter().filter(|r| r.target.is_some()).collect();
    let met = with_target.iter().filter(|r| r.status == "ok").count();
    let _ = writeln!(o, "- Targets met: {met} of {}", with_target.len());
    let modal: Vec<&Row> = b
        .metrics
        .iter()
        .filter(|r| r.sides.iter().flatten().any(|s| s.multimodal))
        .collect();
    let _ = writeln!(
        o,
        "- Rows with multi-modal samples: {} (the paired ratio holds; the sides' medians may not)\n",
        modal.len()
    );
    o.push_str(
        "| metric | raw | ours | ours/raw | cudarc/raw | cudarc 2 streams/raw | target | status | multi-modal |\n",
    );
    o.push_str("|:--|--:|--:|--:|--:|--:|--:|:-:|:-:|\n");
    for r in &b.metrics {
        let status = if r.status == "MISS" {
            "**MISS**".to_string()
        } else {
            md_cell(&r.status)
        };
        let modes: Vec<&str> = (0..4)
            .filter(|&i| r.sides[i].as_ref().is_some_and(|s| s.multimodal))
            .map(|i| SIDE_LABELS[i])
            .collect();
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            md_cell(&r.name),
            fmt_value(r.median(0)),
            fmt_value(r.median(1)),
            fmt_paired(r.ratio(1)),
            fmt_paired(r.ratio(2)),
            fmt_paired(r.ratio(3)),
            r.target.map_or("-".into(), |t| format!("≤ {t:.2}")),
            status,
            if modes.is_empty() {
                "-".to_string()
            } else {
                modes.join(", ")
            }
        );
    }
    if !b.notes.is_empty() {
        o.push_str("\nHow it was measured:\n\n");
        for n in &b.notes {
            let _ = writeln!(o, "- {n}");
        }
    }
    o.push_str(
        "\nThe numbers are in [bench.json](bench.json), every sample of every side included. \
         Regenerate this page and the pictures from it with \
         `cargo xtask bench-report docs/bench.json` (CI checks them with `--check`); for a \
         new run, run the command above with `--json bench.json` on a GPU machine (or \
         `target/gpu-bundle/run.sh --bench`), then `cargo xtask bench-report bench.json`.\n",
    );
    o
}

// ------------------------------------------------------------------------------------------
// SVG
// ------------------------------------------------------------------------------------------

/// The largest ratio the charts show; a bar beyond it ends in an arrow and its label says
/// the value.
const RATIO_CAP: f64 = 2.0;

/// A linear map from ratios in `[lo, hi]` to `[x0, x1]`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Scale {
    lo: f64,
    hi: f64,
    x0: f64,
    x1: f64,
}

impl Scale {
    /// A scale whose domain holds 1.0, every value up to [`RATIO_CAP`] and some room around
    /// them, with ends on multiples of the tick step.
    fn new(values: &[f64], x0: f64, x1: f64) -> Scale {
        let finite = values
            .iter()
            .copied()
            .filter(|v| v.is_finite())
            .map(|v| v.min(RATIO_CAP));
        let (mut lo, mut hi) = finite.fold((1.0f64, 1.0f64), |(l, h), v| (l.min(v), h.max(v)));
        // At least ±2 % around 1.0, and 10 % of the span as margin.
        lo = lo.min(0.98);
        hi = hi.max(1.02);
        let pad = (hi - lo) * 0.1;
        lo -= pad;
        hi += pad;
        let step = tick_step(hi - lo);
        lo = (lo / step).floor() * step;
        hi = (hi / step).ceil() * step;
        Scale {
            lo: lo.max(0.0),
            hi,
            x0,
            x1,
        }
    }

    fn x(&self, v: f64) -> f64 {
        let v = v.clamp(self.lo, self.hi);
        self.x0 + (v - self.lo) / (self.hi - self.lo) * (self.x1 - self.x0)
    }

    /// Tick positions: multiples of a round step inside the domain.
    fn ticks(&self) -> Vec<f64> {
        let step = tick_step(self.hi - self.lo);
        let first = (self.lo / step).ceil() as i64;
        let last = (self.hi / step).floor() as i64;
        (first..=last).map(|k| k as f64 * step).collect()
    }
}

/// A round step (1, 2 or 5 times a power of ten) giving 4 to 10 ticks over `span`.
fn tick_step(span: f64) -> f64 {
    let raw = span / 6.0;
    let mag = 10f64.powf(raw.log10().floor());
    let m = raw / mag;
    let nice = if m < 1.5 {
        1.0
    } else if m < 3.5 {
        2.0
    } else if m < 7.5 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Height of one bar (one side of one row).
const BAR_H: f64 = 9.0;
const PLOT_W: f64 = 440.0;
const TOP: f64 = 84.0;
/// A generous average advance of a 13 px sans-serif character, for sizing the label column.
const CHAR_W: f64 = 7.2;

/// The width of the label column: the longest metric name, within bounds.
fn label_width(b: &Bench) -> f64 {
    let longest = b
        .metrics
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(0);
    (longest as f64 * CHAR_W + 16.0).clamp(160.0, 720.0)
}

/// The sides a row shows bars for: ours, and cudarc's where measured.
fn bars(r: &Row) -> Vec<usize> {
    (1..4).filter(|&i| r.sides[i].is_some()).collect()
}

fn row_height(r: &Row) -> f64 {
    (bars(r).len().max(1) as f64) * (BAR_H + 2.0) + 8.0
}

fn side_color(r: &Row, side: usize) -> &'static str {
    match side {
        1 => match r.status.as_str() {
            "ok" => OK,
            "MISS" => MISS,
            _ => GREY,
        },
        2 => CUDARC_COLOR,
        _ => CUDARC2_COLOR,
    }
}

fn header(o: &mut String, width: f64, height: f64, title: &str, b: &Bench) {
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="Helvetica, Arial, sans-serif" font-size="13">"#
    );
    let _ = writeln!(
        o,
        r##"<rect x="0" y="0" width="{width:.0}" height="{height:.0}" fill="#ffffff"/>"##
    );
    let _ = writeln!(
        o,
        r#"<text x="12" y="24" font-size="16" font-weight="bold">{}</text>"#,
        xml(title)
    );
    let _ = writeln!(
        o,
        r##"<text x="12" y="44" fill="#555555">{} · driver CUDA {} · {}{} · median of {} paired rounds, whiskers p25–p75</text>"##,
        xml(&b.device),
        xml(&b.driver_version),
        xml(&b.date_utc),
        if b.quick { " · --quick" } else { "" },
        b.rounds
    );
}

/// The legend's entries: a colour swatch or a line, and its label.
fn legend(o: &mut String, x: f64, y: f64) {
    let items: [(&str, &str); 5] = [
        (OK, "ours, within target"),
        (MISS, "ours, target missed"),
        (CUDARC_COLOR, "cudarc"),
        (CUDARC2_COLOR, "cudarc, 2 streams"),
        ("", "target"),
    ];
    let mut cx = x;
    for (color, label) in items {
        if color.is_empty() {
            let _ = writeln!(
                o,
                r##"<line x1="{cx:.1}" y1="{:.1}" x2="{cx:.1}" y2="{:.1}" stroke="#222222" stroke-width="2" stroke-dasharray="3,2"/>"##,
                y - 11.0,
                y + 2.0
            );
        } else {
            let _ = writeln!(
                o,
                r#"<rect x="{cx:.1}" y="{:.1}" width="12" height="12" fill="{color}"/>"#,
                y - 10.0
            );
        }
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{y:.1}">{}</text>"#,
            cx + 16.0,
            xml(label)
        );
        cx += 16.0 + label.chars().count() as f64 * CHAR_W + 18.0;
    }
}

/// The ratio chart: per metric, a bar from 1.0 to each side's median paired ratio, a whisker
/// over its quartiles, and the target.
fn svg(b: &Bench) -> String {
    let label_w = label_width(b);
    let x0 = label_w + 10.0;
    let x1 = x0 + PLOT_W;
    let width = (x1 + 130.0).max(x0 + 760.0);
    let rows_h: f64 = b.metrics.iter().map(row_height).sum();
    let bottom = TOP + rows_h;
    let height = bottom + 56.0;
    let values: Vec<f64> = b
        .metrics
        .iter()
        .flat_map(|r| {
            (1..4)
                .filter_map(|i| r.ratio(i))
                .flat_map(|(m, lo, hi)| [m, lo, hi])
                .chain(r.target)
                .collect::<Vec<_>>()
        })
        .collect();
    let sc = Scale::new(&values, x0, x1);
    let mut o = String::new();
    header(
        &mut o,
        width,
        height,
        "cost against the raw driver per metric (below 1: faster, above 1: slower)",
        b,
    );
    legend(&mut o, 12.0, 68.0);
    for t in sc.ticks() {
        let x = sc.x(t);
        let _ = writeln!(
            o,
            r##"<line x1="{x:.1}" y1="{TOP:.1}" x2="{x:.1}" y2="{bottom:.1}" stroke="#e4e4e4"/>"##
        );
        let _ = writeln!(
            o,
            r##"<text x="{x:.1}" y="{:.1}" text-anchor="middle" fill="#555555">{}</text>"##,
            bottom + 18.0,
            trim_num(t)
        );
    }
    let mut y = TOP;
    for (i, r) in b.metrics.iter().enumerate() {
        let h = row_height(r);
        if i % 2 == 1 {
            let _ = writeln!(
                o,
                r##"<rect x="0" y="{y:.1}" width="{width:.0}" height="{h:.1}" fill="#000000" fill-opacity="0.03"/>"##
            );
        }
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            label_w,
            y + h / 2.0 + 4.5,
            xml(&r.name)
        );
        let sides = bars(r);
        if sides.is_empty() {
            let _ = writeln!(
                o,
                r##"<text x="{:.1}" y="{:.1}" fill="{GREY}">n/a</text>"##,
                x1 + 8.0,
                y + h / 2.0 + 4.5
            );
        }
        for (k, &side) in sides.iter().enumerate() {
            let by = y + 4.0 + k as f64 * (BAR_H + 2.0);
            let color = side_color(r, side);
            let Some((m, lo, hi)) = r.ratio(side) else {
                let _ = writeln!(
                    o,
                    r#"<text x="{:.1}" y="{:.1}" font-size="10" fill="{color}">n/a</text>"#,
                    x1 + 8.0,
                    by + BAR_H - 1.0
                );
                continue;
            };
            let (a, z) = (sc.x(1.0), sc.x(m));
            let (left, w) = (a.min(z), (a - z).abs().max(1.0));
            let _ = writeln!(
                o,
                r#"<rect x="{left:.1}" y="{by:.1}" width="{w:.1}" height="{BAR_H:.1}" fill="{color}"><title>{} · {}: {m:.4} (p25 {lo:.4}, p75 {hi:.4})</title></rect>"#,
                xml(&r.name),
                SIDE_LABELS[side]
            );
            let (wl, wh) = (sc.x(lo), sc.x(hi));
            let wy = by + BAR_H / 2.0;
            let _ = writeln!(
                o,
                r##"<line x1="{wl:.1}" y1="{wy:.1}" x2="{wh:.1}" y2="{wy:.1}" stroke="#222222" stroke-width="1"/>"##
            );
            let clipped = if m > sc.hi { " ▶" } else { "" };
            let _ = writeln!(
                o,
                r#"<text x="{:.1}" y="{:.1}" font-size="10" fill="{color}">{m:.3}{}{clipped}</text>"#,
                x1 + 8.0,
                by + BAR_H - 1.0,
                if side == 1 && r.status == "MISS" {
                    " MISS"
                } else {
                    ""
                }
            );
        }
        if let Some(t) = r.target {
            let x = sc.x(t);
            let _ = writeln!(
                o,
                r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#222222" stroke-width="2" stroke-dasharray="3,2"><title>target ≤ {t}</title></line>"##,
                y + 2.0,
                y + h - 2.0
            );
        }
        y += h;
    }
    let one = sc.x(1.0);
    let _ = writeln!(
        o,
        r##"<line x1="{one:.1}" y1="{:.1}" x2="{one:.1}" y2="{bottom:.1}" stroke="#000000" stroke-width="1.5"/>"##,
        TOP - 4.0
    );
    o.push_str("</svg>\n");
    o
}

/// A tick label: a number without trailing zeros.
fn trim_num(v: f64) -> String {
    let s = format!("{v:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// A sweep's x label: a size in B/KiB/MiB/GiB (whole or one decimal), or a count.
fn x_label(r: &Row) -> String {
    match (r.size, r.args) {
        (Some(s), _) => {
            let units = [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
            for (name, unit) in units {
                let u = unit as f64;
                if s >= u {
                    let v = s / u;
                    return if v.fract() == 0.0 {
                        format!("{v:.0} {name}")
                    } else {
                        format!("{v:.1} {name}")
                    };
                }
            }
            format!("{s:.0} B")
        }
        (None, Some(a)) => format!("{a:.0}"),
        (None, None) => String::new(),
    }
}

/// A sweep's x on a log axis: log2 of the size, or of the parameter count + 1 (so 0 fits).
fn x_log(r: &Row) -> f64 {
    match (r.size, r.args) {
        (Some(s), _) => s.max(1.0).log2(),
        (None, Some(a)) => (a + 1.0).log2(),
        (None, None) => 0.0,
    }
}

const PANEL_W: f64 = 380.0;
const PANEL_H: f64 = 210.0;
const PANEL_COLS: usize = 3;

/// Ratio against size (or parameter count) for each sweep: one panel per sweep, a line per
/// side, the target dashed, the x axis logarithmic.
fn sizes_svg(b: &Bench) -> String {
    let sweeps = b.sweeps();
    let rows = sweeps.len().div_ceil(PANEL_COLS).max(1);
    let width = PANEL_COLS as f64 * PANEL_W + 20.0;
    let height = TOP + rows as f64 * PANEL_H + 20.0;
    let mut o = String::new();
    header(
        &mut o,
        width,
        height,
        "cost against the raw driver by size (sweeps; log x axis; below 1: faster)",
        b,
    );
    legend(&mut o, 12.0, 68.0);
    for (n, (name, rows)) in sweeps.iter().enumerate() {
        let px = 10.0 + (n % PANEL_COLS) as f64 * PANEL_W;
        let py = TOP + (n / PANEL_COLS) as f64 * PANEL_H;
        let (l, r_, t, bt) = (
            px + 48.0,
            px + PANEL_W - 14.0,
            py + 26.0,
            py + PANEL_H - 40.0,
        );
        let _ = writeln!(
            o,
            r##"<text x="{:.1}" y="{:.1}" font-weight="bold">{} [{}]</text>"##,
            l,
            py + 16.0,
            xml(name),
            xml(&rows[0].unit)
        );
        let values: Vec<f64> = rows
            .iter()
            .flat_map(|r| {
                (1..4)
                    .filter_map(|i| r.ratio(i).map(|p| p.0))
                    .chain(r.target)
                    .collect::<Vec<_>>()
            })
            .collect();
        // The y scale: ratios bottom to top.
        let ys = Scale::new(&values, bt, t);
        let (xmin, xmax) = rows
            .iter()
            .map(|r| x_log(r))
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, z), v| {
                (a.min(v), z.max(v))
            });
        let span = if xmax > xmin { xmax - xmin } else { 1.0 };
        let xs = |r: &Row| l + (x_log(r) - xmin) / span * (r_ - l);
        let _ = writeln!(
            o,
            r##"<rect x="{l:.1}" y="{t:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="#cccccc"/>"##,
            r_ - l,
            bt - t
        );
        for tk in ys.ticks() {
            let y = ys.x(tk);
            let _ = writeln!(
                o,
                r##"<line x1="{l:.1}" y1="{y:.1}" x2="{r_:.1}" y2="{y:.1}" stroke="#eeeeee"/><text x="{:.1}" y="{:.1}" text-anchor="end" font-size="10" fill="#555555">{}</text>"##,
                l - 4.0,
                y + 3.5,
                trim_num(tk)
            );
        }
        let one = ys.x(1.0);
        let _ = writeln!(
            o,
            r##"<line x1="{l:.1}" y1="{one:.1}" x2="{r_:.1}" y2="{one:.1}" stroke="#000000" stroke-width="1"/>"##
        );
        // The target: a dashed line through the points' targets.
        let target: Vec<String> = rows
            .iter()
            .filter_map(|r| r.target.map(|tg| format!("{:.1},{:.1}", xs(r), ys.x(tg))))
            .collect();
        if target.len() > 1 {
            let _ = writeln!(
                o,
                r##"<polyline points="{}" fill="none" stroke="#222222" stroke-width="1.5" stroke-dasharray="4,3"/>"##,
                target.join(" ")
            );
        }
        for r in rows.iter() {
            let x = xs(r);
            let _ = writeln!(
                o,
                r##"<text x="{x:.1}" y="{:.1}" text-anchor="middle" font-size="10" fill="#555555">{}</text>"##,
                bt + 14.0,
                xml(&x_label(r))
            );
        }
        for (side, label) in SIDE_LABELS.iter().enumerate().skip(1) {
            let pts: Vec<(f64, f64, f64, &Row)> = rows
                .iter()
                .filter_map(|r| r.ratio(side).map(|p| (xs(r), ys.x(p.0), p.0, *r)))
                .collect();
            if pts.is_empty() {
                continue;
            }
            let color = match side {
                1 => OK,
                2 => CUDARC_COLOR,
                _ => CUDARC2_COLOR,
            };
            let line: Vec<String> = pts
                .iter()
                .map(|p| format!("{:.1},{:.1}", p.0, p.1))
                .collect();
            let _ = writeln!(
                o,
                r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2"/>"#,
                line.join(" ")
            );
            for (x, y, v, r) in pts {
                let fill = if side == 1 { side_color(r, 1) } else { color };
                let _ = writeln!(
                    o,
                    r#"<circle cx="{x:.1}" cy="{y:.1}" r="3.5" fill="{fill}"><title>{} · {label}: {v:.4}</title></circle>"#,
                    xml(&r.name)
                );
            }
        }
        let axis = if rows[0].size.is_some() {
            "size"
        } else {
            "kernel parameters"
        };
        let _ = writeln!(
            o,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="11" fill="#555555">{axis}</text>"##,
            (l + r_) / 2.0,
            bt + 28.0
        );
    }
    o.push_str("</svg>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small synthetic file (made-up numbers, not a measurement) in the bench's format.
    const FIXTURE: &str = include_str!("../tests/fixtures/bench-synthetic.json");

    #[test]
    fn parses_values() {
        assert_eq!(parse_json(" null ").unwrap(), Json::Null);
        assert_eq!(parse_json("-1.5e2").unwrap(), Json::Num(-150.0));
        assert_eq!(parse_json("0.0000001").unwrap(), Json::Num(1e-7));
        assert_eq!(
            parse_json(r#""a\"b\\c\n\u00b5\ud83d\ude00/""#).unwrap(),
            Json::Str("a\"b\\c\nµ😀/".into())
        );
        assert_eq!(
            parse_json(r#"{"a": [1, true, false, {}], "b": []}"#).unwrap(),
            Json::Obj(vec![
                (
                    "a".into(),
                    Json::Arr(vec![
                        Json::Num(1.0),
                        Json::Bool(true),
                        Json::Bool(false),
                        Json::Obj(vec![])
                    ])
                ),
                ("b".into(), Json::Arr(vec![])),
            ])
        );
        assert_eq!(parse_json("\"µs\"").unwrap(), Json::Str("µs".into()));
    }

    #[test]
    fn rejects_malformed_json() {
        for bad in [
            "",
            "{",
            "[1,]",
            "{\"a\" 1}",
            "{\"a\":1,}",
            "tru",
            "1.",
            "-",
            "1e",
            "\"abc",
            "\"\\x\"",
            "{} x",
            "[1 2]",
            "\"a\nb\"",
            "01x",
        ] {
            assert!(parse_json(bad).is_err(), "{bad:?} was accepted");
        }
        let e = parse_json("{\n\"a\": ?}").unwrap_err();
        assert!(e.contains("line 2"), "{e}");
    }

    #[test]
    fn reads_the_fixture() {
        let b = Bench::from_json(FIXTURE).unwrap();
        assert_eq!(b.device, "Synthetic \"GPU\" <x> & co");
        assert_eq!(b.rounds, 5);
        assert_eq!(b.metrics.len(), 7);
        let l = &b.metrics[0];
        assert_eq!(l.sweep.as_deref(), Some("launch, checked"));
        assert_eq!(l.args, Some(0.0));
        assert_eq!(l.ratio(1), Some((1.004, 0.998, 1.011)));
        assert_eq!(l.ratio(2).map(|r| r.0), Some(1.2));
        assert!(l.sides[3].is_some());
        let c = &b.metrics[2];
        assert_eq!(c.size, Some(4096.0));
        assert!(c.sides[0].as_ref().unwrap().multimodal);
        assert!(c.ratio(0).is_none());
        let e = &b.metrics[6];
        assert!(e.sides[2].is_none() && e.sides[3].is_none());
        assert_eq!(e.status, "-");
        let sweeps = b.sweeps();
        let names: Vec<&str> = sweeps.iter().map(|s| s.0).collect();
        assert_eq!(names, ["launch, checked", "copy HtoD, page-locked"]);
        assert_eq!(sweeps[1].1.len(), 3);
    }

    #[test]
    fn rejects_other_formats_and_missing_keys() {
        let e = Bench::from_json(&FIXTURE.replace("bench 2", "bench 1")).unwrap_err();
        assert!(e.contains("format"), "{e}");
        let e = Bench::from_json(&FIXTURE.replacen("\"unit\": \"us/launch\",", "", 1)).unwrap_err();
        assert!(e.contains("metric 0") && e.contains("unit"), "{e}");
        let e = Bench::from_json(&FIXTURE.replace("\"rounds\": 5", "\"rounds\": 5.5")).unwrap_err();
        assert!(e.contains("rounds"), "{e}");
        let e = Bench::from_json(&FIXTURE.replacen("\"samples\": [", "\"samples\": [\"x\", ", 1))
            .unwrap_err();
        assert!(e.contains("samples"), "{e}");
    }

    #[test]
    fn scale_holds_one_every_value_and_maps_linearly() {
        let sc = Scale::new(&[1.01, 1.02, 0.97, 1.05], 100.0, 500.0);
        assert!(sc.lo < 0.97 && sc.hi > 1.05, "{sc:?}");
        assert_eq!(sc.x(sc.lo), 100.0);
        assert_eq!(sc.x(sc.hi), 500.0);
        let mid = (sc.lo + sc.hi) / 2.0;
        assert!((sc.x(mid) - 300.0).abs() < 1e-9);
        assert!(sc.x(1.0) < sc.x(1.01));
        assert_eq!(sc.x(1e9), 500.0);
        assert_eq!(sc.x(-5.0), 100.0);
        let ticks = sc.ticks();
        assert!((4..=12).contains(&ticks.len()), "{ticks:?}");
        assert!(ticks.iter().any(|&t| (t - 1.0).abs() < 1e-9), "{ticks:?}");
        // Ratios beyond the cap do not stretch the axis.
        let sc = Scale::new(&[1.0, 40.0], 0.0, 100.0);
        assert!(sc.hi <= RATIO_CAP * 1.2, "{sc:?}");
    }

    #[test]
    fn tick_steps_are_round() {
        assert_eq!(tick_step(0.06), 0.01);
        assert_eq!(tick_step(0.12), 0.02);
        assert_eq!(tick_step(0.3), 0.05);
        assert_eq!(tick_step(6.0), 1.0);
        assert_eq!(trim_num(1.0), "1");
        assert_eq!(trim_num(0.95), "0.95");
    }

    /// Tags of the elements used are balanced.
    fn balanced(s: &str) {
        for tag in ["rect", "text", "line", "title", "polyline", "circle"] {
            let open =
                s.matches(&format!("<{tag} ")).count() + s.matches(&format!("<{tag}>")).count();
            let self_closed = s
                .split(&format!("<{tag} "))
                .skip(1)
                .filter(|rest| rest.split('>').next().is_some_and(|t| t.ends_with('/')))
                .count();
            let close = s.matches(&format!("</{tag}>")).count();
            assert_eq!(open, self_closed + close, "<{tag}> balanced");
        }
    }

    #[test]
    fn ratio_chart_has_a_bar_per_side_and_escapes_text() {
        let b = Bench::from_json(FIXTURE).unwrap();
        let s = svg(&b);
        assert!(s.starts_with("<svg ") && s.ends_with("</svg>\n"));
        // Bars: rows 0-5 have ours + cudarc + cudarc 2s, row 6 ours only.
        assert_eq!(
            s.matches("<rect x=\"").count() - 1 - 4 - 3,
            6 * 3 + 1,
            "{s}"
        );
        assert!(s.contains("Synthetic &quot;GPU&quot; &lt;x&gt; &amp; co"));
        assert!(!s.contains("<x>"));
        assert!(s.contains("1.050 MISS"), "{s}");
        // cudarc's 3.5 on the stream-ordered row is beyond the cap: an arrow.
        assert!(s.contains("3.500 ▶"), "{s}");
        assert!(s.contains("target ≤ 1.02"));
        balanced(&s);
        // Deterministic.
        assert_eq!(s, svg(&Bench::from_json(FIXTURE).unwrap()));
    }

    #[test]
    fn sizes_chart_has_a_panel_per_sweep_on_a_log_axis() {
        let b = Bench::from_json(FIXTURE).unwrap();
        let s = sizes_svg(&b);
        assert!(s.starts_with("<svg ") && s.ends_with("</svg>\n"));
        assert!(s.contains(">launch, checked [us/launch]</text>"), "{s}");
        assert!(
            s.contains(">copy HtoD, page-locked [us/copy]</text>"),
            "{s}"
        );
        for label in [">4 KiB<", ">64 KiB<", ">1 GiB<", ">0<", ">64<"] {
            assert!(s.contains(label), "{label} missing");
        }
        // Log axis: 4 KiB, 64 KiB and 1 GiB are 4 and 14 doublings apart: the middle point
        // sits at 4/18 of the panel's width.
        let r = Bench::from_json(FIXTURE).unwrap();
        let rows = &r.sweeps()[1].1;
        let xs: Vec<f64> = rows.iter().map(|r| x_log(r)).collect();
        assert_eq!(xs, [12.0, 16.0, 30.0]);
        // Three sides in each panel with cudarc: 2 panels x 3 lines + 2 target lines.
        assert_eq!(s.matches("<polyline ").count(), 2 * 3 + 2);
        balanced(&s);
        assert_eq!(s, sizes_svg(&Bench::from_json(FIXTURE).unwrap()));
    }

    #[test]
    fn markdown_has_the_table_and_the_provenance() {
        let b = Bench::from_json(FIXTURE).unwrap();
        let m = markdown(&b);
        assert!(m.contains(
            "| metric | raw | ours | ours/raw | cudarc/raw | cudarc 2 streams/raw | target | status | multi-modal |"
        ));
        assert!(
            m.contains("| launch, checked, empty() [us/launch] | 2.500 | 2.510 | 1.004 (0.998–1.011) | 1.200 (1.150–1.250) | 1.300 (1.250–1.350) | ≤ 1.02 | ok | - |"),
            "{m}"
        );
        assert!(m.contains("| **MISS** |"), "{m}");
        assert!(m.contains("| raw, ours |"), "{m}");
        assert!(m.contains("| cuEventElapsedTime [ns/call] | 300.0 | 290.0 | 0.967 (0.950–0.990) | - | - | - | - | - |"), "{m}");
        assert!(m.contains("- Device: Synthetic \"GPU\" <x> & co (compute capability 9.0)"));
        assert!(m.contains("- Driver: CUDA 13.0"));
        assert!(m.contains("- Date: 2025-06-01T12:34:56Z"));
        assert!(m.contains(
            "`cargo run --release -p cuda-driver-examples --example bench -- --json b.json`"
        ));
        assert!(m.contains("- Targets met: 5 of 6"), "{m}");
        assert!(m.contains("- pipes | and µs"));
        assert!(m.contains("(bench-sizes.svg)") && m.contains("(bench.svg)"));
        assert!(m.contains("cargo xtask bench-report docs/bench.json"));
    }

    #[test]
    fn check_mode_compares_byte_for_byte_and_skips_without_a_file() {
        let dir = std::env::temp_dir().join(format!("xtask-bench-report-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let json = dir.join("bench.json");
        let arg = |p: &std::path::Path| p.display().to_string();
        // No file: --check skips and succeeds.
        run(&["--check".into(), arg(&json), "--out".into(), arg(&dir)]).unwrap();
        std::fs::write(&json, FIXTURE).unwrap();
        run(&[arg(&json), "--out".into(), arg(&dir)]).unwrap();
        for f in ["bench.md", "bench.svg", "bench-sizes.svg"] {
            assert!(dir.join(f).is_file(), "{f}");
        }
        run(&["--check".into(), arg(&json), "--out".into(), arg(&dir)]).unwrap();
        // A changed picture fails the check.
        let svg_path = dir.join("bench.svg");
        let mut s = std::fs::read_to_string(&svg_path).unwrap();
        s.push(' ');
        std::fs::write(&svg_path, s).unwrap();
        let e = run(&["--check".into(), arg(&json), "--out".into(), arg(&dir)]).unwrap_err();
        assert!(e.contains("bench.svg") && e.contains("stale"), "{e}");
        // A JSON elsewhere is copied beside the pictures.
        let other = dir.join("sub");
        std::fs::create_dir_all(&other).unwrap();
        run(&[arg(&json), "--out".into(), arg(&other)]).unwrap();
        assert_eq!(
            std::fs::read_to_string(other.join("bench.json")).unwrap(),
            FIXTURE
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
