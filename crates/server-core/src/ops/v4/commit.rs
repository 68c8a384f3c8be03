//! COMMIT (RFC 8881 section 18.3). `count == 0` means "to the end of the
//! file". As in NFSv3, a failed write-back here reports a write that
//! failed after it was acknowledged as UNSTABLE: the write verifier is
//! changed so that every client holding uncommitted data resends it
//! (`ops::commit`).

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
    let writeverf = cx.core.write_verifier();
    match o.fs().commit(o.id, args.offset, args.count) {
        Ok(()) => Ok(COMMIT4resok { writeverf }),
        Err(e) => {
            crate::ops::commit::failed(cx.core, writeverf, &o.export.path, o.id, &e);
            Err(stat4(e))
        }
    }
}
