//! RMDIR (RFC 1813 section 3.3.13): an empty directory; `.` is
//! NFS3ERR_INVAL and `..` NFS3ERR_EXIST, as the RFC describes.

use proto::nfs3::{nfsstat3, RMDIR3args, RMDIR3res, RMDIR3resfail, RMDIR3resok};

use super::{check_remove_name, check_writable, no_wcc, stat, Ctx};
use crate::auth::may_delete_entry;

pub(super) fn rmdir(ctx: &Ctx, a: RMDIR3args) -> RMDIR3res {
    let dir = match ctx.resolve(&a.object.dir) {
        Ok(o) => o,
        Err(s) => return RMDIR3res::default(s, RMDIR3resfail { dir_wcc: no_wcc() }),
    };
    let fail = |s| RMDIR3res::default(s, RMDIR3resfail { dir_wcc: dir.wcc_unchanged() });
    if let Err(s) = check_writable(&dir) {
        return fail(s);
    }
    if !dir.is_dir() {
        return fail(nfsstat3::NFS3ERR_NOTDIR);
    }
    if let Err(s) = check_remove_name(ctx.core, &a.object.name) {
        return fail(s);
    }
    let victim = match dir.fs().lookup(dir.id, &a.object.name) {
        Ok((_, attrs)) => attrs,
        Err(e) => return fail(stat(e)),
    };
    if !may_delete_entry(&dir.attrs, Some(&victim), &dir.creds) {
        return fail(nfsstat3::NFS3ERR_ACCES);
    }
    match dir.fs().rmdir(dir.id, &a.object.name) {
        Ok(()) => RMDIR3res::NFS3_OK(RMDIR3resok { dir_wcc: dir.wcc() }),
        Err(e) => RMDIR3res::default(stat(e), RMDIR3resfail { dir_wcc: dir.wcc() }),
    }
}
