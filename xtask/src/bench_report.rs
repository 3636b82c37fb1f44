//! `cargo xtask bench-report FILE.json [--out DIR]`: turns the JSON that
//! `examples/bench.rs` writes (`--json FILE`) into `DIR/bench.md`, a Markdown table with the
//! device, driver, date and command, and `DIR/bench.svg`, one horizontal bar per metric
//! showing the safe side's cost over the raw side's, with a line at 1.0 and the targets
//! marked. `DIR` defaults to `docs`.
//!
//! The JSON is read by a small parser of its own (no dependency); the expected keys are
//! those `cuda_driver_examples::bench::Report::to_json` writes.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::util::root;

/// The value of the file's `"format"` key that this reader understands.
const FORMAT: &str = "cuda-driver-bench 1";

pub fn run(args: &[String]) -> Result<(), String> {
    let mut input: Option<PathBuf> = None;
    let mut out = root().join("docs");
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--out" => {
                out = PathBuf::from(it.next().ok_or("--out needs a directory")?);
            }
            s if s.starts_with('-') => return Err(format!("unknown option `{s}`")),
            s if input.is_none() => input = Some(PathBuf::from(s)),
            s => return Err(format!("unexpected argument `{s}`")),
        }
    }
    let input = input.ok_or("usage: cargo xtask bench-report FILE.json [--out DIR]")?;
    let text = std::fs::read_to_string(&input)
        .map_err(|e| format!("cannot read {}: {e}", input.display()))?;
    let bench = Bench::from_json(&text).map_err(|e| format!("{}: {e}", input.display()))?;
    std::fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    write(&out.join("bench.md"), &markdown(&bench))?;
    write(&out.join("bench.svg"), &svg(&bench))?;
    println!(
        "bench-report: {} metrics from {} -> {}/bench.md, {}/bench.svg",
        bench.metrics.len(),
        input.display(),
        out.display(),
        out.display()
    );
    Ok(())
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
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

#[derive(Debug, Clone, PartialEq)]
struct Row {
    name: String,
    unit: String,
    higher_is_better: bool,
    raw: Option<f64>,
    safe: Option<f64>,
    /// Safe cost over raw cost.
    ratio: Option<f64>,
    target: Option<f64>,
    status: String,
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

fn bool_of(v: &Json, key: &str) -> Result<bool, String> {
    match v.get(key) {
        Some(Json::Bool(b)) => Ok(*b),
        Some(_) => Err(format!("`{key}` is not a boolean")),
        None => Err(format!("`{key}` is missing")),
    }
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
                        raw: num_or_null(m, "raw")?,
                        safe: num_or_null(m, "safe")?,
                        ratio: num_or_null(m, "ratio")?,
                        target: num_or_null(m, "target")?,
                        status: str_of(m, "status")?,
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

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|")
}

fn markdown(b: &Bench) -> String {
    let mut o = String::new();
    o.push_str("# Benchmark: the safe crate against the raw driver\n\n");
    o.push_str(
        "The same work through raw `cuda-driver-sys` calls and through the safe `cuda-driver` \
         API, in one process (`cuda-driver-examples/examples/bench.rs`). `safe/raw` is the safe \
         side's cost over the raw side's: above 1 the safe side is slower (for bandwidths it is \
         raw GB/s over safe GB/s, the ratio of the times).\n\n",
    );
    o.push_str("![safe/raw per metric](bench.svg)\n\n");
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
        "- Rounds: {} per side (medians shown){}",
        b.rounds,
        if b.quick {
            "; **--quick** (reduced counts and sizes)"
        } else {
            ""
        }
    );
    let with_target: Vec<&Row> = b.metrics.iter().filter(|r| r.target.is_some()).collect();
    let met = with_target.iter().filter(|r| r.status == "ok").count();
    let _ = writeln!(o, "- Targets met: {met} of {}\n", with_target.len());
    o.push_str("| metric | raw | safe | safe/raw | target | status |\n");
    o.push_str("|:--|--:|--:|--:|--:|:-:|\n");
    for r in &b.metrics {
        let status = if r.status == "MISS" {
            "**MISS**".to_string()
        } else {
            md_cell(&r.status)
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} |",
            md_cell(&r.name),
            fmt_value(r.raw),
            fmt_value(r.safe),
            r.ratio.map_or("n/a".into(), |x| format!("{x:.3}")),
            r.target.map_or("-".into(), |t| format!("≤ {t:.2}")),
            status
        );
    }
    if !b.notes.is_empty() {
        o.push_str("\nHow it was measured:\n\n");
        for n in &b.notes {
            let _ = writeln!(o, "- {n}");
        }
    }
    o.push_str(
        "\nRegenerate: run the command above with `--json bench.json` on a GPU machine, then \
         `cargo xtask bench-report bench.json`.\n",
    );
    o
}

