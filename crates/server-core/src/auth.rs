//! Caller credentials, squashing, and the permission rules applied before
//! each operation.
//!
//! The server performs every backend call with its own rights, so these
//! checks are what stands between a client's uid and the files. They follow
//! the Linux knfsd behaviour clients are written against, including the
//! "owner override": the owner of a file may read and write it whatever its
//! mode, because a local process that opened a file keeps its access after
//! a chmod, and NFS clients (which open nothing on the server) rely on that.

use vfs::{check_access, Access, Attrs, FileType, SetAttrs, SetTime};

use crate::exports::ExportOptions;

/// The identity a request runs as (AUTH_SYS fields, after squashing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Creds {
    pub uid: u32,
    pub gid: u32,
    pub gids: Vec<u32>,
}

impl Creds {
    /// AUTH_NONE callers, and squashed callers, run as the anonymous user.
    pub fn anonymous(opts: &ExportOptions) -> Creds {
        Creds { uid: opts.anonuid, gid: opts.anongid, gids: Vec::new() }
    }

    pub fn is_root(&self) -> bool {
        self.uid == 0
    }

    pub fn in_group(&self, gid: u32) -> bool {
        self.gid == gid || self.gids.contains(&gid)
    }

    pub fn owner(&self) -> vfs::Owner {
        vfs::Owner { uid: self.uid, gid: self.gid }
    }

    /// Applies `root_squash` / `all_squash` of the matching export rule.
    pub fn squash(&self, opts: &ExportOptions) -> Creds {
        if opts.all_squash {
            return Creds::anonymous(opts);
        }
        if !opts.root_squash {
            return self.clone();
        }
        // Like knfsd, root_squash maps the root group as well, in the
        // supplementary list too, so gid 0 grants nothing either.
        let map_gid = |g: u32| if g == 0 { opts.anongid } else { g };
        Creds {
            uid: if self.uid == 0 { opts.anonuid } else { self.uid },
            gid: map_gid(self.gid),
            gids: self.gids.iter().map(|&g| map_gid(g)).collect(),
        }
    }
}

/// The rights of `c` on `attrs` among `wanted`.
pub fn granted(attrs: &Attrs, c: &Creds, wanted: Access) -> Access {
    check_access(attrs, c.uid, c.gid, &c.gids, wanted)
}

pub fn may(attrs: &Attrs, c: &Creds, wanted: Access) -> bool {
    granted(attrs, c, wanted).contains(wanted)
}

/// READ: read permission, or execute permission (a client reads a
/// program to run it), or ownership.
pub fn may_read(attrs: &Attrs, c: &Creds) -> bool {
    c.uid == attrs.uid || granted(attrs, c, Access(Access::READ.0 | Access::EXECUTE.0)).0 != 0
}

/// WRITE / COMMIT / truncation: write permission or ownership.
pub fn may_write(attrs: &Attrs, c: &Creds) -> bool {
    c.uid == attrs.uid || may(attrs, c, Access::MODIFY)
}

/// Creating or linking a name in `dir`.
pub fn may_add_entry(dir: &Attrs, c: &Creds) -> bool {
    dir.ftype != FileType::Directory || may(dir, c, Access(Access::MODIFY.0 | Access::LOOKUP.0))
}

/// Removing (or renaming away) `victim` from `dir`: DELETE on the
/// directory, and with the sticky bit set, ownership of the directory or
/// the victim.
pub fn may_delete_entry(dir: &Attrs, victim: Option<&Attrs>, c: &Creds) -> bool {
    if !may(dir, c, Access::DELETE) {
        return false;
    }
    if sticky_applies(dir, c) {
        return victim.is_some_and(|v| v.uid == c.uid);
    }
    true
}

/// Whether removing from `dir` depends on who owns the entry: the sticky
/// bit is set and the caller is neither root nor the directory's owner.
/// Otherwise [`may_delete_entry`] needs no victim.
pub fn sticky_applies(dir: &Attrs, c: &Creds) -> bool {
    dir.mode & 0o1000 != 0 && !c.is_root() && c.uid != dir.uid
}

/// Why a SETATTR is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetattrDenied {
    /// Not allowed at all for this caller (NFS3ERR_PERM).
    Perm,
    /// Would need write access the caller lacks (NFS3ERR_ACCES).
    Access,
}

/// The POSIX rules for chmod/chown/utimes/truncate as a non-root caller:
/// only the owner changes the mode or times, the owner may change the group
/// to one they belong to, only root changes the owner (chown_restricted),
/// and anyone with write access may set both times to "now".
pub fn check_setattr(attrs: &Attrs, c: &Creds, set: &SetAttrs) -> Result<(), SetattrDenied> {
    if c.is_root() {
        return Ok(());
    }
    let owner = c.uid == attrs.uid;
    if set.mode.is_some() && !owner {
        return Err(SetattrDenied::Perm);
    }
    if set.uid.is_some_and(|u| u != attrs.uid) {
        return Err(SetattrDenied::Perm);
    }
    if let Some(g) = set.gid {
        if g != attrs.gid && !(owner && c.in_group(g)) {
            return Err(SetattrDenied::Perm);
        }
    }
    let client_time = matches!(set.atime, SetTime::Client(_)) || matches!(set.mtime, SetTime::Client(_));
    let server_time = matches!(set.atime, SetTime::ServerNow) || matches!(set.mtime, SetTime::ServerNow);
    if client_time && !owner {
        return Err(SetattrDenied::Perm);
    }
    if server_time && !owner && !may(attrs, c, Access::MODIFY) {
        return Err(SetattrDenied::Access);
    }
    if set.size.is_some() && !may_write(attrs, c) {
        return Err(SetattrDenied::Access);
    }
    Ok(())
}

