//! Human-readable results: a compact table for the terminal and an HTML
//! report with SVG plots (drawn with plotters), both made from the
//! `BenchReport` alone so a saved `--json` file can be rendered again later.

mod axis;
mod charts;
mod draw;
mod headline;
mod html;
mod papers;
mod text;
mod timeline;

use std::borrow::Cow;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::model::{BenchReport, RunRecord};
use crate::stats::{latency_stats, points_of, summarize, targets_of, LatencyStats, Point};

pub use text::terminal_summary;

/// Writes `dir/index.html` and the SVG plots it shows next to it, creating
/// `dir`; returns the path of the index. The page is self-contained apart
/// from those plot files: no scripts, fonts or other external resources.
pub fn write_report(dir: &Path, report: &BenchReport) -> io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let report = summarized(report);
    let plots = charts::plots(&report);
    for plot in &plots {
        std::fs::write(dir.join(&plot.file), &plot.svg)?;
    }
    let index = dir.join("index.html");
    std::fs::write(&index, html::page(&report, &plots))?;
    Ok(index)
}

/// A plot written as `file` and shown under `title`.
pub(crate) struct Plot {
    pub file: String,
    pub title: String,
    pub svg: String,
}

/// The report with `summary` and `ratios` filled, for reports saved before
/// they were computed (or built by hand).
pub(crate) fn summarized(report: &BenchReport) -> Cow<'_, BenchReport> {
    if report.summary.is_empty() && report.runs.iter().any(|r| r.ok) {
        let mut owned = report.clone();
        summarize(&mut owned);
        Cow::Owned(owned)
    } else {
        Cow::Borrowed(report)
    }
}

/// Escapes text for XML and HTML, attributes included: target names and
/// error messages are user input.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters are not allowed in XML 1.0.
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r') => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Text for plotters, which escapes markup itself but passes control
/// characters through, and XML 1.0 allows none of them.
pub(crate) fn sanitize(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { '\u{FFFD}' } else { c }).collect()
}

/// A number with about three significant digits, enough to compare runs
/// whose spread is rarely below a percent.
pub(crate) fn num(x: f64) -> String {
    let a = x.abs();
    if !x.is_finite() {
        return format!("{x}");
    }
    if a == 0.0 {
        return "0".into();
    }
    let decimals = if a >= 100.0 { 0 } else { (2.0 - a.log10().floor()).clamp(0.0, 9.0) as usize };
    let s = format!("{x:.decimals$}");
    // "4 KiB" and "1.5 ms" read better than "4.00 KiB" and "1.50 ms".
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Bytes in binary units, as the workloads' sizes are powers of two.
pub(crate) fn bytes(x: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = x;
    let mut i = 0;
    while v.abs() >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    format!("{} {}", num(v), UNITS[i])
}

/// Microseconds in the unit that keeps the number readable.
pub(crate) fn micros(us: f64) -> String {
    if us.abs() >= 1e6 {
        format!("{} s", num(us / 1e6))
    } else if us.abs() >= 1e3 {
        format!("{} ms", num(us / 1e3))
    } else {
        format!("{} µs", num(us))
    }
}

/// How a point coordinate is shown and plotted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Unit {
    Plain,
    Bytes,
    Millis,
    Micros,
    Percent,
    /// Operations per second: spans orders of magnitude between targets
    /// (Chen 2015 Fig. 7's 172x), so read in decades.
    Rate,
}

impl Unit {
    pub fn fmt(self, v: f64) -> String {
        match self {
            Unit::Plain | Unit::Rate => num(v),
            Unit::Bytes => bytes(v),
            Unit::Millis => micros(v * 1e3),
            Unit::Micros => micros(v),
            Unit::Percent => format!("{} %", num(v)),
        }
    }

    /// Whether a log axis of this unit ticks at powers of ten; sizes and
    /// counts, swept in powers of two, tick at those.
    pub fn in_decades(self) -> bool {
        matches!(self, Unit::Micros | Unit::Millis | Unit::Percent | Unit::Rate)
    }
}

/// The unit of a sweep coordinate and whether it is swept in powers (so
/// plotted on a log axis).
pub(crate) fn coord_unit(name: &str) -> (Unit, bool) {
    match name {
        "io_size" | "size" | "file_size" | "block_size" => (Unit::Bytes, true),
        "threads" | "clients" | "files" | "nconnect" => (Unit::Plain, true),
        n if n.ends_with("_ms") => (Unit::Millis, false),
        n if n.ends_with("_us") => (Unit::Micros, false),
        _ => (Unit::Plain, false),
    }
}

