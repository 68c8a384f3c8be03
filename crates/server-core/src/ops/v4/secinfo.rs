//! SECINFO (RFC 8881 section 18.29, RFC 7530 section 16.31): the flavors
//! that may be used for the named object: AUTH_SYS, then AUTH_NONE
//! (callers squashed to the anonymous user). The name must exist. In
//! minor version 1 the current filehandle is consumed (RFC 8881 section
//! 2.6.3.1.1.8); in 4.0 it is kept.

use proto::nfs4::*;
use vfs::Access;

use super::dirops::directory;
use super::status::stat4;
use super::{check_name, Compound, Fh};
use crate::auth::may;

const AUTH_NONE: u32 = 0;
const AUTH_SYS: u32 = 1;

/// The flavors we accept, most preferred first.
pub(super) fn flavors() -> SECINFO4resok {
    vec![secinfo4::default(AUTH_SYS), secinfo4::default(AUTH_NONE)]
}

/// After a successful SECINFO or SECINFO_NO_NAME.
pub(super) fn consume_fh(cx: &mut Compound) {
    if cx.minor >= 1 {
        cx.cfh = None;
        cx.current_stateid = None;
    }
}

pub(super) fn run(cx: &mut Compound, args: SECINFO4args) -> Result<SECINFO4resok, nfsstat4> {
    match cx.cfh()? {
        Fh::Pseudo(node) => {
            let name = check_name(cx.core, &args.name)?;
            cx.pseudo_lookup(node, name)?;
        }
        fh => {
            let dir = cx.resolve(fh)?;
            directory(&dir, false)?;
            let name = check_name(cx.core, &args.name)?;
            if !may(&dir.attrs, &dir.creds, Access::LOOKUP) {
                return Err(nfsstat4::NFS4ERR_ACCESS);
            }
            dir.fs().lookup(dir.id, name).map_err(stat4)?;
        }
    }
    consume_fh(cx);
    Ok(flavors())
}
