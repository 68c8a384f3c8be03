//! Directory delegations (RFC 8881 sections 10.9, 18.39) and CB_NOTIFY
//! (section 20.4) through the whole core, on a LocalFs export: what the
//! holder is told of changes made by another NFSv4.1 client, by an NFSv3
//! client and on the host, in order and within the delays it asked for;
//! and the recalls when it cannot be told.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::v4::*;
use common::*;
use proto::dir_notify::DirChange;
use proto::nfs4::*;
use server_core::state::Nfs4Settings;
use server_core::{ManualClock, MemStore};
use xdr::{Decode, Decoder, Encode, Encoder};

struct Fixture {
    env: Env,
    clock: Arc<ManualClock>,
    cb: Arc<RecordingBackchannel>,
    dir: tempfile::TempDir,
    /// Callback records already looked at.
    seen: usize,
}

const HOLDER_CONN: u64 = 7;
const OTHER_CONN: u64 = 8;

fn fixture(nfs4: Nfs4Settings) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let fs = localfs(&dir);
    std::fs::create_dir(dir.path().join("export/d")).unwrap();
    // The test user changes it too.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path().join("export/d"), std::fs::Permissions::from_mode(0o777)).unwrap();
    let settings = server_core::CoreSettings { nfs4, ..Default::default() };
    let mut env = env_on_with("/export *(rw,insecure,no_root_squash)\n", vec![fs], settings);
    let clock = Arc::new(ManualClock::default());
    let cb = Arc::new(RecordingBackchannel::default());
    env.core = env.core.with_nfs4_env(clock.clone(), cb.clone(), Arc::new(MemStore::default()));
    Fixture { env, clock, cb, dir, seen: 0 }
}

fn host(f: &Fixture, rel: &str) -> std::path::PathBuf {
    f.dir.path().join("export").join(rel)
}

/// A client whose back channel answered its probe.
fn holder(f: &mut Fixture) -> Session {
    with_callbacks(f, HOLDER_CONN, "holder")
}

/// Client `name` on connection `conn`, its back channel answering.
fn with_callbacks(f: &mut Fixture, conn: u64, name: &str) -> Session {
    f.env.peer.conn = conn;
    let mut s = Session::with(&f.env, name, CREATE_SESSION4_FLAG_CONN_BACK_CHAN, 8);
    let (_, probe) = f.cb.sent.lock().unwrap()[f.seen].clone();
    f.seen += 1;
    f.env.raw(cb_null_reply(&probe));
    s.reclaim_complete(&f.env);
    s
}

fn all_types() -> bitmap4 {
    vec![(1 << 6) - 1]
}

fn gdd(types: bitmap4, child_delay: i64) -> nfs_argop4 {
    nfs_argop4::OP_GET_DIR_DELEGATION(GET_DIR_DELEGATION4args {
        gdda_signal_deleg_avail: false,
        gdda_notification_types: types,
        gdda_child_attr_delay: nfstime4 { seconds: child_delay, nseconds: 0 },
        gdda_dir_attr_delay: nfstime4 { seconds: 0, nseconds: 0 },
        gdda_child_attributes: mask(&[FATTR4_TYPE, FATTR4_SIZE, FATTR4_FILEID, FATTR4_MODE, FATTR4_TIME_ACCESS]),
        gdda_dir_attributes: mask(&[FATTR4_CHANGE]),
    })
}

fn dir_fh(f: &Fixture, s: &mut Session) -> nfs_fh4 {
    let mut ops = walk(Path::new("/export/d"));
    ops.push(nfs_argop4::OP_GETFH);
    let r = s.run(&f.env, ops);
    ok(&r);
    fh_res(&r, 3)
}

/// GET_DIR_DELEGATION on `fh`: the non-fatal result.
fn get_dir_deleg(f: &Fixture, s: &mut Session, fh: &nfs_fh4, op: nfs_argop4) -> GET_DIR_DELEGATION4res_non_fatal {
    let r = s.run(&f.env, vec![putfh(fh), op]);
    ok(&r);
    match &r.resarray[1] {
        nfs_resop4::OP_GET_DIR_DELEGATION(GET_DIR_DELEGATION4res::NFS4_OK(res)) => res.clone(),
        other => panic!("GET_DIR_DELEGATION: {other:?}"),
    }
}

