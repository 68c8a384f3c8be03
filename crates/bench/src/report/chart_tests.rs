//! The plotters charts, read-small's time series and the headline.

use std::collections::BTreeMap;

use serde_json::json;

use super::draw::wrap;
use super::papers::paper_number;
use super::tests::{seqwrite, sweep, written, ODD};
use crate::model::{BenchReport, RunRecord};

/// Longer than the 34 characters legends used to cut names at.
const V3: &str = "nfs://127.0.0.1:20491/srv/export-with-a-long-name?version=3";
const V41: &str = "nfs://127.0.0.1:20491/srv/export-with-a-long-name?version=4.1&delegations=1";
const BUCKET_S: f64 = 0.5;
const BUCKETS: usize = 40;

/// `name` as plotters' SVG backend escapes text.
fn svg_text(name: &str) -> String {
    name.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&apos;")
}

/// The report with its targets renamed: `ODD` stays, every other target
/// gets a long URL.
fn long_names(mut r: BenchReport) -> BenchReport {
    let rename = |t: &str| if t == ODD { ODD.to_string() } else { V41.to_string() };
    r.targets = r.targets.iter().map(|t| rename(t)).collect();
    for run in &mut r.runs {
        run.target = rename(&run.target);
    }
    r
}

/// `metadata --op read-small --duration 20s`: a slow first pass, then
/// the steady state with a dip every 6 s (as actimeo makes them).
fn read_small() -> BenchReport {
    let mut runs = Vec::new();
    for (target, steady) in [(V3, 50.0), (V41, 8600.0)] {
        for run in 1..=2 {
            let mut r = RunRecord { target: target.into(), run, ok: true, ..Default::default() };
            r.point = BTreeMap::from([("op".to_string(), json!("read-small")), ("threads".to_string(), json!(1))]);
            let series: Vec<f64> = (0..BUCKETS)
                .map(|i| {
                    if i < 4 {
                        20.0
                    } else if i % 12 == 0 {
                        0.0
                    } else {
                        steady
                    }
                })
                .collect();
            r.metrics.insert("series_ops_per_sec".into(), json!(series));
            r.metrics.insert("series_bucket_s".into(), json!(BUCKET_S));
            r.metrics.insert("ops_per_sec".into(), json!(steady * 0.9 + run as f64));
            r.metrics.insert("first_pass_ops_per_sec".into(), json!(20.0 + run as f64));
            r.metrics.insert("steady_ops_per_sec".into(), json!(steady + run as f64));
            runs.push(r);
        }
    }
    BenchReport {
        workload: "metadata".into(),
        targets: vec![V3.into(), V41.into()],
        metrics: vec!["ops_per_sec".into(), "first_pass_ops_per_sec".into(), "steady_ops_per_sec".into()],
        runs,
        ..Default::default()
    }
}

/// The report with its first target renamed to `name`.
fn first_renamed(mut r: BenchReport, name: &str) -> BenchReport {
    let old = std::mem::replace(&mut r.targets[0], name.to_string());
    for run in r.runs.iter_mut().filter(|x| x.target == old) {
        run.target = name.to_string();
    }
    r
}

fn unswept() -> BenchReport {
    let mut r = long_names(sweep());
    r.runs.retain(|x| x.point["io_size"] == json!(4096) && x.point["threads"] == json!(1));
    r
}

#[test]
fn every_chart_names_every_target_in_full() {
    for (report, charts) in [(long_names(seqwrite()), 3), (long_names(sweep()), 2), (unswept(), 1), (read_small(), 4)] {
        let (dir, _html, files) = written(&report);
        assert_eq!(files.len(), charts, "{files:?}");
        for file in &files {
            let svg = std::fs::read_to_string(dir.path().join("report").join(file)).unwrap();
            for target in &report.targets {
                assert!(svg.contains(&svg_text(target)), "{file} names {target} in full");
            }
            assert!(!svg.contains('…'), "{file}: nothing is cut");
        }
    }
}

