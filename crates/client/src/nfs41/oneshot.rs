//! A small file created (or truncated), written and closed in one
//! COMPOUND: PUTFH, OPEN (create), GETFH, WRITE, CLOSE, GETATTR, and the
//! directory's GETATTR after it (for the name cache), the
//! papers' proposal of long compounds taken to a whole `creat`, `write`,
//! `close`. The caller hands over all the data at once, so every error
//! still reaches it from the one call, as open(2) and close(2) would
//! report them.
//!
//! The WRITE and the CLOSE name the OPEN's stateid as the "current
//! stateid" (RFC 8881 section 16.2.3.1.2). The OPEN is made for an open
//! owner of its own: an open of the same file by this client's usual owner
//! (another user of the file) has its own stateid, which this CLOSE leaves
//! alone. It asks for no delegation, as the file is closed at once.

use bytes::Bytes;
use client_core::fattr::{Fattr, Sattr};
use proto::nfs4::*;

use super::compound::failure;
use super::reply::Results;
use super::Nfs41;
use crate::error::Result;

/// RFC 8881 16.2.3.1.2: seqid 1, other all zero: "the current stateid".
const CURRENT_STATEID: stateid4 = stateid4 { seqid: 1, other: [0; 12] };

/// The compound for `owner`, and where its CLOSE is.
pub(crate) fn oneshot_ops(
    owner: open_owner4,
    dir: &Bytes,
    name: &str,
    attrs: &Sattr,
    data: Bytes,
) -> (Vec<nfs_argop4>, usize) {
    let set = Sattr { size: Some(0), ..attrs.clone() };
    let open = OPEN4args {
        seqid: 0,
        share_access: OPEN4_SHARE_ACCESS_WRITE | OPEN4_SHARE_ACCESS_WANT_NO_DELEG,
        share_deny: OPEN4_SHARE_DENY_NONE,
        owner,
        openhow: openflag4::OPEN4_CREATE(createhow4::UNCHECKED4(client_core::v41::attrs::encode_sattr(&set))),
        claim: open_claim4::CLAIM_NULL(Bytes::copy_from_slice(name.as_bytes())),
    };
    let mut ops =
        vec![nfs_argop4::OP_PUTFH(PUTFH4args { object: dir.clone() }), nfs_argop4::OP_OPEN(open), nfs_argop4::OP_GETFH];
    if !data.is_empty() {
        ops.push(nfs_argop4::OP_WRITE(WRITE4args {
            stateid: CURRENT_STATEID,
            offset: 0,
            stable: stable_how4::FILE_SYNC4,
            data,
        }));
    }
    let close_at = ops.len();
    ops.push(nfs_argop4::OP_CLOSE(CLOSE4args { seqid: 0, open_stateid: CURRENT_STATEID }));
    ops.push(super::ops::getattr_op());
    ops.push(nfs_argop4::OP_PUTFH(PUTFH4args { object: dir.clone() }));
    ops.push(super::ops::getattr_op());
    (ops, close_at)
}

/// The open a failed one-shot compound left behind (OPEN and GETFH
/// done, CLOSE not reached): its stateid and the file's handle.
pub(crate) fn left_open(r: &Results, close_at: usize) -> Option<(stateid4, Bytes)> {
    match r.get(1) {
        Some(nfs_resop4::OP_OPEN(OPEN4res::NFS4_OK(ok))) if r.len() <= close_at => {
            Some((ok.stateid.clone(), r.getfh(2).ok()?))
        }
        _ => None,
    }
}

/// The file's handle, its attributes and the directory's, from a
/// successful one-shot compound.
pub(crate) fn oneshot_reply(r: &Results, close_at: usize) -> Result<(Bytes, Fattr, Fattr)> {
    Ok((r.getfh(2)?, r.attrs(close_at + 1)?, r.attrs(close_at + 3)?))
}

impl Nfs41 {
    fn oneshot_owner(&self) -> open_owner4 {
        open_owner4 { clientid: self.session.lock().clientid, owner: Bytes::from_static(b"nfsx-oneshot-owner") }
    }

    /// Creates `name` in `dir` with `attrs` (an existing file is truncated),
    /// writes `data` at offset 0 (FILE_SYNC: on stable storage, as a close
    /// that flushes leaves it) and closes it: one round trip. Returns the
    /// file's handle, its attributes after the close and the directory's.
    pub async fn write_new_file(
        &self,
        dir: &Bytes,
        name: &str,
        attrs: &Sattr,
        data: Bytes,
    ) -> Result<(Bytes, Fattr, Fattr)> {
        let (ops, close_at) = oneshot_ops(self.oneshot_owner(), dir, name, attrs, data);
        let r = self.compound_status(ops).await?;
        if r.status() != nfsstat4::NFS4_OK {
            // Opened but not closed (the WRITE failed, say): the open goes
            // now rather than at lease expiry.
            if let Some((stateid, fh)) = left_open(&r, close_at) {
                let close = vec![
                    nfs_argop4::OP_PUTFH(PUTFH4args { object: fh }),
                    nfs_argop4::OP_CLOSE(CLOSE4args { seqid: 0, open_stateid: stateid }),
                ];
                if let Err(e) = self.compound(close).await {
                    tracing::debug!("CLOSE after a failed one-shot write: {e}");
                }
            }
            return Err(failure(&r));
        }
        oneshot_reply(&r, close_at)
    }
}
