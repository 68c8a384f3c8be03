use std::collections::BTreeMap;

use serde_json::json;

use super::axis::Axis;
use super::*;
use crate::model::{BenchReport, HostInfo, RunRecord};
use crate::target::OpStat;

pub(super) const ODD: &str = "<&> dir";

fn op(name: &str, count: u64) -> OpStat {
    OpStat {
        op: name.into(),
        count,
        bytes_sent: count * 8300,
        bytes_received: count * 120,
        rtt_us: count * 150,
        ..Default::default()
    }
}

fn seqwrite_run(target: &str, run: usize, scale: f64, spike: bool) -> RunRecord {
    let mut lat: Vec<f64> = (0..5000).map(|i| 40.0 + (i % 7) as f64 * scale).collect();
    if spike {
        lat[2500] = 250_000.0;
        lat[4000] = 1500.0;
    }
    let mut metrics = BTreeMap::new();
    metrics.insert("write_mbps".into(), json!(300.0 * scale + run as f64));
    metrics.insert("flush_mbps".into(), json!(2000.0 + run as f64 * 10.0));
    metrics.insert("close_mbps".into(), json!(250.0 * scale));
    metrics.insert("call_latency_us".into(), json!(lat));
    RunRecord {
        target: target.into(),
        run,
        ok: true,
        elapsed_s: 3.0,
        metrics,
        op_stats: vec![op("WRITE", 5000), op("COMMIT", 1)],
        ..Default::default()
    }
}

pub(super) fn seqwrite() -> BenchReport {
    let mut runs = Vec::new();
    for run in 1..=3 {
        runs.push(seqwrite_run("nfsx", run, 1.0, run == 1));
        runs.push(seqwrite_run(ODD, run, 1.5, false));
    }
    runs.push(RunRecord {
        target: ODD.into(),
        run: 4,
        error: Some("write f: <timeout> & gone".into()),
        ..Default::default()
    });
    BenchReport {
        workload: "seqwrite".into(),
        command: vec!["nfsx".into(), "bench".into(), "seqwrite".into(), "nfs://h/x".into(), ODD.into()],
        started_unix: 1_700_000_000,
        host: HostInfo { hostname: "box".into(), cpus: 2, kernel: "6.1".into(), nfsx_version: "0.1.0".into() },
        targets: vec!["nfsx".into(), ODD.into()],
        params: BTreeMap::from([("size".to_string(), json!(1 << 30))]),
        metrics: vec!["write_mbps".into(), "flush_mbps".into(), "close_mbps".into()],
        runs,
        partial: true,
        ..Default::default()
    }
}

pub(super) fn sweep() -> BenchReport {
    let mut runs = Vec::new();
    for target in ["a", ODD] {
        for io in [4096u64, 65536, 1 << 20] {
            for threads in [1u64, 4] {
                for run in 1..=2 {
                    let mut r = RunRecord { target: target.into(), run, ok: true, ..Default::default() };
                    r.point =
                        BTreeMap::from([("io_size".to_string(), json!(io)), ("threads".to_string(), json!(threads))]);
                    let v = (io as f64).log2() * threads as f64 + run as f64;
                    r.metrics.insert("mbps".into(), json!(if target == "a" { v } else { 2.0 * v }));
                    r.op_stats = vec![op("READ", 100)];
                    runs.push(r);
                }
            }
        }
    }
    BenchReport {
        workload: "data".into(),
        targets: vec!["a".into(), ODD.into()],
        metrics: vec!["mbps".into()],
        runs,
        ..Default::default()
    }
}

/// Tags balance and every `&` starts an entity: enough to tell that a
/// target name cannot break the markup.
fn check_markup(doc: &str) {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = doc;
    while let Some(i) = rest.find(['<', '&']) {
        let after = &rest[i..];
        if let Some(entity) = after.strip_prefix('&') {
            let ok = ["amp;", "lt;", "gt;", "quot;", "#39;", "apos;"].iter().any(|e| entity.starts_with(e));
            assert!(ok, "bare & at {:?}", &after[..after.len().min(30)]);
            rest = entity;
            continue;
        }
        let end = after.find('>').expect("tag closes");
        let tag = &after[1..end];
        rest = &after[end + 1..];
        if tag.starts_with('!') || tag.starts_with('?') || tag.ends_with('/') {
            continue;
        }
        let name = tag.trim_start_matches('/').split_whitespace().next().unwrap().to_string();
        if tag.starts_with('/') {
            assert_eq!(stack.pop().as_deref(), Some(name.as_str()), "closing tag matches");
        } else if !["meta", "br", "img"].contains(&name.as_str()) {
            stack.push(name);
        }
    }
    assert!(stack.is_empty(), "unclosed: {stack:?}");
}

