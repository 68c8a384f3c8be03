//! NLM4_UNLOCK: release a range; unlocking what is not held is granted.

use proto::nlm::*;

use super::{file_of, owner_of, range_of, res};
use crate::rpc::Call;
use crate::shared_locks;
use crate::Core;

pub(super) fn unlock(core: &Core, call: &Call, a: nlm4_unlockargs) -> (nlm4_res, bool) {
    let file = match file_of(core, call, &a.alock.fh) {
        Ok(f) => f,
        Err(s) => return res(a.cookie, s),
    };
    let (start, end) = range_of(&a.alock);
    let owner = owner_of(&a.alock);
    core.v4.nlm_unlock(file, &owner, start, end);
    if let Some(export) = core.export_by_id(file.0) {
        shared_locks::sync(&*export.fs, &core.v4, file, &owner, start, end);
    }
    res(a.cookie, nlm4_stats::nlm4_granted)
}
