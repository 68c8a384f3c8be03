//! NFSv4.1 benchmarks (run on demand, not in CI):
//!
//! - file creation rate against the number of threads sharing one
//!   session (1 to 512), the test where Chen et al. (2015) saw throughput
//!   collapse above 32 threads when the session ran out of slots;
//! - delegation recall time: from a conflicting OPEN to that OPEN's
//!   success, with the holder returning the delegation when recalled.
//!
//! ```text
//! cargo test --release -p nfsx --test nfs4_bench -- --ignored --nocapture --test-threads 1
//! NFS4_BENCH_PEER=127.0.0.1:2049/export  # also run against another server (e.g. NFS-Ganesha)
//! NFS4_BENCH_JSON=$PWD/out               # write every sample as JSON (out.<bench>.json)
//! NFS4_BENCH_SLOTS=32                    # slots the create-rate session asks for (default 1024)
//! NFS4_BENCH_NFSX_CONFIG=$'[localfs]\nsync_metadata = false'  # extra TOML for the nfsx server
//! NFS4_BENCH_THREADS=1,32                # thread counts of the create rate (default 1 to 512)
//! NFS4_BENCH_RUNS=5                      # runs per figure (default 5)
//! NFS4_BENCH_READER=thread               # create rate: every point's replies read by a reader
//!                                        # thread, or =callers: by the callers themselves
//!                                        # (default: callers up to CALLERS_READ_MAX_THREADS)
//! ```

mod support;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use proto::nfs4::*;
use support::v4::*;
use support::*;

const THREADS: [usize; 10] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512];
const RUNS: usize = 5;

/// `NFS4_BENCH_THREADS` (comma-separated) or all of [`THREADS`].
fn thread_counts() -> Vec<usize> {
    match std::env::var("NFS4_BENCH_THREADS") {
        Ok(v) => v.split(',').map(|t| t.trim().parse().expect("NFS4_BENCH_THREADS=1,32,...")).collect(),
        Err(_) => THREADS.to_vec(),
    }
}

/// `NFS4_BENCH_RUNS` or [`RUNS`].
fn runs() -> usize {
    std::env::var("NFS4_BENCH_RUNS").ok().and_then(|r| r.parse().ok()).unwrap_or(RUNS)
}
const RUN_TIME: Duration = Duration::from_secs(2);

struct Target {
    name: String,
    port: u16,
    /// The export's path in the server's pseudo file system.
    export: String,
}

/// The nfsx server under test, with any extra configuration asked for.
fn start_nfsx() -> TestServer {
    let extra = std::env::var("NFS4_BENCH_NFSX_CONFIG").unwrap_or_default();
    TestServer::start(ServerOpts { extra_config: &extra, ..ServerOpts::default() })
}

fn targets(srv: &TestServer) -> Vec<Target> {
    let mut t = vec![Target { name: "nfsx".into(), port: srv.port, export: srv.export.display().to_string() }];
    if let Ok(peer) = std::env::var("NFS4_BENCH_PEER") {
        let (hostport, path) = peer.split_once('/').expect("NFS4_BENCH_PEER=host:port/path");
        let port = hostport.rsplit_once(':').map(|(_, p)| p.parse().unwrap()).unwrap_or(2049);
        t.push(Target { name: "peer".into(), port, export: format!("/{path}") });
    }
    t
}

fn fh_of(c: &Client41, path: &str) -> nfs_fh4 {
    let mut ops = walk(Path::new(path));
    ops.push(nfs_argop4::OP_GETFH);
    let r = c.run(ops);
    ok_res(&r);
    let Some(nfs_resop4::OP_GETFH(GETFH4res::NFS4_OK(fh))) = r.resarray.last() else { panic!() };
    fh.object.clone()
}

fn mkdir(c: &Client41, dir: &nfs_fh4, name: &str) -> nfs_fh4 {
    let r = c.run(vec![
        nfs_argop4::OP_PUTFH(PUTFH4args { object: dir.clone() }),
        nfs_argop4::OP_CREATE(CREATE4args {
            objtype: createtype4::NF4DIR,
            objname: Bytes::copy_from_slice(name.as_bytes()),
            createattrs: fattr4 { attrmask: vec![], attr_vals: Bytes::new() },
        }),
        nfs_argop4::OP_GETFH,
    ]);
    ok_res(&r);
    let nfs_resop4::OP_GETFH(GETFH4res::NFS4_OK(fh)) = &r.resarray[2] else { panic!() };
    fh.object.clone()
}

