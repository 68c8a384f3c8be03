//! NFSv3 (RFC 1813): the dispatch table and what every procedure shares —
//! handle resolution with export rules, attribute conversion, weak cache
//! consistency data, name checks, and the one `VfsError → nfsstat3` map.

mod access;
mod commit;
mod create;
mod delegations;
mod fsinfo;
mod fsstat;
mod getattr;
mod link;
mod lookup;
mod mkdir;
mod mknod;
mod null;
mod pathconf;
mod read;
mod readdir;
mod readdirplus;
mod readlink;
mod remove;
mod rename;
mod rmdir;
mod setattr;
mod symlink;
mod write;

use bytes::Bytes;
use proto::nfs3::*;
use proto::rpc::auth_stat;
use vfs::{Attrs, FileId, FileType, SetAttrs, SetTime, Timespec, Vfs, VfsError};
use xdr::{Decode, Decoder, Encoder};

use crate::fh::HandleData;
use crate::rpc::{run, Auth, Call, Dispatched};
use crate::{Core, Denied, Export, WarnKind};

pub const PROGRAM: u32 = NFS_PROGRAM;
pub const VERSION: u32 = NFS_V3;

/// Per-call context handed to every procedure.
pub(crate) struct Ctx<'a> {
    pub core: &'a Core,
    pub call: &'a Call<'a>,
    /// A handle of an export whose `sec=` does not admit the call's
    /// flavor was met: the call is refused with AUTH_TOOWEAK, whatever
    /// the procedure made of the ACCES it got.
    pub too_weak: std::cell::Cell<bool>,
}

pub(crate) use crate::ops::Obj;

impl Obj<'_> {
    /// Current attributes (after an operation), or nothing if they cannot
    /// be read.
    pub fn post_op(&self) -> post_op_attr {
        post_op(self.fs(), self.id)
    }

    /// wcc_data with this object's snapshot as "before".
    pub fn wcc(&self) -> wcc_data {
        wcc_data { before: Some(wcc_attr_of(&self.attrs)), after: self.post_op() }
    }

    /// wcc_data when nothing was changed: the snapshot on both sides.
    pub fn wcc_unchanged(&self) -> wcc_data {
        wcc_data { before: Some(wcc_attr_of(&self.attrs)), after: Some(fattr(&self.attrs)) }
    }
}

impl Ctx<'_> {
    /// Resolves a handle to a live object the caller may address:
    /// BADHANDLE for a malformed or forged handle; STALE for an unknown
    /// export or an object that is gone or was replaced; ACCES for a
    /// client no rule of the export admits.
    pub fn resolve(&self, fh: &nfs_fh3) -> Result<Obj<'_>, nfsstat3> {
        let core = self.core;
        let peer = self.call.peer;
        let Ok(h) = core.fh.decode(&fh.data) else {
            core.warn(
                WarnKind::Handle,
                || tracing::warn!(peer = %peer.addr, len = fh.data.len(), "malformed or forged file handle"),
            );
            return Err(nfsstat3::NFS3ERR_BADHANDLE);
        };
        let Some(export) = core.export_by_id(h.export_id) else {
            tracing::info!(peer = %peer.addr, export_id = h.export_id, "handle for an export that no longer exists");
            return Err(nfsstat3::NFS3ERR_STALE);
        };
        let rule = match core.rule_for(export, peer, "NFS request") {
            Ok(r) => r,
            Err(Denied::NoRule | Denied::InsecurePort | Denied::TransportSecurity) => {
                return Err(nfsstat3::NFS3ERR_ACCES)
            }
        };
        let flavor = self.call.auth.flavor();
        if !rule.options.admits(flavor) {
            core.warn(WarnKind::Auth, || {
                tracing::warn!(peer = %peer.addr, export = %export.path, %flavor, "NFS request refused: the export's sec= does not admit this flavor")
            });
            self.too_weak.set(true);
            return Err(nfsstat3::NFS3ERR_ACCES);
        }
        let creds = crate::ops::creds_for(&self.call.auth, rule);
        let attrs = match export.fs.getattr(h.fileid) {
            Ok(a) => a,
            Err(VfsError::NotFound | VfsError::Stale) => return Err(nfsstat3::NFS3ERR_STALE),
            Err(e) => return Err(stat(e)),
        };
        if attrs.generation != h.generation {
            return Err(nfsstat3::NFS3ERR_STALE);
        }
        Ok(Obj { export, rule, creds, id: h.fileid, attrs })
    }

    /// The handle of `id` in `export`.
    pub fn handle(&self, export: &Export, id: FileId, attrs: &Attrs) -> nfs_fh3 {
        let h = HandleData { export_id: export.id, fileid: id, generation: attrs.generation };
        nfs_fh3 { data: Bytes::copy_from_slice(&self.core.fh.encode(&h)) }
    }

    pub fn cookieverf(&self, dir: &Obj) -> cookieverf3 {
        let h = HandleData { export_id: dir.export.id, fileid: dir.id, generation: dir.attrs.generation };
        self.core.fh.cookieverf(&h)
    }
}

