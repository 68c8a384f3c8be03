//! NFSv4.1 against the nfsx binary over TCP, driven by the test client in
//! `support/v4.rs`: opens and I/O, locks between two clients, a
//! delegation recalled over the back channel, exactly-once replay, and
//! reclaim after a restart.

mod support;

use std::time::{Duration, Instant};

use bytes::Bytes;
use proto::nfs4::*;
use support::v4::*;
use support::*;

/// Short leases so that expiry and grace can be seen in seconds.
const SHORT: &str = "[core.nfs4]\nlease_secs = 2\ngrace_secs = 4\n";

fn start() -> TestServer {
    TestServer::start(ServerOpts { extra_config: SHORT, ..Default::default() })
}

fn export_ops(srv: &TestServer) -> Vec<nfs_argop4> {
    walk(&srv.export)
}

fn with(mut a: Vec<nfs_argop4>, b: Vec<nfs_argop4>) -> Vec<nfs_argop4> {
    a.extend(b);
    a
}

#[test]
fn open_write_read_close() {
    let srv = start();
    let c = Client41::connect(srv.port, "client-a");
    let (st, fh) = open_file(&srv, &c, "o1", "hello.txt", OPEN4_SHARE_ACCESS_BOTH);
    let data = Bytes::from(vec![b'x'; 100_000]);
    let r = c.run(vec![
        nfs_argop4::OP_PUTFH(PUTFH4args { object: fh.clone() }),
        nfs_argop4::OP_WRITE(WRITE4args {
            stateid: st.clone(),
            offset: 0,
            stable: stable_how4::FILE_SYNC4,
            data: data.clone(),
        }),
        nfs_argop4::OP_READ(READ4args { stateid: st.clone(), offset: 99_990, count: 100 }),
    ]);
    ok_res(&r);
    let nfs_resop4::OP_READ(READ4res::NFS4_OK(rd)) = &r.resarray[2] else { panic!() };
    assert_eq!(&rd.data[..], &[b'x'; 10]);
    assert!(rd.eof);
    let r = c.run(vec![
        nfs_argop4::OP_PUTFH(PUTFH4args { object: fh }),
        nfs_argop4::OP_CLOSE(CLOSE4args { seqid: 0, open_stateid: st.clone() }),
    ]);
    ok_res(&r);
    assert_eq!(std::fs::read(srv.export.join("hello.txt")).unwrap(), data);
}

#[test]
fn locks_conflict_between_two_clients() {
    let srv = start();
    let a = Client41::connect(srv.port, "client-a");
    let b = Client41::connect(srv.port, "client-b");
    let (sa, fh) = open_file(&srv, &a, "oa", "locked", OPEN4_SHARE_ACCESS_BOTH);
    let (sb, _) = open_file(&srv, &b, "ob", "locked", OPEN4_SHARE_ACCESS_BOTH);
    let put = || nfs_argop4::OP_PUTFH(PUTFH4args { object: fh.clone() });

    let r = a.run(vec![put(), lock_op(&a, &sa, "la", 0, 100)]);
    ok_res(&r);
    let nfs_resop4::OP_LOCK(LOCK4res::NFS4_OK(la)) = &r.resarray[1] else { panic!() };
    let la = la.lock_stateid.clone();

    let r = b.run(vec![put(), lock_op(&b, &sb, "lb", 50, 10)]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_DENIED);
    let nfs_resop4::OP_LOCK(LOCK4res::NFS4ERR_DENIED(d)) = &r.resarray[1] else { panic!("{r:?}") };
    assert_eq!((d.offset, d.length, d.owner.clientid), (0, 100, a.clientid));
    assert_eq!(&d.owner.owner[..], b"la");

    let r = a.run(vec![
        put(),
        nfs_argop4::OP_LOCKU(LOCKU4args {
            locktype: nfs_lock_type4::WRITE_LT,
            seqid: 0,
            lock_stateid: la,
            offset: 0,
            length: 100,
        }),
    ]);
    ok_res(&r);
    ok_res(&b.run(vec![put(), lock_op(&b, &sb, "lb", 50, 10)]));
}