#[test]
fn read_small_plots_files_per_second_over_time() {
    let (dir, html, files) = written(&read_small());
    assert_eq!(files[0], "files-over-time.svg", "{files:?}");
    let svg = std::fs::read_to_string(dir.path().join("report/files-over-time.svg")).unwrap();
    assert!(svg.contains("files read per second") && svg.contains("seconds since the run started"));
    // One line per run: two targets, two runs each.
    assert_eq!(svg.matches("opacity=\"0.75\"").count(), 2 * 2, "{svg}");
    // The rates span decades, so the axis does too (log scale).
    for tick in ["\n10\n</text>", "\n100\n</text>", "\n1000\n</text>", "\n10k\n</text>"] {
        assert!(svg.contains(tick), "tick {tick:?}");
    }
    assert!(html.contains("Chen 2015 Fig. 7"), "the figure named under the plot");
}

#[test]
fn headline_opens_the_page_with_ratios_and_the_papers_number() {
    let (_dir, html, _files) = written(&read_small());
    let headline = html.find("<section id=\"headline\">").expect("a headline");
    assert_eq!(html.find("<h2>"), html.find("<h2>Headline</h2>"), "the first section");
    assert!(headline < html.find("<h2>Plots</h2>").unwrap());
    assert!(headline < html.find("<td class=\"t\">command</td>").unwrap(), "before what ran where");
    let section = &html[headline..html.find("</section>").unwrap()];
    assert!(section.contains(&format!("Ratios to {}", super::esc(V3))));
    // (8600 + 1.5) / (50 + 1.5), the steady states' means.
    assert!(section.contains("<b>167×</b>"), "{section}");
    let steady = &section[section.find(">steady_ops_per_sec<").unwrap()..];
    assert!(steady.contains("<b>172×</b> Chen et al. 2015, Fig. 7"), "paper beside the steady state");
    let first = &section[section.find(">first_pass_ops_per_sec<").unwrap()..section.find(">steady_ops").unwrap()];
    assert!(!first.contains("Chen et al."), "no paper number for the first pass");
}

#[test]
fn headline_of_one_target_has_no_ratios() {
    let mut r = sweep();
    r.targets.truncate(1);
    r.runs.retain(|x| x.target == "a");
    let (_dir, html, _files) = written(&r);
    let section = &html[html.find("id=\"headline\"").unwrap()..html.find("</section>").unwrap()];
    assert!(!section.contains("× baseline") && !section.contains("Ratios to"));
    assert!(section.contains("<td class=\"t\">a</td>"));
}

#[test]
fn papers_numbers_are_found_by_workload_op_and_metric() {
    let op = |o: &str| BTreeMap::from([("op".to_string(), json!(o))]);
    let none = BTreeMap::new();
    assert_eq!(paper_number("metadata", &op("read-small"), "steady_ops_per_sec").unwrap().number, "172×");
    assert!(paper_number("metadata", &op("create"), "steady_ops_per_sec").is_none());
    assert!(paper_number("metadata", &op("read-small"), "ops_per_sec").is_none());
    assert_eq!(paper_number("locked-read", &none, "calls_per_client").unwrap().number, "3,009 vs 60,008");
    assert_eq!(paper_number("recall", &none, "recall_ms").unwrap().number, "~100 ms");
    assert!(paper_number("seqwrite", &none, "write_mbps").is_none());
}

#[test]
fn long_names_wrap_without_losing_a_character() {
    let lines = wrap(V41, 30);
    assert!(lines.len() > 1 && lines.iter().all(|l| l.chars().count() <= 30), "{lines:?}");
    assert_eq!(lines.concat(), V41);
    assert_eq!(wrap("op=read-small, threads=16", 15), ["op=read-small,", "threads=16"]);
    assert_eq!(wrap("short", 30), ["short"]);
    assert_eq!(wrap("", 30), [""]);
    let huge = format!("{V41}/{}", "x".repeat(200));
    let (dir, _html, files) = written(&first_renamed(long_names(seqwrite()), &huge));
    let svg = std::fs::read_to_string(dir.path().join("report").join(&files[0])).unwrap();
    assert!(svg.contains(&svg_text(&huge[..60])) && svg.contains(&"x".repeat(40)), "every piece drawn");
}