/// The holder, the directory's handle and the delegation granted it on
/// /export/d with every notification, attributes at once.
fn delegated(f: &mut Fixture) -> (Session, nfs_fh4, GET_DIR_DELEGATION4resok) {
    let mut a = holder(f);
    let fh = dir_fh(f, &mut a);
    let ok = granted(get_dir_deleg(f, &mut a, &fh, gdd(all_types(), 0)));
    (a, fh, ok)
}

fn granted(res: GET_DIR_DELEGATION4res_non_fatal) -> GET_DIR_DELEGATION4resok {
    match res {
        GET_DIR_DELEGATION4res_non_fatal::GDD4_OK(ok) => ok,
        other => panic!("not granted: {other:?}"),
    }
}

/// The callbacks sent since the last look: (xid, its operations).
fn new_callbacks(f: &mut Fixture) -> Vec<(u32, Vec<nfs_cb_argop4>)> {
    let sent = f.cb.sent.lock().unwrap().clone();
    let mut out = Vec::new();
    for (_, rec) in &sent[f.seen..] {
        let mut d = Decoder::new(rec.clone());
        let msg = proto::rpc::rpc_msg::decode(&mut d).unwrap();
        let proto::rpc::rpc_msg_body::CALL(call) = msg.body else { continue };
        if call.proc != 1 {
            continue;
        }
        let args = CB_COMPOUND4args::decode(&mut d).unwrap();
        out.push((msg.xid, args.argarray.into_iter().skip(1).collect()));
    }
    f.seen = sent.len();
    out
}

/// Answers callback `xid` with `status` for its one operation.
fn answer(f: &Fixture, xid: u32, op: &nfs_cb_argop4, status: nfsstat4) {
    answer_all(f, xid, std::slice::from_ref(op), status)
}

/// Answers callback `xid`: each of its operations `status`.
fn answer_all(f: &Fixture, xid: u32, ops: &[nfs_cb_argop4], status: nfsstat4) {
    let results = ops
        .iter()
        .map(|op| match op {
            nfs_cb_argop4::OP_CB_NOTIFY(_) => nfs_cb_resop4::OP_CB_NOTIFY(CB_NOTIFY4res { cnr_status: status }),
            nfs_cb_argop4::OP_CB_RECALL(_) => nfs_cb_resop4::OP_CB_RECALL(CB_RECALL4res { status }),
            other => panic!("unexpected callback {other:?}"),
        })
        .collect();
    reply(f, xid, status, results);
}

/// The holder's reply to callback `xid`: CB_SEQUENCE, then `results`.
fn reply(f: &Fixture, xid: u32, status: nfsstat4, results: Vec<nfs_cb_resop4>) {
    let mut e = Encoder::new();
    for v in [xid, 1, 0, 0, 0, 0] {
        e.u32(v);
    }
    let seq = CB_SEQUENCE4resok {
        csr_sessionid: [0; 16],
        csr_sequenceid: 1,
        csr_slotid: 0,
        csr_highest_slotid: 0,
        csr_target_highest_slotid: 0,
    };
    let mut resarray = vec![nfs_cb_resop4::OP_CB_SEQUENCE(CB_SEQUENCE4res::NFS4_OK(seq))];
    resarray.extend(results);
    CB_COMPOUND4res { status, tag: Bytes::new(), resarray }.encode(&mut e);
    let mut peer = f.env.peer.clone();
    peer.conn = HOLDER_CONN;
    f.env.core.handle(e.into_bytes(), &peer);
}

/// The changes of the one CB_NOTIFY sent since the last look, answered OK.
fn notified(f: &mut Fixture) -> Vec<DirChange> {
    f.env.core.dir_events_ready(1);
    let cbs = new_callbacks(f);
    assert_eq!(cbs.len(), 1, "one CB_NOTIFY: {cbs:?}");
    let (xid, ops) = &cbs[0];
    let nfs_cb_argop4::OP_CB_NOTIFY(n) = &ops[0] else { panic!("not a CB_NOTIFY: {ops:?}") };
    answer(f, *xid, &ops[0], nfsstat4::NFS4_OK);
    proto::dir_notify::decode(&n.cna_changes).unwrap()
}