/// Client A (answering recalls by hand) opens the new file `name` for
/// reading and gets a read delegation on it; client B is connected too.
fn read_delegated(srv: &TestServer, name: &str) -> (Client41, Client41, stateid4) {
    std::fs::write(srv.export.join(name), b"data").unwrap();
    let a = Client41::connect_manual(srv.port, "client-a");
    let b = Client41::connect(srv.port, "client-b");
    // The server probes the back channel with CB_NULL before it trusts
    // it with delegations; give the probe a moment.
    std::thread::sleep(Duration::from_millis(200));
    let ops = with(export_ops(srv), vec![open_op(&a, "oa", name, OPEN4_SHARE_ACCESS_READ, false)]);
    let n = ops.len();
    let r = a.run(ops);
    ok_res(&r);
    let open_delegation4::OPEN_DELEGATE_READ(deleg) = &opened(&r, n - 1).delegation else {
        panic!("no read delegation: {:?}", opened(&r, n - 1).delegation)
    };
    let deleg = deleg.stateid.clone();
    (a, b, deleg)
}

#[test]
fn delegation_granted_then_recalled_by_a_conflicting_open() {
    let srv = start();
    let (a, b, deleg) = read_delegated(&srv, "shared");

    // Client A returns the delegation as soon as it is recalled.
    let conn = a.conn.clone();
    let returner = std::thread::spawn(move || {
        let recall = conn.recalls.lock().unwrap().recv_timeout(Duration::from_secs(10)).expect("no CB_RECALL");
        recall
    });
    let start = Instant::now();
    let ops = with(export_ops(&srv), vec![open_op(&b, "ob", "shared", OPEN4_SHARE_ACCESS_WRITE, false)]);
    let r = b.run(ops.clone());
    assert_eq!(r.status, nfsstat4::NFS4ERR_DELAY, "conflicting open must be told to wait");
    let recall = returner.join().unwrap();
    assert_eq!(recall.stateid.other, deleg.other);
    ok_res(&a.run(vec![
        nfs_argop4::OP_PUTFH(PUTFH4args { object: recall.fh }),
        nfs_argop4::OP_DELEGRETURN(DELEGRETURN4args { deleg_stateid: deleg }),
    ]));
    let mut tries = 0;
    loop {
        let r = b.run(ops.clone());
        if r.status == nfsstat4::NFS4_OK {
            break;
        }
        assert_eq!(r.status, nfsstat4::NFS4ERR_DELAY);
        tries += 1;
        assert!(tries < 100, "open still delayed after the delegation was returned");
        std::thread::sleep(Duration::from_millis(1));
    }
    eprintln!("recall to successful open: {:?}", start.elapsed());
    assert!(start.elapsed() < Duration::from_secs(2));
}

