//! The backend's state and the steps every operation shares: resolving an
//! id to a referenced inode, looking a name up, reading attributes.

use std::ptr;
use std::sync::Arc;
use std::time::Duration;

use vfs::{Attrs, FileId, FileType, VfsError, VfsResult};

use crate::attrs::to_attrs;
use crate::delegs::Delegs;
use crate::ffi::{ceph_statx, inodeno_t, AT_SYMLINK_NOFOLLOW, CEPH_STATX_ALL_STATS};
use crate::gate::Gate;
use crate::health::Health;
use crate::listings::Listings;
use crate::locks::Locked;
use crate::mount::{check, cstr, Mount};
use crate::nodes::{Node, Nodes};
use crate::CephSettings;

/// Deepest directory tree the containment walk climbs before giving up
/// (and calling the handle stale).
const MAX_DEPTH: usize = 4096;

/// One exported directory of a Ceph file system.
pub struct CephFs {
    pub(crate) m: Arc<Mount>,
    pub(crate) root: FileId,
    /// Held apart from the bounded cache: every path starts here.
    pub(crate) root_node: Arc<Node>,
    pub(crate) nodes: Arc<Nodes>,
    pub(crate) fsid: u64,
    pub(crate) settings: CephSettings,
    /// Calls waiting on the cluster; refuses new ones while it is away.
    pub(crate) health: Health,
    /// Files with byte-range locks, kept open while they have any.
    pub(crate) locked: Locked,
    /// Whole directory listings, served again while current.
    pub(crate) listings: Listings,
    /// CephFS delegations behind the NFSv4 delegations this head granted.
    pub(crate) delegs: Delegs,
    /// How this head learns of the first OPEN that denies, without `[cluster]`.
    pub(crate) gate: Gate,
    /// The name this head's sessions go by (see [`CephFs::open_as`]).
    pub(crate) instance: Option<String>,
}

impl CephFs {
    /// Mounts `path` of the cluster `settings.conf` names.
    pub fn open(settings: &CephSettings, path: &str) -> Result<CephFs, String> {
        Self::open_as(settings, path, None)
    }

    /// [`CephFs::open`] as the head `instance`, which takes over the
    /// session an earlier process of the same head left (see
    /// `ceph_start_reclaim`); each head needs a name of its own.
    pub fn open_as(settings: &CephSettings, path: &str, instance: Option<&str>) -> Result<CephFs, String> {
        // The gate's earlier session is ended beside the export's own: after
        // a restart of the metadata server both are waited for, and one
        // reclaim at a time took 30 s more there.
        let m = std::thread::scope(|s| {
            if let Some(instance) = instance.filter(|_| !settings.share_gate_path.is_empty()) {
                s.spawn(move || crate::gate::end_previous_session(settings, instance));
            }
            Mount::open(settings, path, instance)
        });
        let m = Arc::new(m?);
        let mut root = ptr::null_mut();
        // SAFETY: a mounted handle; `root` receives a reference.
        check(unsafe { (m.api.ceph_ll_lookup_root)(m.cm, &mut root) })
            .map_err(|e| format!("cannot reach the root of CephFS {path}: {e}"))?;
        let root_node = Node::adopt(&m, root);
        let stx = stat(&root_node).map_err(|e| format!("cannot stat CephFS {path}: {e}"))?;
        // Ids are only unique within one file system of one cluster; the
        // export path keeps two exports of it apart in `fsid`.
        let fsid = fnv1a(format!("ceph:{}:{path}", m.fs_cid()).as_bytes());
        let mut fs = CephFs {
            root: stx.stx_ino,
            root_node,
            nodes: Arc::new(Nodes::new(settings.inode_cache)),
            fsid,
            settings: settings.clone(),
            health: Health::new(match settings.call_deadline_secs {
                0 => Duration::MAX,
                s => Duration::from_secs(s),
            }),
            locked: Locked::default(),
            listings: Listings::new(settings.dir_cache_entries),
            delegs: Delegs::default(),
            gate: Gate::default(),
            instance: instance.map(str::to_string),
            m,
        };
        fs.enable_delegations();
        Nodes::sweep(&fs.nodes, Duration::from_secs(settings.inode_idle_secs));
        tracing::info!(path, root = fs.root, "CephFS mounted");
        Ok(fs)
    }

    /// Runs one backend operation as a registered call, or answers
    /// `Delay` at once while the cluster is away (see `health`).
    pub(crate) fn guarded<T>(&self, op: impl FnOnce() -> VfsResult<T>) -> VfsResult<T> {
        let _call = self.health.enter()?;
        op()
    }