fn name_of(c: &DirChange) -> String {
    let n = match c {
        DirChange::Add(a) => &a.nad_new_entry.ne_file,
        DirChange::Remove(r) => &r.nrm_old_entry.ne_file,
        DirChange::ChildAttrs(a) | DirChange::DirAttrs(a) => &a.na_changed_entry.ne_file,
        DirChange::Rename(r) => &r.nrn_new_entry.nad_new_entry.ne_file,
        DirChange::CookieVerifier(_) => return "verifier".into(),
    };
    String::from_utf8_lossy(n).into_owned()
}

fn bits(m: &[u32]) -> Vec<u32> {
    proto::bitmap4::bits(m).collect()
}

fn kinds(changes: &[DirChange]) -> Vec<String> {
    changes
        .iter()
        .map(|c| {
            let k = match c {
                DirChange::Add(_) => "add",
                DirChange::Remove(_) => "remove",
                DirChange::ChildAttrs(_) => "attrs",
                DirChange::DirAttrs(_) => "dir",
                DirChange::Rename(_) => "rename",
                DirChange::CookieVerifier(_) => "verifier",
            };
            format!("{k} {}", name_of(c))
        })
        .collect()
}

/// The size in attributes of mask {TYPE, SIZE, FILEID, MODE}.
fn size_of(a: &fattr4) -> u64 {
    assert_eq!(bits(&a.attrmask), [FATTR4_TYPE, FATTR4_SIZE, FATTR4_FILEID, FATTR4_MODE]);
    let mut d = Decoder::new(a.attr_vals.clone());
    d.u32().unwrap();
    d.u64().unwrap()
}

#[test]
fn a_holder_is_told_of_changes_by_other_clients_and_on_the_host_in_order() {
    let mut f = fixture(Nfs4Settings::default());
    let (_a, _, ok) = delegated(&mut f);
    assert_eq!(ok.gddr_notification, all_types());
    // time_access changes with reads, which nothing reports: not offered.
    assert_eq!(bits(&ok.gddr_child_attributes), [FATTR4_TYPE, FATTR4_SIZE, FATTR4_FILEID, FATTR4_MODE]);
    assert_eq!(bits(&ok.gddr_dir_attributes), [FATTR4_CHANGE]);
    assert_eq!(f.env.core.dir_delegation_counts().held, 1);

    // Another NFSv4.1 client creates a file.
    f.env.peer.conn = OTHER_CONN;
    let mut b = Session::ready(&f.env, "other");
    let mut ops = walk(Path::new("/export/d"));
    ops.push(nfs_argop4::OP_OPEN(open_args(0, b.clientid, "o", "f", OPEN4_SHARE_ACCESS_BOTH, 0, true)));
    ok_(&b.run(&f.env, ops));
    let c = notified(&mut f);
    assert_eq!(kinds(&c), ["add f", "dir "]);
    let DirChange::Add(add) = &c[0] else { unreachable!() };
    assert_eq!(size_of(&add.nad_new_entry.ne_attrs), 0);

    // The host renames it, then writes it.
    std::fs::rename(host(&f, "d/f"), host(&f, "d/g")).unwrap();
    assert_eq!(kinds(&notified(&mut f)), ["rename g", "dir "]);
    std::fs::write(host(&f, "d/g"), b"12345").unwrap();
    let c = notified(&mut f);
    assert_eq!(kinds(&c), ["attrs g"]);
    let DirChange::ChildAttrs(at) = &c[0] else { unreachable!() };
    assert_eq!(size_of(&at.na_changed_entry.ne_attrs), 5);

    // An NFSv3 client removes it.
    let root = f.env.mount("/export");
    let (d3, _) = f.env.lookup(&root, "d").unwrap();
    let r: proto::nfs3::REMOVE3res = f.env.nfs(
        12,
        &proto::nfs3::REMOVE3args { object: proto::nfs3::diropargs3 { dir: d3, name: Bytes::from_static(b"g") } },
    );
    assert!(matches!(r, proto::nfs3::REMOVE3res::NFS3_OK(_)));
    assert_eq!(kinds(&notified(&mut f)), ["remove g", "dir "]);

    // A move to another directory is a removal here.
    std::fs::create_dir(host(&f, "e")).unwrap();
    std::fs::write(host(&f, "d/h"), b"").unwrap();
    assert_eq!(kinds(&notified(&mut f))[0], "add h");
    std::fs::rename(host(&f, "d/h"), host(&f, "e/h")).unwrap();
    assert_eq!(kinds(&notified(&mut f)), ["remove h", "dir "]);
    let counts = f.env.core.dir_delegation_counts();
    assert_eq!(counts.notify_calls, 6);
    assert_eq!(counts.recalls.iter().sum::<u64>(), 0);
}

