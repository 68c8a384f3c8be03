//! State that heads share through the cluster: byte-range locks, share
//! reservations and their gate, NLM locks.

use super::*;

/// Two heads over one CephFS directory: a lock one head grants is seen by
/// the other (CephFS's own locks arbitrate), its release too.
#[test]
#[ignore = "needs a Ceph cluster (scripts/ceph.sh start)"]
fn locks_conflict_across_heads() {
    use proto::nfs4::*;
    use support::v4::*;
    let (conf, path) = ceph_dir("locks");
    let (one, two) = (ceph_server(&conf, &path), ceph_server(&conf, &path));
    let a = Client41::connect(one.port, "client-on-head-1");
    let b = Client41::connect(two.port, "client-on-head-2");
    let (sa, fa) = open_file(&one, &a, "oa", "locked", OPEN4_SHARE_ACCESS_BOTH);
    let (sb, fb) = open_file(&two, &b, "ob", "locked", OPEN4_SHARE_ACCESS_BOTH);
    let on_a = || nfs_argop4::OP_PUTFH(PUTFH4args { object: fa.clone() });
    let on_b = || nfs_argop4::OP_PUTFH(PUTFH4args { object: fb.clone() });

    let r = a.run(vec![on_a(), lock_op(&a, &sa, "la", 0, 100)]);
    ok_res(&r);
    let nfs_resop4::OP_LOCK(LOCK4res::NFS4_OK(la)) = &r.resarray[1] else { panic!("{r:?}") };
    let la = la.lock_stateid.clone();

    // Head 2 has no lock in its own table, yet refuses the overlap.
    let r = b.run(vec![on_b(), lock_op(&b, &sb, "lb", 50, 10)]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_DENIED, "{r:?}");
    let nfs_resop4::OP_LOCK(LOCK4res::NFS4ERR_DENIED(d)) = &r.resarray[1] else { panic!("{r:?}") };
    // The holder's range, as CephFS reports it.
    assert_eq!((d.offset, d.length), (0, 100));
    // LOCKT on head 2 sees head 1's lock too, and creates nothing.
    let lockt = |offset: u64, length: u64| {
        nfs_argop4::OP_LOCKT(LOCKT4args {
            locktype: nfs_lock_type4::READ_LT,
            offset,
            length,
            owner: lock_owner4 { clientid: b.clientid, owner: Bytes::from_static(b"tester") },
        })
    };
    let r = b.run(vec![on_b(), lockt(90, 20)]);
    let nfs_resop4::OP_LOCKT(LOCKT4res::NFS4ERR_DENIED(d)) = &r.resarray[1] else { panic!("{r:?}") };
    assert_eq!((d.offset, d.length, d.locktype), (0, 100, nfs_lock_type4::WRITE_LT));
    ok_res(&b.run(vec![on_b(), lockt(100, 20)]));
    // A range nobody holds is granted.
    ok_res(&b.run(vec![on_b(), lock_op(&b, &sb, "lb2", 200, 10)]));
    // And head 1 now sees head 2's lock.
    let r = a.run(vec![on_a(), lock_op(&a, &sa, "la2", 205, 1)]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_DENIED, "{r:?}");

    let unlock = nfs_argop4::OP_LOCKU(LOCKU4args {
        locktype: nfs_lock_type4::WRITE_LT,
        seqid: 0,
        lock_stateid: la,
        offset: 0,
        length: 100,
    });
    ok_res(&a.run(vec![on_a(), unlock]));
    ok_res(&b.run(vec![on_b(), lock_op(&b, &sb, "lb3", 50, 10)]));
}

/// OPEN (4.1) of `name` in the export, created if need be, by `owner`
/// with `access` and `deny`, then GETFH; `retry`: NFS4ERR_DELAY is retried
/// as clients do. The status, and the stateid and handle when it opened.
fn open_denying(
    srv: &TestServer,
    c: &support::v4::Client41,
    owner: &str,
    name: &str,
    access: u32,
    deny: u32,
    retry: bool,
) -> (proto::nfs4::nfsstat4, Option<(proto::nfs4::stateid4, proto::nfs4::nfs_fh4)>) {
    use proto::nfs4::*;
    use support::v4::*;
    let mut ops = walk(&srv.export);
    let mut op = open_op(c, owner, name, access, true);
    if let nfs_argop4::OP_OPEN(args) = &mut op {
        args.share_deny = deny;
    }
    ops.extend([op, nfs_argop4::OP_GETFH]);
    let n = ops.len();
    let r = if retry { c.run_retry(ops) } else { c.run(ops) };
    let opened = match &r.resarray.get(n - 2) {
        Some(nfs_resop4::OP_OPEN(OPEN4res::NFS4_OK(ok))) => Some(ok.stateid.clone()),
        _ => None,
    };
    let fh = match &r.resarray.get(n - 1) {
        Some(nfs_resop4::OP_GETFH(GETFH4res::NFS4_OK(fh))) => Some(fh.object.clone()),
        _ => None,
    };
    (r.status, opened.zip(fh))
}

