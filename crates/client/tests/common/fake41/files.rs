//! The fake's namespace (a root, `/export`, and flat files in it), opens
//! and write delegations with their stateids, I/O, and the attributes the
//! client asks for.

use bytes::Bytes;
use proto::nfs4::*;
use xdr::Encoder;

use super::state::{Ctx, FileRec, State, StateRec};

const ROOT: &[u8] = b"/";
const EXPORT: &[u8] = b"/export";
const ANONYMOUS: [u8; 12] = [0; 12];

/// The handle of `name` in the export.
pub fn handle(name: &str) -> Bytes {
    Bytes::from(format!("/export/{name}"))
}

fn is_dir(fh: &[u8]) -> bool {
    fh == ROOT || fh == EXPORT
}

fn join(dir: &[u8], name: &[u8]) -> Bytes {
    let mut v = dir.to_vec();
    if dir != ROOT {
        v.push(b'/');
    }
    v.extend_from_slice(name);
    Bytes::from(v)
}

fn cur(ctx: &Ctx) -> Result<Bytes, nfsstat4> {
    ctx.cfh.clone().ok_or(nfsstat4::NFS4ERR_NOFILEHANDLE)
}

impl State {
    /// Makes (or replaces) file `name` in the export.
    pub fn put_file(&mut self, name: &str, data: &[u8]) {
        let fileid = self.id();
        self.files.insert(handle(name), FileRec { data: data.to_vec(), change: 1, fileid });
    }

    pub fn remove_file(&mut self, name: &str) {
        self.files.remove(&handle(name));
    }

    /// Renames `from` to `to`; its handle follows its name here.
    pub fn rename_file(&mut self, from: &str, to: &str) {
        if let Some(f) = self.files.remove(&handle(from)) {
            self.files.insert(handle(to), f);
        }
    }

    pub fn file(&self, name: &str) -> Option<Vec<u8>> {
        self.files.get(&handle(name)).map(|f| f.data.clone())
    }

    /// The write verifier: a server's changes at each boot (RFC 8881
    /// section 18.32.3), so unstable data is sent again after a reboot.
    pub(super) fn verf(&self) -> verifier4 {
        u64::from(self.boot).to_be_bytes()
    }

    fn new_stateid(&mut self, fh: &Bytes, ctx: &Ctx, clientid: clientid4, deleg: bool) -> stateid4 {
        let mut other = [0u8; 12];
        other[..4].copy_from_slice(&self.boot.to_be_bytes());
        other[4..].copy_from_slice(&self.id().to_be_bytes());
        let granted_by = ctx.call;
        self.stateids.insert(other, StateRec { fh: fh.clone(), clientid, deleg, seqid: 1, granted_by });
        stateid4 { seqid: 1, other }
    }

    /// I/O is allowed under the anonymous stateid or a stateid of the file.
    fn check_io(&self, fh: &Bytes, s: &stateid4) -> Result<(), nfsstat4> {
        if s.other == ANONYMOUS {
            return Ok(());
        }
        match self.stateids.get(&s.other) {
            Some(r) if r.fh == fh => Ok(()),
            _ => Err(nfsstat4::NFS4ERR_BAD_STATEID),
        }
    }

