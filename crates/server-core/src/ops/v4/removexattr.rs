//! REMOVEXATTR (RFC 8276 section 8.4.4): removes one extended attribute;
//! NFS4ERR_NOXATTR when it is not set. Needs the write right; other
//! clients' delegations are recalled first.

use proto::nfs4::*;

use super::dirops::{recall_delegations, writable};
use super::open::file_key;
use super::status::stat4;
use super::{xattrs, Compound};
use crate::auth::may_write;

pub(super) fn run(cx: &mut Compound, args: REMOVEXATTR4args) -> Result<change_info4, nfsstat4> {
    let (obj, store) = xattrs::object(cx)?;
    let name = xattrs::name(&args.rxa_name)?;
    writable(&obj)?;
    if !may_write(&obj.attrs, &obj.creds) {
        return Err(nfsstat4::NFS4ERR_ACCESS);
    }
    recall_delegations(cx, file_key(&obj))?;
    let after = store.removexattr(obj.id, name).map_err(stat4)?;
    Ok(xattrs::cinfo(&obj, &after))
}