/// The one mapping from backend errors to NFSv3 status. I/O errors and
/// unsupported operations are server-side faults and logged as errors.
pub(crate) fn stat(e: VfsError) -> nfsstat3 {
    match e {
        VfsError::Perm => nfsstat3::NFS3ERR_PERM,
        VfsError::NotFound => nfsstat3::NFS3ERR_NOENT,
        VfsError::Io(errno) => {
            tracing::error!("backend I/O error: {errno}");
            nfsstat3::NFS3ERR_IO
        }
        // Reported as what its errno means; the data it may have lost is
        // COMMIT's concern (ops::commit).
        e @ VfsError::WriteBack(_) => {
            tracing::error!("backend {e}");
            match e.without_write_back() {
                VfsError::Io(_) => nfsstat3::NFS3ERR_IO,
                e => stat(e),
            }
        }
        VfsError::NxIo => nfsstat3::NFS3ERR_NXIO,
        VfsError::Access => nfsstat3::NFS3ERR_ACCES,
        VfsError::Exists => nfsstat3::NFS3ERR_EXIST,
        VfsError::XDev => nfsstat3::NFS3ERR_XDEV,
        VfsError::NotDir => nfsstat3::NFS3ERR_NOTDIR,
        VfsError::IsDir => nfsstat3::NFS3ERR_ISDIR,
        VfsError::Invalid => nfsstat3::NFS3ERR_INVAL,
        VfsError::FBig => nfsstat3::NFS3ERR_FBIG,
        VfsError::NoSpace => nfsstat3::NFS3ERR_NOSPC,
        VfsError::ReadOnly => nfsstat3::NFS3ERR_ROFS,
        VfsError::MLink => nfsstat3::NFS3ERR_MLINK,
        VfsError::NameTooLong => nfsstat3::NFS3ERR_NAMETOOLONG,
        VfsError::NotEmpty => nfsstat3::NFS3ERR_NOTEMPTY,
        VfsError::Quota => nfsstat3::NFS3ERR_DQUOT,
        VfsError::Stale => nfsstat3::NFS3ERR_STALE,
        VfsError::BadCookie => nfsstat3::NFS3ERR_BAD_COOKIE,
        VfsError::NotSync => nfsstat3::NFS3ERR_NOT_SYNC,
        VfsError::NotSupported => nfsstat3::NFS3ERR_NOTSUPP,
        VfsError::Delay => nfsstat3::NFS3ERR_JUKEBOX,
        VfsError::BadType => nfsstat3::NFS3ERR_BADTYPE,
        // NFSv3 has no extended attributes; these cannot arise from its
        // procedures, but the mapping stays total.
        VfsError::NoXattr => nfsstat3::NFS3ERR_NOENT,
        VfsError::XattrTooBig => nfsstat3::NFS3ERR_FBIG,
    }
}

pub(crate) fn ftype3_of(t: FileType) -> ftype3 {
    match t {
        FileType::Regular => ftype3::NF3REG,
        FileType::Directory => ftype3::NF3DIR,
        FileType::BlockDevice => ftype3::NF3BLK,
        FileType::CharDevice => ftype3::NF3CHR,
        FileType::Symlink => ftype3::NF3LNK,
        FileType::Socket => ftype3::NF3SOCK,
        FileType::Fifo => ftype3::NF3FIFO,
    }
}

