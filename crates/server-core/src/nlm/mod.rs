//! NLM version 4 (the Network Lock Manager of the Open Group's XNFS,
//! with 64-bit offsets) and NSM, the status monitor that tells lock
//! managers when a peer restarted. NFSv3 clients lock through NLM; the
//! locks go into the same lock manager as NFSv4 LOCK, so a v3 and a v4
//! client contending for one byte range see each other.
//!
//! The asynchronous procedures (`_MSG`) run as their synchronous
//! counterparts, answer with an empty reply and send the result as a call
//! of the matching `_RES` procedure to the client's own lock manager
//! ([`calls`]); a server without a transport for such calls
//! ([`crate::NoOutbound`]) answers them PROC_UNAVAIL. `_RES` calls sent
//! to us are taken and ignored (we make no `_MSG` calls), but for
//! GRANTED_RES, the answer to our GRANTED_MSG.
//!
//! A blocking LOCK that meets a conflict waits in the lock manager
//! (`nlm4_blocked`, [`blocked`]) and is granted when the range comes free,
//! in arrival order, whoever held it (an NFSv4 client's LOCKU, CLOSE or
//! lapsed lease frees it too); the client is told with NLM_GRANTED
//! ([`calls`]). Without calls to clients, or on a file system other
//! servers share, it is answered `denied` and the client asks again.

pub(crate) mod blocked;
pub(crate) mod calls;
mod cancel;
mod free_all;
mod lock;
mod msg;
pub(crate) mod nsm;
pub(crate) mod settings;
mod share;
mod test;
mod unlock;

use bytes::Bytes;
use proto::nlm::*;
use vfs::VfsError;
use xdr::{Decode, Decoder, Encoder};

use crate::rpc::{run, Call, Dispatched};
use crate::state::lockmgr::{LockKind, LockOwner};
use crate::state::FileKey;
use crate::{Core, Denied};

pub const PROGRAM: u32 = NLM_PROG;
pub const VERSION: u32 = 4;

pub(crate) fn dispatch(core: &Core, call: &Call, d: &mut Decoder, e: &mut Encoder) -> Dispatched {
    let void = |_: &mut Decoder| Ok(());
    match call.proc_ {
        0 => run(call, d, e, "nlm4.NULL", void, |()| ((), true)),
        NLM_TEST => run(call, d, e, "nlm4.TEST", nlm4_testargs::decode, |a| test::test(core, call, a)),
        NLM_LOCK => run(call, d, e, "nlm4.LOCK", nlm4_lockargs::decode, |a| lock::lock(core, call, a)),
        NLM_CANCEL => run(call, d, e, "nlm4.CANCEL", nlm4_cancargs::decode, |a| cancel::cancel(core, call, a)),
        NLM_UNLOCK => run(call, d, e, "nlm4.UNLOCK", nlm4_unlockargs::decode, |a| unlock::unlock(core, call, a)),
        // GRANTED is what a server calls on a client; we are no client,
        // so any GRANTED sent to us matches nothing.
        NLM_GRANTED => run(call, d, e, "nlm4.GRANTED", nlm4_testargs::decode, |a| {
            (nlm4_res { cookie: a.cookie, stat: nlm4_stat { stat: nlm4_stats::nlm4_denied } }, false)
        }),
        NLM_SHARE => run(call, d, e, "nlm4.SHARE", nlm4_shareargs::decode, |a| share::share(core, call, a, true)),
        NLM_UNSHARE => run(call, d, e, "nlm4.UNSHARE", nlm4_shareargs::decode, |a| share::share(core, call, a, false)),
        NLM_NM_LOCK => run(call, d, e, "nlm4.NM_LOCK", nlm4_lockargs::decode, |a| lock::lock(core, call, a)),
        NLM_FREE_ALL => run(call, d, e, "nlm4.FREE_ALL", nlm4_notify::decode, |a| free_all::free_all(core, a)),
        NLM_TEST_MSG..=NLM_GRANTED_MSG if core.nlm.can_call() => msg::dispatch(core, call, d, e),
        NLM_TEST_RES..=NLM_GRANTED_RES => msg::result(core, call, d, e),
        _ => Dispatched::ProcUnavail { label: "nlm4.unknown" },
    }
}

/// Resolves an NLM file handle (an NFSv3 handle) to the file state is
/// kept for, refusing clients the export does not admit.
pub(crate) fn file_of(core: &Core, call: &Call, fh: &Bytes) -> Result<FileKey, nlm4_stats> {
    let h = core.fh.decode(fh).map_err(|_| nlm4_stats::nlm4_stale_fh)?;
    let export = core.export_by_id(h.export_id).ok_or(nlm4_stats::nlm4_stale_fh)?;
    match core.rule_for(export, call.peer, "NLM request") {
        Ok(_) => {}
        Err(Denied::NoRule | Denied::InsecurePort | Denied::TransportSecurity) => return Err(nlm4_stats::nlm4_denied),
    }
    match export.fs.getattr(h.fileid) {
        Ok(a) if a.generation == h.generation => Ok((h.export_id, h.fileid, h.generation)),
        Ok(_) | Err(VfsError::NotFound | VfsError::Stale) => Err(nlm4_stats::nlm4_stale_fh),
        Err(_) => Err(nlm4_stats::nlm4_failed),
    }
}

/// The owner of an NLM lock: the calling host, its process and handle.
pub(crate) fn owner_of(l: &nlm4_lock) -> LockOwner {
    LockOwner::Nlm { caller: l.caller_name.clone(), svid: l.svid, oh: l.oh.clone() }
}

/// NLM's (offset, length) as an inclusive range: length 0 means "to the
/// end of the file"; ranges running past 2^64 are clamped there.
pub(crate) fn range_of(l: &nlm4_lock) -> (u64, u64) {
    if l.l_len == 0 {
        return (l.l_offset, u64::MAX);
    }
    (l.l_offset, l.l_offset.saturating_add(l.l_len - 1))
}

pub(crate) fn kind(exclusive: bool) -> LockKind {
    if exclusive {
        LockKind::Write
    } else {
        LockKind::Read
    }
}

pub(crate) fn res(cookie: Bytes, stat: nlm4_stats) -> (nlm4_res, bool) {
    (nlm4_res { cookie, stat: nlm4_stat { stat } }, stat == nlm4_stats::nlm4_granted)
}
