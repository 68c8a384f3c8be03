//! READ (RFC 8881 section 18.22).
//!
//! The stateid is checked first (share reservations, delegations of
//! other clients, the open's access mode); the count is capped at
//! `rtmax` (short reads are allowed; `eof` tells the client).
//!
//! A large READ that ends its compound may leave its data in the page
//! cache: the reply then ends with the data's length and the transport
//! sends the file's bytes after it (sendfile), as for NFSv3, instead of
//! the server reading them into memory and writing them out again.
//!
//! A READ of a file whose data is in the page cache may run on the
//! connection's thread (`placement`): the data is then read first, before
//! SEQUENCE, so that a compound that would have to wait changes nothing
//! before it goes to a worker (`read_ahead`).

use proto::nfs4::*;
use xdr::{Decode, Decoder, Encode, Encoder};

use super::status::stat4;
use super::{io, Compound, Obj};
use crate::state::stateids::IoKind;
use crate::Core;

pub(super) fn run(cx: &mut Compound, args: READ4args) -> Result<READ4resok, nfsstat4> {
    let (obj, count) = checked(cx, &args)?;
    if let Some(r) = take_read_ahead(cx, &obj, args.offset, count) {
        return Ok(resok(r, count));
    }
    read(&obj, &args, count)
}

/// A READ's data, read before its compound ran, and what reading it took
/// from the compound: its operations, decoded, each with the decoder past
/// it, and the handle PUTFH names, verified. The compound runs these
/// rather than decoding and verifying them again.
pub(crate) struct ReadAhead {
    export_id: u32,
    id: vfs::FileId,
    offset: u64,
    count: u32,
    data: vfs::ReadResult,
    pub(super) ops: std::collections::VecDeque<(nfs_argop4, Decoder)>,
    pub(super) verified: (nfs_fh4, crate::fh::HandleData),
}

/// For a compound of `[SEQUENCE,] PUTFH, READ` (SEQUENCE from minor
/// version 1 on; READ_PLUS in READ's place from minor version 2) run on
/// the connection's thread: the READ's data, if the page cache holds all
/// of it, read before any operation runs, so that a compound that would
/// have to wait for the disk gives up before SEQUENCE has claimed its
/// slot. `None` (run it on a worker) for any other compound, a handle that
/// does not verify, or data not cached.
///
/// Nothing is answered from these bytes unless the READ, decoded and run
/// in its turn, passes every check on the very object and range read
/// here (`take_read_ahead`); otherwise they are dropped.
pub(super) fn read_ahead(core: &Core, mut d: Decoder, minor: u32, ops: u32) -> Option<ReadAhead> {
    let sequence = minor >= 1;
    if ops != 2 + u32::from(sequence) {
        return None;
    }
    let mut decoded = std::collections::VecDeque::with_capacity(3);
    let mut next = |d: &mut Decoder| {
        let op = nfs_argop4::decode(d).ok()?;
        decoded.push_back((op, d.clone()));
        decoded.back().map(|(op, _)| op.clone())
    };
    if sequence && !matches!(next(&mut d)?, nfs_argop4::OP_SEQUENCE(_)) {
        return None;
    }
    let nfs_argop4::OP_PUTFH(fh) = next(&mut d)? else {
        return None;
    };
    let (offset, count, plus) = match next(&mut d)? {
        nfs_argop4::OP_READ(a) => (a.offset, a.count, false),
        nfs_argop4::OP_READ_PLUS(a) if minor >= 2 => (a.rpa_offset, a.rpa_count, true),
        _ => return None,
    };
    let h = core.fh.decode(&fh.object).ok()?;
    let export = core.export_by_id(h.export_id)?;
    let count = count.min(core.settings().rtmax);
    let data = export.fs.fast_paths()?.read_cached(h.fileid, offset, count).ok()??;
    // READ_PLUS should answer zeros as a hole (RFC 7862 section 15.10.3):
    // a block of them may be one, which the worker's read finds out.
    if plus && has_zero_block(&data.data, offset) {
        return None;
    }
    Some(ReadAhead {
        export_id: h.export_id,
        id: h.fileid,
        offset,
        count,
        data,
        ops: decoded,
        verified: (fh.object, h),
    })
}

/// The granule of holes: no file system here allocates in smaller units.
const HOLE_GRANULE: u64 = 4096;

/// Whether `data`, read at `offset`, holds a whole `HOLE_GRANULE`-aligned
/// block of zeros, or ends in zeros short of a block (a hole may run to
/// the end of the file).
fn has_zero_block(data: &[u8], offset: u64) -> bool {
    let mut at = 0usize;
    while at < data.len() {
        let pos = offset + at as u64;
        let len = (HOLE_GRANULE - pos % HOLE_GRANULE).min((data.len() - at) as u64) as usize;
        let whole = len as u64 == HOLE_GRANULE || at + len == data.len();
        if whole && data[at..at + len].iter().all(|b| *b == 0) {
            return true;
        }
        at += len;
    }
    false
}

/// The data read ahead for this compound, if it is of `obj` at `offset`
/// for `count` bytes.
pub(super) fn take_read_ahead(cx: &mut Compound, obj: &Obj, offset: u64, count: u32) -> Option<vfs::ReadResult> {
    let r = cx.read_ahead.take()?;
    let same = r.export_id == obj.export.id && r.id == obj.id && r.offset == offset && r.count == count;
    same.then_some(r.data)
}

/// The checks every READ makes, and the count to read.
fn checked<'a>(cx: &mut Compound<'a>, args: &READ4args) -> Result<(Obj<'a>, u32), nfsstat4> {
    let obj = io::file_to_read(cx)?;
    let count = args.count.min(cx.core.settings().rtmax);
    io::check(cx, &obj, &args.stateid, IoKind::Read, (args.offset, u64::from(count)))?;
    Ok((obj, count))
}

