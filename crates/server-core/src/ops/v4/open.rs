//! OPEN (RFC 8881 section 18.16; RFC 7530 16.16 for minor version 0).
//!
//! Claims: CLAIM_NULL (with UNCHECKED4, GUARDED4, EXCLUSIVE4 and, in 4.1,
//! EXCLUSIVE4_1 creation), CLAIM_FH, CLAIM_PREVIOUS (reclaim during the
//! grace period), CLAIM_DELEGATE_CUR and CLAIM_DELEG_CUR_FH (opens under
//! a delegation the client holds). CLAIM_DELEGATE_PREV and
//! CLAIM_DELEG_PREV_FH need delegations recorded across client restarts,
//! which nfsx does not keep: NFS4ERR_NOTSUPP.
//!
//! The file is looked up or created first, without the state lock; then
//! under it, conflicting delegations of other clients are recalled
//! (NFS4ERR_DELAY), share reservations are checked (NFS4ERR_SHARE_DENIED)
//! and the open is recorded or upgraded.

use proto::nfs4::*;
use vfs::{CreateHow, FileType, SetAttrs};

use super::attrs;
use super::status::stat4;
use super::{check_name, Compound, Fh, Obj};
use crate::auth::{may, may_add_entry, may_read, may_write};
use crate::ops::create;
use crate::shared_shares;
use crate::state::opens::check_share;
use crate::state::stateids::OwnerKey;
use crate::state::{FileKey, OpenRequest, OpenStep, OpenStore};

/// The client a state-changing operation acts for: the session's in 4.1
/// (the clientid in owners MUST be ignored), the owner's in 4.0.
pub(super) fn client_of(cx: &Compound, owner_clientid: clientid4) -> clientid4 {
    if cx.minor >= 1 {
        cx.session_client().unwrap_or(owner_clientid)
    } else {
        owner_clientid
    }
}

/// The client stateids are checked against: the session's (4.1); in 4.0
/// a stateid names its client itself.
pub(super) fn io_client(cx: &Compound) -> Option<clientid4> {
    if cx.minor >= 1 {
        cx.session_client()
    } else {
        None
    }
}

pub(super) fn file_key(obj: &Obj) -> FileKey {
    (obj.export.id, obj.id, obj.attrs.generation)
}

/// OPEN and LOCK work on regular files only (RFC 8881 18.16.3, 18.10.3).
/// Other types are WRONG_TYPE in 4.1; in 4.0 the locking operations say
/// INVAL (RFC 7530 16.10.5) and OPEN says SYMLINK for everything that is
/// neither a file nor a directory (16.16.5).
pub(super) fn check_regular(cx: &Compound, obj: &Obj) -> Result<(), nfsstat4> {
    check_type(cx, obj, nfsstat4::NFS4ERR_INVAL)
}

fn check_type(cx: &Compound, obj: &Obj, v40_other: nfsstat4) -> Result<(), nfsstat4> {
    match obj.attrs.ftype {
        FileType::Regular => Ok(()),
        FileType::Directory => Err(nfsstat4::NFS4ERR_ISDIR),
        FileType::Symlink => Err(nfsstat4::NFS4ERR_SYMLINK),
        _ if cx.minor >= 1 => Err(nfsstat4::NFS4ERR_WRONG_TYPE),
        _ => Err(v40_other),
    }
}

pub(super) fn run(cx: &mut Compound, args: OPEN4args) -> Result<OPEN4resok, nfsstat4> {
    let st = cx.state();
    let client = client_of(cx, args.owner.clientid);
    let key = OwnerKey { client, owner: args.owner.owner.clone() };
    if cx.minor >= 1 {
        return open(cx, client, &key, &args);
    }
    if let Some((r, fh)) = st.open_seqid(&key, args.seqid)? {
        if let (Ok(ok), Some(fh)) = (&r, fh) {
            cx.cfh = Some(fh);
            cx.current_stateid = Some(ok.stateid.clone());
        }
        return r;
    }
    let r = open(cx, client, &key, &args);
    let fh = r.is_ok().then_some(cx.cfh).flatten();
    st.record_open_reply(&key, args.seqid, &r, fh);
    r
}