/// NFSv3 times are unsigned 32-bit seconds: times before 1970 or after
/// 2106 are clamped rather than wrapped.
pub(crate) fn nfstime(t: Timespec) -> nfstime3 {
    nfstime3 { seconds: u32::try_from(t.seconds.max(0)).unwrap_or(u32::MAX), nseconds: t.nanos.min(999_999_999) }
}

pub(crate) fn fattr(a: &Attrs) -> fattr3 {
    fattr3 {
        r#type: ftype3_of(a.ftype),
        mode: a.mode & 0o7777,
        nlink: a.nlink,
        uid: a.uid,
        gid: a.gid,
        size: a.size,
        used: a.used,
        rdev: specdata3 { specdata1: a.rdev.0, specdata2: a.rdev.1 },
        fsid: a.fsid,
        fileid: a.fileid,
        atime: nfstime(a.atime),
        mtime: nfstime(a.mtime),
        ctime: nfstime(a.ctime),
    }
}

pub(crate) fn wcc_attr_of(a: &Attrs) -> wcc_attr {
    wcc_attr { size: a.size, mtime: nfstime(a.mtime), ctime: nfstime(a.ctime) }
}

pub(crate) fn post_op(fs: &dyn Vfs, id: FileId) -> post_op_attr {
    fs.getattr(id).ok().map(|a| fattr(&a))
}

/// wcc_data for a handle that could not be resolved.
pub(crate) fn no_wcc() -> wcc_data {
    wcc_data { before: None, after: None }
}

fn client_time(t: &nfstime3) -> Result<Timespec, nfsstat3> {
    if t.nseconds >= 1_000_000_000 {
        return Err(nfsstat3::NFS3ERR_INVAL);
    }
    Ok(Timespec { seconds: i64::from(t.seconds), nanos: t.nseconds })
}

fn set_time(disc: time_how, client: Option<&nfstime3>) -> Result<SetTime, nfsstat3> {
    match (disc, client) {
        (_, Some(t)) => Ok(SetTime::Client(client_time(t)?)),
        (time_how::SET_TO_SERVER_TIME, None) => Ok(SetTime::ServerNow),
        _ => Ok(SetTime::DontChange),
    }
}

/// sattr3 → the backend's SetAttrs; mode bits beyond 07777 are dropped.
pub(crate) fn set_attrs(s: &sattr3) -> Result<SetAttrs, nfsstat3> {
    let atime = match &s.atime {
        set_atime::SET_TO_CLIENT_TIME(t) => set_time(time_how::SET_TO_CLIENT_TIME, Some(t))?,
        set_atime::default(d) => set_time(*d, None)?,
    };
    let mtime = match &s.mtime {
        set_mtime::SET_TO_CLIENT_TIME(t) => set_time(time_how::SET_TO_CLIENT_TIME, Some(t))?,
        set_mtime::default(d) => set_time(*d, None)?,
    };
    Ok(SetAttrs { mode: s.mode.map(|m| m & 0o7777), uid: s.uid, gid: s.gid, size: s.size, atime, mtime })
}

/// Checks a name for lookup-type use. RFC 1813 section 2.6: an empty name
/// is NFS3ERR_ACCES; a `/` or NUL can never be one path component.
pub(crate) fn check_name(core: &Core, name: &[u8]) -> Result<(), nfsstat3> {
    if name.is_empty() {
        return Err(nfsstat3::NFS3ERR_ACCES);
    }
    if name.contains(&b'/') || name.contains(&0) {
        return Err(nfsstat3::NFS3ERR_INVAL);
    }
    if name.len() > core.settings.name_max as usize {
        return Err(nfsstat3::NFS3ERR_NAMETOOLONG);
    }
    Ok(())
}

pub(crate) fn is_dot(name: &[u8]) -> bool {
    name == b"." || name == b".."
}