fn ok_(r: &COMPOUND4res) {
    ok(r)
}

#[test]
fn changes_coming_while_one_notify_is_out_wait_for_its_answer() {
    let mut f = fixture(Nfs4Settings::default());
    let _session = delegated(&mut f);
    std::fs::write(host(&f, "d/1"), b"").unwrap();
    f.env.core.dir_events_ready(1);
    let first = new_callbacks(&mut f);
    assert_eq!(first.len(), 1);
    std::fs::write(host(&f, "d/2"), b"").unwrap();
    std::fs::remove_file(host(&f, "d/1")).unwrap();
    f.env.core.dir_events_ready(1);
    assert!(new_callbacks(&mut f).is_empty(), "one CB_NOTIFY out at a time");
    let (xid, ops) = &first[0];
    answer(&f, *xid, &ops[0], nfsstat4::NFS4_OK);
    let next = new_callbacks(&mut f);
    let nfs_cb_argop4::OP_CB_NOTIFY(n) = &next[0].1[0] else { panic!() };
    let c = proto::dir_notify::decode(&n.cna_changes).unwrap();
    assert_eq!(kinds(&c), ["add 2", "remove 1", "dir "]);
}

#[test]
fn attribute_changes_wait_for_the_delay_the_holder_asked_for() {
    let mut f = fixture(Nfs4Settings::default());
    std::fs::write(host(&f, "d/f"), b"").unwrap();
    let mut a = holder(&mut f);
    let fh = dir_fh(&f, &mut a);
    granted(get_dir_deleg(&f, &mut a, &fh, gdd(all_types(), 2)));
    std::fs::write(host(&f, "d/f"), b"abc").unwrap();
    std::fs::write(host(&f, "d/f"), b"abcdef").unwrap();
    f.env.core.dir_events_ready(1);
    f.clock.advance(Duration::from_secs(1));
    f.env.core.dir_notify_tick();
    assert!(new_callbacks(&mut f).is_empty(), "within the 2 s asked for");
    f.clock.advance(Duration::from_secs(1));
    f.env.core.dir_notify_tick();
    let cbs = new_callbacks(&mut f);
    let nfs_cb_argop4::OP_CB_NOTIFY(n) = &cbs[0].1[0] else { panic!() };
    let c = proto::dir_notify::decode(&n.cna_changes).unwrap();
    assert_eq!(kinds(&c), ["attrs f"], "coalesced into one");
    let DirChange::ChildAttrs(at) = &c[0] else { unreachable!() };
    assert_eq!(size_of(&at.na_changed_entry.ne_attrs), 6, "the value when sent");
}

