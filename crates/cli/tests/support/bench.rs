//! Running `nfsx bench` as a user does, and reading its JSON.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use serde_json::Value;

use super::run;

/// `nfsx bench ARGS --quiet --json DIR/out.json`; the exit status and the
/// parsed JSON (if written).
pub fn bench(args: &[&str], dir: &Path, limit: Duration) -> (Output, Option<Value>) {
    let json = dir.join("out.json");
    let _ = std::fs::remove_file(&json);
    let mut all: Vec<&str> = vec!["bench"];
    all.extend_from_slice(args);
    let json_s = json.to_string_lossy().to_string();
    all.extend_from_slice(&["--quiet", "--json", &json_s]);
    let out = run(env!("CARGO_BIN_EXE_nfsx"), &all, limit);
    let value = std::fs::read_to_string(&json).ok().map(|t| serde_json::from_str(&t).expect("bench JSON parses"));
    (out, value)
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

/// Every run object of the report.
pub fn runs(v: &Value) -> &Vec<Value> {
    v["runs"].as_array().expect("runs array")
}

/// Asserts the bench exited 0 with every run ok, and returns the runs.
pub fn all_ok<'a>(out: &Output, v: &'a Option<Value>) -> &'a Vec<Value> {
    assert!(out.status.success(), "bench failed ({}): {}", out.status, stderr(out));
    let v = v.as_ref().expect("JSON written");
    let rs = runs(v);
    assert!(!rs.is_empty());
    for r in rs {
        assert_eq!(r["ok"], true, "run failed: {}", r["error"]);
    }
    rs
}

/// Average round-trip time in µs of `op` in a run's counters.
pub fn avg_rtt_us(run: &Value, op: &str) -> f64 {
    let s = run["op_stats"].as_array().unwrap().iter().find(|s| s["op"] == op).expect("op counted");
    s["rtt_us"].as_f64().unwrap() / s["count"].as_f64().unwrap()
}
