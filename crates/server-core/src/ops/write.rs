//! What NFSv3 and NFSv4 WRITE share once each has checked the file and
//! its own arguments: how much one WRITE takes, where it may end, and the
//! stability asked of the backend and reported back (RFC 1813 section
//! 3.3.7, RFC 8881 section 18.32).

use vfs::{Stability, VfsError, WriteResult};

use super::Obj;
use crate::Core;

/// The part of `data` one WRITE writes: at most `wtmax` bytes. More is
/// written as a short write, which both versions allow: the reply's count
/// tells the client to send the rest. (A transport that bounds records
/// near `wtmax` makes this rare.)
pub(crate) fn within_wtmax<'d>(core: &Core, data: &'d [u8]) -> &'d [u8] {
    data.get(..core.settings().wtmax as usize).unwrap_or(data)
}

/// Where a change of `len` bytes at `offset` ends, if that is within the
/// largest file the server offers; [`VfsError::FBig`] beyond it
/// (NFS3ERR_FBIG, NFS4ERR_FBIG).
pub(crate) fn end_within(core: &Core, offset: u64, len: u64) -> Result<u64, VfsError> {
    match offset.checked_add(len) {
        Some(end) if end <= core.settings().max_file_size => Ok(end),
        _ => Err(VfsError::FBig),
    }
}

/// Writes `data` (already cut by [`within_wtmax`]) at `offset` of `o`.
/// `requested` is honoured exactly on a `sync` export, and `committed`
/// reports what the backend reached. On an `async` export the backend is
/// asked for UNSTABLE only, but the reply claims at least the requested
/// level: data acknowledged as stable can then be lost in a crash; that
/// is what `async` means (exports(5), knfsd).
pub(crate) fn write(o: &Obj, offset: u64, data: &[u8], requested: Stability) -> Result<WriteResult, VfsError> {
    let sync = o.rule.options.sync;
    let r = o.fs().write(o.id, offset, data, asked(requested, sync))?;
    let n = u32::try_from(data.len()).unwrap_or(u32::MAX);
    Ok(WriteResult { count: r.count.min(n), committed: reported(requested, r.committed, sync) })
}

fn asked(requested: Stability, sync: bool) -> Stability {
    if sync {
        requested
    } else {
        Stability::Unstable
    }
}

fn reported(requested: Stability, reached: Stability, sync: bool) -> Stability {
    if sync {
        reached
    } else {
        reached.max(requested)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Stability; 3] = [Stability::Unstable, Stability::DataSync, Stability::FileSync];

    #[test]
    fn one_write_stays_within_wtmax_and_the_largest_file() {
        let export =
            crate::Export { id: 1, path: "/m".into(), fs: std::sync::Arc::new(vfs::MemFs::new()), rules: vec![] };
        let ports = crate::ServicePorts { tcp: 2049, udp: None };
        let core = Core::new(Default::default(), vec![export], [3; 32], [7; 8], ports);
        let wtmax = core.settings().wtmax as usize;
        let data = vec![0u8; wtmax + 1];
        assert_eq!(within_wtmax(&core, &data).len(), wtmax);
        assert_eq!(within_wtmax(&core, &data[..3]).len(), 3);
        let max = core.settings().max_file_size;
        assert_eq!(end_within(&core, max - 1, 1), Ok(max));
        assert_eq!(end_within(&core, max, 1), Err(VfsError::FBig));
        assert_eq!(end_within(&core, u64::MAX, 1), Err(VfsError::FBig));
    }

    #[test]
    fn a_sync_export_asks_for_and_reports_what_happened() {
        for requested in ALL {
            assert_eq!(asked(requested, true), requested);
            for reached in ALL {
                assert_eq!(reported(requested, reached, true), reached);
            }
        }
    }

    #[test]
    fn an_async_export_writes_unstable_and_claims_what_was_asked() {
        for requested in ALL {
            assert_eq!(asked(requested, false), Stability::Unstable);
            assert_eq!(reported(requested, Stability::Unstable, false), requested);
            assert_eq!(reported(requested, Stability::FileSync, false), Stability::FileSync);
        }
    }
}
