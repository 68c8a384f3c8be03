//! ALLOCATE (RFC 7862 section 15.1): reserves space for a range so later
//! WRITEs to it cannot fail for lack of space; a range past the end
//! extends the file. Stateids follow WRITE's rules.

use proto::nfs4::*;

use super::status::stat4;
use super::{io, Compound};
use crate::state::stateids::IoKind;

pub(super) fn run(cx: &mut Compound, args: ALLOCATE4args) -> Result<(), nfsstat4> {
    let obj = io::file_to_change(cx)?;
    io::check(cx, &obj, &args.aa_stateid, IoKind::Write, (args.aa_offset, args.aa_length))?;
    if args.aa_length == 0 {
        return Err(nfsstat4::NFS4ERR_INVAL);
    }
    io::end_within(cx, args.aa_offset, args.aa_length)?;
    obj.fs()
        .data_ops()
        .ok_or(nfsstat4::NFS4ERR_NOTSUPP)?
        .allocate(obj.id, args.aa_offset, args.aa_length)
        .map_err(stat4)?;
    Ok(())
}
