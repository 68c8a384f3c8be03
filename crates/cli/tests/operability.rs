//! What an operator sees: metrics, shutdown, errors and help.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use support::*;

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
    // Every record's RPC header decoded once, whatever the transport asked
    // before running it (placement, in place or not, write order).
    let sum_of = |prefix: &str| -> u64 {
        m.lines().filter(|l| l.starts_with(prefix)).filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok()).sum()
    };
    let answered = sum_of("nfsx_requests_total{");
    assert!(answered > writes);
    assert_eq!(sum_of("nfsx_rpc_headers_decoded_total "), answered, "{m}");
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

/// Sixteen writers of one file, each 4 KiB write its own UNSTABLE WRITE
/// (nfsx's client with `direct_writes`): the server runs those that find
/// another WRITE to the file running after it on the same worker (the
/// metrics say how many), and every byte lands where it was written.
#[test]
fn unstable_writes_to_one_file_are_chained_and_all_land() {
    let mport = free_port();
    let cfg = format!("metrics = \"127.0.0.1:{mport}\"");
    let srv = TestServer::start(ServerOpts { extra_config: &cfg, ..Default::default() });
    let url = format!("nfs://127.0.0.1:{}{}?version=3", srv.port, srv.export.display());
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    const WRITERS: usize = 16;
    const BLOCKS: usize = 64;
    let block = |w: usize, b: usize| vec![(w * BLOCKS + b) as u8 ^ 0x5a; 4096];
    rt.block_on(async {
        let settings = client::ClientSettings { direct_writes: true, ..Default::default() };
        let c = std::sync::Arc::new(client::Client::connect(&url, settings).await.unwrap());
        c.open("shared", client::OpenOptions::create()).await.unwrap().close().await.unwrap();
        let mut tasks = Vec::new();
        for w in 0..WRITERS {
            let c = c.clone();
            tasks.push(tokio::spawn(async move {
                let mut f = c.open("shared", client::OpenOptions::read_write()).await.unwrap();
                // Interleaved: writer w owns every WRITERS-th block.
                for b in 0..BLOCKS {
                    f.write(((b * WRITERS + w) * 4096) as u64, &block(w, b)).await.unwrap();
                }
                f.close().await.unwrap();
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
    let data = std::fs::read(srv.export.join("shared")).unwrap();
    assert_eq!(data.len(), WRITERS * BLOCKS * 4096);
    for (i, chunk) in data.chunks(4096).enumerate() {
        let (b, w) = (i / WRITERS, i % WRITERS);
        assert!(chunk == block(w, b).as_slice(), "block {i} (writer {w}, its block {b}) is not what was written");
    }
    let m = get_metrics(mport);
    let chained = counter(&m, "nfsx_requests_chained_total");
    assert!(chained > 0, "no WRITE waited behind another of the same file");
}

/// The value of a counter without labels.
fn counter(m: &str, name: &str) -> u64 {
    m.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name}:\n{m}"))
}

/// A client of `url` without a data cache or readahead: every read is a READ.
fn uncached_client(rt: &tokio::runtime::Runtime, url: &str) -> std::sync::Arc<client::Client> {
    let mut settings = client::ClientSettings::default();
    settings.read_cache.max_bytes = 0;
    settings.readahead.max_window = 0;
    std::sync::Arc::new(rt.block_on(client::Client::connect(url, settings)).unwrap())
}

/// `readers` tasks of `c` read the file `name` in 4 KiB blocks, reader r
/// every `readers`-th block from block r, each block its own READ; every
/// block must be `data`'s.
fn read_interleaved(
    rt: &tokio::runtime::Runtime,
    c: &std::sync::Arc<client::Client>,
    name: &'static str,
    data: &[u8],
    readers: usize,
) {
    let blocks = data.len() / 4096;
    let back = rt.block_on(async {
        let mut tasks = Vec::new();
        for r in 0..readers {
            let c = c.clone();
            tasks.push(tokio::spawn(async move {
                let mut f = c.open(name, client::OpenOptions::read()).await.unwrap();
                let mut got = Vec::new();
                for b in (r..blocks).step_by(readers) {
                    let mut buf = vec![0u8; 4096];
                    assert_eq!(f.read((b * 4096) as u64, &mut buf).await.unwrap(), 4096);
                    got.push((b * 4096, buf));
                }
                f.close().await.unwrap();
                got
            }));
        }
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await.unwrap());
        }
        all
    });
    assert_eq!(back.len(), blocks);
    for (off, buf) in back {
        assert!(buf == data[off..off + 4096], "the 4 KiB at {off} differ from the file's");
    }
}

/// Sixteen readers of one cached file over NFSv4.1, every 4 KiB read its
/// own SEQUENCE + PUTFH + READ (no client cache): the compounds run on
/// the connection's thread, not on workers, and every byte comes back as
/// it is on disk.
#[test]
fn nfs41_reads_of_cached_data_run_on_the_connections_thread() {
    let mport = free_port();
    let cfg = format!("metrics = \"127.0.0.1:{mport}\"");
    let srv = TestServer::start(ServerOpts { extra_config: &cfg, ..Default::default() });
    const READERS: usize = 16;
    const BLOCKS: usize = 64;
    let data: Vec<u8> = (0..READERS * BLOCKS * 4096).map(|i| (i * 31 / 7) as u8).collect();
    std::fs::write(srv.export.join("cached"), &data).unwrap();
    let url = format!("nfs://127.0.0.1:{}{}?version=4.1", srv.port, srv.export.display());
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let before = get_metrics(mport);
    read_interleaved(&rt, &uncached_client(&rt, &url), "cached", &data, READERS);
    let m = get_metrics(mport);
    let delta = |name: &str| counter(&m, name) - counter(&before, name);
    let reads = (READERS * BLOCKS) as u64;
    let (inline, worker) = (delta("nfsx_requests_inline_total"), delta("nfsx_requests_worker_total"));
    assert!(inline >= reads, "{inline} requests inline for {reads} READs ({worker} on workers)");
    assert!(worker < reads / 4, "{worker} requests on workers for {reads} READs");
}

/// A lone client that thinks between requests is polled for a few times,
/// then not (`lone_poll_max_quiet`): polls that find nothing stop costing
/// CPU. Once its requests come back to back again, they are polled for
/// again. The time polling took is counted.
#[test]
fn polls_that_run_out_stop_until_polling_would_pay() {
    let mport = free_port();
    let cfg = format!("metrics = \"127.0.0.1:{mport}\"\nlone_poll_us = 3000\nlone_poll_max_quiet = 3");
    let srv = TestServer::start(ServerOpts { extra_config: &cfg, ..Default::default() });
    std::fs::write(srv.export.join("f"), vec![7u8; 4096]).unwrap();
    let url = format!("nfs://127.0.0.1:{}{}?version=3", srv.port, srv.export.display());
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let c = uncached_client(&rt, &url);
    // Reads of the one block, `pause` apart.
    let reads = |n: usize, pause: Duration| {
        rt.block_on(async {
            let mut f = c.open("f", client::OpenOptions::read()).await.unwrap();
            for _ in 0..n {
                let mut buf = vec![0u8; 4096];
                assert_eq!(f.read(0, &mut buf).await.unwrap(), 4096);
                tokio::time::sleep(pause).await;
            }
            f.close().await.unwrap();
        })
    };
    // Lone from here on (`lone_requests_in_place_after`).
    reads(16, Duration::ZERO);
    let before = get_metrics(mport);
    reads(20, Duration::from_millis(40));
    let thinking = get_metrics(mport);
    let delta = |a: &str, b: &str, name: &str| counter(b, name) - counter(a, name);
    let quiet = delta(&before, &thinking, "nfsx_lone_polls_quiet_total");
    let skipped = delta(&before, &thinking, "nfsx_lone_polls_skipped_total");
    assert!(quiet <= 4, "{quiet} polls ran out, with 3 allowed in a row");
    assert!(skipped >= 14, "only {skipped} of 20 waits were not polled for");
    assert!(delta(&before, &thinking, "nfsx_lone_poll_microseconds_total") >= 3 * 3000);
    reads(200, Duration::ZERO);
    let ready = delta(&thinking, &get_metrics(mport), "nfsx_lone_polls_ready_total");
    assert!(ready >= 50, "only {ready} of 200 back-to-back READs were polled for");
}

/// A client with one request at a time finds the connection's thread
/// polling for its next request (`lone_poll_us`), not asleep; a poll that
/// nothing answers ends after its budget; one with many in flight is not
/// polled for; NFSv3 requests that may block, and NFSv4.1 compounds that
/// cannot wait for a callback, keep the thread and are polled after too. Every byte read comes back as it is on disk.
#[test]
fn a_lone_clients_next_request_is_polled_for() {
    let mport = free_port();
    // A budget no scheduling delay of a busy test machine can outlast.
    let cfg = format!("metrics = \"127.0.0.1:{mport}\"\nlone_poll_us = 200000");
    let srv = TestServer::start(ServerOpts { extra_config: &cfg, ..Default::default() });
    const BLOCKS: usize = 256;
    let data: Vec<u8> = (0..BLOCKS * 4096).map(|i| (i * 13 / 5) as u8).collect();
    std::fs::write(srv.export.join("lone"), &data).unwrap();
    let url = format!("nfs://127.0.0.1:{}{}?version=3", srv.port, srv.export.display());
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let c = uncached_client(&rt, &url);
    let polls = |m: &str| counter(m, "nfsx_lone_polls_ready_total");
    let before = get_metrics(mport);
    read_interleaved(&rt, &c, "lone", &data, 1);
    let ready = polls(&get_metrics(mport)) - polls(&before);
    assert!(ready >= BLOCKS as u64 / 2, "{ready} of {BLOCKS} READs one at a time were polled for");
    // Nothing more comes: the last poll gives up after its budget.
    std::thread::sleep(Duration::from_millis(600));
    let lone = get_metrics(mport);
    let quiet = counter(&lone, "nfsx_lone_polls_quiet_total");
    assert!(quiet >= 1, "a poll with nothing to find ended ({quiet})");

    read_interleaved(&rt, &c, "lone", &data, 16);
    let busy = get_metrics(mport);
    let polled = polls(&busy) - polls(&lone);
    assert!(polled < BLOCKS as u64 / 4, "{polled} of {BLOCKS} READs, 16 in flight, were polled for");

    // NFSv3 requests that may block, one at a time, run in place without
    // a hand-off (`max_requests_in_place_direct`), and are polled after;
    // so do NFSv4.1 compounds that cannot wait for a callback's reply.
    const DIRS: usize = 64;
    let direct_total = |m: &str| counter(m, "nfsx_requests_in_place_direct_total");
    // Makes DIRS directories `{prefix}{i}` one at a time; the metrics after.
    let mkdirs = |c: &std::sync::Arc<client::Client>, prefix: &str| {
        rt.block_on(async {
            for i in 0..DIRS {
                c.mkdir(&format!("{prefix}{i}")).await.unwrap();
            }
        });
        assert!((0..DIRS).all(|i| srv.export.join(format!("{prefix}{i}")).is_dir()));
        get_metrics(mport)
    };
    let m = mkdirs(&c, "d");
    let direct = direct_total(&m) - direct_total(&busy);
    assert!(direct >= DIRS as u64 / 2, "{direct} of {DIRS} MKDIRs ran in place without a hand-off");
    let polled = polls(&m) - polls(&busy);
    assert!(polled >= DIRS as u64 / 2, "{polled} of {DIRS} MKDIRs were followed by a poll that found the next");

    let url41 = format!("nfs://127.0.0.1:{}{}?version=4.1", srv.port, srv.export.display());
    let m41 = mkdirs(&uncached_client(&rt, &url41), "e");
    let direct = direct_total(&m41) - direct_total(&m);
    assert!(direct >= DIRS as u64 / 2, "{direct} of {DIRS} NFSv4.1 CREATEs ran in place without a hand-off");
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
