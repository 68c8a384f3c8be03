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

use proto::nfs4::*;
use xdr::{Encode, Encoder};

use super::status::stat4;
use super::{io, Compound, Obj};
use crate::state::stateids::IoKind;

pub(super) fn run(cx: &mut Compound, args: READ4args) -> Result<READ4resok, nfsstat4> {
    let (obj, count) = checked(cx, &args)?;
    read(&obj, &args, count)
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
    let mut data = r.data;
    let mut eof = r.eof;
    if data.len() > count as usize {
        tracing::error!(asked = count, got = data.len(), "backend read returned more than requested; truncated");
        data.truncate(count as usize);
        eof = false;
    }
    Ok(READ4resok { eof, data })
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
    cx.core.sends_file(count) && cx.call.peer.tls == crate::TransportSecurity::Clear && !kept
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
    if args.offset < obj.attrs.size {
        if let Some((region, eof)) = obj.fs().read_region(obj.id, args.offset, count).map_err(stat4)? {
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
