//! In-memory objects: one lock per object, directories with a cookie index.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::{RwLock, RwLockWriteGuard};

use super::data::FileData;
use crate::{FileId, FileType, Timespec, VfsError, VfsResult};

/// An object and its lock. The id sits outside the lock so that several
/// objects can be locked in id order without peeking inside any of them.
#[derive(Debug)]
pub(crate) struct NodeCell {
    pub(crate) id: FileId,
    pub(crate) state: RwLock<Node>,
}

pub(crate) type NodeRef = Arc<NodeCell>;

#[derive(Debug)]
pub(crate) struct Node {
    pub(crate) meta: Meta,
    pub(crate) body: Body,
    /// Cleared when the last name goes away. A thread that looked the
    /// object up before the removal and locked it afterwards sees this and
    /// reports Stale instead of modifying a detached object.
    pub(crate) live: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct Meta {
    pub(crate) mode: u32,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    pub(crate) nlink: u32,
    pub(crate) atime: Timespec,
    pub(crate) mtime: Timespec,
    pub(crate) ctime: Timespec,
    pub(crate) change: u64,
    pub(crate) rdev: (u32, u32),
    /// Exclusive-create verifier, kept until the next SETATTR.
    pub(crate) verifier: Option<[u8; 8]>,
    /// Extended attributes by name (without the `user.` prefix); their
    /// bytes are charged to the file-data budget.
    pub(crate) xattrs: BTreeMap<Bytes, Bytes>,
}

impl Meta {
    pub(crate) fn new(mode: u32, uid: u32, gid: u32, nlink: u32) -> Meta {
        let now = Timespec::now();
        Meta {
            mode: mode & 0o7777,
            uid,
            gid,
            nlink,
            atime: now,
            mtime: now,
            ctime: now,
            change: 1,
            rdev: (0, 0),
            verifier: None,
            xattrs: BTreeMap::new(),
        }
    }

    /// Budget bytes the extended attributes take.
    pub(crate) fn xattr_bytes(&self) -> u64 {
        self.xattrs.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum()
    }

    /// Records a metadata change (ctime and change attribute).
    pub(crate) fn touch_ctime(&mut self) {
        self.ctime = Timespec::now();
        self.change += 1;
    }

    /// Records a content change (directory entries or file data).
    pub(crate) fn touch_content(&mut self) {
        let now = Timespec::now();
        self.mtime = now;
        self.ctime = now;
        self.change += 1;
    }
}

#[derive(Debug)]
pub(crate) enum Body {
    File(FileData),
    Dir(Dir),
    Symlink(Bytes),
    Special(FileType),
}

impl Node {
    pub(crate) fn ftype(&self) -> FileType {
        match &self.body {
            Body::File(_) => FileType::Regular,
            Body::Dir(_) => FileType::Directory,
            Body::Symlink(_) => FileType::Symlink,
            Body::Special(t) => *t,
        }
    }

    pub(crate) fn live(&self) -> VfsResult<()> {
        if self.live {
            Ok(())
        } else {
            Err(VfsError::Stale)
        }
    }

    pub(crate) fn dir(&self) -> VfsResult<&Dir> {
        self.live()?;
        match &self.body {
            Body::Dir(d) => Ok(d),
            _ => Err(VfsError::NotDir),
        }
    }

    pub(crate) fn dir_mut(&mut self) -> VfsResult<&mut Dir> {
        self.live()?;
        match &mut self.body {
            Body::Dir(d) => Ok(d),
            _ => Err(VfsError::NotDir),
        }
    }
}

/// One READDIR entry: cookie, name, id.
pub(crate) type Listed = (u64, Bytes, FileId);

/// A directory: entries by name for lookup, and the same entries by cookie
/// for READDIR. A cookie is a per-directory sequence number given at insert
/// and never reused, so a reader continuing after cookie `c` gets exactly
/// the entries whose cookie is greater than `c`: every entry that stayed
/// plus any added meanwhile, none twice, whatever was removed in between.
#[derive(Debug)]
pub(crate) struct Dir {
    pub(crate) parent: FileId,
    by_name: HashMap<Bytes, (u64, FileId)>,
    by_cookie: BTreeMap<u64, (Bytes, FileId)>,
    /// The next cookie to hand out; starts at 1 because 0 means "start".
    next_cookie: u64,
}

impl Dir {
    pub(crate) fn new(parent: FileId) -> Dir {
        Dir { parent, by_name: HashMap::new(), by_cookie: BTreeMap::new(), next_cookie: 1 }
    }

    pub(crate) fn get(&self, name: &[u8]) -> Option<FileId> {
        self.by_name.get(name).map(|&(_, id)| id)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Inserts a name the caller has checked is absent.
    pub(crate) fn insert(&mut self, name: &[u8], id: FileId) {
        let cookie = self.next_cookie;
        self.next_cookie += 1;
        let name = Bytes::copy_from_slice(name);
        self.by_cookie.insert(cookie, (name.clone(), id));
        self.by_name.insert(name, (cookie, id));
    }

    pub(crate) fn remove(&mut self, name: &[u8]) -> Option<FileId> {
        let (cookie, id) = self.by_name.remove(name)?;
        self.by_cookie.remove(&cookie);
        Some(id)
    }

    /// Entries with a cookie above `after`, at most `max`, and whether the
    /// listing is complete.
    pub(crate) fn list(&self, after: u64, max: usize) -> VfsResult<(Vec<Listed>, bool)> {
        if after >= self.next_cookie {
            return Err(VfsError::BadCookie);
        }
        let mut it = self.by_cookie.range(after.saturating_add(1)..);
        let out: Vec<_> = it.by_ref().take(max).map(|(&c, (n, id))| (c, n.clone(), *id)).collect();
        let eof = it.next().is_none();
        Ok((out, eof))
    }
}

/// Write-locks a set of objects in ascending id order (the one global lock
/// order), so that operations touching several objects cannot deadlock.
/// `nodes` must be sorted and deduplicated (see [`order`]).
pub(crate) fn lock_all(nodes: &[NodeRef]) -> Locked<'_> {
    Locked { guards: nodes.iter().map(|n| (n.id, n.state.write())).collect() }
}

/// Sorts and deduplicates objects for [`lock_all`].
pub(crate) fn order(mut nodes: Vec<NodeRef>) -> Vec<NodeRef> {
    nodes.sort_by_key(|n| n.id);
    nodes.dedup_by_key(|n| n.id);
    nodes
}

pub(crate) struct Locked<'a> {
    guards: Vec<(FileId, RwLockWriteGuard<'a, Node>)>,
}

impl Locked<'_> {
    pub(crate) fn get(&mut self, id: FileId) -> VfsResult<&mut Node> {
        self.guards
            .iter_mut()
            .find(|(gid, _)| *gid == id)
            .map(|(_, g)| &mut **g)
            // Only reachable through a bug in this module; Stale makes the
            // client re-look-up rather than crashing the server.
            .ok_or(VfsError::Stale)
    }
}
