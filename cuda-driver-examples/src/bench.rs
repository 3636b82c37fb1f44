//! Bookkeeping for the benchmark (`examples/bench.rs`): the raw driver, this crate and
//! cudarc measured in the same rounds; per-round paired ratios and their median and spread;
//! a multi-modality flag; the printed table; the JSON file that `cargo xtask bench-report`
//! turns into `docs/bench.md`, `docs/bench.svg` and `docs/bench-sizes.svg`; the UTC date; and
//! the pseudo-random fill of the data the copies move.
//!
//! Nothing here touches the GPU; the tests run on every machine.
//!
//! # The statistic
//!
//! Every round measures each side once, back to back (the order rotating from round to
//! round), so the sides of one round share the host's state of the moment: its clock, the
//! other tenants' load, the mode a bimodal allocator happens to be in. The **paired ratio** of
//! a round is that round's side over that round's raw sample (a cost ratio: `side / raw` for
//! times, `raw / side` for bandwidths, so above 1 is slower than raw). A metric reports the
//! median of its paired ratios, with their 25th and 75th percentiles as the spread, and is
//! judged on that median. Each side's samples are also tested for several modes
//! ([`multimodal`]): two medians of samples from different modes can differ by 30 % while
//! every round's pair agrees within 1 %.
//!
//! # The JSON file
//!
//! One object, written by [`Report::to_json`] (format `"cuda-driver-bench 2"`):
//!
//! ```text
//! {
//!   "format": "cuda-driver-bench 2",
//!   "device": "NVIDIA H200", "compute_capability": "9.0", "driver_version": "13.0",
//!   "date_utc": "2025-06-01T12:34:56Z",
//!   "command": "cargo run --release -p cuda-driver-examples --example bench -- --json b.json",
//!   "quick": false, "rounds": 9,
//!   "sides": ["raw", "ours", "cudarc", "cudarc_2s"],
//!   "notes": ["how launches are timed", ...],
//!   "metrics": [
//!     {"name": "launch args4, checked [us/launch]", "unit": "us/launch",
//!      "higher_is_better": false, "target": 1.02, "sweep": "launch, checked", "size": null,
//!      "args": 4, "status": "ok",
//!      "raw": {"median": 2.01, "multimodal": false, "samples": [...]},
//!      "ours": {"median": 2.03, "multimodal": false, "samples": [...],
//!               "ratio": 1.004, "ratio_p25": 0.998, "ratio_p75": 1.011},
//!      "cudarc": {...}, "cudarc_2s": null},
//!     ...
//!   ]
//! }
//! ```
//!
//! A side that was not measured on a row is `null`. `target` is the largest accepted median
//! paired ratio of `ours`, or `null` (`status` `"-"`); `status` is `"ok"`, `"MISS"`, `"-"` or
//! `"n/a"` (ours not measured). `sweep` names the series a row belongs to (the rows of one
//! sweep differ in `size`, bytes, or `args`, the kernel's parameter count), so the report can
//! chart the ratio against the size.

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

/// The value of the JSON file's `"format"` key.
pub const FORMAT: &str = "cuda-driver-bench 2";

/// The sides a metric can have, in the JSON's order: the raw driver calls, this crate, cudarc
/// on one stream (its default stream), cudarc with two streams created (its multi-stream
/// mode, where every use of a buffer records events).
pub const SIDES: [&str; 4] = ["raw", "ours", "cudarc", "cudarc_2s"];

/// Index of the raw side in [`SIDES`] and [`Metric::samples`].
pub const RAW: usize = 0;
/// Index of this crate's side.
pub const OURS: usize = 1;
/// Index of cudarc on one stream.
pub const CUDARC: usize = 2;
/// Index of cudarc with two streams.
pub const CUDARC_2S: usize = 3;

/// The median of `samples` (the mean of the middle two for an even count); `None` when empty
/// or when a sample is not a number.
pub fn median(samples: &[f64]) -> Option<f64> {
    quantile(samples, 0.5)
}