/// Two heads over one CephFS directory: an OPEN's deny modes, taken on one
/// head, refuse a conflicting OPEN on the other (RFC 8881 9.7), through an
/// upgrade, an OPEN_DOWNGRADE and a CLOSE; and a whole-file byte-range
/// lock does not meet the share reservations CephFS holds for them.
#[test]
#[ignore = "needs a Ceph cluster (scripts/ceph.sh start)"]
fn share_reservations_conflict_across_heads() {
    use proto::nfs4::*;
    use support::v4::*;
    let (conf, path) = ceph_dir("shares");
    let (one, two) = (ceph_server(&conf, &path), ceph_server(&conf, &path));
    let a = Client41::connect(one.port, "share-client-on-head-1");
    let b = Client41::connect(two.port, "share-client-on-head-2");
    // Retried: a head's first denial waits until the other holds its modes.
    let open = |srv: &TestServer, c: &Client41, owner: &str, access: u32, deny: u32| {
        open_denying(srv, c, owner, "shared", access, deny, true)
    };
    let current = |s: &stateid4| stateid4 { seqid: 0, other: s.other };
    let (st, opened) = open(&one, &a, "oa", OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_DENY_NONE);
    assert_eq!(st, nfsstat4::NFS4_OK);
    let (sa, fa) = opened.unwrap();
    // The same owner upgrades its open: both accesses, denying writes.
    let (st, _) = open(&one, &a, "oa", OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_WRITE);
    assert_eq!(st, nfsstat4::NFS4_OK);

    // Head 2 holds no open of the file, yet refuses what head 1's denies.
    let (st, _) = open(&two, &b, "ob", OPEN4_SHARE_ACCESS_WRITE, OPEN4_SHARE_DENY_NONE);
    assert_eq!(st, nfsstat4::NFS4ERR_SHARE_DENIED);
    let (st, _) = open(&two, &b, "ob", OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_DENY_READ);
    assert_eq!(st, nfsstat4::NFS4ERR_SHARE_DENIED);
    let (st, opened) = open(&two, &b, "ob", OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_DENY_NONE);
    assert_eq!(st, nfsstat4::NFS4_OK);
    let (_, fb) = opened.unwrap();

    // A write lock on the whole file, beside the read share reservation of
    // head 2's open: granted, and seen from head 2 as running to the end.
    let on_a = || nfs_argop4::OP_PUTFH(PUTFH4args { object: fa.clone() });
    let on_b = || nfs_argop4::OP_PUTFH(PUTFH4args { object: fb.clone() });
    ok_res(&a.run(vec![on_a(), lock_op(&a, &current(&sa), "la", 0, u64::MAX)]));
    let lockt = nfs_argop4::OP_LOCKT(LOCKT4args {
        locktype: nfs_lock_type4::READ_LT,
        offset: 0,
        length: 10,
        owner: lock_owner4 { clientid: b.clientid, owner: Bytes::from_static(b"tester") },
    });
    let r = b.run(vec![on_b(), lockt]);
    let nfs_resop4::OP_LOCKT(LOCKT4res::NFS4ERR_DENIED(d)) = &r.resarray[1] else { panic!("{r:?}") };
    assert_eq!((d.offset, d.length), (0, u64::MAX));

    // Narrowed back to reading: head 2 may write.
    let downgrade = nfs_argop4::OP_OPEN_DOWNGRADE(OPEN_DOWNGRADE4args {
        open_stateid: current(&sa),
        seqid: 0,
        share_access: OPEN4_SHARE_ACCESS_READ,
        share_deny: OPEN4_SHARE_DENY_NONE,
    });
    ok_res(&a.run(vec![on_a(), downgrade]));
    let (st, opened) = open(&two, &b, "ob2", OPEN4_SHARE_ACCESS_WRITE, OPEN4_SHARE_DENY_NONE);
    assert_eq!(st, nfsstat4::NFS4_OK);
    let (sb2, _) = opened.unwrap();
    // Now head 1 refuses to deny writes, which head 2's client makes.
    let (st, _) = open(&one, &a, "oa3", OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_DENY_WRITE);
    assert_eq!(st, nfsstat4::NFS4ERR_SHARE_DENIED);
    // Until that open is closed: at once, not after a delay.
    let close = nfs_argop4::OP_CLOSE(CLOSE4args { seqid: 0, open_stateid: current(&sb2) });
    ok_res(&b.run(vec![on_b(), close]));
    let (st, _) = open(&one, &a, "oa3", OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_DENY_WRITE);
    assert_eq!(st, nfsstat4::NFS4_OK);
    // Two denials of writing, one per head, stand side by side; together
    // they still refuse a writer on either head.
    let (st, _) = open(&two, &b, "ob4", OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_DENY_WRITE);
    assert_eq!(st, nfsstat4::NFS4_OK);
    let (st, _) = open(&one, &a, "oa5", OPEN4_SHARE_ACCESS_WRITE, OPEN4_SHARE_DENY_NONE);
    assert_eq!(st, nfsstat4::NFS4ERR_SHARE_DENIED);
    let (st, _) = open(&two, &b, "ob5", OPEN4_SHARE_ACCESS_WRITE, OPEN4_SHARE_DENY_NONE);
    assert_eq!(st, nfsstat4::NFS4ERR_SHARE_DENIED);
}

