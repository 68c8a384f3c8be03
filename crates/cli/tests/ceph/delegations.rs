//! Delegations over CephFS: recalled for another head's open, read
//! delegations on two heads, revocation, the holder's own changes, a
//! vanished holder's delegation given back to Ceph.

use super::*;

/// A delegation on a Ceph export is backed by a CephFS delegation: another
/// head's conflicting OPEN makes the metadata server recall it, the head
/// that granted it sends CB_RECALL, and the OPEN goes through once the
/// client returned it. The head that held it keeps serving.
#[test]
#[ignore = "needs a Ceph cluster (scripts/ceph.sh start)"]
fn another_heads_open_recalls_a_delegation() {
    use proto::nfs4::*;
    use support::v4::*;
    let (conf, path) = ceph_dir("deleg");
    let (one, two) = (ceph_server(&conf, &path), ceph_server(&conf, &path));
    let a = Client41::connect_manual(one.port, "deleg-client-on-head-1");
    let b = Client41::connect(two.port, "deleg-client-on-head-2");
    // Let the back-channel probe finish, so "no back channel" is not why.
    std::thread::sleep(Duration::from_millis(300));
    let (deleg, fh) = delegated_open(&one, &a, "f");

    let start = Instant::now();
    let opener = std::thread::spawn(move || {
        let mut ops = walk(&two.export);
        ops.push(open_op(&b, "ob", "f", OPEN4_SHARE_ACCESS_WRITE, false));
        let r = b.run_retry(ops);
        (r, start.elapsed(), two, b)
    });
    let recall = a.conn.recalls.lock().unwrap().recv_timeout(Duration::from_secs(10)).expect("no CB_RECALL");
    assert_eq!(recall.stateid.other, deleg.other);
    ok_res(&a.run(vec![
        nfs_argop4::OP_PUTFH(PUTFH4args { object: fh.clone() }),
        nfs_argop4::OP_DELEGRETURN(DELEGRETURN4args { deleg_stateid: deleg }),
    ]));
    let (r, waited, _two, _b) = opener.join().unwrap();
    ok_res(&r);
    eprintln!("head 2's conflicting OPEN answered {waited:?} after it was sent");
    assert!(waited < Duration::from_secs(5), "the open waited {waited:?}, past the return");
    // Head 1 kept its Ceph session.
    ok_res(&a.run(vec![
        nfs_argop4::OP_PUTFH(PUTFH4args { object: fh }),
        nfs_argop4::OP_GETATTR(GETATTR4args { attr_request: vec![1 << FATTR4_SIZE] }),
    ]));
    // And grants no new delegation while head 2 has the file open.
    let mut ops = walk(&one.export);
    ops.push(open_op(&a, "oa2", "f", OPEN4_SHARE_ACCESS_READ, false));
    let n = ops.len();
    let r = a.run(ops);
    ok_res(&r);
    assert!(
        matches!(opened(&r, n - 1).delegation, open_delegation4::OPEN_DELEGATE_NONE),
        "{:?}",
        opened(&r, n - 1).delegation
    );
}

