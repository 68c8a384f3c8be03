//! LINK (RFC 1813 section 3.3.15): a hard link within one export.

use proto::nfs3::{nfsstat3, LINK3args, LINK3res, LINK3resfail, LINK3resok};

use super::{check_new_name, check_writable, fattr, no_wcc, stat, Ctx};
use crate::auth::may_add_entry;

pub(super) fn link(ctx: &Ctx, a: LINK3args) -> LINK3res {
    let file = match ctx.resolve(&a.file) {
        Ok(o) => o,
        Err(s) => return LINK3res::default(s, LINK3resfail { file_attributes: None, linkdir_wcc: no_wcc() }),
    };
    let dir = match ctx.resolve(&a.link.dir) {
        Ok(o) => o,
        Err(s) => {
            return LINK3res::default(
                s,
                LINK3resfail { file_attributes: Some(fattr(&file.attrs)), linkdir_wcc: no_wcc() },
            )
        }
    };
    let fail = |s| {
        LINK3res::default(
            s,
            LINK3resfail { file_attributes: Some(fattr(&file.attrs)), linkdir_wcc: dir.wcc_unchanged() },
        )
    };
    if file.export.id != dir.export.id {
        return fail(nfsstat3::NFS3ERR_XDEV);
    }
    if let Err(s) = check_writable(&dir) {
        return fail(s);
    }
    if !dir.is_dir() {
        return fail(nfsstat3::NFS3ERR_NOTDIR);
    }
    if file.is_dir() {
        // Hard links to directories would make the tree a graph.
        return fail(nfsstat3::NFS3ERR_ISDIR);
    }
    if let Err(s) = check_new_name(ctx.core, &a.link.name) {
        return fail(s);
    }
    if !may_add_entry(&dir.attrs, &dir.creds) {
        return fail(nfsstat3::NFS3ERR_ACCES);
    }
    if let Err(s) = super::delegations::before_dir_change(ctx, &dir, super::delegations::Change::Add(&a.link.name)) {
        return fail(s);
    }
    if let Err(s) = super::delegations::recall_for(ctx, &file, true) {
        return fail(s);
    }
    match dir.fs().link(file.id, dir.id, &a.link.name) {
        Ok(()) => LINK3res::NFS3_OK(LINK3resok { file_attributes: file.post_op(), linkdir_wcc: dir.wcc() }),
        Err(e) => LINK3res::default(stat(e), LINK3resfail { file_attributes: file.post_op(), linkdir_wcc: dir.wcc() }),
    }
}
