//! OPEN_CONFIRM (RFC 7530 section 16.18; minor version 0 only): confirms
//! a new open-owner's first OPEN.

use proto::nfs4::*;

use super::close::owner_of_open;
use super::open::file_key;
use super::Compound;
use crate::state::stateids::{OwnerSort, Replay, SeqCheck};

pub(super) fn run(cx: &mut Compound, args: OPEN_CONFIRM4args) -> Result<OPEN_CONFIRM4resok, nfsstat4> {
    let st = cx.state();
    let sid = args.open_stateid.clone();
    let obj = cx.cobj(nfsstat4::NFS4ERR_ISDIR)?;
    let file = file_key(&obj);
    let mut t = st.lock_tables();
    let Some(key) = owner_of_open(&t.stateids, &sid.other) else {
        return Err(t.stateids.find(st.boot, 0, None, &sid).err().unwrap_or(nfsstat4::NFS4ERR_BAD_STATEID));
    };
    t.clients.renew(key.client, st.now())?;
    match t.stateids.seqid_check(OwnerSort::Open, &key, args.seqid)? {
        SeqCheck::Replay(Replay::Confirm(r)) => return r.map(|open_stateid| OPEN_CONFIRM4resok { open_stateid }),
        SeqCheck::Replay(_) => return Err(nfsstat4::NFS4ERR_BAD_SEQID),
        SeqCheck::Go => {}
    }
    let r = (|| {
        let e = t.stateids.find(st.boot, 0, None, &sid)?;
        if e.open().is_none() || e.file != file {
            return Err(nfsstat4::NFS4ERR_BAD_STATEID);
        }
        t.stateids.confirm(&sid.other)
    })();
    let status = r.as_ref().err().copied().unwrap_or(nfsstat4::NFS4_OK);
    t.stateids.seqid_record(OwnerSort::Open, &key, args.seqid, status, Replay::Confirm(r.clone()));
    if let Ok(s) = &r {
        cx.current_stateid = Some(s.clone());
    }
    r.map(|open_stateid| OPEN_CONFIRM4resok { open_stateid })
}
