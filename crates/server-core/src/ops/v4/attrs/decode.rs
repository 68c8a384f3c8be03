//! fattr4 decoding for SETATTR, CREATE and OPEN (RFC 8881 sections 5 and
//! 18.30): the values follow the bitmap lowest attribute first, so the
//! first attribute we cannot set ends the decoding with an error.

use proto::nfs4::*;
use vfs::{SetAttrs, SetTime, Timespec};
use xdr::{Decode, Decoder};

use super::super::Compound;
use super::{add, bits, idmap};

/// Attributes the RFC lets clients set (5.6, 5.7 and 5.8 tables, marked
/// W or R/W); every other known attribute is read-only.
const WRITABLE: [u32; 20] = [
    FATTR4_SIZE,
    FATTR4_ACL,
    FATTR4_ARCHIVE,
    FATTR4_HIDDEN,
    FATTR4_MIMETYPE,
    FATTR4_MODE,
    FATTR4_OWNER,
    FATTR4_OWNER_GROUP,
    FATTR4_SYSTEM,
    FATTR4_TIME_ACCESS_SET,
    FATTR4_TIME_BACKUP,
    FATTR4_TIME_CREATE,
    FATTR4_TIME_MODIFY_SET,
    FATTR4_DACL,
    FATTR4_SACL,
    FATTR4_LAYOUT_HINT,
    FATTR4_RETENTION_SET,
    FATTR4_RETENTEVT_SET,
    FATTR4_RETENTION_HOLD,
    FATTR4_MODE_SET_MASKED,
];

/// Longest owner string accepted.
const MAX_OWNER: u32 = 1024;

/// The highest attribute number of `minor` (RFC 7530 ends at
/// mounted_on_fileid, RFC 8881 at fs_charset_cap).
fn last_attr(minor: u32) -> u32 {
    if minor == 0 {
        FATTR4_MOUNTED_ON_FILEID
    } else {
        FATTR4_FS_CHARSET_CAP
    }
}

fn bad(_: xdr::XdrError) -> nfsstat4 {
    nfsstat4::NFS4ERR_BADXDR
}

fn set_time(d: &mut Decoder) -> Result<SetTime, nfsstat4> {
    match settime4::decode(d).map_err(bad)? {
        settime4::SET_TO_CLIENT_TIME4(t) => {
            if t.nseconds >= 1_000_000_000 {
                return Err(nfsstat4::NFS4ERR_INVAL);
            }
            Ok(SetTime::Client(Timespec { seconds: t.seconds, nanos: t.nseconds }))
        }
        settime4::default(_) => Ok(SetTime::ServerNow),
    }
}

pub(super) fn decode_set(cx: &Compound, fattr: &fattr4) -> Result<(SetAttrs, bitmap4), nfsstat4> {
    let last = last_attr(cx.minor);
    // Refuse before decoding any value: the whole request is in error.
    for n in bits(&fattr.attrmask) {
        if n <= last && !WRITABLE.contains(&n) {
            return Err(nfsstat4::NFS4ERR_INVAL);
        }
    }
    let settings = &cx.state().settings;
    let mut d = Decoder::new(fattr.attr_vals.clone());
    let mut set = SetAttrs::default();
    let mut given = Vec::new();
    for n in bits(&fattr.attrmask) {
        match n {
            FATTR4_SIZE => set.size = Some(d.u64().map_err(bad)?),
            FATTR4_MODE => set.mode = Some(d.u32().map_err(bad)? & 0o7777),
            FATTR4_OWNER => {
                let s = d.opaque_var(MAX_OWNER).map_err(bad)?;
                set.uid = Some(idmap::from_name(settings, &s, false)?);
            }
            FATTR4_OWNER_GROUP => {
                let s = d.opaque_var(MAX_OWNER).map_err(bad)?;
                set.gid = Some(idmap::from_name(settings, &s, true)?);
            }
            FATTR4_TIME_ACCESS_SET => set.atime = set_time(&mut d)?,
            FATTR4_TIME_MODIFY_SET => set.mtime = set_time(&mut d)?,
            _ => return Err(nfsstat4::NFS4ERR_ATTRNOTSUPP),
        }
        add(&mut given, n);
    }
    if d.remaining() != 0 {
        return Err(nfsstat4::NFS4ERR_BADXDR);
    }
    Ok((set, given))
}
