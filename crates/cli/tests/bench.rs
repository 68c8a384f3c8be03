//! `nfsx bench` end to end, as a user runs it: every workload at small
//! scale against an `nfsx serve` child process through the nfsx client,
//! side by side with a local directory, through the delay proxy, and with
//! the bad inputs the tool must answer with one clear line.

mod support;

use std::time::{Duration, Instant};

use support::bench::*;
use support::{ServerOpts, TestServer};

const LIMIT: Duration = Duration::from_secs(240);

fn target(srv: &TestServer) -> String {
    format!("nfs://127.0.0.1:{}{}", srv.port, srv.export.display())
}

/// The same over NFSv3 (a URL without a version speaks NFSv4.2 to nfsx).
fn target_v3(srv: &TestServer) -> String {
    format!("{}?version=3", target(srv))
}

#[test]
fn seqwrite_against_nfsx_and_a_directory_with_report() {
    let srv = TestServer::start(ServerOpts::default());
    let tmp = tempfile::tempdir().unwrap();
    let local = tmp.path().join("local");
    std::fs::create_dir(&local).unwrap();
    let report = tmp.path().join("report");
    let (t, l, r) = (target_v3(&srv), local.to_string_lossy().to_string(), report.to_string_lossy().to_string());
    let args = ["seqwrite", "--target", &t, "--target", &l, "--size", "2MiB", "--runs", "3", "--report", &r];
    let (out, v) = bench(&args, tmp.path(), LIMIT);
    let rs = all_ok(&out, &v);
    assert_eq!(rs.len(), 6, "3 runs of each target");
    for run in rs {
        for key in ["write_mbps", "flush_mbps", "close_mbps"] {
            assert!(run[key].as_f64().unwrap() > 0.0, "{key} in {run}");
        }
        assert_eq!(run["call_latency_us"].as_array().unwrap().len(), 256, "one latency per 8 KiB call");
    }
    let nfs_run = rs.iter().find(|r| r["target"] == t.as_str()).unwrap();
    assert_eq!(nfs_run["protocol"], "NFSv3");
    assert!(rs.iter().find(|r| r["target"] == l.as_str()).unwrap().get("protocol").is_none());
    let ops: Vec<&str> = nfs_run["op_stats"].as_array().unwrap().iter().map(|s| s["op"].as_str().unwrap()).collect();
    assert!(ops.contains(&"WRITE") && ops.contains(&"COMMIT"), "{ops:?}");
    let v = v.unwrap();
    assert!(!v["ratios"].as_array().unwrap().is_empty(), "ratio of the directory to the server");
    let index = std::fs::read_to_string(report.join("index.html")).unwrap();
    assert!(index.contains("latency-trace.svg"));
    assert!(report.join("latency-trace.svg").exists() && report.join("latency-histogram.svg").exists());
    assert!(String::from_utf8_lossy(&out.stdout).contains("write_mbps"), "terminal summary printed");
}

#[test]
fn delay_proxy_adds_the_round_trip() {
    let srv = TestServer::start(ServerOpts::default());
    let tmp = tempfile::tempdir().unwrap();
    let t = target_v3(&srv);
    let args = ["seqwrite", "--target", &t, "--size", "1MiB", "--runs", "3", "--delay", "0,20ms"];
    let (out, v) = bench(&args, tmp.path(), LIMIT);
    let rs = all_ok(&out, &v);
    let (mut plain, mut delayed) = (Vec::new(), Vec::new());
    for r in rs {
        let rtt = avg_rtt_us(r, "COMMIT");
        if r["point"]["delay_ms"].as_f64().unwrap() > 0.0 {
            delayed.push(rtt)
        } else {
            plain.push(rtt)
        }
    }
    assert_eq!((plain.len(), delayed.len()), (3, 3));
    assert!(delayed.iter().all(|d| *d >= 19_000.0), "COMMIT round trips through the proxy: {delayed:?} µs");
    // A COMMIT can take 20 ms of its own on a loaded machine (ext4's
    // flush): the best of the plain runs shows no delay was added.
    let best = plain.iter().copied().fold(f64::INFINITY, f64::min);
    assert!(best < 19_000.0, "no delay without --delay: {plain:?} µs");
}

