//! The HTML page: the headline (ratios, and the papers' numbers beside
//! them), what ran where, the plots, and the numbers behind them in
//! tables, so the page stands on its own when copied elsewhere with its
//! SVG files.

use std::fmt::Write;

use super::headline::headline;
use super::{copy_rows, esc, first_ok, latency_rows, micros, num, point_label, Plot, COPY_SPEEDUP_GOAL};
use crate::model::BenchReport;
use crate::stats::{points_of, targets_of};

const CSS: &str = "body{font-family:sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}\
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;margin:.5em 0 1.5em}th,td{padding:.2em .7em;border-bottom:1px solid #eee}\
th{background:#f4f4f4;text-align:left}td{text-align:right;font-variant-numeric:tabular-nums}td.t{text-align:left}\
caption{text-align:left;font-weight:bold;padding:.3em 0}code{background:#f6f6f6;padding:.1em .3em}\
.partial{background:#fff3cd;border:1px solid #e0b000;padding:.7em 1em;font-weight:bold}\
figure{margin:1em 0}figcaption{color:#555;font-size:.9em}img{max-width:100%;border:1px solid #eee}\
.err{color:#a00;text-align:left;white-space:pre-wrap}\
table.headline td{vertical-align:top}td.paper{text-align:left;max-width:24em;background:#f7fbff}";

pub(crate) fn page(report: &BenchReport, plots: &[Plot]) -> String {
    let mut h = String::new();
    let title = format!("nfsx bench: {}", report.workload);
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>{CSS}</style>\
         </head><body>\n<h1>{t}</h1>\n",
        t = esc(&title)
    );
    let failed = report.runs.iter().filter(|r| !r.ok).count();
    headline(&mut h, report, failed);
    copy_methods(&mut h, report);
    meta(&mut h, report);
    if !plots.is_empty() {
        h.push_str("<h2>Plots</h2>\n");
        for p in plots {
            let _ = writeln!(
                h,
                "<figure><img src=\"{f}\" alt=\"{t}\"><figcaption>{t}</figcaption></figure>",
                f = esc(&p.file),
                t = esc(&p.title)
            );
        }
    }
    summary(&mut h, report);
    latency(&mut h, report);
    op_stats(&mut h, report);
    if failed > 0 {
        h.push_str("<h2>Failed runs</h2>\n");
        let rows = report.runs.iter().filter(|r| !r.ok).map(|r| {
            let err =
                format!("<span class=\"err\">{}</span>", esc(r.error.as_deref().unwrap_or("(no error recorded)")));
            vec![esc(&r.target), r.run.to_string(), esc(&point_label(&r.point)), err]
        });
        h.push_str(&table(&["target", "run", "point", "error"], &rows.collect::<Vec<_>>(), 4));
    }
    h.push_str("</body></html>\n");
    h
}

/// `cells` are HTML already; the first `text_cols` columns are text,
/// aligned left, the rest numbers.
fn table(head: &[&str], rows: &[Vec<String>], text_cols: usize) -> String {
    table_caption("", head, rows, text_cols)
}

fn table_caption(caption: &str, head: &[&str], rows: &[Vec<String>], text_cols: usize) -> String {
    let mut t = String::from("<table>");
    if !caption.is_empty() {
        let _ = write!(t, "<caption>{caption}</caption>");
    }
    if head.iter().any(|c| !c.is_empty()) {
        t.push_str("<tr>");
        for c in head {
            let _ = write!(t, "<th>{}</th>", esc(c));
        }
        t.push_str("</tr>\n");
    }
    for row in rows {
        t.push_str("<tr>");
        for (i, c) in row.iter().enumerate() {
            let class = if i < text_cols { " class=\"t\"" } else { "" };
            let _ = write!(t, "<td{class}>{c}</td>");
        }
        t.push_str("</tr>\n");
    }
    t.push_str("</table>\n");
    t
}

fn meta(h: &mut String, r: &BenchReport) {
    let targets = targets_of(r);
    let mut rows = vec![
        vec!["command".into(), format!("<code>{}</code>", esc(&shell_words(&r.command)))],
        vec!["started".into(), esc(&utc(r.started_unix))],
        vec![
            "host".into(),
            esc(&format!(
                "{} ({} CPUs, kernel {}), nfsx {}",
                r.host.hostname, r.host.cpus, r.host.kernel, r.host.nfsx_version
            )),
        ],
        vec![
            "targets".into(),
            targets
                .iter()
                .enumerate()
                .map(|(i, t)| format!("{}{}", esc(t), if i == 0 { " (baseline)" } else { "" }))
                .collect::<Vec<_>>()
                .join("<br>"),
        ],
    ];
    for (k, v) in &r.params {
        let v = match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        rows.push(vec![format!("param {}", esc(k)), esc(&v)]);
    }
    h.push_str(&table(&["", ""], &rows, 2));
}

