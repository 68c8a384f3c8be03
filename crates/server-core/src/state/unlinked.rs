//! Files removed while open (RFC 8881 section 18.16.4,
//! OPEN4_RESULT_PRESERVE_UNLINKED): where the backend can keep a file by
//! id after its last name is gone ([`vfs::KeepUnlinked`]), the server
//! promises at OPEN that it will, until the file's last open is closed.
//! A client then removes an open file for real instead of renaming it to
//! a hidden name.
//!
//! The hold is taken before the last name is removed (afterwards the id
//! may no longer resolve) and stored with the file's stateids, which let
//! it go when the last open or delegation of the file goes, however it
//! goes: CLOSE, lease expiry, DESTROY_CLIENTID, a new client incarnation.

use vfs::{Vfs, VfsResult};

use super::{FileKey, State4};

/// Whether OPEN may promise to keep its file after removal.
pub(crate) fn may_promise(minor: u32, fs: &dyn Vfs) -> bool {
    minor >= 1 && fs.keeps_unlinked().is_some()
}

/// Runs `remove`, which takes a name of `file` whose link count was
/// `nlink`; when that was the file's last name and the file is open, the
/// backend keeps the file for its opens.
pub(crate) fn remove_keeping(
    st: &State4,
    fs: &dyn Vfs,
    file: FileKey,
    nlink: u32,
    remove: impl FnOnce() -> VfsResult<()>,
) -> VfsResult<()> {
    let open = nlink <= 1 && st.stateids.file_held(file);
    // A file that cannot be kept is still removed: the promise was made
    // only by a backend that can keep it, and failing the REMOVE would
    // not make the open any better.
    let kept = match fs.keeps_unlinked() {
        Some(k) if open => k.keep_unlinked(file.1).ok(),
        _ => None,
    };
    remove()?;
    if let Some(kept) = kept {
        // Closed meanwhile: nothing to keep it for.
        st.stateids.keep_unlinked(file, kept);
    }
    Ok(())
}
