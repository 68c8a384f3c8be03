//! Which plots a report gets, chosen from the data it holds, and what each
//! shows: seqwrite's per-call latency trace and histogram, read-small's
//! files/s over time, a metric against a swept coordinate, and bar charts
//! otherwise. `draw` gives them their frame and legend.

use plotters::prelude::*;
use serde_json::Value;

use super::axis::Axis;
use super::draw::{colour, line, note, Chart, Drawn, Figure, Mark};
use super::{first_ok, has_latencies, latencies, point_label, timeline, Plot, Unit};
use crate::model::BenchReport;
use crate::stats::{decade_range, log_histogram, points_of, targets_of, Point, Summary};

/// Pixel columns of the latency trace: a trace is thinned to two calls per
/// column (see `decimate`).
const TRACE_COLUMNS: usize = 640;
/// The latency the trace marks: a write call slower than this stalled.
const STALL_US: f64 = 1000.0;
/// Histogram buckets per decade of latency.
const BUCKETS_PER_DECADE: usize = 10;
/// Series of a sweep are moved apart by this share of the x axis each, so
/// their error bars do not hide each other.
const NUDGE: f64 = 0.006;
/// Width of a whisker, as a share of a group of bars.
const WHISKER: f64 = 0.04;
/// The bars of a group fill this share of it, the rest parts the groups.
const GROUP_FILL: f64 = 0.8;
/// A bar fills this share of its slot, leaving a hairline between bars.
const BAR_FILL: f64 = 0.92;
const MARKER_PX: u32 = 6;
/// Traces of several targets overlap: thin and a little transparent, so
/// the one underneath still shows.
const TRACE_PX: u32 = 1;
const TRACE_OPACITY: f64 = 0.8;
const STEP_PX: u32 = 2;
const STEP_OPACITY: f64 = 0.9;
const SWEEP_PX: u32 = 2;
/// Dash and gap of the stall threshold's line, in pixels.
const STALL_DASH: u32 = 4;
/// The share axis always reaches all calls.
const ALL_CALLS_PCT: f64 = 100.0;

pub(crate) fn plots(report: &BenchReport) -> Vec<Plot> {
    let mut out = Vec::new();
    let lat = has_latencies(report);
    if lat {
        out.extend(latency_trace(report));
        out.extend(latency_histogram(report));
    }
    out.extend(timeline::files_over_time(report));
    let swept = swept_coords(report);
    for coord in &swept {
        for metric in &report.metrics {
            out.extend(sweep_chart(report, coord, metric));
        }
    }
    if swept.is_empty() {
        // seqwrite's and copy's rates side by side in one chart; copy's
        // speedup in its own.
        let copy = report.workload == "copy";
        match throughput_bars(report).filter(|_| lat || copy) {
            Some(plot) => {
                out.push(plot);
                for metric in report.metrics.iter().filter(|m| copy && !m.ends_with("_mbps")) {
                    out.extend(metric_bars(report, metric));
                }
            }
            None => {
                for metric in &report.metrics {
                    out.extend(metric_bars(report, metric));
                }
            }
        }
    }
    out
}

