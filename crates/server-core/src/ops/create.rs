//! What every operation that makes a new object shares, in NFSv3 (CREATE,
//! MKDIR, SYMLINK, MKNOD: RFC 1813 sections 3.3.8 to 3.3.11) and NFSv4
//! (OPEN with a create, CREATE: RFC 8881 sections 18.16 and 18.4): the
//! attributes the caller may give the object, and who owns it.

use vfs::{Attrs, SetAttrs, VfsError};

use crate::auth::Creds;

/// Attributes a non-root caller may give a new object: its own uid, and a
/// group it belongs to, as chown(2) would let it give the object later.
/// Anything else is [`VfsError::Perm`], "not owner" in both versions
/// (NFS3ERR_PERM, RFC 1813 section 2.6; NFS4ERR_PERM, RFC 8881 section
/// 15.1.6.2).
pub(crate) fn check_attrs(creds: &Creds, set: &SetAttrs) -> Result<(), VfsError> {
    if creds.is_root() {
        return Ok(());
    }
    if set.uid.is_some_and(|u| u != creds.uid) || set.gid.is_some_and(|g| !creds.in_group(g)) {
        return Err(VfsError::Perm);
    }
    Ok(())
}

/// The owner of a new object in `dir`: the caller, with the directory's
/// group when the directory is setgid (BSD group semantics, which Linux
/// follows for setgid directories).
pub(crate) fn new_owner(dir: &Attrs, creds: &Creds) -> vfs::Owner {
    let mut o = creds.owner();
    if dir.mode & 0o2000 != 0 {
        o.gid = dir.gid;
    }
    o
}

#[cfg(test)]
mod tests {
    use vfs::{FileType, Timespec};

    use super::*;

    fn creds(uid: u32, gid: u32, gids: Vec<u32>) -> Creds {
        Creds { uid, gid, gids }
    }

    fn dir(mode: u32, gid: u32) -> Attrs {
        let t = Timespec::default();
        Attrs {
            ftype: FileType::Directory,
            mode,
            nlink: 2,
            uid: 0,
            gid,
            size: 0,
            used: 0,
            rdev: (0, 0),
            fsid: 1,
            fileid: 1,
            atime: t,
            mtime: t,
            ctime: t,
            generation: 1,
            change: 1,
        }
    }

    #[test]
    fn a_caller_may_give_only_itself_and_its_groups() {
        let c = creds(1000, 100, vec![200]);
        let ok = [
            SetAttrs::default(),
            SetAttrs { uid: Some(1000), gid: Some(100), ..Default::default() },
            SetAttrs { gid: Some(200), ..Default::default() },
        ];
        for set in ok {
            assert_eq!(check_attrs(&c, &set), Ok(()), "{set:?}");
        }
        let refused =
            [SetAttrs { uid: Some(0), ..Default::default() }, SetAttrs { gid: Some(300), ..Default::default() }];
        for set in refused {
            assert_eq!(check_attrs(&c, &set), Err(VfsError::Perm), "{set:?}");
        }
        let root = creds(0, 0, vec![]);
        let any = SetAttrs { uid: Some(7), gid: Some(8), ..Default::default() };
        assert_eq!(check_attrs(&root, &any), Ok(()));
    }

    #[test]
    fn a_setgid_directory_gives_its_group() {
        let c = creds(1000, 100, vec![]);
        assert_eq!(new_owner(&dir(0o755, 50), &c), vfs::Owner { uid: 1000, gid: 100 });
        assert_eq!(new_owner(&dir(0o2775, 50), &c), vfs::Owner { uid: 1000, gid: 50 });
    }
}
