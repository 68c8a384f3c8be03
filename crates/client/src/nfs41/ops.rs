//! The file API's calls over NFSv4.1, each one COMPOUND, answering in the
//! client's own types the layers above keep (`crate::results`). Where NFSv3 needs two calls (a
//! LOOKUP then a GETATTR, a CREATE then a LOOKUP) the compound carries
//! both, and a path is looked up in one compound however deep it is.

use bytes::Bytes;
use client_core::fattr::{Fattr, Sattr};
use client_core::v41::attrs::{self, bitmap, FS_INFO, FS_STAT, STAT};
use proto::nfs3::{nfs_fh3, stable_how, writeverf3};
use proto::nfs4::*;

use super::reply::Results;
use super::Nfs41;
use crate::error::{Error, Result};
use crate::results::{CreateHow, FsStat, ListEntry, Listed, Looked, Made, ReadOk, Written};

/// Times a READ or WRITE is sent again after its stateid went stale
/// under it (each time with the stateid that replaced it).
const STALE_STATEID_RETRIES: u32 = 2;

fn decoded(f: &fattr4) -> Result<attrs::Attrs> {
    attrs::decode(f).map_err(|why| Error::Decode { proc: "GETATTR", why })
}

/// Owner names the server sends as `name@domain` become local ids.
pub(crate) fn uid_by_name(name: &str) -> Option<u32> {
    id_by_name(name, "/etc/passwd")
}

pub(crate) fn gid_by_name(name: &str) -> Option<u32> {
    id_by_name(name, "/etc/group")
}

/// Names looked up in the host's databases are remembered (a server
/// that sends names sends them in every GETATTR); at most this many.
const MAX_NAMES_KEPT: usize = 4096;

