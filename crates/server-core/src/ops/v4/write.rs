//! WRITE (RFC 8881 section 18.32).
//!
//! The stateid is checked first (OPENMODE for read-only opens, share
//! reservations against special stateids, delegations of other clients).
//! Data beyond `wtmax` is written as a short write. `stable` is honoured
//! on `sync` exports; on `async` ones the backend writes unstable and the
//! reply claims what was asked (as NFSv3 WRITE does).

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
    let settings = cx.core.settings();
    let n = u32::try_from(args.data.len()).unwrap_or(u32::MAX).min(settings.wtmax);
    io::check(cx, &obj, &args.stateid, IoKind::Write, (args.offset, u64::from(n)))?;
    io::end_within(cx, args.offset, u64::from(n))?;
    let requested = stability(args.stable);
    let sync = obj.rule.options.sync;
    let asked = if sync { requested } else { Stability::Unstable };
    let r = obj.fs().write(obj.id, args.offset, &args.data[..n as usize], asked).map_err(stat4)?;
    let achieved = if sync { r.committed } else { r.committed.max(requested) };
    Ok(WRITE4resok { count: r.count.min(n), committed: stable_how(achieved), writeverf: cx.core.write_verifier() })
}