pub(crate) fn coord_value(name: &str, v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => coord_unit(name).0.fmt(n.as_f64().unwrap_or(f64::NAN)),
        other => other.to_string(),
    }
}

/// "io_size=4 KiB, threads=8"; "all" for the single point of a workload
/// that sweeps nothing.
pub(crate) fn point_label(point: &Point) -> String {
    if point.is_empty() {
        return "all".into();
    }
    point.iter().map(|(k, v)| format!("{k}={}", coord_value(k, v))).collect::<Vec<_>>().join(", ")
}

/// The per-call latencies of a seqwrite run, in µs.
pub(crate) fn latencies(run: &RunRecord) -> Option<Vec<f64>> {
    let arr = run.metrics.get("call_latency_us")?.as_array()?;
    Some(arr.iter().filter_map(Value::as_f64).collect())
}

/// The first successful run of `target` at `point`: op-stats tables and the
/// latency trace show one run as it happened rather than an average.
pub(crate) fn first_ok<'a>(report: &'a BenchReport, target: &str, point: &Point) -> Option<&'a RunRecord> {
    report.runs.iter().find(|r| r.ok && r.target == target && &r.point == point)
}

pub(crate) fn has_latencies(report: &BenchReport) -> bool {
    report.runs.iter().any(|r| r.ok && latencies(r).is_some_and(|l| !l.is_empty()))
}

/// Write call latency pooled over the successful runs of each target at
/// each point.
pub(crate) fn latency_rows(report: &BenchReport) -> Vec<(String, Point, LatencyStats)> {
    let mut out = Vec::new();
    for target in targets_of(report) {
        for point in points_of(report) {
            let runs = report.runs.iter().filter(|r| r.ok && r.target == target && r.point == point);
            let all: Vec<f64> = runs.filter_map(latencies).flatten().collect();
            if !all.is_empty() {
                out.push((target.clone(), point, latency_stats(&all)));
            }
        }
    }
    out
}

/// One method of the copy workload at one target and point, over the
/// successful runs: how many ran it, its mean seconds and MB/s, and "ok"
/// or why the target could not.
pub(crate) struct CopyRow {
    pub target: String,
    pub point: Point,
    pub method: &'static str,
    pub runs: usize,
    pub secs: Option<f64>,
    pub mbps: Option<f64>,
    /// "ok", "not supported", "in some runs" (supported in only some of
    /// them), "no result".
    pub status: &'static str,
    /// Why the target could not, as a run gave it.
    pub reason: Option<String>,
}

/// The copy workload's methods side by side; empty for other workloads.
pub(crate) fn copy_rows(report: &BenchReport) -> Vec<CopyRow> {
    use crate::workloads::copy::Method;
    let mut out = Vec::new();
    if report.workload != "copy" {
        return out;
    }
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    for target in targets_of(report) {
        for point in points_of(report) {
            let runs: Vec<&RunRecord> =
                report.runs.iter().filter(|r| r.ok && r.target == target && r.point == point).collect();
            if runs.is_empty() {
                continue;
            }
            for m in Method::ALL {
                let key = m.key();
                let secs: Vec<f64> = runs.iter().filter_map(|r| r.metric(&format!("{key}_s"))).collect();
                let mbps: Vec<f64> = runs.iter().filter_map(|r| r.metric(&format!("{key}_mbps"))).collect();
                let why = runs.iter().find_map(|r| r.metrics.get(&format!("{key}_reason")).and_then(Value::as_str));
                let status = match (secs.len(), why) {
                    (n, _) if n == runs.len() => "ok",
                    (0, Some(_)) => "not supported",
                    (_, Some(_)) => "in some runs",
                    (_, None) => "no result",
                };
                out.push(CopyRow {
                    target: target.clone(),
                    point: point.clone(),
                    method: m.name(),
                    runs: secs.len(),
                    secs: mean(&secs),
                    mbps: mean(&mbps),
                    status,
                    reason: why.map(str::to_string),
                });
            }
        }
    }
    out
}

/// The copy workload's goal: COPY of a 1 GiB file at least this many
/// times faster than read+write through nfsx's client.
pub(crate) const COPY_SPEEDUP_GOAL: f64 = 5.0;

pub(crate) fn ratio_of(report: &BenchReport, target: &str, point: &Point, metric: &str) -> Option<f64> {
    report.ratios.iter().find(|r| r.target == target && &r.point == point && r.metric == metric).map(|r| r.ratio)
}

#[cfg(test)]
mod chart_tests;
#[cfg(test)]
mod tests;