/// Creates files (OPEN with create, then CLOSE, as a client's creat() +
/// close() does) from `threads` threads for `RUN_TIME`; files per second.
fn create_rate(c: &Arc<Client41>, dir: &nfs_fh4, threads: usize, run: usize) -> f64 {
    // Threads take a free slot for each request, as a client's slot table
    // does; with fewer slots than threads they queue for one.
    let free: Arc<Mutex<Vec<usize>>> = Arc::new(Mutex::new((0..c.slots()).collect()));
    let done = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (c, dir, free, done) = (c.clone(), dir.clone(), free.clone(), done.clone());
            std::thread::spawn(move || {
                let take = || loop {
                    if let Some(s) = free.lock().unwrap().pop() {
                        return s;
                    }
                    std::thread::yield_now();
                };
                let mut i = 0;
                while start.elapsed() < RUN_TIME {
                    let name = format!("r{run}-t{t}-{i}");
                    i += 1;
                    let slot = take();
                    let r = c.run_on(
                        slot,
                        vec![
                            nfs_argop4::OP_PUTFH(PUTFH4args { object: dir.clone() }),
                            open_op(&c, &format!("owner-{t}"), &name, OPEN4_SHARE_ACCESS_BOTH, true),
                        ],
                    );
                    free.lock().unwrap().push(slot);
                    ok_res(&r);
                    let st = opened(&r, 1).stateid.clone();
                    let slot = take();
                    let r = c.run_on(
                        slot,
                        vec![
                            nfs_argop4::OP_PUTFH(PUTFH4args { object: dir.clone() }),
                            nfs_argop4::OP_LOOKUP(LOOKUP4args { objname: Bytes::copy_from_slice(name.as_bytes()) }),
                            nfs_argop4::OP_CLOSE(CLOSE4args { seqid: 0, open_stateid: st }),
                        ],
                    );
                    free.lock().unwrap().push(slot);
                    ok_res(&r);
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    done.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64()
}

fn mean_ci(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    if xs.len() < 2 {
        return (m, 0.0);
    }
    let var = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    // Student's t for 95 % with n-1 degrees of freedom (n up to 30).
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    let t = T[(xs.len() - 2).min(29)];
    (m, t * (var / n).sqrt())
}

fn write_json(name: &str, value: String) {
    if let Ok(path) = std::env::var("NFS4_BENCH_JSON") {
        let path = format!("{path}.{name}.json");
        std::fs::write(&path, value).unwrap();
        eprintln!("samples written to {path}");
    }
}

/// One target's session and the directory creations go into.
struct CreateTarget {
    name: String,
    /// Replies read by a reader thread.
    client: Arc<Client41>,
    /// Replies read by the callers (`Client41::connect_caller_driven`).
    lone: Arc<Client41>,
    base: nfs_fh4,
}

/// Up to this many threads the create rate's replies are read by the
/// callers themselves, past it by a reader thread. Callers reading saves
/// a lone caller the reader thread's wake-up and then its own: at 1 and 2
/// threads both servers ran faster so (nfsx 2.0-2.5x, NFS-Ganesha
/// 1.0-1.7x); at 4 neither way was clearly ahead, and at 16 nfsx ran at
/// 0.6x, each reply taken over by the next reader being a wake-up on the
/// read path (docs/BENCHMARKS.md, "reply-poll").
const CALLERS_READ_MAX_THREADS: usize = 2;

impl CreateTarget {
    /// The client whose driver suits `threads` callers (`NFS4_BENCH_READER`).
    fn client_for(&self, threads: usize) -> (&Arc<Client41>, &'static str) {
        match std::env::var("NFS4_BENCH_READER").as_deref() {
            Ok("thread") => (&self.client, "thread"),
            Ok("callers") => (&self.lone, "callers"),
            _ if threads <= CALLERS_READ_MAX_THREADS => (&self.lone, "callers"),
            _ => (&self.client, "thread"),
        }
    }
}

#[test]
#[ignore = "benchmark: run on demand"]
fn create_rate_by_threads() {
    let srv = start_nfsx();
    let slots: u32 = std::env::var("NFS4_BENCH_SLOTS").ok().and_then(|s| s.parse().ok()).unwrap_or(1024);
    let targets: Vec<CreateTarget> = targets(&srv)
        .into_iter()
        .map(|t| {
            let owner = format!("bench-{}", std::process::id());
            let c = Arc::new(Client41::connect_with_slots(t.port, &owner, slots));
            let lone = Arc::new(Client41::connect_caller_driven(t.port, &format!("{owner}-lone"), slots));
            let root = fh_of(&c, &t.export);
            let base = mkdir(&c, &root, &format!("create-bench-{}", std::process::id()));
            eprintln!("{}: {} slots granted", t.name, c.slots());
            CreateTarget { name: t.name, client: c, lone, base }
        })
        .collect();
    // One discarded run per target first: the first creations into a new
    // tree pay for the host's caches filling.
    for t in &targets {
        let dir = mkdir(&t.client, &t.base, "warm-up");
        create_rate(&t.client, &dir, 8, 0);
        // Its own directory: the names are the same, and the files made
        // above are delegated to the other client.
        let dir = mkdir(&t.client, &t.base, "warm-up-lone");
        create_rate(&t.lone, &dir, 1, 0);
    }
    let mut json = Vec::new();
    println!("{:<6} {:>8} {:>22}", "target", "threads", "creates/s (95% CI)");
    for threads in thread_counts() {
        let dirs: Vec<nfs_fh4> = targets.iter().map(|t| mkdir(&t.client, &t.base, &format!("t{threads}"))).collect();
        let mut samples = vec![Vec::new(); targets.len()];
        // Runs alternate between targets so that drift on the host (cache
        // state, other load) falls on both alike.
        for run in 0..runs() {
            for (i, t) in targets.iter().enumerate() {
                samples[i].push(create_rate(t.client_for(threads).0, &dirs[i], threads, run));
            }
        }
        for (t, samples) in targets.iter().zip(samples) {
            let (m, ci) = mean_ci(&samples);
            let (c, reader) = t.client_for(threads);
            println!("{:<6} {:>8} {:>12.0} ± {:<8.0} {reader}", t.name, threads, m, ci);
            json.push(format!(
                "{{\"target\":\"{}\",\"threads\":{threads},\"slots\":{},\"reader\":\"{reader}\",\"creates_per_s\":{samples:?}}}",
                t.name,
                c.slots()
            ));
        }
    }
    write_json("create_rate", format!("[{}]", json.join(",\n")));
}

#[test]
#[ignore = "benchmark: run on demand"]
fn delegation_recall_time() {
    let srv = start_nfsx();
    let mut json = Vec::new();
    for target in targets(&srv) {
        let a = Client41::connect_manual(target.port, &format!("holder-{}", std::process::id()));
        let b = Client41::connect(target.port, &format!("opener-{}", std::process::id()));
        std::thread::sleep(Duration::from_millis(200));
        let root = fh_of(&a, &target.export);
        let mut samples = Vec::new();
        let mut granted = 0;
        for i in 0..30 {
            let name = format!("deleg-{}-{i}", std::process::id());
            // The file exists before the holder opens it (some servers give
            // no delegation on the OPEN that creates a file).
            let r = b.run(vec![
                nfs_argop4::OP_PUTFH(PUTFH4args { object: root.clone() }),
                open_op(&b, "creator", &name, OPEN4_SHARE_ACCESS_BOTH | OPEN4_SHARE_ACCESS_WANT_NO_DELEG, true),
            ]);
            ok_res(&r);
            let created = opened(&r, 1).stateid.clone();
            ok_res(&b.run(vec![
                nfs_argop4::OP_PUTFH(PUTFH4args { object: root.clone() }),
                nfs_argop4::OP_LOOKUP(LOOKUP4args { objname: Bytes::copy_from_slice(name.as_bytes()) }),
                nfs_argop4::OP_CLOSE(CLOSE4args { seqid: 0, open_stateid: created }),
            ]));
            let r = a.run(vec![
                nfs_argop4::OP_PUTFH(PUTFH4args { object: root.clone() }),
                open_op(&a, "holder", &name, OPEN4_SHARE_ACCESS_READ, false),
            ]);
            ok_res(&r);
            let open = opened(&r, 1).clone();
            let open_delegation4::OPEN_DELEGATE_READ(d) = &open.delegation else { continue };
            granted += 1;
            let deleg = d.stateid.clone();
            let conn = a.conn.clone();
            let start = Instant::now();
            let holder = {
                let deleg = deleg.clone();
                let a = &a;
                std::thread::scope(|s| {
                    let h = s.spawn(move || {
                        let recall = conn.recalls.lock().unwrap().recv_timeout(Duration::from_secs(10)).unwrap();
                        ok_res(&a.run(vec![
                            nfs_argop4::OP_PUTFH(PUTFH4args { object: recall.fh }),
                            nfs_argop4::OP_DELEGRETURN(DELEGRETURN4args { deleg_stateid: deleg }),
                        ]));
                    });
                    // The opener retries NFS4ERR_DELAY from 1 ms, doubling.
                    let mut wait = Duration::from_millis(1);
                    loop {
                        let r = b.run(vec![
                            nfs_argop4::OP_PUTFH(PUTFH4args { object: root.clone() }),
                            open_op(&b, "opener", &name, OPEN4_SHARE_ACCESS_WRITE, false),
                        ]);
                        if r.status == nfsstat4::NFS4_OK {
                            break;
                        }
                        assert_eq!(r.status, nfsstat4::NFS4ERR_DELAY);
                        std::thread::sleep(wait);
                        wait = (wait * 2).min(Duration::from_millis(100));
                    }
                    let t = start.elapsed();
                    h.join().unwrap();
                    t
                })
            };
            samples.push(holder.as_secs_f64() * 1e3);
        }
        samples.sort_by(|x, y| x.partial_cmp(y).unwrap());
        if samples.is_empty() {
            println!("{}: no delegation granted in 30 opens", target.name);
            continue;
        }
        let (m, ci) = mean_ci(&samples);
        println!(
            "{}: {granted}/30 delegations; recall to successful OPEN: mean {m:.2} ms ± {ci:.2}, median {:.2} ms, max {:.2} ms",
            target.name,
            samples[samples.len() / 2],
            samples[samples.len() - 1]
        );
        json.push(format!("{{\"target\":\"{}\",\"recall_ms\":{samples:?}}}", target.name));
    }
    write_json("delegation_recall", format!("[{}]", json.join(",\n")));
}
