//! NLM4_SHARE / NLM4_UNSHARE: DOS-style share reservations (XNFS chapter
//! 10), kept with the NFSv4 opens of the file and enforced both ways
//! (`state::nlm_shares`). Outside the grace period, or as a `reclaim`
//! within it. On a file system other servers share, the store keeps only
//! NFSv4's modes: a share there that denies anything is refused rather
//! than granted without effect on the other servers.

use proto::nlm::*;

use super::file_of;
use crate::rpc::Call;
use crate::state::nlm_shares::NlmShare;
use crate::Core;

pub(super) fn share(core: &Core, call: &Call, a: nlm4_shareargs, take: bool) -> (nlm4_shareres, bool) {
    let stat = match file_of(core, call, &a.share.fh) {
        Err(s) => s,
        Ok(file) if !take => {
            core.v4.nlm_unshare(file, &a.share.caller_name, &a.share.oh);
            nlm4_stats::nlm4_granted
        }
        Ok(file) => {
            let shared_store = core.export_by_id(file.0).is_some_and(|e| e.fs.shared_store().is_some());
            let (access, deny) = (a.share.access as u32, a.share.mode as u32);
            if shared_store && deny != 0 {
                tracing::debug!("NLM SHARE denying access refused: the export's store shares only NFSv4 share modes");
                nlm4_stats::nlm4_failed
            } else {
                let share = NlmShare { caller: a.share.caller_name.clone(), oh: a.share.oh.clone(), access, deny };
                let stat = core.v4.nlm_share(file, share, a.reclaim);
                if stat == nlm4_stats::nlm4_granted {
                    super::nsm::monitor(core, call, &a.share.caller_name);
                }
                stat
            }
        }
    };
    (nlm4_shareres { cookie: a.cookie, stat, sequence: 0 }, stat == nlm4_stats::nlm4_granted)
}