/// The `q` quantile of `samples` (0 ≤ q ≤ 1), interpolated linearly between the closest
/// ranks (so `quantile(x, 0.5)` is the median); `None` when empty or when a sample is not a
/// number.
pub fn quantile(samples: &[f64], q: f64) -> Option<f64> {
    if samples.is_empty() || samples.iter().any(|x| x.is_nan()) || !(0.0..=1.0).contains(&q) {
        return None;
    }
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let pos = q * (v.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    let frac = pos - lo as f64;
    Some(if lo == hi {
        v[lo]
    } else {
        v[lo] + (v[hi] - v[lo]) * frac
    })
}

/// Whether `samples` fall into two or more separate clusters: sorted, split at their largest
/// gap, both parts hold at least two samples, and the gap is larger than
/// [`MODE_GAP_FACTOR`] times the wider part's range and than [`MODE_GAP_MIN`] of the median
/// (so the jitter of a tight metric is not a mode). One stray sample is an outlier, not a
/// mode.
pub fn multimodal(samples: &[f64]) -> bool {
    let Some(mid) = median(samples) else {
        return false;
    };
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n < 4 {
        return false;
    }
    // The largest gap with at least two samples on each side.
    let (at, gap) =
        (1..n - 2)
            .map(|i| (i, v[i + 1] - v[i]))
            .fold(
                (0, f64::NEG_INFINITY),
                |best, g| if g.1 > best.1 { g } else { best },
            );
    let (low, high) = v.split_at(at + 1);
    let range = |part: &[f64]| part[part.len() - 1] - part[0];
    let within = range(low).max(range(high));
    gap > MODE_GAP_FACTOR * within && gap > MODE_GAP_MIN * mid.abs()
}

/// How many times the wider cluster's range the gap between two modes must be.
pub const MODE_GAP_FACTOR: f64 = 2.0;
/// How large, relative to the median, the gap between two modes must be.
pub const MODE_GAP_MIN: f64 = 0.03;

/// The cost ratio of `side` against `raw` for one pair of samples: `side / raw` for times,
/// `raw / side` for bandwidths; above 1 the side is slower.
pub fn cost_ratio(raw: f64, side: f64, higher_is_better: bool) -> f64 {
    if higher_is_better {
        raw / side
    } else {
        side / raw
    }
}

/// The median paired ratio and its spread.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Paired {
    /// The median of the per-round ratios.
    pub median: f64,
    /// Their 25th percentile.
    pub p25: f64,
    /// Their 75th percentile.
    pub p75: f64,
}

/// The per-round cost ratios of `side` against `raw` (round `i` pairs `raw[i]` with
/// `side[i]`), and their median and quartiles; `None` when the counts differ, are zero, or a
/// ratio is not finite.
pub fn paired(raw: &[f64], side: &[f64], higher_is_better: bool) -> Option<Paired> {
    if raw.len() != side.len() || raw.is_empty() {
        return None;
    }
    let ratios: Vec<f64> = raw
        .iter()
        .zip(side)
        .map(|(&r, &s)| cost_ratio(r, s, higher_is_better))
        .collect();
    if ratios.iter().any(|r| !r.is_finite()) {
        return None;
    }
    Some(Paired {
        median: median(&ratios)?,
        p25: quantile(&ratios, 0.25)?,
        p75: quantile(&ratios, 0.75)?,
    })
}

/// One row of the benchmark: what was measured, each side's samples (one per round) and the
/// target.
#[derive(Debug, Clone)]
pub struct Metric {
    /// The row's name, with its unit in brackets: `"launch empty() [us/launch]"`.
    pub name: String,
    /// The unit of the samples: `"us/launch"`, `"GB/s"`, ...
    pub unit: &'static str,
    /// Bandwidths: a larger sample is better, and the ratio is `raw / side`.
    pub higher_is_better: bool,
    /// The largest accepted median paired ratio of ours, if any.
    pub target: Option<f64>,
    /// The sweep the row belongs to, if any.
    pub sweep: Option<String>,
    /// The sweep's size of this row, in bytes.
    pub size: Option<u64>,
    /// The sweep's kernel parameter count of this row.
    pub args: Option<u32>,
    /// One sample per round for each of [`SIDES`]; empty where the side was not measured.
    pub samples: [Vec<f64>; 4],
}

