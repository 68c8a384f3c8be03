//! LISTXATTRS (RFC 8276 section 8.4.3): the names of the extended
//! attributes set, in pages. The cookie is the number of names already
//! returned from the sorted list; `lxa_maxcount` bounds the whole result
//! (cookie, names with their XDR lengths and padding, eof), and a first
//! name that does not fit is NFS4ERR_TOOSMALL. A cookie past the end is
//! NFS4ERR_BAD_COOKIE.

use proto::nfs4::*;

use super::status::stat4;
use super::{xattrs, Compound};
use crate::auth::may_read;

/// Cookie (8), array length (4), eof (4).
const FIXED: usize = 16;

pub(super) fn run(cx: &mut Compound, args: LISTXATTRS4args) -> Result<LISTXATTRS4resok, nfsstat4> {
    let (obj, store) = xattrs::object(cx)?;
    if !may_read(&obj.attrs, &obj.creds) {
        return Err(nfsstat4::NFS4ERR_ACCESS);
    }
    let names = store.listxattrs(obj.id).map_err(stat4)?;
    let start = usize::try_from(args.lxa_cookie).map_err(|_| nfsstat4::NFS4ERR_BAD_COOKIE)?;
    if start > names.len() {
        return Err(nfsstat4::NFS4ERR_BAD_COOKIE);
    }
    let budget = args.lxa_maxcount as usize;
    let mut used = FIXED;
    let mut page = Vec::new();
    for name in &names[start..] {
        let len = 4 + name.len().div_ceil(4) * 4;
        if used + len > budget {
            break;
        }
        used += len;
        page.push(name.clone());
    }
    if page.is_empty() && start < names.len() {
        return Err(nfsstat4::NFS4ERR_TOOSMALL);
    }
    if used > budget {
        return Err(nfsstat4::NFS4ERR_TOOSMALL);
    }
    let next = start + page.len();
    Ok(LISTXATTRS4resok { lxr_cookie: next as u64, lxr_eof: next == names.len(), lxr_names: page })
}
