//! fattr4 encoding (RFC 8881 section 5) for export objects and for the
//! directories of the pseudo file system.

use proto::nfs4::*;
use vfs::{Attrs, FileId, FileType, FsStat, Timespec};
use xdr::{Encode, Encoder};

use super::super::compound::Obj;
use super::super::status::stat4;
use super::super::{Compound, Fh};
use super::{add, bits, has, idmap};
use crate::Export;

/// Pseudo-fs fileids have the top bit set (backend ids never do in
/// practice: inode numbers and MemFs counters stay far below it).
const PSEUDO_FILEID: u64 = 1 << 63;
/// The fileid of the (virtual) directory an export's root is mounted
/// on, as the pseudo file system lists it: distinct from every pseudo
/// directory and from the other exports' mount points.
const MOUNT_POINT_FILEID: u64 = PSEUDO_FILEID | 1 << 62;
/// The pseudo file system's fsid: no export's (whose major is its u32
/// export id) can equal it.
const PSEUDO_FSID: fsid4 = fsid4 { major: 1 << 32, minor: 0 };

/// Attributes we can return for every object, lowest first; minor
/// version 1 adds suppattr_exclcreat.
const SUPPORTED: &[u32] = &[
    FATTR4_SUPPORTED_ATTRS,
    FATTR4_TYPE,
    FATTR4_FH_EXPIRE_TYPE,
    FATTR4_CHANGE,
    FATTR4_SIZE,
    FATTR4_LINK_SUPPORT,
    FATTR4_SYMLINK_SUPPORT,
    FATTR4_NAMED_ATTR,
    FATTR4_FSID,
    FATTR4_UNIQUE_HANDLES,
    FATTR4_LEASE_TIME,
    FATTR4_RDATTR_ERROR,
    FATTR4_ACLSUPPORT,
    FATTR4_CANSETTIME,
    FATTR4_CASE_INSENSITIVE,
    FATTR4_CASE_PRESERVING,
    FATTR4_CHOWN_RESTRICTED,
    FATTR4_FILEHANDLE,
    FATTR4_FILEID,
    FATTR4_FILES_AVAIL,
    FATTR4_FILES_FREE,
    FATTR4_FILES_TOTAL,
    FATTR4_HOMOGENEOUS,
    FATTR4_MAXFILESIZE,
    FATTR4_MAXLINK,
    FATTR4_MAXNAME,
    FATTR4_MAXREAD,
    FATTR4_MAXWRITE,
    FATTR4_MODE,
    FATTR4_NO_TRUNC,
    FATTR4_NUMLINKS,
    FATTR4_OWNER,
    FATTR4_OWNER_GROUP,
    FATTR4_RAWDEV,
    FATTR4_SPACE_AVAIL,
    FATTR4_SPACE_FREE,
    FATTR4_SPACE_TOTAL,
    FATTR4_SPACE_USED,
    FATTR4_TIME_ACCESS,
    FATTR4_TIME_ACCESS_SET,
    FATTR4_TIME_DELTA,
    FATTR4_TIME_METADATA,
    FATTR4_TIME_MODIFY,
    FATTR4_TIME_MODIFY_SET,
    FATTR4_MOUNTED_ON_FILEID,
];

/// Attributes minor version 2 adds (RFC 7862 section 12.2, RFC 8276
/// section 8.2). clone_blksize is returned only for objects whose backend
/// clones.
const SUPPORTED_V42: &[u32] =
    &[FATTR4_CLONE_BLKSIZE, FATTR4_CHANGE_ATTR_TYPE, FATTR4_XATTR_SUPPORT, FATTR4_OPEN_ARGUMENTS];

/// What OPEN takes here (RFC 9754's `open_arguments`): every access and
/// deny mode, the delegation wishes "any" and "none", the claims open.rs
/// serves (not the DELEGATE_PREV ones) and every create mode.
fn open_arguments() -> open_arguments4 {
    let set = |values: &[u32]| {
        let mut m = Vec::new();
        for v in values {
            add(&mut m, *v);
        }
        m
    };
    use open_args_open_claim4::*;
    open_arguments4 {
        oa_share_access: set(&[1, 2, 3]),
        oa_share_deny: set(&[0, 1, 2, 3]),
        oa_share_access_want: set(&[
            open_args_share_access_want4::OPEN_ARGS_SHARE_ACCESS_WANT_ANY_DELEG as u32,
            open_args_share_access_want4::OPEN_ARGS_SHARE_ACCESS_WANT_NO_DELEG as u32,
        ]),
        oa_open_claim: set(&[
            OPEN_ARGS_OPEN_CLAIM_NULL as u32,
            OPEN_ARGS_OPEN_CLAIM_PREVIOUS as u32,
            OPEN_ARGS_OPEN_CLAIM_DELEGATE_CUR as u32,
            OPEN_ARGS_OPEN_CLAIM_FH as u32,
            OPEN_ARGS_OPEN_CLAIM_DELEG_CUR_FH as u32,
        ]),
        oa_create_mode: set(&[0, 1, 2, 3]),
    }
}

