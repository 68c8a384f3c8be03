//! RFC 5531 section 11 record marking, without I/O.
//!
//! On a stream transport every RPC message is a record sent as one or more
//! fragments, each preceded by a 4-byte header: the high bit marks the last
//! fragment, the low 31 bits give the fragment's length.

use bytes::{Buf, BufMut, Bytes, BytesMut};

/// The largest fragment a header can describe.
pub const MAX_FRAGMENT: usize = 0x7fff_ffff;

const LAST: u32 = 0x8000_0000;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// The fragments of one record add up to more than the limit; the
    /// connection cannot be resynchronised and should be closed.
    #[error("record of at least {size} bytes exceeds the limit of {max}")]
    RecordTooLarge { size: usize, max: usize },
}

/// Reassembles records from stream data.
///
/// Data is appended with [`push`](Self::push), or read straight into
/// [`buffer_mut`](Self::buffer_mut) to avoid even that copy. A record made
/// of one fragment is returned as a slice of the receive buffer (no copy),
/// unless it is shorter than [`copy_records_below`](Self::copy_records_below);
/// a record of several fragments is copied once, when complete.
#[derive(Debug)]
pub struct RecordDecoder {
    max_record: usize,
    /// Received bytes not yet consumed.
    buf: BytesMut,
    /// Header of the fragment being received: (length, last).
    current: Option<(usize, bool)>,
    /// Earlier fragments of the record being assembled (never empty ones).
    parts: Vec<Bytes>,
    /// Sum of `parts` lengths.
    assembled: usize,
    /// Single-fragment records shorter than this are copied out.
    copy_below: usize,
    /// Reserve for the next record what the last one took, when it was
    /// handed over as a slice (see [`expect_like_the_last`](Self::expect_like_the_last)).
    expect_like_last: bool,
    /// Length of the last fragment handed over as a slice, with its header.
    last_sliced: usize,
}

impl RecordDecoder {
    pub fn new(max_record: usize) -> Self {
        RecordDecoder {
            max_record,
            buf: BytesMut::new(),
            current: None,
            parts: Vec::new(),
            assembled: 0,
            copy_below: 0,
            expect_like_last: false,
            last_sliced: 0,
        }
    }

    /// Between records, [`reserve_for_read`](Self::reserve_for_read) makes
    /// room for a whole record as long as the last one handed over as a
    /// slice, so a stream of equal large records (1 MiB READ replies) is
    /// read straight into buffers of the right size and never moved. For
    /// a client, whose few connections carry such streams; a server with
    /// thousands of connections would hold that much per idle one.
    pub fn expect_like_the_last(mut self, on: bool) -> Self {
        self.expect_like_last = on;
        self
    }

    /// Makes room in [`buffer_mut`](Self::buffer_mut) for the next read.
    ///
    /// Inside a fragment nothing is added to the room that
    /// [`next_record`](Self::next_record) made for its rest, so a read
    /// ends at the fragment's end. Room for more would let the read run
    /// on into the next record, and making room for that record's
    /// fragment would then move its first part; worse, growing a buffer
    /// that still lacks part of a large fragment moves everything
    /// received of it so far (up to a whole 1 MiB record, copied again
    /// for each such read). Between records, at least `min_spare` bytes.
    pub fn reserve_for_read(&mut self, min_spare: usize) {
        if let Some((len, _)) = self.current {
            if self.buf.len() < len {
                return;
            }
        }
        let want = if self.expect_like_last && self.current.is_none() {
            min_spare.max(self.last_sliced.saturating_sub(self.buf.len()))
        } else {
            min_spare
        };
        self.buf.reserve(want);
    }

    /// Records of one fragment shorter than `n` bytes are returned as
    /// copies, not as slices of the receive buffer. A slice keeps the whole
    /// buffer alive for as long as anything of the record is kept (a reply
    /// decoded without copying, a handle from it in a cache), so the next
    /// read must allocate a new buffer and fault its pages in; a short
    /// record costs less to copy than that, and the buffer is reused.
    pub fn copy_records_below(mut self, n: usize) -> Self {
        self.copy_below = n;
        self
    }

    pub fn max_record(&self) -> usize {
        self.max_record
    }

    /// Appends received bytes.
    pub fn push(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
    }

    /// The receive buffer, for reading into directly (e.g. tokio's
    /// `read_buf`); only append to it.
    pub fn buffer_mut(&mut self) -> &mut BytesMut {
        &mut self.buf
    }