/// A name that is about to be created: `.` and `..` already exist
/// (RFC 1813 MKDIR: NFS3ERR_EXIST).
pub(crate) fn check_new_name(core: &Core, name: &[u8]) -> Result<(), nfsstat3> {
    check_name(core, name)?;
    if is_dot(name) {
        return Err(nfsstat3::NFS3ERR_EXIST);
    }
    Ok(())
}

/// A name about to be removed: RFC 1813 RMDIR lets servers answer
/// NFS3ERR_INVAL for `.` and NFS3ERR_EXIST for `..`.
pub(crate) fn check_remove_name(core: &Core, name: &[u8]) -> Result<(), nfsstat3> {
    check_name(core, name)?;
    match name {
        b"." => Err(nfsstat3::NFS3ERR_INVAL),
        b".." => Err(nfsstat3::NFS3ERR_EXIST),
        _ => Ok(()),
    }
}

/// The attributes CREATE, MKDIR, SYMLINK or MKNOD gives a new object in
/// `dir`, if the caller may give them (`ops::create`).
pub(crate) fn create_attrs(dir: &Obj, s: &sattr3) -> Result<SetAttrs, nfsstat3> {
    let set = set_attrs(s)?;
    crate::ops::create::check_attrs(&dir.creds, &set).map_err(stat)?;
    Ok(set)
}

/// Every modifying procedure on a read-only export. Logged at debug: a
/// client trying to write to a read-only export is ordinary.
pub(crate) fn check_writable(obj: &Obj) -> Result<(), nfsstat3> {
    if obj.read_only() {
        tracing::debug!(export = %obj.export.path, "write refused on read-only export");
        return Err(nfsstat3::NFS3ERR_ROFS);
    }
    Ok(())
}

macro_rules! proc_table {
    ($ctx:ident, $call:ident, $d:ident, $e:ident; $($num:path => $label:literal, $args:ty, $module:ident :: $f:ident, $res:ident;)*) => {
        match $call.proc_ {
            $(
                $num => run($call, $d, $e, $label, <$args>::decode, |a| {
                    let r = $module::$f(&$ctx, a);
                    let ok = matches!(r, $res::NFS3_OK(_));
                    (r, ok)
                }),
            )*
            _ => Dispatched::ProcUnavail { label: "nfs3.unknown" },
        }
    };
}

pub fn dispatch(core: &Core, call: &Call, d: &mut Decoder, e: &mut Encoder) -> Dispatched {
    if call.proc_ == NFS3_NULL {
        return run(call, d, e, "nfs3.NULL", |_| Ok(()), |()| (null::null(), true));
    }
    // Every NFS procedure but NULL acts as some user; AUTH_NONE names none.
    if call.auth == Auth::None {
        return Dispatched::AuthError { label: "nfs3.auth_none", stat: auth_stat::AUTH_TOOWEAK };
    }
    let ctx = Ctx { core, call, too_weak: Default::default() };
    let done = dispatch_procedure(&ctx, d, e);
    if ctx.too_weak.get() {
        return Dispatched::AuthError { label: "nfs3.too_weak", stat: auth_stat::AUTH_TOOWEAK };
    }
    done
}

