//! Every workload at tiny scale on temporary directories: the runs succeed,
//! carry their metrics, and leave nothing behind.

mod common;

use common::{assert_headlines, bench, entries};
use serde_json::Value;

fn tmp() -> (tempfile::TempDir, String) {
    let d = tempfile::tempdir().unwrap();
    let s = d.path().to_str().unwrap().to_string();
    (d, s)
}

#[test]
fn seqwrite_records_every_call_and_round_trips_through_json() {
    let (d, t) = tmp();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    let report = bench(&[
        "seqwrite",
        "--target",
        &t,
        "--size",
        "256KiB,1MiB",
        "--io-size",
        "64KiB",
        "--runs",
        "2",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(report.runs.len(), 4);
    assert_eq!(report.metrics, ["write_mbps", "flush_mbps", "close_mbps"]);
    assert_headlines(&report);
    assert!(entries(d.path()).is_empty(), "working directories left behind");

    let text = std::fs::read_to_string(&json).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let runs = v["runs"].as_array().unwrap();
    for r in runs {
        for key in ["write_mbps", "flush_mbps", "close_mbps", "latency_p99_us", "calls_over_1ms", "elapsed_s"] {
            assert!(r[key].is_number(), "{key} missing in {r}");
        }
        let calls = r["call_latency_us"].as_array().unwrap().len() as u64;
        assert_eq!(calls, r["point"]["size"].as_u64().unwrap() / 65536);
        assert_eq!(r["ok"], true);
    }
    assert!(v["host"]["cpus"].as_u64().unwrap() >= 1);
    assert_eq!(v["params"]["io_size"], serde_json::json!([65536]));
    let back: bench::model::BenchReport = serde_json::from_str(&text).unwrap();
    assert_eq!(serde_json::to_value(&back).unwrap(), v);
    assert!(!back.summary.is_empty());
}

#[test]
fn two_targets_alternate_and_get_ratios() {
    let (_a, ta) = tmp();
    let (_b, tb) = tmp();
    let out = tempfile::tempdir().unwrap();
    let html = out.path().join("report");
    let r = bench(&[
        "seqwrite",
        "--target",
        &ta,
        "--target",
        &tb,
        "--size",
        "512KiB",
        "--runs",
        "2",
        "--report",
        html.to_str().unwrap(),
    ]);
    assert!(html.join("index.html").is_file());
    let order: Vec<&str> = r.runs.iter().map(|r| r.target.as_str()).collect();
    assert_eq!(order, [&ta, &tb, &ta, &tb]);
    assert_eq!(r.ratios.len(), 3, "one ratio per headline metric");
    assert!(r.ratios.iter().all(|x| x.baseline == ta && x.target == tb && x.ratio > 0.0));
}

#[test]
fn data_sweeps_modes_io_sizes_and_threads() {
    let (_d, t) = tmp();
    let r = bench(&["data", "--target", &t, "--size", "1MiB", "--io-size", "64KiB,256KiB", "--threads", "1,2"]);
    assert_eq!(r.runs.len() / 3, 4 * 2 * 2);
    assert_headlines(&r);
    let seq_read = r.runs.iter().find(|x| x.point["mode"] == "seq-read").unwrap();
    assert_eq!(seq_read.metrics["ops"], 16, "the whole file, once");
}

#[test]
fn data_with_a_duration_and_sync() {
    let (_d, t) = tmp();
    let r = bench(&[
        "data",
        "--target",
        &t,
        "--size",
        "256KiB",
        "--mode",
        "rand-write",
        "--sync",
        "--duration",
        "200ms",
        "--runs",
        "1",
    ]);
    assert_eq!(r.runs.len(), 1);
    assert!(r.runs[0].elapsed_s >= 0.2);
}

#[test]
fn metadata_runs_all_four_operations() {
    let (d, t) = tmp();
    let r = bench(&["metadata", "--target", &t, "--files", "200", "--threads", "1,3", "--runs", "1"]);
    assert_eq!(r.runs.len(), 8);
    assert_eq!(r.metrics, ["ops_per_sec"]);
    assert_headlines(&r);
    for run in &r.runs {
        let ops = run.metrics["ops"].as_u64().unwrap();
        match run.point["op"].as_str().unwrap() {
            // A tree lists its directories too.
            "list" | "stat" => assert!(ops > 200, "{ops}"),
            _ => assert_eq!(ops, 200),
        }
        assert!(run.elapsed_s > 0.0);
    }
    assert!(entries(d.path()).is_empty());
}

#[test]
fn macro_personalities_run_for_their_duration() {
    let (_d, t) = tmp();
    let r = bench(&["macro", "--target", &t, "--duration", "1s", "--files", "40", "--threads", "3", "--runs", "1"]);
    let names: Vec<&str> = r.runs.iter().map(|x| x.point["personality"].as_str().unwrap()).collect();
    assert_eq!(names, ["fileserver", "webserver", "varmail"]);
    assert_headlines(&r);
    for run in &r.runs {
        assert!(run.metric("ops").unwrap() > 10.0, "{:?}", run.metrics);
        assert!(run.elapsed_s >= 1.0);
    }
}

#[test]
fn multi_client_aggregates_clients() {
    let (d, t) = tmp();
    let r = bench(&["multi-client", "--target", &t, "--clients", "1,2", "--size", "1MiB", "--runs", "1", "--keep"]);
    assert_eq!(r.metrics, ["write_mbps", "read_mbps"]);
    assert_headlines(&r);
    let clients: Vec<u64> = r.runs.iter().map(|x| x.point["clients"].as_u64().unwrap()).collect();
    assert_eq!(clients, [1, 2]);
    assert_eq!(r.runs[1].metrics["bytes_read"], 2 << 20);
    // --keep leaves the per-client working directories.
    let kept = entries(d.path());
    assert_eq!(kept.len(), 2);
    assert!(kept.iter().all(|k| k.starts_with("nfsx-bench-")));
}

#[test]
fn clients_option_applies_to_any_workload() {
    let (_d, t) = tmp();
    let r =
        bench(&["seqwrite", "--target", &t, "--size", "128KiB", "--io-size", "32KiB", "--clients", "2", "--runs", "1"]);
    assert_eq!(r.runs[0].point["clients"], 2);
    assert_eq!(r.runs[0].metrics["call_latency_us"].as_array().unwrap().len(), 8);
}

/// copy on a local directory: copy_file_range(2) as the in-place copy,
/// read and write through the process, FICLONE where the file system can;
/// two clients copy their own files at once and leave nothing behind.
#[test]
fn copy_on_a_directory_with_two_clients() {
    let (d, t) = tmp();
    let r = bench(&[
        "copy",
        "--target",
        &t,
        "--size",
        "2MiB,3000KiB",
        "--io-size",
        "256KiB",
        "--clients",
        "2",
        "--runs",
        "1",
    ]);
    assert_eq!(r.runs.len(), 2, "two sizes");
    for run in &r.runs {
        assert_eq!(run.point["clients"], 2);
        assert_eq!(run.metrics["read_write"], "ok");
        assert!(run.metric("read_write_mbps").is_some_and(|x| x > 0.0));
        for key in ["server_copy", "clone"] {
            let ok = run.metrics[key] == "ok";
            assert!(ok || run.metrics[key] == "not supported", "{key}: {:?}", run.metrics);
            assert_eq!(run.metric(&format!("{key}_s")).is_some(), ok);
            assert_eq!(run.metrics.contains_key(&format!("{key}_reason")), !ok);
        }
        assert_eq!(run.metrics["copy_speedup"].is_number(), run.metrics["server_copy"] == "ok");
        assert_eq!(run.metrics["copy_bytes"], run.point["size"]);
    }
    assert!(entries(d.path()).is_empty(), "working directories left behind");
    let text = bench::report::terminal_summary(&r);
    assert!(text.contains("copy methods") && text.contains("read-write"), "{text}");
}

/// --verify reads every byte back and compares it (the comparison itself
/// is unit-tested in the workload).
#[test]
fn multi_client_verify_reads_everything_back() {
    let (_d, t) = tmp();
    let r = bench(&["multi-client", "--target", &t, "--clients", "2", "--size", "3MiB", "--runs", "1", "--verify"]);
    assert_eq!(r.runs[0].metrics["bytes_read"], 6 << 20);
}
