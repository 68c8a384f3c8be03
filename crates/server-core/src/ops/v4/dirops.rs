//! What the NFSv4 file-system operations share: the read-only and type
//! checks, change_info4, and the recalls before a change. The owner and
//! attributes of new objects follow the rules NFSv3 shares
//! (`ops::create`).

use proto::nfs4::*;
use vfs::{Attrs, FileType, Vfs};

use super::{Compound, Obj};
pub(crate) use crate::state::dir_delegs::Change;

/// Every change on a read-only export.
pub(crate) fn writable(o: &Obj) -> Result<(), nfsstat4> {
    if o.read_only() {
        tracing::debug!(export = %o.export.path, "change refused on read-only export");
        return Err(nfsstat4::NFS4ERR_ROFS);
    }
    Ok(())
}

/// The current handle must be a directory: symbolic links get
/// NFS4ERR_SYMLINK where the RFC says so (LOOKUP), NFS4ERR_NOTDIR
/// otherwise.
pub(crate) fn directory(o: &Obj, symlink_err: bool) -> Result<(), nfsstat4> {
    match o.attrs.ftype {
        FileType::Directory => Ok(()),
        FileType::Symlink if symlink_err => Err(nfsstat4::NFS4ERR_SYMLINK),
        _ => Err(nfsstat4::NFS4ERR_NOTDIR),
    }
}

/// change_info4 of a directory changed by an operation: `before` is its
/// snapshot, `after` read now. Not atomic: other changes may fall between.
pub(crate) fn cinfo(before: &Attrs, fs: &dyn Vfs, id: vfs::FileId) -> change_info4 {
    let after = fs.getattr(id).map_or(before.change, |a| a.change);
    change_info4 { atomic: false, before: before.change, after }
}

/// An object of the wrong type with no more specific error: NFSv4.0 says
/// NFS4ERR_INVAL, NFSv4.1 NFS4ERR_WRONG_TYPE (RFC 8881 section 15.1.2.9).
pub(crate) fn wrong_type(minor: u32) -> nfsstat4 {
    if minor == 0 {
        nfsstat4::NFS4ERR_INVAL
    } else {
        nfsstat4::NFS4ERR_WRONG_TYPE
    }
}

/// Recalls other clients' layouts of `file` before it is truncated or
/// removed (RFC 8881 section 12.5.5.1). Nothing waits for the returns:
/// the data servers serve the same store, so I/O through a recalled
/// layout cannot reach a file other than the one the metadata server
/// sees; the recall tells clients their layout no longer describes it.
pub(crate) fn recall_layouts(cx: &Compound, file: crate::state::FileKey) {
    let fh = || cx.encode_fh(super::Fh::Obj { export_id: file.0, id: file.1, generation: file.2 });
    cx.state().recall_layouts(file, cx.session_client(), fh);
}

/// Before `change` to directory `dir`: other clients' directory
/// delegations that did not ask to hear of it are recalled (RFC 8881
/// section 10.9.2); NFS4ERR_DELAY while one is out. The holder's own
/// change recalls nothing.
pub(crate) fn before_dir_change(cx: &Compound, dir: &Obj, change: Change) -> Result<(), nfsstat4> {
    let key = (dir.export.id, dir.id, dir.attrs.generation);
    cx.state().before_dir_change(key, change, cx.session_client())
}

/// Recalls other clients' delegations on `file` before a change they
/// would not see through their cached state (removing or renaming it,
/// changing its attributes); NFS4ERR_DELAY while a recall is out.
pub(crate) fn recall_delegations(cx: &Compound, file: crate::state::FileKey) -> Result<(), nfsstat4> {
    cx.state().recall_delegations_for_change(file, cx.session_client())
}
