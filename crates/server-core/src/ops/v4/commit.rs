//! COMMIT (RFC 8881 section 18.3). The flush and the write verifier's
//! fate when it fails are what both versions share (`ops::commit`).

use proto::nfs4::*;
use vfs::FileType;

use super::dirops::{writable, wrong_type};
use super::status::stat4;
use super::Compound;
use crate::auth::may_write;

pub(super) fn run(cx: &mut Compound, args: COMMIT4args) -> Result<COMMIT4resok, nfsstat4> {
    let o = cx.cobj(nfsstat4::NFS4ERR_ISDIR)?;
    match o.attrs.ftype {
        FileType::Regular => {}
        FileType::Directory => return Err(nfsstat4::NFS4ERR_ISDIR),
        FileType::Symlink => return Err(nfsstat4::NFS4ERR_SYMLINK),
        _ => return Err(wrong_type(cx.minor)),
    }
    if args.offset.checked_add(args.count.into()).is_none() {
        return Err(nfsstat4::NFS4ERR_INVAL);
    }
    writable(&o)?;
    if !may_write(&o.attrs, &o.creds) {
        return Err(nfsstat4::NFS4ERR_ACCESS);
    }
    let writeverf = crate::ops::commit::commit(cx.core, &o, args.offset, args.count).map_err(stat4)?;
    Ok(COMMIT4resok { writeverf })
}