/// Writes the report and checks every file the page refers to.
pub(super) fn written(report: &BenchReport) -> (tempfile::TempDir, String, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    let index = write_report(&out, report).unwrap();
    assert_eq!(index, out.join("index.html"));
    let html = std::fs::read_to_string(&index).unwrap();
    check_markup(&html);
    let mut files = Vec::new();
    for part in html.split("src=\"").skip(1) {
        let file = &part[..part.find('"').unwrap()];
        let svg = std::fs::read_to_string(out.join(file)).unwrap_or_else(|_| panic!("{file} exists"));
        assert!(svg.starts_with("<svg ") && svg.contains(" xmlns=\"http://www.w3.org/2000/svg\""), "{file}");
        check_markup(&svg);
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{file} has only finite coordinates");
        files.push(file.to_string());
    }
    (dir, html, files)
}

#[test]
fn seqwrite_report_has_latency_plots_and_tables() {
    let (_dir, html, files) = written(&seqwrite());
    assert_eq!(files, ["latency-trace.svg", "latency-histogram.svg", "throughput.svg"]);
    assert!(html.contains("class=\"partial\""));
    assert!(html.contains("&lt;&amp;&gt; dir") && !html.contains("<&>"));
    assert!(html.contains("&lt;timeout&gt; &amp; gone"), "failed run's error listed");
    assert!(html.contains("2023-11-14 22:13:20 UTC"));
    assert!(html.contains("nfsx bench seqwrite nfs://h/x &#39;&lt;&amp;&gt; dir&#39;"), "command quoted for a shell");
    assert!(html.contains("<caption>write_mbps</caption>") && html.contains("Ratios to nfsx"));
    assert!(html.contains("<td class=\"t\">WRITE</td><td>5000</td><td>8300</td><td>120</td>"), "op-stats averages");
    let trace = std::fs::read_to_string(_dir.path().join("report/latency-trace.svg")).unwrap();
    assert!(trace.contains(">\n1 ms\n</text>") && trace.contains("&lt;&amp;&gt; dir"));
}

#[test]
fn sweep_report_plots_each_swept_coordinate() {
    let (dir, html, files) = written(&sweep());
    assert_eq!(files, ["mbps-by-io_size.svg", "mbps-by-threads.svg"]);
    assert!(!html.contains("class=\"partial\""));
    let svg = std::fs::read_to_string(dir.path().join("report/mbps-by-io_size.svg")).unwrap();
    for label in ["4 KiB", "64 KiB", "1 MiB", "a, threads=4", "&lt;&amp;&gt; dir, threads=1"] {
        assert!(svg.contains(label), "{label}");
    }
}

#[test]
fn unswept_report_gets_bar_charts() {
    let mut r = sweep();
    r.runs.retain(|x| x.point["io_size"] == json!(4096) && x.point["threads"] == json!(1));
    let (_dir, _html, files) = written(&r);
    assert_eq!(files, ["mbps.svg"]);
}

#[test]
fn terminal_summary_of_seqwrite() {
    let text = terminal_summary(&seqwrite());
    print!("{text}");
    assert!(text.starts_with("nfsx bench seqwrite: 7 run(s), 1 failed — PARTIAL RESULT"));
    let header = text.lines().find(|l| l.starts_with("point")).unwrap();
    assert!(header.contains("<&> dir/base"), "raw names in plain text: {header}");
    assert!(text.contains("base = nfsx\n"));
    let write = text.lines().find(|l| l.contains("write_mbps")).unwrap();
    assert!(write.contains("302 ± 2.48 (3)") && write.ends_with("1.50"), "{write}");
    let nfsx_lat = text.lines().find(|l| l.starts_with("nfsx ") && l.contains("15000")).unwrap();
    assert!(nfsx_lat.contains("0.01%") && nfsx_lat.contains("250 ms"), "{nfsx_lat}");
    assert!(text.lines().any(|l| l.split_whitespace().eq(["WRITE", "5000", "5000"])));
    assert!(text.contains("failed: <&> dir run 4 (all): write f: <timeout> & gone"));
}

#[test]
fn terminal_summary_of_a_sweep() {
    let text = terminal_summary(&sweep());
    print!("{text}");
    let row = text.lines().find(|l| l.starts_with("io_size=4 KiB, threads=1 ")).unwrap();
    assert!(row.contains("13.5 ± 6.35 (2)") && row.ends_with("2.00"), "{row}");
    assert_eq!(text.lines().filter(|l| l.starts_with("io_size=") && l.contains(" READ ")).count(), 6);
    // Aligned: the metric column starts at the same place on every row.
    let lines: Vec<&str> = text.lines().skip(3).take(7).collect();
    let at = lines[0].find("metric").unwrap();
    assert!(lines[1..].iter().all(|l| l.find("mbps") == Some(at)), "{lines:#?}");
}

