//! NLM4_LOCK and NLM4_NM_LOCK: take a byte-range lock. During the grace
//! period after a restart only reclaims are granted.

use proto::nlm::*;

use super::{file_of, kind, owner_of, range_of, res};
use crate::rpc::Call;
use crate::state::lockmgr::LockError;
use crate::Core;

pub(super) fn lock(core: &Core, call: &Call, a: nlm4_lockargs) -> (nlm4_res, bool) {
    let file = match file_of(core, call, &a.alock.fh) {
        Ok(f) => f,
        Err(s) => return res(a.cookie, s),
    };
    let (start, end) = range_of(&a.alock);
    let st = &core.v4;
    let mut t = st.tables.lock();
    if !a.reclaim && t.grace.in_grace(st.now()) {
        return res(a.cookie, nlm4_stats::nlm4_denied_grace_period);
    }
    // NLM holders are not NFSv4 clients: the per-client cap does not
    // apply to them (the lock manager only counts v4 owners).
    let stat = match t.locks.lock(file, &owner_of(&a.alock), kind(a.exclusive), start, end, usize::MAX) {
        Ok(()) => nlm4_stats::nlm4_granted,
        Err(LockError::Conflict(_)) => nlm4_stats::nlm4_denied,
        Err(LockError::TooMany) => nlm4_stats::nlm4_denied_nolocks,
    };
    res(a.cookie, stat)
}