#[test]
fn data_metadata_macro_and_multi_client_smoke() {
    let srv = TestServer::start(ServerOpts::default());
    let tmp = tempfile::tempdir().unwrap();
    let t = target_v3(&srv);
    let cases: [&[&str]; 5] = [
        &[
            "data",
            "--mode",
            "seq-read,seq-write,rand-read,rand-write",
            "--size",
            "2MiB",
            "--io-size",
            "4KiB,64KiB",
            "--threads",
            "1,2",
        ],
        &["metadata", "--op", "read-small,create,list,stat", "--files", "200", "--threads", "1,8"],
        &["metadata", "--op", "list,stat", "--files", "200", "--warm"],
        &[
            "macro",
            "--personality",
            "fileserver,webserver,varmail",
            "--files",
            "40",
            "--threads",
            "4",
            "--duration",
            "1s",
        ],
        &["multi-client", "--clients", "1,3", "--size", "1MiB"],
    ];
    for case in cases {
        let mut args = case.to_vec();
        args.extend_from_slice(&["--target", &t, "--runs", "3"]);
        let (out, v) = bench(&args, tmp.path(), LIMIT);
        let rs = all_ok(&out, &v);
        let v = v.as_ref().unwrap();
        let headline = v["metrics"][0].as_str().unwrap();
        for r in rs {
            assert!(r[headline].as_f64().is_some_and(|x| x > 0.0), "{} {headline} in {r}", case[0]);
        }
        assert!(!v["summary"].as_array().unwrap().is_empty());
    }
}

#[test]
fn bad_targets_and_parameters_get_one_clear_line() {
    let srv = TestServer::start(ServerOpts::default());
    let tmp = tempfile::tempdir().unwrap();
    let wrong_export = format!("nfs://127.0.0.1:{}/no/such/export", srv.port);
    let cases: [(&[&str], &str); 5] = [
        (&["seqwrite", "--target", "nfs://127.0.0.1:1/x"], "127.0.0.1:1"),
        (&["seqwrite", "--target", &wrong_export], "/no/such/export"),
        (&["seqwrite", "--target", "/no/such/dir"], "/no/such/dir"),
        (&["seqwrite", "--target", "/tmp", "--size", "0"], "--size"),
        (&["data", "--target", "/tmp", "--threads", "0"], "--threads"),
    ];
    for (args, needle) in cases {
        let start = Instant::now();
        let (out, _) = bench(args, tmp.path(), Duration::from_secs(60));
        let err = stderr(&out);
        assert!(!out.status.success(), "{args:?} should fail");
        assert!(err.contains(needle), "{args:?}: error should name {needle}: {err}");
        assert!(start.elapsed() < Duration::from_secs(30), "{args:?} took {:?}", start.elapsed());
    }
}

