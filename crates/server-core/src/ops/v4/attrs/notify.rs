//! The attributes CB_NOTIFY carries (RFC 8881 section 20.4): of an entry
//! added, renamed or changed, and of the directory itself, encoded
//! outside any COMPOUND. Only attributes whose every change the backend
//! reports are offered: time_access moves on reads, which no event
//! reports, so it is not.

use proto::nfs4::*;
use vfs::{Attrs, FileId};
use xdr::{Encode, Encoder};

use super::encode::{ftype4, time};
use super::{add, bits, idmap};
use crate::fh::HandleData;
use crate::{Core, Export};

/// What a holder may be told of, lowest first.
const NOTIFIABLE: &[u32] = &[
    FATTR4_TYPE,
    FATTR4_CHANGE,
    FATTR4_SIZE,
    FATTR4_FSID,
    FATTR4_FILEHANDLE,
    FATTR4_FILEID,
    FATTR4_MODE,
    FATTR4_NUMLINKS,
    FATTR4_OWNER,
    FATTR4_OWNER_GROUP,
    FATTR4_RAWDEV,
    FATTR4_SPACE_USED,
    FATTR4_TIME_METADATA,
    FATTR4_TIME_MODIFY,
];

/// The attributes of `asked` this server can notify of
/// (`gddr_child_attributes`, `gddr_dir_attributes`): never one not asked.
pub(crate) fn notifiable(asked: &[u32]) -> bitmap4 {
    let mut m = Vec::new();
    for n in bits(asked).filter(|n| NOTIFIABLE.contains(n)) {
        add(&mut m, n);
    }
    m
}

/// The attributes in `mask` (already [`notifiable`]) of object `id` of
/// `export`, whose attributes are `a`.
pub(crate) fn encode(core: &Core, export: &Export, id: FileId, a: &Attrs, mask: &[u32]) -> fattr4 {
    let v4 = &core.v4.settings;
    let by_name = v4.owner_format == crate::state::OwnerFormat::Name;
    let mask = notifiable(mask);
    let mut e = Encoder::with_capacity(128);
    for n in bits(&mask) {
        match n {
            FATTR4_TYPE => ftype4(a.ftype).encode(&mut e),
            FATTR4_CHANGE => e.u64(a.change),
            FATTR4_SIZE => e.u64(a.size),
            FATTR4_FSID => fsid4 { major: u64::from(export.id), minor: a.fsid }.encode(&mut e),
            FATTR4_FILEHANDLE => {
                let h = HandleData { export_id: export.id, fileid: id, generation: a.generation };
                e.opaque_var(&core.fh.encode(&h))
            }
            FATTR4_FILEID => e.u64(a.fileid),
            FATTR4_MODE => e.u32(a.mode & 0o7777),
            FATTR4_NUMLINKS => e.u32(a.nlink),
            FATTR4_OWNER => idmap::encode_name(&mut e, v4, by_name, a.uid, false),
            FATTR4_OWNER_GROUP => idmap::encode_name(&mut e, v4, by_name, a.gid, true),
            FATTR4_RAWDEV => specdata4 { specdata1: a.rdev.0, specdata2: a.rdev.1 }.encode(&mut e),
            FATTR4_SPACE_USED => e.u64(a.used),
            FATTR4_TIME_METADATA => time(&mut e, a.ctime),
            FATTR4_TIME_MODIFY => time(&mut e, a.mtime),
            _ => {}
        }
    }
    fattr4 { attrmask: mask, attr_vals: e.into_bytes() }
}
