//! UMNT: forget one mount of the caller (RFC 1813 section 5.2.3). Always
//! succeeds (the procedure has no result); only the caller's own entry can
//! be removed.

use bytes::Bytes;

use crate::rpc::Call;
use crate::Core;

pub(super) fn umnt(core: &Core, call: &Call, path: &Bytes) {
    let host = super::host_name(call.peer);
    core.mounts.lock().remove(&host, path);
}
