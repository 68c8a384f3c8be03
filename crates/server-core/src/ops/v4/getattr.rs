//! GETATTR (RFC 8881 section 18.7): the supported attributes among those
//! asked for; write-only attributes are NFS4ERR_INVAL (they have no value
//! to return).
//!
//! While another client holds a write delegation on the file, its size
//! and change are the holder's (it may have written without telling the
//! server): they are asked for with CB_GETATTR (section 10.4.3). When the
//! holder's values differ from the server's, the file was modified: its
//! size is the holder's and its change one past the server's, so the
//! asking client sees a change.

use proto::nfs4::*;

use super::attrs::{self, Subject};
use super::open::io_client;
use super::Compound;
use crate::state::delegations::{holder_attrs, HolderSays};

pub(super) fn run(cx: &mut Compound, args: GETATTR4args) -> Result<GETATTR4resok, nfsstat4> {
    let mut subject = Subject::current(cx)?;
    if attrs::WRITE_ONLY.iter().any(|n| attrs::has(&args.attr_request, *n)) {
        return Err(nfsstat4::NFS4ERR_INVAL);
    }
    let asks = attrs::has(&args.attr_request, FATTR4_SIZE) || attrs::has(&args.attr_request, FATTR4_CHANGE);
    if let (true, Subject::Obj { export, id, attrs: a }) = (asks, &mut subject) {
        if a.ftype == vfs::FileType::Regular {
            let key = (export.id, *id, a.generation);
            let answer = cx.holder_answer.take();
            match holder_attrs(cx.state(), key, io_client(cx), answer)? {
                HolderSays::ServerAttrs => {}
                HolderSays::Attrs { size, change } => {
                    if size != a.size || change != a.change {
                        a.size = size;
                        a.change = a.change.max(change).wrapping_add(1);
                    }
                }
                HolderSays::Wait(wait) => {
                    // Run again once the holder answered (or did not in
                    // time); this status is not sent.
                    cx.park = Some(wait);
                    return Err(nfsstat4::NFS4ERR_DELAY);
                }
            }
        }
    }
    let obj_attributes = attrs::encode(cx, &subject, &args.attr_request)?;
    Ok(GETATTR4resok { obj_attributes })
}