fn id_by_name(name: &str, db: &'static str) -> Option<u32> {
    use std::collections::HashMap;
    use std::sync::OnceLock;
    /// (database, name) → id, or None for a name the host does not know.
    type Known = parking_lot::Mutex<HashMap<(&'static str, String), Option<u32>>>;
    static KNOWN: OnceLock<Known> = OnceLock::new();
    let known = KNOWN.get_or_init(Default::default);
    if let Some(id) = known.lock().get(&(db, name.to_string())) {
        return *id;
    }
    let text = std::fs::read_to_string(db).ok()?;
    let id = text.lines().find_map(|l| {
        let mut f = l.split(':');
        (f.next()? == name).then(|| f.nth(1)?.parse().ok())?
    });
    let mut known = known.lock();
    if known.len() < MAX_NAMES_KEPT {
        known.insert((db, name.to_string()), id);
    }
    id
}

pub(crate) fn to_fattr(f: &fattr4) -> Result<Fattr> {
    Ok(decoded(f)?.to_fattr(uid_by_name, gid_by_name))
}

pub(crate) fn putfh(fh: &Bytes) -> nfs_argop4 {
    nfs_argop4::OP_PUTFH(PUTFH4args { object: fh.clone() })
}

fn name4(name: &str) -> Bytes {
    Bytes::copy_from_slice(name.as_bytes())
}

pub(crate) fn lookup_op(name: &str) -> nfs_argop4 {
    if name == ".." {
        nfs_argop4::OP_LOOKUPP
    } else {
        nfs_argop4::OP_LOOKUP(LOOKUP4args { objname: name4(name) })
    }
}

fn stable4(s: stable_how) -> stable_how4 {
    match s {
        stable_how::UNSTABLE => stable_how4::UNSTABLE4,
        stable_how::DATA_SYNC => stable_how4::DATA_SYNC4,
        stable_how::FILE_SYNC => stable_how4::FILE_SYNC4,
    }
}

fn stable3(s: stable_how4) -> stable_how {
    match s {
        stable_how4::UNSTABLE4 => stable_how::UNSTABLE,
        stable_how4::DATA_SYNC4 => stable_how::DATA_SYNC,
        stable_how4::FILE_SYNC4 => stable_how::FILE_SYNC,
    }
}

pub(crate) fn getattr_op() -> nfs_argop4 {
    nfs_argop4::OP_GETATTR(GETATTR4args { attr_request: bitmap(STAT) })
}

// Each call's operations and what its reply means, apart from the call,
// so that `super::fuzzing` drives the same code with any reply.

/// PUTROOTFH, a LOOKUP per component of `export`, GETFH, GETATTR.
pub(crate) fn lookup_export_ops(export: &str) -> Vec<nfs_argop4> {
    let mut ops = vec![nfs_argop4::OP_PUTROOTFH];
    ops.extend(export.split('/').filter(|c| !c.is_empty()).map(lookup_op));
    ops.push(nfs_argop4::OP_GETFH);
    ops.push(nfs_argop4::OP_GETATTR(GETATTR4args { attr_request: bitmap(FS_INFO) }));
    ops
}

/// The root handle and lease time from the reply to `lookup_export_ops`
/// of an export of `components` components.
pub(crate) fn lookup_export_reply(res: &Results, components: usize) -> Result<(Bytes, u32)> {
    let fh = res.getfh(components + 1)?;
    let lease = decoded(res.fattr(components + 2)?)?.lease_time.unwrap_or(90);
    Ok((fh, lease))
}

pub(crate) fn io_limits_ops(fh: &Bytes) -> Vec<nfs_argop4> {
    vec![putfh(fh), nfs_argop4::OP_GETATTR(GETATTR4args { attr_request: bitmap(FS_INFO) })]
}

pub(crate) fn io_limits_reply(res: &Results) -> Result<crate::nfs::FsLimits> {
    let a = decoded(res.fattr(1)?)?;
    let clamp = |v: Option<u64>| v.map_or(0, |v| v.min(u32::MAX as u64) as u32);
    let time_delta_ns =
        a.time_delta.map(|t| (t.seconds.max(0) as u64).saturating_mul(1_000_000_000).saturating_add(t.nseconds as u64));
    Ok(crate::nfs::FsLimits { rtmax: clamp(a.maxread), wtmax: clamp(a.maxwrite), time_delta_ns })
}

/// LOOKUP with the directory's attributes too, in one compound: the name
/// cache keeps names only under known directory attributes.
pub(crate) fn lookup_ops(dir: &Bytes, name: &str) -> Vec<nfs_argop4> {
    vec![putfh(dir), getattr_op(), lookup_op(name), nfs_argop4::OP_GETFH, getattr_op()]
}

pub(crate) fn lookup_reply(res: &Results) -> Result<Looked> {
    Ok(Looked {
        object: nfs_fh3 { data: res.getfh(3)? },
        obj_attributes: Some(res.attrs(4)?),
        dir_attributes: Some(res.attrs(1)?),
    })
}

pub(crate) fn read_reply(res: &Results) -> Result<ReadOk> {
    res.pick(1, "READ", |r| match r {
        nfs_resop4::OP_READ(READ4res::NFS4_OK(ok)) => Some(ReadOk { data: ok.data.clone(), eof: ok.eof }),
        _ => None,
    })
}

pub(crate) fn create_other_ops(dir: &Bytes, name: &str, objtype: createtype4, set: &Sattr) -> Vec<nfs_argop4> {
    vec![
        putfh(dir),
        nfs_argop4::OP_CREATE(CREATE4args { objtype, objname: name4(name), createattrs: attrs::encode_sattr(set) }),
        nfs_argop4::OP_GETFH,
        getattr_op(),
    ]
}

pub(crate) fn create_other_reply(res: &Results) -> Result<(nfs_fh3, Fattr)> {
    Ok((nfs_fh3 { data: res.getfh(2)? }, res.attrs(3)?))
}

/// READDIR asking each entry's handle and attributes, behind the
/// directory's GETATTR.
pub(crate) fn readdirplus_ops(dir: &Bytes, cookie: u64, cookieverf: [u8; 8], maxcount: u32) -> Vec<nfs_argop4> {
    let args = READDIR4args {
        cookie,
        cookieverf,
        dircount: maxcount / 4,
        maxcount,
        attr_request: bitmap(&attrs::readdir_attrs()),
    };
    vec![putfh(dir), getattr_op(), nfs_argop4::OP_READDIR(args)]
}

pub(crate) fn readdirplus_reply(res: &Results) -> Result<Listed> {
    let dir_attributes = Some(res.attrs(1)?);
    let ok = res.pick(2, "READDIR", |r| match r {
        nfs_resop4::OP_READDIR(READDIR4res::NFS4_OK(ok)) => Some(ok),
        _ => None,
    })?;
    let mut entries = Vec::with_capacity(ok.reply.entries.len());
    for e in &ok.reply.entries {
        let a = decoded(&e.attrs)?;
        let usable = a.rdattr_error.is_none_or(|s| s == 0) && a.r#type.is_some();
        entries.push(ListEntry {
            fileid: a.fileid.unwrap_or(0),
            name: e.name.clone(),
            cookie: e.cookie,
            name_attributes: usable.then(|| a.to_fattr(uid_by_name, gid_by_name)),
            name_handle: a.filehandle.clone().filter(|_| usable).map(|data| nfs_fh3 { data }),
        });
    }
    Ok(Listed { dir_attributes, cookieverf: ok.cookieverf, entries, eof: ok.reply.eof })
}

pub(crate) fn fsstat_ops(fh: &Bytes) -> Vec<nfs_argop4> {
    vec![putfh(fh), nfs_argop4::OP_GETATTR(GETATTR4args { attr_request: bitmap(FS_STAT) })]
}

pub(crate) fn fsstat_reply(res: &Results) -> Result<FsStat> {
    let a = decoded(res.fattr(1)?)?;
    Ok(FsStat {
        tbytes: a.space_total.unwrap_or(0),
        fbytes: a.space_free.unwrap_or(0),
        abytes: a.space_avail.unwrap_or(0),
        tfiles: a.files_total.unwrap_or(0),
        ffiles: a.files_free.unwrap_or(0),
        afiles: a.files_avail.unwrap_or(0),
    })
}

impl Nfs41 {
    pub(crate) fn getattr_op(&self) -> nfs_argop4 {
        getattr_op()
    }

    /// The export's root handle and the server's lease time, in one
    /// compound: PUTROOTFH, a LOOKUP per component, GETFH, GETATTR.
    pub(crate) async fn lookup_export(&self, export: &str) -> Result<(Bytes, u32)> {
        let ops = lookup_export_ops(export);
        let components = ops.len().saturating_sub(3);
        let mount_failed = |e: Error| Error::Mount { export: export.into(), why: e.to_string() };
        let res = match self.compound(ops).await {
            Err(e @ Error::Nfs4 { status: nfsstat4::NFS4ERR_WRONGSEC, .. }) => {
                return Err(self.wrong_sec(export).await.unwrap_or_else(|| mount_failed(e)))
            }
            other => other.map_err(mount_failed)?,
        };
        lookup_export_reply(&res, components).map_err(mount_failed)
    }

    /// The security flavor this mount's calls go under.
    fn conn_flavor(&self) -> rpcsec::Flavor {
        self.conn.flavor()
    }

    /// Why the export refused this mount's flavor: the flavors SECINFO
    /// lists for it, from its parent (RFC 8881 section 2.6.3.1). `None`
    /// when SECINFO does not tell or lists this mount's flavor: the
    /// refusal is then about something else (an export that requires
    /// RPC-with-TLS, `xprtsec=`, answers WRONGSEC too).
    async fn wrong_sec(&self, export: &str) -> Option<Error> {
        let asked = self.conn_flavor();
        let comps: Vec<&str> = export.split('/').filter(|c| !c.is_empty()).collect();
        let (last, parents) = comps.split_last()?;
        let mut ops = vec![nfs_argop4::OP_PUTROOTFH];
        ops.extend(parents.iter().map(|c| lookup_op(c)));
        ops.push(nfs_argop4::OP_SECINFO(SECINFO4args { name: Bytes::copy_from_slice(last.as_bytes()) }));
        let offered = match self.compound(ops).await.and_then(|r| r.op(comps.len()).cloned()) {
            Ok(nfs_resop4::OP_SECINFO(SECINFO4res::NFS4_OK(list))) => super::secinfo::flavors(&list),
            _ => return None,
        };
        (!offered.is_empty() && !offered.contains(&asked)).then(|| Error::WrongSec {
            export: export.into(),
            asked,
            offered,
        })
    }

    /// The largest READ and WRITE the server takes.
    pub async fn io_limits(&self, fh: &Bytes) -> Result<crate::nfs::FsLimits> {
        io_limits_reply(&self.compound(io_limits_ops(fh)).await?)
    }

    pub async fn getattr(&self, fh: &Bytes) -> Result<Fattr> {
        self.compound(vec![putfh(fh), getattr_op()]).await?.attrs(1)
    }

    /// SETATTR, and the file's attributes after it.
    pub async fn setattr(&self, fh: &Bytes, set: Sattr) -> Result<Fattr> {
        // A size change needs the open's stateid when the file is open
        // here (the server checks it against share reservations).
        let stateid = self.io_stateid(fh, true);
        let ops = vec![
            putfh(fh),
            nfs_argop4::OP_SETATTR(SETATTR4args { stateid, obj_attributes: attrs::encode_sattr(&set) }),
            self.getattr_op(),
        ];
        self.compound(ops).await?.attrs(2)
    }

    pub async fn lookup(&self, dir: &Bytes, name: &str) -> Result<Looked> {
        lookup_reply(&self.compound(lookup_ops(dir, name)).await?)
    }

    /// A READ or WRITE (or SETATTR) with the stateid `io_stateid` names
    /// now, sent again if that stateid went stale meanwhile: a
    /// delegation returned (recalled) or an open upgraded between the
    /// choice and the server's check.
    pub(crate) async fn with_io_stateid(
        &self,
        fh: &Bytes,
        write: bool,
        make: impl Fn(stateid4) -> Vec<nfs_argop4>,
    ) -> Result<Results> {
        if self.lost.lock().contains(fh) {
            return Err(Error::Nfs4 { op: if write { "WRITE" } else { "READ" }, status: nfsstat4::NFS4ERR_IO });
        }
        let mut tries = 0;
        loop {
            let stateid = self.io_stateid(fh, write);
            match self.compound(make(stateid.clone())).await {
                Err(Error::Nfs4 { status, .. })
                    if tries < STALE_STATEID_RETRIES
                        && matches!(
                            status,
                            nfsstat4::NFS4ERR_BAD_STATEID
                                | nfsstat4::NFS4ERR_OLD_STATEID
                                | nfsstat4::NFS4ERR_DELEG_REVOKED
                                | nfsstat4::NFS4ERR_ADMIN_REVOKED
                        )
                        && self.io_stateid(fh, write) != stateid =>
                {
                    tries += 1;
                }
                other => return other,
            }
        }
    }

    pub async fn read(&self, fh: &Bytes, offset: u64, count: u32) -> Result<ReadOk> {
        if let Some(ok) = self.ds_read(fh, offset, count).await {
            return Ok(ok.into());
        }
        if self.read_plus && self.has_v42() {
            let (data, _holes, eof) = self.read_plus(fh, offset, count).await?;
            return Ok(ReadOk { data, eof });
        }
        let read = |stateid| vec![putfh(fh), nfs_argop4::OP_READ(READ4args { stateid, offset, count })];
        read_reply(&self.with_io_stateid(fh, false, read).await?)
    }

    pub async fn write(&self, fh: &Bytes, offset: u64, data: Bytes, stable: stable_how) -> Result<Written> {
        if let Some(ok) = self.ds_write(fh, offset, &data, stable).await {
            return Ok(ok.into());
        }
        let stable = stable4(stable);
        let write = |stateid| {
            let args = WRITE4args { stateid, offset, stable, data: data.clone() };
            vec![putfh(fh), nfs_argop4::OP_WRITE(args)]
        };
        let res = self.with_io_stateid(fh, true, write).await?;
        res.pick(1, "WRITE", |r| match r {
            nfs_resop4::OP_WRITE(WRITE4res::NFS4_OK(ok)) => {
                Some(Written { count: ok.count, committed: stable3(ok.committed), verf: ok.writeverf })
            }
            _ => None,
        })
    }

    /// COMMIT of the whole file; the write verifier it answered with.
    pub async fn commit(&self, fh: &Bytes) -> Result<writeverf3> {
        if let Some(r) = self.ds_commit(fh).await {
            return r.map(|ok| ok.verf);
        }
        let res = self.compound(vec![putfh(fh), nfs_argop4::OP_COMMIT(COMMIT4args { offset: 0, count: 0 })]).await?;
        res.pick(1, "COMMIT", |r| match r {
            nfs_resop4::OP_COMMIT(COMMIT4res::NFS4_OK(ok)) => Some(ok.writeverf),
            _ => None,
        })
    }

    /// A regular file made with OPEN (NFSv4 has no other way): the open
    /// stays, as a spare the next open of the handle through the file API
    /// takes over.
    pub async fn create(&self, dir: &Bytes, name: &str, how: CreateHow) -> Result<Made> {
        let how4 = match how {
            CreateHow::Unchecked(a) => createhow4::UNCHECKED4(attrs::encode_sattr(&a)),
            CreateHow::Guarded(a) => createhow4::GUARDED4(attrs::encode_sattr(&a)),
            CreateHow::Exclusive(verf) => createhow4::EXCLUSIVE4(verf),
        };
        let (fh, a, dir_after) = self.open_name(dir, name, super::OpenAccess::Both, Some(how4)).await?;
        self.keep_spare(&fh);
        Ok(Made { obj: Some(nfs_fh3 { data: fh }), obj_attributes: Some(a), dir_after: Some(dir_after) })
    }

    /// CREATE of a directory, symlink or special file, with its handle
    /// and attributes in the same compound.
    pub async fn create_other(
        &self,
        dir: &Bytes,
        name: &str,
        objtype: createtype4,
        set: &Sattr,
    ) -> Result<(nfs_fh3, Fattr)> {
        create_other_reply(&self.compound(create_other_ops(dir, name, objtype, set)).await?)
    }

    /// REMOVE (files and directories alike in NFSv4).
    pub async fn remove(&self, dir: &Bytes, name: &str) -> Result<()> {
        self.compound(vec![putfh(dir), nfs_argop4::OP_REMOVE(REMOVE4args { target: name4(name) })]).await.map(drop)
    }

    pub async fn rename(&self, from: &Bytes, from_name: &str, to: &Bytes, to_name: &str) -> Result<()> {
        let ops = vec![
            putfh(from),
            nfs_argop4::OP_SAVEFH,
            putfh(to),
            nfs_argop4::OP_RENAME(RENAME4args { oldname: name4(from_name), newname: name4(to_name) }),
        ];
        self.compound(ops).await.map(drop)
    }

    /// LINK, and the file's attributes after it.
    pub async fn link(&self, fh: &Bytes, dir: &Bytes, name: &str) -> Result<Fattr> {
        let ops = vec![
            putfh(fh),
            nfs_argop4::OP_SAVEFH,
            putfh(dir),
            nfs_argop4::OP_LINK(LINK4args { newname: name4(name) }),
            nfs_argop4::OP_RESTOREFH,
            self.getattr_op(),
        ];
        self.compound(ops).await?.attrs(5)
    }

    pub async fn readlink(&self, fh: &Bytes) -> Result<Bytes> {
        let res = self.compound(vec![putfh(fh), nfs_argop4::OP_READLINK]).await?;
        res.pick(1, "READLINK", |r| match r {
            nfs_resop4::OP_READLINK(READLINK4res::NFS4_OK(ok)) => Some(ok.link.clone()),
            _ => None,
        })
    }

    /// READDIR asking each entry's handle and attributes, as NFSv3's
    /// READDIRPLUS gives them, `.` and `..` left out as NFSv4 servers do.
    pub async fn readdirplus(&self, dir: &Bytes, cookie: u64, cookieverf: [u8; 8], maxcount: u32) -> Result<Listed> {
        readdirplus_reply(&self.compound(readdirplus_ops(dir, cookie, cookieverf, maxcount)).await?)
    }

    pub async fn fsstat(&self, fh: &Bytes) -> Result<FsStat> {
        fsstat_reply(&self.compound(fsstat_ops(fh)).await?)
    }
}
