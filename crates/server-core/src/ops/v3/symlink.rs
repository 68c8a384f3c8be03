//! SYMLINK (RFC 1813 section 3.3.10). The target is stored as given and
//! never interpreted by the server.

use proto::nfs3::{nfsstat3, SYMLINK3args, SYMLINK3res, SYMLINK3resfail, SYMLINK3resok};

use super::{create_attrs, created, dir_for_create, Created, Ctx};
use crate::ops::create::new_owner;

/// PATH_MAX: the longest target a POSIX system can store.
const MAX_TARGET: usize = 4096;

pub(super) fn symlink(ctx: &Ctx, a: SYMLINK3args) -> SYMLINK3res {
    let fail = |(s, dir_wcc)| SYMLINK3res::default(s, SYMLINK3resfail { dir_wcc });
    let dir = match dir_for_create(ctx, &a.r#where) {
        Ok(d) => d,
        Err(f) => return fail(f),
    };
    let target = &a.symlink.symlink_data;
    let checked = if target.is_empty() || target.contains(&0) {
        Err(nfsstat3::NFS3ERR_INVAL)
    } else if target.len() > MAX_TARGET {
        Err(nfsstat3::NFS3ERR_NAMETOOLONG)
    } else {
        create_attrs(&dir, &a.symlink.symlink_attributes)
    };
    let set = match checked {
        Ok(set) => set,
        Err(s) => return fail((s, dir.wcc_unchanged())),
    };
    let owner = new_owner(&dir.attrs, &dir.creds);
    let r = dir.fs().symlink(dir.id, &a.r#where.name, target, &set, owner);
    match created(ctx, &dir, r) {
        Ok(Created { obj, obj_attributes, dir_wcc }) => {
            SYMLINK3res::NFS3_OK(SYMLINK3resok { obj, obj_attributes, dir_wcc })
        }
        Err(f) => fail(f),
    }
}