#[test]
fn server_dying_mid_run_leaves_marked_partial_results() {
    let mut srv = TestServer::start(ServerOpts::default());
    let tmp = tempfile::tempdir().unwrap();
    let t = target_v3(&srv);
    let cfg = tmp.path().join("client.toml");
    std::fs::write(&cfg, "reconnect_timeout_ms = 1000\n[rpc]\ntimeout_ms = 1000\nretrans = 1\n").unwrap();
    let c = cfg.to_string_lossy().to_string();
    let args = ["seqwrite", "--target", &t, "--size", "1GiB", "--runs", "3", "--client-config", &c];
    // Kill the server once the first run is under way (its working
    // directory exists), however fast this machine is.
    let export = srv.export.clone();
    let killer = std::thread::spawn(move || {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(60) {
            let busy = std::fs::read_dir(&export)
                .map(|d| d.flatten().any(|e| e.file_name().to_string_lossy().starts_with("nfsx-bench-")))
                .unwrap_or(false);
            if busy {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(300));
        srv.kill9();
    });
    let (out, v) = bench(&args, tmp.path(), Duration::from_secs(120));
    killer.join().unwrap();
    assert_eq!(out.status.code(), Some(3), "partial results: {}", stderr(&out));
    let v = v.expect("JSON kept");
    assert_eq!(v["partial"], true);
    assert!(runs(&v).iter().any(|r| r["ok"] == false && r["error"].as_str().is_some()));
}

/// The NFSv4.1 workloads: a conflicting open while another client holds a
/// delegation (recall), and small files re-read for a while, where the
/// steady state under delegations makes no call (read-small --duration).
#[test]
fn recall_and_read_small_over_time_against_nfsx_over_nfsv41() {
    let srv = TestServer::start(ServerOpts::default());
    let tmp = tempfile::tempdir().unwrap();
    let t = format!("{}?version=4.1", target(&srv));
    let (out, v) = bench(&["recall", "--target", &t, "--files", "5", "--runs", "2"], tmp.path(), LIMIT);
    for r in all_ok(&out, &v) {
        assert_eq!(r["delegations_returned"].as_u64(), Some(5), "{r}");
        let ms = r["recall_ms"].as_f64().unwrap();
        assert!(ms > 0.0 && ms < 1000.0, "{r}");
    }
    let args = ["metadata", "--op", "read-small", "--files", "20", "--duration", "2s", "--target", &t, "--runs", "1"];
    let (out, v) = bench(&args, tmp.path(), LIMIT);
    let rs = all_ok(&out, &v);
    let r = &rs[0];
    let steady = r["steady_ops_per_sec"].as_f64().unwrap();
    let first = r["first_pass_ops_per_sec"].as_f64().unwrap();
    assert!(steady > first, "re-reads under delegations are faster than the first pass: {r}");
    assert!(!r["series_ops_per_sec"].as_array().unwrap().is_empty());
    let ops: Vec<(&str, u64)> = r["op_stats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["op"].as_str().unwrap(), s["count"].as_u64().unwrap()))
        .collect();
    let reads = ops.iter().find(|(op, _)| *op == "READ").map_or(0, |o| o.1);
    assert!(reads <= 20, "one READ per file, in the first pass only: {ops:?}");
}

/// Locked reads (Chen 2015 Table 1) over NFSv3 (NLM) and NFSv4.1 with
/// and without delegations, beside a local directory (fcntl locks): under
/// a delegation the data is read once and only LOCK/LOCKU reach the
/// server.
#[test]
fn locked_read_with_and_without_delegations() {
    let srv = TestServer::start(ServerOpts::default());
    let tmp = tempfile::tempdir().unwrap();
    let local = tmp.path().join("local");
    std::fs::create_dir(&local).unwrap();
    let v3 = format!("{}?version=3", target(&srv));
    let on = format!("{}?version=4.1", target(&srv));
    let off = format!("{}?version=4.1&delegations=0", target(&srv));
    let l = local.to_string_lossy().to_string();
    let args = [
        "locked-read",
        "--files",
        "5",
        "--target",
        &v3,
        "--target",
        &on,
        "--target",
        &off,
        "--target",
        &l,
        "--runs",
        "1",
    ];
    let (out, v) = bench(&args, tmp.path(), LIMIT);
    let rs = all_ok(&out, &v);
    let count = |r: &serde_json::Value, op: &str| -> u64 {
        r["op_stats"].as_array().unwrap().iter().filter(|s| s["op"] == op).map(|s| s["count"].as_u64().unwrap()).sum()
    };
    let with = rs.iter().find(|r| r["target"] == on.as_str()).unwrap();
    let without = rs.iter().find(|r| r["target"] == off.as_str()).unwrap();
    // 2 clients x 5 files x 10 locked reads; the data read once per file
    // and client stays cached through the locks (its attributes come with
    // each LOCK and do not change).
    assert!(count(without, "READ") <= 20, "{without}");
    assert_eq!(count(without, "LOCK"), 100);
    assert_eq!(count(without, "GETATTR"), 0, "the attributes ride in the LOCK compound");
    assert!(count(with, "READ") < 30, "read about once per file and client under the delegations: {with}");
    // Locks go to the server under a read delegation; the client that
    // made the files holds write delegations on them until the other
    // client's first open recalls each, and locks locally until then.
    assert!(count(with, "LOCK") <= 100, "{with}");
    assert!(with["calls_per_client"].as_f64().unwrap() < without["calls_per_client"].as_f64().unwrap());
    // NFSv3: the lock manager's LOCK and UNLOCK, and a GETATTR after each
    // lock that finds the cached data still good.
    let nfs3 = rs.iter().find(|r| r["target"] == v3.as_str()).unwrap();
    assert_eq!((nfs3["protocol"].as_str(), with["protocol"].as_str()), (Some("NFSv3"), Some("NFSv4.1")));
    assert_eq!(count(nfs3, "NLM_LOCK"), 100, "{nfs3}");
    assert_eq!(count(nfs3, "NLM_UNLOCK"), 100);
    assert!(count(nfs3, "READ") <= 20);
}

/// A target without a version speaks the newest NFSv4 minor version the
/// server offers (4.2 with nfsx), and each run records the protocol it
/// spoke.
#[test]
fn a_target_without_a_version_is_negotiated_and_recorded() {
    let srv = TestServer::start(ServerOpts::default());
    let tmp = tempfile::tempdir().unwrap();
    let t = target(&srv);
    let (out, v) = bench(&["seqwrite", "--target", &t, "--size", "1MiB", "--runs", "1"], tmp.path(), LIMIT);
    let rs = all_ok(&out, &v);
    assert_eq!(rs[0]["protocol"], "NFSv4.2", "{}", rs[0]);
}

/// The calls a copy method made, by procedure.
fn method_calls(run: &serde_json::Value, key: &str) -> std::collections::BTreeMap<String, u64> {
    let calls = run[format!("{key}_calls")].as_object().unwrap_or_else(|| panic!("{key}_calls in {run}"));
    calls.iter().map(|(op, n)| (op.clone(), n.as_u64().unwrap())).collect()
}

/// NFSv4.2 server-side copy (issue "NFSv4.2 and RPC-with-TLS"): each run
/// copies one file by COPY, by READ and WRITE through the client and by
/// CLONE. COPY moves no data over the wire; over NFSv3 (and on a file
/// system without reflinks) the methods the target cannot do are reported
/// as not supported and the run still measures read-write. The server
/// copies at most 2 MiB within a request, so the 8 MiB COPY runs in the
/// background and ends with CB_OFFLOAD, as a 1 GiB one does by default.
#[test]
fn copy_by_server_side_copy_read_write_and_clone() {
    let srv = TestServer::start(ServerOpts {
        extra_config: "[core.nfs4]\ncopy_sync_max = 2097152\n",
        ..ServerOpts::default()
    });
    let tmp = tempfile::tempdir().unwrap();
    let local = tmp.path().join("local");
    std::fs::create_dir(&local).unwrap();
    let v42 = format!("{}?version=4.2", target(&srv));
    let v3 = target_v3(&srv);
    let l = local.to_string_lossy().to_string();
    let args = ["copy", "--size", "8MiB", "--runs", "2", "--target", &v42, "--target", &v3, "--target", &l];
    let (out, v) = bench(&args, tmp.path(), LIMIT);
    let rs = all_ok(&out, &v);
    assert_eq!(rs.len(), 6, "2 runs of 3 targets");
    let size = 8u64 << 20;
    let v = v.as_ref().unwrap();
    assert_eq!(v["metrics"], serde_json::json!(["copy_speedup", "server_copy_mbps", "read_write_mbps", "clone_mbps"]));
    assert_eq!(v["params"]["methods"], serde_json::json!(["server-copy", "read-write", "clone"]));
    for r in rs {
        assert_eq!(r["copy_bytes"].as_u64(), Some(size), "{r}");
        assert_eq!(r["verified"], "whole file", "{r}");
        for key in ["server_copy", "read_write", "clone"] {
            assert!(r[key] == "ok" || r[key] == "not supported", "{key} in {r}");
            let ok = r[key] == "ok";
            assert_eq!(r[format!("{key}_s")].as_f64().is_some_and(|s| s > 0.0), ok, "{key}_s in {r}");
            assert_eq!(r[format!("{key}_mbps")].as_f64().is_some_and(|x| x > 0.0), ok, "{key}_mbps in {r}");
            assert_eq!(r[format!("{key}_reason")].as_str().is_some(), !ok, "{key}_reason in {r}");
        }
        assert_eq!(r["read_write"], "ok", "read-write is measured everywhere: {r}");
    }
    for r in rs.iter().filter(|r| r["target"] == v42.as_str()) {
        assert_eq!(r["protocol"], "NFSv4.2");
        assert_eq!(r["server_copy"], "ok", "{r}");
        // The copy happened in the server: a COPY, no data through the client.
        let calls = method_calls(r, "server_copy");
        assert!(calls.get("COPY").is_some_and(|&n| n >= 1), "{calls:?}");
        assert!(!calls.contains_key("READ") && !calls.contains_key("WRITE"), "{calls:?}");
        assert!(r["server_copy_wire_bytes"].as_u64().unwrap() < size / 100, "{r}");
        // The same copy through the client moved it twice and committed it.
        let calls = method_calls(r, "read_write");
        assert!(calls["READ"] >= 8 && calls["WRITE"] >= 8 && calls["COMMIT"] >= 1, "{calls:?}");
        assert!(r["read_write_wire_bytes"].as_u64().unwrap() >= 2 * size, "{r}");
        let speedup = r["read_write_s"].as_f64().unwrap() / r["server_copy_s"].as_f64().unwrap();
        assert!((r["copy_speedup"].as_f64().unwrap() / speedup - 1.0).abs() < 1e-3, "{r}");
        assert!(r["op_stats"].as_array().unwrap().iter().any(|s| s["op"] == "COPY"), "{r}");
        // The test export is on ext4, which cannot share blocks; a file
        // system that can (Btrfs, XFS) clones.
        assert!(method_calls(r, "clone").contains_key("CLONE"), "{r}");
        if r["clone"] == "not supported" {
            assert!(r["clone_reason"].as_str().unwrap().contains("NOTSUPP"), "{r}");
            assert!(r["clone_speedup"].is_null(), "{r}");
        } else {
            assert!(r["clone_speedup"].as_f64().unwrap() > 0.0, "{r}");
        }
    }
    for r in rs.iter().filter(|r| r["target"] == v3.as_str()) {
        assert_eq!(r["protocol"], "NFSv3");
        assert_eq!((r["server_copy"].as_str(), r["clone"].as_str()), (Some("not supported"), Some("not supported")));
        assert!(r["server_copy_reason"].as_str().unwrap().contains("NFSv3"), "{r}");
        assert!(r["copy_speedup"].is_null(), "{r}");
        let calls = method_calls(r, "read_write");
        assert!(calls["READ"] >= 8 && calls["WRITE"] >= 8 && calls["COMMIT"] >= 1, "{calls:?}");
        assert!(method_calls(r, "server_copy").is_empty(), "nothing sent for a copy NFSv3 cannot make: {r}");
    }
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(summary.contains("copy methods") && summary.contains("server-copy"), "{summary}");
    assert!(summary.contains("not supported: server-copy on"), "{summary}");
}

#[test]
fn copy_refuses_options_it_does_not_use() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 3] = [
        (&["copy", "--target", "/tmp", "--size", "8MiB", "--io-size", "16MiB"], "--io-size"),
        (&["copy", "--target", "/tmp", "--threads", "4"], "--threads"),
        (&["copy", "--target", "/tmp", "--mode", "seq-read"], "--mode"),
    ];
    for (args, needle) in cases {
        let (out, _) = bench(args, tmp.path(), Duration::from_secs(60));
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
    }
}

