//! Name checks shared by both backends.
//!
//! Names arrive straight from the network. The server already rejects `/`
//! and NUL, but the backends check again so that a bug (or a new caller)
//! upstream can never turn a name into a path that walks out of the tree.

use crate::{VfsError, VfsResult};

/// Longest name accepted when a backend's settings do not say otherwise
/// (the Linux NAME_MAX).
pub const DEFAULT_MAX_NAME_LEN: usize = 255;

/// Checks a name that creates, removes or renames an entry: one component,
/// never `.` or `..` (they name existing directories, not entries).
pub fn check_entry_name(name: &[u8], max_len: usize) -> VfsResult<()> {
    if name.is_empty() || name == b"." || name == b".." {
        return Err(VfsError::Invalid);
    }
    if name.iter().any(|&b| b == b'/' || b == 0) {
        return Err(VfsError::Invalid);
    }
    if name.len() > max_len {
        return Err(VfsError::NameTooLong);
    }
    Ok(())
}

/// What a lookup name refers to.
#[derive(Debug, PartialEq, Eq)]
pub enum LookupName<'a> {
    Dot,
    DotDot,
    Entry(&'a [u8]),
}

/// Checks a lookup name; unlike entry names, `.` and `..` are meaningful.
pub fn classify_lookup(name: &[u8], max_len: usize) -> VfsResult<LookupName<'_>> {
    match name {
        b"." => Ok(LookupName::Dot),
        b".." => Ok(LookupName::DotDot),
        _ => check_entry_name(name, max_len).map(|()| LookupName::Entry(name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_path_like_names() {
        for bad in [&b""[..], b".", b"..", b"a/b", b"/", b"a\0b"] {
            assert_eq!(check_entry_name(bad, 255), Err(VfsError::Invalid), "{bad:?}");
        }
        assert_eq!(check_entry_name(&[b'x'; 256], 255), Err(VfsError::NameTooLong));
        assert_eq!(check_entry_name(b"...", 255), Ok(()));
        assert_eq!(classify_lookup(b"..", 255), Ok(LookupName::DotDot));
        assert_eq!(classify_lookup(b"a/..", 255), Err(VfsError::Invalid));
    }
}