/// A read delegation on a Ceph export is a CephFS read delegation while
/// the head only reads the file: a client of another head opens, reads and
/// stats it, and gets a read delegation of its own, without recalling the
/// first; a writer (here another Ceph client) recalls both, and writes
/// once both are returned.
#[test]
#[ignore = "needs a Ceph cluster (scripts/ceph.sh start)"]
fn read_delegations_on_two_heads_at_once() {
    use proto::nfs4::*;
    use support::v4::*;
    let (conf, path) = ceph_dir("rdeleg");
    // Made by a Ceph client that ends before the heads open it: a head
    // that made it would have it open for writing.
    let settings = CephSettings { conf: Some(conf.clone().into()), ..CephSettings::default() };
    let writer = CephFs::open(&settings, &path).expect("mount CephFS");
    let how = vfs::CreateHow::Unchecked(SetAttrs { mode: Some(0o644), ..SetAttrs::default() });
    let (id, _) = writer.create(writer.root(), b"f", &how, Owner { uid: 0, gid: 0 }).expect("create");
    writer.write(id, 0, b"read by two heads", vfs::Stability::FileSync).expect("write");
    drop(writer);

    let read_delegations = "read_delegations = true";
    let (one, two) =
        (ceph_server_with(&conf, &path, read_delegations), ceph_server_with(&conf, &path, read_delegations));
    let a = Client41::connect_manual(one.port, "rdeleg-client-on-head-1");
    let b = Client41::connect_manual(two.port, "rdeleg-client-on-head-2");
    std::thread::sleep(Duration::from_millis(300));
    let read_delegation = |srv: &TestServer, c: &Client41| {
        let mut ops = walk(&srv.export);
        ops.extend([open_op(c, "o", "f", OPEN4_SHARE_ACCESS_READ, false), nfs_argop4::OP_GETFH]);
        let n = ops.len();
        let r = c.run(ops);
        ok_res(&r);
        let ok = opened(&r, n - 2);
        let open_delegation4::OPEN_DELEGATE_READ(d) = &ok.delegation else {
            panic!("no read delegation: {:?}", ok.delegation)
        };
        let nfs_resop4::OP_GETFH(GETFH4res::NFS4_OK(fh)) = &r.resarray[n - 1] else { panic!("{r:?}") };
        (ok.stateid.clone(), d.stateid.clone(), fh.object.clone())
    };
    let (_, deleg_a, fh_a) = read_delegation(&one, &a);
    let (open_b, deleg_b, fh_b) = read_delegation(&two, &b);
    let r = b.run(vec![
        nfs_argop4::OP_PUTFH(PUTFH4args { object: fh_b.clone() }),
        nfs_argop4::OP_READ(READ4args { stateid: open_b, offset: 0, count: 100 }),
        nfs_argop4::OP_GETATTR(GETATTR4args { attr_request: vec![1 << FATTR4_SIZE] }),
    ]);
    ok_res(&r);
    let nfs_resop4::OP_READ(READ4res::NFS4_OK(data)) = &r.resarray[1] else { panic!("{r:?}") };
    assert_eq!(&data.data[..], b"read by two heads");
    let quiet = a.conn.recalls.lock().unwrap().recv_timeout(Duration::from_secs(1));
    assert!(quiet.is_err(), "head 2's reader recalled head 1's read delegation");

    // Another Ceph client writes: both heads' delegations are recalled.
    let start = Instant::now();
    let conf2 = conf.clone();
    let path2 = path.clone();
    let writing = std::thread::spawn(move || {
        let settings = CephSettings { conf: Some(conf2.into()), ..CephSettings::default() };
        let fs = CephFs::open(&settings, &path2).expect("mount CephFS");
        let (id, _) = fs.lookup(fs.root(), b"f").expect("lookup");
        fs.write(id, 0, b"READ", vfs::Stability::FileSync).map(|_| start.elapsed())
    });
    for (c, deleg, fh) in [(&a, deleg_a, fh_a), (&b, deleg_b, fh_b)] {
        let recall = c.conn.recalls.lock().unwrap().recv_timeout(Duration::from_secs(10)).expect("no CB_RECALL");
        assert_eq!(recall.stateid.other, deleg.other);
        ok_res(&c.run(vec![
            nfs_argop4::OP_PUTFH(PUTFH4args { object: fh }),
            nfs_argop4::OP_DELEGRETURN(DELEGRETURN4args { deleg_stateid: deleg }),
        ]));
    }
    let waited = writing.join().unwrap().expect("the write went through");
    eprintln!("the writer waited {waited:?} for both heads' read delegations");
    assert!(waited < Duration::from_secs(5), "the write waited {waited:?}, past the returns");
}

/// Two heads with `read_delegations`, each client writing a file through
/// its own head and then reading the other's with several READs in
/// flight (`nfsx bench multi-client`): the reads run at the store's pace.
/// They used to wait in libcephfs for the file's cache capability until
/// the writer head closed the file, 15-25 s for 16 MiB (about 1 MB/s).
#[test]
#[ignore = "needs a Ceph cluster (scripts/ceph.sh start)"]
fn reads_beside_another_heads_writer_do_not_stall() {
    let (conf, path) = ceph_dir("rdeleg-stream");
    let read_delegations = "read_delegations = true";
    let (one, two) =
        (ceph_server_with(&conf, &path, read_delegations), ceph_server_with(&conf, &path, read_delegations));
    let tmp = tempfile::tempdir().unwrap();
    let target = format!("nfs://127.0.0.1:{},127.0.0.1:{}{}?version=4.1", one.port, two.port, path);
    let args = ["multi-client", "--clients", "2", "--size", "16MiB", "--runs", "1", "--target", &target];
    let (out, v) = bench(&args, tmp.path(), 5 * MIN);
    let run = &all_ok(&out, &v)[0];
    let read_s = run["read_s"].as_f64().unwrap();
    eprintln!("two heads, read delegations: {} MB/s read, slowest reader {read_s:.2} s", run["read_mbps"]);
    assert!(read_s < 5.0, "a reader took {read_s:.1} s for 16 MiB");
}