    pub(super) fn file_op(&mut self, ctx: &mut Ctx, op: &nfs_argop4) -> Result<nfs_resop4, nfsstat4> {
        use nfs_argop4 as A;
        use nfs_resop4 as R;
        const OK: nfsstat4 = nfsstat4::NFS4_OK;
        match op {
            A::OP_PUTROOTFH => {
                ctx.cfh = Some(Bytes::from_static(ROOT));
                Ok(R::OP_PUTROOTFH(PUTROOTFH4res { status: OK }))
            }
            A::OP_PUTFH(a) => {
                if !is_dir(&a.object) && !self.files.contains_key(&a.object) {
                    return Err(nfsstat4::NFS4ERR_STALE);
                }
                ctx.cfh = Some(a.object.clone());
                Ok(R::OP_PUTFH(PUTFH4res { status: OK }))
            }
            A::OP_LOOKUP(a) => {
                let dir = cur(ctx)?;
                if !is_dir(&dir) {
                    return Err(nfsstat4::NFS4ERR_NOTDIR);
                }
                let child = join(&dir, &a.objname);
                if !is_dir(&child) && !self.files.contains_key(&child) {
                    return Err(nfsstat4::NFS4ERR_NOENT);
                }
                ctx.cfh = Some(child);
                Ok(R::OP_LOOKUP(LOOKUP4res { status: OK }))
            }
            A::OP_GETFH => Ok(R::OP_GETFH(GETFH4res::NFS4_OK(GETFH4resok { object: cur(ctx)? }))),
            A::OP_GETATTR(a) => {
                let obj_attributes = self.fattr(&cur(ctx)?, &a.attr_request);
                Ok(R::OP_GETATTR(GETATTR4res::NFS4_OK(GETATTR4resok { obj_attributes })))
            }
            A::OP_OPEN(a) => self.open(ctx, a),
            A::OP_WRITE(a) => self.write(ctx, a),
            A::OP_READ(a) => {
                let fh = cur(ctx)?;
                if self.in_grace() {
                    return Err(nfsstat4::NFS4ERR_GRACE);
                }
                self.check_io(&fh, &a.stateid)?;
                let f = self.files.get(&fh).ok_or(nfsstat4::NFS4ERR_ISDIR)?;
                let start = (a.offset as usize).min(f.data.len());
                let end = (start + a.count as usize).min(f.data.len());
                let data = Bytes::copy_from_slice(&f.data[start..end]);
                Ok(R::OP_READ(READ4res::NFS4_OK(READ4resok { eof: end == f.data.len(), data })))
            }
            A::OP_COMMIT(_) => {
                cur(ctx)?;
                Ok(R::OP_COMMIT(COMMIT4res::NFS4_OK(COMMIT4resok { writeverf: self.verf() })))
            }
            A::OP_CLOSE(a) => {
                let s = &a.open_stateid;
                match self.stateids.get(&s.other) {
                    Some(r) if !r.deleg => {
                        let seqid = r.seqid + 1;
                        self.stateids.remove(&s.other);
                        Ok(R::OP_CLOSE(CLOSE4res::NFS4_OK(stateid4 { seqid, other: s.other })))
                    }
                    _ => Err(nfsstat4::NFS4ERR_BAD_STATEID),
                }
            }
            A::OP_DELEGRETURN(a) => match self.stateids.get(&a.deleg_stateid.other) {
                Some(r) if r.deleg => {
                    self.stateids.remove(&a.deleg_stateid.other);
                    Ok(R::OP_DELEGRETURN(DELEGRETURN4res { status: OK }))
                }
                _ => Err(nfsstat4::NFS4ERR_BAD_STATEID),
            },
            A::OP_SETATTR(a) => {
                let fh = cur(ctx)?;
                let size = proto::bitmap4::has(&a.obj_attributes.attrmask, FATTR4_SIZE);
                if size {
                    if self.in_grace() {
                        return Err(nfsstat4::NFS4ERR_GRACE);
                    }
                    let mut d = xdr::Decoder::new(a.obj_attributes.attr_vals.clone());
                    let len = d.u64().map_err(|_| nfsstat4::NFS4ERR_BADXDR)?;
                    let f = self.files.get_mut(&fh).ok_or(nfsstat4::NFS4ERR_ISDIR)?;
                    f.data.resize(len as usize, 0);
                    f.change += 1;
                }
                let attrsset = a.obj_attributes.attrmask.clone();
                Ok(R::OP_SETATTR(SETATTR4res { status: OK, attrsset }))
            }
            A::OP_READDIR(a) => self.readdir(ctx, a),
            A::OP_GET_DIR_DELEGATION(a) => {
                let dir = cur(ctx)?;
                let clientid = ctx.clientid.ok_or(nfsstat4::NFS4ERR_OP_NOT_IN_SESSION)?;
                if !self.dir_delegations {
                    return Err(nfsstat4::NFS4ERR_NOTSUPP);
                }
                if !is_dir(&dir) {
                    return Err(nfsstat4::NFS4ERR_NOTDIR);
                }
                let held = self.stateids.values().any(|s| s.deleg && s.fh == dir);
                let res = if held {
                    GET_DIR_DELEGATION4res_non_fatal::GDD4_UNAVAIL(false)
                } else {
                    let stateid = self.new_stateid(&dir, ctx, clientid, true);
                    let ok = GET_DIR_DELEGATION4resok {
                        gddr_cookieverf: [0; 8],
                        gddr_stateid: stateid,
                        gddr_notification: a.gdda_notification_types.clone(),
                        gddr_child_attributes: a.gdda_child_attributes.clone(),
                        gddr_dir_attributes: a.gdda_dir_attributes.clone(),
                    };
                    GET_DIR_DELEGATION4res_non_fatal::GDD4_OK(ok)
                };
                Ok(R::OP_GET_DIR_DELEGATION(GET_DIR_DELEGATION4res::NFS4_OK(res)))
            }
            _ => Err(nfsstat4::NFS4ERR_NOTSUPP),
        }
    }

