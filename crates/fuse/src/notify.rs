//! Changes the server notified in a delegated directory (NFSv4.1
//! CB_NOTIFY), passed on to the kernel: a name added, removed or renamed
//! drops the kernel's entry of it and the directory's attributes and kept
//! listing; an entry's new attributes drop the kernel's attributes of its
//! node. The kernel then asks the mount again, which answers from the
//! client's caches the notification already updated: so a mount that
//! lets the kernel keep names and attributes for minutes (`--attr-ttl`)
//! still shows another client's change as soon as it is notified.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use client::{Client, DirNotice};
use fuser::INodeNo;
use proto::nfs3::nfs_fh3;

use crate::inodes::Inodes;
use crate::names::Names;

/// One thing for the kernel to drop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Inval {
    /// The entry `name` of directory node `parent`.
    Entry { parent: u64, name: Bytes },
    /// A node's attributes, and with `data` its cached pages (a
    /// directory's kept listing).
    Node { ino: u64, data: bool },
}

/// What the kernel must drop for `notices` about the directory node
/// `dir` (None: the kernel holds no node of it), given the nodes of
/// handles (`node_of`) and of names (`named`) it holds.
pub(crate) fn invalidations(
    dir: Option<u64>,
    notices: &[DirNotice],
    node_of: impl Fn(&Bytes) -> Option<u64>,
    named: impl Fn(u64, &[u8]) -> Option<u64>,
) -> Vec<Inval> {
    let mut out = Vec::new();
    let mut dir_changed = false;
    for n in notices {
        match n {
            DirNotice::Name(name) => {
                if let Some(parent) = dir {
                    out.push(Inval::Entry { parent, name: name.clone() });
                }
                dir_changed = true;
            }
            DirNotice::Child { name, handle, .. } => {
                let ino = handle.as_ref().and_then(&node_of).or_else(|| dir.and_then(|d| named(d, name)));
                if let Some(ino) = ino {
                    out.push(Inval::Node { ino, data: false });
                }
            }
            DirNotice::Dir(_) | DirNotice::All => dir_changed = true,
        }
    }
    if let (Some(ino), true) = (dir, dir_changed) {
        out.push(Inval::Node { ino, data: true });
    }
    out.dedup();
    out
}

/// Makes `client`'s notifications reach the kernel through `notifier`
/// (set once the mount runs).
pub(crate) fn listen(
    client: &Client,
    inodes: Arc<Inodes>,
    names: Arc<Names>,
    notifier: Arc<OnceLock<fuser::Notifier>>,
) {
    client.on_dir_change(Arc::new(move |dir: &nfs_fh3, notices: &[DirNotice]| {
        let Some(n) = notifier.get().cloned() else { return };
        let node_of = |fh: &Bytes| inodes.known(&nfs_fh3 { data: fh.clone() });
        let named = |parent: u64, name: &[u8]| std::str::from_utf8(name).ok().and_then(|s| names.get(parent, s));
        let todo = invalidations(inodes.known(dir), notices, node_of, named);
        if todo.is_empty() {
            return;
        }
        // The kernel takes the directory's lock to drop an entry, which a
        // request of the mount may hold while it waits for its answer:
        // not on the task that answers the server's callback.
        tokio::task::spawn_blocking(move || {
            for i in todo {
                let r = match &i {
                    Inval::Entry { parent, name } => n.inval_entry(INodeNo(*parent), OsStr::from_bytes(name)),
                    Inval::Node { ino, data: true } => n.inval_inode(INodeNo(*ino), 0, 0),
                    Inval::Node { ino, data: false } => n.inval_inode(INodeNo(*ino), -1, 0),
                };
                // ENOENT: the kernel had dropped it already.
                if let Err(e) = r {
                    tracing::debug!(?i, "kernel cache invalidation: {e}");
                }
            }
        });
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use client::Fattr;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    #[test]
    fn names_drop_entries_and_the_directory_attributes_drop_nodes() {
        let notices = [
            DirNotice::Name(b("gone")),
            DirNotice::Name(b("new")),
            DirNotice::Child { name: b("new"), handle: Some(b("fh-new")), attrs: Some(Fattr::default()) },
            DirNotice::Child { name: b("chmod"), handle: None, attrs: None },
            DirNotice::Dir(None),
        ];
        let node_of = |fh: &Bytes| (&fh[..] == b"fh-new").then_some(30);
        let named = |parent: u64, name: &[u8]| (parent == 5 && name == b"chmod").then_some(40);
        assert_eq!(
            invalidations(Some(5), &notices, node_of, named),
            vec![
                Inval::Entry { parent: 5, name: b("gone") },
                Inval::Entry { parent: 5, name: b("new") },
                Inval::Node { ino: 30, data: false },
                Inval::Node { ino: 40, data: false },
                Inval::Node { ino: 5, data: true },
            ]
        );
    }

    #[test]
    fn nothing_for_nodes_the_kernel_does_not_hold() {
        let notices = [DirNotice::Name(b("x")), DirNotice::Child { name: b("x"), handle: Some(b("h")), attrs: None }];
        assert_eq!(invalidations(None, &notices, |_| None, |_, _| None), vec![]);
        let only_attrs = [DirNotice::Child { name: b("x"), handle: Some(b("h")), attrs: None }];
        assert_eq!(invalidations(Some(1), &only_attrs, |_| None, |_, _| None), vec![], "the directory is unchanged");
    }
}
