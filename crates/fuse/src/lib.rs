//! `nfsx mount`: an NFS export as a local directory, through FUSE, over
//! nfsx's own client (NFSv3, NFSv4.1 or NFSv4.2), so ordinary programs, shells and containers
//! use an NFS server on a machine whose kernel has no NFS client.
//!
//! The kernel's FUSE requests become client calls by file handle
//! ([`fs::NfsFs`]); node ids map to handles in [`inodes::Inodes`]; every
//! open of a file shares one client file ([`files::OpenFiles`]), so writes
//! are cached (write-behind) until close, fsync or a stat, as an NFS client
//! in the kernel does, and reads are read ahead. Attributes and names are
//! trusted for `attr_ttl`; a file is revalidated at every open
//! (close-to-open consistency). Over NFSv4.2, copy_file_range, lseek
//! SEEK_DATA/SEEK_HOLE, fallocate and `user.` xattrs go to the server
//! ([`v42`]).

// Data from the network is never indexed into; slices of local buffers
// use checked access too, so a wrong length is an error, not a panic.
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]

mod attr;
mod dirs;
mod files;
pub mod fs;
mod inodes;
mod listing;
mod locks;
mod names;
mod notify;
mod remove;
mod unlinked;
mod v42;

use std::path::Path;
use std::sync::Arc;

pub use fs::{MountSettings, NfsFs};
pub use remove::Namespace;

/// Mounts `client`'s export on `dir` and serves it from a background
/// thread until the returned session is dropped or unmounted
/// (`fusermount3 -u DIR`). `source` names the mount in /proc/mounts. The
/// [`Namespace`] returned removes, when the mount has ended, the hidden
/// names of files that were still open ([`Namespace::remove_all_hidden`]).
pub fn mount(
    client: Arc<client::Client>,
    rt: tokio::runtime::Handle,
    dir: &Path,
    source: &str,
    settings: MountSettings,
    allow_other: bool,
) -> std::io::Result<(fuser::BackgroundSession, Namespace)> {
    use fuser::MountOption as O;
    let mut config = fuser::Config::default();
    config.mount_options = vec![
        O::FSName(source.to_string()),
        O::Subtype("nfsx".into()),
        // Permission bits are checked by the kernel against the
        // attributes, as for a local file system; the server checks again
        // with the caller's credentials.
        O::DefaultPermissions,
        O::NoDev,
        O::NoSuid,
    ];
    config.acl = if allow_other { fuser::SessionACL::All } else { fuser::SessionACL::Owner };
    let fs = NfsFs::new(client, rt, settings);
    let notifier = fs.notifier_slot();
    let namespace = fs.namespace();
    let session = fuser::spawn_mount(fs, dir, &config)?;
    let _ = notifier.set(session.notifier());
    Ok((session, namespace))
}