fn read(obj: &Obj, args: &READ4args, count: u32) -> Result<READ4resok, nfsstat4> {
    // At or past the end there is nothing to read, however large the
    // offset (backends may refuse offsets beyond what they can address).
    if args.offset >= obj.attrs.size {
        return Ok(READ4resok { eof: true, data: bytes::Bytes::new() });
    }
    let r = obj.fs().read(obj.id, args.offset, count).map_err(stat4)?;
    Ok(resok(r, count))
}

/// A READ result of the data read, cut to `count` should a backend return
/// more.
pub(super) fn resok(r: vfs::ReadResult, count: u32) -> READ4resok {
    let mut data = r.data;
    let mut eof = r.eof;
    if data.len() > count as usize {
        tracing::error!(asked = count, got = data.len(), "backend read returned more than requested; truncated");
        data.truncate(count as usize);
        eof = false;
    }
    READ4resok { eof, data }
}

/// Whether a READ of `count` may go out as a file region: the transport
/// sends files (clear text, `read_sendfile_min`), and the reply is not to
/// be kept for a retransmission, which would lack the data: not asked of
/// the session's slot (`sa_cachethis`), and, without a session (NFSv4.0,
/// whose replies the duplicate request cache keeps), after nothing but
/// operations that find the file (`only_lookups_before`), so nothing in
/// the compound needs its reply kept.
pub(super) fn may_send_region(cx: &Compound, count: u32, only_lookups_before: bool) -> bool {
    let kept = match &cx.seq {
        Some(seq) => seq.cachethis,
        None => !only_lookups_before,
    };
    cx.core.sends_file(count, cx.call) && cx.call.peer.tls == crate::TransportSecurity::Clear && !kept
}

/// READ as the compound's last operation, its result encoded into `e`:
/// the status, and the file region whose bytes (and XDR padding) the
/// transport sends after the reply, if the backend has the data in a file.
pub(super) fn run_into(cx: &mut Compound, args: READ4args, e: &mut Encoder) -> (nfsstat4, Option<vfs::FileRegion>) {
    match answer(cx, &args) {
        Ok(Answer::Region { eof, region }) => {
            encode_ok_head(e, eof, region.len);
            (nfsstat4::NFS4_OK, Some(region))
        }
        Ok(Answer::Data(resok)) => {
            nfs_resop4::OP_READ(READ4res::NFS4_OK(resok)).encode(e);
            (nfsstat4::NFS4_OK, None)
        }
        Err(s) => {
            nfs_resop4::OP_READ(READ4res::default(s)).encode(e);
            (s, None)
        }
    }
}

enum Answer {
    /// The data is this region of an open file.
    Region { eof: bool, region: vfs::FileRegion },
    /// The backend has no file to send from, or nothing is to be read.
    Data(READ4resok),
}

fn answer(cx: &mut Compound, args: &READ4args) -> Result<Answer, nfsstat4> {
    let (obj, count) = checked(cx, args)?;
    if let Some(r) = take_read_ahead(cx, &obj, args.offset, count) {
        return Ok(Answer::Data(resok(r, count)));
    }
    if args.offset < obj.attrs.size {
        let region = obj.fs().fast_paths().map(|f| f.read_region(obj.id, args.offset, count));
        if let Some((region, eof)) = region.transpose().map_err(stat4)?.flatten() {
            if region.len <= count {
                return Ok(Answer::Region { eof, region });
            }
        }
    }
    read(&obj, args, count).map(Answer::Data)
}

/// The READ result up to and including the data's length: what encoding
/// `nfs_resop4::OP_READ` writes before the data bytes themselves.
fn encode_ok_head(e: &mut Encoder, eof: bool, len: u32) {
    e.u32(nfs_opnum4::OP_READ as u32);
    nfsstat4::NFS4_OK.encode(e);
    e.bool(eof);
    e.u32(len);
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    /// Blocks of zeros are found where a hole could be: whole aligned
    /// blocks, and zeros running to the end of what was read.
    #[test]
    fn zero_blocks_are_found_on_hole_boundaries() {
        let mut data = vec![1u8; 3 * 4096];
        assert!(!has_zero_block(&data, 0));
        data[4096..8192].fill(0);
        assert!(has_zero_block(&data, 0), "an aligned block");
        assert!(!has_zero_block(&data, 100), "the zeros straddle two blocks of the file");
        let mut tail = vec![1u8; 5000];
        tail[4096..].fill(0);
        assert!(has_zero_block(&tail, 0), "zeros to the end of the data");
        assert!(!has_zero_block(&[], 0));
        assert!(has_zero_block(&[0; 10], 4090), "a short read of zeros");
    }

    /// The head written for a file region, followed by the bytes and the
    /// padding the transport adds, is exactly the ordinary encoding.
    #[test]
    fn region_head_matches_the_ordinary_encoding() {
        for len in [0usize, 1, 3, 4, 5, 4096, 65537] {
            let data = Bytes::from((0..len).map(|i| i as u8).collect::<Vec<u8>>());
            let mut whole = Encoder::new();
            nfs_resop4::OP_READ(READ4res::NFS4_OK(READ4resok { eof: true, data: data.clone() })).encode(&mut whole);
            let mut head = Encoder::new();
            encode_ok_head(&mut head, true, len as u32);
            let mut spliced = head.into_bytes().to_vec();
            spliced.extend_from_slice(&data);
            spliced.resize(spliced.len() + (4 - len % 4) % 4, 0);
            assert_eq!(spliced, whole.into_bytes().to_vec(), "len {len}");
        }
    }
}
