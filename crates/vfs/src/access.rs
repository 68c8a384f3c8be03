//! Unix permission checks done by the server for the caller.
//!
//! The server process itself usually runs as root and performs every
//! operation with its own credentials, so the caller's rights are checked
//! here, against the object's attributes, before an operation is made.

use crate::{Attrs, FileType};

/// Rights a caller may ask for, as NFSv3 ACCESS bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access(pub u32);

impl Access {
    pub const READ: Access = Access(0x0001);
    pub const LOOKUP: Access = Access(0x0002);
    pub const MODIFY: Access = Access(0x0004);
    pub const EXTEND: Access = Access(0x0008);
    pub const DELETE: Access = Access(0x0010);
    pub const EXECUTE: Access = Access(0x0020);

    pub fn contains(self, other: Access) -> bool {
        self.0 & other.0 == other.0
    }
}

/// Which of the `wanted` rights `(uid, gid, gids)` has on an object with
/// `attrs`. uid 0 (not squashed) has all but EXECUTE on a file no one may
/// execute, as with local root.
pub fn check_access(attrs: &Attrs, uid: u32, gid: u32, gids: &[u32], wanted: Access) -> Access {
    let bits = if uid == 0 {
        let any_x = attrs.mode & 0o111 != 0 || attrs.ftype == FileType::Directory;
        0o7 & if any_x { 0o7 } else { 0o6 }
    } else if uid == attrs.uid {
        (attrs.mode >> 6) & 0o7
    } else if gid == attrs.gid || gids.contains(&attrs.gid) {
        (attrs.mode >> 3) & 0o7
    } else {
        attrs.mode & 0o7
    };
    let (r, w, x) = (bits & 0o4 != 0, bits & 0o2 != 0, bits & 0o1 != 0);
    let mut granted = 0;
    if r {
        granted |= Access::READ.0;
    }
    if w {
        granted |= Access::MODIFY.0 | Access::EXTEND.0;
    }
    if attrs.ftype == FileType::Directory {
        if x {
            granted |= Access::LOOKUP.0;
        }
        if w && x {
            granted |= Access::DELETE.0;
        }
    } else if x {
        granted |= Access::EXECUTE.0;
    }
    Access(granted & wanted.0)
}
