use bytes::{BufMut, Bytes, BytesMut};

use crate::pad_len;

/// Types that can be written as XDR.
pub trait Encode {
    fn encode(&self, e: &mut Encoder);
}

/// Opaques at least this long, when given as [`Bytes`], are kept as their
/// own segment instead of being copied into the header buffer. Below it a
/// copy is cheaper than an extra iovec.
pub const ZERO_COPY_MIN: usize = 1024;

const ZEROS: [u8; 4] = [0; 4];

/// Builds one message as a sequence of segments.
#[derive(Debug, Default)]
pub struct Encoder {
    buf: BytesMut,
    segments: Vec<Bytes>,
    len: usize,
}

impl Encoder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_capacity(cap: usize) -> Self {
        Encoder { buf: BytesMut::with_capacity(cap), segments: Vec::new(), len: 0 }
    }

    /// Bytes encoded so far.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn put(&mut self, b: &[u8]) {
        self.buf.put_slice(b);
        self.len += b.len();
    }

    pub fn u32(&mut self, v: u32) {
        self.put(&v.to_be_bytes());
    }
    pub fn i32(&mut self, v: i32) {
        self.put(&v.to_be_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.put(&v.to_be_bytes());
    }
    pub fn i64(&mut self, v: i64) {
        self.put(&v.to_be_bytes());
    }
    pub fn f32(&mut self, v: f32) {
        self.put(&v.to_be_bytes());
    }
    pub fn f64(&mut self, v: f64) {
        self.put(&v.to_be_bytes());
    }
    pub fn bool(&mut self, v: bool) {
        self.u32(v as u32);
    }

    fn pad(&mut self, len: usize) {
        self.put(&ZEROS[..pad_len(len)]);
    }

    /// `opaque x[N]`.
    pub fn opaque_fixed(&mut self, b: &[u8]) {
        self.put(b);
        self.pad(b.len());
    }

    /// `opaque x<>` / `string x<>` from a borrowed slice (always copied).
    pub fn opaque_var(&mut self, b: &[u8]) {
        self.u32(len_u32(b.len()));
        self.opaque_fixed(b);
    }

    /// `opaque x<>` from owned bytes: large payloads are not copied.
    pub fn opaque_bytes(&mut self, b: &Bytes) {
        if b.len() < ZERO_COPY_MIN {
            return self.opaque_var(b);
        }
        self.u32(len_u32(b.len()));
        self.flush_buf();
        self.segments.push(b.clone());
        self.len += b.len();
        self.pad(b.len());
    }

    fn flush_buf(&mut self) {
        if !self.buf.is_empty() {
            self.segments.push(self.buf.split().freeze());
        }
    }

    pub fn array_var<T: Encode>(&mut self, items: &[T]) {
        self.u32(len_u32(items.len()));
        for i in items {
            i.encode(self);
        }
    }

    pub fn array_fixed<T: Encode>(&mut self, items: &[T]) {
        for i in items {
            i.encode(self);
        }
    }

    pub fn optional<T: Encode>(&mut self, v: Option<&T>) {
        match v {
            Some(v) => {
                self.bool(true);
                v.encode(self);
            }
            None => self.bool(false),
        }
    }

    /// The XDR linked-list form of a sequence (see [`crate::Decoder::list`]).
    pub fn list<T: Encode>(&mut self, items: &[T]) {
        for i in items {
            self.bool(true);
            i.encode(self);
        }
        self.bool(false);
    }

    /// Appends already-encoded XDR (segments of another message) as is.
    pub fn append_segments(&mut self, segs: Vec<Bytes>) {
        self.flush_buf();
        for s in segs {
            self.len += s.len();
            self.segments.push(s);
        }
    }

    /// The message as segments, in order, ready for a vectored write.
    pub fn into_segments(mut self) -> Vec<Bytes> {
        self.flush_buf();
        self.segments
    }

    /// The message as one buffer (copies when it has several segments).
    pub fn into_bytes(self) -> Bytes {
        // One buffer and nothing appended: no list of segments to build.
        if self.segments.is_empty() {
            return self.buf.freeze();
        }
        let total = self.len;
        let mut segs = self.into_segments();
        match segs.len() {
            0 => Bytes::new(),
            1 => segs.pop().unwrap_or_default(),
            _ => {
                let mut out = BytesMut::with_capacity(total);
                for s in segs {
                    out.put_slice(&s);
                }
                out.freeze()
            }
        }
    }
}

/// XDR lengths are 32-bit. Every producer of encoded data in this project
/// is bounded far below 4 GiB (record size limits), so exceeding it is a
/// programming error; saturating keeps the encoder total rather than
/// panicking, and the peer then rejects the message.
fn len_u32(len: usize) -> u32 {
    u32::try_from(len).unwrap_or(u32::MAX)
}

impl Encode for u32 {
    fn encode(&self, e: &mut Encoder) {
        e.u32(*self)
    }
}
impl Encode for i32 {
    fn encode(&self, e: &mut Encoder) {
        e.i32(*self)
    }
}
impl Encode for u64 {
    fn encode(&self, e: &mut Encoder) {
        e.u64(*self)
    }
}
impl Encode for i64 {
    fn encode(&self, e: &mut Encoder) {
        e.i64(*self)
    }
}
impl Encode for f32 {
    fn encode(&self, e: &mut Encoder) {
        e.f32(*self)
    }
}
impl Encode for f64 {
    fn encode(&self, e: &mut Encoder) {
        e.f64(*self)
    }
}
impl Encode for bool {
    fn encode(&self, e: &mut Encoder) {
        e.bool(*self)
    }
}
impl Encode for () {
    fn encode(&self, _: &mut Encoder) {}
}
impl Encode for Bytes {
    fn encode(&self, e: &mut Encoder) {
        e.opaque_bytes(self)
    }
}
impl<const N: usize> Encode for [u8; N] {
    fn encode(&self, e: &mut Encoder) {
        e.opaque_fixed(self)
    }
}
impl<T: Encode> Encode for Vec<T> {
    fn encode(&self, e: &mut Encoder) {
        e.array_var(self)
    }
}
impl<T: Encode> Encode for Option<T> {
    fn encode(&self, e: &mut Encoder) {
        e.optional(self.as_ref())
    }
}
impl<T: Encode + ?Sized> Encode for Box<T> {
    fn encode(&self, e: &mut Encoder) {
        (**self).encode(e)
    }
}
impl<T: Encode + ?Sized> Encode for &T {
    fn encode(&self, e: &mut Encoder) {
        (**self).encode(e)
    }
}
