//! OPEN_CONFIRM (RFC 7530 section 16.18; minor version 0 only): confirms
//! a new open-owner's first OPEN.

use proto::nfs4::*;

use super::open::file_key;
use super::Compound;
use crate::state::Answer;

pub(super) fn run(cx: &mut Compound, args: OPEN_CONFIRM4args) -> Result<OPEN_CONFIRM4resok, nfsstat4> {
    let st = cx.state();
    let sid = args.open_stateid.clone();
    let obj = cx.cobj(nfsstat4::NFS4ERR_ISDIR)?;
    let file = file_key(&obj);
    let r = match st.open_confirm(&sid, file, args.seqid) {
        Answer::Early(r) => return r.map(|open_stateid| OPEN_CONFIRM4resok { open_stateid }),
        Answer::Done(r, ()) => r,
    };
    if let Ok(s) = &r {
        cx.current_stateid = Some(s.clone());
    }
    r.map(|open_stateid| OPEN_CONFIRM4resok { open_stateid })
}
