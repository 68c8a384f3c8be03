//! Replies that do not answer what was sent (fewer results under
//! NFS4_OK, results of other operations, more results than operations)
//! are errors, and so is every spoilt form of a real reply: never a panic.

use bytes::Bytes;
use proptest::prelude::*;

use super::super::fuzzing::{self, Mutation, CALLS};
use super::*;

use nfs_opnum4 as N;

fn putfh_ok() -> nfs_resop4 {
    nfs_resop4::OP_PUTFH(PUTFH4res { status: nfsstat4::NFS4_OK })
}

fn getfh_ok() -> nfs_resop4 {
    nfs_resop4::OP_GETFH(GETFH4res::NFS4_OK(GETFH4resok { object: Bytes::from_static(b"fh") }))
}

fn getattr_failed(s: nfsstat4) -> nfs_resop4 {
    nfs_resop4::OP_GETATTR(GETATTR4res::default(s))
}

const SENT: &[nfs_opnum4] = &[N::OP_PUTFH, N::OP_GETFH, N::OP_GETATTR];

#[test]
fn every_result_in_order_passes() {
    let ok = nfsstat4::NFS4_OK;
    let attrs = nfs_resop4::OP_GETATTR(GETATTR4res::NFS4_OK(GETATTR4resok::default()));
    assert_eq!(check(SENT, ok, &[putfh_ok(), getfh_ok(), attrs]), Ok(()));
}

#[test]
fn fewer_results_under_nfs4_ok_are_refused() {
    let why = check(SENT, nfsstat4::NFS4_OK, &[putfh_ok(), getfh_ok()]).expect_err("short");
    assert!(why.contains("2 results for 3 operations"), "{why}");
    assert!(check(SENT, nfsstat4::NFS4_OK, &[]).is_err());
}

#[test]
fn fewer_results_are_fine_when_the_last_one_failed() {
    let s = nfsstat4::NFS4ERR_STALE;
    assert_eq!(check(SENT, s, &[putfh_ok(), getfh_ok(), getattr_failed(s)]), Ok(()));
    let putfh_failed = nfs_resop4::OP_PUTFH(PUTFH4res { status: s });
    assert_eq!(check(SENT, s, &[putfh_failed]), Ok(()));
    // Refused as a whole, before any operation ran.
    assert_eq!(check(SENT, nfsstat4::NFS4ERR_MINOR_VERS_MISMATCH, &[]), Ok(()));
}

#[test]
fn a_failure_must_be_the_last_result_and_its_status_the_compounds() {
    let s = nfsstat4::NFS4ERR_STALE;
    let putfh_failed = nfs_resop4::OP_PUTFH(PUTFH4res { status: s });
    assert!(check(SENT, s, &[putfh_failed, getfh_ok()]).is_err());
    // The compound says it failed, its last result says it did not.
    assert!(check(SENT, s, &[putfh_ok(), getfh_ok()]).is_err());
    // The other way round.
    assert!(check(SENT, nfsstat4::NFS4_OK, &[putfh_ok(), getfh_ok(), getattr_failed(s)]).is_err());
    assert!(check(SENT, nfsstat4::NFS4ERR_IO, &[putfh_ok(), getfh_ok(), getattr_failed(s)]).is_err());
}

#[test]
fn results_of_other_operations_are_refused() {
    let ok = nfsstat4::NFS4_OK;
    let attrs = nfs_resop4::OP_GETATTR(GETATTR4res::NFS4_OK(GETATTR4resok::default()));
    let why = check(SENT, ok, &[putfh_ok(), attrs.clone(), getfh_ok()]).expect_err("swapped");
    assert!(why.contains("result 2 is of OP_GETATTR where OP_GETFH was sent"), "{why}");
    // A SEQUENCE result where none was sent, none where one was.
    let seq = nfs_resop4::OP_SEQUENCE(SEQUENCE4res::default(nfsstat4::NFS4ERR_BADSESSION));
    assert!(check(SENT, nfsstat4::NFS4ERR_BADSESSION, &[seq]).is_err());
    let with_seq = &[N::OP_SEQUENCE, N::OP_PUTFH];
    assert!(check(with_seq, ok, &[putfh_ok(), putfh_ok()]).is_err());
}