// ------------------------------------------------------------------------------------------
// SVG
// ------------------------------------------------------------------------------------------

/// A linear map from ratios in `[lo, hi]` to x in `[x0, x1]`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Scale {
    lo: f64,
    hi: f64,
    x0: f64,
    x1: f64,
}

impl Scale {
    /// A scale whose domain holds 1.0, every value and some room around them, with ends on
    /// multiples of the tick step.
    fn new(values: &[f64], x0: f64, x1: f64) -> Scale {
        let finite = values.iter().copied().filter(|v| v.is_finite());
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

const ROW_H: f64 = 26.0;
const PLOT_W: f64 = 440.0;
const TOP: f64 = 64.0;
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

fn svg(b: &Bench) -> String {
    let label_w = label_width(b);
    let x0 = label_w + 10.0;
    let x1 = x0 + PLOT_W;
    let width = x1 + 90.0;
    let n = b.metrics.len();
    let bottom = TOP + ROW_H * n as f64;
    let height = bottom + 56.0;
    let values: Vec<f64> = b
        .metrics
        .iter()
        .flat_map(|r| [r.ratio, r.target])
        .flatten()
        .collect();
    let sc = Scale::new(&values, x0, x1);
    let mut o = String::new();
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
        r#"<text x="12" y="24" font-size="16" font-weight="bold">safe / raw cost per metric (below 1: safe faster, above 1: safe slower)</text>"#
    );
    let _ = writeln!(
        o,
        r##"<text x="12" y="44" fill="#555555">{} · driver CUDA {} · {}{}</text>"##,
        xml(&b.device),
        xml(&b.driver_version),
        xml(&b.date_utc),
        if b.quick { " · --quick" } else { "" }
    );
    // Grid and tick labels.
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
    // Rows.
    for (i, r) in b.metrics.iter().enumerate() {
        let y = TOP + ROW_H * i as f64;
        let mid = y + ROW_H / 2.0;
        if i % 2 == 1 {
            let _ = writeln!(
                o,
                r##"<rect x="0" y="{y:.1}" width="{width:.0}" height="{ROW_H:.1}" fill="#000000" fill-opacity="0.03"/>"##
            );
        }
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            label_w,
            mid + 4.5,
            xml(&r.name)
        );
        let color = match r.status.as_str() {
            "ok" => "#2e8b57",
            "MISS" => "#d62728",
            _ => "#7f7f7f",
        };
        match r.ratio {
            Some(ratio) => {
                let (a, z) = (sc.x(1.0), sc.x(ratio));
                let (left, w) = (a.min(z), (a - z).abs().max(1.0));
                let _ = writeln!(
                    o,
                    r#"<rect x="{left:.1}" y="{:.1}" width="{w:.1}" height="{:.1}" fill="{color}"><title>{}: {ratio:.4}</title></rect>"#,
                    y + 6.0,
                    ROW_H - 12.0,
                    xml(&r.name)
                );
                let _ = writeln!(
                    o,
                    r#"<text x="{:.1}" y="{:.1}" fill="{color}">{ratio:.3}{}</text>"#,
                    x1 + 8.0,
                    mid + 4.5,
                    if r.status == "MISS" { " MISS" } else { "" }
                );
            }
            None => {
                let _ = writeln!(
                    o,
                    r##"<text x="{:.1}" y="{:.1}" fill="#7f7f7f">n/a</text>"##,
                    x1 + 8.0,
                    mid + 4.5
                );
            }
        }
        if let Some(t) = r.target {
            let x = sc.x(t);
            let _ = writeln!(
                o,
                r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#222222" stroke-width="2"><title>target ≤ {t}</title></line>"##,
                y + 3.0,
                y + ROW_H - 3.0
            );
        }
    }
    // The line at 1.0, over the bars.
    let one = sc.x(1.0);
    let _ = writeln!(
        o,
        r##"<line x1="{one:.1}" y1="{:.1}" x2="{one:.1}" y2="{bottom:.1}" stroke="#000000" stroke-width="1.5"/>"##,
        TOP - 4.0
    );
    // Legend.
    let ly = bottom + 40.0;
    let _ = writeln!(
        o,
        r##"<rect x="{x0:.1}" y="{:.1}" width="12" height="12" fill="#2e8b57"/><text x="{:.1}" y="{ly:.1}">within target</text>"##,
        ly - 10.0,
        x0 + 16.0
    );
    let _ = writeln!(
        o,
        r##"<rect x="{:.1}" y="{:.1}" width="12" height="12" fill="#d62728"/><text x="{:.1}" y="{ly:.1}">target missed</text>"##,
        x0 + 120.0,
        ly - 10.0,
        x0 + 136.0
    );
    let _ = writeln!(
        o,
        r##"<rect x="{:.1}" y="{:.1}" width="12" height="12" fill="#7f7f7f"/><text x="{:.1}" y="{ly:.1}">no target</text>"##,
        x0 + 240.0,
        ly - 10.0,
        x0 + 256.0
    );
    let _ = writeln!(
        o,
        r##"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#222222" stroke-width="2"/><text x="{:.1}" y="{ly:.1}">target</text>"##,
        x0 + 336.0,
        ly - 11.0,
        x0 + 336.0,
        ly + 2.0,
        x0 + 342.0
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

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"{
  "format": "cuda-driver-bench 1",
  "device": "Fake \"GPU\" <x> & co",
  "compute_capability": "9.0",
  "driver_version": "13.0",
  "date_utc": "2025-06-01T12:34:56Z",
  "command": "cargo run --release -p cuda-driver-examples --example bench -- --json /tmp/b.json",
  "quick": false,
  "rounds": 7,
  "notes": [
    "one note",
    "pipes | and \u00b5s"
  ],
  "metrics": [
    {"name": "launch empty() [us/launch]", "unit": "us/launch", "higher_is_better": false, "raw": 2.5, "safe": 2.525, "ratio": 1.01, "target": 1.02, "status": "ok", "raw_samples": [2.5, 2.4], "safe_samples": [2.525]},
    {"name": "copy HtoD, page-locked, 256 MiB [GB/s]", "unit": "GB/s", "higher_is_better": true, "raw": 50, "safe": 48, "ratio": 1.0416666666666667, "target": 1.01, "status": "MISS", "raw_samples": [], "safe_samples": []},
    {"name": "cuEventRecord [ns/call]", "unit": "ns/call", "higher_is_better": false, "raw": 300, "safe": 290, "ratio": 0.9666666666666667, "target": null, "status": "-", "raw_samples": [], "safe_samples": []},
    {"name": "x [ms]", "unit": "ms", "higher_is_better": false, "raw": 1e0, "safe": null, "ratio": null, "target": 1.05, "status": "n/a", "raw_samples": [1], "safe_samples": []}
  ]
}
"#;

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
    fn reads_the_bench_file() {
        let b = Bench::from_json(SAMPLE).unwrap();
        assert_eq!(b.device, "Fake \"GPU\" <x> & co");
        assert_eq!(b.rounds, 7);
        assert!(!b.quick);
        assert_eq!(b.notes, ["one note", "pipes | and µs"]);
        assert_eq!(b.metrics.len(), 4);
        assert_eq!(b.metrics[0].ratio, Some(1.01));
        assert_eq!(b.metrics[1].raw, Some(50.0));
        assert!(b.metrics[1].higher_is_better);
        assert_eq!(b.metrics[2].target, None);
        assert_eq!(b.metrics[3].safe, None);
        assert_eq!(b.metrics[3].status, "n/a");
    }

