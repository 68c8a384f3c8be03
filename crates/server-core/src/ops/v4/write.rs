//! WRITE (RFC 8881 section 18.32).
//!
//! The stateid is checked first (OPENMODE for read-only opens, share
//! reservations against special stateids, delegations of other clients).
//! What both versions share (a short write beyond `wtmax`, the largest
//! file, `stable` on `sync` and `async` exports) is `ops::write`.

use proto::nfs4::*;
use vfs::Stability;

use super::status::stat4;
use super::{io, Compound};
use crate::state::stateids::IoKind;

pub(super) fn stability(s: stable_how4) -> Stability {
    match s {
        stable_how4::UNSTABLE4 => Stability::Unstable,
        stable_how4::DATA_SYNC4 => Stability::DataSync,
        stable_how4::FILE_SYNC4 => Stability::FileSync,
    }
}

pub(super) fn stable_how(s: Stability) -> stable_how4 {
    match s {
        Stability::Unstable => stable_how4::UNSTABLE4,
        Stability::DataSync => stable_how4::DATA_SYNC4,
        Stability::FileSync => stable_how4::FILE_SYNC4,
    }
}

pub(super) fn run(cx: &mut Compound, args: WRITE4args) -> Result<WRITE4resok, nfsstat4> {
    let obj = io::file_to_write(cx)?;
    let data = crate::ops::write::within_wtmax(cx.core, &args.data);
    let n = data.len() as u64;
    io::check(cx, &obj, &args.stateid, IoKind::Write, (args.offset, n))?;
    io::end_within(cx, args.offset, n)?;
    let r = crate::ops::write::write(&obj, args.offset, data, stability(args.stable)).map_err(stat4)?;
    Ok(WRITE4resok { count: r.count, committed: stable_how(r.committed), writeverf: cx.core.write_verifier() })
}
