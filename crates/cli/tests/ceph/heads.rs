//! Several heads over one cluster: one file system through all of them,
//! a dead head's address taken over, its NFSv4 clients reclaiming there.

use super::*;

/// Several heads over one cluster (`scripts/heads.sh start 2` prints the
/// `HEADS=` URL this test takes from `NFSX_HEADS`): a file written through
/// one head is read back whole through another, a file handle one head
/// gave out works on the other (they share the handle key), and a
/// multi-client run spreads its clients over the heads.
#[test]
#[ignore = "needs two nfsx heads over a Ceph cluster (scripts/heads.sh start 2)"]
fn heads_serve_one_file_system() {
    let (heads, hosts, export) = heads_from_env();
    let export = export.as_str();
    let tmp = tempfile::tempdir().unwrap();
    let (src, back) = (tmp.path().join("src.bin"), tmp.path().join("back.bin"));
    random_file(&src, 16 << 20, 11);
    let name = format!("{export}/across-{}.bin", std::process::id());
    let via = |i: usize| format!("nfs://{}{name}?version=3", hosts[i]);
    ok(&run("nfs-cp", &[src.to_str().unwrap(), &via(0)], 5 * MIN), "nfs-cp in through head 1");
    ok(&run("nfs-cp", &[&via(1), back.to_str().unwrap()], 5 * MIN), "nfs-cp out through head 2");
    assert_eq!(sha256_file(&back), sha256_file(&src), "read through another head differs");
    let at = |i: usize| -> std::net::SocketAddr {
        let h = &hosts[i];
        if h.contains(':') {
            h.parse().unwrap()
        } else {
            format!("{h}:2049").parse().unwrap()
        }
    };
    let mut c1 = RpcClient::connect_addr(at(0)).unwrap();
    let root = c1.mount(export);
    let what = diropargs3 { dir: root, name: Bytes::from(name.rsplit('/').next().unwrap().to_string()) };
    let fh = match c1.nfs(NFS3_LOOKUP, &LOOKUP3args { what }) {
        LOOKUP3res::NFS3_OK(ok) => ok.object,
        other => panic!("LOOKUP through head 1: {other:?}"),
    };
    let mut c2 = RpcClient::connect_addr(at(1)).unwrap();
    match c2.nfs(NFS3_GETATTR, &GETATTR3args { object: fh }) {
        GETATTR3res::NFS3_OK(ok) => assert_eq!(ok.obj_attributes.size, 16 << 20),
        other => panic!("head 1's handle on head 2: {other:?}"),
    }
    let target = format!("{heads}?version=4.1");
    let args = ["multi-client", "--clients", "2", "--size", "8MiB", "--runs", "1", "--target", &target];
    let (out, v) = bench(&args, tmp.path(), 5 * MIN);
    all_ok(&out, &v);
}

/// A head dies and another takes over its address (`scripts/heads.sh kill 1;
/// takeover 1 2`): a file written through the dead head reads back whole
/// through the same address at once, since the heads share their handle key
/// and the takeover ends the dead head's Ceph session. Head 1 is started
/// again afterwards.
#[test]
#[ignore = "needs two nfsx heads over a Ceph cluster (scripts/heads.sh start 2)"]
fn address_takeover_after_a_head_dies() {
    let (_, hosts, export) = heads_from_env();
    let first = &hosts[0];
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/heads.sh");
    let tmp = tempfile::tempdir().unwrap();
    let (src, back) = (tmp.path().join("src.bin"), tmp.path().join("back.bin"));
    random_file(&src, 8 << 20, 13);
    let url = format!("nfs://{first}{export}/taken-over-{}.bin?version=3", std::process::id());
    ok(&run("nfs-cp", &[src.to_str().unwrap(), &url], MIN), "nfs-cp in through head 1");
    ok(&run("bash", &[script, "kill", "1"], MIN), "heads.sh kill 1");
    ok(&run("bash", &[script, "takeover", "1", "2"], MIN), "heads.sh takeover 1 2");
    let asked = Instant::now();
    ok(&run("nfs-cp", &[&url, back.to_str().unwrap()], MIN), "nfs-cp out through head 1's address");
    assert!(asked.elapsed() < Duration::from_secs(20), "the read waited {:?}", asked.elapsed());
    assert_eq!(sha256_file(&back), sha256_file(&src), "read after the takeover differs");
    ok(&run("bash", &[script, "restart", "1"], MIN), "heads.sh restart 1");
}

