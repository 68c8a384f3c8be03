//! Asynchronous COPYs (RFC 7862 sections 15.2.3, 15.8, 15.9 and 16.1) as
//! COPY, OFFLOAD_STATUS and OFFLOAD_CANCEL use them, and the CB_OFFLOAD
//! that reports one's end.

use std::sync::Arc;

use proto::nfs4::*;

use crate::state::offload::CopyJob;
use crate::state::{callback, State4};

impl State4 {
    /// Starts an asynchronous COPY for `client` (RFC 7862 section
    /// 15.2.3): its job, named by a new copy stateid; `None` when the
    /// client has no back channel for CB_OFFLOAD or `max_async_copies`
    /// run already.
    pub(crate) fn start_offload(&self, client: clientid4) -> Option<Arc<CopyJob>> {
        let mut t = self.lock_tables();
        if !callback::has_backchannel(self, client) || t.offloads.running() >= self.settings.max_async_copies {
            return None;
        }
        // A copy stateid names no file's state: it is kept with the
        // offloads, never looked up in a shard.
        let other = t.stateids.new_other(self.boot, 0);
        Some(t.offloads.start(client, other, self.now(), self.lease()))
    }

    /// The copy `client`'s copy stateid `stateid` names (OFFLOAD_STATUS,
    /// RFC 7862 section 15.9), if it is known.
    pub(crate) fn offload_status(&self, client: clientid4, stateid: &stateid4) -> Option<Arc<CopyJob>> {
        self.lock_tables().offloads.get(client, stateid)
    }

    /// OFFLOAD_CANCEL (RFC 7862 section 15.8) of `client`'s copy
    /// `stateid`, or of one that could not be started: false if no such
    /// copy is known.
    pub(crate) fn offload_cancel(&self, client: clientid4, stateid: &stateid4) -> bool {
        self.lock_tables().offloads.cancel(client, stateid)
    }

    /// CB_OFFLOAD (RFC 7862 section 16.1) to `client` with a copy's end;
    /// false if it could not be sent.
    pub(crate) fn cb_offload(&self, client: clientid4, args: CB_OFFLOAD4args) -> bool {
        callback::offload(self, &mut self.lock_tables(), client, args)
    }
}
