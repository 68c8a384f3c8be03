//! A CephFS export for nfsx: the [`vfs::Vfs`] interface over libcephfs's
//! low-level (`ceph_ll_*`) API, as NFS-Ganesha's FSAL_CEPH uses it.
//!
//! - File ids are Ceph inode numbers, valid on every head and across
//!   restarts: a handle is resolved with `ceph_ll_lookup_inode`, which asks
//!   the metadata server for an inode this client has not seen. The
//!   generation in each handle is the inode's birth time, so a handle to a
//!   removed file stays stale if its number is ever given out again.
//! - Only the live tree is exported: the snapshot directory (`.snap`)
//!   cannot be looked up, since a snapshot's inodes share their numbers
//!   with the live ones.
//! - Every call may wait on the network, so it offers no
//!   [`vfs::FastPaths`] and the server runs all of them on its workers.
//! - Durability: a stable WRITE or COMMIT returns after `ceph_ll_fsync`,
//!   when the OSDs hold the data; with `sync_metadata` a namespace change
//!   returns after the metadata server has journaled it
//!   (`ceph_ll_sync_inode` of the directory), not on its early reply.

/// `pub struct Api` holding the C functions listed, each resolved by its
/// own name from a library opened at run time (libcephfs, librados).
macro_rules! api {
    ($($name:ident: fn($($arg:ty),* $(,)?) $(-> $ret:ty)?;)*) => {
        /// The library's functions, resolved once per process.
        pub struct Api {
            $(pub $name: unsafe extern "C" fn($($arg),*) $(-> $ret)?,)*
            _lib: libloading::Library,
        }

        impl Api {
            /// # Safety
            /// `lib` must be the Ceph 16.2 (or later) library whose
            /// functions have the signatures declared here.
            unsafe fn resolve(lib: libloading::Library) -> Result<Api, libloading::Error> {
                Ok(Api {
                    $($name: *lib.get(concat!(stringify!($name), "\0").as_bytes())?,)*
                    _lib: lib,
                })
            }
        }
    };
}

mod attrs;
mod delegs;
mod dir;
pub mod ffi;
mod fs;
mod gate;
mod health;
mod io;
mod listings;
mod locks;
mod mount;
mod namespace;
mod nodes;
pub mod rados;
mod shares;
mod vfs_impl;
mod xattr;

pub use fs::CephFs;

/// See [`mount::Mount::end_session`].
pub fn end_session(settings: &CephSettings, uuid: &str) -> Result<bool, String> {
    mount::Mount::end_session(settings, uuid)
}

use serde::Deserialize;

/// `[ceph]` in the settings file; `nfsx serve --backend ceph` options
/// override `conf` and `path`.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CephSettings {
    /// The cluster's `ceph.conf` (monitor addresses, authentication);
    /// unset: libcephfs's own search (`$CEPH_CONF`, `/etc/ceph/ceph.conf`).
    pub conf: Option<std::path::PathBuf>,
    /// Directory of the Ceph file system that a command-line export serves.
    pub path: String,
    /// Ceph client name, without `client.` (its key comes from the keyring
    /// `ceph.conf` names).
    pub client_id: String,
    /// File system to mount when the cluster has several; unset: the default.
    pub fs_name: Option<String>,
    /// How long the metadata server keeps the session of a head that
    /// stopped answering (its capabilities block other heads meanwhile).
    pub session_timeout_secs: u32,
    /// How long `nfsx serve` waits for the monitors and the MDS at start
    /// before giving up with an error.
    pub mount_timeout_secs: u32,
    /// A call that has waited this long on the cluster marks it away:
    /// until that call returns, new requests are answered DELAY/JUKEBOX at
    /// once rather than joining the wait. 0: never (calls wait).
    pub call_deadline_secs: u64,
    /// Inodes kept referenced (with their open file) by id, so a handle
    /// used again costs no lookup at the metadata server.
    pub inode_cache: usize,
    /// An inode unused this long is let go (its open file closed): a file
    /// removed through another head is purged only once no head holds it.
    /// 0: kept until the cache is full.
    pub inode_idle_secs: u64,
    /// Entries of whole directory listings kept, over all directories, to
    /// answer a listing again without the metadata server while the
    /// directory's change attribute (read under capabilities) is unchanged;
    /// a directory holding more than a quarter of it is not kept. 0: off.
    pub dir_cache_entries: usize,
    /// Make namespace changes durable in the metadata server's journal
    /// before answering, as NFSv3 and NFSv4 require.
    pub sync_metadata: bool,
    /// Hold every OPEN's access and deny modes in CephFS as well (one MDS
    /// lock request per OPEN), so that an open on one head refuses a
    /// conflicting open on another; false: each head enforces only its
    /// own opens' deny modes, as NFS-Ganesha and knfsd do over CephFS.
    pub share_reservations: bool,
    /// A file of the Ceph file system (from its root) through which heads
    /// without `[cluster]` learn that an OPEN somewhere is about to deny:
    /// until one does, they hold no share modes in CephFS (see `gate`).
    /// Every head over the file system must name the same file. Empty:
    /// such heads hold the modes from the start.
    pub share_gate_path: String,
    /// Back every NFSv4 delegation this head grants with a CephFS
    /// delegation, so other heads' conflicting access recalls it; false:
    /// no delegations on Ceph exports.
    pub delegations: bool,
    /// Open files read-only until written, so that a read delegation is a
    /// CephFS read delegation (other heads read beside it) rather than a
    /// write delegation any access through another head recalls. Off by
    /// default: it needs `direct_reads`, which costs reads libcephfs's
    /// cache (docs/SCALE-OUT.md, "Delegations").
    pub read_delegations: bool,
    /// Read from the OSDs directly, past libcephfs's object cache and its
    /// readahead (`client_debug_force_sync_read`). Unset: on exactly when
    /// `read_delegations` is, which needs it with libcephfs 16.2: a head
    /// reading a file another head has open for writing otherwise has
    /// reads wait until that head closes the file (Ceph tracker 65971,
    /// fixed upstream after 16.2; docs/SCALE-OUT.md, "Delegations").
    pub direct_reads: Option<bool>,
    /// How long a head waits for its clients to return delegations
    /// CephFS recalled before it revokes them and gives the CephFS
    /// delegation back (another head's request waits meanwhile: keep it
    /// below `call_deadline_secs`).
    pub delegation_return_secs: u64,
    /// Keep libcephfs's in-memory debug log off for the client-side
    /// subsystems the cluster's `ceph.conf` leaves at their defaults:
    /// gathering it cost 12% of a head's CPU while listing directories.
    pub quiet_client_log: bool,
    /// Longest name a client may create (CephFS's own limit is 255).
    pub max_name_len: usize,
    /// Mode of files created without one.
    pub default_file_mode: u32,
    /// Mode of directories created without one.
    pub default_dir_mode: u32,
}

impl Default for CephSettings {
    fn default() -> Self {
        CephSettings {
            conf: None,
            path: "/".into(),
            client_id: "admin".into(),
            fs_name: None,
            session_timeout_secs: 60,
            mount_timeout_secs: 30,
            call_deadline_secs: 10,
            quiet_client_log: true,
            inode_cache: 16384,
            inode_idle_secs: 10,
            dir_cache_entries: 65536,
            sync_metadata: true,
            share_reservations: true,
            share_gate_path: "/.nfsx-share-gate".into(),
            delegations: true,
            read_delegations: false,
            direct_reads: None,
            delegation_return_secs: 5,
            max_name_len: vfs::DEFAULT_MAX_NAME_LEN,
            default_file_mode: 0o644,
            default_dir_mode: 0o755,
        }
    }
}