/// Bytes reserved for one object's attribute values: what clients ask of
/// each READDIR entry (type, change, size, fsid, fileid, mode, links,
/// owners, times, file handle...) takes about 180, and a buffer that has
/// to grow costs a second allocation and a copy.
const ATTRS_CAPACITY: usize = 256;

/// Attributes settable by an EXCLUSIVE4_1 create: not the times, which
/// may hold the verifier until the follow-up SETATTR.
const EXCLCREAT: [u32; 4] = [FATTR4_SIZE, FATTR4_MODE, FATTR4_OWNER, FATTR4_OWNER_GROUP];

/// The `supported_attrs` bitmap for `minor`; `pnfs`: this server hands
/// out layouts (`fs_layout_types`, minor version 1 on). Built once per
/// combination: every GETATTR and every READDIR entry consults it.
pub(crate) fn supported_mask(minor: u32, pnfs: bool) -> &'static bitmap4 {
    static MASKS: [[std::sync::OnceLock<bitmap4>; 2]; 3] = [const { [const { std::sync::OnceLock::new() }; 2] }; 3];
    MASKS[minor.min(2) as usize][usize::from(pnfs)].get_or_init(|| build_supported_mask(minor.min(2), pnfs))
}

fn build_supported_mask(minor: u32, pnfs: bool) -> bitmap4 {
    let mut m = Vec::new();
    for n in SUPPORTED {
        add(&mut m, *n);
    }
    if minor >= 1 {
        add(&mut m, FATTR4_SUPPATTR_EXCLCREAT);
        if pnfs {
            add(&mut m, FATTR4_FS_LAYOUT_TYPES);
        }
    }
    if minor >= 2 {
        for n in SUPPORTED_V42 {
            add(&mut m, *n);
        }
    }
    m
}

fn pseudo_fileid(node: u32) -> u64 {
    PSEUDO_FILEID | u64::from(node)
}

/// What attributes are encoded for.
pub(crate) enum Subject<'a> {
    /// A pseudo-fs directory.
    Pseudo(u32),
    Obj {
        export: &'a Export,
        id: FileId,
        attrs: Attrs,
    },
}

