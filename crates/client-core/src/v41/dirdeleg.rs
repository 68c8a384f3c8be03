//! What the client knows of a directory it holds a delegation on (RFC
//! 8881 section 10.9): its names, each with the child's handle and
//! attributes where known, whether that is the whole listing, and the
//! directory's own attributes, kept true by the server's CB_NOTIFYs
//! (section 20.4) rather than by asking again.
//!
//! A notification that does not fit what is cached (a name removed that
//! the whole listing does not have, attributes that do not decode) means
//! the cache and the server disagree: everything cached of the directory
//! is dropped rather than guessed at, and the next listing reads it again.

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;
use proto::dir_notify::DirChange;
use proto::nfs4::notify_entry4;

use super::attrs;
use crate::fattr::Fattr;

/// How owner names in attributes become ids (see [`attrs::owner_id`]).
#[derive(Clone, Copy)]
pub struct Ids<'a> {
    pub uid: &'a dyn Fn(&str) -> Option<u32>,
    pub gid: &'a dyn Fn(&str) -> Option<u32>,
}

impl Ids<'_> {
    /// Every name unknown: numeric owners only.
    pub const NUMERIC: Ids<'static> = Ids { uid: &|_| None, gid: &|_| None };
}

/// One name of the directory.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Child {
    /// Its handle, when a listing (or a notification asked to carry
    /// FATTR4_FILEHANDLE) gave it.
    pub handle: Option<Bytes>,
    /// Its attributes; None when a notification named it without enough
    /// of them to answer a stat (the server could not read them).
    pub attrs: Option<Fattr>,
}

/// What a notification changed, for the caches above this one (the
/// client's name and attribute caches, the kernel's under a mount).
#[derive(Debug, Clone, PartialEq)]
pub enum Touched {
    /// A name came, went, or names another object now (a name that came
    /// with its handle and attributes is followed by a [`Touched::Child`]).
    Name(Bytes),
    /// A child's attributes changed: its name, and its handle and new
    /// attributes where known.
    Child { name: Bytes, handle: Option<Bytes>, attrs: Option<Fattr> },
    /// The directory's own attributes, when known.
    Dir(Option<Fattr>),
    /// Everything cached of the directory was dropped.
    All,
}

/// Why a notification was not applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Distrust {
    #[error("{0:?} is not in the directory")]
    UnknownName(Bytes),
    #[error("the attributes of {name:?} do not decode: {why}")]
    Attrs { name: Bytes, why: String },
}

/// What the cache says of a name.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Lookup<'a> {
    /// The name, with the child's handle and attributes.
    Found(&'a Bytes, &'a Fattr),
    /// The whole listing is known and has no such name.
    Absent,
    /// Not known here: ask the server.
    Unknown,
}

/// The cache of one delegated directory.
#[derive(Debug, Default)]
pub struct DelegatedDir {
    /// In name order, which is the order a listing from here takes.
    names: BTreeMap<Bytes, Child>,
    /// Handle → one of its names here, for a child's GETATTR.
    by_handle: HashMap<Bytes, Bytes>,
    /// `names` is the whole directory.
    complete: bool,
    attrs: Option<Fattr>,
    /// Changes applied or dropped so far: a listing read across one of
    /// them may say what was true before it ([`DelegatedDir::fill`]).
    changes: u64,
}

impl DelegatedDir {
    /// Names known.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Whether every name of the directory is known.
    pub fn complete(&self) -> bool {
        self.complete
    }

    /// Taken before a listing is read from the server, for [`DelegatedDir::fill`].
    pub fn fill_mark(&self) -> u64 {
        self.changes
    }

    /// The whole listing, read from the server since `mark`, with the
    /// directory's attributes from the same replies. Kept only if no
    /// notification came meanwhile: its change may or may not be in what
    /// was read, and applying it again could undo a later one. Returns
    /// whether it was kept.
    pub fn fill(&mut self, mark: u64, entries: impl IntoIterator<Item = (Bytes, Child)>, dir: Option<Fattr>) -> bool {
        if mark != self.changes {
            return false;
        }
        self.names.clear();
        self.by_handle.clear();
        for (name, child) in entries {
            self.insert(name, child);
        }
        self.complete = true;
        if dir.is_some() {
            self.attrs = dir;
        }
        true
    }

