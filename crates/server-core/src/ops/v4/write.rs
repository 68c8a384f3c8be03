//! WRITE (RFC 8881 section 18.32).
//!
//! The stateid is checked first (OPENMODE for read-only opens, share
//! reservations against special stateids, delegations of other clients).
//! Data beyond `wtmax` is written as a short write. `stable` is honoured
//! on `sync` exports; on `async` ones the backend writes unstable and the
//! reply claims what was asked (as NFSv3 WRITE does).

use proto::nfs4::*;
use vfs::{FileType, Stability};

use super::open::{file_key, io_client};
use super::status::stat4;
use super::Compound;
use crate::auth::may_write;
use crate::state::stateids::{check_io, IoKind};

fn stability(s: stable_how4) -> Stability {
    match s {
        stable_how4::UNSTABLE4 => Stability::Unstable,
        stable_how4::DATA_SYNC4 => Stability::DataSync,
        stable_how4::FILE_SYNC4 => Stability::FileSync,
    }
}

fn stable_how(s: Stability) -> stable_how4 {
    match s {
        Stability::Unstable => stable_how4::UNSTABLE4,
        Stability::DataSync => stable_how4::DATA_SYNC4,
        Stability::FileSync => stable_how4::FILE_SYNC4,
    }
}

pub(super) fn run(cx: &mut Compound, args: WRITE4args) -> Result<WRITE4resok, nfsstat4> {
    let st = cx.state();
    let obj = cx.cobj(nfsstat4::NFS4ERR_ISDIR)?;
    match obj.attrs.ftype {
        FileType::Regular => {}
        FileType::Directory => return Err(nfsstat4::NFS4ERR_ISDIR),
        _ => return Err(nfsstat4::NFS4ERR_INVAL),
    }
    if obj.read_only() {
        return Err(nfsstat4::NFS4ERR_ROFS);
    }
    let sid = cx.resolve_stateid(&args.stateid)?;
    let settings = cx.core.settings();
    let n = u32::try_from(args.data.len()).unwrap_or(u32::MAX).min(settings.wtmax);
    {
        let mut t = st.tables.lock();
        let range = (args.offset, u64::from(n));
        check_io(st, &mut t, io_client(cx), &sid, file_key(&obj), IoKind::Write, range)?;
    }
    if !may_write(&obj.attrs, &obj.creds) {
        return Err(nfsstat4::NFS4ERR_ACCESS);
    }
    match args.offset.checked_add(u64::from(n)) {
        Some(end) if end <= settings.max_file_size => {}
        _ => return Err(nfsstat4::NFS4ERR_FBIG),
    }
    let requested = stability(args.stable);
    let sync = obj.rule.options.sync;
    let asked = if sync { requested } else { Stability::Unstable };
    let r = obj.fs().write(obj.id, args.offset, &args.data[..n as usize], asked).map_err(stat4)?;
    let achieved = if sync { r.committed } else { r.committed.max(requested) };
    Ok(WRITE4resok { count: r.count.min(n), committed: stable_how(achieved), writeverf: cx.core.write_verifier() })
}
