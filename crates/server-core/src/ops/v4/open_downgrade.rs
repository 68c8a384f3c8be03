//! OPEN_DOWNGRADE (RFC 8881 section 18.18; RFC 7530 16.19): narrows an
//! open to access and deny modes its OPENs used (NFS4ERR_INVAL otherwise).

use proto::nfs4::*;

use super::close::owner_of_open;
use super::open::{file_key, io_client};
use super::Compound;
use crate::shared_shares;
use crate::state::opens::check_share;
use crate::state::stateids::{OwnerSort, Replay, SeqCheck};

pub(super) fn run(cx: &mut Compound, args: OPEN_DOWNGRADE4args) -> Result<OPEN_DOWNGRADE4resok, nfsstat4> {
    let st = cx.state();
    let sid = cx.resolve_stateid(&args.open_stateid)?;
    let obj = cx.cobj(nfsstat4::NFS4ERR_ISDIR)?;
    let file = file_key(&obj);
    let minor = cx.minor;
    let mut t = st.lock_tables();
    let owner = owner_of_open(&t.stateids, &sid.other).filter(|_| minor == 0);
    if minor == 0 {
        let Some(key) = owner.clone() else {
            return Err(t.stateids.find(st.boot, 0, None, &sid).err().unwrap_or(nfsstat4::NFS4ERR_BAD_STATEID));
        };
        t.clients.renew(key.client, st.now())?;
        match t.stateids.seqid_check(OwnerSort::Open, &key, args.seqid)? {
            SeqCheck::Replay(Replay::Downgrade(r)) => {
                return r.map(|open_stateid| OPEN_DOWNGRADE4resok { open_stateid })
            }
            SeqCheck::Replay(_) => return Err(nfsstat4::NFS4ERR_BAD_SEQID),
            SeqCheck::Go => {}
        }
    }
    // The modes the store is to hold now (see `shared_shares`): fewer, so
    // no other server's open can conflict with them.
    let mut narrowed = None;
    let r = (|| {
        let e = t.stateids.find(st.boot, minor, io_client(cx), &sid)?;
        let Some(o) = e.open() else { return Err(nfsstat4::NFS4ERR_BAD_STATEID) };
        if e.file != file || !o.confirmed {
            return Err(nfsstat4::NFS4ERR_BAD_STATEID);
        }
        let o_key = o.store_key;
        let client = e.client;
        t.clients.renew(client, st.now())?;
        let (access, deny) = check_share(minor, args.share_access, args.share_deny)?;
        let r = t.stateids.downgrade(&sid.other, access, deny)?;
        narrowed = Some((o_key, access, deny));
        Ok(r)
    })();
    if let Some(key) = owner {
        let status = r.as_ref().err().copied().unwrap_or(nfsstat4::NFS4_OK);
        t.stateids.seqid_record(OwnerSort::Open, &key, args.seqid, status, Replay::Downgrade(r.clone()));
    }
    drop(t);
    if let Some((key, access, deny)) = narrowed {
        shared_shares::set(obj.fs(), obj.id, key, access, deny);
    }
    if let Ok(s) = &r {
        cx.current_stateid = Some(s.clone());
    }
    r.map(|open_stateid| OPEN_DOWNGRADE4resok { open_stateid })
}
