//! EXPORT: every export with the client patterns allowed to mount it
//! (RFC 1813 section 5.2.5), as `showmount -e` prints it.

use bytes::Bytes;
use proto::mount3::{exportnode, groupnode};

use crate::rpc::XdrList;
use crate::Core;

/// `name` in mount3.x is `string<MNTNAMLEN>`.
const MNTNAMLEN: usize = 255;

pub(super) fn export(core: &Core) -> XdrList<exportnode> {
    XdrList(
        core.exports
            .iter()
            .map(|x| exportnode {
                ex_dir: Bytes::from(x.path.clone()),
                ex_groups: x
                    .rules
                    .iter()
                    .map(|r| {
                        let mut name = r.pattern.clone().into_bytes();
                        name.truncate(MNTNAMLEN);
                        groupnode { gr_name: Bytes::from(name) }
                    })
                    .collect(),
            })
            .collect(),
    )
}
