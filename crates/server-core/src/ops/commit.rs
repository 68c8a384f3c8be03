//! What NFSv3 and NFSv4 COMMIT share once each has checked the file and
//! its own arguments: the flush, and the write verifier's fate when it
//! fails (RFC 1813 section 3.3.21, RFC 8881 section 18.3). `count == 0`
//! means "to the end of the file" in both (the backend contract says the
//! same).

use vfs::{FileId, VfsError};

use super::Obj;
use crate::Core;

/// Flushes `count` bytes at `offset` of `o` to stable storage and returns
/// the write verifier for the reply. A backend error here reports a write
/// that failed after it was acknowledged as UNSTABLE: it goes back to the
/// client, and [`failed`] decides the verifier's fate.
pub(crate) fn commit(core: &Core, o: &Obj, offset: u64, count: u32) -> Result<[u8; 8], VfsError> {
    flush_then_verifier(core, &o.export.path, o.id, || o.fs().commit(o.id, offset, count))
}

/// [`commit`] around the backend's `flush`. A failure changes the verifier
/// from the value read before the flush, so that failures that overlap
/// move it once. A success returns the verifier read after the flush: a
/// concurrent COMMIT's failure may have taken this one's lost data with
/// it (the file system reports a write-back error to one flush only), and
/// its new verifier makes the client resend rather than trust a COMMIT
/// that did not see the loss.
fn flush_then_verifier(
    core: &Core,
    export: &str,
    fileid: FileId,
    flush: impl FnOnce() -> Result<(), VfsError>,
) -> Result<[u8; 8], VfsError> {
    let before = core.write_verifier();
    flush().inspect_err(|e| {
        failed(core, before, export, fileid, e);
    })?;
    Ok(core.write_verifier())
}

/// Handles COMMIT's backend error `e` beyond its status: after a failed
/// write-back ([`VfsError::WriteBack`]), data acknowledged as UNSTABLE may
/// be lost, and a later COMMIT could succeed without it, so the write
/// verifier `verf` (the one this COMMIT would have returned) is changed:
/// every client holding uncommitted data then resends it. Any other error
/// (a stale handle, a file system that cannot flush, a cluster out of
/// reach) left the data where it was. Returns whether it changed.
fn failed(core: &Core, verf: [u8; 8], export: &str, fileid: FileId, e: &VfsError) -> bool {
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

    /// Another COMMIT's write-back fails while this one flushes, and this
    /// flush succeeds (the error went to the other): the reply carries the
    /// changed verifier, so the client resends what it wrote before.
    #[test]
    fn a_commit_overlapping_a_failed_one_answers_the_new_verifier() {
        let core = core();
        let before = core.write_verifier();
        let verf = flush_then_verifier(&core, "/m", 2, || {
            failed(&core, before, "/m", 2, &VfsError::WriteBack(Errno::EIO));
            Ok(())
        })
        .unwrap();
        assert_ne!(verf, before);
        assert_eq!(verf, core.write_verifier());
        // Undisturbed, the verifier stays.
        assert_eq!(flush_then_verifier(&core, "/m", 2, || Ok(())).unwrap(), verf);
    }
}
