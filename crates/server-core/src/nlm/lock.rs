//! NLM4_LOCK and NLM4_NM_LOCK: take a byte-range lock. During the grace
//! period after a restart only reclaims are granted. A blocking request
//! that meets a conflict waits in the lock manager (`nlm4_blocked`) and
//! is told with NLM_GRANTED once it holds the lock, when the server can
//! call clients and the file system is not shared with other servers
//! (whose locks this server is never told are released); otherwise it is
//! answered `denied` and the client asks again.

use std::sync::Arc;

use proto::nlm::*;

use super::blocked::GrantTo;
use super::calls::Target;
use super::{file_of, kind, owner_of, range_of, res};
use crate::rpc::Call;
use crate::shared_locks;
use crate::state::Wait;
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
    let may_wait = a.block && !a.reclaim && core.nlm.can_call() && export.fs.shared_store().is_none();
    let wait = may_wait.then(|| Wait {
        grant: Arc::new(GrantTo {
            target: Target::of(core, call.peer),
            cookie: a.cookie.clone(),
            lock: a.alock.clone(),
            exclusive: a.exclusive,
            msg: call.proc_ == NLM_LOCK_MSG,
        }),
        max_blocked: core.nlm.settings.max_blocked,
        max_blocked_per_host: core.nlm.settings.max_blocked_per_host,
    });
    let stat = st.nlm_lock(file, &owner, kind, start, end, a.reclaim, wait);
    // A host holding or waiting for a lock is monitored: after a restart
    // it is told to reclaim.
    if matches!(stat, nlm4_stats::nlm4_granted | nlm4_stats::nlm4_blocked) {
        super::nsm::monitor(core, call, &a.alock.caller_name);
    }
    if stat == nlm4_stats::nlm4_granted {
        // A blocked request granted while the client asked again: it
        // learns from this reply, and a GRANTED still on its way would
        // find nothing waiting (and have the lock released).
        core.nlm.forget_grant(file, &owner, start, end);
    } else {
        shared_locks::sync(&*export.fs, st, file, &owner, start, end);
    }
    // Waiting is a normal answer, not an error.
    let (r, ok) = res(a.cookie, stat);
    (r, ok || stat == nlm4_stats::nlm4_blocked)
}