fn slug(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

/// Per-call latencies of each target's first successful run at each point:
/// a real run, so stalls show where they happened.
fn trace_series(report: &BenchReport, first_only: bool) -> Vec<(String, Vec<f64>)> {
    let points = points_of(report);
    let mut out = Vec::new();
    for target in targets_of(report) {
        for point in &points {
            let lat: Vec<f64> = if first_only {
                first_ok(report, &target, point).and_then(latencies).unwrap_or_default()
            } else {
                let runs = report.runs.iter().filter(|r| r.ok && r.target == target && &r.point == point);
                runs.filter_map(latencies).flatten().collect()
            };
            if !lat.is_empty() {
                let name = if points.len() > 1 { format!("{target}, {}", point_label(point)) } else { target.clone() };
                out.push((name, lat));
            }
        }
    }
    out
}

fn latency_trace(report: &BenchReport) -> Option<Plot> {
    let series = trace_series(report, true);
    let longest = series.iter().map(|(_, l)| l.len()).max()?;
    let all = series.iter().flat_map(|(_, l)| l.iter().copied());
    let title = "Latency of each write call (first successful run)";
    let names: Vec<String> = series.iter().map(|(n, _)| n.clone()).collect();
    let figure = Figure {
        title,
        x: Axis::linear([0.0, longest as f64], Unit::Plain, "write call", true),
        y: Axis::log(all.chain([STALL_US]), Unit::Micros, "latency of the call"),
        legend: &names,
        mark: Mark::Line,
        groups: None,
    };
    let svg = figure.render(|chart| {
        for (i, (_, lat)) in series.iter().enumerate() {
            let pts = decimate(lat, TRACE_COLUMNS).into_iter().map(|(k, v)| (k as f64, v)).collect();
            line(chart, i, pts, TRACE_PX, TRACE_OPACITY)?;
        }
        let x = chart.x_range();
        let stall = vec![(x.start, STALL_US), (x.end, STALL_US)];
        chart.draw_series(DashedLineSeries::new(stall, STALL_DASH, STALL_DASH, BLACK.stroke_width(1)))?;
        note(chart, &Unit::Micros.fmt(STALL_US), (x.end, STALL_US))
    })?;
    Some(Plot { file: "latency-trace.svg".into(), title: title.into(), svg })
}

/// At most two points per pixel column, the smallest and the largest, so a
/// trace of a million calls stays small yet every spike is still drawn.
fn decimate(v: &[f64], cols: usize) -> Vec<(usize, f64)> {
    if v.len() <= 2 * cols {
        return v.iter().copied().enumerate().collect();
    }
    let mut out = Vec::with_capacity(2 * cols);
    for c in 0..cols {
        let (a, b) = (c * v.len() / cols, ((c + 1) * v.len() / cols).max(c * v.len() / cols + 1));
        let idx = a..b.min(v.len());
        let lo = idx.clone().min_by(|&i, &j| v[i].total_cmp(&v[j])).unwrap_or(a);
        let hi = idx.max_by(|&i, &j| v[i].total_cmp(&v[j])).unwrap_or(a);
        let (first, second) = if lo <= hi { (lo, hi) } else { (hi, lo) };
        out.push((first, v[first]));
        if second != first {
            out.push((second, v[second]));
        }
    }
    out
}

fn latency_histogram(report: &BenchReport) -> Option<Plot> {
    let series = trace_series(report, false);
    let (lo, hi) = decade_range(series.iter().flat_map(|(_, l)| l.iter().copied()))?;
    let hists: Vec<Vec<(f64, f64, f64)>> = series
        .iter()
        .map(|(_, l)| {
            let h = log_histogram(l, lo, hi, BUCKETS_PER_DECADE);
            h.iter().map(|b| (b.lo, b.hi, 100.0 * b.count as f64 / l.len() as f64)).collect()
        })
        .collect();
    // A log scale, so the rare slow calls that matter show next to the bulk.
    let shares = hists.iter().flatten().map(|b| b.2).filter(|v| *v > 0.0);
    let title = "Distribution of write call latency (all successful runs)";
    let names: Vec<String> = series.iter().map(|(n, _)| n.clone()).collect();
    let figure = Figure {
        title,
        x: Axis { lo, hi, log: true, unit: Unit::Micros, label: "latency of the call".into() },
        y: Axis::log(shares.chain([ALL_CALLS_PCT]), Unit::Percent, "share of calls"),
        legend: &names,
        mark: Mark::Line,
        groups: None,
    };
    let bottom = figure.y.lo;
    let svg = figure.render(|chart| {
        for (i, h) in hists.iter().enumerate() {
            // A step line; empty buckets drop to the foot of the axis.
            let mut pts = vec![(lo, bottom)];
            for &(a, b, share) in h {
                pts.extend([(a, share.max(bottom)), (b, share.max(bottom))]);
            }
            pts.push((hi, bottom));
            line(chart, i, pts, STEP_PX, STEP_OPACITY)?;
        }
        Ok(())
    })?;
    Some(Plot { file: "latency-histogram.svg".into(), title: title.into(), svg })
}

/// Numeric coordinates that take more than one value.
fn swept_coords(report: &BenchReport) -> Vec<String> {
    let points = points_of(report);
    let mut names: Vec<&String> = points.iter().flat_map(|p| p.keys()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter(|k| {
            let mut vals: Vec<f64> = Vec::new();
            for p in &points {
                match p.get(*k).map(Value::as_f64) {
                    Some(Some(v)) if !vals.contains(&v) => vals.push(v),
                    Some(None) => return false,
                    _ => {}
                }
            }
            vals.len() > 1
        })
        .cloned()
        .collect()
}

fn summary_of<'a>(report: &'a BenchReport, target: &str, point: &Point, metric: &str) -> Option<&'a Summary> {
    let s = report.summary.iter().find(|s| s.target == target && &s.point == point && s.metric == metric)?;
    Some(&s.summary)
}