/// A recall can overtake the OPEN reply that granted the delegation (RFC
/// 8881 section 2.10.6.3): a holder that answers it does not know the
/// delegation yet is recalled again at the conflicting client's next try,
/// not left holding it until the server revokes it.
#[test]
fn a_recall_answered_badhandle_is_sent_again() {
    let srv = start();
    let (a, b, deleg) = read_delegated(&srv, "raced");
    a.conn.refuse_recalls.store(1, std::sync::atomic::Ordering::Relaxed);
    let ops = with(export_ops(&srv), vec![open_op(&b, "ob", "raced", OPEN4_SHARE_ACCESS_WRITE, false)]);
    assert_eq!(b.run(ops.clone()).status, nfsstat4::NFS4ERR_DELAY);
    let recalls = a.conn.recalls.lock().unwrap();
    let first = recalls.recv_timeout(Duration::from_secs(10)).expect("no CB_RECALL");
    assert_eq!(first.stateid.other, deleg.other);
    // B tries again until A is asked again.
    let deadline = Instant::now() + Duration::from_secs(10);
    let second = loop {
        assert_eq!(b.run(ops.clone()).status, nfsstat4::NFS4ERR_DELAY, "the delegation is still held");
        if let Ok(r) = recalls.recv_timeout(Duration::from_millis(20)) {
            break r;
        }
        assert!(Instant::now() < deadline, "the refused recall was not sent again");
    };
    assert_eq!(second.stateid.other, deleg.other);
    ok_res(&a.run(vec![
        nfs_argop4::OP_PUTFH(PUTFH4args { object: second.fh }),
        nfs_argop4::OP_DELEGRETURN(DELEGRETURN4args { deleg_stateid: deleg }),
    ]));
    let deadline = Instant::now() + Duration::from_secs(5);
    while b.run(ops.clone()).status == nfsstat4::NFS4ERR_DELAY {
        assert!(Instant::now() < deadline, "open still delayed after the delegation was returned");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// An NFSv3 client reading a file an NFSv4 client holds a read delegation
/// on goes ahead; its WRITE recalls the delegation and is answered JUKEBOX
/// until the holder returns it, so the holder never serves stale data.
#[test]
fn an_nfsv3_write_recalls_an_nfsv4_delegation() {
    use proto::nfs3::*;
    let srv = start();
    std::fs::write(srv.export.join("shared"), b"data").unwrap();
    let a = Client41::connect_manual(srv.port, "holder");
    std::thread::sleep(Duration::from_millis(200)); // the back channel's CB_NULL probe
    let ops =
        with(export_ops(&srv), vec![open_op(&a, "oa", "shared", OPEN4_SHARE_ACCESS_READ, false), nfs_argop4::OP_GETFH]);
    let n = ops.len();
    let r = a.run(ops);
    ok_res(&r);
    let open_delegation4::OPEN_DELEGATE_READ(deleg) = &opened(&r, n - 2).delegation else {
        panic!("no read delegation: {:?}", opened(&r, n - 2).delegation)
    };
    let deleg = deleg.stateid.clone();
    let nfs_resop4::OP_GETFH(GETFH4res::NFS4_OK(fh)) = &r.resarray[n - 1] else { panic!() };
    // The two versions share one handle format.
    let file = nfs_fh3 { data: fh.object.clone() };

    let mut v3 = support::rpc::RpcClient::connect(srv.port).unwrap();
    let read: READ3res = v3.call(100003, 3, 6, &READ3args { file: file.clone(), offset: 0, count: 100 }).unwrap();
    assert!(matches!(read, READ3res::NFS3_OK(_)), "a read does not conflict with a read delegation: {read:?}");
    let write =
        WRITE3args { file, offset: 0, count: 4, stable: stable_how::FILE_SYNC, data: Bytes::from_static(b"DATA") };
    let r: WRITE3res = v3.call(100003, 3, 7, &write).unwrap();
    assert!(matches!(r, WRITE3res::default(nfsstat3::NFS3ERR_JUKEBOX, _)), "{r:?}");
    let recall = a.conn.recalls.lock().unwrap().recv_timeout(Duration::from_secs(10)).expect("no CB_RECALL");
    assert_eq!(recall.stateid.other, deleg.other);
    assert_eq!(std::fs::read(srv.export.join("shared")).unwrap(), b"data", "written before the recall");
    ok_res(&a.run(vec![
        nfs_argop4::OP_PUTFH(PUTFH4args { object: recall.fh }),
        nfs_argop4::OP_DELEGRETURN(DELEGRETURN4args { deleg_stateid: deleg }),
    ]));
    let r: WRITE3res = v3.call(100003, 3, 7, &write).unwrap();
    assert!(matches!(r, WRITE3res::NFS3_OK(_)), "{r:?}");
    assert_eq!(std::fs::read(srv.export.join("shared")).unwrap(), b"DATA");
}

#[test]
fn retransmitted_create_is_replayed_not_redone() {
    let srv = start();
    let c = Client41::connect(srv.port, "client-a");
    let ops = with(
        vec![c.sequence()],
        with(
            export_ops(&srv),
            vec![nfs_argop4::OP_CREATE(CREATE4args {
                objtype: createtype4::NF4DIR,
                objname: Bytes::from_static(b"made-once"),
                createattrs: fattr4 { attrmask: vec![], attr_vals: Bytes::new() },
            })],
        ),
    );
    let args = xdr::to_bytes(&COMPOUND4args { tag: Bytes::new(), minorversion: 1, argarray: ops });
    let first = support::v4::Conn::body_of(c.conn.call_raw(c.conn.next_xid(), 1, &args));
    // The same request again (as after a lost reply, with a new xid):
    // the slot's cached reply comes back byte for byte; the directory is
    // not created a second time (which would say NFS4ERR_EXIST).
    let again = support::v4::Conn::body_of(c.conn.call_raw(c.conn.next_xid(), 1, &args));
    assert_eq!(first, again);
    assert!(srv.export.join("made-once").is_dir());
}

/// A layout type the server has never heard of (not one of RFC 8881's
/// or RFC 8435's) is NFS4ERR_UNKNOWN_LAYOUTTYPE, not a malformed request.
#[test]
fn an_unknown_layout_type_is_unknown_layouttype() {
    let srv = start();
    let c = Client41::connect(srv.port, "layout-asker");
    let (stateid, fh) = open_file(&srv, &c, "o", "laid-out", OPEN4_SHARE_ACCESS_BOTH);
    let get = |t: layouttype4| {
        nfs_argop4::OP_LAYOUTGET(LAYOUTGET4args {
            loga_signal_layout_avail: false,
            loga_layout_type: t,
            loga_iomode: layoutiomode4::LAYOUTIOMODE4_RW,
            loga_offset: 0,
            loga_length: u64::MAX,
            loga_minlength: 0,
            loga_stateid: stateid.clone(),
            loga_maxcount: 4096,
        })
    };
    let put = nfs_argop4::OP_PUTFH(PUTFH4args { object: fh.clone() });
    let ops = vec![c.sequence(), put, get(layouttype4::LAYOUT4_FLEX_FILES)];
    let mut args = xdr::to_bytes(&COMPOUND4args { tag: Bytes::new(), minorversion: 1, argarray: ops }).to_vec();
    // OP_LAYOUTGET, signal FALSE, then the layout type: made 99.
    let at = args.windows(12).rposition(|w| w == [0, 0, 0, 50, 0, 0, 0, 0, 0, 0, 0, 4]).expect("the LAYOUTGET");
    args[at + 11] = 99;
    let body = support::v4::Conn::body_of(c.conn.call_raw(c.conn.next_xid(), 1, &args));
    let r = <COMPOUND4res as xdr::Decode>::decode(&mut xdr::Decoder::new(body)).expect("COMPOUND4res");
    assert_eq!(r.status, nfsstat4::NFS4ERR_UNKNOWN_LAYOUTTYPE, "{r:?}");
    assert_eq!(r.resarray.len(), 3, "SEQUENCE, PUTFH, LAYOUTGET: {r:?}");
}

#[test]
fn expired_client_loses_its_lock_only_to_a_conflict() {
    let srv = start();
    let a = Client41::connect(srv.port, "client-a");
    let b = Client41::connect(srv.port, "client-b");
    let (sa, fh) = open_file(&srv, &a, "oa", "lease", OPEN4_SHARE_ACCESS_BOTH);
    let (sb, _) = open_file(&srv, &b, "ob", "lease", OPEN4_SHARE_ACCESS_BOTH);
    let put = || nfs_argop4::OP_PUTFH(PUTFH4args { object: fh.clone() });
    ok_res(&a.run(vec![put(), lock_op(&a, &sa, "la", 0, 10)]));
    assert_eq!(b.run(vec![put(), lock_op(&b, &sb, "lb", 0, 10)]).status, nfsstat4::NFS4ERR_DENIED);
    // A goes silent for longer than the 2 s lease; B keeps renewing.
    for _ in 0..6 {
        std::thread::sleep(Duration::from_millis(600));
        ok_res(&b.run(vec![]));
    }
    ok_res(&b.run(vec![put(), lock_op(&b, &sb, "lb", 0, 10)]));
}

#[test]
fn opens_are_reclaimed_after_a_restart_and_others_wait_for_grace() {
    let mut srv = start();
    let (fh, _) = {
        let a = Client41::connect(srv.port, "client-a");
        let (st, fh) = open_file(&srv, &a, "oa", "kept", OPEN4_SHARE_ACCESS_BOTH);
        (fh, st)
    };
    srv.restart();
    let a = Client41::connect_reclaiming(srv.port, "client-a", 8);
    let b = Client41::connect_reclaiming(srv.port, "client-b", 8);
    // B is new: while A may still reclaim, B gets no new state.
    let r = b.run(with(export_ops(&srv), vec![open_op(&b, "ob", "other", OPEN4_SHARE_ACCESS_BOTH, true)]));
    assert_eq!(r.status, nfsstat4::NFS4ERR_GRACE);
    // A reclaims its open by file handle.
    let r = a.run(vec![nfs_argop4::OP_PUTFH(PUTFH4args { object: fh }), reclaim_open_op(&a, "oa")]);
    ok_res(&r);
    // A was the only client known from before: its RECLAIM_COMPLETE ends
    // the grace period.
    a.reclaim_complete();
    b.reclaim_complete();
    ok_res(&b.run(with(export_ops(&srv), vec![open_op(&b, "ob", "other", OPEN4_SHARE_ACCESS_BOTH, true)])));
}

/// The benchmarks' connection, whose callers read the replies themselves
/// (`Conn::connect_caller_driven`): 16 threads on their own slots each get
/// their own replies, and a recall that comes while the holder makes no
/// call is answered and its delegation returned.
#[test]
fn a_caller_driven_connection_matches_replies_and_answers_recalls_while_idle() {
    let srv = start();
    let a = std::sync::Arc::new(Client41::connect_caller_driven(srv.port, "caller-driven", 17));
    assert!(a.slots() >= 16, "{} slots", a.slots());
    let callers: Vec<_> = (0..16)
        .map(|slot| {
            let a = a.clone();
            std::thread::spawn(move || {
                for _ in 0..200 {
                    let r = a.conn.compound(1, vec![a.sequence_on(slot), nfs_argop4::OP_PUTROOTFH]);
                    ok_res(&r);
                    let nfs_resop4::OP_SEQUENCE(SEQUENCE4res::NFS4_OK(s)) = &r.resarray[0] else { panic!("{r:?}") };
                    assert_eq!(s.sr_slotid as usize, slot, "a reply for another caller");
                }
            })
        })
        .collect();
    for c in callers {
        c.join().unwrap();
    }

    let ops = with(export_ops(&srv), vec![open_op(&a, "oa", "held", OPEN4_SHARE_ACCESS_BOTH, true)]);
    let n = ops.len();
    let r = a.run(ops);
    ok_res(&r);
    assert!(
        matches!(opened(&r, n - 1).delegation, open_delegation4::OPEN_DELEGATE_WRITE(_)),
        "no write delegation: {:?}",
        opened(&r, n - 1).delegation
    );
    let b = Client41::connect(srv.port, "opener");
    let ops = with(export_ops(&srv), vec![open_op(&b, "ob", "held", OPEN4_SHARE_ACCESS_READ, false)]);
    let start = Instant::now();
    while b.run(ops.clone()).status == nfsstat4::NFS4ERR_DELAY {
        assert!(start.elapsed() < Duration::from_secs(2), "the idle holder never returned its delegation");
        std::thread::sleep(Duration::from_millis(5));
    }
    ok_res(&b.run(ops));
}

/// Another client's GETATTR of a file under a write delegation asks the
/// holder with CB_GETATTR (RFC 8881 section 10.4.3) and waits for its
/// answer without holding a server thread: the holder's size comes back;
/// a holder that does not answer in time has its delegation recalled and
/// the GETATTR is told to come back (NFS4ERR_DELAY) after
/// `cb_getattr_wait_ms`. The metrics count both waits.
#[test]
fn getattr_of_a_write_delegated_file_waits_for_the_holders_answer() {
    let mport = free_port();
    let cfg = format!("metrics = \"127.0.0.1:{mport}\"\n{SHORT}");
    let srv = TestServer::start(ServerOpts { extra_config: &cfg, ..Default::default() });
    let a = Client41::connect_manual(srv.port, "holder");
    let b = Client41::connect(srv.port, "asker");
    // The server probes the back channel with CB_NULL before it trusts
    // it with delegations; give the probe a moment.
    std::thread::sleep(Duration::from_millis(200));
    let held = |name: &str| {
        let access = OPEN4_SHARE_ACCESS_BOTH | OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG;
        let ops = with(export_ops(&srv), vec![open_op(&a, "oa", name, access, true), nfs_argop4::OP_GETFH]);
        let n = ops.len();
        let r = a.run(ops);
        ok_res(&r);
        let open_delegation4::OPEN_DELEGATE_WRITE(_) = &opened(&r, n - 2).delegation else {
            panic!("no write delegation: {:?}", opened(&r, n - 2).delegation)
        };
        fh_res(&r, n - 1)
    };
    let getattr = |fh: &nfs_fh4| {
        let mut attr_request = Vec::new();
        proto::bitmap4::add(&mut attr_request, FATTR4_SIZE);
        let r = b.run(vec![
            nfs_argop4::OP_PUTFH(PUTFH4args { object: fh.clone() }),
            nfs_argop4::OP_GETATTR(GETATTR4args { attr_request }),
        ]);
        let size = match r.resarray.last() {
            Some(nfs_resop4::OP_GETATTR(GETATTR4res::NFS4_OK(g))) => {
                Some(u64::from_be_bytes(g.obj_attributes.attr_vals[..8].try_into().unwrap()))
            }
            _ => None,
        };
        (r.status, size)
    };

    // The holder wrote 5 bytes the server has not seen.
    let fh = held("answered");
    *a.conn.cb_getattr.lock().unwrap() = CbGetattr::Attrs { size: 5, change: 1 << 40 };
    assert_eq!(getattr(&fh), (nfsstat4::NFS4_OK, Some(5)));

    // A holder that cannot tell: the server's own size.
    let fh = held("cannot-tell");
    *a.conn.cb_getattr.lock().unwrap() = CbGetattr::NotSupp;
    assert_eq!(getattr(&fh), (nfsstat4::NFS4_OK, Some(0)));

    // A silent holder: DELAY once the wait (100 ms by default) is over,
    // and the delegation is recalled.
    let fh = held("silent");
    *a.conn.cb_getattr.lock().unwrap() = CbGetattr::Silent;
    let t = Instant::now();
    assert_eq!(getattr(&fh).0, nfsstat4::NFS4ERR_DELAY);
    assert!(t.elapsed() >= Duration::from_millis(100), "answered after {:?}", t.elapsed());
    let recall = a.conn.recalls.lock().unwrap().recv_timeout(Duration::from_secs(5)).expect("a recall");
    assert_eq!(recall.fh, fh);

    let m = get_metrics(mport);
    let count = |name: &str| {
        m.lines()
            .find_map(|l| l.strip_prefix(name).and_then(|v| v.trim().parse::<f64>().ok()))
            .unwrap_or_else(|| panic!("{name} missing from the metrics"))
    };
    assert_eq!(count("nfsx_requests_parked_total"), 3.0);
    assert_eq!(count("nfsx_requests_woken_total"), 2.0);
}
