//! The summary printed when a bench ends: plain aligned text that reads
//! the same in a terminal, a log file or an email.

use std::fmt::Write;

use super::{copy_rows, first_ok, latency_rows, micros, num, point_label, ratio_of, summarized, COPY_SPEEDUP_GOAL};
use crate::model::BenchReport;
use crate::stats::{points_of, targets_of};

/// Per point and headline metric each target's mean ± 95% CI (n) and its
/// ratio to the first target; for seqwrite the share of write calls over
/// 1 ms and p50/p99/max latency; then per-procedure call counts.
pub fn terminal_summary(report: &BenchReport) -> String {
    let report = summarized(report);
    let r = &*report;
    let targets = targets_of(r);
    let points = points_of(r);
    let mut out = String::new();
    let failed = r.runs.iter().filter(|x| !x.ok).count();
    let _ = writeln!(
        out,
        "nfsx bench {}: {} run(s), {} failed{}",
        r.workload,
        r.runs.len(),
        failed,
        if r.partial { " — PARTIAL RESULT" } else { "" }
    );

    let mut head = vec!["point".to_string(), "metric".to_string()];
    head.extend(targets.iter().cloned());
    // Ratio columns are named after the target alone, the baseline named
    // once above the table, so long target URLs do not double the width.
    head.extend(targets.iter().skip(1).map(|t| format!("{}/base", shorten(t, 30))));
    let mut rows = vec![head];
    for point in &points {
        for metric in &r.metrics {
            let mut row = vec![point_label(point), metric.clone()];
            let mut any = false;
            for t in &targets {
                let s = r.summary.iter().find(|s| &s.target == t && &s.point == point && &s.metric == metric);
                any |= s.is_some();
                row.push(s.map_or("–".into(), |s| {
                    let m = &s.summary;
                    format!("{} ± {} ({})", num(m.mean), num(m.ci95), m.n)
                }));
            }
            for t in targets.iter().skip(1) {
                row.push(ratio_of(r, t, point, metric).map_or("–".into(), |x| format!("{x:.2}")));
            }
            if any {
                rows.push(row);
            }
        }
    }
    if rows.len() > 1 {
        match targets.first().filter(|_| targets.len() > 1) {
            Some(base) => {
                let _ = writeln!(out, "\nmean ± 95% CI (n); base = {base}");
            }
            None => out.push_str("\nmean ± 95% CI (n)\n"),
        }
        out.push_str(&align(&rows, 2));
    }

    let copies = copy_rows(r);
    if !copies.is_empty() {
        let many = points.len() > 1;
        let mut head = vec!["target".to_string()];
        if many {
            head.push("point".into());
        }
        head.extend(["method", "status", "runs", "seconds", "MB/s"].map(String::from));
        let (mut rows, mut reasons) = (vec![head], Vec::new());
        for c in copies {
            let mut row = vec![c.target.clone()];
            if many {
                row.push(point_label(&c.point));
            }
            row.extend([c.method.to_string(), c.status.to_string(), c.runs.to_string()]);
            row.push(c.secs.map_or("–".into(), num));
            row.push(c.mbps.map_or("–".into(), num));
            rows.push(row);
            let why = c.reason.map(|why| format!("{} on {}: {why}", c.method, c.target));
            if let Some(why) = why.filter(|w| !reasons.contains(w)) {
                reasons.push(why);
            }
        }
        let _ = writeln!(
            out,
            "\ncopy methods (means of successful runs; the goal for 1 GiB is copy_speedup >= {COPY_SPEEDUP_GOAL})"
        );
        out.push_str(&align(&rows, if many { 4 } else { 3 }));
        for why in reasons {
            let _ = writeln!(out, "  not supported: {why}");
        }
    }

    let lat = latency_rows(r);
    if !lat.is_empty() {
        let mut rows = vec![["target", "point", "calls", ">1 ms", "p50", "p99", "max"].map(String::from).to_vec()];
        for (t, p, l) in lat {
            rows.push(vec![
                t,
                point_label(&p),
                l.n.to_string(),
                format!("{:.2}%", 100.0 * l.over_1ms),
                micros(l.p50),
                micros(l.p99),
                micros(l.max),
            ]);
        }
        out.push_str("\nwrite call latency (all successful runs)\n");
        out.push_str(&align(&rows, 2));
    }

    // Call counts of each procedure, first successful run per target and
    // point: how many round trips each target needed.
    let many = points.len() > 1;
    let mut head = if many { vec!["point".to_string()] } else { Vec::new() };
    head.push("op".into());
    head.extend(targets.iter().cloned());
    let mut rows = vec![head];
    for point in &points {
        let runs: Vec<_> = targets.iter().map(|t| first_ok(r, t, point)).collect();
        let mut ops: Vec<&str> = Vec::new();
        for o in runs.iter().flatten().flat_map(|run| &run.op_stats) {
            if !ops.contains(&o.op.as_str()) {
                ops.push(&o.op);
            }
        }
        for op in ops {
            let mut row = if many { vec![point_label(point)] } else { Vec::new() };
            row.push(op.to_string());
            for run in &runs {
                let count = run.and_then(|run| run.op_stats.iter().find(|o| o.op == op)).map(|o| o.count);
                row.push(count.map_or("–".into(), |c| c.to_string()));
            }
            rows.push(row);
        }
    }
    if rows.len() > 1 {
        out.push_str("\noperations (first successful run)\n");
        out.push_str(&align(&rows, if many { 2 } else { 1 }));
    }

    for run in r.runs.iter().filter(|x| !x.ok) {
        let _ = writeln!(
            out,
            "failed: {} run {} ({}): {}",
            run.target,
            run.run,
            point_label(&run.point),
            run.error.as_deref().unwrap_or("no error recorded")
        );
    }
    out
}

/// Columns padded to their widest cell; the first `text_cols` aligned left,
/// the rest (numbers) right.
fn align(rows: &[Vec<String>], text_cols: usize) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> =
        (0..cols).map(|c| rows.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            let pad = " ".repeat(width[c] - cell.chars().count());
            if c > 0 {
                line.push_str("  ");
            }
            if c < text_cols {
                line.push_str(cell);
                line.push_str(&pad);
            } else {
                line.push_str(&pad);
                line.push_str(cell);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// `s` cut to `max` characters with an ellipsis: the ratio columns of the
/// terminal table only name the target, which the header above gives in full.
fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let keep: String = s.chars().take(max.saturating_sub(1)).collect();
    format!("{keep}…")
}