/// NFSv4 failover between heads sharing client records in RADOS
/// (`[cluster]`): a client holding an open and a lock through head 1
/// reclaims both through head 1's address after head 2 took it over,
/// while head 2's own client gets NFS4ERR_GRACE and then, once the
/// cluster's grace is over, DENIED by the reclaimed lock. When head 1
/// comes back, head 2 gives the client back, which reclaims on head 1,
/// and head 2 refuses the conflicting lock through CephFS.
#[test]
#[ignore = "needs two nfsx heads over a Ceph cluster (scripts/heads.sh start 2)"]
fn nfs4_clients_reclaim_on_the_head_that_takes_over() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/heads.sh");
    reclaim_across_a_takeover("reclaimer", &|_, _| {
        ok(&run("bash", &[script, "kill", "1"], MIN), "heads.sh kill 1");
        ok(&run("bash", &[script, "takeover", "1", "2"], MIN), "heads.sh takeover 1 2");
    });
}

/// The same with no takeover command: head 1's machine goes away (killed,
/// link down) and head 2 notices by itself (`takeover_after_secs`), takes
/// head 1's clients over, ends its Ceph session and moves its address
/// (`takeover_command`), all within the MDS session timeout (60 s).
#[test]
#[ignore = "needs two nfsx heads over a Ceph cluster (scripts/heads.sh start 2)"]
fn a_crashed_head_is_taken_over_without_a_command() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/heads.sh");
    reclaim_across_a_takeover("crash-reclaimer", &|one, two| {
        let crashed = Instant::now();
        ok(&run("bash", &[script, "crash", "1"], MIN), "heads.sh crash 1");
        loop {
            // Answered at head 1's address: head 2 has taken it over.
            if std::net::TcpStream::connect_timeout(&one, Duration::from_secs(1)).is_ok() {
                break;
            }
            assert!(crashed.elapsed() < Duration::from_secs(60), "head 1 not taken over within 60 s");
            std::thread::sleep(Duration::from_millis(200));
        }
        eprintln!("head 1's address answered again {:?} after the crash", crashed.elapsed());
        // Head 2's metrics say what it did and what it saw.
        let metrics = std::net::SocketAddr::new(two.ip(), 9049);
        let mut s = std::net::TcpStream::connect(metrics).expect("head 2's metrics endpoint");
        std::io::Write::write_all(&mut s, b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
        let mut m = String::new();
        std::io::Read::read_to_string(&mut s, &mut m).unwrap();
        let takeovers = m
            .lines()
            .find_map(|l| l.strip_prefix("nfsx_cluster_takeovers_total "))
            .and_then(|v| v.trim().parse::<u64>().ok());
        assert!(takeovers.is_some_and(|n| n >= 1), "{m}");
        assert!(m.contains("nfsx_cluster_in_grace 1"), "{m}");
        assert!(m.contains("nfsx_cluster_head_silent_seconds{head=\"1\"}"), "{m}");
    });
}

