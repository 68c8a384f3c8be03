//! NLM4_LOCK and NLM4_NM_LOCK: take a byte-range lock. During the grace
//! period after a restart only reclaims are granted.

use proto::nlm::*;

use super::{file_of, kind, owner_of, range_of, res};
use crate::rpc::Call;
use crate::shared_locks;
use crate::Core;

pub(super) fn lock(core: &Core, call: &Call, a: nlm4_lockargs) -> (nlm4_res, bool) {
    let file = match file_of(core, call, &a.alock.fh) {
        Ok(f) => f,
        Err(s) => return res(a.cookie, s),
    };
    let (start, end) = range_of(&a.alock);
    let (owner, kind) = (owner_of(&a.alock), kind(a.exclusive));
    let st = &core.v4;
    // On a file system other servers share, the store is asked first.
    let Some(export) = core.export_by_id(file.0) else { return res(a.cookie, nlm4_stats::nlm4_stale_fh) };
    match shared_locks::take(&*export.fs, file.1, &owner, kind, start, end) {
        Ok(true) => {}
        Ok(false) => return res(a.cookie, nlm4_stats::nlm4_denied),
        Err(_) => return res(a.cookie, nlm4_stats::nlm4_failed),
    }
    let stat = st.nlm_lock(file, &owner, kind, start, end, a.reclaim);
    if stat != nlm4_stats::nlm4_granted {
        shared_locks::sync(&*export.fs, st, file, &owner, start, end);
    }
    res(a.cookie, stat)
}
