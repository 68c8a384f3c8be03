//! LOCKU (RFC 8881 section 18.12): releases a range (splitting locks as
//! needed); the lock stateid stays valid for later locks.

use proto::nfs4::*;

use super::open::{check_regular, file_key, io_client};
use super::Compound;
use crate::shared_locks;
use crate::state::lockmgr::range_of;
use crate::state::stateids::{v4_lock_owner, Kind, OwnerKey, OwnerSort, Replay, SeqCheck};

pub(super) fn run(cx: &mut Compound, args: LOCKU4args) -> Result<stateid4, nfsstat4> {
    let st = cx.state();
    let minor = cx.minor;
    let (start, end) = range_of(args.offset, args.length).ok_or(nfsstat4::NFS4ERR_INVAL)?;
    let sid = cx.resolve_stateid(&args.lock_stateid)?;
    let obj = cx.cobj(nfsstat4::NFS4ERR_ISDIR)?;
    check_regular(cx, &obj)?;
    let file = file_key(&obj);
    let fs = obj.export.fs.clone();
    let mut t = st.lock_tables();
    let Some((client, Kind::Lock(l))) = t.stateids.ids.get(&sid.other).map(|e| (e.client, &e.kind)) else {
        return Err(t
            .stateids
            .find(st.boot, minor, io_client(cx), &sid)
            .err()
            .unwrap_or(nfsstat4::NFS4ERR_BAD_STATEID));
    };
    let key = OwnerKey { client, owner: l.owner.clone() };
    if minor == 0 {
        t.clients.renew(client, st.now())?;
        match t.stateids.seqid_check(OwnerSort::Lock, &key, args.seqid)? {
            SeqCheck::Replay(Replay::Locku(r)) => return r,
            SeqCheck::Replay(_) => return Err(nfsstat4::NFS4ERR_BAD_SEQID),
            SeqCheck::Go => {}
        }
    }
    let r = (|| {
        let e = t.stateids.find(st.boot, minor, io_client(cx), &sid)?;
        if e.file != file {
            return Err(nfsstat4::NFS4ERR_BAD_STATEID);
        }
        t.clients.renew(client, st.now())?;
        t.locks.unlock(file, &v4_lock_owner(client, &key.owner), start, end);
        Ok(t.stateids.bump(&sid.other))
    })();
    if minor == 0 {
        let status = r.as_ref().err().copied().unwrap_or(nfsstat4::NFS4_OK);
        t.stateids.seqid_record(OwnerSort::Lock, &key, args.seqid, status, Replay::Locku(r.clone()));
    }
    drop(t);
    if let Ok(s) = &r {
        cx.current_stateid = Some(s.clone());
        shared_locks::sync(&*fs, st, file, &v4_lock_owner(client, &key.owner), start, end);
    }
    r
}