#[test]
fn more_results_than_operations_are_refused() {
    let ok = nfsstat4::NFS4_OK;
    let attrs = nfs_resop4::OP_GETATTR(GETATTR4res::NFS4_OK(GETATTR4resok::default()));
    let why = check(SENT, ok, &[putfh_ok(), getfh_ok(), attrs.clone(), attrs]).expect_err("long");
    assert!(why.contains("4 results for 3 operations"), "{why}");
}

#[test]
fn an_operation_the_server_does_not_know_ends_in_op_illegal() {
    let s = nfsstat4::NFS4ERR_OP_ILLEGAL;
    let illegal = nfs_resop4::OP_ILLEGAL(ILLEGAL4res { status: s });
    assert_eq!(check(SENT, s, &[putfh_ok(), illegal.clone()]), Ok(()));
    assert!(check(SENT, nfsstat4::NFS4ERR_IO, &[putfh_ok(), illegal]).is_err());
}

#[test]
fn accessors_answer_errors_for_missing_or_other_results() {
    let r = Results::new("LOOKUP", nfsstat4::NFS4ERR_STALE, vec![putfh_ok(), getfh_ok()]);
    assert_eq!(r.getfh(1).expect("a handle"), Bytes::from_static(b"fh"));
    let missing = r.getfh(7).expect_err("no result 8");
    assert!(missing.to_string().contains("GETFH (result 8) missing"), "{missing}");
    let other = r.attrs(0).expect_err("a PUTFH is no GETATTR");
    assert!(other.to_string().contains("not a successful GETATTR"), "{other}");
    assert!(r.op(2).is_err());
    assert!(r.fattr(usize::MAX).is_err());
}

/// The seven places a short reply used to panic, and the rest of the
/// calls driven: each well-formed reply reads, each with a result taken
/// out or added is an error.
#[test]
fn every_call_reads_its_reply_and_refuses_a_short_or_long_one() {
    for which in 0..CALLS {
        fuzzing::drive(which, xdr::to_bytes(&fuzzing::sample(which))).expect("the sample reply reads");
        let n = fuzzing::sample(which).resarray.len();
        for i in 0..n {
            let short = fuzzing::mutated(which, &[Mutation::Drop(i as u8)]);
            let e = fuzzing::drive(which, short).expect_err("short");
            assert!(matches!(e, Error::Decode { .. }), "call {which} without result {i}: {e:?}");
            let long = fuzzing::mutated(which, &[Mutation::Duplicate(i as u8)]);
            assert!(fuzzing::drive(which, long).is_err(), "call {which} with result {i} twice");
        }
    }
}

/// A well-formed failure is the server's status, not a malformed reply.
#[test]
fn a_well_formed_failure_is_the_servers_status() {
    for which in 0..CALLS {
        let n = fuzzing::sample(which).resarray.len();
        for i in 1..n {
            let failed = fuzzing::mutated(which, &[Mutation::FailAt(i as u8, 1)]);
            match fuzzing::drive(which, failed) {
                Err(Error::Nfs4 { status: nfsstat4::NFS4ERR_NOENT, .. }) => {}
                other => panic!("call {which} failing at result {i}: {other:?}"),
            }
        }
    }
}

fn mutation() -> impl Strategy<Value = Mutation> {
    (any::<u8>(), any::<u8>(), any::<u8>()).prop_map(|(k, a, b)| Mutation::from_bytes(k, a, b))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Real replies spoilt (cut, bytes flipped, results dropped,
    /// duplicated, swapped or replaced, the status changed) read as Ok or
    /// as an error, never a panic; and whatever reads as Ok has passed
    /// the check, a result for every operation.
    #[test]
    fn spoilt_replies_never_panic(which in 0..CALLS, mutations in prop::collection::vec(mutation(), 1..5)) {
        let bytes = fuzzing::mutated(which, &mutations);
        if fuzzing::drive(which, bytes.clone()).is_ok() {
            let r = <COMPOUND4res as xdr::Decode>::decode(&mut xdr::Decoder::new(bytes)).expect("it decoded");
            prop_assert_eq!(r.status, nfsstat4::NFS4_OK);
            prop_assert_eq!(r.resarray.len(), fuzzing::operations(which).len() + 1);
        }
    }

    /// Any bytes at all as the reply.
    #[test]
    fn arbitrary_bytes_never_panic(which in 0..CALLS, bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = fuzzing::drive(which, Bytes::from(bytes));
    }
}
