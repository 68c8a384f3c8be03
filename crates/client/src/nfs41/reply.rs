//! What a COMPOUND reply may be, checked in one place before any caller
//! sees it (RFC 8881 section 16.2.3): one result per operation sent, in
//! order and of the operation sent at its place; every result but the
//! last successful; the compound's status that of its last result; fewer
//! results than operations only when that last one failed. A reply that
//! breaks any of these is an error, never a panic in a caller that trusted
//! it. Callers then read results by position through accessors that answer
//! an error, not a panic, for a result that is missing or not the one
//! asked for.

use bytes::Bytes;
use client_core::fattr::Fattr;
use proto::nfs4::*;

use crate::error::{Error, Result};

/// The results of a compound that passed [`check`], the SEQUENCE's taken
/// off.
#[derive(Debug, Clone)]
pub(crate) struct Results {
    /// The compound's name in errors (its main operation).
    proc: &'static str,
    status: nfsstat4,
    ops: Vec<nfs_resop4>,
}

/// A reply that does not answer the request sent.
pub(crate) fn bad_reply(proc: &'static str, why: String) -> Error {
    Error::Decode { proc, why: format!("the results do not match the operations sent: {why}") }
}

/// The status every result starts with.
pub(crate) fn result_status(r: &nfs_resop4) -> nfsstat4 {
    use nfs_resop4 as R;
    match r {
        R::OP_ACCESS(x) => x.discriminant(),
        R::OP_CLOSE(x) => x.discriminant(),
        R::OP_COMMIT(x) => x.discriminant(),
        R::OP_CREATE(x) => x.discriminant(),
        R::OP_DELEGPURGE(x) => x.status,
        R::OP_DELEGRETURN(x) => x.status,
        R::OP_GETATTR(x) => x.discriminant(),
        R::OP_GETFH(x) => x.discriminant(),
        R::OP_LINK(x) => x.discriminant(),
        R::OP_LOCK(x) => x.discriminant(),
        R::OP_LOCKT(x) => x.discriminant(),
        R::OP_LOCKU(x) => x.discriminant(),
        R::OP_LOOKUP(x) => x.status,
        R::OP_LOOKUPP(x) => x.status,
        R::OP_NVERIFY(x) => x.status,
        R::OP_OPEN(x) => x.discriminant(),
        R::OP_OPENATTR(x) => x.status,
        R::OP_OPEN_CONFIRM(x) => x.discriminant(),
        R::OP_OPEN_DOWNGRADE(x) => x.discriminant(),
        R::OP_PUTFH(x) => x.status,
        R::OP_PUTPUBFH(x) => x.status,
        R::OP_PUTROOTFH(x) => x.status,
        R::OP_READ(x) => x.discriminant(),
        R::OP_READDIR(x) => x.discriminant(),
        R::OP_READLINK(x) => x.discriminant(),
        R::OP_REMOVE(x) => x.discriminant(),
        R::OP_RENAME(x) => x.discriminant(),
        R::OP_RENEW(x) => x.status,
        R::OP_RESTOREFH(x) => x.status,
        R::OP_SAVEFH(x) => x.status,
        R::OP_SECINFO(x) => x.discriminant(),
        R::OP_SETATTR(x) => x.status,
        R::OP_SETCLIENTID(x) => x.discriminant(),
        R::OP_SETCLIENTID_CONFIRM(x) => x.status,
        R::OP_VERIFY(x) => x.status,
        R::OP_WRITE(x) => x.discriminant(),
        R::OP_RELEASE_LOCKOWNER(x) => x.status,
        R::OP_BACKCHANNEL_CTL(x) => x.bcr_status,
        R::OP_BIND_CONN_TO_SESSION(x) => x.discriminant(),
        R::OP_EXCHANGE_ID(x) => x.discriminant(),
        R::OP_CREATE_SESSION(x) => x.discriminant(),
        R::OP_DESTROY_SESSION(x) => x.dsr_status,
        R::OP_FREE_STATEID(x) => x.fsr_status,
        R::OP_GET_DIR_DELEGATION(x) => x.discriminant(),
        R::OP_GETDEVICEINFO(x) => x.discriminant(),
        R::OP_GETDEVICELIST(x) => x.discriminant(),
        R::OP_LAYOUTCOMMIT(x) => x.discriminant(),
        R::OP_LAYOUTGET(x) => x.discriminant(),
        R::OP_LAYOUTRETURN(x) => x.discriminant(),
        R::OP_SECINFO_NO_NAME(x) => x.discriminant(),
        R::OP_SEQUENCE(x) => x.discriminant(),
        R::OP_SET_SSV(x) => x.discriminant(),
        R::OP_TEST_STATEID(x) => x.discriminant(),
        R::OP_WANT_DELEGATION(x) => x.discriminant(),
        R::OP_DESTROY_CLIENTID(x) => x.dcr_status,
        R::OP_RECLAIM_COMPLETE(x) => x.rcr_status,
        R::OP_ALLOCATE(x) => x.ar_status,
        R::OP_COPY(x) => x.discriminant(),
        R::OP_COPY_NOTIFY(x) => x.discriminant(),
        R::OP_DEALLOCATE(x) => x.dr_status,
        R::OP_IO_ADVISE(x) => x.discriminant(),
        R::OP_LAYOUTERROR(x) => x.ler_status,
        R::OP_LAYOUTSTATS(x) => x.lsr_status,
        R::OP_OFFLOAD_CANCEL(x) => x.ocr_status,
        R::OP_OFFLOAD_STATUS(x) => x.discriminant(),
        R::OP_READ_PLUS(x) => x.discriminant(),
        R::OP_SEEK(x) => x.discriminant(),
        R::OP_WRITE_SAME(x) => x.discriminant(),
        R::OP_CLONE(x) => x.cl_status,
        R::OP_GETXATTR(x) => x.discriminant(),
        R::OP_SETXATTR(x) => x.discriminant(),
        R::OP_LISTXATTRS(x) => x.discriminant(),
        R::OP_REMOVEXATTR(x) => x.discriminant(),
        R::OP_ILLEGAL(x) => x.status,
    }
}

