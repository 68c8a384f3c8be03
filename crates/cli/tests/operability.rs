//! What an operator sees: metrics, shutdown, errors and help.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use support::*;

fn get_metrics(port: u16) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    body
}

#[test]
fn prometheus_metrics_count_procedures_and_latency() {
    let mport = free_port();
    let cfg = format!("metrics = \"127.0.0.1:{mport}\"");
    let srv = TestServer::start(ServerOpts { extra_config: &cfg, ..Default::default() });
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("f");
    random_file(&src, 3 << 20, 1);
    ok(&run("nfs-cp", &[src.to_str().unwrap(), &srv.url("/f")], Duration::from_secs(60)), "nfs-cp");
    let m = get_metrics(mport);
    assert!(m.starts_with("HTTP/1.0 200 OK"), "{m}");
    let writes: u64 = m
        .lines()
        .find(|l| l.starts_with("nfsx_requests_total{proc=\"nfs3.WRITE\"}"))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or(0);
    assert!(writes >= 3, "WRITE count {writes}:\n{m}");
    assert!(m.contains("nfsx_request_duration_seconds_bucket{le=\"+Inf\",proc=\"nfs3.WRITE\"}"));
    assert!(m.contains("# TYPE nfsx_request_duration_seconds histogram"));
    assert!(m.contains("nfsx_connections_total"));
    // What the request path does: placement, the handle cache, flushes,
    // memory; and a complete OpenMetrics exposition.
    for needle in [
        "nfsx_requests_inline_total ",
        "nfsx_requests_worker_total ",
        "nfsx_backend_handle_cache_hits_total{export=",
        "nfsx_resident_memory_bytes ",
        "\n# EOF\n",
    ] {
        assert!(m.contains(needle), "{needle} missing:\n{m}");
    }
    let other = {
        let mut s = TcpStream::connect(("127.0.0.1", mport)).unwrap();
        s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
        let mut body = String::new();
        s.read_to_string(&mut body).unwrap();
        body
    };
    assert!(other.starts_with("HTTP/1.1 404"), "{other}");
}

#[test]
fn sigterm_finishes_and_exits_cleanly() {
    let mut srv = TestServer::start(ServerOpts::default());
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("f");
    random_file(&src, 64 << 20, 2);
    // A copy is running when the signal arrives.
    let mut cp = Command::new("nfs-cp").args([src.to_str().unwrap(), &srv.url("/f")]).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let t = Instant::now();
    let status = srv.sigterm();
    assert!(status.success(), "nfsx exited with {status} on SIGTERM:\n{}", srv.log_text());
    assert!(t.elapsed() < Duration::from_secs(12), "shutdown took {:?}", t.elapsed());
    let _ = cp.kill();
    let _ = cp.wait();
    assert!(srv.log_text().contains("nfsx stopped"), "{}", srv.log_text());
}

#[test]
fn bad_command_lines_get_one_clear_line() {
    let bin = env!("CARGO_BIN_EXE_nfsx");
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let out = Command::new(bin)
        .args(["serve", "/nonexistent/dir", "--listen", "127.0.0.1:0", "--state-dir"])
        .arg(&state)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/dir"), "{err}");

    let cfg = tmp.path().join("bad.toml");
    std::fs::write(&cfg, "wtmax = 5\n").unwrap();
    let out = Command::new(bin).args(["serve", "/tmp", "--config"]).arg(&cfg).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml") && err.contains("wtmax"), "{err}");

    let exports = tmp.path().join("exports");
    std::fs::write(&exports, "/tmp 10.0.0.1(rw,bogus_option)\n").unwrap();
    let out = Command::new(bin)
        .args(["serve", "--listen", "127.0.0.1:0", "--exports"])
        .arg(&exports)
        .arg("--state-dir")
        .arg(&state)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("exports:1"), "{err}");
}

#[test]
fn help_explains_serve() {
    let out = Command::new(env!("CARGO_BIN_EXE_nfsx")).args(["serve", "--help"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in ["--listen", "--backend", "--exports", "--config", "--state-dir", "--metrics", "portmapper", "nfs-ls"]
    {
        assert!(text.contains(needle), "serve --help lacks {needle}:\n{text}");
    }
}
