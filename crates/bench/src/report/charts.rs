//! Which plots a report gets, chosen from the data it holds, and how each
//! is drawn: seqwrite's per-call latency trace and histogram, metric against
//! a swept coordinate, and bar charts otherwise.

use serde_json::Value;

use super::svg::{legend, shorten, style, Axis, Canvas, Frame};
use super::{first_ok, has_latencies, latencies, point_label, Plot, Unit};
use crate::model::BenchReport;
use crate::stats::{decade_range, log_histogram, points_of, targets_of, Point, Summary};

const WIDTH: f64 = 840.0;
const LEFT: f64 = 80.0;
const TOP: f64 = 40.0;
const PLOT_W: f64 = 520.0;
const PLOT_H: f64 = 280.0;
const LEGEND_X: f64 = LEFT + PLOT_W + 24.0;

pub(crate) fn plots(report: &BenchReport) -> Vec<Plot> {
    let mut out = Vec::new();
    let lat = has_latencies(report);
    if lat {
        out.extend(latency_trace(report));
        out.extend(latency_histogram(report));
    }
    let swept = swept_coords(report);
    for coord in &swept {
        for metric in &report.metrics {
            out.extend(sweep_chart(report, coord, metric));
        }
    }
    if swept.is_empty() {
        match throughput_bars(report).filter(|_| lat) {
            Some(plot) => out.push(plot),
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

fn canvas(series: usize, extra_bottom: f64) -> Canvas {
    Canvas::new(WIDTH, (TOP + PLOT_H + 50.0 + extra_bottom).max(TOP + 20.0 + series as f64 * 18.0))
}

fn frame(x: Axis, y: Axis) -> Frame {
    Frame { x, y, left: LEFT, top: TOP, width: PLOT_W, height: PLOT_H }
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
    let y = Axis::log(all.chain([1000.0]), Unit::Micros, "latency of the call");
    let f = frame(Axis::linear([0.0, longest as f64], Unit::Plain, "write call", true), y);
    let mut c = canvas(series.len(), 0.0);
    let title = "Latency of each write call (first successful run)";
    f.draw(&mut c, title, true);
    let cols = PLOT_W as usize;
    for (i, (_, lat)) in series.iter().enumerate() {
        let (colour, dash) = style(i);
        c.polyline(
            &decimate(lat, cols).iter().map(|&(k, v)| (f.px(k as f64), f.py(v))).collect::<Vec<_>>(),
            colour,
            1.0,
            dash,
            0.8,
        );
    }
    let y1ms = f.py(1000.0);
    c.line((LEFT, y1ms), (LEFT + PLOT_W, y1ms), "#000", 1.0, "4 4");
    c.text(LEFT + PLOT_W - 4.0, y1ms - 4.0, "end", 11.0, 0.0, "1 ms");
    legend(&mut c, LEGEND_X, TOP + 10.0, &series.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>());
    Some(Plot { file: "latency-trace.svg".into(), title: title.into(), svg: c.finish() })
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
            let h = log_histogram(l, lo, hi, 10);
            h.iter().map(|b| (b.lo, b.hi, 100.0 * b.count as f64 / l.len() as f64)).collect()
        })
        .collect();
    // A log scale, so the rare slow calls that matter show next to the bulk.
    let shares = hists.iter().flatten().map(|b| b.2).filter(|v| *v > 0.0);
    let y = Axis::log(shares.chain([100.0]), Unit::Percent, "share of calls");
    let x = Axis { lo, hi, log: true, unit: Unit::Micros, label: "latency of the call".into() };
    let f = frame(x, y);
    let mut c = canvas(series.len(), 0.0);
    let title = "Distribution of write call latency (all successful runs)";
    f.draw(&mut c, title, true);
    for (i, h) in hists.iter().enumerate() {
        let (colour, dash) = style(i);
        // Empty buckets drop to the bottom of the frame.
        let bottom = f.y.lo;
        let mut pts = vec![(f.px(lo), f.py(bottom))];
        for &(a, b, share) in h {
            let share = share.max(bottom);
            pts.push((f.px(a), f.py(share)));
            pts.push((f.px(b), f.py(share)));
        }
        pts.push((f.px(hi), f.py(bottom)));
        c.polyline(&pts, colour, 1.5, dash, 0.9);
    }
    legend(&mut c, LEGEND_X, TOP + 10.0, &series.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>());
    Some(Plot { file: "latency-histogram.svg".into(), title: title.into(), svg: c.finish() })
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
    let f = frame(x, value_axis(series.iter().flat_map(|(_, p)| p.iter().map(|(_, s)| s)), metric));
    let mut c = canvas(series.len(), 0.0);
    let title = format!("{metric} by {coord} (mean, 95% CI)");
    f.draw(&mut c, &title, true);
    let n = series.len() as f64;
    for (i, (_, pts)) in series.iter().enumerate() {
        let (colour, dash) = style(i);
        // Nudge series apart so their error bars do not hide each other.
        let dx = (i as f64 - (n - 1.0) / 2.0) * 3.0;
        c.polyline(&pts.iter().map(|(x, s)| (f.px(*x) + dx, f.py(s.mean))).collect::<Vec<_>>(), colour, 2.0, dash, 1.0);
        for (x, s) in pts {
            error_bar(&mut c, &f, f.px(*x) + dx, s, colour);
            c.circle(f.px(*x) + dx, f.py(s.mean), 3.0, colour);
        }
    }
    legend(&mut c, LEGEND_X, TOP + 10.0, &series.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>());
    Some(Plot { file: format!("{}-by-{}.svg", slug(metric), slug(coord)), title, svg: c.finish() })
}

/// A value axis from zero that holds every mean and confidence interval,
/// except that intervals of non-negative metrics stop at zero: a negative
/// throughput is the normal approximation's artefact, not a possibility.
fn value_axis<'a>(summaries: impl Iterator<Item = &'a Summary> + Clone, label: &str) -> Axis {
    let floor = if summaries.clone().all(|s| s.mean >= 0.0) { 0.0 } else { f64::NEG_INFINITY };
    let ys = summaries.flat_map(|s| [s.mean + s.ci95, (s.mean - s.ci95).max(floor)]);
    Axis::linear(ys, Unit::Plain, label, true)
}

