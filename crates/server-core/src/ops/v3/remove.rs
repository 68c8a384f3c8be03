//! REMOVE (RFC 1813 section 3.3.12): a non-directory. The victim is looked
//! up first for the sticky-directory rule (only the owner of the file or
//! of the directory, or root, may remove from a sticky directory).

use proto::nfs3::{nfsstat3, REMOVE3args, REMOVE3res, REMOVE3resfail, REMOVE3resok};

use super::{check_remove_name, check_writable, no_wcc, stat, Ctx};
use crate::auth::may_delete_entry;

pub(super) fn remove(ctx: &Ctx, a: REMOVE3args) -> REMOVE3res {
    let dir = match ctx.resolve(&a.object.dir) {
        Ok(o) => o,
        Err(s) => return REMOVE3res::default(s, REMOVE3resfail { dir_wcc: no_wcc() }),
    };
    let fail = |s| REMOVE3res::default(s, REMOVE3resfail { dir_wcc: dir.wcc_unchanged() });
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
    match dir.fs().remove(dir.id, &a.object.name) {
        Ok(()) => REMOVE3res::NFS3_OK(REMOVE3resok { dir_wcc: dir.wcc() }),
        Err(e) => REMOVE3res::default(stat(e), REMOVE3resfail { dir_wcc: dir.wcc() }),
    }
}