/// A client whose lease runs out on one head, with nothing else asking
/// that head anything, no longer holds its deny modes against another
/// head's clients: a head over a shared store keeps no courtesy clients
/// and expires lapsed ones by itself.
#[test]
#[ignore = "needs a Ceph cluster (scripts/ceph.sh start)"]
fn a_lapsed_client_releases_its_share_reservations_for_other_heads() {
    use proto::nfs4::*;
    use support::v4::*;
    let (conf, path) = ceph_dir("lapsed");
    let one = ceph_server_with(&conf, &path, "[core.nfs4]\nlease_secs = 2");
    let two = ceph_server(&conf, &path);
    let open = |srv: &TestServer, c: &Client41, owner: &str, access: u32, deny: u32| {
        open_denying(srv, c, owner, "lapsed", access, deny, true).0
    };
    let a = Client41::connect(one.port, "lapsing-client-on-head-1");
    assert_eq!(open(&one, &a, "oa", OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_BOTH), nfsstat4::NFS4_OK);
    let b = Client41::connect(two.port, "client-on-head-2");
    assert_eq!(open(&two, &b, "ob", OPEN4_SHARE_ACCESS_READ, 0), nfsstat4::NFS4ERR_SHARE_DENIED);
    // Head 1's client goes silent; head 2's keeps trying.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        std::thread::sleep(Duration::from_millis(500));
        match open(&two, &b, "ob", OPEN4_SHARE_ACCESS_READ, 0) {
            nfsstat4::NFS4_OK => break,
            s => assert!(Instant::now() < deadline, "still {s:?} 20 s after the lease ran out"),
        }
    }
}

