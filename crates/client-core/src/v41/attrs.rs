//! NFSv4 attributes on the client side (RFC 8881 section 5): the bitmap
//! the client asks for, decoding a `fattr4` into the client's attribute
//! record, and encoding the attributes a SETATTR, OPEN or CREATE sets.
//!
//! The client's file API keeps one attribute record for every protocol
//! version, [`Fattr`], so the caches, the mount and the benchmarks need
//! no second shape. Its times are `nfstime4`'s whole range. The v4
//! `change` attribute is not kept (the caches compare ctime, which moves
//! whenever change does on every server this client meets).

use bytes::Bytes;
use proto::nfs3::{ftype3, specdata3};
use proto::nfs4::*;
use xdr::{Decoder, Encoder};

use crate::fattr::{Fattr, Sattr, SetTime, Time};

/// Longest owner or group string accepted (RFC 8881 leaves it open).
const MAX_OWNER: u32 = 1024;

pub use proto::bitmap4::{bits, of as bitmap};

/// What a stat needs: everything [`Fattr`] holds, plus `change`.
pub const STAT: &[u32] = &[
    FATTR4_TYPE,
    FATTR4_CHANGE,
    FATTR4_SIZE,
    FATTR4_FSID,
    FATTR4_FILEID,
    FATTR4_MODE,
    FATTR4_NUMLINKS,
    FATTR4_OWNER,
    FATTR4_OWNER_GROUP,
    FATTR4_RAWDEV,
    FATTR4_SPACE_USED,
    FATTR4_TIME_ACCESS,
    FATTR4_TIME_METADATA,
    FATTR4_TIME_MODIFY,
];

/// What a directory listing asks for each entry: a stat, the handle, and
/// an error in place of the attributes the server could not read.
pub fn readdir_attrs() -> Vec<u32> {
    let mut v = vec![FATTR4_RDATTR_ERROR, FATTR4_FILEHANDLE];
    v.extend_from_slice(STAT);
    v
}

/// What statfs(2) needs.
pub const FS_STAT: &[u32] = &[
    FATTR4_FILES_AVAIL,
    FATTR4_FILES_FREE,
    FATTR4_FILES_TOTAL,
    FATTR4_SPACE_AVAIL,
    FATTR4_SPACE_FREE,
    FATTR4_SPACE_TOTAL,
];

/// What the client learns about a file system at mount.
pub const FS_INFO: &[u32] = &[FATTR4_LEASE_TIME, FATTR4_MAXREAD, FATTR4_MAXWRITE, FATTR4_TIME_DELTA];

/// Every attribute this client can decode, as returned by a server.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Attrs {
    pub r#type: Option<nfs_ftype4>,
    pub change: Option<u64>,
    pub size: Option<u64>,
    pub fsid: Option<fsid4>,
    pub lease_time: Option<u32>,
    /// Why a READDIR entry's other attributes are missing.
    pub rdattr_error: Option<u32>,
    pub filehandle: Option<Bytes>,
    pub fileid: Option<u64>,
    pub files_avail: Option<u64>,
    pub files_free: Option<u64>,
    pub files_total: Option<u64>,
    pub maxread: Option<u64>,
    pub maxwrite: Option<u64>,
    pub mode: Option<u32>,
    pub numlinks: Option<u32>,
    pub owner: Option<Bytes>,
    pub owner_group: Option<Bytes>,
    pub rawdev: Option<specdata4>,
    pub space_avail: Option<u64>,
    pub space_free: Option<u64>,
    pub space_total: Option<u64>,
    pub space_used: Option<u64>,
    pub time_access: Option<nfstime4>,
    /// The granularity of the server's times.
    pub time_delta: Option<nfstime4>,
    pub time_metadata: Option<nfstime4>,
    pub time_modify: Option<nfstime4>,
}

fn decode_time(d: &mut Decoder) -> xdr::Result<nfstime4> {
    Ok(nfstime4 { seconds: d.i64()?, nseconds: d.u32()? })
}