    /// Bytes of the fragment being received that have not arrived yet
    /// (0 between fragments, or before a fragment's header is complete).
    pub fn fragment_missing(&self) -> usize {
        match self.current {
            Some((len, _)) => len.saturating_sub(self.buf.len()),
            None => 0,
        }
    }

    /// Bytes received but not yet returned as part of a record.
    pub fn buffered(&self) -> usize {
        self.buf.len() + self.assembled
    }

    /// True when no partial record is pending (a clean point to close).
    pub fn is_idle(&self) -> bool {
        self.buf.is_empty() && self.current.is_none() && self.parts.is_empty()
    }

    /// The next complete record, `Ok(None)` if more data is needed.
    pub fn next_record(&mut self) -> Result<Option<Bytes>, FrameError> {
        loop {
            let (len, last) = match self.current {
                Some(h) => h,
                None => {
                    if self.buf.len() < 4 {
                        return Ok(None);
                    }
                    let h = self.buf.get_u32();
                    let len = (h & !LAST) as usize;
                    let last = h & LAST != 0;
                    let size = self.assembled.saturating_add(len);
                    if size > self.max_record {
                        return Err(FrameError::RecordTooLarge { size, max: self.max_record });
                    }
                    self.current = Some((len, last));
                    (len, last)
                }
            };
            if self.buf.len() < len {
                // Make room for the whole fragment at once rather than
                // growing step by step; `len` is within max_record.
                self.buf.reserve(len - self.buf.len());
                return Ok(None);
            }
            self.current = None;
            if last && self.parts.is_empty() && len < self.copy_below {
                let rec = Bytes::copy_from_slice(&self.buf[..len]);
                self.buf.advance(len);
                return Ok(Some(rec));
            }
            let frag = self.buf.split_to(len).freeze();
            if last && self.parts.is_empty() {
                self.last_sliced = (len + 4).min(self.max_record + 4);
            }
            if !last {
                // Empty fragments cost 4 bytes of input each and are not
                // kept, so they can neither loop nor grow memory.
                if !frag.is_empty() {
                    self.assembled += frag.len();
                    self.parts.push(frag);
                }
                continue;
            }
            if self.parts.is_empty() {
                return Ok(Some(frag));
            }
            let mut out = BytesMut::with_capacity(self.assembled + frag.len());
            for p in self.parts.drain(..) {
                out.put_slice(&p);
            }
            out.put_slice(&frag);
            self.assembled = 0;
            return Ok(Some(out.freeze()));
        }
    }
}

/// The header of a fragment of `len` bytes (at most [`MAX_FRAGMENT`]; larger
/// values are truncated to 31 bits, so split first, as
/// [`frame_segments`] does).
pub fn record_header(len: usize, last: bool) -> [u8; 4] {
    let len = (len.min(MAX_FRAGMENT)) as u32;
    let h = if last { len | LAST } else { len };
    h.to_be_bytes()
}

/// Frames one message given as segments (e.g. from
/// `xdr::Encoder::into_segments`) for a vectored write: headers are
/// inserted, payload segments are not copied.
pub fn frame_segments(segments: Vec<Bytes>) -> Vec<Bytes> {
    frame_segments_max(segments, MAX_FRAGMENT)
}

fn frame_segments_max(segments: Vec<Bytes>, max_frag: usize) -> Vec<Bytes> {
    let max_frag = max_frag.clamp(1, MAX_FRAGMENT);
    let total: usize = segments.iter().map(Bytes::len).sum();
    if total <= max_frag {
        let mut out = Vec::with_capacity(segments.len() + 1);
        out.push(Bytes::copy_from_slice(&record_header(total, true)));
        out.extend(segments.into_iter().filter(|s| !s.is_empty()));
        return out;
    }
    let mut out = Vec::with_capacity(segments.len() + total / max_frag + 2);
    let mut remaining = total;
    let mut room = 0; // bytes left in the current fragment
    for mut seg in segments {
        while !seg.is_empty() {
            if room == 0 {
                room = remaining.min(max_frag);
                out.push(Bytes::copy_from_slice(&record_header(room, room == remaining)));
            }
            let take = room.min(seg.len());
            out.push(seg.split_to(take));
            room -= take;
            remaining -= take;
        }
    }
    out
}

#[cfg(test)]
mod tests;