impl Metric {
    /// A row with no samples yet.
    pub fn new(
        name: String,
        unit: &'static str,
        higher_is_better: bool,
        target: Option<f64>,
    ) -> Metric {
        Metric {
            name,
            unit,
            higher_is_better,
            target,
            sweep: None,
            size: None,
            args: None,
            samples: Default::default(),
        }
    }

    /// The median of the raw samples.
    pub fn raw_median(&self) -> Option<f64> {
        median(&self.samples[RAW])
    }

    /// The median of side `i`'s samples.
    pub fn median(&self, i: usize) -> Option<f64> {
        median(&self.samples[i])
    }

    /// Side `i`'s paired ratio against raw (`None` for raw itself or an unmeasured side).
    pub fn paired(&self, i: usize) -> Option<Paired> {
        if i == RAW {
            return None;
        }
        paired(&self.samples[RAW], &self.samples[i], self.higher_is_better)
    }

    /// Our median paired ratio: above 1, this crate is slower than raw.
    pub fn ratio(&self) -> Option<f64> {
        self.paired(OURS).map(|p| p.median)
    }

    /// Whether side `i`'s samples are multi-modal.
    pub fn multimodal(&self, i: usize) -> bool {
        multimodal(&self.samples[i])
    }

    /// `"ok"` when our median paired ratio is within the target, `"MISS"` when not, `"-"`
    /// without a target, `"n/a"` when ours or raw is missing.
    pub fn status(&self) -> &'static str {
        match (self.ratio(), self.target) {
            (None, _) => "n/a",
            (Some(_), None) => "-",
            (Some(r), Some(t)) if r <= t => "ok",
            (Some(_), Some(_)) => "MISS",
        }
    }
}

/// A whole run: where and when it ran, how, and every metric.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The device's name (`cuDeviceGetName`).
    pub device: String,
    /// `"major.minor"`.
    pub compute_capability: String,
    /// The CUDA version the driver supports, `"major.minor"`.
    pub driver_version: String,
    /// When the run started, from [`utc_date`].
    pub date_utc: String,
    /// The command line that produced the numbers.
    pub command: String,
    /// Whether `--quick` shrank the counts.
    pub quick: bool,
    /// Samples per side and metric.
    pub rounds: usize,
    /// How things were measured, one sentence each.
    pub notes: Vec<String>,
    /// The rows, in order.
    pub metrics: Vec<Metric>,
}

/// A value as the table shows it: about four significant digits.
pub fn fmt_value(v: Option<f64>) -> String {
    match v {
        None => "n/a".to_string(),
        Some(v) if v.abs() >= 1000.0 => format!("{v:.0}"),
        Some(v) if v.abs() >= 100.0 => format!("{v:.1}"),
        Some(v) if v.abs() >= 10.0 => format!("{v:.2}"),
        Some(v) => format!("{v:.3}"),
    }
}

/// A ratio as the table shows it.
pub fn fmt_ratio(r: Option<f64>) -> String {
    r.map_or_else(|| "n/a".to_string(), |r| format!("{r:.3}"))
}

/// A paired ratio with its spread: `"1.004 (0.998-1.011)"`, or `"-"` when not measured.
pub fn fmt_paired(p: Option<Paired>) -> String {
    p.map_or_else(
        || "-".to_string(),
        |p| format!("{:.3} ({:.3}-{:.3})", p.median, p.p25, p.p75),
    )
}

/// A target as the table shows it: `"<= 1.02"`, or `"-"`.
pub fn fmt_target(t: Option<f64>) -> String {
    t.map_or_else(|| "-".to_string(), |t| format!("<= {t:.2}"))
}