/// Settable attributes of a create; an empty fattr4 needs no decoding.
fn create_attrs(cx: &Compound, f: &fattr4) -> Result<(SetAttrs, bitmap4), nfsstat4> {
    if f.attrmask.iter().all(|w| *w == 0) {
        return Ok((SetAttrs::default(), vec![]));
    }
    attrs::decode_set(cx, f)
}

struct Target<'a> {
    obj: Obj<'a>,
    cinfo: change_info4,
    attrset: bitmap4,
    /// The directory an open by name found the file in.
    dir: Option<crate::state::FileKey>,
}

/// The directory of a CLAIM_NULL / CLAIM_DELEGATE_CUR open.
fn open_dir<'a>(cx: &Compound<'a>, name: &component4, create: bool) -> Result<Obj<'a>, nfsstat4> {
    let dir = match cx.cfh()? {
        Fh::Pseudo(n) => {
            check_name(cx.core, name)?;
            return Err(match cx.pseudo_lookup(n, name) {
                Ok(_) => nfsstat4::NFS4ERR_ISDIR,
                Err(_) if create => nfsstat4::NFS4ERR_ROFS,
                Err(e) => e,
            });
        }
        fh => cx.resolve(fh)?,
    };
    if !dir.is_dir() {
        return Err(if dir.attrs.ftype == FileType::Symlink {
            nfsstat4::NFS4ERR_SYMLINK
        } else {
            nfsstat4::NFS4ERR_NOTDIR
        });
    }
    check_name(cx.core, name)?;
    Ok(dir)
}

fn by_name<'a>(cx: &Compound<'a>, name: &component4, how: Option<&createhow4>) -> Result<Target<'a>, nfsstat4> {
    let dir = open_dir(cx, name, how.is_some())?;
    let before = dir.attrs.change;
    let Some(how) = how else {
        if !may(&dir.attrs, &dir.creds, vfs::Access::LOOKUP) {
            return Err(nfsstat4::NFS4ERR_ACCESS);
        }
        let (id, attrs) = dir.fs().lookup(dir.id, name).map_err(stat4)?;
        let cinfo = change_info4 { atomic: true, before, after: before };
        let parent = Some(file_key(&dir));
        return Ok(Target { obj: Obj { id, attrs, ..dir }, cinfo, attrset: vec![], dir: parent });
    };
    if dir.read_only() {
        return Err(nfsstat4::NFS4ERR_ROFS);
    }
    if !may_add_entry(&dir.attrs, &dir.creds) {
        return Err(nfsstat4::NFS4ERR_ACCESS);
    }
    super::dirops::before_dir_change(cx, &dir, super::dirops::Change::Add(name))?;
    let times = {
        let mut b = vec![0u32, 0];
        b[1] |= 1 << (FATTR4_TIME_ACCESS - 32);
        b[1] |= 1 << (FATTR4_TIME_MODIFY - 32);
        b
    };
    let (vhow, mut attrset, after_set) = match how {
        createhow4::UNCHECKED4(f) | createhow4::GUARDED4(f) => {
            let (mut set, mut bits) = create_attrs(cx, f)?;
            create::check_attrs(&dir.creds, &set).map_err(stat4)?;
            if matches!(how, createhow4::GUARDED4(_)) {
                (CreateHow::Guarded(set), bits, None)
            } else {
                // An existing file keeps its attributes: only a size of
                // zero applies, truncating it (RFC 8881 18.16.3).
                if let Ok((_, existing)) = dir.fs().lookup(dir.id, name) {
                    if existing.ftype == FileType::Regular {
                        let truncate = set.size == Some(0);
                        if truncate && !may_write(&existing, &dir.creds) {
                            return Err(nfsstat4::NFS4ERR_ACCESS);
                        }
                        set = SetAttrs { size: set.size.filter(|_| truncate), ..SetAttrs::default() };
                        bits = if truncate { vec![1 << FATTR4_SIZE] } else { vec![] };
                    }
                }
                (CreateHow::Unchecked(set), bits, None)
            }
        }
        createhow4::EXCLUSIVE4(verf) => (CreateHow::Exclusive(*verf), times, None),
        createhow4::EXCLUSIVE4_1(cva) => {
            if cx.minor == 0 {
                return Err(nfsstat4::NFS4ERR_BADXDR);
            }
            let (set, bits) = create_attrs(cx, &cva.cva_attrs)?;
            if set.atime != vfs::SetTime::DontChange || set.mtime != vfs::SetTime::DontChange {
                // The verifier lives in the times (RFC 8881 18.16.3).
                return Err(nfsstat4::NFS4ERR_INVAL);
            }
            create::check_attrs(&dir.creds, &set).map_err(stat4)?;
            (CreateHow::Exclusive(cva.cva_verf), bits, Some(set))
        }
    };
    let owner = create::new_owner(&dir.attrs, &dir.creds);
    let (id, mut attrs) = dir.fs().create(dir.id, name, &vhow, owner).map_err(stat4)?;
    if let Some(set) = after_set {
        if set != SetAttrs::default() && attrs.ftype == FileType::Regular {
            attrs = dir.fs().setattr(id, &set, None).map_err(stat4)?;
        }
        let mut t = times_bits();
        for (i, w) in attrset.iter().enumerate() {
            if i < t.len() {
                t[i] |= w;
            }
        }
        attrset = t;
    }
    let after = dir.fs().getattr(dir.id).map(|a| a.change).unwrap_or(before);
    let cinfo = change_info4 { atomic: false, before, after };
    let parent = Some(file_key(&dir));
    Ok(Target { obj: Obj { id, attrs, ..dir }, cinfo, attrset, dir: parent })
}

