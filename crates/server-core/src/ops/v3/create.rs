//! CREATE (RFC 1813 section 3.3.8): UNCHECKED, GUARDED and EXCLUSIVE.
//!
//! EXCLUSIVE hands the client's verifier to the backend, which stores it
//! with the file, so a retransmitted CREATE (same verifier) succeeds on
//! the file it already made while a different client's gets EXIST. An
//! UNCHECKED create of an existing file that asks for a size truncates it,
//! which needs write permission on that file.

use proto::nfs3::{createhow3, nfsstat3, CREATE3args, CREATE3res, CREATE3resfail, CREATE3resok};
use vfs::{CreateHow, FileType};

use super::{create_attrs, created, dir_for_create, Created, Ctx};
use crate::auth::may_write;
use crate::ops::create::new_owner;

pub(super) fn create(ctx: &Ctx, a: CREATE3args) -> CREATE3res {
    let fail = |(s, dir_wcc)| CREATE3res::default(s, CREATE3resfail { dir_wcc });
    let dir = match dir_for_create(ctx, &a.r#where) {
        Ok(d) => d,
        Err(f) => return fail(f),
    };
    let how = match &a.how {
        createhow3::UNCHECKED(s) | createhow3::GUARDED(s) => {
            let set = match create_attrs(&dir, s) {
                Ok(set) => set,
                Err(s) => return fail((s, dir.wcc_unchanged())),
            };
            if matches!(a.how, createhow3::GUARDED(_)) {
                CreateHow::Guarded(set)
            } else {
                if set.size.is_some() {
                    if let Ok((_, existing)) = dir.fs().lookup(dir.id, &a.r#where.name) {
                        if existing.ftype == FileType::Regular && !may_write(&existing, &dir.creds) {
                            return fail((nfsstat3::NFS3ERR_ACCES, dir.wcc_unchanged()));
                        }
                    }
                }
                CreateHow::Unchecked(set)
            }
        }
        createhow3::EXCLUSIVE(verf) => CreateHow::Exclusive(*verf),
    };
    let owner = new_owner(&dir.attrs, &dir.creds);
    let r = dir.fs().create(dir.id, &a.r#where.name, &how, owner);
    match created(ctx, &dir, r) {
        Ok(Created { obj, obj_attributes, dir_wcc }) => {
            CREATE3res::NFS3_OK(CREATE3resok { obj, obj_attributes, dir_wcc })
        }
        Err(f) => fail(f),
    }
}
