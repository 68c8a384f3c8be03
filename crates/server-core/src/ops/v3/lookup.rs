//! LOOKUP (RFC 1813 section 3.3.3). `..` of the export root is the root
//! itself (the backend guarantees it), so a client cannot climb out.

use proto::nfs3::{nfsstat3, LOOKUP3args, LOOKUP3res, LOOKUP3resfail, LOOKUP3resok};
use vfs::Access;

use super::{check_name, fattr, stat, Ctx};
use crate::auth::may;

pub(super) fn lookup(ctx: &Ctx, a: LOOKUP3args) -> LOOKUP3res {
    let dir = match ctx.resolve(&a.what.dir) {
        Ok(o) => o,
        Err(s) => return LOOKUP3res::default(s, LOOKUP3resfail { dir_attributes: None }),
    };
    let fail = |s| LOOKUP3res::default(s, LOOKUP3resfail { dir_attributes: Some(fattr(&dir.attrs)) });
    if !dir.is_dir() {
        return fail(nfsstat3::NFS3ERR_NOTDIR);
    }
    if let Err(s) = check_name(ctx.core, &a.what.name) {
        return fail(s);
    }
    if !may(&dir.attrs, &dir.creds, Access::LOOKUP) {
        return fail(nfsstat3::NFS3ERR_ACCES);
    }
    match dir.fs().lookup(dir.id, &a.what.name) {
        Ok((id, attrs)) => LOOKUP3res::NFS3_OK(LOOKUP3resok {
            object: ctx.handle(dir.export, id, &attrs),
            obj_attributes: Some(fattr(&attrs)),
            dir_attributes: Some(fattr(&dir.attrs)),
        }),
        Err(e) => fail(stat(e)),
    }
}