/// Whether `results` answer the operations `sent` (their opcodes, the
/// SEQUENCE first when there is one) under the compound's `status`; why
/// not when they do not.
pub(crate) fn check(sent: &[nfs_opnum4], status: nfsstat4, results: &[nfs_resop4]) -> std::result::Result<(), String> {
    if results.len() > sent.len() {
        return Err(format!("{} results for {} operations", results.len(), sent.len()));
    }
    let n = results.len();
    for (i, (r, &op)) in results.iter().zip(sent).enumerate() {
        let last = i + 1 == n;
        let got = r.discriminant();
        // A server that does not know an operation answers OP_ILLEGAL
        // in its place, and stops there.
        let illegal = last && got == nfs_opnum4::OP_ILLEGAL && status == nfsstat4::NFS4ERR_OP_ILLEGAL;
        if got != op && !illegal {
            return Err(format!("result {} is of {got:?} where {op:?} was sent", i + 1));
        }
        let s = result_status(r);
        if !last && s != nfsstat4::NFS4_OK {
            return Err(format!("result {} ({got:?}) failed with {s:?}, yet results follow it", i + 1));
        }
        if last && s != status {
            return Err(format!("the compound's status is {status:?}, its last result's ({got:?}) {s:?}"));
        }
    }
    // No results with a failure: the compound was refused as a whole
    // (NFS4ERR_MINOR_VERS_MISMATCH, a request that did not decode).
    if status == nfsstat4::NFS4_OK && n != sent.len() {
        return Err(format!("{n} results for {} operations, and none failed", sent.len()));
    }
    Ok(())
}

impl Results {
    /// `resarray` after [`check`] passed on it.
    pub(crate) fn new(proc: &'static str, status: nfsstat4, ops: Vec<nfs_resop4>) -> Results {
        Results { proc, status, ops }
    }

    /// A reply checked against `sent` (no SEQUENCE in either).
    pub(crate) fn checked(proc: &'static str, sent: &[nfs_opnum4], r: COMPOUND4res) -> Result<Results> {
        check(sent, r.status, &r.resarray).map_err(|why| bad_reply(proc, why))?;
        Ok(Results::new(proc, r.status, r.resarray))
    }

    pub(crate) fn status(&self) -> nfsstat4 {
        self.status
    }

    pub(crate) fn len(&self) -> usize {
        self.ops.len()
    }

    pub(crate) fn get(&self, i: usize) -> Option<&nfs_resop4> {
        self.ops.get(i)
    }

    pub(crate) fn first(&self) -> Option<&nfs_resop4> {
        self.ops.first()
    }

    pub(crate) fn last(&self) -> Option<&nfs_resop4> {
        self.ops.last()
    }

    pub(crate) fn into_vec(self) -> Vec<nfs_resop4> {
        self.ops
    }

    fn missing(&self, i: usize, what: &str) -> Error {
        let why = match self.ops.get(i) {
            None => format!("{what} (result {}) missing from the reply", i + 1),
            Some(r) => {
                format!("result {} is {:?} {:?}, not a successful {what}", i + 1, r.discriminant(), result_status(r))
            }
        };
        Error::Decode { proc: self.proc, why }
    }

    /// Result `i`, whatever it is.
    pub(crate) fn op(&self, i: usize) -> Result<&nfs_resop4> {
        self.ops.get(i).ok_or_else(|| self.missing(i, "a result"))
    }

    /// What `pick` takes from result `i` (`what` names it in the error
    /// when it takes nothing).
    pub(crate) fn pick<'a, T>(
        &'a self,
        i: usize,
        what: &str,
        pick: impl FnOnce(&'a nfs_resop4) -> Option<T>,
    ) -> Result<T> {
        self.ops.get(i).and_then(pick).ok_or_else(|| self.missing(i, what))
    }

    /// The handle of GETFH result `i`.
    pub(crate) fn getfh(&self, i: usize) -> Result<Bytes> {
        self.pick(i, "GETFH", |r| match r {
            nfs_resop4::OP_GETFH(GETFH4res::NFS4_OK(ok)) => Some(ok.object.clone()),
            _ => None,
        })
    }

    /// The attributes of GETATTR result `i`, as the server sent them.
    pub(crate) fn fattr(&self, i: usize) -> Result<&fattr4> {
        self.pick(i, "GETATTR", |r| match r {
            nfs_resop4::OP_GETATTR(GETATTR4res::NFS4_OK(ok)) => Some(&ok.obj_attributes),
            _ => None,
        })
    }

    /// The attributes of GETATTR result `i`, as the file API keeps them.
    pub(crate) fn attrs(&self, i: usize) -> Result<Fattr> {
        super::ops::to_fattr(self.fattr(i)?)
    }
}

#[cfg(test)]
#[path = "reply_tests.rs"]
mod tests;