#[test]
fn a_second_request_is_unavailable_and_delegreturn_ends_the_notifications() {
    let mut f = fixture(Nfs4Settings::default());
    let (mut a, fh, ok) = delegated(&mut f);
    assert_eq!(
        get_dir_deleg(&f, &mut a, &fh, gdd(all_types(), 0)),
        GET_DIR_DELEGATION4res_non_fatal::GDD4_UNAVAIL(false)
    );
    let r = a
        .run(&f.env, vec![putfh(&fh), nfs_argop4::OP_DELEGRETURN(DELEGRETURN4args { deleg_stateid: ok.gddr_stateid })]);
    ok_(&r);
    assert_eq!(f.env.core.dir_delegation_counts().held, 0);
    std::fs::write(host(&f, "d/x"), b"").unwrap();
    f.env.core.dir_events_ready(1);
    assert!(new_callbacks(&mut f).is_empty());
    // And it can be had again.
    granted(get_dir_deleg(&f, &mut a, &fh, gdd(all_types(), 0)));
}

#[test]
fn no_delegation_without_a_back_channel() {
    let mut f = fixture(Nfs4Settings::default());
    f.env.peer.conn = OTHER_CONN;
    let mut b = Session::ready(&f.env, "no-callbacks");
    let fh = dir_fh(&f, &mut b);
    assert_eq!(
        get_dir_deleg(&f, &mut b, &fh, gdd(all_types(), 0)),
        GET_DIR_DELEGATION4res_non_fatal::GDD4_UNAVAIL(false)
    );
    // Asked to be signalled, which this server does not do.
    let mut op = gdd(all_types(), 0);
    if let nfs_argop4::OP_GET_DIR_DELEGATION(a) = &mut op {
        a.gdda_signal_deleg_avail = true;
    }
    let r = b.run(&f.env, vec![putfh(&fh), op]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_DIRDELEG_UNAVAIL);
}

#[test]
fn what_cannot_be_told_recalls_the_delegation() {
    let settings = Nfs4Settings { dir_notify_queue: 2, ..Default::default() };
    let mut f = fixture(settings);
    let mut a = holder(&mut f);
    let fh = dir_fh(&f, &mut a);
    // Told of additions only: a removal recalls.
    let ok = granted(get_dir_deleg(&f, &mut a, &fh, gdd(vec![1 << 3], 0)));
    assert_eq!(ok.gddr_notification, vec![1 << 3]);
    std::fs::write(host(&f, "d/a"), b"").unwrap();
    let first = {
        f.env.core.dir_events_ready(1);
        new_callbacks(&mut f)
    };
    assert_eq!(first.len(), 1);
    std::fs::remove_file(host(&f, "d/a")).unwrap();
    f.env.core.dir_events_ready(1);
    let cbs = new_callbacks(&mut f);
    assert!(matches!(&cbs[..], [(_, ops)] if matches!(&ops[0], nfs_cb_argop4::OP_CB_RECALL(r) if r.fh == fh)));
    let counts = f.env.core.dir_delegation_counts();
    assert_eq!(counts.recalls[0], 1, "not_asked");
    let r = a
        .run(&f.env, vec![putfh(&fh), nfs_argop4::OP_DELEGRETURN(DELEGRETURN4args { deleg_stateid: ok.gddr_stateid })]);
    ok_(&r);

    // A queue over its bound while the holder does not answer.
    let ok = granted(get_dir_deleg(&f, &mut a, &fh, gdd(all_types(), 0)));
    for n in ["1", "2", "3", "4"] {
        std::fs::write(host(&f, &format!("d/{n}")), b"").unwrap();
        f.env.core.dir_events_ready(1);
    }
    let cbs = new_callbacks(&mut f);
    assert!(cbs
        .iter()
        .any(|(_, ops)| matches!(&ops[0], nfs_cb_argop4::OP_CB_RECALL(r) if r.stateid == ok.gddr_stateid)));
    assert_eq!(f.env.core.dir_delegation_counts().recalls[1], 1, "overflow");

    // Not returned within a lease: revoked, and forgotten.
    f.clock.advance(Duration::from_secs(91));
    f.env.core.dir_notify_tick();
    assert_eq!(f.env.core.dir_delegation_counts().held, 0);
    let r = a.run(&f.env, vec![]);
    ok_(&r);
}

