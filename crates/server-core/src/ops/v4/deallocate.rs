//! DEALLOCATE (RFC 7862 section 15.4): punches a hole in a range; it
//! reads back as zeros and the file keeps its size. Stateids follow
//! WRITE's rules.

use proto::nfs4::*;

use super::status::stat4;
use super::{io, Compound};
use crate::state::stateids::IoKind;

pub(super) fn run(cx: &mut Compound, args: DEALLOCATE4args) -> Result<(), nfsstat4> {
    let obj = io::file_to_change(cx)?;
    io::check(cx, &obj, &args.da_stateid, IoKind::Write, (args.da_offset, args.da_length))?;
    if args.da_length == 0 {
        return Err(nfsstat4::NFS4ERR_INVAL);
    }
    io::end_within(cx, args.da_offset, args.da_length)?;
    obj.fs()
        .data_ops()
        .ok_or(nfsstat4::NFS4ERR_NOTSUPP)?
        .deallocate(obj.id, args.da_offset, args.da_length)
        .map_err(stat4)?;
    Ok(())
}
