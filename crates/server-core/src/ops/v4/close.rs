//! CLOSE (RFC 8881 section 18.2; RFC 7530 16.2).
//!
//! Drops the open and the byte-range locks taken under it (the server
//! MAY free them, RFC 8881 18.2.3). In 4.1 the reply carries the invalid
//! special stateid (18.2.4); in 4.0 the open stateid with its seqid
//! bumped, and a retransmission is answered from the owner's last reply.

use proto::nfs4::*;

use super::open::io_client;
use super::{Compound, Fh};
use crate::shared_shares;
use crate::state::Answer;

pub(super) fn run(cx: &mut Compound, args: CLOSE4args) -> Result<stateid4, nfsstat4> {
    let st = cx.state();
    let sid = cx.resolve_stateid(&args.open_stateid)?;
    // The file may be gone (removed, or renamed over) while still open:
    // closing it must work all the same, so the handle is not resolved.
    let file = match cx.cfh()? {
        Fh::Obj { export_id, id, generation } => (export_id, id, generation),
        Fh::Pseudo(_) => return Err(nfsstat4::NFS4ERR_ISDIR),
    };
    let (r, released_share) = match st.close(cx.minor, io_client(cx), &sid, file, args.seqid) {
        Answer::Early(r) => return r,
        Answer::Done(r, released) => (r, released),
    };
    if let (Some(key), Some(export)) = (released_share, cx.core.export_by_id(file.0)) {
        shared_shares::set(&*export.fs, file.1, key, 0, 0);
    }
    if let Ok(s) = &r {
        cx.current_stateid = Some(s.clone());
    }
    r
}
