//! COMMIT (RFC 8881 section 18.3). `count == 0` means "to the end of the
//! file". As in NFSv3, a backend I/O error here reports a write that
//! failed after it was acknowledged as UNSTABLE: the write verifier is
//! changed so that every client holding uncommitted data resends it.

use proto::nfs4::*;
use vfs::{FileType, VfsError};

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
            if let VfsError::Io(msg) = &e {
                tracing::error!(export = %o.export.path, fileid = o.id,
                    "COMMIT failed, unstable data may be lost; changing the write verifier: {msg}");
                cx.core.change_write_verifier(writeverf);
            }
            Err(stat4(e))
        }
    }
}
