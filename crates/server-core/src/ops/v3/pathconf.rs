//! PATHCONF (RFC 1813 section 3.3.20): POSIX behaviour — names are never
//! truncated, only root gives files away, case matters and is kept.

use proto::nfs3::{PATHCONF3args, PATHCONF3res, PATHCONF3resfail, PATHCONF3resok};

use super::{fattr, Ctx};

pub(super) fn pathconf(ctx: &Ctx, a: PATHCONF3args) -> PATHCONF3res {
    let o = match ctx.resolve(&a.object) {
        Ok(o) => o,
        Err(s) => return PATHCONF3res::default(s, PATHCONF3resfail { obj_attributes: None }),
    };
    let s = &ctx.core.settings;
    PATHCONF3res::NFS3_OK(PATHCONF3resok {
        obj_attributes: Some(fattr(&o.attrs)),
        linkmax: s.link_max,
        name_max: s.name_max,
        no_trunc: true,
        chown_restricted: true,
        case_insensitive: false,
        case_preserving: true,
    })
}