    /// The export's files in handle order, all in one reply, each with
    /// the attributes asked for; the cookie of the n-th is n + 3.
    fn readdir(&mut self, ctx: &mut Ctx, a: &READDIR4args) -> Result<nfs_resop4, nfsstat4> {
        let dir = cur(ctx)?;
        if !is_dir(&dir) {
            return Err(nfsstat4::NFS4ERR_NOTDIR);
        }
        let prefix = join(&dir, b"");
        let entries = self
            .files
            .keys()
            .filter_map(|fh| Some((fh.clone(), fh.strip_prefix(&prefix[..])?.to_vec())))
            .filter(|(_, name)| !name.contains(&b'/'))
            .enumerate()
            .map(|(i, (fh, name))| entry4 {
                cookie: i as u64 + 3,
                name: Bytes::from(name),
                attrs: self.fattr(&fh, &a.attr_request),
            })
            .filter(|e| e.cookie > a.cookie)
            .collect();
        let reply = dirlist4 { entries, eof: true };
        Ok(nfs_resop4::OP_READDIR(READDIR4res::NFS4_OK(READDIR4resok { cookieverf: [0; 8], reply })))
    }

    /// The export's own attributes asked `mask`.
    pub fn export_attrs(&self, mask: &[u32]) -> fattr4 {
        self.fattr(&Bytes::from_static(EXPORT), mask)
    }

    /// The attributes of `name` in the export for a notification: what
    /// READDIR gives an entry asked `mask`.
    pub fn entry_attrs(&self, name: &str, mask: &[u32]) -> fattr4 {
        self.fattr(&handle(name), mask)
    }

