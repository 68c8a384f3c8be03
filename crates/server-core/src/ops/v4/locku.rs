//! LOCKU (RFC 8881 section 18.12): releases a range (splitting locks as
//! needed); the lock stateid stays valid for later locks.

use proto::nfs4::*;

use super::open::{check_regular, file_key, io_client};
use super::Compound;
use crate::shared_locks;
use crate::state::lockmgr::range_of;
use crate::state::Answer;

pub(super) fn run(cx: &mut Compound, args: LOCKU4args) -> Result<stateid4, nfsstat4> {
    let st = cx.state();
    let minor = cx.minor;
    let (start, end) = range_of(args.offset, args.length).ok_or(nfsstat4::NFS4ERR_INVAL)?;
    let sid = cx.resolve_stateid(&args.lock_stateid)?;
    let obj = cx.cobj(nfsstat4::NFS4ERR_ISDIR)?;
    check_regular(cx, &obj)?;
    let file = file_key(&obj);
    let fs = obj.export.fs.clone();
    let (r, owner) = match st.locku(minor, io_client(cx), &sid, file, args.seqid, start, end) {
        Answer::Early(r) => return r,
        Answer::Done(r, owner) => (r, owner),
    };
    if let Ok(s) = &r {
        cx.current_stateid = Some(s.clone());
        shared_locks::sync(&*fs, st, file, &owner, start, end);
    }
    r
}
