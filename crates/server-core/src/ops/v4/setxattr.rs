//! SETXATTR (RFC 8276 section 8.4.2): creates or replaces one extended
//! attribute. SETXATTR4_CREATE fails with NFS4ERR_EXIST when it is set,
//! SETXATTR4_REPLACE with NFS4ERR_NOXATTR when it is not; a value the
//! host cannot store is NFS4ERR_XATTR2BIG. Needs the write right, and
//! other clients' delegations are recalled first, as for SETATTR.

use proto::nfs4::*;
use vfs::XattrSet;

use super::dirops::{recall_delegations, writable};
use super::open::file_key;
use super::status::stat4;
use super::{xattrs, Compound};
use crate::auth::may_write;

pub(super) fn run(cx: &mut Compound, args: SETXATTR4args) -> Result<change_info4, nfsstat4> {
    let (obj, store) = xattrs::object(cx)?;
    let name = xattrs::name(&args.sxa_key)?;
    writable(&obj)?;
    if args.sxa_value.len() > vfs::XATTR_SIZE_MAX {
        return Err(nfsstat4::NFS4ERR_XATTR2BIG);
    }
    if !may_write(&obj.attrs, &obj.creds) {
        return Err(nfsstat4::NFS4ERR_ACCESS);
    }
    recall_delegations(cx, file_key(&obj))?;
    let how = match args.sxa_option {
        setxattr_option4::SETXATTR4_EITHER => XattrSet::Either,
        setxattr_option4::SETXATTR4_CREATE => XattrSet::Create,
        setxattr_option4::SETXATTR4_REPLACE => XattrSet::Replace,
    };
    let after = store.setxattr(obj.id, name, &args.sxa_value, how).map_err(stat4)?;
    Ok(xattrs::cinfo(&obj, &after))
}
