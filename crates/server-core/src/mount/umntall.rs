//! UMNTALL: forget every mount of the caller (RFC 1813 section 5.2.4).

use crate::rpc::Call;
use crate::Core;

pub(super) fn umntall(core: &Core, call: &Call) {
    let host = super::host_name(call.peer);
    core.mounts.lock().remove_host(&host);
}
