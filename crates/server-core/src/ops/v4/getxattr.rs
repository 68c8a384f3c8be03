//! GETXATTR (RFC 8276 section 8.4.1): the value of one extended
//! attribute; NFS4ERR_NOXATTR when it is not set. Needs the read right
//! (ACCESS4_XAREAD follows it).

use proto::nfs4::*;

use super::status::stat4;
use super::{xattrs, Compound};
use crate::auth::may_read;

pub(super) fn run(cx: &mut Compound, args: GETXATTR4args) -> Result<xattrvalue4, nfsstat4> {
    let (obj, store) = xattrs::object(cx)?;
    let name = xattrs::name(&args.gxa_name)?;
    if !may_read(&obj.attrs, &obj.creds) {
        return Err(nfsstat4::NFS4ERR_ACCESS);
    }
    store.getxattr(obj.id, name).map_err(stat4)
}