fn error_bar(c: &mut Canvas, f: &Frame, x: f64, s: &Summary, colour: &str) {
    if s.ci95 > 0.0 && s.ci95.is_finite() {
        let (top, bottom) = (f.py(s.mean + s.ci95), f.py((s.mean - s.ci95).max(f.y.lo)));
        c.line((x, top), (x, bottom), colour, 1.0, "");
        c.line((x - 4.0, top), (x + 4.0, top), colour, 1.0, "");
        c.line((x - 4.0, bottom), (x + 4.0, bottom), colour, 1.0, "");
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
    let x = Axis::linear([0.0, groups.len() as f64], Unit::Plain, "", false);
    let f = frame(x, value_axis(present, y_label));
    let slanted =
        groups.len() > 4 || groups.iter().any(|g| g.chars().count() * 7 > (PLOT_W / groups.len() as f64) as usize);
    // Labels slanted at 30° need about half their length below the axis.
    let longest = groups.iter().map(|g| g.chars().count().min(40)).max().unwrap_or(0) as f64;
    let mut c = canvas(names.len(), if slanted { (longest * 3.3 - 20.0).max(0.0) } else { 0.0 });
    f.draw(&mut c, title, false);
    let group_w = PLOT_W / groups.len() as f64;
    let bar_w = group_w * 0.8 / names.len().max(1) as f64;
    for (g, label) in groups.iter().enumerate() {
        let x0 = LEFT + g as f64 * group_w + group_w * 0.1;
        for (t, series) in values.iter().enumerate() {
            let Some(s) = series.get(g).copied().flatten() else { continue };
            let (colour, _) = style(t);
            let (y0, y1) = (f.py(0.0), f.py(s.mean));
            c.rect(x0 + t as f64 * bar_w, y0.min(y1), bar_w * 0.92, (y0 - y1).abs(), colour);
            error_bar(&mut c, &f, x0 + (t as f64 + 0.46) * bar_w, &s, "#000");
        }
        let cx = LEFT + (g as f64 + 0.5) * group_w;
        if slanted {
            c.text(cx, TOP + PLOT_H + 14.0, "end", 11.0, -30.0, &shorten(label, 40));
        } else {
            c.text(cx, TOP + PLOT_H + 17.0, "middle", 11.0, 0.0, label);
        }
    }
    legend(&mut c, LEGEND_X, TOP + 10.0, names);
    Some(Plot { file: file.into(), title: title.into(), svg: c.finish() })
}
