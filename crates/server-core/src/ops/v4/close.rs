//! CLOSE (RFC 8881 section 18.2; RFC 7530 16.2).
//!
//! Drops the open and the byte-range locks taken under it (the server
//! MAY free them, RFC 8881 18.2.3). In 4.1 the reply carries the invalid
//! special stateid (18.2.4); in 4.0 the open stateid with its seqid
//! bumped, and a retransmission is answered from the owner's last reply.

use proto::nfs4::*;

use super::open::io_client;
use super::{Compound, Fh};
use crate::shared_shares;
use crate::state::stateids::{invalid_stateid, Kind, OwnerKey, OwnerSort, Replay, SeqCheck};

pub(super) fn run(cx: &mut Compound, args: CLOSE4args) -> Result<stateid4, nfsstat4> {
    let st = cx.state();
    let sid = cx.resolve_stateid(&args.open_stateid)?;
    // The file may be gone (removed, or renamed over) while still open:
    // closing it must work all the same, so the handle is not resolved.
    let file = match cx.cfh()? {
        Fh::Obj { export_id, id, generation } => (export_id, id, generation),
        Fh::Pseudo(_) => return Err(nfsstat4::NFS4ERR_ISDIR),
    };
    let minor = cx.minor;
    let mut t = st.lock_tables();
    let owner = owner_of_open(&t.stateids, &sid.other);
    if minor == 0 {
        let Some(key) = owner.clone() else {
            return Err(t.stateids.find(st.boot, 0, None, &sid).err().unwrap_or(nfsstat4::NFS4ERR_BAD_STATEID));
        };
        t.clients.renew(key.client, st.now())?;
        match t.stateids.seqid_check(OwnerSort::Open, &key, args.seqid)? {
            SeqCheck::Replay(Replay::Close(r)) => return r,
            SeqCheck::Replay(_) => return Err(nfsstat4::NFS4ERR_BAD_SEQID),
            SeqCheck::Go => {}
        }
    }
    // The open's share modes in a shared store, released there before the
    // reply (see `shared_shares`).
    let mut released_share = None;
    let r = (|| {
        let e = t.stateids.find(st.boot, minor, io_client(cx), &sid)?;
        if e.open().is_none() || e.file != file {
            return Err(nfsstat4::NFS4ERR_BAD_STATEID);
        }
        let client = e.client;
        // Released before the reply: an OPEN another client makes right
        // after must not meet what this one held. (Nothing is held while
        // the heads of a cluster keep no share modes in the store, and the
        // release then asks the store nothing.)
        let store_key = e.open().map_or(0, |o| o.store_key);
        if minor >= 1 {
            t.clients.renew(client, st.now())?;
        }
        let crate::state::Tables { stateids, locks, .. } = &mut *t;
        let s = stateids.close(&sid.other, locks, minor == 0)?;
        if store_key != 0 && stateids.take_released_share(store_key) {
            released_share = Some(store_key);
        }
        Ok(if minor == 0 { s } else { invalid_stateid() })
    })();
    if minor == 0 {
        if let Some(key) = owner {
            let status = r.as_ref().err().copied().unwrap_or(nfsstat4::NFS4_OK);
            t.stateids.seqid_record(OwnerSort::Open, &key, args.seqid, status, Replay::Close(r.clone()));
        }
    }
    drop(t);
    if let (Some(key), Some(export)) = (released_share, cx.core.export_by_id(file.0)) {
        shared_shares::set(&*export.fs, file.1, key, 0, 0);
    }
    if let Ok(s) = &r {
        cx.current_stateid = Some(s.clone());
    }
    r
}

/// The open-owner of an open stateid, live or (4.0) just closed.
pub(super) fn owner_of_open(ids: &crate::state::stateids::Stateids, other: &[u8; 12]) -> Option<OwnerKey> {
    match ids.ids.get(other).map(|e| (e.client, &e.kind)) {
        Some((client, Kind::Open(o))) => Some(OwnerKey { client, owner: o.owner.clone() }),
        Some(_) => None,
        None => ids.closed.get(other).cloned(),
    }
}