/// Heads of a cluster (`[cluster]`) hold no share modes in CephFS until a
/// client asks for an OPEN that denies: that one waits (NFS4ERR_DELAY)
/// until every head holds its opens' modes there, those opened before
/// included, and is granted then; from then on the heads refuse each
/// other's conflicting opens.
#[test]
#[ignore = "needs a Ceph cluster (scripts/ceph.sh start)"]
fn cluster_heads_hold_share_modes_once_a_client_denies() {
    use proto::nfs4::*;
    use support::v4::*;
    let (conf, path) = ceph_dir("share-auto");
    let cluster = |node: &str| {
        format!(
            "[cluster]\nnode = \"{node}\"\nnamespace = \"nfsx-test-shares-{}\"\npoll_ms = 100\n",
            std::process::id()
        )
    };
    let (one, two) = (ceph_server_with(&conf, &path, &cluster("1")), ceph_server_with(&conf, &path, &cluster("2")));
    let a = Client41::connect(one.port, "auto-client-on-head-1");
    let b = Client41::connect(two.port, "auto-client-on-head-2");
    let open = |srv: &TestServer, c: &Client41, owner: &str, access: u32, deny: u32, retry: bool| {
        open_denying(srv, c, owner, "auto", access, deny, retry)
    };
    // Before any denial: a plain reader through head 1.
    let (st, _) = open(&one, &a, "oa", OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_DENY_NONE, true);
    assert_eq!(st, nfsstat4::NFS4_OK);
    // The first denial waits for the heads, then is granted.
    let asked = Instant::now();
    let (st, first) = open(&two, &b, "ob-deny", OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_DENY_WRITE, false);
    assert_eq!(st, nfsstat4::NFS4ERR_DELAY);
    assert!(first.is_none());
    let (st, opened) = open(&two, &b, "ob-deny", OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_DENY_WRITE, true);
    assert_eq!(st, nfsstat4::NFS4_OK, "the denial was not granted within the client's retries");
    eprintln!("the first denial was granted {:?} after it was asked for", asked.elapsed());
    let (sb, fb) = opened.unwrap();
    // Head 1 knows of it through CephFS only.
    let (st, _) = open(&one, &a, "oa-write", OPEN4_SHARE_ACCESS_WRITE, OPEN4_SHARE_DENY_NONE, true);
    assert_eq!(st, nfsstat4::NFS4ERR_SHARE_DENIED);
    // Head 1's reader from before the switch is in CephFS too: with head
    // 2's denial closed, denying reads there is refused.
    let on_b = || nfs_argop4::OP_PUTFH(PUTFH4args { object: fb.clone() });
    ok_res(
        &b.run(vec![on_b(), nfs_argop4::OP_CLOSE(CLOSE4args { seqid: 0, open_stateid: stateid4 { seqid: 0, ..sb } })]),
    );
    let (st, _) = open(&two, &b, "ob-deny-read", OPEN4_SHARE_ACCESS_WRITE, OPEN4_SHARE_DENY_READ, true);
    assert_eq!(st, nfsstat4::NFS4ERR_SHARE_DENIED);
}

/// Heads without `[cluster]` learn of the first OPEN that denies through
/// CephFS itself (the share-denial gate): until then they hold no share
/// modes there; that OPEN waits (NFS4ERR_DELAY) until every head holds its
/// opens' modes, those granted before included, and is granted then. A
/// head started afterwards holds them from the start.
#[test]
#[ignore = "needs a Ceph cluster (scripts/ceph.sh start)"]
fn lone_heads_hold_share_modes_once_a_client_denies() {
    use proto::nfs4::*;
    use support::v4::*;
    let (conf, path) = ceph_dir("share-gate");
    let ((one, mport), two) = (ceph_server_with_metrics(&conf, &path), ceph_server(&conf, &path));
    let in_store = || metric(mport, "nfsx_share_modes_in_store ");
    let a = Client41::connect(one.port, "gate-client-on-head-1");
    let b = Client41::connect(two.port, "gate-client-on-head-2");
    let open = |srv: &TestServer, c: &Client41, owner: &str, name: &str, access: u32, deny: u32, retry: bool| {
        open_denying(srv, c, owner, name, access, deny, retry).0
    };
    // Before any denial: a reader of one file and a writer of another,
    // through head 1, held in its own table only.
    assert_eq!(open(&one, &a, "oa", "read", OPEN4_SHARE_ACCESS_READ, 0, true), nfsstat4::NFS4_OK);
    assert_eq!(open(&one, &a, "oa", "written", OPEN4_SHARE_ACCESS_WRITE, 0, true), nfsstat4::NFS4_OK);
    assert_eq!(in_store(), 0);
    // The first denial waits for head 1, then is granted. The wait is
    // answered before anything is made: the retry of a GUARDED or
    // EXCLUSIVE creation must not meet its own file.
    let asked = Instant::now();
    let st = open(&two, &b, "ob", "fresh", OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_DENY_WRITE, false);
    assert_eq!(st, nfsstat4::NFS4ERR_DELAY);
    let mut ops = walk(&two.export);
    ops.push(nfs_argop4::OP_LOOKUP(LOOKUP4args { objname: Bytes::from_static(b"fresh") }));
    assert_eq!(b.run(ops).status, nfsstat4::NFS4ERR_NOENT);
    let st = open(&two, &b, "ob", "read", OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_DENY_WRITE, true);
    assert_eq!(st, nfsstat4::NFS4_OK, "the denial was not granted within the client's retries");
    eprintln!("the first denial was granted {:?} after it was asked for", asked.elapsed());
    assert_eq!(in_store(), 1);
    // Head 1's writer from before is in CephFS now: denying writes there
    // is refused.
    let st = open(&two, &b, "ob", "written", OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_DENY_WRITE, true);
    assert_eq!(st, nfsstat4::NFS4ERR_SHARE_DENIED);
    // And head 1 sees head 2's denial.
    let st = open(&one, &a, "oa", "read", OPEN4_SHARE_ACCESS_WRITE, 0, true);
    assert_eq!(st, nfsstat4::NFS4ERR_SHARE_DENIED);
    // A head started now finds the mark: it holds its modes from the start
    // and grants a denial at once.
    let three = ceph_server(&conf, &path);
    let c = Client41::connect(three.port, "gate-client-on-head-3");
    assert_eq!(open(&three, &c, "oc", "read", OPEN4_SHARE_ACCESS_WRITE, 0, false), nfsstat4::NFS4ERR_SHARE_DENIED);
    let st = open(&three, &c, "oc", "other", OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_DENY_READ, false);
    assert_eq!(st, nfsstat4::NFS4_OK);
    assert_eq!(open(&one, &a, "oa", "other", OPEN4_SHARE_ACCESS_READ, 0, true), nfsstat4::NFS4ERR_SHARE_DENIED);
}