impl Report {
    /// The table the benchmark prints: `metric | raw | ours | ours/raw | cudarc/raw |
    /// cudarc 2s/raw | target | status | modes`, the ratios as median paired ratios with
    /// their quartiles, `modes` naming the sides whose samples are multi-modal.
    pub fn table(&self) -> String {
        let header = [
            "metric",
            "raw",
            "ours",
            "ours/raw (p25-p75)",
            "cudarc/raw",
            "cudarc 2s/raw",
            "target",
            "status",
            "multi-modal",
        ];
        let rows: Vec<[String; 9]> = self
            .metrics
            .iter()
            .map(|m| {
                let modes: Vec<&str> = (0..SIDES.len())
                    .filter(|&i| m.multimodal(i))
                    .map(|i| SIDES[i])
                    .collect();
                [
                    m.name.clone(),
                    fmt_value(m.raw_median()),
                    fmt_value(m.median(OURS)),
                    fmt_paired(m.paired(OURS)),
                    fmt_paired(m.paired(CUDARC)),
                    fmt_paired(m.paired(CUDARC_2S)),
                    fmt_target(m.target),
                    m.status().to_string(),
                    if modes.is_empty() {
                        "-".to_string()
                    } else {
                        modes.join(",")
                    },
                ]
            })
            .collect();
        let mut width = header.map(str::len);
        for row in &rows {
            for (w, cell) in width.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let mut out = String::new();
        let line = |out: &mut String, cells: &[&str]| {
            for (i, (cell, w)) in cells.iter().zip(width).enumerate() {
                if i == 0 {
                    let _ = write!(out, "{cell:<w$}");
                } else {
                    let _ = write!(out, " | {cell:>w$}");
                }
            }
            out.push('\n');
        };
        line(&mut out, &header);
        let rule: Vec<String> = width.iter().map(|&w| "-".repeat(w)).collect();
        let rule: Vec<&str> = rule.iter().map(String::as_str).collect();
        line(&mut out, &rule);
        for row in &rows {
            let cells: Vec<&str> = row.iter().map(String::as_str).collect();
            line(&mut out, &cells);
        }
        out
    }

    /// The JSON file (see the [module documentation](self)).
    pub fn to_json(&self) -> String {
        let mut o = String::new();
        o.push_str("{\n");
        let _ = writeln!(o, "  \"format\": {},", json_str(FORMAT));
        let _ = writeln!(o, "  \"device\": {},", json_str(&self.device));
        let _ = writeln!(
            o,
            "  \"compute_capability\": {},",
            json_str(&self.compute_capability)
        );
        let _ = writeln!(
            o,
            "  \"driver_version\": {},",
            json_str(&self.driver_version)
        );
        let _ = writeln!(o, "  \"date_utc\": {},", json_str(&self.date_utc));
        let _ = writeln!(o, "  \"command\": {},", json_str(&self.command));
        let _ = writeln!(o, "  \"quick\": {},", self.quick);
        let _ = writeln!(o, "  \"rounds\": {},", self.rounds);
        let sides: Vec<String> = SIDES.iter().map(|s| json_str(s)).collect();
        let _ = writeln!(o, "  \"sides\": [{}],", sides.join(", "));
        o.push_str("  \"notes\": [");
        for (i, n) in self.notes.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            let _ = write!(o, "{sep}\n    {}", json_str(n));
        }
        o.push_str("\n  ],\n  \"metrics\": [");
        for (i, m) in self.metrics.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            let _ = write!(
                o,
                "{sep}\n    {{\"name\": {}, \"unit\": {}, \"higher_is_better\": {}, \
                 \"target\": {}, \"sweep\": {}, \"size\": {}, \"args\": {}, \"status\": {}",
                json_str(&m.name),
                json_str(m.unit),
                m.higher_is_better,
                json_num(m.target),
                m.sweep.as_deref().map_or("null".to_string(), json_str),
                m.size.map_or("null".to_string(), |s| s.to_string()),
                m.args.map_or("null".to_string(), |a| a.to_string()),
                json_str(m.status()),
            );
            for (s, name) in SIDES.iter().enumerate() {
                if m.samples[s].is_empty() {
                    let _ = write!(o, ",\n      {}: null", json_str(name));
                    continue;
                }
                let _ = write!(
                    o,
                    ",\n      {}: {{\"median\": {}, \"multimodal\": {}",
                    json_str(name),
                    json_num(m.median(s)),
                    m.multimodal(s)
                );
                if let Some(p) = m.paired(s) {
                    let _ = write!(
                        o,
                        ", \"ratio\": {}, \"ratio_p25\": {}, \"ratio_p75\": {}",
                        json_num(Some(p.median)),
                        json_num(Some(p.p25)),
                        json_num(Some(p.p75))
                    );
                }
                let _ = write!(o, ", \"samples\": {}}}", json_nums(&m.samples[s]));
            }
            o.push('}');
        }
        o.push_str("\n  ]\n}\n");
        o
    }
}