#[test]
fn an_unanswered_notify_recalls_after_the_answer_time() {
    let mut f = fixture(Nfs4Settings::default());
    let _session = delegated(&mut f);
    std::fs::write(host(&f, "d/a"), b"").unwrap();
    f.env.core.dir_events_ready(1);
    assert_eq!(new_callbacks(&mut f).len(), 1);
    f.clock.advance(Duration::from_secs(16));
    f.env.core.dir_notify_tick();
    let cbs = new_callbacks(&mut f);
    assert!(matches!(&cbs[..], [(_, ops)] if matches!(&ops[0], nfs_cb_argop4::OP_CB_RECALL(_))));
    assert_eq!(f.env.core.dir_delegation_counts().recalls[4], 1, "not_answered");
}

#[test]
fn a_refused_notify_recalls() {
    let mut f = fixture(Nfs4Settings::default());
    let _session = delegated(&mut f);
    std::fs::write(host(&f, "d/a"), b"").unwrap();
    f.env.core.dir_events_ready(1);
    let cbs = new_callbacks(&mut f);
    answer(&f, cbs[0].0, &cbs[0].1[0], nfsstat4::NFS4ERR_BAD_STATEID);
    let cbs = new_callbacks(&mut f);
    assert!(matches!(&cbs[..], [(_, ops)] if matches!(&ops[0], nfs_cb_argop4::OP_CB_RECALL(_))));
    assert_eq!(f.env.core.dir_delegation_counts().recalls[3], 1, "refused");
}

#[test]
fn a_connection_lost_with_a_notify_out_revokes_the_delegation() {
    let mut f = fixture(Nfs4Settings::default());
    let (mut a, _, _) = delegated(&mut f);
    std::fs::write(host(&f, "d/a"), b"").unwrap();
    f.env.core.dir_events_ready(1);
    assert_eq!(new_callbacks(&mut f).len(), 1);
    f.env.core.connection_closed(HOLDER_CONN);
    let counts = f.env.core.dir_delegation_counts();
    assert_eq!((counts.held, counts.recalls[5]), (0, 1), "backchannel_lost");
    // The holder learns of it at its next SEQUENCE.
    f.env.peer.conn = HOLDER_CONN;
    let r = a.run_on(&f.env, 0, 0, vec![]);
    let flags = seq_res(&r).sr_status_flags;
    assert_ne!(flags & SEQ4_STATUS_RECALLABLE_STATE_REVOKED, 0, "{flags:#x}");
}

#[test]
fn a_client_declined_for_a_limit_is_told_when_one_is_free() {
    let settings = Nfs4Settings { max_dir_delegations: 1, ..Default::default() };
    let mut f = fixture(settings);
    std::fs::create_dir(host(&f, "e")).unwrap();
    let (mut a, fh, ok) = delegated(&mut f);
    let mut ops = walk(Path::new("/export/e"));
    ops.push(nfs_argop4::OP_GETFH);
    let e = fh_res(&a.run(&f.env, ops), 3);
    let mut op = gdd(all_types(), 0);
    if let nfs_argop4::OP_GET_DIR_DELEGATION(a) = &mut op {
        a.gdda_signal_deleg_avail = true;
    }
    assert_eq!(get_dir_deleg(&f, &mut a, &e, op), GET_DIR_DELEGATION4res_non_fatal::GDD4_UNAVAIL(true));
    f.env.core.dir_notify_tick();
    assert!(new_callbacks(&mut f).is_empty(), "none free yet");
    let r = a
        .run(&f.env, vec![putfh(&fh), nfs_argop4::OP_DELEGRETURN(DELEGRETURN4args { deleg_stateid: ok.gddr_stateid })]);
    ok_(&r);
    f.env.core.dir_notify_tick();
    let cbs = new_callbacks(&mut f);
    let [(_, ops)] = &cbs[..] else { panic!("{cbs:?}") };
    let nfs_cb_argop4::OP_CB_RECALLABLE_OBJ_AVAIL(avail) = &ops[0] else { panic!("{ops:?}") };
    assert_eq!(avail.craa_objects_to_keep, 1);
    assert!(proto::bitmap4::has(&avail.craa_type_mask, RCA4_TYPE_MASK_DIR_DLG));
    f.env.core.dir_notify_tick();
    assert!(new_callbacks(&mut f).is_empty(), "told once");
}

