//! A stand-in GSS mechanism for tests of the protocol logic: deterministic,
//! no KDC, and as strict as a real one about keys and tampering. Its
//! "checksum" is a keyed FNV hash and its "encryption" a keyed XOR with a
//! checksum; it protects nothing and is never built into a release.

use std::time::Duration;

use bytes::Bytes;

use crate::{
    major, AcceptStep, Accepting, Acceptor, Established, GssError, InitStep, Initiating, Initiator, SecContext,
};

/// One side of a context whose key is `key`.
#[derive(Debug, Clone)]
pub struct FakeContext {
    key: u64,
}

impl FakeContext {
    /// Both ends of one context.
    pub fn pair(key: u64) -> (FakeContext, FakeContext) {
        (FakeContext { key }, FakeContext { key })
    }

    fn sum(&self, msg: &[u8]) -> [u8; 8] {
        let mut h: u64 = 0xcbf29ce484222325 ^ self.key;
        for &b in msg {
            h = (h ^ b as u64).wrapping_mul(0x100000001b3);
        }
        h.to_be_bytes()
    }

    fn xor(&self, msg: &[u8]) -> Vec<u8> {
        let k = self.key.to_be_bytes();
        msg.iter().enumerate().map(|(i, b)| b ^ k[i % 8]).collect()
    }
}

fn bad(what: &str) -> GssError {
    GssError::new(major::GSS_S_BAD_SIG, 0, what)
}

impl SecContext for FakeContext {
    fn get_mic(&mut self, msg: &[u8]) -> Result<Vec<u8>, GssError> {
        Ok(self.sum(msg).to_vec())
    }

    fn verify_mic(&mut self, msg: &[u8], mic: &[u8]) -> Result<(), GssError> {
        (self.sum(msg) == mic).then_some(()).ok_or_else(|| bad("checksum mismatch"))
    }

    fn wrap(&mut self, msg: &[u8]) -> Result<Bytes, GssError> {
        let mut out = self.xor(msg);
        out.extend_from_slice(&self.sum(msg));
        Ok(Bytes::from(out))
    }

    fn unwrap(&mut self, token: &[u8]) -> Result<Bytes, GssError> {
        let split = token.len().checked_sub(8).ok_or_else(|| bad("token too short"))?;
        let plain = self.xor(&token[..split]);
        (self.sum(&plain) == token[split..]).then(|| Bytes::from(plain)).ok_or_else(|| bad("does not decrypt"))
    }
}

/// A realm in a box: tokens are `principal\0key`, accepted once in one
/// step, with the lifetime given.
#[derive(Debug, Clone)]
pub struct FakeMech {
    pub lifetime: Duration,
}

impl Acceptor for FakeMech {
    fn start(&self) -> Box<dyn Accepting> {
        Box::new(self.clone())
    }
}

impl Accepting for FakeMech {
    fn step(self: Box<Self>, token: &[u8]) -> Result<AcceptStep, GssError> {
        let garbage = || GssError::new(major::GSS_S_DEFECTIVE_TOKEN, 0, "not a fake token");
        let at = token.iter().position(|&b| b == 0).ok_or_else(garbage)?;
        let principal = std::str::from_utf8(&token[..at]).map_err(|_| garbage())?.to_string();
        let key = std::str::from_utf8(&token[at + 1..]).ok().and_then(|k| k.parse().ok()).ok_or_else(garbage)?;
        Ok(AcceptStep::Complete(Established {
            ctx: Box::new(FakeContext { key }),
            token: b"ok".to_vec(),
            principal,
            lifetime: self.lifetime,
        }))
    }
}

/// The client side of [`FakeMech`] for `principal`, with context keys
/// counting up from `key`.
#[derive(Debug)]
pub struct FakeInitiator {
    pub principal: String,
    pub key: std::sync::atomic::AtomicU64,
    pub lifetime: Duration,
}

struct FakeInit {
    token: Vec<u8>,
    key: u64,
    lifetime: Duration,
}

impl FakeInitiator {
    /// The token [`FakeMech`] accepts as `principal` with `key`.
    pub fn token(principal: &str, key: u64) -> Vec<u8> {
        format!("{principal}\0{key}").into_bytes()
    }
}

impl Initiator for FakeInitiator {
    fn start(&self, _target: &str) -> Result<Box<dyn Initiating>, GssError> {
        let key = self.key.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(Box::new(FakeInit { token: FakeInitiator::token(&self.principal, key), key, lifetime: self.lifetime }))
    }
}

impl Initiating for FakeInit {
    fn step(self: Box<Self>, token: Option<&[u8]>) -> Result<InitStep, GssError> {
        match token {
            None => {
                let token = self.token.clone();
                Ok(InitStep::Continue { next: self, token })
            }
            Some(_) => Ok(InitStep::Complete {
                ctx: Box::new(FakeContext { key: self.key }),
                token: Vec::new(),
                lifetime: self.lifetime,
            }),
        }
    }
}