/// A JSON string literal.
pub fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// A JSON number, or `null` for `None` and for values JSON cannot hold (NaN, infinities).
pub fn json_num(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v}"),
        _ => "null".to_string(),
    }
}

fn json_nums(v: &[f64]) -> String {
    let items: Vec<String> = v.iter().map(|&x| json_num(Some(x))).collect();
    format!("[{}]", items.join(", "))
}

/// `time` as an ISO 8601 UTC date, `"YYYY-MM-DDTHH:MM:SSZ"` (whole seconds; times before
/// 1970 are shown as the epoch).
pub fn utc_date(time: SystemTime) -> String {
    let secs = time
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The proleptic Gregorian date of `days` since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11], March first
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// A small, fast pseudo-random generator (xorshift64*) for filling the copies' data with
/// values that are never zero, so that a copy that did not happen cannot pass the check.
#[derive(Debug, Clone)]
pub struct XorShift(u64);

impl XorShift {
    /// A generator from `seed` (any value; 0 is replaced).
    pub fn new(seed: u64) -> XorShift {
        XorShift(if seed == 0 {
            0x9E37_79B9_7F4A_7C15
        } else {
            seed
        })
    }

    /// The next 64 pseudo-random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Fills `out` with pseudo-random words, none of them zero.
    pub fn fill_nonzero_u32(&mut self, out: &mut [u32]) {
        let mut pairs = out.chunks_exact_mut(2);
        for pair in &mut pairs {
            let x = self.next_u64();
            pair[0] = (x as u32) | 1;
            pair[1] = ((x >> 32) as u32) | 0x100;
        }
        for w in pairs.into_remainder() {
            *w = (self.next_u64() as u32) | 1;
        }
    }
}