fn remove_op(name: &str) -> nfs_argop4 {
    nfs_argop4::OP_REMOVE(REMOVE4args { target: Bytes::copy_from_slice(name.as_bytes()) })
}

#[test]
fn another_clients_change_not_asked_for_waits_for_the_recall_and_the_holders_own_does_not() {
    let mut f = fixture(Nfs4Settings::default());
    for n in ["a", "b", "c"] {
        std::fs::write(host(&f, &format!("d/{n}")), b"").unwrap();
    }
    let mut a = holder(&mut f);
    let fh = dir_fh(&f, &mut a);
    // Told of additions only.
    let ok = granted(get_dir_deleg(&f, &mut a, &fh, gdd(vec![1 << 3], 0)));

    // The holder's own removal: no recall, now or when its event comes.
    ok_(&a.run(&f.env, vec![putfh(&fh), remove_op("a")]));
    f.env.core.dir_events_ready(1);
    assert!(new_callbacks(&mut f).is_empty());

    // Another NFSv4.1 client's waits for the recall (RFC 8881 10.9.2).
    f.env.peer.conn = OTHER_CONN;
    let mut b = Session::ready(&f.env, "other");
    let r = b.run(&f.env, vec![putfh(&fh), remove_op("b")]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_DELAY);
    assert!(host(&f, "d/b").exists(), "not removed while the recall is out");
    let cbs = new_callbacks(&mut f);
    assert!(
        matches!(&cbs[..], [(_, ops)] if matches!(&ops[0], nfs_cb_argop4::OP_CB_RECALL(r) if r.stateid == ok.gddr_stateid))
    );
    // An NFSv3 client's too.
    let root = f.env.mount("/export");
    let (d3, _) = f.env.lookup(&root, "d").unwrap();
    let r: proto::nfs3::REMOVE3res = f.env.nfs(
        12,
        &proto::nfs3::REMOVE3args { object: proto::nfs3::diropargs3 { dir: d3, name: Bytes::from_static(b"c") } },
    );
    assert!(matches!(r, proto::nfs3::REMOVE3res::default(proto::nfs3::nfsstat3::NFS3ERR_JUKEBOX, _)));
    // Returned: both go through.
    f.env.peer.conn = HOLDER_CONN;
    ok_(&a.run(
        &f.env,
        vec![putfh(&fh), nfs_argop4::OP_DELEGRETURN(DELEGRETURN4args { deleg_stateid: ok.gddr_stateid })],
    ));
    f.env.peer.conn = OTHER_CONN;
    ok_(&b.run(&f.env, vec![putfh(&fh), remove_op("b")]));
    assert_eq!(f.env.core.dir_delegation_counts().recalls[0], 1, "not_asked, once");

    // Asked for: another client's change goes through, and is told.
    f.env.peer.conn = HOLDER_CONN;
    granted(get_dir_deleg(&f, &mut a, &fh, gdd(all_types(), 0)));
    f.env.peer.conn = OTHER_CONN;
    ok_(&b.run(&f.env, vec![putfh(&fh), remove_op("c")]));
    assert_eq!(kinds(&notified(&mut f)), ["remove c", "dir "]);
}

