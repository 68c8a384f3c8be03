//! WRITE (RFC 1813 section 3.3.7).
//!
//! - `count` larger than the data sent is NFS3ERR_INVAL (the request is
//!   inconsistent); a `count` smaller than the data writes `count` bytes
//!   (the extra bytes are ignored, as knfsd does).
//! - `count` above `wtmax` is written as a short write of `wtmax` bytes,
//!   which RFC 1813 allows: the reply's count tells the client to send the
//!   rest. (A transport that bounds records near `wtmax` makes this rare.)
//! - `stable` is honoured exactly and `committed` reports what the backend
//!   reached. On an `async` export the backend is asked for UNSTABLE only,
//!   but the reply claims the requested level — data acknowledged as
//!   stable can then be lost in a crash; that is what `async` means
//!   (exports(5), knfsd).

use proto::nfs3::{nfsstat3, stable_how, WRITE3args, WRITE3res, WRITE3resfail, WRITE3resok};
use vfs::Stability;

use super::{file_for_write, stat, Ctx};

pub(crate) fn stability(s: stable_how) -> Stability {
    match s {
        stable_how::UNSTABLE => Stability::Unstable,
        stable_how::DATA_SYNC => Stability::DataSync,
        stable_how::FILE_SYNC => Stability::FileSync,
    }
}

fn stable_how_of(s: Stability) -> stable_how {
    match s {
        Stability::Unstable => stable_how::UNSTABLE,
        Stability::DataSync => stable_how::DATA_SYNC,
        Stability::FileSync => stable_how::FILE_SYNC,
    }
}

pub(super) fn write(ctx: &Ctx, a: WRITE3args) -> WRITE3res {
    let o = match file_for_write(ctx, &a.file) {
        Ok(o) => o,
        Err((s, file_wcc)) => return WRITE3res::default(s, WRITE3resfail { file_wcc }),
    };
    let fail = |s| WRITE3res::default(s, WRITE3resfail { file_wcc: o.wcc_unchanged() });
    if a.count as usize > a.data.len() {
        ctx.core.warn(crate::WarnKind::Garbage, || {
            tracing::warn!(peer = %ctx.call.peer.addr, count = a.count, len = a.data.len(), "WRITE count exceeds the data sent")
        });
        return fail(nfsstat3::NFS3ERR_INVAL);
    }
    let n = a.count.min(ctx.core.settings.wtmax);
    match a.offset.checked_add(u64::from(n)) {
        Some(end) if end <= ctx.core.settings.max_file_size => {}
        _ => return fail(nfsstat3::NFS3ERR_FBIG),
    }
    if let Err(s) = super::delegations::recall_for(ctx, &o, true) {
        return fail(s);
    }
    let requested = stability(a.stable);
    let sync = o.rule.options.sync;
    let asked = if sync { requested } else { Stability::Unstable };
    match o.fs().write(o.id, a.offset, &a.data[..n as usize], asked) {
        Ok(r) => {
            let achieved = if sync { r.committed } else { r.committed.max(requested) };
            WRITE3res::NFS3_OK(WRITE3resok {
                file_wcc: o.wcc(),
                count: r.count.min(n),
                committed: stable_how_of(achieved),
                verf: ctx.core.write_verifier(),
            })
        }
        Err(e) => WRITE3res::default(stat(e), WRITE3resfail { file_wcc: o.wcc() }),
    }
}