fn times_bits() -> Vec<u32> {
    vec![0, (1 << (FATTR4_TIME_ACCESS - 32)) | (1 << (FATTR4_TIME_MODIFY - 32))]
}

fn open(cx: &mut Compound, client: clientid4, key: &OwnerKey, args: &OPEN4args) -> Result<OPEN4resok, nfsstat4> {
    use open_claim4::*;
    let st = cx.state();
    let minor = cx.minor;
    let (access, deny) = check_share(minor, args.share_access, args.share_deny)?;
    if minor == 0 && matches!(args.claim, CLAIM_FH | CLAIM_DELEG_PREV_FH | CLAIM_DELEG_CUR_FH(_)) {
        return Err(nfsstat4::NFS4ERR_BADXDR);
    }
    let create = match &args.openhow {
        openflag4::OPEN4_CREATE(how) => Some(how),
        openflag4::default(_) => None,
    };
    let session = cx.seq.as_ref().map(|s| &s.sessionid);
    let session_lease = st.open_claim_allowed(minor, client, session, &args.claim)?;
    if let Some(Fh::Obj { export_id, .. }) = cx.cfh {
        if let Some(e) = cx.core.export_by_id(export_id) {
            shared_shares::denial_ready(cx.core, &*e.fs, deny)?;
        }
    }
    let target = match &args.claim {
        CLAIM_NULL(name) => by_name(cx, name, create)?,
        CLAIM_DELEGATE_CUR(d) => by_name(cx, &d.file, None)?,
        CLAIM_FH | CLAIM_PREVIOUS(_) | CLAIM_DELEG_CUR_FH(_) => {
            let obj = cx.cobj(nfsstat4::NFS4ERR_ISDIR)?;
            let before = obj.attrs.change;
            Target { obj, cinfo: change_info4 { atomic: true, before, after: before }, attrset: vec![], dir: None }
        }
        CLAIM_DELEGATE_PREV(_) | CLAIM_DELEG_PREV_FH => return Err(nfsstat4::NFS4ERR_NOTSUPP),
    };
    let obj = &target.obj;
    check_type(cx, obj, nfsstat4::NFS4ERR_SYMLINK)?;
    if access & OPEN4_SHARE_ACCESS_READ != 0 && !may_read(&obj.attrs, &obj.creds) {
        return Err(nfsstat4::NFS4ERR_ACCESS);
    }
    if access & OPEN4_SHARE_ACCESS_WRITE != 0 {
        if obj.read_only() {
            return Err(nfsstat4::NFS4ERR_ROFS);
        }
        if !may_write(&obj.attrs, &obj.creds) {
            return Err(nfsstat4::NFS4ERR_ACCESS);
        }
    }
    let file = file_key(obj);
    let fh = obj.fh();
    let nfh = cx.encode_fh(fh);
    // Where other servers share the file system, the store must know the
    // file is open here, for writing too if this OPEN writes (whether or
    // not it holds the share modes): another server's delegation that
    // conflicts is recalled, and none is granted while it is open.
    if let Some(store) = obj.fs().shared_store() {
        store.open_shared(obj.id, access & OPEN4_SHARE_ACCESS_WRITE != 0).map_err(stat4)?;
    }
    let deleg_claim = match &args.claim {
        CLAIM_DELEGATE_CUR(d) => Some(cx.resolve_stateid(&d.delegate_stateid)?),
        CLAIM_DELEG_CUR_FH(s) => Some(cx.resolve_stateid(s)?),
        _ => None,
    };
    let req = OpenRequest {
        minor,
        client,
        owner: key,
        file,
        access,
        deny,
        share_access: args.share_access,
        deleg_claim: deleg_claim.as_ref(),
        reclaim: matches!(args.claim, CLAIM_PREVIOUS(_)),
        fh: &nfh,
        session_lease: session_lease.as_ref(),
        parent: crate::state::delegations::Parent {
            dir: target.dir,
            dir_delegated: access & OPEN4_SHARE_ACCESS_WRITE != 0
                && target.dir.is_some_and(|d| st.dir_delegated_to_other(d, client)),
        },
    };
    let core = cx.core;
    let store = Store { core, obj, file };
    let opened = match st.open_shares(&req, &store)? {
        OpenStep::Recorded(o) => o,
        OpenStep::Reserve { store_key, access, deny } => {
            // Where other servers share the file system, their opens are
            // seen in the store only: a new open's modes are taken there
            // with the state unlocked (the store may be across the network).
            let reserved = shared_shares::reserve_new(core, obj.fs(), obj.id, store_key, access, deny)?;
            st.open_reserved(&req, &store, reserved)?
        }
    };
    let (confirmed, fs) = (opened.confirmed, obj.fs());
    let mut rflags = OPEN4_RESULT_LOCKTYPE_POSIX;
    if !confirmed {
        rflags |= OPEN4_RESULT_CONFIRM;
    }
    if crate::state::unlinked::may_promise(minor, fs) {
        rflags |= OPEN4_RESULT_PRESERVE_UNLINKED;
    }
    cx.cfh = Some(fh);
    cx.current_stateid = Some(opened.stateid.clone());
    let delegation = opened.delegation;
    Ok(OPEN4resok { stateid: opened.stateid, cinfo: target.cinfo, rflags, attrset: target.attrset, delegation })
}