/// A non-root owner who may not keep the setgid bit (not in the file's
/// group) loses it on chmod, as POSIX chmod does.
pub fn filter_mode(attrs_gid: u32, c: &Creds, mode: u32) -> u32 {
    if !c.is_root() && !c.in_group(attrs_gid) {
        mode & !0o2000
    } else {
        mode
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vfs::Timespec;

    fn attrs(ftype: FileType, mode: u32, uid: u32, gid: u32) -> Attrs {
        Attrs {
            ftype,
            mode,
            nlink: 1,
            uid,
            gid,
            size: 0,
            used: 0,
            rdev: (0, 0),
            fsid: 1,
            fileid: 2,
            atime: Timespec::default(),
            mtime: Timespec::default(),
            ctime: Timespec::default(),
            generation: 1,
            change: 1,
        }
    }

    fn creds(uid: u32, gid: u32) -> Creds {
        Creds { uid, gid, gids: vec![] }
    }

    #[test]
    fn squashing() {
        let mut o = ExportOptions::default();
        let root = Creds { uid: 0, gid: 0, gids: vec![0, 5] };
        assert_eq!(root.squash(&o), Creds { uid: 65534, gid: 65534, gids: vec![65534, 5] });
        let user = Creds { uid: 1000, gid: 0, gids: vec![] };
        assert_eq!(user.squash(&o).gid, 65534);
        o.root_squash = false;
        assert_eq!(root.squash(&o), root);
        o.all_squash = true;
        o.anonuid = 7;
        o.anongid = 8;
        assert_eq!(Creds { uid: 1000, gid: 100, gids: vec![1] }.squash(&o), Creds { uid: 7, gid: 8, gids: vec![] });
    }

    #[test]
    fn owner_override() {
        let f = attrs(FileType::Regular, 0o000, 1000, 1000);
        assert!(may_read(&f, &creds(1000, 1000)));
        assert!(may_write(&f, &creds(1000, 1000)));
        assert!(!may_read(&f, &creds(1001, 1000)));
        let x = attrs(FileType::Regular, 0o711, 1000, 1000);
        assert!(may_read(&x, &creds(1001, 1001)), "execute-only may be read");
        assert!(!may_write(&x, &creds(1001, 1001)));
    }

    #[test]
    fn sticky_directories() {
        let d = attrs(FileType::Directory, 0o1777, 0, 0);
        let mine = attrs(FileType::Regular, 0o644, 1000, 1000);
        let theirs = attrs(FileType::Regular, 0o644, 1001, 1001);
        assert!(may_delete_entry(&d, Some(&mine), &creds(1000, 1000)));
        assert!(!may_delete_entry(&d, Some(&theirs), &creds(1000, 1000)));
        assert!(may_delete_entry(&d, Some(&theirs), &creds(0, 0)));
    }

    #[test]
    fn setattr_rules() {
        let f = attrs(FileType::Regular, 0o666, 1000, 1000);
        let owner = Creds { uid: 1000, gid: 1000, gids: vec![50] };
        let other = creds(1001, 1001);
        let set = |f: fn(&mut SetAttrs)| {
            let mut s = SetAttrs::default();
            f(&mut s);
            s
        };
        assert_eq!(check_setattr(&f, &owner, &set(|s| s.mode = Some(0o600))), Ok(()));
        assert_eq!(check_setattr(&f, &other, &set(|s| s.mode = Some(0o600))), Err(SetattrDenied::Perm));
        assert_eq!(check_setattr(&f, &owner, &set(|s| s.uid = Some(0))), Err(SetattrDenied::Perm));
        assert_eq!(check_setattr(&f, &owner, &set(|s| s.gid = Some(50))), Ok(()));
        assert_eq!(check_setattr(&f, &owner, &set(|s| s.gid = Some(51))), Err(SetattrDenied::Perm));
        assert_eq!(check_setattr(&f, &other, &set(|s| s.mtime = SetTime::ServerNow)), Ok(()));
        let ro = attrs(FileType::Regular, 0o644, 1000, 1000);
        assert_eq!(check_setattr(&ro, &other, &set(|s| s.mtime = SetTime::ServerNow)), Err(SetattrDenied::Access));
        assert_eq!(
            check_setattr(&f, &other, &set(|s| s.mtime = SetTime::Client(Timespec::default()))),
            Err(SetattrDenied::Perm)
        );
        assert_eq!(check_setattr(&ro, &other, &set(|s| s.size = Some(0))), Err(SetattrDenied::Access));
        assert_eq!(check_setattr(&ro, &creds(0, 0), &set(|s| s.uid = Some(5))), Ok(()));
    }
}
