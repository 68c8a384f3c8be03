//! READ_PLUS (RFC 7862 section 15.10): READ that returns holes as
//! (offset, length) pairs instead of zeros, so a sparse file's empty
//! ranges cross the wire as a few bytes. Stateids, caps and `eof` are as
//! for READ.
//!
//! Linux clients mounting NFSv4.2 read with READ_PLUS only, so it takes
//! READ's fast path too: a READ_PLUS ending its compound over a range
//! with no hole in it answers with one data segment whose bytes the
//! transport sends from the page cache (sendfile). Like READ, it may be
//! answered on the connection's thread from data read ahead of the
//! compound (`read::read_ahead`), when that data holds no block of zeros.

use proto::nfs4::*;
use vfs::Segment;
use xdr::{Encode, Encoder};

use super::status::stat4;
use super::{io, Compound, Obj};
use crate::state::stateids::IoKind;

pub(super) fn run(cx: &mut Compound, args: READ_PLUS4args) -> Result<read_plus_res4, nfsstat4> {
    let (obj, count) = checked(cx, &args)?;
    if let Some(r) = super::read::take_read_ahead(cx, &obj, args.rpa_offset, count) {
        return Ok(one_segment(r, args.rpa_offset, count));
    }
    read(&obj, &args, count)
}

/// The result for data read ahead on the connection's thread (no block
/// of zeros in it, see `read::read_ahead`): one data segment, or none at
/// the end of the file.
fn one_segment(r: vfs::ReadResult, offset: u64, count: u32) -> read_plus_res4 {
    let r = super::read::resok(r, count);
    let contents = if r.data.is_empty() {
        Vec::new()
    } else {
        vec![read_plus_content::NFS4_CONTENT_DATA(data4 { d_offset: offset, d_data: r.data })]
    };
    read_plus_res4 { rpr_eof: r.eof, rpr_contents: contents }
}

/// The checks every READ_PLUS makes, and the count to read.
fn checked<'a>(cx: &mut Compound<'a>, args: &READ_PLUS4args) -> Result<(Obj<'a>, u32), nfsstat4> {
    let obj = io::file_to_read(cx)?;
    let count = args.rpa_count.min(cx.core.settings().rtmax);
    io::check(cx, &obj, &args.rpa_stateid, IoKind::Read, (args.rpa_offset, u64::from(count)))?;
    Ok((obj, count))
}

/// READ_PLUS as the compound's last operation (see `read::run_into`):
/// a range without holes leaves its bytes for the transport to send
/// from the file after the reply.
pub(super) fn run_into(
    cx: &mut Compound,
    args: READ_PLUS4args,
    e: &mut Encoder,
) -> (nfsstat4, Option<vfs::FileRegion>) {
    match answer(cx, &args) {
        Ok(Answer::Region { eof, region }) => {
            encode_data_head(e, eof, args.rpa_offset, region.len);
            (nfsstat4::NFS4_OK, Some(region))
        }
        Ok(Answer::Contents(res)) => {
            nfs_resop4::OP_READ_PLUS(READ_PLUS4res::NFS4_OK(res)).encode(e);
            (nfsstat4::NFS4_OK, None)
        }
        Err(s) => {
            nfs_resop4::OP_READ_PLUS(READ_PLUS4res::default(s)).encode(e);
            (s, None)
        }
    }
}

enum Answer {
    /// The data is this region of an open file, with no hole in it.
    Region { eof: bool, region: vfs::FileRegion },
    /// Segments read into memory: a range with holes, a backend with no
    /// file to send from, or nothing to read.
    Contents(read_plus_res4),
}

fn answer(cx: &mut Compound, args: &READ_PLUS4args) -> Result<Answer, nfsstat4> {
    let (obj, count) = checked(cx, args)?;
    if let Some(r) = super::read::take_read_ahead(cx, &obj, args.rpa_offset, count) {
        return Ok(Answer::Contents(one_segment(r, args.rpa_offset, count)));
    }
    if args.rpa_offset < obj.attrs.size && count > 0 {
        let region = obj.fs().fast_paths().map(|f| f.read_data_region(obj.id, args.rpa_offset, count));
        if let Some((region, eof)) = region.transpose().map_err(stat4)?.flatten() {
            if region.len > 0 && region.len <= count {
                return Ok(Answer::Region { eof, region });
            }
        }
    }
    read(&obj, args, count).map(Answer::Contents)
}

/// A READ_PLUS result of one data segment at `offset`, up to and
/// including the data's length: what encoding `nfs_resop4::OP_READ_PLUS`
/// writes before the data bytes themselves.
fn encode_data_head(e: &mut Encoder, eof: bool, offset: u64, len: u32) {
    e.u32(nfs_opnum4::OP_READ_PLUS as u32);
    nfsstat4::NFS4_OK.encode(e);
    e.bool(eof);
    e.u32(1);
    e.u32(data_content4::NFS4_CONTENT_DATA as u32);
    e.u64(offset);
    e.u32(len);
}

fn read(obj: &Obj, args: &READ_PLUS4args, count: u32) -> Result<read_plus_res4, nfsstat4> {
    if args.rpa_offset >= obj.attrs.size || count == 0 {
        return Ok(read_plus_res4 { rpr_eof: args.rpa_offset >= obj.attrs.size, rpr_contents: Vec::new() });
    }
    let (segments, eof) = match obj.fs().data_ops() {
        Some(o) => o.read_sparse(obj.id, args.rpa_offset, count),
        // Without holes to tell, the data is all there is.
        None => vfs::read_unsparse(obj.fs(), obj.id, args.rpa_offset, count),
    }
    .map_err(stat4)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    /// The head written for a file region, followed by the bytes and the
    /// padding the transport adds, is exactly the ordinary encoding of a
    /// result of one data segment.
    #[test]
    fn region_head_matches_the_ordinary_encoding() {
        for len in [1usize, 3, 4, 5, 4096, 65537] {
            let data = Bytes::from((0..len).map(|i| i as u8).collect::<Vec<u8>>());
            let res = read_plus_res4 {
                rpr_eof: false,
                rpr_contents: vec![read_plus_content::NFS4_CONTENT_DATA(data4 {
                    d_offset: 8192,
                    d_data: data.clone(),
                })],
            };
            let mut whole = Encoder::new();
            nfs_resop4::OP_READ_PLUS(READ_PLUS4res::NFS4_OK(res)).encode(&mut whole);
            let mut head = Encoder::new();
            encode_data_head(&mut head, false, 8192, len as u32);
            let mut spliced = head.into_bytes().to_vec();
            spliced.extend_from_slice(&data);
            spliced.resize(spliced.len() + (4 - len % 4) % 4, 0);
            assert_eq!(spliced, whole.into_bytes().to_vec(), "len {len}");
        }
    }
}