/// `metric` against `coord`, one line per target and combination of the
/// other coordinates, with 95% confidence intervals as error bars.
fn sweep_chart(report: &BenchReport, coord: &str, metric: &str) -> Option<Plot> {
    let mut series: Vec<(String, Vec<(f64, Summary)>)> = Vec::new();
    for target in targets_of(report) {
        let mut others: Vec<Point> = Vec::new();
        for point in points_of(report) {
            let (Some(x), Some(s)) =
                (point.get(coord).and_then(Value::as_f64), summary_of(report, &target, &point, metric))
            else {
                continue;
            };
            let mut rest = point.clone();
            rest.remove(coord);
            let i = others.iter().position(|o| *o == rest).unwrap_or_else(|| {
                others.push(rest.clone());
                let name = if rest.is_empty() { target.clone() } else { format!("{target}, {}", point_label(&rest)) };
                series.push((name, Vec::new()));
                others.len() - 1
            });
            // This target's series are the last `others.len()`, in order.
            let i = series.len() - others.len() + i;
            series[i].1.push((x, *s));
        }
    }
    if series.is_empty() {
        return None;
    }
    for (_, pts) in &mut series {
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let xs = series.iter().flat_map(|(_, p)| p.iter().map(|q| q.0));
    let (unit, log) = super::coord_unit(coord);
    let log = log && series.iter().all(|(_, p)| p.iter().all(|q| q.0 > 0.0));
    let x = if log { Axis::log(xs, unit, coord) } else { Axis::linear(xs, unit, coord, false) };
    let y = value_axis(series.iter().flat_map(|(_, p)| p.iter().map(|(_, s)| s)), metric);
    let title = format!("{metric} by {coord} (mean, 95% CI)");
    let names: Vec<String> = series.iter().map(|(n, _)| n.clone()).collect();
    let figure = Figure { title: &title, x, y, legend: &names, mark: Mark::Line, groups: None };
    let x = figure.x.clone();
    let svg = figure.render(|chart| {
        let n = series.len() as f64;
        for (i, (_, pts)) in series.iter().enumerate() {
            let nudge = (i as f64 - (n - 1.0) / 2.0) * NUDGE;
            let at = |v: f64| x.at(x.frac(v) + nudge);
            line(chart, i, pts.iter().map(|(v, s)| (at(*v), s.mean)).collect(), SWEEP_PX, 1.0)?;
            let style = colour(i).filled().stroke_width(1);
            let floor = chart.y_range().start;
            let bars = pts.iter().map(|(v, s)| {
                let (lo, hi) = ci_ends(s, floor);
                ErrorBar::new_vertical(at(*v), lo, s.mean, hi, style, MARKER_PX)
            });
            chart.draw_series(bars)?;
        }
        Ok(())
    })?;
    Some(Plot { file: format!("{}-by-{}.svg", slug(metric), slug(coord)), title, svg })
}

/// A value axis from zero that holds every mean and confidence interval,
/// except that intervals of non-negative metrics stop at zero: a negative
/// throughput is the normal approximation's artefact, not a possibility.
fn value_axis<'a>(summaries: impl Iterator<Item = &'a Summary> + Clone, label: &str) -> Axis {
    let floor = if summaries.clone().all(|s| s.mean >= 0.0) { 0.0 } else { f64::NEG_INFINITY };
    let ys = summaries.flat_map(|s| [s.mean + s.ci95, (s.mean - s.ci95).max(floor)]);
    Axis::linear(ys, Unit::Plain, label, true)
}