/// A client that does not return a delegation CephFS recalled loses it
/// after `delegation_return_secs`, before libcephfs would cut the whole
/// head off the cluster: the other head's OPEN goes through, the holder's
/// delegation answers DELEG_REVOKED, and the head still serves.
#[test]
#[ignore = "needs a Ceph cluster (scripts/ceph.sh start)"]
fn an_unreturned_delegation_is_revoked_in_time_for_ceph() {
    use proto::nfs4::*;
    use support::v4::*;
    let (conf, path) = ceph_dir("deleg-revoke");
    let one = ceph_server_with(&conf, &path, "delegation_return_secs = 2");
    let two = ceph_server(&conf, &path);
    let a = Client41::connect_manual(one.port, "slow-client-on-head-1");
    let b = Client41::connect(two.port, "client-on-head-2");
    std::thread::sleep(Duration::from_millis(300));
    let (deleg, fh) = delegated_open(&one, &a, "g");

    let start = Instant::now();
    let mut ops = walk(&two.export);
    ops.push(open_op(&b, "ob", "g", OPEN4_SHARE_ACCESS_WRITE, false));
    ok_res(&b.run_retry(ops));
    let waited = start.elapsed();
    assert!(a.conn.recalls.lock().unwrap().try_recv().is_ok(), "no CB_RECALL");
    assert!(
        waited >= Duration::from_millis(1500) && waited < Duration::from_secs(8),
        "the open waited {waited:?}, not the return deadline"
    );
    let r = a.run(vec![
        nfs_argop4::OP_PUTFH(PUTFH4args { object: fh.clone() }),
        nfs_argop4::OP_DELEGRETURN(DELEGRETURN4args { deleg_stateid: deleg }),
    ]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_DELEG_REVOKED, "{r:?}");
    ok_res(&a.run(vec![
        nfs_argop4::OP_PUTFH(PUTFH4args { object: fh }),
        nfs_argop4::OP_GETATTR(GETATTR4args { attr_request: vec![1 << FATTR4_SIZE] }),
    ]));
}

/// The holder of a delegation on a Ceph export renames and removes the
/// file itself: libcephfs breaks the head's own CephFS delegation for
/// that, so the head recalls the client's, which returns it, and the
/// request goes through on a retry.
#[test]
#[ignore = "needs a Ceph cluster (scripts/ceph.sh start)"]
fn the_holder_renames_and_removes_its_delegated_file() {
    use proto::nfs4::*;
    use support::v4::*;
    let (conf, path) = ceph_dir("deleg-holder");
    let srv = ceph_server(&conf, &path);
    let a = Client41::connect(srv.port, "holder");
    std::thread::sleep(Duration::from_millis(300));
    let (deleg, fh) = delegated_open(&srv, &a, "h");
    let mut ops = walk(&srv.export);
    ops.push(nfs_argop4::OP_SAVEFH);
    ops.push(nfs_argop4::OP_RENAME(RENAME4args {
        oldname: Bytes::from_static(b"h"),
        newname: Bytes::from_static(b"h2"),
    }));
    ok_res(&a.run_retry(ops));
    // The rename took the delegation back (the client returned it).
    let r = a.run(vec![
        nfs_argop4::OP_PUTFH(PUTFH4args { object: fh }),
        nfs_argop4::OP_DELEGRETURN(DELEGRETURN4args { deleg_stateid: deleg }),
    ]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_BAD_STATEID, "{r:?}");
    let (_, _) = delegated_open(&srv, &a, "h2");
    let mut ops = walk(&srv.export);
    ops.push(nfs_argop4::OP_REMOVE(REMOVE4args { target: Bytes::from_static(b"h2") }));
    ok_res(&a.run_retry(ops));
}