/// The copy workload: each method's mean time and rate per target, and
/// why a target could not.
fn copy_methods(h: &mut String, r: &BenchReport) {
    let rows = copy_rows(r);
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        h,
        "<h2>Copy methods</h2>\n<p>Means of the successful runs. <code>copy_speedup</code> is read-write \
         seconds over server-copy seconds; the goal for a 1 GiB file is at least {COPY_SPEEDUP_GOAL}×.</p>"
    );
    let many = points_of(r).len() > 1;
    let cells: Vec<Vec<String>> = rows
        .into_iter()
        .map(|c| {
            let mut row = vec![esc(&c.target)];
            if many {
                row.push(esc(&point_label(&c.point)));
            }
            let status = match &c.reason {
                Some(why) => format!("{}: {}", esc(c.status), esc(why)),
                None => esc(c.status),
            };
            row.extend([esc(c.method), status, c.runs.to_string()]);
            row.push(c.secs.map_or("–".into(), num));
            row.push(c.mbps.map_or("–".into(), num));
            row
        })
        .collect();
    let mut head = vec!["target"];
    if many {
        head.push("point");
    }
    head.extend(["method", "status", "runs", "seconds", "MB/s"]);
    h.push_str(&table(&head, &cells, if many { 4 } else { 3 }));
}

fn summary(h: &mut String, r: &BenchReport) {
    if r.summary.is_empty() {
        return;
    }
    h.push_str("<h2>Summary</h2>\n");
    for metric in &r.metrics {
        let rows: Vec<Vec<String>> = r
            .summary
            .iter()
            .filter(|s| &s.metric == metric)
            .map(|s| {
                let m = &s.summary;
                vec![
                    esc(&s.target),
                    esc(&point_label(&s.point)),
                    m.n.to_string(),
                    format!("{} ± {}", num(m.mean), num(m.ci95)),
                    num(m.min),
                    num(m.median),
                    num(m.max),
                ]
            })
            .collect();
        if !rows.is_empty() {
            let head = ["target", "point", "n", "mean ± 95% CI", "min", "median", "max"];
            h.push_str(&table_caption(&esc(metric), &head, &rows, 2));
        }
    }
}

fn latency(h: &mut String, r: &BenchReport) {
    let rows: Vec<Vec<String>> = latency_rows(r)
        .into_iter()
        .map(|(t, p, l)| {
            vec![
                esc(&t),
                esc(&point_label(&p)),
                l.n.to_string(),
                format!("{:.2} %", 100.0 * l.over_1ms),
                esc(&micros(l.mean)),
                esc(&micros(l.p50)),
                esc(&micros(l.p99)),
                esc(&micros(l.max)),
            ]
        })
        .collect();
    if !rows.is_empty() {
        h.push_str("<h2>Write call latency</h2>\n<p>All calls of all successful runs.</p>\n");
        let head = ["target", "point", "calls", "> 1 ms", "mean", "p50", "p99", "max"];
        h.push_str(&table(&head, &rows, 2));
    }
}

/// Table 1 of Chen et al. 2015 / Linux mountstats: per procedure, averages
/// per call, from the first successful run of each target at each point.
fn op_stats(h: &mut String, r: &BenchReport) {
    let mut any = false;
    for target in targets_of(r) {
        for point in points_of(r) {
            let Some(run) = first_ok(r, &target, &point).filter(|run| !run.op_stats.is_empty()) else { continue };
            if !any {
                h.push_str("<h2>Operations</h2>\n<p>First successful run of each target at each point.</p>\n");
                any = true;
            }
            let rows: Vec<Vec<String>> = run
                .op_stats
                .iter()
                .map(|o| {
                    let per = |x: u64| if o.count == 0 { 0.0 } else { x as f64 / o.count as f64 };
                    vec![
                        esc(&o.op),
                        o.count.to_string(),
                        num(per(o.bytes_sent)),
                        num(per(o.bytes_received)),
                        num(per(o.queue_us) / 1e3),
                        num(per(o.rtt_us) / 1e3),
                        num(per(o.execute_us) / 1e3),
                        o.retransmissions.to_string(),
                    ]
                })
                .collect();
            let head = [
                "op",
                "count",
                "avg bytes sent",
                "avg bytes recv",
                "avg queue ms",
                "avg RTT ms",
                "avg execute ms",
                "retrans",
            ];
            let caption = format!("{}, {} (run {})", esc(&target), esc(&point_label(&point)), run.run);
            h.push_str(&table_caption(&caption, &head, &rows, 1));
        }
    }
}

/// The command line as it could be pasted into a shell.
fn shell_words(args: &[String]) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_-./:=,@%+".contains(c);
    let quoted = args.iter().map(|a| {
        if !a.is_empty() && a.chars().all(safe) {
            a.clone()
        } else {
            format!("'{}'", a.replace('\'', "'\\''"))
        }
    });
    quoted.collect::<Vec<_>>().join(" ")
}

/// Seconds since the epoch as a UTC date, by the days-to-civil conversion of
/// the proleptic Gregorian calendar (no date crate needed for one line).
pub(crate) fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC", rem / 3600, rem % 3600 / 60, rem % 60)
}