/// Decodes `fattr.attr_vals` as laid out by `fattr.attrmask`. An attribute
/// this client did not ask for and cannot skip (the values carry no
/// lengths) is an error, as is anything left over.
pub fn decode(fattr: &fattr4) -> Result<Attrs, String> {
    let mut d = Decoder::new(fattr.attr_vals.clone());
    let mut a = Attrs::default();
    let bad = |attr: u32| move |e: xdr::XdrError| format!("attribute {attr}: {e}");
    for attr in bits(&fattr.attrmask) {
        let d = &mut d;
        match attr {
            FATTR4_TYPE => {
                let t = d.u32().map_err(bad(attr))?;
                a.r#type = Some(ftype4(t).ok_or_else(|| format!("unknown file type {t}"))?);
            }
            FATTR4_CHANGE => a.change = Some(d.u64().map_err(bad(attr))?),
            FATTR4_SIZE => a.size = Some(d.u64().map_err(bad(attr))?),
            FATTR4_FSID => {
                a.fsid = Some(fsid4 { major: d.u64().map_err(bad(attr))?, minor: d.u64().map_err(bad(attr))? })
            }
            FATTR4_LEASE_TIME => a.lease_time = Some(d.u32().map_err(bad(attr))?),
            FATTR4_RDATTR_ERROR => a.rdattr_error = Some(d.u32().map_err(bad(attr))?),
            FATTR4_FILEHANDLE => a.filehandle = Some(d.opaque_var(NFS4_FHSIZE).map_err(bad(attr))?),
            FATTR4_FILEID => a.fileid = Some(d.u64().map_err(bad(attr))?),
            FATTR4_FILES_AVAIL => a.files_avail = Some(d.u64().map_err(bad(attr))?),
            FATTR4_FILES_FREE => a.files_free = Some(d.u64().map_err(bad(attr))?),
            FATTR4_FILES_TOTAL => a.files_total = Some(d.u64().map_err(bad(attr))?),
            FATTR4_MAXREAD => a.maxread = Some(d.u64().map_err(bad(attr))?),
            FATTR4_MAXWRITE => a.maxwrite = Some(d.u64().map_err(bad(attr))?),
            FATTR4_MODE => a.mode = Some(d.u32().map_err(bad(attr))?),
            FATTR4_NUMLINKS => a.numlinks = Some(d.u32().map_err(bad(attr))?),
            FATTR4_OWNER => a.owner = Some(d.opaque_var(MAX_OWNER).map_err(bad(attr))?),
            FATTR4_OWNER_GROUP => a.owner_group = Some(d.opaque_var(MAX_OWNER).map_err(bad(attr))?),
            FATTR4_RAWDEV => {
                a.rawdev =
                    Some(specdata4 { specdata1: d.u32().map_err(bad(attr))?, specdata2: d.u32().map_err(bad(attr))? })
            }
            FATTR4_SPACE_AVAIL => a.space_avail = Some(d.u64().map_err(bad(attr))?),
            FATTR4_SPACE_FREE => a.space_free = Some(d.u64().map_err(bad(attr))?),
            FATTR4_SPACE_TOTAL => a.space_total = Some(d.u64().map_err(bad(attr))?),
            FATTR4_SPACE_USED => a.space_used = Some(d.u64().map_err(bad(attr))?),
            FATTR4_TIME_ACCESS => a.time_access = Some(decode_time(d).map_err(bad(attr))?),
            FATTR4_TIME_DELTA => a.time_delta = Some(decode_time(d).map_err(bad(attr))?),
            FATTR4_TIME_METADATA => a.time_metadata = Some(decode_time(d).map_err(bad(attr))?),
            FATTR4_TIME_MODIFY => a.time_modify = Some(decode_time(d).map_err(bad(attr))?),
            other => return Err(format!("attribute {other} was not asked for")),
        }
    }
    if d.remaining() != 0 {
        return Err(format!("{} bytes after the last attribute", d.remaining()));
    }
    Ok(a)
}

fn ftype4(t: u32) -> Option<nfs_ftype4> {
    use nfs_ftype4::*;
    Some(match t {
        1 => NF4REG,
        2 => NF4DIR,
        3 => NF4BLK,
        4 => NF4CHR,
        5 => NF4LNK,
        6 => NF4SOCK,
        7 => NF4FIFO,
        8 => NF4ATTRDIR,
        9 => NF4NAMEDATTR,
        _ => return None,
    })
}

/// How owner strings become ids: numeric strings are ids (what servers
/// send to AUTH_SYS clients), `name@domain` goes through `by_name`;
/// anything unknown is `nobody` (65534), as the Linux client shows it.
pub const NOBODY: u32 = 65534;

pub fn owner_id(s: &[u8], by_name: impl Fn(&str) -> Option<u32>) -> u32 {
    let Ok(s) = std::str::from_utf8(s) else { return NOBODY };
    if let Ok(id) = s.parse::<u32>() {
        return id;
    }
    let name = s.split('@').next().unwrap_or_default();
    by_name(name).unwrap_or(NOBODY)
}

fn time(t: &Option<nfstime4>) -> Time {
    t.as_ref().map_or(Time::default(), |t| Time { seconds: t.seconds, nseconds: t.nseconds })
}

