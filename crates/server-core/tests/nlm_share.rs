//! NLM4_SHARE and UNSHARE: DOS-style share reservations between NFSv3
//! hosts, and against NFSv4 opens of the same file, both ways (over
//! NFSv4.0 and over NFSv4.1, whose opens may take only the file's shard).

mod common;

use bytes::Bytes;
use common::v4::*;
use common::*;
use proto::nfs4::*;
use proto::nlm::*;

fn share_args(host: &str, fh: &proto::nfs3::nfs_fh3, access: fsh_access, mode: fsh_mode) -> nlm4_shareargs {
    nlm4_shareargs {
        cookie: Bytes::from_static(b"s"),
        share: nlm4_share {
            caller_name: Bytes::copy_from_slice(host.as_bytes()),
            fh: fh.data.clone(),
            oh: Bytes::copy_from_slice(format!("{host}-oh").as_bytes()),
            mode,
            access,
        },
        reclaim: false,
    }
}

fn share(e: &Env, host: &str, fh: &proto::nfs3::nfs_fh3, access: fsh_access, mode: fsh_mode) -> nlm4_stats {
    let r: nlm4_shareres = e.call(NLM_PROG, 4, NLM_SHARE, &share_args(host, fh, access, mode)).result();
    assert_eq!(&r.cookie[..], b"s");
    r.stat
}

fn unshare(e: &Env, host: &str, fh: &proto::nfs3::nfs_fh3) -> nlm4_stats {
    let a = share_args(host, fh, fsh_access::fsa_NONE, fsh_mode::fsm_DN);
    let r: nlm4_shareres = e.call(NLM_PROG, 4, NLM_UNSHARE, &a).result();
    r.stat
}

/// OPEN of `f` in the export's root by a new open-owner of `s`: the
/// status, and the stateid when it opened.
fn open(e: &Env, s: &mut Session, owner: &str, access: u32, deny: u32) -> (nfsstat4, Option<stateid4>) {
    let open = open_args(0, 0, owner, "f", access | OPEN4_SHARE_ACCESS_WANT_NO_DELEG, deny, false);
    let r = s.run(e, vec![putfh(&e.root().data), nfs_argop4::OP_OPEN(open)]);
    let sid = match r.resarray.get(1) {
        Some(nfs_resop4::OP_OPEN(OPEN4res::NFS4_OK(ok))) => Some(ok.stateid.clone()),
        _ => None,
    };
    (r.status, sid)
}

fn close(e: &Env, s: &mut Session, sid: stateid4) {
    let fh = e.lookup(&e.root(), "f").expect("f").0;
    let r = s.run(e, vec![putfh(&fh.data), close_op(&sid)]);
    assert_eq!(r.status, nfsstat4::NFS4_OK, "{r:?}");
}

#[test]
fn hosts_share_and_deny_each_other() {
    let e = rw_env();
    let f = e.create_file(&e.root(), "f");
    assert_eq!(share(&e, "a", &f, fsh_access::fsa_R, fsh_mode::fsm_DW), nlm4_stats::nlm4_granted);
    assert_eq!(share(&e, "b", &f, fsh_access::fsa_W, fsh_mode::fsm_DN), nlm4_stats::nlm4_denied);
    assert_eq!(share(&e, "b", &f, fsh_access::fsa_R, fsh_mode::fsm_DN), nlm4_stats::nlm4_granted);
    // A's own second share replaces its first: B reads, so A may not deny it.
    assert_eq!(share(&e, "a", &f, fsh_access::fsa_R, fsh_mode::fsm_DR), nlm4_stats::nlm4_denied);
    assert_eq!(share(&e, "a", &f, fsh_access::fsa_RW, fsh_mode::fsm_DW), nlm4_stats::nlm4_granted);
    assert_eq!(unshare(&e, "a", &f), nlm4_stats::nlm4_granted);
    assert_eq!(share(&e, "c", &f, fsh_access::fsa_W, fsh_mode::fsm_DN), nlm4_stats::nlm4_granted);
    // A host that restarted (FREE_ALL) loses its shares.
    let _ = e.call(NLM_PROG, 4, NLM_FREE_ALL, &nlm4_notify { name: Bytes::from_static(b"c"), state: 3 });
    assert_eq!(share(&e, "a", &f, fsh_access::fsa_R, fsh_mode::fsm_DW), nlm4_stats::nlm4_granted);
}

/// An NLM share that denies writing refuses an NFSv4 OPEN for write,
/// and an NFSv4 open that denies reading refuses an NLM share for read.
/// A session's OPEN is tried in the file's shard first and goes to the
/// tables (where NFSv4.0's OPEN goes) when a share is in the way: both
/// paths answer.
#[test]
fn nlm_shares_and_nfs4_opens_refuse_each_other() {
    for minor in [1, 2] {
        let e = rw_env();
        let f = e.create_file(&e.root(), "f");
        let mut s = Session::ready_minor(&e, "v4", minor);
        assert_eq!(share(&e, "a", &f, fsh_access::fsa_R, fsh_mode::fsm_DW), nlm4_stats::nlm4_granted);
        let (st, _) = open(&e, &mut s, "w", OPEN4_SHARE_ACCESS_WRITE, OPEN4_SHARE_DENY_NONE);
        assert_eq!(st, nfsstat4::NFS4ERR_SHARE_DENIED, "minor {minor}");
        let (st, sid) = open(&e, &mut s, "r", OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_DENY_NONE);
        assert_eq!(st, nfsstat4::NFS4_OK);
        close(&e, &mut s, sid.expect("open"));
        assert_eq!(unshare(&e, "a", &f), nlm4_stats::nlm4_granted);
        let (st, sid) = open(&e, &mut s, "w", OPEN4_SHARE_ACCESS_WRITE, OPEN4_SHARE_DENY_READ);
        assert_eq!(st, nfsstat4::NFS4_OK);
        assert_eq!(share(&e, "a", &f, fsh_access::fsa_R, fsh_mode::fsm_DN), nlm4_stats::nlm4_denied);
        assert_eq!(share(&e, "a", &f, fsh_access::fsa_NONE, fsh_mode::fsm_DW), nlm4_stats::nlm4_denied);
        close(&e, &mut s, sid.expect("open"));
        assert_eq!(share(&e, "a", &f, fsh_access::fsa_R, fsh_mode::fsm_DN), nlm4_stats::nlm4_granted);
    }
}
