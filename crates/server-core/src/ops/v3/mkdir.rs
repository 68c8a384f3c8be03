//! MKDIR (RFC 1813 section 3.3.9).

use proto::nfs3::{MKDIR3args, MKDIR3res, MKDIR3resfail, MKDIR3resok};

use super::{create_attrs, created, dir_for_create, Created, Ctx};
use crate::ops::create::new_owner;

pub(super) fn mkdir(ctx: &Ctx, a: MKDIR3args) -> MKDIR3res {
    let fail = |(s, dir_wcc)| MKDIR3res::default(s, MKDIR3resfail { dir_wcc });
    let dir = match dir_for_create(ctx, &a.r#where) {
        Ok(d) => d,
        Err(f) => return fail(f),
    };
    let set = match create_attrs(&dir, &a.attributes) {
        Ok(set) => set,
        Err(s) => return fail((s, dir.wcc_unchanged())),
    };
    let owner = new_owner(&dir.attrs, &dir.creds);
    let r = dir.fs().mkdir(dir.id, &a.r#where.name, &set, owner);
    match created(ctx, &dir, r) {
        Ok(Created { obj, obj_attributes, dir_wcc }) => {
            MKDIR3res::NFS3_OK(MKDIR3resok { obj, obj_attributes, dir_wcc })
        }
        Err(f) => fail(f),
    }
}
