//! SETATTR (RFC 1813 section 3.3.2).
//!
//! Permission follows POSIX (see `auth::check_setattr`); the guard, when
//! present, is checked here against the snapshot for a quick answer and
//! again by the backend atomically with the change, so a concurrent
//! change between the two still yields NFS3ERR_NOT_SYNC.

use proto::nfs3::{nfsstat3, wcc_data, SETATTR3args, SETATTR3res, SETATTR3resfail, SETATTR3resok};

use super::{client_time, fattr, modifiable, nfstime, set_attrs, stat, wcc_attr_of, Ctx};
use crate::auth::{check_setattr, filter_mode, SetattrDenied};

pub(super) fn setattr(ctx: &Ctx, a: SETATTR3args) -> SETATTR3res {
    let o = match modifiable(ctx, &a.object, |_| Ok(())) {
        Ok(o) => o,
        Err((s, obj_wcc)) => return SETATTR3res::default(s, SETATTR3resfail { obj_wcc }),
    };
    let fail = |s| SETATTR3res::default(s, SETATTR3resfail { obj_wcc: o.wcc_unchanged() });
    let mut set = match set_attrs(&a.new_attributes) {
        Ok(s) => s,
        Err(s) => return fail(s),
    };
    let guard = match a.guard.as_ref().map(client_time).transpose() {
        Ok(g) => g,
        Err(s) => return fail(s),
    };
    if let Some(g) = &a.guard {
        if *g != nfstime(o.attrs.ctime) {
            return fail(nfsstat3::NFS3ERR_NOT_SYNC);
        }
    }
    match check_setattr(&o.attrs, &o.creds, &set) {
        Ok(()) => {}
        Err(SetattrDenied::Perm) => return fail(nfsstat3::NFS3ERR_PERM),
        Err(SetattrDenied::Access) => return fail(nfsstat3::NFS3ERR_ACCES),
    }
    if let Some(m) = set.mode {
        set.mode = Some(filter_mode(set.gid.unwrap_or(o.attrs.gid), &o.creds, m));
    }
    // A directory's delegations are directory delegations, which may
    // have asked to hear of this instead.
    let before = if o.is_dir() {
        super::delegations::before_dir_change(ctx, &o, super::delegations::Change::DirAttrs)
    } else {
        super::delegations::recall_for(ctx, &o, true)
    };
    if let Err(s) = before {
        return fail(s);
    }
    match o.fs().setattr(o.id, &set, guard) {
        Ok(new) => SETATTR3res::NFS3_OK(SETATTR3resok {
            obj_wcc: wcc_data { before: Some(wcc_attr_of(&o.attrs)), after: Some(fattr(&new)) },
        }),
        Err(e) => SETATTR3res::default(stat(e), SETATTR3resfail { obj_wcc: o.wcc() }),
    }
}
