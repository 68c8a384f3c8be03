//! NLM4_UNLOCK: release a range; unlocking what is not held is granted.

use proto::nlm::*;

use super::{file_of, owner_of, range_of, res};
use crate::rpc::Call;
use crate::Core;

pub(super) fn unlock(core: &Core, call: &Call, a: nlm4_unlockargs) -> (nlm4_res, bool) {
    let file = match file_of(core, call, &a.alock.fh) {
        Ok(f) => f,
        Err(s) => return res(a.cookie, s),
    };
    let (start, end) = range_of(&a.alock);
    core.v4.tables.lock().locks.unlock(file, &owner_of(&a.alock), start, end);
    res(a.cookie, nlm4_stats::nlm4_granted)
}