/// `--no-data-cache`: every read the workload makes is a READ at the
/// server. Without it, a file that fits in the client's data cache is
/// read from the server about once and then from the cache.
#[test]
fn no_data_cache_sends_every_read_to_the_server() {
    let srv = TestServer::start(ServerOpts::default());
    let tmp = tempfile::tempdir().unwrap();
    let t = target_v3(&srv);
    let reads = |extra: &[&str]| {
        let mut args = vec!["data", "--mode", "rand-read", "--size", "1MiB", "--io-size", "4KiB", "--duration", "1s"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--target", &t, "--runs", "1"]);
        let (out, v) = bench(&args, tmp.path(), LIMIT);
        let r = all_ok(&out, &v)[0].clone();
        let read_rpcs = r["op_stats"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["op"] == "READ")
            .map_or(0, |o| o["count"].as_u64().unwrap());
        (r["ops"].as_u64().unwrap(), read_rpcs, v.unwrap()["params"].clone())
    };
    let (ops, rpcs, params) = reads(&["--no-data-cache"]);
    assert!(ops > 256, "{ops} reads in a second");
    assert_eq!(rpcs, ops, "every read a READ");
    assert_eq!(params["no_data_cache"], true, "{params}");
    let (ops, rpcs, _) = reads(&[]);
    assert!(rpcs * 4 < ops, "with the cache most of {ops} reads stay in the client ({rpcs} READs)");
}

/// A run with one calling thread drives its client itself
/// (`drive_from_caller`). While that thread makes no call, the client must
/// still answer the server: a read delegation it holds is given back at
/// once when another client's OPEN for writing recalls it, not when the
/// lease runs out.
#[test]
fn a_lone_callers_client_answers_a_recall_while_it_makes_no_call() {
    use bench::target::OpenOptions;
    let srv = TestServer::start(ServerOpts::default());
    let url = format!("{}?version=4.1", target(&srv));
    let lone = bench::nfs::open(&url, &Default::default()).unwrap();
    lone.set_callers(1);
    let holder = lone.connect().unwrap();
    holder.write_whole("held", &[7u8; 4096]).unwrap();
    let mut f = holder.open("held", OpenOptions::read()).unwrap();
    let mut buf = vec![0u8; 4096];
    assert_eq!(f.read_at(0, &mut buf).unwrap(), 4096);
    f.close().unwrap();
    let returned = || holder.op_stats().iter().filter(|s| s.op == "DELEGRETURN").map(|s| s.count).sum::<u64>();
    assert_eq!(returned(), 0);

    // The opener is another target's client, on a runtime of its own;
    // this thread now waits for it, and nothing calls the holder.
    let other = bench::nfs::open(&url, &Default::default()).unwrap();
    other.set_callers(2);
    let opener = other.connect().unwrap();
    let start = Instant::now();
    opener.open("held", OpenOptions::read_write()).unwrap().close().unwrap();
    let took = start.elapsed();
    assert!(took < Duration::from_secs(3), "the recall was answered in {took:?}");
    assert_eq!(returned(), 1, "the holder gave its delegation back");
    assert_eq!(holder.stat("held").unwrap().size, 4096, "the holder still works");
}

/// CPU time of the calling thread.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec for the call to fill.
    assert_eq!(unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) }, 0);
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// A lone caller polls for its reply (`reply_poll_us`) for a bounded time
/// only: through 5 ms of delay each READ still gets its reply, and the
/// caller's thread spends about the budget per call, not the whole wait.
#[test]
fn a_lone_caller_polls_for_its_reply_no_longer_than_its_budget() {
    use bench::target::OpenOptions;
    let srv = TestServer::start(ServerOpts::default());
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("client.toml");
    std::fs::write(&config, "reply_poll_us = 500\n").unwrap();
    let opts = bench::nfs::NfsOptions { client_config: Some(config), no_data_cache: true, ..Default::default() };
    for vers in ["3", "4.1"] {
        let t = bench::nfs::open(&format!("{}?version={vers}", target(&srv)), &opts).unwrap();
        t.set_callers(1);
        let fs = t.connect().unwrap();
        fs.write_whole("polled", &[3u8; 8192]).unwrap();
        let mut f = fs.open("polled", OpenOptions::read()).unwrap();
        let mut buf = vec![0u8; 4096];
        // Without delay, each reply comes within the budget.
        for i in 0..200 {
            assert_eq!(f.read_at(i % 2 * 4096, &mut buf).unwrap(), 4096);
            assert!(buf.iter().all(|&b| b == 3));
        }
        drop(f);
        t.set_delay(Duration::from_millis(5), false).unwrap();
        let fs = t.connect().unwrap();
        let mut f = fs.open("polled", OpenOptions::read()).unwrap();
        let (wall, cpu) = (Instant::now(), thread_cpu());
        const READS: u32 = 20;
        for i in 0..READS {
            assert_eq!(f.read_at(u64::from(i % 2) * 4096, &mut buf).unwrap(), 4096);
        }
        let (wall, cpu) = (wall.elapsed(), thread_cpu() - cpu);
        assert!(wall >= Duration::from_millis(5) * READS, "NFSv{vers}: {READS} delayed READs in {wall:?}");
        assert!(cpu < Duration::from_micros(2500) * READS, "NFSv{vers}: the caller spent {cpu:?} of CPU over {wall:?}");
    }
}
