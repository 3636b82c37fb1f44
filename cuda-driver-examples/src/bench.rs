//! Bookkeeping for the raw-versus-safe benchmark (`examples/bench.rs`): samples and their
//! medians, the ratio and its target, the printed table, the JSON file that
//! `cargo xtask bench-report` turns into `docs/bench.md` and `docs/bench.svg`, the UTC date,
//! and the pseudo-random fill of the data the copies move.
//!
//! Nothing here touches the GPU; the tests run on every machine.
//!
//! # The JSON file
//!
//! One object, written by [`Report::to_json`]:
//!
//! ```text
//! {
//!   "format": "cuda-driver-bench 1",
//!   "device": "NVIDIA H200", "compute_capability": "9.0", "driver_version": "13.0",
//!   "date_utc": "2025-06-01T12:34:56Z",
//!   "command": "cargo run --release -p cuda-driver-examples --example bench -- --json b.json",
//!   "quick": false, "rounds": 7,
//!   "notes": ["how launches are timed", ...],
//!   "metrics": [
//!     {"name": "launch empty() [us/launch]", "unit": "us/launch", "higher_is_better": false,
//!      "raw": 2.01, "safe": 2.03, "ratio": 1.00995, "target": 1.02, "status": "ok",
//!      "raw_samples": [...], "safe_samples": [...]},
//!     ...
//!   ]
//! }
//! ```
//!
//! `raw` and `safe` are the medians of the samples (one sample per round); `ratio` is always
//! the safe side's cost over the raw side's (`safe / raw` for times, `raw / safe` for
//! bandwidths), so above 1 means the safe side is slower; `target` is the largest ratio
//! accepted, or `null` where none is set (`status` is then `"-"`); a side that could not be
//! measured is `null` (`status` `"n/a"`).

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

/// The value of the JSON file's `"format"` key.
pub const FORMAT: &str = "cuda-driver-bench 1";

/// The median of `samples` (the mean of the middle two for an even count); `None` when empty
/// or when a sample is not a number.
pub fn median(samples: &[f64]) -> Option<f64> {
    if samples.is_empty() || samples.iter().any(|x| x.is_nan()) {
        return None;
    }
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// One row of the benchmark: what was measured, the samples of each side and the target.
#[derive(Debug, Clone)]
pub struct Metric {
    /// The row's name, with its unit in brackets: `"launch empty() [us/launch]"`.
    pub name: String,
    /// The unit of the samples: `"us/launch"`, `"GB/s"`, ...
    pub unit: &'static str,
    /// Bandwidths: a larger sample is better, and the ratio is `raw / safe`.
    pub higher_is_better: bool,
    /// The largest accepted ratio, if any.
    pub target: Option<f64>,
    /// One sample per round, through `cuda_driver_sys`.
    pub raw: Vec<f64>,
    /// One sample per round, through `cuda_driver`; empty when the safe API is missing.
    pub safe: Vec<f64>,
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
            raw: Vec::new(),
            safe: Vec::new(),
        }
    }

    /// The median of the raw samples.
    pub fn raw_median(&self) -> Option<f64> {
        median(&self.raw)
    }

    /// The median of the safe samples.
    pub fn safe_median(&self) -> Option<f64> {
        median(&self.safe)
    }

    /// The safe side's cost over the raw side's: `safe / raw` for times, `raw / safe` for
    /// bandwidths (the ratio of the times the same bytes take). Above 1: the safe side is
    /// slower.
    pub fn ratio(&self) -> Option<f64> {
        let (raw, safe) = (self.raw_median()?, self.safe_median()?);
        let r = if self.higher_is_better {
            raw / safe
        } else {
            safe / raw
        };
        r.is_finite().then_some(r)
    }

    /// `"ok"` when the ratio is within the target, `"MISS"` when not, `"-"` without a target,
    /// `"n/a"` when a side is missing.
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

