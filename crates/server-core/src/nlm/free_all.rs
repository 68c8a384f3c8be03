//! NLM4_FREE_ALL: a client host restarted; drop every lock it held.

use proto::nlm::*;

use crate::Core;

pub(super) fn free_all(core: &Core, a: nlm4_notify) -> ((), bool) {
    release_host(core, &a.name);
    ((), true)
}

/// Releases all NLM locks of the host `name` (also on SM_NOTIFY).
pub(crate) fn release_host(core: &Core, name: &[u8]) {
    core.v4.nlm_free_all(name);
    core.nlm.forget_host(name);
    tracing::info!(host = %String::from_utf8_lossy(name), "released the NLM locks of a restarted client");
}
