//! File handles.
//!
//! A handle is 40 opaque bytes:
//!
//! ```text
//! 0      1        4          8          16           24          40
//! | ver  | 0 0 0  | export id | file id  | generation | tag (16)  |
//! ```
//!
//! all integers big-endian; `tag` is HMAC-SHA256 over bytes 0..24 keyed
//! with the server's handle secret, truncated to 16 bytes. The same object
//! always gets the same handle (across restarts with the same secret), and
//! a client can neither forge a handle for an id it was never given nor
//! walk to an object outside its export by editing one: the tag fails, and
//! the ids inside are only ever resolved by the export's own backend.
//!
//! Decoding checks only the form (length, version, zero padding, tag) and
//! yields NFS3ERR_BADHANDLE on failure; whether the object still exists
//! (STALE) is decided by the caller with the backend.

use hmac::digest::KeyInit;
use hmac::{Hmac, Mac};
use sha2::Sha256;

pub const FH_VERSION: u8 = 1;
pub const FH_LEN: usize = 40;
const BODY_LEN: usize = 24;
const TAG_LEN: usize = FH_LEN - BODY_LEN;

/// A file handle as an NFSv4 compound holds it (and NFSv4.0 keeps it for
/// replaying an OPEN): decoded and verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fh {
    /// A directory of the pseudo file system (index into its nodes).
    Pseudo(u32),
    Obj {
        export_id: u32,
        id: vfs::FileId,
        generation: u64,
    },
}

/// What a handle names: an object of one export.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HandleData {
    pub export_id: u32,
    pub fileid: u64,
    pub generation: u64,
}

/// The handle has the wrong size, version or tag (NFS3ERR_BADHANDLE).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("malformed or forged file handle")]
pub struct BadHandle;

/// Builds and checks handles with one secret.
#[derive(Clone)]
pub struct FhCodec {
    mac: Hmac<Sha256>,
}

impl std::fmt::Debug for FhCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FhCodec { .. }")
    }
}

impl FhCodec {
    pub fn new(secret: [u8; 32]) -> FhCodec {
        // An HMAC key shorter than the hash block is zero-padded to the
        // block size, so the 64-byte padded key is the same key; using the
        // fixed-size constructor avoids a fallible call.
        let mut key = [0u8; 64];
        key[..32].copy_from_slice(&secret);
        FhCodec { mac: <Hmac<Sha256> as KeyInit>::new(&key.into()) }
    }

    fn tag(&self, domain: u8, body: &[u8]) -> [u8; 32] {
        let mut m = self.mac.clone();
        m.update(&[domain]);
        m.update(body);
        m.finalize().into_bytes().into()
    }

    pub fn encode(&self, h: &HandleData) -> [u8; FH_LEN] {
        let mut out = [0u8; FH_LEN];
        out[0] = FH_VERSION;
        out[4..8].copy_from_slice(&h.export_id.to_be_bytes());
        out[8..16].copy_from_slice(&h.fileid.to_be_bytes());
        out[16..24].copy_from_slice(&h.generation.to_be_bytes());
        let tag = self.tag(b'H', &out[..BODY_LEN]);
        out[BODY_LEN..].copy_from_slice(&tag[..TAG_LEN]);
        out
    }

    pub fn decode(&self, fh: &[u8]) -> Result<HandleData, BadHandle> {
        if fh.len() != FH_LEN || fh[0] != FH_VERSION || fh[1..4] != [0, 0, 0] {
            return Err(BadHandle);
        }
        let tag = self.tag(b'H', &fh[..BODY_LEN]);
        if !constant_time_eq(&tag[..TAG_LEN], &fh[BODY_LEN..]) {
            return Err(BadHandle);
        }
        let be64 = |r: std::ops::Range<usize>| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&fh[r]);
            u64::from_be_bytes(b)
        };
        let mut id = [0u8; 4];
        id.copy_from_slice(&fh[4..8]);
        Ok(HandleData { export_id: u32::from_be_bytes(id), fileid: be64(8..16), generation: be64(16..24) })
    }

    /// READDIR cookie verifier for a directory: fixed for the directory's
    /// lifetime (the backend's cookies stay valid that long) and different
    /// for a later directory that reuses the id. Never all zeroes, so a
    /// client that never saw a reply cannot present it by accident.
    pub fn cookieverf(&self, h: &HandleData) -> [u8; 8] {
        let mut body = [0u8; 20];
        body[..4].copy_from_slice(&h.export_id.to_be_bytes());
        body[4..12].copy_from_slice(&h.fileid.to_be_bytes());
        body[12..20].copy_from_slice(&h.generation.to_be_bytes());
        let tag = self.tag(b'C', &body);
        let mut out = [0u8; 8];
        out.copy_from_slice(&tag[..8]);
        if out == [0u8; 8] {
            out[7] = 1;
        }
        out
    }
}

/// The export and file ids a handle claims, without checking its tag:
/// only for deciding where to run a request, never for acting on it.
pub fn peek(fh: &[u8]) -> Option<(u32, u64)> {
    if fh.len() != FH_LEN || fh[0] != FH_VERSION {
        return None;
    }
    let export = u32::from_be_bytes(fh[4..8].try_into().ok()?);
    let file = u64::from_be_bytes(fh[8..16].try_into().ok()?);
    Some((export, file))
}

/// Comparison whose time does not depend on where the inputs differ, so
/// response timing does not help to guess a tag byte by byte.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: HandleData = HandleData { export_id: 7, fileid: 0x0102_0304_0506_0708, generation: 42 };

    #[test]
    fn round_trip_and_deterministic() {
        let c = FhCodec::new([9; 32]);
        let fh = c.encode(&H);
        assert_eq!(fh.len(), FH_LEN);
        const { assert!(FH_LEN <= 64) };
        assert_eq!(c.decode(&fh), Ok(H));
        assert_eq!(FhCodec::new([9; 32]).encode(&H), fh, "same secret, same handle");
        assert_ne!(FhCodec::new([8; 32]).encode(&H), fh);
        assert_eq!(FhCodec::new([8; 32]).decode(&fh), Err(BadHandle));
    }

    #[test]
    fn any_flipped_bit_is_rejected() {
        let c = FhCodec::new([1; 32]);
        let fh = c.encode(&H);
        for i in 0..FH_LEN {
            for bit in 0..8 {
                let mut f = fh;
                f[i] ^= 1 << bit;
                assert_eq!(c.decode(&f), Err(BadHandle), "byte {i} bit {bit}");
            }
        }
        assert_eq!(c.decode(&fh[..39]), Err(BadHandle));
        assert_eq!(c.decode(&[]), Err(BadHandle));
        let mut long = fh.to_vec();
        long.push(0);
        assert_eq!(c.decode(&long), Err(BadHandle));
    }

    #[test]
    fn cookieverf_depends_on_generation() {
        let c = FhCodec::new([1; 32]);
        let a = c.cookieverf(&H);
        assert_eq!(a, c.cookieverf(&H));
        assert_ne!(a, c.cookieverf(&HandleData { generation: 43, ..H }));
        assert_ne!(a, [0; 8]);
    }
}
