//! XDR (RFC 4506) primitives.
//!
//! Decoding reads from a [`Bytes`] record so that variable-length opaques
//! (READ/WRITE payloads, names) are zero-copy slices of the received buffer.
//! Every length read from the wire is checked against both the declared
//! bound and the bytes actually left, so a forged length can neither
//! allocate more memory than the record holds nor read past it.
//!
//! Encoding produces a list of segments: small items are packed into one
//! growing buffer, while large opaques handed over as [`Bytes`] are kept as
//! their own segment so a READ reply can go to the socket with a vectored
//! write instead of another copy.
#![forbid(unsafe_code)]

mod decode;
mod encode;

pub use decode::{Decode, Decoder};
pub use encode::{Encode, Encoder, ZERO_COPY_MIN};

pub use bytes::{Bytes, BytesMut};

/// Why a byte sequence is not a valid encoding of the expected type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum XdrError {
    #[error("truncated: needed {need} more bytes, {have} left")]
    Truncated { need: usize, have: usize },
    #[error("length {len} exceeds the bound {max}")]
    TooLong { len: u64, max: u64 },
    #[error("value {value} is not a member of enum {name}")]
    BadEnum { name: &'static str, value: i32 },
    #[error("value {0} is not a boolean")]
    BadBool(u32),
    #[error("discriminant {value} has no arm in union {name}")]
    BadDiscriminant { name: &'static str, value: i64 },
    #[error("{0}")]
    Invalid(&'static str),
}

pub type Result<T> = std::result::Result<T, XdrError>;

/// Bytes needed to pad `len` to the 4-byte XDR unit.
#[inline]
pub const fn pad_len(len: usize) -> usize {
    (4 - (len & 3)) & 3
}

/// Encode a value into one contiguous buffer (tests, small messages).
pub fn to_bytes<T: Encode + ?Sized>(value: &T) -> Bytes {
    let mut e = Encoder::new();
    value.encode(&mut e);
    e.into_bytes()
}

/// Encode a value as segments for a vectored write: large opaques (a
/// WRITE's data) stay the buffers they were given, not copied.
pub fn to_segments<T: Encode + ?Sized>(value: &T) -> Vec<Bytes> {
    let mut e = Encoder::new();
    value.encode(&mut e);
    e.into_segments()
}

/// Decode a value that must span the whole of `buf`.
pub fn from_bytes<T: Decode>(buf: Bytes) -> Result<T> {
    let mut d = Decoder::new(buf);
    let v = T::decode(&mut d)?;
    if d.remaining() != 0 {
        return Err(XdrError::Invalid("trailing bytes after value"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests;
