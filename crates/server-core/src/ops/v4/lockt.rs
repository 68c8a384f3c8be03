//! LOCKT (RFC 8881 section 18.11): tests for a conflicting lock without
//! creating any state.

use proto::nfs4::*;

use super::lock::lock_kind;
use super::open::{check_regular, client_of, file_key};
use super::status::stat4;
use super::Compound;
use crate::shared_locks;
use crate::state::lockmgr::range_of;
use crate::state::stateids::v4_lock_owner;

pub(super) fn run(cx: &mut Compound, args: LOCKT4args) -> LOCKT4res {
    match run_inner(cx, args) {
        Ok(r) => r,
        Err(s) => LOCKT4res::default(s),
    }
}

fn run_inner(cx: &mut Compound, args: LOCKT4args) -> Result<LOCKT4res, nfsstat4> {
    let st = cx.state();
    let (start, end) = range_of(args.offset, args.length).ok_or(nfsstat4::NFS4ERR_INVAL)?;
    let obj = cx.cobj(nfsstat4::NFS4ERR_ISDIR)?;
    check_regular(cx, &obj)?;
    let file = file_key(&obj);
    let client = client_of(cx, args.owner.clientid);
    let owner = v4_lock_owner(client, &args.owner.owner);
    let kind = lock_kind(args.locktype);
    let mut conflict = st.lockt(cx.minor, client, file, &owner, kind, start, end)?;
    if conflict.is_none() {
        // Another head's clients' locks are only in the shared store.
        conflict = shared_locks::test(obj.fs(), file.1, &owner, kind, start, end).map_err(stat4)?;
    }
    Ok(match conflict {
        Some(c) => LOCKT4res::NFS4ERR_DENIED(c.denied()),
        None => LOCKT4res::NFS4_OK,
    })
}
