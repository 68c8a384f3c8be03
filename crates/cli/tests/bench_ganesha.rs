//! `nfsx bench` with the nfsx server and NFS-Ganesha side by side, the way
//! docs/BENCHMARKS.md compares them, at small scale. Needs a running
//! Ganesha (scripts/ganesha.sh start, which the test suite does), hence
//! ignored in a plain `cargo test`. NFSX_GANESHA_URL overrides its URL.

mod support;

use std::time::Duration;

use support::bench::*;
use support::{ServerOpts, TestServer};

fn ganesha() -> String {
    std::env::var("NFSX_GANESHA_URL").unwrap_or_else(|_| "nfs://127.0.0.1/export".into())
}

fn side_by_side(workload_args: &[&str]) -> serde_json::Value {
    let srv = TestServer::start(ServerOpts::default());
    let tmp = tempfile::tempdir().unwrap();
    let nfsx = format!("nfs://127.0.0.1:{}{}?version=3", srv.port, srv.export.display());
    let g = format!("{}?version=3", ganesha());
    let mut args = workload_args.to_vec();
    args.extend_from_slice(&["--target", &nfsx, "--target", &g, "--runs", "3"]);
    let (out, v) = bench(&args, tmp.path(), Duration::from_secs(300));
    all_ok(&out, &v);
    let v = v.unwrap();
    let ratios = v["ratios"].as_array().unwrap();
    assert!(ratios.iter().any(|r| r["target"] == g.as_str()), "Ganesha compared with nfsx: {ratios:?}");
    v
}

#[test]
#[ignore = "needs NFS-Ganesha running (scripts/ganesha.sh start)"]
fn seqwrite_nfsx_vs_ganesha() {
    let v = side_by_side(&["seqwrite", "--size", "8MiB"]);
    for r in runs(&v) {
        assert_eq!(r["call_latency_us"].as_array().unwrap().len(), 1024);
    }
}

#[test]
#[ignore = "needs NFS-Ganesha running (scripts/ganesha.sh start)"]
fn metadata_nfsx_vs_ganesha() {
    side_by_side(&["metadata", "--op", "create,read-small,list,stat", "--files", "200", "--threads", "4"]);
}

#[test]
#[ignore = "needs NFS-Ganesha running (scripts/ganesha.sh start)"]
fn data_through_the_delay_proxy_vs_ganesha() {
    side_by_side(&["data", "--mode", "seq-write,rand-read", "--size", "4MiB", "--delay", "0,5ms"]);
}
