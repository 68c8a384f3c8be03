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
use crate::state::delegations;
use crate::state::opens::{check_share, share_conflicts};
use crate::state::stateids::{Kind, OwnerKey, OwnerSort, Replay, SeqCheck};
use crate::state::{FileKey, Tables};

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

/// Takes the courtesy clients among `clients` away (their lease ran out
/// and their state stands in the way of another client).
pub(super) fn expire_courtesy(cx: &Compound, t: &mut Tables, me: clientid4, clients: &[u64]) -> bool {
    let st = cx.state();
    let mut any = false;
    for &c in clients {
        if c != me && t.clients.lease_expired(c, st.now(), st.lease()) {
            t.expire_client(c);
            any = true;
        }
    }
    any
}

pub(super) fn run(cx: &mut Compound, args: OPEN4args) -> Result<OPEN4resok, nfsstat4> {
    let st = cx.state();
    let client = client_of(cx, args.owner.clientid);
    let key = OwnerKey { client, owner: args.owner.owner.clone() };
    if cx.minor >= 1 {
        return open(cx, client, &key, &args);
    }
    {
        let mut t = st.lock_tables();
        t.clients.renew(client, st.now())?;
        let check = match t.stateids.seqid_check(OwnerSort::Open, &key, args.seqid) {
            Err(nfsstat4::NFS4ERR_BAD_SEQID) => {
                // An unconfirmed owner starts over (RFC 7530 16.16.5).
                let Tables { stateids, locks, .. } = &mut *t;
                if !stateids.reset_unconfirmed(&key, locks) {
                    return Err(nfsstat4::NFS4ERR_BAD_SEQID);
                }
                SeqCheck::Go
            }
            c => c?,
        };
        match check {
            SeqCheck::Replay(Replay::Open(r, fh)) => {
                if let (Ok(ok), Some(fh)) = (&r, fh) {
                    cx.cfh = Some(fh);
                    cx.current_stateid = Some(ok.stateid.clone());
                }
                return r;
            }
            SeqCheck::Replay(_) => return Err(nfsstat4::NFS4ERR_BAD_SEQID),
            SeqCheck::Go => {}
        }
        t.stateids.ensure_owner(OwnerSort::Open, &key, st.settings.max_owners_per_client, 0)?;
    }
    let r = open(cx, client, &key, &args);
    let status = r.as_ref().err().copied().unwrap_or(nfsstat4::NFS4_OK);
    let fh = r.is_ok().then_some(cx.cfh).flatten();
    st.lock_tables().stateids.seqid_record(OwnerSort::Open, &key, args.seqid, status, Replay::Open(r.clone(), fh));
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
        return Ok(Target { obj: Obj { id, attrs, ..dir }, cinfo, attrset: vec![] });
    };
    if dir.read_only() {
        return Err(nfsstat4::NFS4ERR_ROFS);
    }
    if !may_add_entry(&dir.attrs, &dir.creds) {
        return Err(nfsstat4::NFS4ERR_ACCESS);
    }
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
    Ok(Target { obj: Obj { id, attrs, ..dir }, cinfo, attrset })
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
    {
        let mut t = st.lock_tables();
        let now = st.now();
        if minor >= 1 {
            t.clients.renew(client, now)?;
        }
        let in_grace = t.grace.in_grace(now);
        match &args.claim {
            CLAIM_PREVIOUS(_) => {
                if !in_grace || !t.clients.may_reclaim(client) {
                    return Err(nfsstat4::NFS4ERR_NO_GRACE);
                }
            }
            CLAIM_DELEGATE_PREV(_) | CLAIM_DELEG_PREV_FH => return Err(nfsstat4::NFS4ERR_NOTSUPP),
            // An open under a delegation the client holds cannot conflict
            // with anything being reclaimed.
            CLAIM_DELEGATE_CUR(_) | CLAIM_DELEG_CUR_FH(_) => {}
            CLAIM_NULL(_) | CLAIM_FH => {
                // A 4.1 client must say RECLAIM_COMPLETE before its first
                // new open, even with nothing to reclaim (RFC 8881 18.51.3).
                if in_grace || (minor >= 1 && !t.clients.reclaim_completed(client)) {
                    return Err(nfsstat4::NFS4ERR_GRACE);
                }
            }
        }
    }
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
            Target { obj, cinfo: change_info4 { atomic: true, before, after: before }, attrset: vec![] }
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
    let mut t = st.lock_tables();
    let deleg_claim = match &args.claim {
        CLAIM_DELEGATE_CUR(d) => Some(cx.resolve_stateid(&d.delegate_stateid)?),
        CLAIM_DELEG_CUR_FH(s) => Some(cx.resolve_stateid(s)?),
        _ => None,
    };
    if let Some(ds) = &deleg_claim {
        let e = t.stateids.find(st.boot, minor, Some(client), ds)?;
        if !matches!(e.kind, Kind::Deleg(_)) || e.file != file {
            return Err(nfsstat4::NFS4ERR_BAD_STATEID);
        }
    }
    delegations::recall_conflicting(st, &mut t, file, Some(client), access & OPEN4_SHARE_ACCESS_WRITE != 0)?;
    let existing = t.stateids.opens_by.get(&(key.clone(), file)).copied();
    let (all_access, all_deny) = match existing.and_then(|o| t.stateids.ids.get(&o)).and_then(|e| e.open()) {
        // The owner's own open counts too (RFC 7530 9.9, 16.16.5): an
        // upgrade may not access what that open denies nor deny what it
        // accesses.
        Some(o) if access & o.deny != 0 || deny & o.access != 0 => return Err(nfsstat4::NFS4ERR_SHARE_DENIED),
        Some(o) => (o.access | access, o.deny | deny),
        None => (access, deny),
    };
    let mut conflicts = share_conflicts(&t.stateids, file, existing.as_ref(), all_access, all_deny);
    if !conflicts.is_empty() && expire_courtesy(cx, &mut t, client, &conflicts) {
        conflicts = share_conflicts(&t.stateids, file, existing.as_ref(), all_access, all_deny);
    }
    if !conflicts.is_empty() {
        return Err(nfsstat4::NFS4ERR_SHARE_DENIED);
    }
    // Where other servers share the file system, their opens are seen in
    // the store only. A new open's modes are taken there with the tables
    // unlocked (the store may be across the network), then the table is
    // checked again.
    let fs = obj.fs();
    let core = cx.core;
    let reserved = if fs.shared_store().is_some() && existing.is_none() && core.publishes_shares() {
        let store_key = t.stateids.new_store_key(st.boot);
        drop(t);
        let reserved = shared_shares::reserve_new(core, fs, obj.id, store_key, all_access, all_deny)?;
        t = st.lock_tables();
        if t.stateids.opens_by.contains_key(&(key.clone(), file))
            || !share_conflicts(&t.stateids, file, None, all_access, all_deny).is_empty()
        {
            drop(t);
            shared_shares::undo(fs, obj.id, &reserved);
            // The owner's other OPEN of the file came first (retried, this
            // one upgrades it), or a conflicting open the store should have
            // refused (the retry finds it in the table).
            return Err(nfsstat4::NFS4ERR_DELAY);
        }
        reserved
    } else {
        shared_shares::reserve(core, fs, obj.id, &mut t.stateids, st.boot, existing.as_ref(), all_access, all_deny)?
    };
    let confirmed = minor >= 1 || t.stateids.open_owners.get(key).is_some_and(|o| o.confirmed);
    let recorded =
        t.stateids.ensure_owner(OwnerSort::Open, key, st.settings.max_owners_per_client, minor).and_then(|()| {
            let max = st.settings.max_stateids_per_client;
            t.stateids.open(st.boot, max, minor, key, file, access, deny, confirmed, reserved.key)
        });
    let opened = match recorded {
        Ok(o) => o,
        Err(e) => {
            shared_shares::undo(fs, obj.id, &reserved);
            return Err(e);
        }
    };
    let delegation = if deleg_claim.is_some() || !confirmed || matches!(args.claim, CLAIM_PREVIOUS(_)) {
        open_delegation4::OPEN_DELEGATE_NONE
    } else if fs.shared_store().is_some() {
        // Another head may serve a conflicting open this server never
        // hears of: only the store's delegation makes it wait for a recall.
        delegations::grant(st, &mut t, minor, file, client, &nfh, args.share_access, |write| {
            core.take_shared_delegation(&obj.export.fs, file, write)
        })
    } else {
        delegations::grant(st, &mut t, minor, file, client, &nfh, args.share_access, |_| true)
    };
    drop(t);
    let mut rflags = OPEN4_RESULT_LOCKTYPE_POSIX;
    if !confirmed {
        rflags |= OPEN4_RESULT_CONFIRM;
    }
    if crate::state::unlinked::may_promise(minor, fs) {
        rflags |= OPEN4_RESULT_PRESERVE_UNLINKED;
    }
    cx.cfh = Some(fh);
    cx.current_stateid = Some(opened.stateid.clone());
    Ok(OPEN4resok { stateid: opened.stateid, cinfo: target.cinfo, rflags, attrset: target.attrset, delegation })
}