/// NLM locks across two heads, and locks that go all at once: a client
/// host's FREE_ALL on head 1 releases its lock in CephFS too, so head 2
/// grants the range afterwards.
#[test]
#[ignore = "needs a Ceph cluster (scripts/ceph.sh start)"]
fn nlm_locks_across_heads_and_free_all() {
    use proto::nlm::*;
    let (conf, path) = ceph_dir("nlm");
    let (one, two) = (ceph_server(&conf, &path), ceph_server(&conf, &path));
    let (mut c1, mut c2) = (RpcClient::connect(one.port).unwrap(), RpcClient::connect(two.port).unwrap());
    let root1 = c1.mount(&path);
    let fh1 = match c1.nfs(NFS3_CREATE, &create_args(&root1, "nlm-locked")) {
        CREATE3res::NFS3_OK(ok) => ok.obj.expect("a handle"),
        other => panic!("CREATE: {other:?}"),
    };
    // Handles are signed per head: head 2 looks the file up itself.
    let root2 = c2.mount(&path);
    let what = diropargs3 { dir: root2, name: Bytes::from_static(b"nlm-locked") };
    let fh2 = match c2.nfs(NFS3_LOOKUP, &LOOKUP3args { what }) {
        LOOKUP3res::NFS3_OK(ok) => ok.object,
        other => panic!("LOOKUP: {other:?}"),
    };
    let lock = |host: &'static [u8], fh: &nfs_fh3| nlm4_lockargs {
        cookie: Bytes::from_static(b"c"),
        block: false,
        exclusive: true,
        alock: nlm4_lock {
            caller_name: Bytes::from_static(host),
            fh: fh.data.clone(),
            oh: Bytes::from_static(host),
            svid: 7,
            l_offset: 0,
            l_len: 100,
        },
        reclaim: false,
        state: 1,
    };
    let stat = |c: &mut RpcClient, a: &nlm4_lockargs| -> nlm4_stats {
        let r: nlm4_res = c.call(NLM_PROG, 4, NLM_LOCK, a).expect("NLM LOCK");
        r.stat.stat
    };
    assert_eq!(stat(&mut c1, &lock(b"host-a", &fh1)), nlm4_stats::nlm4_granted);
    assert_eq!(stat(&mut c2, &lock(b"host-b", &fh2)), nlm4_stats::nlm4_denied);
    // NLM TEST on head 2 names the range head 1's client holds.
    let test = nlm4_testargs { cookie: Bytes::from_static(b"t"), exclusive: false, alock: lock(b"host-b", &fh2).alock };
    let r: nlm4_testres = c2.call(NLM_PROG, 4, NLM_TEST, &test).expect("NLM TEST");
    let nlm4_testrply::nlm4_denied(h) = r.stat else { panic!("{:?}", r.stat) };
    assert_eq!((h.exclusive, h.l_offset, h.l_len), (true, 0, 100));
    let _: () = c1
        .call(NLM_PROG, 4, NLM_FREE_ALL, &nlm4_notify { name: Bytes::from_static(b"host-a"), state: 2 })
        .expect("NLM FREE_ALL");
    // The release runs after the request, on a thread of its own.
    let deadline = Instant::now() + Duration::from_secs(10);
    while stat(&mut c2, &lock(b"host-b", &fh2)) != nlm4_stats::nlm4_granted {
        assert!(Instant::now() < deadline, "head 2 still refuses after host-a's locks were freed on head 1");
        std::thread::sleep(Duration::from_millis(100));
    }
}
