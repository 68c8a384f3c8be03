//! An RPC record (RFC 5531) as the transport hands it over, its header
//! read once: the transport asks where to run it ([`crate::Placement`]),
//! whether it may run in place, which writes it must follow, and then
//! runs it, all from the one [`Record`] made by [`Core::parse`]. Each of
//! those questions used to read the header again from the raw bytes.
//!
//! Parsing checks nothing the header does not say itself: the credential
//! is kept as sent, to be judged by the dispatch, which answers every
//! kind of malformed header (see [`Head`]).

use std::sync::atomic::Ordering;

use bytes::Bytes;
use xdr::Decoder;

use crate::rpc::RPC_VERSION;
use crate::Core;

/// RFC 5531 bounds every opaque_auth body at 400 bytes.
pub(crate) const MAX_AUTH_BYTES: usize = 400;

/// What the record's header says.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Head {
    /// Too short for an xid and a message type.
    Short,
    /// A reply (to one of our callbacks); its body starts at `at`.
    Reply {
        xid: u32,
        at: usize,
    },
    /// Neither a call nor a reply.
    Other {
        xid: u32,
        mtype: u32,
    },
    /// A call of another RPC version, whose header layout we do not know.
    Mismatch {
        xid: u32,
        rpcvers: u32,
    },
    /// A call whose header is cut short or has an oversized credential.
    Garbled {
        xid: u32,
    },
    Call(CallHead),
}

/// The header of an RPC version 2 call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallHead {
    pub xid: u32,
    pub prog: u32,
    pub vers: u32,
    pub proc_: u32,
    pub cred_flavor: u32,
    /// The credential's body: `record[cred.0..cred.1]`.
    pub cred: (usize, usize),
    /// The verifier's flavor and body (`record[verf.0..verf.1]`).
    pub verf_flavor: u32,
    pub verf: (usize, usize),
    /// Where the procedure's arguments start.
    pub args_at: usize,
}

/// One RPC record (without record marking) and its header.
#[derive(Debug, Clone)]
pub struct Record {
    bytes: Bytes,
    pub(crate) head: Head,
}

impl Record {
    /// The record as received.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The call's header, if the record is a well-formed call.
    pub(crate) fn call(&self) -> Option<&CallHead> {
        match &self.head {
            Head::Call(c) => Some(c),
            _ => None,
        }
    }

    /// The call's arguments, for a look without decoding them.
    pub(crate) fn args(&self) -> &[u8] {
        let at = self.call().map_or(self.bytes.len(), |c| c.args_at);
        self.bytes.get(at..).unwrap_or_default()
    }

    /// A decoder over the bytes from `at` on (the arguments of a call, the
    /// body of a reply).
    pub(crate) fn decoder_at(&self, at: usize) -> Decoder {
        Decoder::new(self.bytes.slice(at.min(self.bytes.len())..))
    }

    pub(crate) fn cred(&self, c: &CallHead) -> Bytes {
        self.bytes.slice(c.cred.0..c.cred.1)
    }

    pub(crate) fn verf(&self, c: &CallHead) -> Bytes {
        self.bytes.slice(c.verf.0..c.verf.1)
    }

    /// The header from the xid through the credential (its padding
    /// included): what an RPCSEC_GSS verifier checksums (RFC 2203
    /// section 5.3.1).
    pub(crate) fn header_through_cred(&self, c: &CallHead) -> &[u8] {
        let end = c.cred.1.next_multiple_of(4).min(self.bytes.len());
        &self.bytes[..end]
    }
}

/// A forward reader over a record's bytes, keeping its position.
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn u32(&mut self) -> Option<u32> {
        let v = self.b.get(self.at..self.at + 4)?;
        self.at += 4;
        Some(u32::from_be_bytes(v.try_into().ok()?))
    }

    /// An opaque_auth body of at most [`MAX_AUTH_BYTES`]: its range.
    fn auth_body(&mut self) -> Option<(usize, usize)> {
        let len = self.u32()? as usize;
        if len > MAX_AUTH_BYTES {
            return None;
        }
        let start = self.at;
        let padded = (len + 3) & !3;
        self.b.get(start..start + padded)?;
        self.at = start + padded;
        Some((start, start + len))
    }
}

fn head_of(b: &[u8]) -> Head {
    let mut c = Cursor { b, at: 0 };
    let (Some(xid), Some(mtype)) = (c.u32(), c.u32()) else { return Head::Short };
    match mtype {
        0 => {}
        1 => return Head::Reply { xid, at: c.at },
        _ => return Head::Other { xid, mtype },
    }
    let Some(rpcvers) = c.u32() else { return Head::Garbled { xid } };
    if rpcvers != RPC_VERSION {
        return Head::Mismatch { xid, rpcvers };
    }
    let call = (|| {
        let (prog, vers, proc_) = (c.u32()?, c.u32()?, c.u32()?);
        let cred_flavor = c.u32()?;
        let cred = c.auth_body()?;
        let verf_flavor = c.u32()?;
        let verf = c.auth_body()?;
        Some(CallHead { xid, prog, vers, proc_, cred_flavor, cred, verf_flavor, verf, args_at: c.at })
    })();
    call.map_or(Head::Garbled { xid }, Head::Call)
}

impl Core {
    /// Reads `bytes`' RPC header, once for everything that follows.
    pub fn parse(&self, bytes: Bytes) -> Record {
        self.records_parsed.fetch_add(1, Ordering::Relaxed);
        let head = head_of(&bytes);
        Record { bytes, head }
    }

    /// How many records [`Core::parse`] has read: one per record received,
    /// which a test holds the transport to.
    pub fn records_parsed(&self) -> u64 {
        self.records_parsed.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(cred_len: u32, extra: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        for w in [7u32, 0, 2, 100003, 3, 1, 1, cred_len] {
            v.extend_from_slice(&w.to_be_bytes());
        }
        v.extend(std::iter::repeat_n(0xAB, ((cred_len + 3) & !3) as usize));
        v.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0]);
        v.extend_from_slice(extra);
        v
    }

    #[test]
    fn a_call_header_and_where_its_arguments_start() {
        let b = call(5, b"ARGS");
        let Head::Call(c) = head_of(&b) else { panic!() };
        assert_eq!((c.xid, c.prog, c.vers, c.proc_, c.cred_flavor), (7, 100003, 3, 1, 1));
        assert_eq!(c.cred, (32, 37));
        assert_eq!(&b[c.args_at..], b"ARGS");
    }

    #[test]
    fn malformed_headers() {
        assert!(matches!(head_of(&[0, 0, 0]), Head::Short));
        assert!(matches!(head_of(&[0, 0, 0, 9, 0, 0, 0, 1, 1]), Head::Reply { xid: 9, at: 8 }));
        assert!(matches!(head_of(&[0, 0, 0, 9, 0, 0, 0, 5]), Head::Other { xid: 9, mtype: 5 }));
        assert!(matches!(head_of(&[0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 3]), Head::Mismatch { xid: 9, rpcvers: 3 }));
        assert!(matches!(head_of(&[0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 2, 0]), Head::Garbled { xid: 9 }));
        // A credential over 400 bytes, or cut short.
        assert!(matches!(head_of(&call(401, &[0; 404])), Head::Garbled { xid: 7 }));
        let mut cut = call(8, b"");
        cut.truncate(36);
        assert!(matches!(head_of(&cut), Head::Garbled { xid: 7 }));
    }
}