impl Attrs {
    /// The record the file API keeps. `uid_of`/`gid_of` map owner names.
    pub fn to_fattr(&self, uid_of: impl Fn(&str) -> Option<u32>, gid_of: impl Fn(&str) -> Option<u32>) -> Fattr {
        use nfs_ftype4::*;
        let r#type = match self.r#type {
            Some(NF4DIR | NF4ATTRDIR) => ftype3::NF3DIR,
            Some(NF4BLK) => ftype3::NF3BLK,
            Some(NF4CHR) => ftype3::NF3CHR,
            Some(NF4LNK) => ftype3::NF3LNK,
            Some(NF4SOCK) => ftype3::NF3SOCK,
            Some(NF4FIFO) => ftype3::NF3FIFO,
            _ => ftype3::NF3REG,
        };
        let rdev = self
            .rawdev
            .as_ref()
            .map_or(specdata3::default(), |r| specdata3 { specdata1: r.specdata1, specdata2: r.specdata2 });
        Fattr {
            r#type,
            mode: self.mode.unwrap_or(0) & 0o7777,
            nlink: self.numlinks.unwrap_or(1),
            uid: self.owner.as_deref().map_or(NOBODY, |o| owner_id(o, &uid_of)),
            gid: self.owner_group.as_deref().map_or(NOBODY, |o| owner_id(o, &gid_of)),
            size: self.size.unwrap_or(0),
            used: self.space_used.unwrap_or(0),
            rdev,
            fsid: self.fsid.as_ref().map_or(0, |f| f.major ^ f.minor.rotate_left(32)),
            fileid: self.fileid.unwrap_or(0),
            atime: time(&self.time_access),
            mtime: time(&self.time_modify),
            ctime: time(&self.time_metadata),
        }
    }
}

impl Attrs {
    /// Whether these are enough for a stat of their own (a name new to a
    /// delegated directory): its type, identity, size, mode, links,
    /// owners and the times a cache compares.
    pub fn stat_complete(&self) -> bool {
        self.r#type.is_some()
            && self.fileid.is_some()
            && self.size.is_some()
            && self.mode.is_some()
            && self.numlinks.is_some()
            && self.owner.is_some()
            && self.owner_group.is_some()
            && self.time_modify.is_some()
            && self.time_metadata.is_some()
    }

    /// `f` with the attributes present here in place of its own, the
    /// others kept: a notification carries only the attributes asked for
    /// (RFC 8881 section 20.4), which need not be a whole stat.
    pub fn merge_into(
        &self,
        f: &mut Fattr,
        uid_of: impl Fn(&str) -> Option<u32>,
        gid_of: impl Fn(&str) -> Option<u32>,
    ) {
        let whole = self.to_fattr(&uid_of, &gid_of);
        if self.r#type.is_some() {
            f.r#type = whole.r#type;
        }
        if self.mode.is_some() {
            f.mode = whole.mode;
        }
        if self.numlinks.is_some() {
            f.nlink = whole.nlink;
        }
        if self.owner.is_some() {
            f.uid = whole.uid;
        }
        if self.owner_group.is_some() {
            f.gid = whole.gid;
        }
        if self.size.is_some() {
            f.size = whole.size;
        }
        if self.space_used.is_some() {
            f.used = whole.used;
        }
        if self.rawdev.is_some() {
            f.rdev = whole.rdev;
        }
        if self.fsid.is_some() {
            f.fsid = whole.fsid;
        }
        if self.fileid.is_some() {
            f.fileid = whole.fileid;
        }
        if self.time_access.is_some() {
            f.atime = whole.atime;
        }
        if self.time_modify.is_some() {
            f.mtime = whole.mtime;
        }
        if self.time_metadata.is_some() {
            f.ctime = whole.ctime;
        }
    }
}

fn settime(e: &mut Encoder, how: SetTime) {
    match how {
        SetTime::DontChange => {}
        SetTime::ServerTime => e.u32(time_how4::SET_TO_SERVER_TIME4 as u32),
        SetTime::ClientTime(t) => {
            e.u32(time_how4::SET_TO_CLIENT_TIME4 as u32);
            e.i64(t.seconds);
            e.u32(t.nseconds);
        }
    }
}

/// The attributes a SETATTR (or a create) sets. Owners go as numeric
/// strings, as AUTH_SYS clients send them; times as `nfstime4`, whole.
pub fn encode_sattr(s: &Sattr) -> fattr4 {
    let mut set = Vec::new();
    let mut e = Encoder::new();
    // Values go in ascending attribute order.
    if let Some(size) = s.size {
        set.push(FATTR4_SIZE);
        e.u64(size);
    }
    if let Some(mode) = s.mode {
        set.push(FATTR4_MODE);
        e.u32(mode & 0o7777);
    }
    if let Some(uid) = s.uid {
        set.push(FATTR4_OWNER);
        e.opaque_var(uid.to_string().as_bytes());
    }
    if let Some(gid) = s.gid {
        set.push(FATTR4_OWNER_GROUP);
        e.opaque_var(gid.to_string().as_bytes());
    }
    if s.atime != SetTime::DontChange {
        set.push(FATTR4_TIME_ACCESS_SET);
        settime(&mut e, s.atime);
    }
    if s.mtime != SetTime::DontChange {
        set.push(FATTR4_TIME_MODIFY_SET);
        settime(&mut e, s.mtime);
    }
    fattr4 { attrmask: bitmap(&set), attr_vals: e.into_bytes() }
}

#[cfg(test)]
mod tests;