#[test]
fn a_delegated_directory_removed_ends_its_delegations() {
    let mut f = fixture(Nfs4Settings::default());
    let (mut a, _, ok) = delegated(&mut f);
    std::fs::remove_dir(host(&f, "d")).unwrap();
    // The directory's inode goes, and with it the event, once the server
    // closes its cached descriptor of it (`idle_fd_secs`, 2 s).
    let mut cbs = Vec::new();
    for _ in 0..100 {
        f.env.core.dir_events_ready(1);
        cbs.extend(new_callbacks(&mut f));
        if !cbs.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let counts = f.env.core.dir_delegation_counts();
    assert!(
        cbs.iter().any(|(_, ops)| matches!(&ops[0], nfs_cb_argop4::OP_CB_RECALL(r) if r.stateid == ok.gddr_stateid)),
        "{cbs:?} {counts:?}"
    );
    assert_eq!((counts.held, counts.recalls[2]), (0, 1), "undescribable");
    // Nothing left to return, and nothing revoked.
    let r = a.run_on(&f.env, 0, 0, vec![]);
    assert_eq!(seq_res(&r).sr_status_flags & SEQ4_STATUS_RECALLABLE_STATE_REVOKED, 0);
}

/// OPEN of `d/name` for writing by `s`, created if need be, asking for a
/// write delegation: the delegation in the reply.
fn open_for_write(f: &Fixture, s: &mut Session, name: &str) -> open_delegation4 {
    let mut ops = walk(Path::new("/export/d"));
    let access = OPEN4_SHARE_ACCESS_BOTH | OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG;
    ops.push(nfs_argop4::OP_OPEN(open_args(0, s.clientid, "w", name, access, 0, true)));
    let r = s.run(&f.env, ops);
    ok_(&r);
    opened(&r, 3).delegation.clone()
}

#[test]
fn no_write_delegation_of_a_file_in_another_clients_delegated_directory() {
    let mut f = fixture(Nfs4Settings::default());
    let mut b = with_callbacks(&mut f, OTHER_CONN, "writer");
    // Before any directory delegation: the writer gets its write delegation.
    assert!(matches!(open_for_write(&f, &mut b, "early"), open_delegation4::OPEN_DELEGATE_WRITE(_)));
    let (mut a, _, _) = delegated(&mut f);
    // The holder could not be told of that file's size and times while the
    // writer keeps them: the write delegation is recalled.
    let cbs = new_callbacks(&mut f);
    assert!(cbs.iter().any(|(_, ops)| matches!(&ops[0], nfs_cb_argop4::OP_CB_RECALL(_))), "{cbs:?}");
    // And none is granted in the directory meanwhile.
    f.env.peer.conn = OTHER_CONN;
    let d = open_for_write(&f, &mut b, "late");
    assert!(matches!(d, open_delegation4::OPEN_DELEGATE_NONE_EXT(open_none_delegation4::WND4_CONTENTION(_))), "{d:?}");
    // The holder's own write may have one.
    f.env.peer.conn = HOLDER_CONN;
    assert!(matches!(open_for_write(&f, &mut a, "mine"), open_delegation4::OPEN_DELEGATE_WRITE(_)));
}

#[test]
fn changes_in_many_directories_go_in_one_compound() {
    let mut f = fixture(Nfs4Settings::default());
    let mut a = holder(&mut f);
    let mut fhs = Vec::new();
    for i in 0..5 {
        std::fs::create_dir(host(&f, &format!("d/s{i}"))).unwrap();
        let mut ops = walk(Path::new(&format!("/export/d/s{i}")));
        ops.push(nfs_argop4::OP_GETFH);
        let fh = fh_res(&a.run(&f.env, ops), 4);
        granted(get_dir_deleg(&f, &mut a, &fh, gdd(all_types(), 0)));
        fhs.push(fh);
    }
    for i in 0..5 {
        std::fs::write(host(&f, &format!("d/s{i}/new")), b"").unwrap();
    }
    f.env.core.dir_events_ready(1);
    let cbs = new_callbacks(&mut f);
    assert_eq!(cbs.len(), 1, "one CB_COMPOUND");
    let (xid, ops) = &cbs[0];
    let told: Vec<&nfs_fh4> = ops
        .iter()
        .map(|op| match op {
            nfs_cb_argop4::OP_CB_NOTIFY(n) => &n.cna_fh,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(told.len(), 5);
    assert!(fhs.iter().all(|fh| told.contains(&fh)));
    // The first refused: the others, after it, did not run; all recalled.
    let notified = |status| nfs_cb_resop4::OP_CB_NOTIFY(CB_NOTIFY4res { cnr_status: status });
    let results = vec![notified(nfsstat4::NFS4_OK), notified(nfsstat4::NFS4ERR_BAD_STATEID)];
    reply(&f, *xid, nfsstat4::NFS4ERR_BAD_STATEID, results);
    assert_eq!(f.env.core.dir_delegation_counts().recalls[3], 4, "refused: the one refused and the three not run");
}