    /// Drops what is cached (this client changed the directory, or the
    /// server said something the cache cannot square with); notifications
    /// still apply to what they name until the next listing.
    pub fn forget(&mut self) {
        self.names.clear();
        self.by_handle.clear();
        self.complete = false;
        self.attrs = None;
        self.changes += 1;
    }

    /// The listing, when every name is known with its handle and
    /// attributes: (name, handle, attributes) in name order.
    pub fn listing(&self) -> Option<Vec<(&Bytes, &Bytes, &Fattr)>> {
        if !self.complete {
            return None;
        }
        self.names.iter().map(|(n, c)| Some((n, c.handle.as_ref()?, c.attrs.as_ref()?))).collect()
    }

    pub fn lookup(&self, name: &[u8]) -> Lookup<'_> {
        match self.names.get(name) {
            Some(Child { handle: Some(h), attrs: Some(a) }) => Lookup::Found(h, a),
            Some(_) => Lookup::Unknown,
            None if self.complete => Lookup::Absent,
            None => Lookup::Unknown,
        }
    }

    /// The attributes of the child whose handle is `fh`.
    pub fn child_attrs(&self, fh: &[u8]) -> Option<&Fattr> {
        let name = self.by_handle.get(fh)?;
        self.names.get(name)?.attrs.as_ref()
    }

    /// The directory's own attributes.
    pub fn dir_attrs(&self) -> Option<&Fattr> {
        self.attrs.as_ref()
    }

    /// Applies one CB_NOTIFY's changes in order. On an error everything
    /// cached is dropped ([`DelegatedDir::forget`]) and nothing the
    /// changes said is kept.
    pub fn apply(&mut self, changes: &[DirChange], ids: Ids<'_>) -> Result<Vec<Touched>, Distrust> {
        self.changes += 1;
        let mut touched = Vec::with_capacity(changes.len());
        for c in changes {
            if let Err(e) = self.apply_one(c, ids, &mut touched) {
                self.forget();
                return Err(e);
            }
        }
        Ok(touched)
    }

    fn apply_one(&mut self, change: &DirChange, ids: Ids<'_>, touched: &mut Vec<Touched>) -> Result<(), Distrust> {
        match change {
            DirChange::ChildAttrs(n) => {
                let e = &n.na_changed_entry;
                let name = e.ne_file.clone();
                let Some(old) = self.names.get(&name).cloned() else {
                    if self.complete {
                        return Err(Distrust::UnknownName(name));
                    }
                    // A name this partial listing does not have.
                    touched.push(Touched::Child { name, handle: None, attrs: None });
                    return Ok(());
                };
                let new = self.child_of(e, Some(&old), ids)?;
                touched.push(Touched::Child {
                    name: name.clone(),
                    handle: new.handle.clone(),
                    attrs: new.attrs.clone(),
                });
                self.insert(name, new);
            }
            DirChange::DirAttrs(n) => {
                let e = &n.na_changed_entry;
                let a = decode(e)?;
                match (&mut self.attrs, a) {
                    (_, None) => {}
                    (Some(old), Some(a)) => a.merge_into(old, ids.uid, ids.gid),
                    (slot @ None, Some(a)) => {
                        if a.stat_complete() {
                            *slot = Some(a.to_fattr(ids.uid, ids.gid));
                        }
                    }
                }
                touched.push(Touched::Dir(self.attrs.clone()));
            }
            DirChange::Remove(r) => {
                let name = &r.nrm_old_entry.ne_file;
                self.remove(name)?;
                touched.push(Touched::Name(name.clone()));
            }
            DirChange::Add(a) => {
                // Names the new one replaced (a rename over them).
                for old in &a.nad_old_entry {
                    self.take(&old.nrm_old_entry.ne_file);
                    touched.push(Touched::Name(old.nrm_old_entry.ne_file.clone()));
                }
                let e = &a.nad_new_entry;
                let child = self.child_of(e, None, ids)?;
                // A new name replaces what it named before (this client's
                // own rename over it, notified after the listing had it).
                self.take(&e.ne_file);
                touched.push(Touched::Name(e.ne_file.clone()));
                touched.extend(known(&e.ne_file, &child));
                self.insert(e.ne_file.clone(), child);
            }
            DirChange::Rename(r) => {
                let old_name = &r.nrn_old_entry.nrm_old_entry.ne_file;
                let moved = self.remove(old_name)?.unwrap_or_default();
                touched.push(Touched::Name(old_name.clone()));
                let add = &r.nrn_new_entry;
                for old in &add.nad_old_entry {
                    self.take(&old.nrm_old_entry.ne_file);
                    touched.push(Touched::Name(old.nrm_old_entry.ne_file.clone()));
                }
                let e = &add.nad_new_entry;
                let child = self.child_of(e, Some(&moved), ids)?;
                self.take(&e.ne_file);
                touched.push(Touched::Name(e.ne_file.clone()));
                touched.extend(known(&e.ne_file, &child));
                self.insert(e.ne_file.clone(), child);
            }
            // Cached listings carry no server cookies.
            DirChange::CookieVerifier(_) => {}
        }
        Ok(())
    }

    /// Removes `name` as a notification says: a name the whole listing
    /// does not have is an error, one a partial listing lacks is not.
    fn remove(&mut self, name: &Bytes) -> Result<Option<Child>, Distrust> {
        match self.take(name) {
            Some(c) => Ok(Some(c)),
            None if self.complete => Err(Distrust::UnknownName(name.clone())),
            None => Ok(None),
        }
    }

    /// The child an entry of a notification describes: `base` (what was
    /// known of it) with the entry's attributes in place.
    fn child_of(&self, e: &notify_entry4, base: Option<&Child>, ids: Ids<'_>) -> Result<Child, Distrust> {
        let mut child = base.cloned().unwrap_or_default();
        let Some(a) = decode(e)? else { return Ok(child) };
        if let Some(fh) = &a.filehandle {
            if child.handle.as_ref() != Some(fh) {
                // Another object under the name: nothing of the old holds.
                child = Child { handle: Some(fh.clone()), attrs: None };
            }
        }
        match &mut child.attrs {
            Some(old) => a.merge_into(old, ids.uid, ids.gid),
            None if a.stat_complete() => {
                let mut f = a.to_fattr(ids.uid, ids.gid);
                if a.fsid.is_none() {
                    // The directory's file system, as a child on another
                    // would be a mount point a listing reports as such.
                    f.fsid = self.attrs.as_ref().map_or(0, |d| d.fsid);
                }
                child.attrs = Some(f);
            }
            None => {}
        }
        Ok(child)
    }

    fn insert(&mut self, name: Bytes, child: Child) {
        if let Some(old) = self.names.get(&name).and_then(|c| c.handle.clone()) {
            if self.by_handle.get(&old) == Some(&name) {
                self.by_handle.remove(&old);
            }
        }
        if let Some(fh) = &child.handle {
            self.by_handle.insert(fh.clone(), name.clone());
        }
        self.names.insert(name, child);
    }

    fn take(&mut self, name: &Bytes) -> Option<Child> {
        let c = self.names.remove(name)?;
        if let Some(fh) = &c.handle {
            if self.by_handle.get(fh) == Some(name) {
                self.by_handle.remove(fh);
                // A hard link under another name here still is the file.
                if let Some(other) = self.names.iter().find(|(_, o)| o.handle.as_ref() == Some(fh)).map(|(n, _)| n) {
                    self.by_handle.insert(fh.clone(), other.clone());
                }
            }
        }
        Some(c)
    }
}

/// A child under a new name whose handle and attributes are known, for
/// the caches above to take.
fn known(name: &Bytes, c: &Child) -> Option<Touched> {
    let (Some(handle), Some(attrs)) = (&c.handle, &c.attrs) else { return None };
    Some(Touched::Child { name: name.clone(), handle: Some(handle.clone()), attrs: Some(attrs.clone()) })
}

/// An entry's attributes; None when it carries none (a name whose
/// attributes the server could not read: it exists, unknown otherwise).
fn decode(e: &notify_entry4) -> Result<Option<attrs::Attrs>, Distrust> {
    if attrs::bits(&e.ne_attrs.attrmask).next().is_none() {
        return Ok(None);
    }
    attrs::decode(&e.ne_attrs).map(Some).map_err(|why| Distrust::Attrs { name: e.ne_file.clone(), why })
}

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
