//! READ_PLUS (RFC 7862 section 15.10): READ that returns holes as
//! (offset, length) pairs instead of zeros, so a sparse file's empty
//! ranges cross the wire as a few bytes. Stateids, caps and `eof` are as
//! for READ.

use proto::nfs4::*;
use vfs::Segment;

use super::status::stat4;
use super::{io, Compound};
use crate::state::stateids::IoKind;

pub(super) fn run(cx: &mut Compound, args: READ_PLUS4args) -> Result<read_plus_res4, nfsstat4> {
    let obj = io::file_to_read(cx)?;
    let count = args.rpa_count.min(cx.core.settings().rtmax);
    io::check(cx, &obj, &args.rpa_stateid, IoKind::Read, (args.rpa_offset, u64::from(count)))?;
    if args.rpa_offset >= obj.attrs.size || count == 0 {
        return Ok(read_plus_res4 { rpr_eof: args.rpa_offset >= obj.attrs.size, rpr_contents: Vec::new() });
    }
    let (segments, eof) = obj.fs().read_sparse(obj.id, args.rpa_offset, count).map_err(stat4)?;
    let end = args.rpa_offset + u64::from(count);
    let mut contents = Vec::with_capacity(segments.len());
    let mut next = args.rpa_offset;
    for seg in segments {
        // Segments must follow each other from the offset asked for and
        // stay inside the count; a backend that breaks this is cut short
        // (with eof cleared) rather than trusted.
        let (start, len) = match &seg {
            Segment::Data { offset, data } => (*offset, data.len() as u64),
            Segment::Hole { offset, length } => (*offset, *length),
        };
        if start != next || start + len > end || len == 0 {
            tracing::error!(
                start,
                len,
                expected = next,
                "backend returned a misplaced READ_PLUS segment; reply cut short"
            );
            return Ok(read_plus_res4 { rpr_eof: false, rpr_contents: contents });
        }
        next = start + len;
        contents.push(match seg {
            Segment::Data { offset, data } => {
                read_plus_content::NFS4_CONTENT_DATA(data4 { d_offset: offset, d_data: data })
            }
            Segment::Hole { offset, length } => {
                read_plus_content::NFS4_CONTENT_HOLE(data_info4 { di_offset: offset, di_length: length })
            }
        });
    }
    Ok(read_plus_res4 { rpr_eof: eof, rpr_contents: contents })
}
