//! GETATTR (RFC 1813 section 3.3.1). Needs no permission beyond being
//! allowed by the export: attributes are visible to anyone who holds the
//! handle, as on a local file system to anyone who can reach the file.

use proto::nfs3::{GETATTR3args, GETATTR3res, GETATTR3resok};

use super::{fattr, Ctx};

pub(super) fn getattr(ctx: &Ctx, a: GETATTR3args) -> GETATTR3res {
    match ctx.resolve(&a.object) {
        Ok(o) => GETATTR3res::NFS3_OK(GETATTR3resok { obj_attributes: fattr(&o.attrs) }),
        Err(s) => GETATTR3res::default(s),
    }
}
