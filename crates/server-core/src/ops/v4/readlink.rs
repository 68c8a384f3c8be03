//! READLINK (RFC 8881 section 18.24): the target as stored. Other types
//! are NFS4ERR_INVAL in 4.0, NFS4ERR_WRONG_TYPE in 4.1.

use proto::nfs4::*;
use vfs::FileType;

use super::dirops::wrong_type;
use super::status::stat4;
use super::Compound;

pub(super) fn run(cx: &mut Compound) -> Result<READLINK4resok, nfsstat4> {
    let o = cx.cobj(wrong_type(cx.minor))?;
    if o.attrs.ftype != FileType::Symlink {
        return Err(wrong_type(cx.minor));
    }
    let link = o.fs().readlink(o.id).map_err(stat4)?;
    Ok(READLINK4resok { link })
}