    /// The inode behind `id`: kept, or asked of the metadata server and
    /// checked to lie inside the export.
    pub(crate) fn node(&self, id: FileId) -> VfsResult<Arc<Node>> {
        if id == self.root {
            return Ok(self.root_node.clone());
        }
        if let Some(n) = self.nodes.get(id) {
            return Ok(n);
        }
        if let Some(n) = self.delegs.node(id) {
            return Ok(self.nodes.insert(id, n));
        }
        let mut inode = ptr::null_mut();
        // SAFETY: a mounted handle; `inode` receives a reference.
        let rc = unsafe { (self.m.api.ceph_ll_lookup_inode)(self.m.cm, inodeno_t { val: id }, &mut inode) };
        match check(rc) {
            Ok(_) => {}
            Err(VfsError::NotFound) | Err(VfsError::Invalid) => return Err(VfsError::Stale),
            Err(e) => return Err(e),
        }
        let node = Node::adopt(&self.m, inode);
        let stx = stat(&node)?;
        if stx.stx_nlink == 0 {
            return Err(VfsError::Stale);
        }
        if is_dir(&stx) && !self.inside(&node, stx.stx_ino)? {
            tracing::warn!(id, "handle names a directory outside the export");
            return Err(VfsError::Stale);
        }
        Ok(self.nodes.insert(id, node))
    }

    /// Whether directory `ino` lies under the export's root, climbing `..`.
    /// Files are not climbed (CephFS does not say a file's parent), so a
    /// file moved out of the export by another Ceph client keeps its
    /// handle, as knfsd's `no_subtree_check` allows; nfsx never moves
    /// anything out itself, and handles cannot be forged.
    fn inside(&self, node: &Arc<Node>, ino: u64) -> VfsResult<bool> {
        let (mut cur, mut cur_ino) = (node.clone(), ino);
        for _ in 0..MAX_DEPTH {
            if cur_ino == self.root {
                return Ok(true);
            }
            let (parent, stx) = self.lookup_raw(&cur, b"..")?;
            if stx.stx_ino == cur_ino {
                return Ok(false);
            }
            (cur, cur_ino) = (parent, stx.stx_ino);
        }
        Ok(false)
    }

    /// `name` in `dir` as libcephfs finds it, not following a final symlink.
    pub(crate) fn lookup_raw(&self, dir: &Node, name: &[u8]) -> VfsResult<(Arc<Node>, ceph_statx)> {
        let c = cstr(name)?;
        let mut out = ptr::null_mut();
        let mut stx = ceph_statx::default();
        // SAFETY: a referenced directory inode; `out` receives a reference.
        check(unsafe {
            (self.m.api.ceph_ll_lookup)(
                self.m.cm,
                dir.inode,
                c.as_ptr(),
                &mut out,
                &mut stx,
                CEPH_STATX_ALL_STATS,
                AT_SYMLINK_NOFOLLOW,
                self.m.perms,
            )
        })?;
        Ok((Node::adopt(&self.m, out), stx))
    }

    /// Keeps a node libcephfs just returned, by its id.
    pub(crate) fn keep(&self, node: Arc<Node>, stx: &ceph_statx) -> (FileId, Attrs) {
        let id = stx.stx_ino;
        self.nodes.insert(id, node);
        (id, to_attrs(stx, self.fsid))
    }

    pub(crate) fn attrs(&self, node: &Node) -> VfsResult<Attrs> {
        Ok(to_attrs(&stat(node)?, self.fsid))
    }

    /// The directory `id`, or `NotDir`.
    pub(crate) fn dir(&self, id: FileId) -> VfsResult<Arc<Node>> {
        let n = self.node(id)?;
        if !is_dir(&stat(&n)?) {
            return Err(VfsError::NotDir);
        }
        Ok(n)
    }

    /// Waits until the metadata server has journaled the changes made in
    /// `dir` (with `sync_metadata`), so they outlive a crash of it.
    pub(crate) fn sync_dir(&self, dir: &Node) -> VfsResult<()> {
        if !self.settings.sync_metadata {
            return Ok(());
        }
        // SAFETY: a referenced inode.
        check(unsafe { (self.m.api.ceph_ll_sync_inode)(self.m.cm, dir.inode, 0) }).map(|_| ())
    }

    pub(crate) fn ftype(&self, node: &Node) -> VfsResult<FileType> {
        Ok(self.attrs(node)?.ftype)
    }
}

/// The inode's attributes, from this client's caps when it holds them.
pub(crate) fn stat(node: &Node) -> VfsResult<ceph_statx> {
    stat_with(node, 0)
}

fn stat_with(node: &Node, flags: std::ffi::c_uint) -> VfsResult<ceph_statx> {
    let mut stx = ceph_statx::default();
    // SAFETY: a referenced inode; `stx` is written.
    check(unsafe {
        (node.m.api.ceph_ll_getattr)(node.m.cm, node.inode, &mut stx, CEPH_STATX_ALL_STATS, flags, node.m.perms)
    })?;
    Ok(stx)
}

pub(crate) fn is_dir(stx: &ceph_statx) -> bool {
    u32::from(stx.stx_mode) & libc::S_IFMT == libc::S_IFDIR
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}
