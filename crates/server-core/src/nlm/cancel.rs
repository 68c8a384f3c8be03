//! NLM4_CANCEL: cancel a blocked request. No request ever waits here
//! (blocking locks are answered at once), so there is nothing to cancel
//! and the RFC-era answer for that is `denied`.

use proto::nlm::*;

use super::{file_of, res};
use crate::rpc::Call;
use crate::Core;

pub(super) fn cancel(core: &Core, call: &Call, a: nlm4_cancargs) -> (nlm4_res, bool) {
    match file_of(core, call, &a.alock.fh) {
        Ok(_) => res(a.cookie, nlm4_stats::nlm4_denied),
        Err(s) => res(a.cookie, s),
    }
}
