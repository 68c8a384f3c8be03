//! CLONE (RFC 7862 section 15.13): the destination range comes to share
//! the source's blocks (a reflink), in constant time and atomically.
//! Offsets and the count must be multiples of `clone_blksize` (the count
//! may instead run to the source's end); ranges of one file must not
//! overlap. A backend that cannot reflink says NOTSUPP.

use proto::nfs4::*;

use super::copy::{source, source_count};
use super::status::stat4;
use super::{io, Compound};
use crate::state::stateids::IoKind;

pub(super) fn run(cx: &mut Compound, args: CLONE4args) -> Result<(), nfsstat4> {
    let src = source(cx)?;
    let dst = io::file_to_change(cx)?;
    let count = source_count(&src, args.cl_src_offset, args.cl_count)?;
    io::check(cx, &src, &args.cl_src_stateid, IoKind::Read, (args.cl_src_offset, count))?;
    io::check(cx, &dst, &args.cl_dst_stateid, IoKind::Write, (args.cl_dst_offset, count))?;
    io::end_within(cx, args.cl_dst_offset, count)?;
    if src.export.id != dst.export.id {
        return Err(nfsstat4::NFS4ERR_XDEV);
    }
    // A backend that cannot tell its block size in advance still gets to
    // try: the file system refuses a misaligned clone itself.
    let ops = dst.fs().data_ops();
    if let Some(block) = ops.and_then(|o| o.clone_blksize()).map(u64::from).filter(|b| *b > 0) {
        let to_end = args.cl_src_offset + count == src.attrs.size;
        if args.cl_src_offset % block != 0 || args.cl_dst_offset % block != 0 || (count % block != 0 && !to_end) {
            return Err(nfsstat4::NFS4ERR_INVAL);
        }
    }
    let same = src.id == dst.id;
    if same && args.cl_src_offset < args.cl_dst_offset + count && args.cl_dst_offset < args.cl_src_offset + count {
        return Err(nfsstat4::NFS4ERR_INVAL);
    }
    if count == 0 {
        return Ok(());
    }
    ops.ok_or(nfsstat4::NFS4ERR_NOTSUPP)?
        .clone_range(src.id, args.cl_src_offset, dst.id, args.cl_dst_offset, count)
        .map_err(stat4)
}
