//! What the file-system operations that change a file or directory ask of
//! the state first (REMOVE, RENAME, SETATTR, SETXATTR, REMOVEXATTR through
//! dirops.rs): the recall of other clients' delegations and layouts.

use proto::nfs4::*;

use crate::state::{callback, delegations, FileKey, State4};

impl State4 {
    /// Recalls the delegations on `file` of clients other than `caller`
    /// before a change they would not see through their cached state
    /// (removing or renaming it, changing its attributes); NFS4ERR_DELAY
    /// while a recall is out.
    pub(crate) fn recall_delegations_for_change(
        &self,
        file: FileKey,
        caller: Option<clientid4>,
    ) -> Result<(), nfsstat4> {
        delegations::recall_conflicting(self, &mut self.lock_tables(), file, caller, true)
    }

    /// Recalls (CB_LAYOUTRECALL) the layouts of `file` of clients other
    /// than `caller` before it is truncated or removed (RFC 8881 section
    /// 12.5.5.1); a client that cannot be told loses its layout. `fh`
    /// gives the file's handle, made only when there is a layout.
    pub(crate) fn recall_layouts(&self, file: FileKey, caller: Option<clientid4>, fh: impl FnOnce() -> nfs_fh4) {
        let mut t = self.lock_tables();
        let holders = t.layouts.holders(file);
        if holders.is_empty() {
            return;
        }
        let fh = fh();
        for (client, stateid) in holders.into_iter().filter(|(c, _)| Some(*c) != caller) {
            if !callback::layout_recall(self, &mut t, client, &stateid, &fh) {
                // No way to tell it: the layout is void anyway.
                t.layouts.return_all_of_file(client, file);
            }
        }
    }
}