/// A target as the table shows it: `"<= 1.02"`, or `"-"`.
pub fn fmt_target(t: Option<f64>) -> String {
    t.map_or_else(|| "-".to_string(), |t| format!("<= {t:.2}"))
}

impl Report {
    /// The table the benchmark prints: `metric | raw | safe | safe/raw | target | status`.
    pub fn table(&self) -> String {
        let header = ["metric", "raw", "safe", "safe/raw", "target", "status"];
        let rows: Vec<[String; 6]> = self
            .metrics
            .iter()
            .map(|m| {
                [
                    m.name.clone(),
                    fmt_value(m.raw_median()),
                    fmt_value(m.safe_median()),
                    fmt_ratio(m.ratio()),
                    fmt_target(m.target),
                    m.status().to_string(),
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
                let sep = if i == 0 { "" } else { " | " };
                if i == 0 {
                    let _ = write!(out, "{sep}{cell:<w$}");
                } else {
                    let _ = write!(out, "{sep}{cell:>w$}");
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
                 \"raw\": {}, \"safe\": {}, \"ratio\": {}, \"target\": {}, \"status\": {}, \
                 \"raw_samples\": {}, \"safe_samples\": {}}}",
                json_str(&m.name),
                json_str(m.unit),
                m.higher_is_better,
                json_num(m.raw_median()),
                json_num(m.safe_median()),
                json_num(m.ratio()),
                json_num(m.target),
                json_str(m.status()),
                json_nums(&m.raw),
                json_nums(&m.safe),
            );
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

    fn metric(higher: bool, raw: &[f64], safe: &[f64], target: Option<f64>) -> Metric {
        let mut m = Metric::new("m [x]".into(), "x", higher, target);
        m.raw = raw.to_vec();
        m.safe = safe.to_vec();
        m
    }

    #[test]
    fn ratio_is_safe_cost_over_raw_cost() {
        // Times: safe slower means a larger time, ratio above 1.
        let m = metric(false, &[2.0, 2.0, 9.0], &[2.2, 2.2, 0.1], Some(1.02));
        assert!((m.ratio().unwrap() - 1.1).abs() < 1e-12);
        assert_eq!(m.status(), "MISS");
        // Bandwidths: safe slower means fewer GB/s, ratio above 1 too.
        let m = metric(true, &[50.0], &[49.0], Some(1.01));
        assert!((m.ratio().unwrap() - 50.0 / 49.0).abs() < 1e-12);
        assert_eq!(m.status(), "MISS");
        let m = metric(true, &[50.0], &[50.0], Some(1.01));
        assert_eq!(m.status(), "ok");
        assert_eq!(metric(false, &[1.0], &[1.0], None).status(), "-");
        assert_eq!(metric(false, &[1.0], &[], Some(1.0)).status(), "n/a");
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
        let r = Report {
            device: "Fake GPU".into(),
            compute_capability: "9.0".into(),
            driver_version: "13.0".into(),
            date_utc: "2025-01-01T00:00:00Z".into(),
            command: "bench".into(),
            quick: true,
            rounds: 3,
            notes: vec!["one".into(), "two".into()],
            metrics: vec![
                metric(false, &[1.0, 2.0, 3.0], &[2.0, 2.0, 2.0], Some(1.02)),
                metric(true, &[10.0], &[], None),
            ],
        };
        let j = r.to_json();
        for key in [
            "\"format\": \"cuda-driver-bench 1\"",
            "\"device\": \"Fake GPU\"",
            "\"quick\": true",
            "\"rounds\": 3",
            "\"ratio\": 1,",
            "\"safe\": null",
            "\"status\": \"n/a\"",
            "\"raw_samples\": [1, 2, 3]",
        ] {
            assert!(j.contains(key), "{key} missing from\n{j}");
        }
        let t = r.table();
        assert!(t.starts_with("metric"), "{t}");
        assert_eq!(t.lines().count(), 4, "{t}");
        assert!(t.lines().all(|l| l.matches(" | ").count() == 5), "{t}");
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
