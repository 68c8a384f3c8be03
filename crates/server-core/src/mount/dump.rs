//! DUMP: the mount list (RFC 1813 section 5.2.2).

use proto::mount3::mountbody;

use crate::rpc::XdrList;
use crate::Core;

pub(super) fn dump(core: &Core) -> XdrList<mountbody> {
    let list = core.mounts.lock();
    XdrList(list.iter().map(|(h, d)| mountbody { ml_hostname: h.clone(), ml_directory: d.clone() }).collect())
}
