//! NLM4_SHARE / NLM4_UNSHARE: DOS-style share reservations. nfsx
//! records none (they only bind other NLM SHARE callers, which POSIX
//! clients never are) and grants both, outside the grace period.

use proto::nlm::*;

use super::file_of;
use crate::rpc::Call;
use crate::Core;

pub(super) fn share(core: &Core, call: &Call, a: nlm4_shareargs, take: bool) -> (nlm4_shareres, bool) {
    let stat = match file_of(core, call, &a.share.fh) {
        Err(s) => s,
        Ok(_) if take && core.v4.nlm_grace_refuses(a.reclaim) => nlm4_stats::nlm4_denied_grace_period,
        Ok(_) => nlm4_stats::nlm4_granted,
    };
    (nlm4_shareres { cookie: a.cookie, stat, sequence: 0 }, stat == nlm4_stats::nlm4_granted)
}
