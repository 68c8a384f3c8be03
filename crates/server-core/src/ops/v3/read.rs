//! READ (RFC 1813 section 3.3.6).
//!
//! The count is capped at `rtmax` (a short read is always allowed; the
//! reply's count and eof tell the client). The data is the backend's
//! `Bytes` and is encoded as its own reply segment, so it is not copied
//! again on its way to the socket. The attributes are taken after the
//! read so they describe the data returned.
//!
//! Run on the connection's thread ([`crate::rpc::Call::nowait`]), a READ
//! is answered only from data in the page cache; otherwise it gives up
//! before doing anything and the transport runs it on a worker.
//!
//! When the transport can send file regions and the read is large
//! (`read_sendfile_min`), the reply carries the file and range instead of
//! the bytes: the results are encoded up to the data's length, and the
//! transport sends the bytes from the page cache and the padding after
//! them. READ3resok's data is its last field, so nothing follows.

use proto::nfs3::{nfsstat3, READ3args, READ3res, READ3resfail, READ3resok};
use xdr::{Decode, Decoder, Encode, Encoder};

use super::{check_regular, fattr, stat, Ctx, Obj};
use crate::auth::may_read;
use crate::rpc::{success_header, Dispatched};

const LABEL: &str = "nfs3.READ";

/// The object to read and the count to read, or the failure reply.
fn prepare<'a>(ctx: &'a Ctx, a: &READ3args) -> Result<(Obj<'a>, u32), READ3res> {
    let o = match ctx.resolve(&a.file) {
        Ok(o) => o,
        Err(s) => return Err(READ3res::default(s, READ3resfail { file_attributes: None })),
    };
    let fail = |s| READ3res::default(s, READ3resfail { file_attributes: Some(fattr(&o.attrs)) });
    if let Err(s) = check_regular(&o) {
        return Err(fail(s));
    }
    if !may_read(&o.attrs, &o.creds) {
        return Err(fail(nfsstat3::NFS3ERR_ACCES));
    }
    if let Err(s) = super::delegations::recall_for(ctx, &o, false) {
        return Err(fail(s));
    }
    let count = a.count.min(ctx.core.settings.rtmax);
    Ok((o, count))
}

pub(super) fn read(ctx: &Ctx, a: READ3args) -> READ3res {
    let (o, count) = match prepare(ctx, &a) {
        Ok(x) => x,
        Err(res) => return res,
    };
    match o.fs().read(o.id, a.offset, count) {
        Ok(r) => reply_ok(&o, r, count),
        Err(e) => READ3res::default(stat(e), READ3resfail { file_attributes: Some(fattr(&o.attrs)) }),
    }
}

fn reply_ok(o: &Obj, r: vfs::ReadResult, count: u32) -> READ3res {
    let n = u32::try_from(r.data.len()).unwrap_or(u32::MAX);
    let mut data = r.data;
    if n > count {
        // A backend handing back more than asked would break the reply
        // size the client sized its buffer for.
        tracing::error!(asked = count, got = n, "backend read returned more than requested; truncated");
        data.truncate(count as usize);
    }
    READ3res::NFS3_OK(READ3resok {
        file_attributes: o.post_op().or_else(|| Some(fattr(&o.attrs))),
        count: n.min(count),
        eof: r.eof && n <= count,
        data,
    })
}

/// READ on the connection's thread (cached data only) or for a transport
/// that sends file regions (large reads go out as the file's bytes
/// straight from the page cache).
pub(super) fn dispatch_special(ctx: &Ctx, d: &mut Decoder, e: &mut Encoder) -> Dispatched {
    let Ok(a) = READ3args::decode(d) else {
        return Dispatched::GarbageArgs { label: LABEL };
    };
    let xid = ctx.call.xid;
    let finish = |res: READ3res, e: &mut Encoder| {
        let ok = matches!(res, READ3res::NFS3_OK(_));
        success_header(xid, e);
        res.encode(e);
        Dispatched::Done { label: LABEL, ok }
    };
    let (o, count) = match prepare(ctx, &a) {
        Ok(x) => x,
        Err(res) => return finish(res, e),
    };
    if ctx.call.nowait {
        let cached = o.fs().fast_paths().map_or(Ok(None), |f| f.read_cached(o.id, a.offset, count));
        return match cached {
            Ok(Some(r)) => finish(reply_ok(&o, r, count), e),
            Ok(None) => Dispatched::WouldBlock,
            Err(err) => {
                finish(READ3res::default(stat(err), READ3resfail { file_attributes: Some(fattr(&o.attrs)) }), e)
            }
        };
    }
    // A file region goes out by sendfile; through TLS it would have to be
    // read into memory by the connection's one sending task instead of by
    // this worker, so there the worker reads it.
    if !ctx.core.sends_file(count, ctx.call) || ctx.call.peer.tls != crate::TransportSecurity::Clear {
        return finish(read(ctx, a), e);
    }
    match o.fs().fast_paths().map_or(Ok(None), |f| f.read_region(o.id, a.offset, count)) {
        Ok(Some((region, eof))) if region.len <= count => {
            let attrs = o.post_op().or_else(|| Some(fattr(&o.attrs)));
            success_header(xid, e);
            encode_ok_head(e, attrs, region.len, eof);
            Dispatched::DoneWithFile { label: LABEL, tail: region }
        }
        Ok(_) => finish(read(ctx, a), e),
        Err(err) => finish(READ3res::default(stat(err), READ3resfail { file_attributes: Some(fattr(&o.attrs)) }), e),
    }
}

/// READ3res with NFS3_OK up to and including the data's length: what
/// `READ3res::encode` writes before the data bytes themselves.
fn encode_ok_head(e: &mut Encoder, attrs: proto::nfs3::post_op_attr, count: u32, eof: bool) {
    nfsstat3::NFS3_OK.encode(e);
    attrs.encode(e);
    e.u32(count);
    e.bool(eof);
    e.u32(count);
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    /// The head written for a file region, followed by the bytes and the
    /// padding the transport adds, is exactly the ordinary encoding.
    #[test]
    fn sendfile_head_matches_the_ordinary_encoding() {
        for len in [0usize, 1, 3, 4, 5, 4096, 65537] {
            let data = Bytes::from((0..len).map(|i| i as u8).collect::<Vec<u8>>());
            let attrs = None;
            let mut whole = Encoder::new();
            READ3res::NFS3_OK(READ3resok {
                file_attributes: attrs.clone(),
                count: len as u32,
                eof: true,
                data: data.clone(),
            })
            .encode(&mut whole);
            let mut head = Encoder::new();
            encode_ok_head(&mut head, attrs, len as u32, true);
            let mut spliced = head.into_bytes().to_vec();
            spliced.extend_from_slice(&data);
            spliced.resize(spliced.len() + (4 - len % 4) % 4, 0);
            assert_eq!(spliced, whole.into_bytes().to_vec(), "len {len}");
        }
    }
}
