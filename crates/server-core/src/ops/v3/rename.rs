//! RENAME (RFC 1813 section 3.3.14).
//!
//! Both directories must be in the same export (NFS3ERR_XDEV otherwise,
//! even when the backends happen to be one). `.` and `..` are refused on
//! either side with NFS3ERR_INVAL, as the RFC suggests. The caller needs
//! delete rights on the source directory (sticky rule included), the
//! right to add to the target directory, and delete rights there too when
//! the target name exists and will be replaced.

use proto::nfs3::{nfsstat3, RENAME3args, RENAME3res, RENAME3resfail, RENAME3resok};

use super::delegations::{before_dir_change, recall_on, Change};
use super::{check_name, check_writable, is_dot, no_wcc, stat, wcc_attr_of, Ctx};
use crate::auth::{may_add_entry, may_delete_entry};

pub(super) fn rename(ctx: &Ctx, a: RENAME3args) -> RENAME3res {
    let from = match ctx.resolve(&a.from.dir) {
        Ok(o) => o,
        Err(s) => return RENAME3res::default(s, RENAME3resfail { fromdir_wcc: no_wcc(), todir_wcc: no_wcc() }),
    };
    let to = match ctx.resolve(&a.to.dir) {
        Ok(o) => o,
        Err(s) => {
            return RENAME3res::default(s, RENAME3resfail { fromdir_wcc: from.wcc_unchanged(), todir_wcc: no_wcc() })
        }
    };
    let fail =
        |s| RENAME3res::default(s, RENAME3resfail { fromdir_wcc: from.wcc_unchanged(), todir_wcc: to.wcc_unchanged() });
    if from.export.id != to.export.id {
        return fail(nfsstat3::NFS3ERR_XDEV);
    }
    if let Err(s) = check_writable(&from) {
        return fail(s);
    }
    if !from.is_dir() || !to.is_dir() {
        return fail(nfsstat3::NFS3ERR_NOTDIR);
    }
    for name in [&a.from.name, &a.to.name] {
        if let Err(s) = check_name(ctx.core, name) {
            return fail(s);
        }
        if is_dot(name) {
            return fail(nfsstat3::NFS3ERR_INVAL);
        }
    }
    let fs = from.fs();
    let (victim_id, victim) = match fs.lookup(from.id, &a.from.name) {
        Ok(found) => found,
        Err(e) => return fail(stat(e)),
    };
    if !may_delete_entry(&from.attrs, Some(&victim), &from.creds) || !may_add_entry(&to.attrs, &to.creds) {
        return fail(nfsstat3::NFS3ERR_ACCES);
    }
    let in_place = from.id == to.id;
    let changes = if in_place {
        vec![(&from, Change::Rename(&a.to.name))]
    } else {
        vec![(&from, Change::Remove(&a.from.name)), (&to, Change::Add(&a.to.name))]
    };
    for (dir, change) in changes {
        if let Err(s) = before_dir_change(ctx, dir, change) {
            return fail(s);
        }
    }
    if let Err(s) = recall_on(ctx, &from, victim_id, &victim, true) {
        return fail(s);
    }
    let mut replaced_file = None;
    if let Ok((replaced_id, replaced)) = fs.lookup(to.id, &a.to.name) {
        if !may_delete_entry(&to.attrs, Some(&replaced), &to.creds) {
            return fail(nfsstat3::NFS3ERR_ACCES);
        }
        if let Err(s) = recall_on(ctx, &to, replaced_id, &replaced, true) {
            return fail(s);
        }
        // Renamed over, an NFSv4 client's open file is kept as on REMOVE.
        if replaced_id != victim_id {
            replaced_file = Some(((to.export.id, replaced_id, replaced.generation), replaced.nlink));
        }
    }
    let rename = || fs.rename(from.id, &a.from.name, to.id, &a.to.name);
    let r = match replaced_file {
        Some((file, nlink)) if ctx.core.v4.any_file_state() => {
            crate::state::unlinked::remove_keeping(&ctx.core.v4, fs, file, nlink, rename)
        }
        _ => rename(),
    };
    // With from == to, both wcc_data describe the same directory: the
    // pre-op snapshot is shared and the post-op read once.
    let fromdir_wcc = from.wcc();
    let todir_wcc = if to.id == from.id {
        proto::nfs3::wcc_data { before: Some(wcc_attr_of(&to.attrs)), after: fromdir_wcc.after.clone() }
    } else {
        to.wcc()
    };
    match r {
        Ok(()) => RENAME3res::NFS3_OK(RENAME3resok { fromdir_wcc, todir_wcc }),
        Err(e) => RENAME3res::default(stat(e), RENAME3resfail { fromdir_wcc, todir_wcc }),
    }
}
