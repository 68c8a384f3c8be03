//! OPEN_DOWNGRADE (RFC 8881 section 18.18; RFC 7530 16.19): narrows an
//! open to access and deny modes its OPENs used (NFS4ERR_INVAL otherwise).

use proto::nfs4::*;

use super::open::{file_key, io_client};
use super::Compound;
use crate::shared_shares;
use crate::state::Answer;

pub(super) fn run(cx: &mut Compound, args: OPEN_DOWNGRADE4args) -> Result<OPEN_DOWNGRADE4resok, nfsstat4> {
    let st = cx.state();
    let sid = cx.resolve_stateid(&args.open_stateid)?;
    let obj = cx.cobj(nfsstat4::NFS4ERR_ISDIR)?;
    let file = file_key(&obj);
    let (access, deny) = (args.share_access, args.share_deny);
    let r = st.open_downgrade(cx.minor, io_client(cx), &sid, file, args.seqid, access, deny);
    let (r, narrowed) = match r {
        Answer::Early(r) => return r.map(|open_stateid| OPEN_DOWNGRADE4resok { open_stateid }),
        Answer::Done(r, narrowed) => (r, narrowed),
    };
    if let Some((key, access, deny)) = narrowed {
        shared_shares::set(obj.fs(), obj.id, key, access, deny);
    }
    if let Ok(s) = &r {
        cx.current_stateid = Some(s.clone());
    }
    r.map(|open_stateid| OPEN_DOWNGRADE4resok { open_stateid })
}
