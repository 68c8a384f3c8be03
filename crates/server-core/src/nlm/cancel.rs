//! NLM4_CANCEL: cancel a blocked request. A request still waiting leaves
//! its queue; one granted meanwhile, whose NLM_GRANTED the client has not
//! acknowledged, has its lock released. Either way the answer is
//! `granted`; `denied` when there was no such request.

use proto::nlm::*;

use super::{file_of, kind, owner_of, range_of, res};
use crate::rpc::Call;
use crate::Core;

pub(super) fn cancel(core: &Core, call: &Call, a: nlm4_cancargs) -> (nlm4_res, bool) {
    let file = match file_of(core, call, &a.alock.fh) {
        Ok(f) => f,
        Err(s) => return res(a.cookie, s),
    };
    let (start, end) = range_of(&a.alock);
    let (owner, kind) = (owner_of(&a.alock), kind(a.exclusive));
    if core.v4.nlm_cancel(file, &owner, kind, start, end) {
        return res(a.cookie, nlm4_stats::nlm4_granted);
    }
    if core.nlm.forget_grant(file, &owner, start, end) {
        core.v4.nlm_unlock(file, &owner, start, end);
        return res(a.cookie, nlm4_stats::nlm4_granted);
    }
    res(a.cookie, nlm4_stats::nlm4_denied)
}