#[test]
fn numbers_read_well() {
    assert_eq!(num(1234.4), "1234");
    assert_eq!(num(12.345), "12.3");
    assert_eq!(num(0.012345), "0.0123");
    assert_eq!(num(2.0), "2");
    assert_eq!(bytes(4096.0), "4 KiB");
    assert_eq!(bytes(1536.0), "1.5 KiB");
    assert_eq!(bytes(1048576.0), "1 MiB");
    assert_eq!(micros(850.0), "850 µs");
    assert_eq!(micros(1500.0), "1.5 ms");
    assert_eq!(html::utc(0), "1970-01-01 00:00:00 UTC");
    assert_eq!(html::utc(951_782_400), "2000-02-29 00:00:00 UTC");
    assert_eq!(esc("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
}

#[test]
fn axes_tick_in_human_units() {
    let x = Axis::log([4096.0, 1048576.0], Unit::Bytes, "io_size");
    let labels: Vec<String> = x.ticks().iter().map(|v| x.unit.fmt(*v)).collect();
    assert_eq!(labels.first().map(String::as_str), Some("4 KiB"));
    assert_eq!(labels.last().map(String::as_str), Some("1 MiB"));
    let y = Axis::log([30.0, 250_000.0], Unit::Micros, "latency");
    assert_eq!((y.lo, y.hi), (10.0, 1e6));
    assert!(y.ticks().contains(&1000.0));
    let lin = Axis::linear([0.0, 317.0], Unit::Plain, "MB/s", true);
    assert_eq!((lin.lo, lin.hi), (0.0, 400.0));
    assert_eq!(lin.ticks(), [0.0, 100.0, 200.0, 300.0, 400.0]);
}

/// copy: one run per target, where the second cannot copy or clone in
/// place (an NFSv3 server).
fn copy_report() -> BenchReport {
    let mut runs = Vec::new();
    for (target, supported) in [("v42", true), (ODD, false)] {
        for run in 1..=2 {
            let mut r = RunRecord { target: target.into(), run, ok: true, ..Default::default() };
            r.point = BTreeMap::from([("size".to_string(), json!(8 << 20)), ("io_size".to_string(), json!(1 << 20))]);
            r.metrics.insert("read_write".into(), json!("ok"));
            r.metrics.insert("read_write_s".into(), json!(0.5));
            r.metrics.insert("read_write_mbps".into(), json!(16.8));
            for key in ["server_copy", "clone"] {
                if supported && key == "server_copy" {
                    r.metrics.insert(key.into(), json!("ok"));
                    r.metrics.insert(format!("{key}_s"), json!(0.25 * run as f64));
                    r.metrics.insert(format!("{key}_mbps"), json!(100.0));
                } else {
                    r.metrics.insert(key.into(), json!("not supported"));
                    r.metrics.insert(format!("{key}_reason"), json!(format!("{key} <needs> NFSv4.2 & more")));
                    r.metrics.insert(format!("{key}_s"), Value::Null);
                    r.metrics.insert(format!("{key}_mbps"), Value::Null);
                }
            }
            let speedup = if supported { json!(10.0 / run as f64) } else { Value::Null };
            r.metrics.insert("copy_speedup".into(), speedup);
            runs.push(r);
        }
    }
    BenchReport {
        workload: "copy".into(),
        targets: vec!["v42".into(), ODD.into()],
        metrics: ["copy_speedup", "server_copy_mbps", "read_write_mbps", "clone_mbps"].map(String::from).to_vec(),
        runs,
        ..Default::default()
    }
}

#[test]
fn copy_report_lists_each_method_and_why_one_cannot_run() {
    let report = copy_report();
    let rows = copy_rows(&summarized(&report));
    assert_eq!(rows.len(), 6, "three methods of two targets");
    let row = |t: &str, m: &str| rows.iter().find(|r| r.target == t && r.method == m).unwrap();
    let copy = row("v42", "server-copy");
    assert_eq!((copy.status, copy.runs, copy.secs, copy.mbps), ("ok", 2, Some(0.375), Some(100.0)));
    let clone = row("v42", "clone");
    assert_eq!((clone.status, clone.runs, clone.secs), ("not supported", 0, None));
    assert_eq!(clone.reason.as_deref(), Some("clone <needs> NFSv4.2 & more"));
    assert_eq!(row(ODD, "read-write").status, "ok");

    let text = terminal_summary(&report);
    assert!(text.contains("copy methods"), "{text}");
    assert!(text.contains("not supported: server-copy on <&> dir: server_copy <needs> NFSv4.2 & more"), "{text}");
    let (_dir, html, files) = written(&report);
    assert_eq!(files, ["throughput.svg", "copy_speedup.svg"]);
    assert!(html.contains("<h2>Copy methods</h2>"));
    assert!(html.contains("not supported: clone &lt;needs&gt; NFSv4.2 &amp; more"), "reasons escaped");
    assert!(html.contains("at least 5×"));
}
