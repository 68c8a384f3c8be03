//! FSSTAT (RFC 1813 section 3.3.18): space and file counts from the backend.

use proto::nfs3::{FSSTAT3args, FSSTAT3res, FSSTAT3resfail, FSSTAT3resok};

use super::{fattr, stat, Ctx};

pub(super) fn fsstat(ctx: &Ctx, a: FSSTAT3args) -> FSSTAT3res {
    let o = match ctx.resolve(&a.fsroot) {
        Ok(o) => o,
        Err(s) => return FSSTAT3res::default(s, FSSTAT3resfail { obj_attributes: None }),
    };
    match o.fs().fsstat(o.id) {
        Ok(s) => FSSTAT3res::NFS3_OK(FSSTAT3resok {
            obj_attributes: Some(fattr(&o.attrs)),
            tbytes: s.total_bytes,
            fbytes: s.free_bytes,
            abytes: s.avail_bytes,
            tfiles: s.total_files,
            ffiles: s.free_files,
            afiles: s.avail_files,
            invarsec: ctx.core.settings.fsstat_invarsec,
        }),
        Err(e) => FSSTAT3res::default(stat(e), FSSTAT3resfail { obj_attributes: Some(fattr(&o.attrs)) }),
    }
}
