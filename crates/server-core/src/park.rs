//! Calls that wait for an event. The core never blocks a thread for one:
//! a call that must wait (today an NFSv4 GETATTR waiting for a write
//! delegation's holder to answer CB_GETATTR, RFC 8881 section 10.4.3)
//! comes back to the transport as a [`Parked`] in its [`Outcome`], with
//! the time it may wait. The record that brings the awaited answer names
//! the call in [`Outcome::woken`]; the transport then, or when the time
//! has passed, hands it back with [`Core::resume`], which runs it on from
//! the operation that waited and gives the call's outcome.

use std::time::Duration;

use xdr::Encoder;

use crate::drc::Held;
use crate::ops::v4::run::Progress;
use crate::rpc::{Auth, Call};
use crate::{Core, Outcome, PeerInfo};

/// Names one parked call while it waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WaitId(pub(crate) u64);

/// What a GETATTR waiting on a write delegation's holder learnt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HolderAnswer {
    /// The holder's size and change of the file.
    Attrs { size: u64, change: u64 },
    /// The holder answered with an error: the server's attributes stand.
    CannotTell,
    /// No answer in time.
    NoAnswer,
}

/// A call waiting for an event, with everything it needs to run on.
pub struct Parked {
    xid: u32,
    prog: u32,
    vers: u32,
    proc_: u32,
    auth: Auth,
    /// Its duplicate request cache entry, in progress meanwhile.
    pub(crate) ticket: Option<Held>,
    progress: Box<Progress>,
    timeout: Duration,
}

impl std::fmt::Debug for Parked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parked").field("xid", &self.xid).field("progress", &self.progress).finish()
    }
}

impl Parked {
    pub(crate) fn new(core: &Core, call: &Call, progress: Box<Progress>) -> Parked {
        Parked {
            xid: call.xid,
            prog: call.prog,
            vers: call.vers,
            proc_: call.proc_,
            auth: call.auth.clone(),
            ticket: None,
            progress,
            timeout: Duration::from_millis(core.v4.settings.cb_getattr_wait_ms.into()),
        }
    }

    /// What [`Outcome::woken`] calls this call when its event comes.
    pub fn wait_id(&self) -> WaitId {
        self.progress.wait
    }

    /// How long it may wait: resume it after this even without its event.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }
}

impl Core {
    /// Runs parked call `parked` on (its event came, or its timeout
    /// passed); `peer` is the connection it came on. The outcome may be
    /// parked again (a later operation of the compound waits in turn).
    pub fn resume(&self, parked: Box<Parked>, peer: &PeerInfo) -> Outcome {
        let Parked { xid, prog, vers, proc_, auth, ticket, progress, .. } = *parked;
        let answer = crate::state::callback::take_answer(&self.v4, progress.wait);
        let call = Call { xid, prog, vers, proc_, auth, peer, nowait: false };
        let mut e = Encoder::with_capacity(256);
        let dispatched = {
            let _scope = vfs::RequestScope::enter();
            crate::ops::v4::run::resume(self, &call, *progress, answer, &mut e)
        };
        let mut out = self.outcome_of(&call, dispatched, e).unwrap_or_default();
        self.settle(ticket.map(|t| self.drc.reattach(t)), &mut out);
        self.seal_for(&call, &mut out);
        self.release_shared_locks();
        self.send_nlm_calls();
        out
    }
}