    #[test]
    fn rejects_other_formats_and_missing_keys() {
        let e = Bench::from_json(&SAMPLE.replace("bench 1", "bench 2")).unwrap_err();
        assert!(e.contains("format"), "{e}");
        let e = Bench::from_json(&SAMPLE.replace("\"unit\": \"ms\", ", "")).unwrap_err();
        assert!(e.contains("metric 3") && e.contains("unit"), "{e}");
        let e = Bench::from_json(&SAMPLE.replace("\"rounds\": 7", "\"rounds\": 7.5")).unwrap_err();
        assert!(e.contains("rounds"), "{e}");
    }

    #[test]
    fn scale_holds_one_every_value_and_maps_linearly() {
        let sc = Scale::new(&[1.01, 1.02, 0.97, 1.05], 100.0, 500.0);
        assert!(sc.lo < 0.97 && sc.hi > 1.05, "{sc:?}");
        assert_eq!(sc.x(sc.lo), 100.0);
        assert_eq!(sc.x(sc.hi), 500.0);
        let mid = (sc.lo + sc.hi) / 2.0;
        assert!((sc.x(mid) - 300.0).abs() < 1e-9);
        // Monotonic, and values outside the domain are clamped to the plot.
        assert!(sc.x(1.0) < sc.x(1.01));
        assert_eq!(sc.x(1e9), 500.0);
        assert_eq!(sc.x(-5.0), 100.0);
        // Ticks: round numbers inside the domain, including 1.0 here.
        let ticks = sc.ticks();
        assert!((4..=12).contains(&ticks.len()), "{ticks:?}");
        assert!(ticks
            .iter()
            .all(|&t| t >= sc.lo - 1e-12 && t <= sc.hi + 1e-12));
        assert!(ticks.iter().any(|&t| (t - 1.0).abs() < 1e-9), "{ticks:?}");
    }

