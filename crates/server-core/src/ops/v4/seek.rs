//! SEEK (RFC 7862 section 15.11): where the next data or hole starts at
//! or after an offset. Every file ends in a virtual hole; an offset past
//! the end is NFS4ERR_NXIO. Stateids follow READ's rules.

use proto::nfs4::*;
use vfs::SeekWhat;

use super::status::stat4;
use super::{io, Compound};
use crate::state::stateids::IoKind;

pub(super) fn run(cx: &mut Compound, args: SEEK4args) -> Result<seek_res4, nfsstat4> {
    let obj = io::file_to_read(cx)?;
    io::check(cx, &obj, &args.sa_stateid, IoKind::Read, (args.sa_offset, 0))?;
    let what = match args.sa_what {
        data_content4::NFS4_CONTENT_DATA => SeekWhat::Data,
        data_content4::NFS4_CONTENT_HOLE => SeekWhat::Hole,
    };
    let r = obj.fs().data_ops().ok_or(nfsstat4::NFS4ERR_NOTSUPP)?.seek(obj.id, args.sa_offset, what).map_err(stat4)?;
    Ok(seek_res4 { sr_eof: r.eof, sr_offset: r.offset })
}