impl<'a> Subject<'a> {
    /// The current file handle's object (GETATTR, VERIFY).
    pub fn current(cx: &Compound<'a>) -> Result<Subject<'a>, nfsstat4> {
        match cx.cfh()? {
            Fh::Pseudo(n) => Ok(Subject::Pseudo(n)),
            fh => Ok(Subject::of(cx.resolve(fh)?)),
        }
    }

    pub fn of(o: Obj<'a>) -> Subject<'a> {
        Subject::Obj { export: o.export, id: o.id, attrs: o.attrs }
    }

    fn fh(&self) -> Fh {
        match self {
            Subject::Pseudo(n) => Fh::Pseudo(*n),
            Subject::Obj { export, id, attrs } => {
                Fh::Obj { export_id: export.id, id: *id, generation: attrs.generation }
            }
        }
    }
}

pub(super) fn ftype4(t: FileType) -> nfs_ftype4 {
    match t {
        FileType::Regular => nfs_ftype4::NF4REG,
        FileType::Directory => nfs_ftype4::NF4DIR,
        FileType::BlockDevice => nfs_ftype4::NF4BLK,
        FileType::CharDevice => nfs_ftype4::NF4CHR,
        FileType::Symlink => nfs_ftype4::NF4LNK,
        FileType::Socket => nfs_ftype4::NF4SOCK,
        FileType::Fifo => nfs_ftype4::NF4FIFO,
    }
}

pub(super) fn time(e: &mut Encoder, t: Timespec) {
    nfstime4 { seconds: t.seconds, nseconds: t.nanos.min(999_999_999) }.encode(e);
}

/// The values that differ between export objects and pseudo directories.
struct Values {
    ftype: FileType,
    change: u64,
    size: u64,
    fsid: fsid4,
    fileid: u64,
    mode: u32,
    nlink: u32,
    uid: u32,
    gid: u32,
    rdev: (u32, u32),
    used: u64,
    atime: Timespec,
    mtime: Timespec,
    ctime: Timespec,
    mounted_on: u64,
}

fn values(cx: &Compound, s: &Subject) -> Values {
    match s {
        Subject::Pseudo(node) => {
            let boot = Timespec { seconds: i64::from(cx.state().boot), nanos: 0 };
            let subdirs = cx.core.pseudo.nodes.get(*node as usize).map_or(0, |n| {
                n.children.iter().filter(|(_, c)| matches!(c, super::super::pseudo::Child::Node(_))).count()
            });
            let fileid = pseudo_fileid(*node);
            Values {
                ftype: FileType::Directory,
                change: u64::from(cx.state().boot),
                size: 4096,
                fsid: PSEUDO_FSID,
                fileid,
                mode: 0o555,
                nlink: 2 + subdirs as u32,
                uid: 0,
                gid: 0,
                rdev: (0, 0),
                used: 4096,
                atime: boot,
                mtime: boot,
                ctime: boot,
                mounted_on: fileid,
            }
        }
        Subject::Obj { export, id, attrs } => {
            let mounted_on = match cx.core.pseudo.mount_point(export.id) {
                Some(_) if *id == export.fs.root() => MOUNT_POINT_FILEID | u64::from(export.id),
                _ => attrs.fileid,
            };
            Values {
                ftype: attrs.ftype,
                change: attrs.change,
                size: attrs.size,
                fsid: fsid4 { major: u64::from(export.id), minor: attrs.fsid },
                fileid: attrs.fileid,
                mode: attrs.mode & 0o7777,
                nlink: attrs.nlink,
                uid: attrs.uid,
                gid: attrs.gid,
                rdev: attrs.rdev,
                used: attrs.used,
                atime: attrs.atime,
                mtime: attrs.mtime,
                ctime: attrs.ctime,
                mounted_on,
            }
        }
    }
}

/// Encodes the attributes of `s` asked for in `request` that we support
/// (others are left out of the returned mask). Write-only attributes are
/// left out too; callers that must refuse them check first. Fails only
/// when a supported value cannot be obtained (file-system statistics).
pub(crate) fn encode(cx: &Compound, s: &Subject, request: &[u32]) -> Result<fattr4, nfsstat4> {
    let supported = supported_mask(cx.minor, super::super::pnfs::data_servers(cx).is_some());
    let settings = cx.core.settings();
    let v4 = &cx.state().settings;
    let v = values(cx, s);
    let wants_stat = [
        FATTR4_FILES_AVAIL,
        FATTR4_FILES_FREE,
        FATTR4_FILES_TOTAL,
        FATTR4_SPACE_AVAIL,
        FATTR4_SPACE_FREE,
        FATTR4_SPACE_TOTAL,
    ]
    .iter()
    .any(|n| has(request, *n));
    let stat = match s {
        Subject::Obj { export, id, .. } if wants_stat => export.fs.fsstat(*id).map_err(stat4)?,
        _ => FsStat::default(),
    };
    let mut mask = Vec::new();
    let mut e = Encoder::with_capacity(ATTRS_CAPACITY);
    for n in bits(request) {
        if !has(supported, n) || super::WRITE_ONLY.contains(&n) {
            continue;
        }
        add(&mut mask, n);
        match n {
            FATTR4_SUPPORTED_ATTRS => supported.encode(&mut e),
            FATTR4_FS_LAYOUT_TYPES => {
                let flex = matches!(s, Subject::Obj { export, .. } if export.fs.shared_store().is_some());
                let types = if flex { vec![layouttype4::LAYOUT4_FLEX_FILES] } else { vec![] };
                types.encode(&mut e)
            }
            FATTR4_TYPE => ftype4(v.ftype).encode(&mut e),
            FATTR4_FH_EXPIRE_TYPE => e.u32(FH4_PERSISTENT),
            FATTR4_CHANGE => e.u64(v.change),
            FATTR4_SIZE => e.u64(v.size),
            FATTR4_LINK_SUPPORT | FATTR4_SYMLINK_SUPPORT => e.bool(true),
            FATTR4_NAMED_ATTR => e.bool(false),
            FATTR4_FSID => v.fsid.encode(&mut e),
            FATTR4_UNIQUE_HANDLES => e.bool(true),
            FATTR4_LEASE_TIME => e.u32(v4.lease_secs),
            FATTR4_RDATTR_ERROR => nfsstat4::NFS4_OK.encode(&mut e),
            FATTR4_ACLSUPPORT => e.u32(0),
            FATTR4_CANSETTIME => e.bool(true),
            FATTR4_CASE_INSENSITIVE => e.bool(false),
            FATTR4_CASE_PRESERVING => e.bool(true),
            FATTR4_CHOWN_RESTRICTED => e.bool(true),
            FATTR4_FILEHANDLE => e.opaque_var(&cx.fh_wire(s.fh())),
            FATTR4_FILEID => e.u64(v.fileid),
            FATTR4_FILES_AVAIL => e.u64(stat.avail_files),
            FATTR4_FILES_FREE => e.u64(stat.free_files),
            FATTR4_FILES_TOTAL => e.u64(stat.total_files),
            FATTR4_HOMOGENEOUS => e.bool(true),
            FATTR4_MAXFILESIZE => e.u64(settings.max_file_size),
            FATTR4_MAXLINK => e.u32(settings.link_max),
            FATTR4_MAXNAME => e.u32(settings.name_max),
            FATTR4_MAXREAD => e.u64(settings.rtmax.into()),
            FATTR4_MAXWRITE => e.u64(settings.wtmax.into()),
            FATTR4_MODE => e.u32(v.mode),
            FATTR4_NO_TRUNC => e.bool(true),
            FATTR4_NUMLINKS => e.u32(v.nlink),
            FATTR4_OWNER => idmap::encode_name(&mut e, v4, idmap::by_name(v4, &cx.call.auth), v.uid, false),
            FATTR4_OWNER_GROUP => idmap::encode_name(&mut e, v4, idmap::by_name(v4, &cx.call.auth), v.gid, true),
            FATTR4_RAWDEV => specdata4 { specdata1: v.rdev.0, specdata2: v.rdev.1 }.encode(&mut e),
            FATTR4_SPACE_AVAIL => e.u64(stat.avail_bytes),
            FATTR4_SPACE_FREE => e.u64(stat.free_bytes),
            FATTR4_SPACE_TOTAL => e.u64(stat.total_bytes),
            FATTR4_SPACE_USED => e.u64(v.used),
            FATTR4_TIME_ACCESS => time(&mut e, v.atime),
            FATTR4_TIME_DELTA => time(&mut e, Timespec { seconds: 0, nanos: 1 }),
            FATTR4_TIME_METADATA => time(&mut e, v.ctime),
            FATTR4_TIME_MODIFY => time(&mut e, v.mtime),
            FATTR4_MOUNTED_ON_FILEID => e.u64(v.mounted_on),
            FATTR4_CHANGE_ATTR_TYPE => {
                let kind = match s {
                    Subject::Obj { export, .. } if !export.fs.change_is_ctime() => {
                        change_attr_type4::NFS4_CHANGE_TYPE_IS_MONOTONIC_INCR
                    }
                    // LocalFs derives `change` from ctime, and pseudo
                    // directories from the boot time.
                    _ => change_attr_type4::NFS4_CHANGE_TYPE_IS_TIME_METADATA,
                };
                kind.encode(&mut e)
            }
            FATTR4_OPEN_ARGUMENTS => open_arguments().encode(&mut e),
            FATTR4_XATTR_SUPPORT => e.bool(matches!(s, Subject::Obj { export, .. } if export.fs.xattrs().is_some())),
            FATTR4_CLONE_BLKSIZE => {
                let block = match s {
                    Subject::Obj { export, .. } => export.fs.data_ops().and_then(|o| o.clone_blksize()),
                    _ => None,
                };
                match block {
                    Some(b) => e.u32(b),
                    // No CLONE here: the attribute is not returned.
                    None => drop_bit(&mut mask, n),
                }
            }
            FATTR4_SUPPATTR_EXCLCREAT => {
                let mut m = Vec::new();
                for a in EXCLCREAT {
                    add(&mut m, a);
                }
                m.encode(&mut e)
            }
            _ => {
                // In the supported set without an encoder: a bug, but the
                // reply stays well-formed by leaving the attribute out.
                tracing::error!(attribute = n, "supported NFSv4 attribute has no encoder; left out");
                drop_bit(&mut mask, n);
            }
        }
    }
    Ok(fattr4 { attrmask: mask, attr_vals: e.into_bytes() })
}

/// Takes attribute `n` back out of a reply's mask.
fn drop_bit(mask: &mut bitmap4, n: u32) {
    if let Some(w) = mask.get_mut((n / 32) as usize) {
        *w &= !(1 << (n % 32));
    }
}

/// A READDIR entry whose attributes could not be obtained: rdattr_error
/// alone, carrying the error (RFC 8881 section 18.23.3).
pub(crate) fn rdattr_error_only(err: nfsstat4) -> fattr4 {
    let mut mask = Vec::new();
    add(&mut mask, FATTR4_RDATTR_ERROR);
    fattr4 { attrmask: mask, attr_vals: xdr::to_bytes(&err) }
}
