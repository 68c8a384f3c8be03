//! What NFSv3 and NFSv4 COMMIT share: the write verifier's fate when the
//! backend's flush fails.

use vfs::{FileId, VfsError};

use crate::Core;

/// Handles COMMIT's backend error `e` beyond its status: after a failed
/// write-back ([`VfsError::WriteBack`]), data acknowledged as UNSTABLE may
/// be lost, and a later COMMIT could succeed without it, so the write
/// verifier `verf` (the one this COMMIT would have returned) is changed:
/// every client holding uncommitted data then resends it. Any other error
/// (a stale handle, a file system that cannot flush, a cluster out of
/// reach) left the data where it was. Returns whether it changed.
pub(crate) fn failed(core: &Core, verf: [u8; 8], export: &str, fileid: FileId, e: &VfsError) -> bool {
    let VfsError::WriteBack(errno) = e else {
        return false;
    };
    tracing::error!(export, fileid, "COMMIT failed, unstable data may be lost; changing the write verifier: {errno}");
    core.change_write_verifier(verf);
    true
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use vfs::Errno;

    use super::*;
    use crate::{Export, ServicePorts};

    fn core() -> Core {
        let export = Export { id: 1, path: "/m".into(), fs: Arc::new(vfs::MemFs::new()), rules: vec![] };
        Core::new(Default::default(), vec![export], [3; 32], [7; 8], ServicePorts { tcp: 2049, udp: None })
    }

    #[test]
    fn only_a_failed_write_back_changes_the_verifier() {
        let core = core();
        let verf = core.write_verifier();
        for e in [VfsError::Io(Errno::EIO), VfsError::NoSpace, VfsError::Stale, VfsError::Delay, VfsError::Invalid] {
            assert!(!failed(&core, verf, "/m", 2, &e), "{e}");
            assert_eq!(core.write_verifier(), verf, "{e}");
        }
        assert!(failed(&core, verf, "/m", 2, &VfsError::WriteBack(Errno::EIO)));
        let changed = core.write_verifier();
        assert_ne!(changed, verf);
        // A second failure seen by a COMMIT that started before the first
        // changed it is the same loss: the verifier moves once.
        assert!(failed(&core, verf, "/m", 2, &VfsError::WriteBack(Errno::EIO)));
        assert_eq!(core.write_verifier(), changed);
    }
}
