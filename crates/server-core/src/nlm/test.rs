//! NLM4_TEST: would this lock be granted? Reports the conflicting holder.

use proto::nlm::*;

use super::{file_of, kind, owner_of, range_of};
use crate::rpc::Call;
use crate::shared_locks;
use crate::state::lockmgr::{LockKind, LockOwner};
use crate::Core;

pub(super) fn test(core: &Core, call: &Call, a: nlm4_testargs) -> (nlm4_testres, bool) {
    let file = match file_of(core, call, &a.alock.fh) {
        Ok(f) => f,
        Err(s) => return (nlm4_testres { cookie: a.cookie, stat: nlm4_testrply::default(s) }, false),
    };
    let (start, end) = range_of(&a.alock);
    let (owner, kind) = (owner_of(&a.alock), kind(a.exclusive));
    let mut conflict = core.v4.nlm_test(file, &owner, kind, start, end);
    if conflict.is_none() {
        // Another head's clients' locks are only in the shared store.
        if let Some(export) = core.export_by_id(file.0) {
            match shared_locks::test(&*export.fs, file.1, &owner, kind, start, end) {
                Ok(c) => conflict = c,
                Err(_) => {
                    return (
                        nlm4_testres { cookie: a.cookie, stat: nlm4_testrply::default(nlm4_stats::nlm4_failed) },
                        false,
                    )
                }
            }
        }
    }
    let stat = match conflict {
        None => nlm4_testrply::default(nlm4_stats::nlm4_granted),
        Some(l) => {
            // A v4 holder has no svid; its owner bytes stand in for the
            // handle so the client at least sees who it is.
            let (svid, oh) = match &l.owner {
                LockOwner::Nlm { svid, oh, .. } => (*svid, oh.clone()),
                LockOwner::V4 { owner, .. } => (0, owner.clone()),
            };
            let l_len = if l.end == u64::MAX { 0 } else { l.end - l.start + 1 };
            nlm4_testrply::nlm4_denied(nlm4_holder {
                exclusive: l.kind == LockKind::Write,
                svid,
                oh,
                l_offset: l.start,
                l_len,
            })
        }
    };
    (nlm4_testres { cookie: a.cookie, stat }, true)
}