    #[test]
    fn scale_without_values_is_around_one() {
        let sc = Scale::new(&[], 0.0, 100.0);
        assert!(sc.lo < 1.0 && sc.hi > 1.0 && sc.hi - sc.lo < 0.2, "{sc:?}");
        let sc = Scale::new(&[3.0, f64::NAN], 0.0, 100.0);
        assert!(sc.hi >= 3.0 && sc.lo < 1.0, "{sc:?}");
    }

    #[test]
    fn labels_fit_their_column() {
        let mut b = Bench::from_json(SAMPLE).unwrap();
        let longest = "copy HtoD, page-locked, 256 MiB [GB/s]".chars().count() as f64;
        assert!(label_width(&b) >= longest * CHAR_W);
        b.metrics[0].name = "x".repeat(500);
        assert_eq!(label_width(&b), 720.0);
        b.metrics.clear();
        assert_eq!(label_width(&b), 160.0);
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

    #[test]
    fn svg_has_a_bar_per_metric_and_escapes_text() {
        let b = Bench::from_json(SAMPLE).unwrap();
        let s = svg(&b);
        assert!(s.starts_with("<svg ") && s.ends_with("</svg>\n"));
        // Three bars with a ratio (each has a <title>), one n/a.
        assert_eq!(s.matches("<title>").count(), 3 + 3, "bars + targets");
        assert_eq!(s.matches(">n/a</text>").count(), 1);
        assert!(s.contains("Fake &quot;GPU&quot; &lt;x&gt; &amp; co"));
        assert!(!s.contains("<x>"));
        assert!(s.contains("1.042 MISS"));
        // The bar of the 0.967 row lies left of the 1.0 line, the others right of it.
        let one = {
            let x0 = label_width(&b) + 10.0;
            let sc = Scale::new(
                &[
                    1.01,
                    1.02,
                    1.0416666666666667,
                    1.01,
                    0.9666666666666667,
                    1.05,
                ],
                x0,
                x0 + PLOT_W,
            );
            sc.x(1.0)
        };
        assert!(
            s.contains(&format!("x1=\"{one:.1}\"")),
            "the 1.0 line at {one:.1}"
        );
        // Balanced tags for the elements used.
        for tag in ["rect", "text", "line", "title"] {
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
    fn markdown_has_the_table_and_the_provenance() {
        let b = Bench::from_json(SAMPLE).unwrap();
        let m = markdown(&b);
        assert!(m.contains("| metric | raw | safe | safe/raw | target | status |"));
        assert!(
            m.contains("| launch empty() [us/launch] | 2.500 | 2.525 | 1.010 | ≤ 1.02 | ok |"),
            "{m}"
        );
        assert!(
            m.contains("| 50.00 | 48.00 | 1.042 | ≤ 1.01 | **MISS** |"),
            "{m}"
        );
        assert!(
            m.contains("| cuEventRecord [ns/call] | 300.0 | 290.0 | 0.967 | - | - |"),
            "{m}"
        );
        assert!(
            m.contains("| x [ms] | 1.000 | n/a | n/a | ≤ 1.05 | n/a |"),
            "{m}"
        );
        assert!(m.contains("- Device: Fake \"GPU\" <x> & co (compute capability 9.0)"));
        assert!(m.contains("- Driver: CUDA 13.0"));
        assert!(m.contains("- Date: 2025-06-01T12:34:56Z"));
        assert!(m.contains(
            "`cargo run --release -p cuda-driver-examples --example bench -- --json /tmp/b.json`"
        ));
        assert!(m.contains("- Targets met: 1 of 3"), "{m}");
        assert!(m.contains("- pipes | and µs"));
        assert!(m.contains("![safe/raw per metric](bench.svg)"));
    }
}