/// The holder of a write delegation on a Ceph export writes under it
/// without a recall or a wait. A truncation (any attribute change) needs
/// capabilities the CephFS delegation holds back, even for the holder, so
/// the head recalls the delegation first and answers DELAY; once the
/// client returned it, the truncation goes through at once, not after the
/// revocation deadline.
#[test]
#[ignore = "needs a Ceph cluster (scripts/ceph.sh start)"]
fn the_holder_writes_under_its_write_delegation_and_truncates_after_a_recall() {
    use proto::nfs4::*;
    use support::v4::*;
    use xdr::{Encode, Encoder};
    let (conf, path) = ceph_dir("deleg-writer");
    let srv = ceph_server(&conf, &path);
    let a = Client41::connect_manual(srv.port, "writer");
    std::thread::sleep(Duration::from_millis(300));
    let mut ops = walk(&srv.export);
    ops.push(open_op(&a, "ow", "w", OPEN4_SHARE_ACCESS_BOTH, true));
    ops.push(nfs_argop4::OP_GETFH);
    let n = ops.len();
    let r = a.run(ops);
    ok_res(&r);
    let o = opened(&r, n - 2);
    let open_delegation4::OPEN_DELEGATE_WRITE(d) = &o.delegation else { panic!("{:?}", o.delegation) };
    let deleg = d.stateid.clone();
    let open = stateid4 { seqid: 0, other: o.stateid.other };
    let nfs_resop4::OP_GETFH(GETFH4res::NFS4_OK(fh)) = &r.resarray[n - 1] else { panic!("{r:?}") };
    let on = || nfs_argop4::OP_PUTFH(PUTFH4args { object: fh.object.clone() });
    let start = Instant::now();
    let write = nfs_argop4::OP_WRITE(WRITE4args {
        stateid: open.clone(),
        offset: 0,
        stable: stable_how4::FILE_SYNC4,
        data: Bytes::from_static(b"written under a delegation"),
    });
    ok_res(&a.run(vec![on(), write]));
    assert!(a.conn.recalls.lock().unwrap().try_recv().is_err(), "the holder's write recalled its delegation");

    let mut size = Encoder::with_capacity(8);
    4u64.encode(&mut size);
    let mut attrmask = Vec::new();
    proto::bitmap4::add(&mut attrmask, FATTR4_SIZE);
    let truncate = nfs_argop4::OP_SETATTR(SETATTR4args {
        stateid: open,
        obj_attributes: fattr4 { attrmask, attr_vals: size.into_bytes() },
    });
    assert_eq!(a.run(vec![on(), truncate.clone()]).status, nfsstat4::NFS4ERR_DELAY);
    let recall = a.conn.recalls.lock().unwrap().recv_timeout(Duration::from_secs(5)).expect("no CB_RECALL");
    assert_eq!(recall.stateid.other, deleg.other);
    ok_res(&a.run(vec![on(), nfs_argop4::OP_DELEGRETURN(DELEGRETURN4args { deleg_stateid: deleg })]));
    ok_res(&a.run_retry(vec![on(), truncate]));
    assert!(start.elapsed() < Duration::from_secs(2), "took {:?}", start.elapsed());
}

/// A client whose state goes without DELEGRETURN (here: it reboots and
/// destroys its old record) leaves no CephFS delegation behind for long:
/// the head gives back those no client's delegation stands behind within
/// its sweep (10 s).
#[test]
#[ignore = "needs a Ceph cluster (scripts/ceph.sh start)"]
fn a_vanished_clients_delegation_is_given_back_to_ceph() {
    use support::v4::*;
    let (conf, path) = ceph_dir("deleg-sweep");
    let (srv, mport) = ceph_server_with_metrics(&conf, &path);
    let held = || metric(mport, "nfsx_backend_ceph_delegations_held{");
    let a = Client41::connect_manual(srv.port, "vanishing-client");
    std::thread::sleep(Duration::from_millis(300));
    delegated_open(&srv, &a, "v");
    assert_eq!(held(), 1);
    drop(a);
    Client41::forget(std::net::SocketAddr::from(([127, 0, 0, 1], srv.port)), "vanishing-client");
    let gone = Instant::now();
    while held() != 0 {
        assert!(gone.elapsed() < Duration::from_secs(15), "CephFS delegation still held");
        std::thread::sleep(Duration::from_millis(250));
    }
    eprintln!("CephFS delegation given back {:?} after its client went", gone.elapsed());
}

/// OPEN (creating) of `name` on `srv` by `c`, which must come with a read
/// delegation: its stateid and the file's handle.
fn delegated_open(
    srv: &TestServer,
    c: &support::v4::Client41,
    name: &str,
) -> (proto::nfs4::stateid4, proto::nfs4::nfs_fh4) {
    use proto::nfs4::*;
    use support::v4::*;
    let mut ops = walk(&srv.export);
    ops.push(open_op(c, "oa", name, OPEN4_SHARE_ACCESS_READ, true));
    ops.push(nfs_argop4::OP_GETFH);
    let n = ops.len();
    let r = c.run(ops);
    ok_res(&r);
    let open_delegation4::OPEN_DELEGATE_READ(d) = &opened(&r, n - 2).delegation else {
        panic!("no read delegation on a Ceph export: {:?}", opened(&r, n - 2).delegation)
    };
    let nfs_resop4::OP_GETFH(GETFH4res::NFS4_OK(fh)) = &r.resarray[n - 1] else { panic!("{r:?}") };
    (d.stateid.clone(), fh.object.clone())
}