/// The index of the first element where `a` and `b` differ (or where one ends), if any.
pub fn first_difference<T: PartialEq>(a: &[T], b: &[T]) -> Option<usize> {
    if a.len() != b.len() {
        return Some(a.len().min(b.len()));
    }
    // Compare in blocks first (fast path), then find the element.
    const BLOCK: usize = 4096;
    for (i, (x, y)) in a.chunks(BLOCK).zip(b.chunks(BLOCK)).enumerate() {
        if x != y {
            let j = x.iter().zip(y).position(|(p, q)| p != q).unwrap_or(0);
            return Some(i * BLOCK + j);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[7.0]), Some(7.0));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[1.0, f64::NAN]), None);
    }

    #[test]
    fn quantiles_interpolate() {
        let v = [4.0, 1.0, 3.0, 2.0, 5.0];
        assert_eq!(quantile(&v, 0.0), Some(1.0));
        assert_eq!(quantile(&v, 0.25), Some(2.0));
        assert_eq!(quantile(&v, 1.0), Some(5.0));
        assert_eq!(quantile(&[1.0, 2.0], 0.25), Some(1.25));
        assert_eq!(quantile(&v, 1.5), None);
    }

    fn metric(higher: bool, raw: &[f64], ours: &[f64], target: Option<f64>) -> Metric {
        let mut m = Metric::new("m [x]".into(), "x", higher, target);
        m.samples[RAW] = raw.to_vec();
        m.samples[OURS] = ours.to_vec();
        m
    }

    #[test]
    fn ratio_is_the_median_of_paired_cost_ratios() {
        // Times: per round 1.1, 1.1, 0.1/9 -> median 1.1; the medians of the sides would
        // give 2.2 / 2.0 too, but the pairing is what counts.
        let m = metric(false, &[2.0, 2.0, 9.0], &[2.2, 2.2, 0.1], Some(1.02));
        assert!((m.ratio().unwrap() - 1.1).abs() < 1e-12);
        assert_eq!(m.status(), "MISS");
        // Bandwidths: ours slower means fewer GB/s, ratio above 1 too.
        let m = metric(true, &[50.0], &[49.0], Some(1.01));
        assert!((m.ratio().unwrap() - 50.0 / 49.0).abs() < 1e-12);
        assert_eq!(m.status(), "MISS");
        let m = metric(true, &[50.0], &[50.0], Some(1.01));
        assert_eq!(m.status(), "ok");
        assert_eq!(metric(false, &[1.0], &[1.0], None).status(), "-");
        assert_eq!(metric(false, &[1.0], &[], Some(1.0)).status(), "n/a");
        // Unequal counts cannot be paired.
        assert_eq!(
            metric(false, &[1.0, 2.0], &[1.0], Some(1.0)).status(),
            "n/a"
        );
    }

    /// The issue's allocate-and-free row on a shared H200: both sides bimodal (69-72 us and
    /// 90-97 us), the medians in different modes (safe/raw of the medians 1.277, a false
    /// MISS), while each round's pair agrees.
    #[test]
    fn paired_ratio_survives_the_bimodal_host() {
        // Four rounds in the fast mode, three in the slow one; in round 2 the host switched
        // between the raw and the safe sample. Raw's median is in the fast mode, ours in the
        // slow one: the ratio of the medians is about 1.28.
        let raw = [69.5, 70.2, 71.0, 69.8, 90.5, 92.0, 96.1];
        let ours = [70.1, 70.9, 91.4, 70.0, 91.2, 92.5, 96.9];
        let m = metric(false, &raw, &ours, Some(1.05));
        let medians = m.median(OURS).unwrap() / m.raw_median().unwrap();
        assert!(
            medians > 1.25,
            "the medians fall in different modes: {medians}"
        );
        let p = m.paired(OURS).unwrap();
        assert!(p.median > 1.0 && p.median < 1.01, "{p:?}");
        assert!(
            p.p25 <= p.median && p.median <= p.p75 && p.p75 < 1.01,
            "{p:?}"
        );
        assert_eq!(m.status(), "ok");
        assert!(m.multimodal(RAW) && m.multimodal(OURS));
    }

    #[test]
    fn multimodality_is_a_gap_between_clusters() {
        // The issue's two modes.
        assert!(multimodal(&[69.0, 70.5, 72.0, 90.0, 93.0, 97.0]));
        assert!(multimodal(&[72.0, 90.0, 69.0, 97.0, 70.0, 95.0, 71.0]));
        // One mode with jitter.
        assert!(!multimodal(&[10.0, 10.1, 10.2, 10.5, 10.3, 10.4, 10.2]));
        assert!(!multimodal(&[
            2.01, 2.02, 2.00, 2.05, 2.03, 2.04, 2.01, 2.02, 2.03
        ]));
        // A single outlier is not a mode.
        assert!(!multimodal(&[10.0, 10.1, 10.2, 10.1, 30.0]));
        // Two tight clusters, but their gap is tiny relative to the value: jitter.
        assert!(!multimodal(&[1.000, 1.0001, 1.0002, 1.005, 1.0051, 1.0052]));
        // Too few samples, or none.
        assert!(!multimodal(&[1.0, 2.0, 3.0]));
        assert!(!multimodal(&[]));
        // Evenly spread samples have no gap larger than the clusters.
        let even: Vec<f64> = (0..9).map(|i| 10.0 + i as f64).collect();
        assert!(!multimodal(&even));
    }

    #[test]
    fn utc_date_formats_known_instants() {
        assert_eq!(utc_date(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let at = |s: u64| utc_date(UNIX_EPOCH + Duration::from_secs(s));
        // `date -u -d @951782400`: the leap day of 2000.
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(at(4_107_542_399), "2100-02-28T23:59:59Z");
        assert_eq!(at(4_107_542_400), "2100-03-01T00:00:00Z");
        assert_eq!(at(1_709_164_800), "2024-02-29T00:00:00Z");
        assert_eq!(at(1_735_689_599), "2024-12-31T23:59:59Z");
    }

    #[test]
    fn json_strings_and_numbers() {
        assert_eq!(json_str("a\"b\\c\nd\u{1}"), r#""a\"b\\c\nd\u0001""#);
        assert_eq!(json_num(Some(1.5)), "1.5");
        assert_eq!(json_num(Some(1e-7)), "0.0000001");
        assert_eq!(json_num(Some(f64::NAN)), "null");
        assert_eq!(json_num(None), "null");
    }

    #[test]
    fn report_json_has_every_key() {
        let mut swept = metric(true, &[10.0, 11.0], &[10.0, 10.0], None);
        swept.sweep = Some("copy HtoD".into());
        swept.size = Some(4096);
        swept.samples[CUDARC] = vec![5.0, 5.5];
        let mut args = metric(false, &[1.0, 2.0, 3.0], &[2.0, 2.0, 2.0], Some(1.02));
        args.args = Some(16);
        let r = Report {
            device: "Fake GPU".into(),
            compute_capability: "9.0".into(),
            driver_version: "13.0".into(),
            date_utc: "2025-01-01T00:00:00Z".into(),
            command: "bench".into(),
            quick: true,
            rounds: 3,
            notes: vec!["one".into(), "two".into()],
            metrics: vec![args, swept, metric(true, &[10.0], &[], None)],
        };
        let j = r.to_json();
        for key in [
            "\"format\": \"cuda-driver-bench 2\"",
            "\"device\": \"Fake GPU\"",
            "\"quick\": true",
            "\"rounds\": 3",
            "\"sides\": [\"raw\", \"ours\", \"cudarc\", \"cudarc_2s\"]",
            "\"args\": 16",
            "\"size\": 4096",
            "\"sweep\": \"copy HtoD\"",
            "\"ratio\": 1,",
            "\"ours\": null",
            "\"cudarc_2s\": null",
            "\"status\": \"n/a\"",
            "\"samples\": [1, 2, 3]",
            "\"cudarc\": {\"median\": 5.25, \"multimodal\": false, \"ratio\": 2, \"ratio_p25\": 2,",
        ] {
            assert!(j.contains(key), "{key} missing from\n{j}");
        }
        // Balanced braces and brackets (no string holds one here).
        assert_eq!(j.matches('{').count(), j.matches('}').count());
        assert_eq!(j.matches('[').count(), j.matches(']').count());
        let t = r.table();
        assert!(t.starts_with("metric"), "{t}");
        assert_eq!(t.lines().count(), 5, "{t}");
        assert!(t.lines().all(|l| l.matches(" | ").count() == 8), "{t}");
        assert!(t.contains("1.000 (0.833-1.500)"), "{t}");
    }

    #[test]
    fn fill_is_nonzero_and_differs() {
        let mut v = vec![0u32; 1001];
        XorShift::new(1).fill_nonzero_u32(&mut v);
        assert!(v.iter().all(|&x| x != 0));
        let mut w = vec![0u32; 1001];
        XorShift::new(2).fill_nonzero_u32(&mut w);
        assert_ne!(v, w);
        assert_eq!(first_difference(&v, &v), None);
        let mut u = v.clone();
        u[777] ^= 4;
        assert_eq!(first_difference(&v, &u), Some(777));
        assert_eq!(first_difference(&v[..5], &v[..6]), Some(5));
    }
}