/// A client holding an open and a lock through head 1 reclaims both
/// through head 1's address once `take_over` has failed head 1 over to
/// head 2, and again once head 1 is back; a client of head 2 is held off
/// meanwhile, then refused.
/// `take_over` gets head 1's and head 2's addresses.
fn reclaim_across_a_takeover(tag: &str, take_over: &dyn Fn(std::net::SocketAddr, std::net::SocketAddr)) {
    use proto::nfs4::*;
    use support::v4::*;
    let (_, hosts, export) = heads_from_env();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/heads.sh");
    let at = |h: &str| -> std::net::SocketAddr { format!("{h}:2049").parse().unwrap() };
    let (one, two) = (at(&hosts[0]), at(&hosts[1]));
    let pid = std::process::id();
    let (owner_a, name) = (format!("{tag}-{pid}"), format!("{tag}-file-{pid}"));
    let export = Path::new(&export);
    let open_in = |c: &Client41, owner: &str| {
        let mut ops = walk(export);
        ops.extend([open_op(c, owner, &name, OPEN4_SHARE_ACCESS_BOTH, true), nfs_argop4::OP_GETFH]);
        let n = ops.len();
        let r = c.run_retry(ops);
        ok_res(&r);
        let nfs_resop4::OP_GETFH(GETFH4res::NFS4_OK(fh)) = &r.resarray[n - 1] else { panic!("{r:?}") };
        (opened(&r, n - 2).stateid.clone(), fh.object.clone())
    };
    let a = Client41::reclaiming_at(one, &owner_a, 8);
    a.reclaim_complete();
    let b = Client41::reclaiming_at(two, &format!("{tag}-bystander-{pid}"), 8);
    b.reclaim_complete();
    let (sa, fh) = open_in(&a, "oa");
    let (sb, _) = open_in(&b, "ob");
    let on = || nfs_argop4::OP_PUTFH(PUTFH4args { object: fh.clone() });
    ok_res(&a.run(vec![on(), lock_op(&a, &sa, "la", 0, 100)]));

    // A reclaims through head 1's address; B, on the other head, is held
    // off meanwhile, then refused by A's reclaimed lock.
    let reclaim = |addr: std::net::SocketAddr| -> Duration {
        let started = Instant::now();
        let a = Client41::reclaiming_at(addr, &owner_a, 8);
        let r = a.run(vec![on(), reclaim_open_op(&a, "oa")]);
        ok_res(&r);
        let open = opened(&r, 1).stateid.clone();
        let nfs_argop4::OP_LOCK(mut lock) = lock_op(&a, &open, "la", 0, 100) else { unreachable!() };
        lock.reclaim = true;
        ok_res(&a.run(vec![on(), nfs_argop4::OP_LOCK(lock)]));
        a.reclaim_complete();
        started.elapsed()
    };
    let b_status = |n: u32| {
        let r = b.run(vec![on(), lock_op(&b, &sb, &format!("lb-{n}"), 50, 10)]);
        r.status
    };
    let wait_denied = |what: &str| -> Duration {
        let started = Instant::now();
        for n in 0.. {
            match b_status(n) {
                nfsstat4::NFS4ERR_DENIED => return started.elapsed(),
                nfsstat4::NFS4ERR_GRACE if started.elapsed() < Duration::from_secs(30) => {
                    std::thread::sleep(Duration::from_millis(100))
                }
                other => panic!("{what}: B's LOCK gave {other:?}"),
            }
        }
        unreachable!()
    };

    take_over(one, two);
    assert_eq!(b_status(1000), nfsstat4::NFS4ERR_GRACE, "B locked during the takeover's grace");
    let took = reclaim(one);
    let grace_left = wait_denied("after the takeover");
    eprintln!("reclaim on head 2 took {took:?}; the cluster left grace {grace_left:?} later");

    ok(&run("bash", &[script, "restart", "1"], MIN), "heads.sh restart 1");
    assert_eq!(b_status(2000), nfsstat4::NFS4ERR_GRACE, "B locked while A could reclaim on head 1");
    let took = reclaim(one);
    let grace_left = wait_denied("after head 1 came back");
    eprintln!("reclaim on head 1 took {took:?}; the cluster left grace {grace_left:?} later");
    // Gone for good: no later restart or takeover waits for them.
    Client41::forget(one, &owner_a);
    Client41::forget(two, &format!("{tag}-bystander-{pid}"));
}