    fn open(&mut self, ctx: &mut Ctx, a: &OPEN4args) -> Result<nfs_resop4, nfsstat4> {
        let clientid = ctx.clientid.ok_or(nfsstat4::NFS4ERR_OP_NOT_IN_SESSION)?;
        let cfh = cur(ctx)?;
        let (fh, reclaim) = match &a.claim {
            open_claim4::CLAIM_NULL(name) if is_dir(&cfh) => (join(&cfh, name), false),
            open_claim4::CLAIM_NULL(_) => return Err(nfsstat4::NFS4ERR_NOTDIR),
            open_claim4::CLAIM_FH | open_claim4::CLAIM_DELEG_CUR_FH(_) => (cfh, false),
            open_claim4::CLAIM_PREVIOUS(_) => (cfh, true),
            _ => return Err(nfsstat4::NFS4ERR_NOTSUPP),
        };
        // RFC 8881 section 8.4.2.1: reclaims only during the grace period
        // (and before the client said it finished), nothing else then.
        let complete = self.clients.values().any(|c| c.clientid == clientid && c.reclaim_complete);
        if reclaim && (!self.in_grace() || complete) {
            return Err(nfsstat4::NFS4ERR_NO_GRACE);
        }
        if !reclaim && self.in_grace() {
            return Err(nfsstat4::NFS4ERR_GRACE);
        }
        if !self.files.contains_key(&fh) {
            match (&a.openhow, &a.claim) {
                (openflag4::OPEN4_CREATE(_), open_claim4::CLAIM_NULL(name)) => {
                    self.put_file(&String::from_utf8_lossy(name), b"");
                }
                _ => return Err(nfsstat4::NFS4ERR_NOENT),
            }
        }
        // One open-owner per client here: another OPEN of the file
        // upgrades the same open state, with the next seqid.
        let existing =
            self.stateids.iter_mut().find(|(_, s)| !s.deleg && s.fh == fh && s.clientid == clientid).map(|(o, s)| {
                s.seqid += 1;
                stateid4 { seqid: s.seqid, other: *o }
            });
        let stateid = match existing {
            Some(s) => s,
            None => self.new_stateid(&fh, ctx, clientid, false),
        };
        let wants_none = a.share_access & OPEN4_SHARE_ACCESS_WANT_DELEG_MASK == OPEN4_SHARE_ACCESS_WANT_NO_DELEG;
        let writing = a.share_access & OPEN4_SHARE_ACCESS_WRITE != 0;
        let held = self.stateids.values().any(|s| s.deleg && s.fh == fh);
        let delegation = if self.delegate_writes && !reclaim && writing && !wants_none && !held {
            let stateid = self.new_stateid(&fh, ctx, clientid, true);
            open_delegation4::OPEN_DELEGATE_WRITE(open_write_delegation4 {
                stateid,
                recall: false,
                space_limit: nfs_space_limit4::NFS_LIMIT_SIZE(u64::MAX),
                permissions: nfsace4 { r#type: 0, flag: 0, access_mask: 0, who: Bytes::new() },
            })
        } else {
            open_delegation4::OPEN_DELEGATE_NONE
        };
        let change = self.files[&fh].change;
        ctx.cfh = Some(fh);
        Ok(nfs_resop4::OP_OPEN(OPEN4res::NFS4_OK(OPEN4resok {
            stateid,
            cinfo: change_info4 { atomic: true, before: change, after: change },
            rflags: OPEN4_RESULT_LOCKTYPE_POSIX,
            attrset: vec![],
            delegation,
        })))
    }

    fn write(&mut self, ctx: &mut Ctx, a: &WRITE4args) -> Result<nfs_resop4, nfsstat4> {
        let fh = cur(ctx)?;
        if self.in_grace() {
            return Err(nfsstat4::NFS4ERR_GRACE);
        }
        self.check_io(&fh, &a.stateid)?;
        let f = self.files.get_mut(&fh).ok_or(nfsstat4::NFS4ERR_ISDIR)?;
        let end = a.offset as usize + a.data.len();
        if f.data.len() < end {
            f.data.resize(end, 0);
        }
        f.data[a.offset as usize..end].copy_from_slice(&a.data);
        f.change += 1;
        let committed =
            if a.stable == stable_how4::UNSTABLE4 { stable_how4::UNSTABLE4 } else { stable_how4::FILE_SYNC4 };
        let ok = WRITE4resok { count: a.data.len() as u32, committed, writeverf: self.verf() };
        Ok(nfs_resop4::OP_WRITE(WRITE4res::NFS4_OK(ok)))
    }

    /// The attributes of `fh` asked for in `mask` that the fake has.
    fn fattr(&self, fh: &Bytes, mask: &[u32]) -> fattr4 {
        let dir = is_dir(fh);
        let (size, change, fileid) = match self.files.get(fh) {
            Some(f) => (f.data.len() as u64, f.change, f.fileid),
            None => (4096, 1, if fh == ROOT { 1 } else { 2 }),
        };
        let mut set = Vec::new();
        let mut e = Encoder::new();
        for a in proto::bitmap4::bits(mask) {
            match a {
                FATTR4_TYPE => e.u32(if dir { nfs_ftype4::NF4DIR } else { nfs_ftype4::NF4REG } as u32),
                FATTR4_CHANGE => e.u64(change),
                FATTR4_SIZE | FATTR4_SPACE_USED => e.u64(size),
                FATTR4_FSID => {
                    e.u64(1);
                    e.u64(0);
                }
                FATTR4_LEASE_TIME => e.u32(self.lease_time),
                FATTR4_FILEHANDLE => e.opaque_var(fh),
                FATTR4_FILEID => e.u64(fileid),
                FATTR4_MAXREAD | FATTR4_MAXWRITE => e.u64(self.maxrw),
                FATTR4_MODE => e.u32(if dir { 0o755 } else { 0o644 }),
                FATTR4_NUMLINKS => e.u32(if dir { 2 } else { 1 }),
                FATTR4_OWNER | FATTR4_OWNER_GROUP => e.opaque_var(b"0"),
                FATTR4_RAWDEV => {
                    e.u32(0);
                    e.u32(0);
                }
                FATTR4_TIME_ACCESS | FATTR4_TIME_METADATA | FATTR4_TIME_MODIFY => {
                    e.i64(change as i64);
                    e.u32(0);
                }
                _ => continue,
            }
            set.push(a);
        }
        fattr4 { attrmask: proto::bitmap4::of(&set), attr_vals: e.into_bytes() }
    }
}

/// The result of operation `num` failing with `s`.
pub(super) fn error_res(num: nfs_opnum4, s: nfsstat4) -> nfs_resop4 {
    use nfs_opnum4 as N;
    use nfs_resop4 as R;
    match num {
        N::OP_ACCESS => R::OP_ACCESS(ACCESS4res::default(s)),
        N::OP_CLOSE => R::OP_CLOSE(CLOSE4res::default(s)),
        N::OP_COMMIT => R::OP_COMMIT(COMMIT4res::default(s)),
        N::OP_DELEGRETURN => R::OP_DELEGRETURN(DELEGRETURN4res { status: s }),
        N::OP_GETATTR => R::OP_GETATTR(GETATTR4res::default(s)),
        N::OP_GETFH => R::OP_GETFH(GETFH4res::default(s)),
        N::OP_LOOKUP => R::OP_LOOKUP(LOOKUP4res { status: s }),
        N::OP_OPEN => R::OP_OPEN(OPEN4res::default(s)),
        N::OP_PUTFH => R::OP_PUTFH(PUTFH4res { status: s }),
        N::OP_PUTROOTFH => R::OP_PUTROOTFH(PUTROOTFH4res { status: s }),
        N::OP_READ => R::OP_READ(READ4res::default(s)),
        N::OP_SETATTR => R::OP_SETATTR(SETATTR4res { status: s, attrsset: vec![] }),
        N::OP_WRITE => R::OP_WRITE(WRITE4res::default(s)),
        N::OP_EXCHANGE_ID => R::OP_EXCHANGE_ID(EXCHANGE_ID4res::default(s)),
        N::OP_CREATE_SESSION => R::OP_CREATE_SESSION(CREATE_SESSION4res::default(s)),
        N::OP_BIND_CONN_TO_SESSION => R::OP_BIND_CONN_TO_SESSION(BIND_CONN_TO_SESSION4res::default(s)),
        N::OP_DESTROY_SESSION => R::OP_DESTROY_SESSION(DESTROY_SESSION4res { dsr_status: s }),
        N::OP_DESTROY_CLIENTID => R::OP_DESTROY_CLIENTID(DESTROY_CLIENTID4res { dcr_status: s }),
        N::OP_RECLAIM_COMPLETE => R::OP_RECLAIM_COMPLETE(RECLAIM_COMPLETE4res { rcr_status: s }),
        N::OP_FREE_STATEID => R::OP_FREE_STATEID(FREE_STATEID4res { fsr_status: s }),
        N::OP_READDIR => R::OP_READDIR(READDIR4res::default(s)),
        N::OP_GET_DIR_DELEGATION => R::OP_GET_DIR_DELEGATION(GET_DIR_DELEGATION4res::default(s)),
        _ => R::OP_ILLEGAL(ILLEGAL4res { status: s }),
    }
}
