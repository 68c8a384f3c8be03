//! LAYOUTCOMMIT (RFC 8881 section 18.42). Layouts say
//! FF_FLAGS_NO_LAYOUTCOMMIT, since the data servers write into the store
//! this server reads sizes and times from; a client that sends one anyway
//! has its last write offset honoured, growing the file if it is shorter.

use proto::nfs4::*;
use vfs::SetAttrs;

use super::open::file_key;
use super::pnfs::layout_file;
use super::status::stat4;
use super::Compound;

pub(super) fn run(cx: &mut Compound, args: LAYOUTCOMMIT4args) -> Result<LAYOUTCOMMIT4resok, nfsstat4> {
    let o = layout_file(cx)?;
    let client = cx.session_client().ok_or(nfsstat4::NFS4ERR_OP_NOT_IN_SESSION)?;
    let sid = cx.resolve_stateid(&args.loca_stateid)?;
    cx.state().layoutcommit(client, file_key(&o), &sid, args.loca_reclaim)?;
    let Some(last) = args.loca_last_write_offset else {
        return Ok(LAYOUTCOMMIT4resok { locr_newsize: None });
    };
    let end = last.checked_add(1).ok_or(nfsstat4::NFS4ERR_INVAL)?;
    if end <= o.attrs.size {
        return Ok(LAYOUTCOMMIT4resok { locr_newsize: None });
    }
    let set = SetAttrs { size: Some(end), ..SetAttrs::default() };
    o.fs().setattr(o.id, &set, None).map_err(stat4)?;
    Ok(LAYOUTCOMMIT4resok { locr_newsize: Some(end) })
}
