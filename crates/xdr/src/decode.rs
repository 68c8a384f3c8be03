use bytes::{Buf, Bytes};

use crate::{pad_len, Result, XdrError};

/// Types that can be read from XDR.
pub trait Decode: Sized {
    fn decode(d: &mut Decoder) -> Result<Self>;
}

/// A cursor over one received record.
#[derive(Debug, Clone)]
pub struct Decoder {
    buf: Bytes,
}

/// Smallest encoding of any array element; used to cap pre-allocation so that
/// a forged element count cannot reserve more than the record could hold.
const MIN_ELEMENT_BYTES: usize = 4;

/// At most this many bytes are reserved up front for an array whatever its
/// declared count; a real array larger than this grows as it is decoded.
/// (A forged count could otherwise reserve count * size_of::<T>() bytes,
/// far more than the record it came in.)
const MAX_PREALLOC_BYTES: usize = 64 << 10;

fn prealloc<T>(count: usize, remaining: usize) -> usize {
    let by_bytes = MAX_PREALLOC_BYTES / std::mem::size_of::<T>().max(1);
    count.min(remaining / MIN_ELEMENT_BYTES).min(by_bytes)
}

impl Decoder {
    pub fn new(buf: Bytes) -> Self {
        Decoder { buf }
    }

    pub fn remaining(&self) -> usize {
        self.buf.len()
    }

    /// Everything not yet read, without copying (e.g. procedure arguments
    /// that follow the RPC call header).
    pub fn rest(&mut self) -> Bytes {
        std::mem::take(&mut self.buf)
    }

    fn need(&self, n: usize) -> Result<()> {
        if self.buf.len() < n {
            Err(XdrError::Truncated { need: n, have: self.buf.len() })
        } else {
            Ok(())
        }
    }

    pub fn u32(&mut self) -> Result<u32> {
        self.need(4)?;
        Ok(self.buf.get_u32())
    }

    pub fn i32(&mut self) -> Result<i32> {
        self.need(4)?;
        Ok(self.buf.get_i32())
    }

    pub fn u64(&mut self) -> Result<u64> {
        self.need(8)?;
        Ok(self.buf.get_u64())
    }

    pub fn i64(&mut self) -> Result<i64> {
        self.need(8)?;
        Ok(self.buf.get_i64())
    }

    pub fn f32(&mut self) -> Result<f32> {
        self.need(4)?;
        Ok(self.buf.get_f32())
    }

    pub fn f64(&mut self) -> Result<f64> {
        self.need(8)?;
        Ok(self.buf.get_f64())
    }

    pub fn bool(&mut self) -> Result<bool> {
        match self.u32()? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(XdrError::BadBool(v)),
        }
    }

    fn skip_pad(&mut self, len: usize) -> Result<()> {
        let pad = pad_len(len);
        self.need(pad)?;
        self.buf.advance(pad);
        Ok(())
    }

    /// `opaque x[N]`.
    pub fn opaque_fixed<const N: usize>(&mut self) -> Result<[u8; N]> {
        self.need(N)?;
        let mut out = [0u8; N];
        self.buf.copy_to_slice(&mut out);
        self.skip_pad(N)?;
        Ok(out)
    }

    /// `opaque x<max>` or `string x<max>`: a zero-copy slice of the record.
    pub fn opaque_var(&mut self, max: u32) -> Result<Bytes> {
        let len = self.u32()?;
        if len > max {
            return Err(XdrError::TooLong { len: len.into(), max: max.into() });
        }
        let len = len as usize;
        self.need(len)?;
        let out = self.buf.split_to(len);
        self.skip_pad(len)?;
        Ok(out)
    }

    /// Length prefix of a variable-length array, checked against its bound
    /// and against what the record can still hold.
    fn array_len(&mut self, max: u32) -> Result<usize> {
        let len = self.u32()?;
        if len > max {
            return Err(XdrError::TooLong { len: len.into(), max: max.into() });
        }
        Ok(len as usize)
    }

    /// `T x<max>`.
    pub fn array_var<T: Decode>(&mut self, max: u32) -> Result<Vec<T>> {
        let len = self.array_len(max)?;
        let mut out = Vec::with_capacity(prealloc::<T>(len, self.remaining()));
        for _ in 0..len {
            out.push(T::decode(self)?);
        }
        Ok(out)
    }

    /// `T x[N]` for element types other than opaque.
    pub fn array_fixed<T: Decode, const N: usize>(&mut self) -> Result<[T; N]> {
        let mut out = Vec::with_capacity(prealloc::<T>(N, self.remaining()));
        for _ in 0..N {
            out.push(T::decode(self)?);
        }
        out.try_into().map_err(|_| XdrError::Invalid("fixed array length"))
    }

    /// `T *x`.
    pub fn optional<T: Decode>(&mut self) -> Result<Option<T>> {
        if self.bool()? {
            Ok(Some(T::decode(self)?))
        } else {
            Ok(None)
        }
    }

    /// A linked list written the XDR way (`struct T { ...; T *next; }`):
    /// each element preceded by TRUE, the end marked by FALSE.  Decoded
    /// iteratively so a long list cannot exhaust the stack; every element
    /// costs at least four bytes of input, so the record bounds its length.
    pub fn list<T: Decode>(&mut self) -> Result<Vec<T>> {
        let mut out = Vec::new();
        while self.bool()? {
            out.push(T::decode(self)?);
        }
        Ok(out)
    }
}

impl Decode for u32 {
    fn decode(d: &mut Decoder) -> Result<Self> {
        d.u32()
    }
}
impl Decode for i32 {
    fn decode(d: &mut Decoder) -> Result<Self> {
        d.i32()
    }
}
impl Decode for u64 {
    fn decode(d: &mut Decoder) -> Result<Self> {
        d.u64()
    }
}
impl Decode for i64 {
    fn decode(d: &mut Decoder) -> Result<Self> {
        d.i64()
    }
}
impl Decode for f32 {
    fn decode(d: &mut Decoder) -> Result<Self> {
        d.f32()
    }
}
impl Decode for f64 {
    fn decode(d: &mut Decoder) -> Result<Self> {
        d.f64()
    }
}
impl Decode for bool {
    fn decode(d: &mut Decoder) -> Result<Self> {
        d.bool()
    }
}
impl Decode for () {
    fn decode(_: &mut Decoder) -> Result<Self> {
        Ok(())
    }
}
/// Unbounded `opaque<>`: still limited by the bytes the record holds.
impl Decode for Bytes {
    fn decode(d: &mut Decoder) -> Result<Self> {
        d.opaque_var(u32::MAX)
    }
}
impl<const N: usize> Decode for [u8; N] {
    fn decode(d: &mut Decoder) -> Result<Self> {
        d.opaque_fixed::<N>()
    }
}
impl<T: Decode> Decode for Vec<T> {
    fn decode(d: &mut Decoder) -> Result<Self> {
        d.array_var(u32::MAX)
    }
}
impl<T: Decode> Decode for Option<T> {
    fn decode(d: &mut Decoder) -> Result<Self> {
        d.optional()
    }
}
impl<T: Decode> Decode for Box<T> {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Box::new(T::decode(d)?))
    }
}