/// The shared store of the file an OPEN records, asked with the state
/// locked (see `shared_shares` and `shared_delegs`).
struct Store<'a, 'b> {
    core: &'a crate::Core,
    obj: &'b Obj<'a>,
    file: FileKey,
}

impl OpenStore for Store<'_, '_> {
    type Reserved = shared_shares::Reserved;

    fn store_key(r: &Self::Reserved) -> u64 {
        r.key
    }

    fn reserves_unlocked(&self) -> bool {
        self.obj.fs().shared_store().is_some() && self.core.publishes_shares()
    }

    fn reserve(
        &self,
        held: Option<(u64, u32, u32)>,
        new_key: &mut dyn FnMut() -> u64,
        access: u32,
        deny: u32,
    ) -> Result<Self::Reserved, nfsstat4> {
        shared_shares::reserve(self.core, self.obj.fs(), self.obj.id, held, new_key, access, deny)
    }

    fn undo(&self, r: &Self::Reserved) {
        shared_shares::undo(self.obj.fs(), self.obj.id, r);
    }

    fn shared(&self) -> bool {
        self.obj.fs().shared_store().is_some()
    }

    fn delegate(&self, write: bool) -> bool {
        // Another head may serve a conflicting open this server never
        // hears of: only the store's delegation makes it wait for a recall.
        self.obj.fs().shared_store().is_none()
            || self.core.take_shared_delegation(&self.obj.export.fs, self.file, write)
    }
}
