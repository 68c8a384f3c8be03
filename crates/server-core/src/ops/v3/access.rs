//! ACCESS (RFC 1813 section 3.3.4): which of the asked rights the caller
//! has, by the same mode-bit rules the other procedures enforce. On a
//! read-only export no modifying right is ever granted.

use proto::nfs3::{ACCESS3args, ACCESS3res, ACCESS3resfail, ACCESS3resok};
use vfs::Access;

use super::{fattr, Ctx};
use crate::auth::granted;

const MODIFYING: u32 = Access::MODIFY.0 | Access::EXTEND.0 | Access::DELETE.0;

pub(super) fn access(ctx: &Ctx, a: ACCESS3args) -> ACCESS3res {
    let o = match ctx.resolve(&a.object) {
        Ok(o) => o,
        Err(s) => return ACCESS3res::default(s, ACCESS3resfail { obj_attributes: None }),
    };
    let mut bits = granted(&o.attrs, &o.creds, Access(a.access)).0;
    if o.read_only() {
        bits &= !MODIFYING;
    }
    ACCESS3res::NFS3_OK(ACCESS3resok { obj_attributes: Some(fattr(&o.attrs)), access: bits & a.access })
}