fn dispatch_procedure(ctx: &Ctx, d: &mut Decoder, e: &mut Encoder) -> Dispatched {
    let (core, call) = (ctx.core, ctx.call);
    if call.proc_ == NFS3_READ && (core.sendfile || call.nowait) {
        return read::dispatch_special(ctx, d, e);
    }
    proc_table! { ctx, call, d, e;
        NFS3_GETATTR => "nfs3.GETATTR", GETATTR3args, getattr::getattr, GETATTR3res;
        NFS3_SETATTR => "nfs3.SETATTR", SETATTR3args, setattr::setattr, SETATTR3res;
        NFS3_LOOKUP => "nfs3.LOOKUP", LOOKUP3args, lookup::lookup, LOOKUP3res;
        NFS3_ACCESS => "nfs3.ACCESS", ACCESS3args, access::access, ACCESS3res;
        NFS3_READLINK => "nfs3.READLINK", READLINK3args, readlink::readlink, READLINK3res;
        NFS3_READ => "nfs3.READ", READ3args, read::read, READ3res;
        NFS3_WRITE => "nfs3.WRITE", WRITE3args, write::write, WRITE3res;
        NFS3_CREATE => "nfs3.CREATE", CREATE3args, create::create, CREATE3res;
        NFS3_MKDIR => "nfs3.MKDIR", MKDIR3args, mkdir::mkdir, MKDIR3res;
        NFS3_SYMLINK => "nfs3.SYMLINK", SYMLINK3args, symlink::symlink, SYMLINK3res;
        NFS3_MKNOD => "nfs3.MKNOD", MKNOD3args, mknod::mknod, MKNOD3res;
        NFS3_REMOVE => "nfs3.REMOVE", REMOVE3args, remove::remove, REMOVE3res;
        NFS3_RMDIR => "nfs3.RMDIR", RMDIR3args, rmdir::rmdir, RMDIR3res;
        NFS3_RENAME => "nfs3.RENAME", RENAME3args, rename::rename, RENAME3res;
        NFS3_LINK => "nfs3.LINK", LINK3args, link::link, LINK3res;
        NFS3_READDIR => "nfs3.READDIR", READDIR3args, readdir::readdir, READDIR3res;
        NFS3_READDIRPLUS => "nfs3.READDIRPLUS", READDIRPLUS3args, readdirplus::readdirplus, READDIRPLUS3res;
        NFS3_FSSTAT => "nfs3.FSSTAT", FSSTAT3args, fsstat::fsstat, FSSTAT3res;
        NFS3_FSINFO => "nfs3.FSINFO", FSINFO3args, fsinfo::fsinfo, FSINFO3res;
        NFS3_PATHCONF => "nfs3.PATHCONF", PATHCONF3args, pathconf::pathconf, PATHCONF3res;
        NFS3_COMMIT => "nfs3.COMMIT", COMMIT3args, commit::commit, COMMIT3res;
    }
}

/// The directory of a create-type procedure (CREATE, MKDIR, SYMLINK,
/// MKNOD), checked: writable export, a directory, a creatable name, and
/// the caller's right to add entries. On failure, the status and the
/// directory's wcc_data for the reply.
// The error carries the reply's wcc_data; it is built once per failed
// request, so its size does not matter.
#[allow(clippy::result_large_err)]
pub(crate) fn dir_for_create<'a>(ctx: &'a Ctx, at: &diropargs3) -> Result<Obj<'a>, (nfsstat3, wcc_data)> {
    modifiable(ctx, &at.dir, |dir| {
        if !dir.is_dir() {
            return Err(nfsstat3::NFS3ERR_NOTDIR);
        }
        check_new_name(ctx.core, &at.name)?;
        if !crate::auth::may_add_entry(&dir.attrs, &dir.creds) {
            return Err(nfsstat3::NFS3ERR_ACCES);
        }
        delegations::before_dir_change(ctx, dir, delegations::Change::Add(&at.name))
    })
}

/// The object a modifying procedure acts on: resolved, on a writable
/// export, and passing the procedure's own `check`. On failure, the status
/// and the object's wcc_data for the reply (none when the handle itself
/// failed, the snapshot on both sides otherwise: nothing was changed).
#[allow(clippy::result_large_err)]
pub(crate) fn modifiable<'a>(
    ctx: &'a Ctx,
    fh: &nfs_fh3,
    check: impl FnOnce(&Obj) -> Result<(), nfsstat3>,
) -> Result<Obj<'a>, (nfsstat3, wcc_data)> {
    let o = ctx.resolve(fh).map_err(|s| (s, no_wcc()))?;
    match check_writable(&o).and_then(|()| check(&o)) {
        Ok(()) => Ok(o),
        Err(s) => Err((s, o.wcc_unchanged())),
    }
}

/// READ, WRITE and COMMIT act on regular files only.
pub(crate) fn check_regular(o: &Obj) -> Result<(), nfsstat3> {
    match o.attrs.ftype {
        FileType::Regular => Ok(()),
        FileType::Directory => Err(nfsstat3::NFS3ERR_ISDIR),
        _ => Err(nfsstat3::NFS3ERR_INVAL),
    }
}