/// The ends of the 95% confidence interval of `s`, the lower one not
/// below `floor` (the foot of the axis); both at the mean when there is
/// no interval.
fn ci_ends(s: &Summary, floor: f64) -> (f64, f64) {
    if s.ci95 > 0.0 && s.ci95.is_finite() {
        ((s.mean - s.ci95).max(floor), s.mean + s.ci95)
    } else {
        (s.mean, s.mean)
    }
}

/// seqwrite's throughputs side by side: one group per metric, one bar per
/// target.
fn throughput_bars(report: &BenchReport) -> Option<Plot> {
    let targets = targets_of(report);
    let points = points_of(report);
    let mut groups = Vec::new();
    let mut values: Vec<Vec<Option<Summary>>> = vec![Vec::new(); targets.len()];
    for metric in report.metrics.iter().filter(|m| m.ends_with("_mbps")) {
        for point in &points {
            groups.push(if points.len() > 1 { format!("{metric}, {}", point_label(point)) } else { metric.clone() });
            for (t, target) in targets.iter().enumerate() {
                values[t].push(summary_of(report, target, point, metric).copied());
            }
        }
    }
    bar_chart("throughput.svg", "Throughput (mean, 95% CI)", "MB/s", &groups, &targets, &values)
}

/// One headline metric at every point, one bar per target.
fn metric_bars(report: &BenchReport, metric: &str) -> Option<Plot> {
    let targets = targets_of(report);
    let points = points_of(report);
    let groups: Vec<String> = points.iter().map(point_label).collect();
    let values: Vec<Vec<Option<Summary>>> =
        targets.iter().map(|t| points.iter().map(|p| summary_of(report, t, p, metric).copied()).collect()).collect();
    let title = format!("{metric} (mean, 95% CI)");
    bar_chart(&format!("{}.svg", slug(metric)), &title, metric, &groups, &targets, &values)
}

/// Grouped bars with error bars; `values[series][group]`.
fn bar_chart(
    file: &str,
    title: &str,
    y_label: &str,
    groups: &[String],
    names: &[String],
    values: &[Vec<Option<Summary>>],
) -> Option<Plot> {
    let present = values.iter().flatten().flatten();
    present.clone().next()?;
    let figure = Figure {
        title,
        x: Axis { lo: 0.0, hi: groups.len() as f64, log: false, unit: Unit::Plain, label: String::new() },
        y: value_axis(present, y_label),
        legend: names,
        mark: Mark::Bar,
        groups: Some(groups),
    };
    let svg = figure.render(|chart| {
        let slot = GROUP_FILL / names.len().max(1) as f64;
        for (t, series) in values.iter().enumerate() {
            for (g, s) in series.iter().enumerate() {
                let Some(s) = s else { continue };
                let x0 = g as f64 + (1.0 - GROUP_FILL) / 2.0 + t as f64 * slot;
                let bar = Rectangle::new([(x0, 0.0), (x0 + slot * BAR_FILL, s.mean)], colour(t).filled());
                chart.draw_series([bar])?;
                whisker(chart, x0 + slot * BAR_FILL / 2.0, s)?;
            }
        }
        Ok(())
    })?;
    Some(Plot { file: file.into(), title: title.into(), svg })
}

/// A black error bar without a marker: the bar itself shows the mean.
fn whisker(chart: &mut Chart, x: f64, s: &Summary) -> Drawn {
    let (lo, hi) = ci_ends(s, chart.y_range().start);
    if lo == hi {
        return Ok(());
    }
    let w = WHISKER / 2.0;
    let lines = [vec![(x, lo), (x, hi)], vec![(x - w, lo), (x + w, lo)], vec![(x - w, hi), (x + w, hi)]];
    chart.draw_series(lines.into_iter().map(|l| PathElement::new(l, BLACK.stroke_width(1))))?;
    Ok(())
}
