//! COPY (RFC 7862 section 15.2), intra-server: the saved file handle's
//! range is copied into the current one's without the data crossing the
//! wire. The source stateid follows READ's rules and the destination's
//! WRITE's; both files must be regular and different.
//!
//! Up to `copy_sync_max` bytes are copied inside the request, unstable,
//! and the reply carries the write verifier, so the client COMMITs them
//! as it would its own WRITEs. A longer copy runs in the background
//! (copy_async.rs) when the client allows it (`ca_synchronous` false) and
//! has a back channel for CB_OFFLOAD; otherwise it is answered short with
//! the count done (as a short WRITE is) and the client asks for the rest.
//! Copies from another server (`ca_source_server`) are not offered.

use proto::nfs4::*;
use vfs::Stability;

use super::status::stat4;
use super::write::stable_how;
use super::{copy_async, io, Compound, Obj};
use crate::state::stateids::IoKind;

/// The saved file handle as the source of a COPY or CLONE: a regular
/// file, else WRONG_TYPE.
pub(super) fn source<'a>(cx: &Compound<'a>) -> Result<Obj<'a>, nfsstat4> {
    let fh = cx.sfh.ok_or(nfsstat4::NFS4ERR_NOFILEHANDLE)?;
    match fh {
        super::Fh::Pseudo(_) => Err(nfsstat4::NFS4ERR_WRONG_TYPE),
        fh => io::regular(cx.resolve(fh)?),
    }
}

/// The source range `[offset, offset+count)` (`count` 0: to the end of
/// the file) as a byte count; INVAL when it reaches past the end (RFC
/// 7862 sections 15.2.3 and 15.13.3).
pub(super) fn source_count(src: &Obj, offset: u64, count: u64) -> Result<u64, nfsstat4> {
    let size = src.attrs.size;
    if offset > size {
        return Err(nfsstat4::NFS4ERR_INVAL);
    }
    if count == 0 {
        return Ok(size - offset);
    }
    match offset.checked_add(count) {
        Some(end) if end <= size => Ok(count),
        _ => Err(nfsstat4::NFS4ERR_INVAL),
    }
}

pub(super) fn run(cx: &mut Compound, args: COPY4args) -> COPY4res {
    match copy(cx, &args) {
        Ok(ok) => COPY4res::NFS4_OK(ok),
        Err(s) => COPY4res::default(s),
    }
}

fn copy(cx: &Compound, args: &COPY4args) -> Result<COPY4resok, nfsstat4> {
    let src = source(cx)?;
    let dst = io::file_to_change(cx)?;
    if !args.ca_source_server.is_empty() {
        // Inter-server copy needs COPY_NOTIFY on the source server.
        return Err(nfsstat4::NFS4ERR_NOTSUPP);
    }
    if src.export.id == dst.export.id && src.id == dst.id {
        return Err(nfsstat4::NFS4ERR_INVAL);
    }
    let count = source_count(&src, args.ca_src_offset, args.ca_count)?;
    io::check(cx, &src, &args.ca_src_stateid, IoKind::Read, (args.ca_src_offset, count))?;
    io::check(cx, &dst, &args.ca_dst_stateid, IoKind::Write, (args.ca_dst_offset, count))?;
    io::end_within(cx, args.ca_dst_offset, count)?;
    if src.export.id != dst.export.id {
        return Err(nfsstat4::NFS4ERR_XDEV);
    }
    let sync_max = cx.state().settings.copy_sync_max;
    if count > sync_max && !args.ca_synchronous {
        if let Some(started) = start_async(cx, &src, &dst, args, count) {
            return Ok(started);
        }
    }
    let count = count.min(sync_max);
    let done = if count == 0 {
        vfs::CopyResult { count: 0, committed: Stability::FileSync }
    } else {
        dst.fs()
            .data_ops()
            .ok_or(nfsstat4::NFS4ERR_NOTSUPP)?
            .copy_range(src.id, args.ca_src_offset, dst.id, args.ca_dst_offset, count, Stability::Unstable)
            .map_err(stat4)?
    };
    Ok(COPY4resok {
        cr_response: write_response4 {
            wr_callback_id: Vec::new(),
            wr_count: done.count,
            wr_committed: stable_how(done.committed),
            wr_writeverf: cx.core.write_verifier(),
        },
        // Done in the request, in order from the first byte.
        cr_requirements: copy_requirements4 { cr_consecutive: true, cr_synchronous: true },
    })
}

/// Starts `args` in the background and returns the reply naming its copy
/// stateid; `None` (copy within the request instead) when the client has
/// no back channel, too many copies run, or no thread could be started.
fn start_async(cx: &Compound, src: &Obj, dst: &Obj, args: &COPY4args, count: u64) -> Option<COPY4resok> {
    let client = cx.session_client()?;
    let st = cx.state();
    let settings = &st.settings;
    let job = st.start_offload(client)?;
    let copy = copy_async::Copy {
        fs: dst.export.fs.clone(),
        src: src.id,
        src_offset: args.ca_src_offset,
        dst: dst.id,
        dst_offset: args.ca_dst_offset,
        count,
        chunk: settings.copy_sync_max,
        dst_fh: cx.encode_fh(dst.fh()),
        writeverf: cx.core.write_verifier(),
    };
    let stateid = job.stateid.clone();
    if !copy_async::spawn(&*cx.core.jobs, &cx.core.v4, job, copy) {
        st.offload_cancel(client, &stateid);
        return None;
    }
    Some(COPY4resok {
        cr_response: write_response4 {
            wr_callback_id: vec![stateid],
            wr_count: 0,
            wr_committed: stable_how4::UNSTABLE4,
            wr_writeverf: cx.core.write_verifier(),
        },
        cr_requirements: copy_requirements4 { cr_consecutive: true, cr_synchronous: false },
    })
}