/// The file of WRITE or COMMIT: writable export, a regular file, and the
/// caller's write permission.
#[allow(clippy::result_large_err)]
pub(crate) fn file_for_write<'a>(ctx: &'a Ctx, fh: &nfs_fh3) -> Result<Obj<'a>, (nfsstat3, wcc_data)> {
    modifiable(ctx, fh, |o| {
        check_regular(o)?;
        if !crate::auth::may_write(&o.attrs, &o.creds) {
            return Err(nfsstat3::NFS3ERR_ACCES);
        }
        Ok(())
    })
}

/// REMOVE and RMDIR, which differ only in the backend call (`unlink`) and
/// the reply types. Where the sticky-directory rule applies (only the owner
/// of the entry or of the directory, or root, may remove from a sticky
/// directory), or the caller may not remove at all, or an NFSv4 client
/// may hold a delegation on it (recalled first), the victim is looked up
/// first; elsewhere the backend's own answer (NOENT, NOTDIR, ...) is the
/// reply, and the directory is resolved once. Ok or Err, the directory's
/// wcc_data.
#[allow(clippy::result_large_err)]
pub(crate) fn remove_entry(
    ctx: &Ctx,
    at: &diropargs3,
    unlink: impl FnOnce(&dyn Vfs, FileId, &[u8]) -> vfs::VfsResult<()>,
) -> Result<wcc_data, (nfsstat3, wcc_data)> {
    let mut removed = None;
    let dir = modifiable(ctx, &at.dir, |dir| {
        if !dir.is_dir() {
            return Err(nfsstat3::NFS3ERR_NOTDIR);
        }
        check_remove_name(ctx.core, &at.name)?;
        // Refused anyway: looked up too, so a missing name still says NOENT.
        let refused = !crate::auth::may_delete_entry(&dir.attrs, None, &dir.creds);
        let delegated = ctx.core.v4.any_delegated();
        // An NFSv4 client may hold the file open under the promise that
        // it outlives its last name (OPEN4_RESULT_PRESERVE_UNLINKED).
        let opened = ctx.core.v4.any_file_state();
        let victim = if refused || delegated || opened || crate::auth::sticky_applies(&dir.attrs, &dir.creds) {
            Some(dir.fs().lookup(dir.id, &at.name).map_err(stat)?)
        } else {
            None
        };
        if !crate::auth::may_delete_entry(&dir.attrs, victim.as_ref().map(|v| &v.1), &dir.creds) {
            return Err(nfsstat3::NFS3ERR_ACCES);
        }
        delegations::before_dir_change(ctx, dir, delegations::Change::Remove(&at.name))?;
        if let Some((id, attrs)) = &victim {
            if delegated {
                delegations::recall_on(ctx, dir, *id, attrs, true)?;
            }
            if opened {
                removed = Some(((dir.export.id, *id, attrs.generation), attrs.nlink));
            }
        }
        Ok(())
    })?;
    let fs = dir.fs();
    let r = match removed {
        Some((file, nlink)) => {
            crate::state::unlinked::remove_keeping(&ctx.core.v4, fs, file, nlink, || unlink(fs, dir.id, &at.name))
        }
        None => unlink(fs, dir.id, &at.name),
    };
    match r {
        Ok(()) => Ok(dir.wcc()),
        Err(e) => Err((stat(e), dir.wcc())),
    }
}

/// What a create-type procedure replies with once the backend answered.
pub(crate) struct Created {
    pub obj: post_op_fh3,
    pub obj_attributes: post_op_attr,
    pub dir_wcc: wcc_data,
}

#[allow(clippy::result_large_err)]
pub(crate) fn created(
    ctx: &Ctx,
    dir: &Obj,
    r: vfs::VfsResult<(FileId, Attrs)>,
) -> Result<Created, (nfsstat3, wcc_data)> {
    match r {
        Ok((id, attrs)) => Ok(Created {
            obj: Some(ctx.handle(dir.export, id, &attrs)),
            obj_attributes: Some(fattr(&attrs)),
            dir_wcc: dir.wcc(),
        }),
        Err(e) => Err((stat(e), dir.wcc())),
    }
}
