//! The server's sequence window of one context (RFC 2203 section
//! 5.3.3.1): the highest sequence number seen and which of the
//! `size - 1` below it have been seen, so that a replayed or stale call is
//! dropped while calls that overtake each other on the way are not.

use proto::rpcsec_gss::MAXSEQ;

/// What to do with a call's sequence number, once its header checksum
/// has been verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// New: run it.
    Accept,
    /// Seen already, or below the window: drop it without a reply.
    Drop,
    /// At or past MAXSEQ: the context is used up
    /// (RPCSEC_GSS_CTXPROBLEM; the client makes a new one).
    Exhausted,
}

#[derive(Debug, Clone)]
pub struct SeqWindow {
    size: u32,
    /// The highest sequence number accepted; None before the first.
    top: Option<u32>,
    /// Bit i set: `top - i` was seen. Bit 0 is `top` itself.
    seen: Vec<u64>,
}

impl SeqWindow {
    /// A window of `size` sequence numbers (at least 1), the number the
    /// server tells the client at context creation.
    pub fn new(size: u32) -> SeqWindow {
        let size = size.max(1);
        SeqWindow { size, top: None, seen: vec![0; size.div_ceil(64) as usize] }
    }

    pub fn size(&self) -> u32 {
        self.size
    }

    /// Judges `seq` and, when it is accepted, remembers it.
    pub fn admit(&mut self, seq: u32) -> Verdict {
        if seq >= MAXSEQ {
            return Verdict::Exhausted;
        }
        let Some(top) = self.top else {
            self.top = Some(seq);
            self.set(0);
            return Verdict::Accept;
        };
        if seq > top {
            self.shift(seq - top);
            self.top = Some(seq);
            self.set(0);
            return Verdict::Accept;
        }
        let back = top - seq;
        if back >= self.size || self.get(back) {
            return Verdict::Drop;
        }
        self.set(back);
        Verdict::Accept
    }

    fn get(&self, i: u32) -> bool {
        self.seen[(i / 64) as usize] & (1 << (i % 64)) != 0
    }

    fn set(&mut self, i: u32) {
        self.seen[(i / 64) as usize] |= 1 << (i % 64);
    }

    /// Moves every remembered number `by` places further from the top.
    fn shift(&mut self, by: u32) {
        if by >= self.size {
            self.seen.fill(0);
            return;
        }
        let words = (by / 64) as usize;
        let bits = by % 64;
        let n = self.seen.len();
        for i in (0..n).rev() {
            let lo = if i >= words { self.seen[i - words] } else { 0 };
            let carry = if bits > 0 && i > words { self.seen[i - words - 1] >> (64 - bits) } else { 0 };
            self.seen[i] = if bits > 0 { (lo << bits) | carry } else { lo };
        }
        // Bits past the window's size are never read as seen.
        let spare = (n as u32) * 64 - self.size;
        if spare > 0 {
            self.seen[n - 1] &= u64::MAX >> spare;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn replays_and_stale_numbers_are_dropped() {
        let mut w = SeqWindow::new(4);
        assert_eq!(w.admit(10), Verdict::Accept);
        assert_eq!(w.admit(10), Verdict::Drop);
        assert_eq!(w.admit(8), Verdict::Accept, "overtaken within the window");
        assert_eq!(w.admit(8), Verdict::Drop);
        assert_eq!(w.admit(7), Verdict::Accept);
        assert_eq!(w.admit(6), Verdict::Drop, "below the window");
        assert_eq!(w.admit(12), Verdict::Accept);
        assert_eq!(w.admit(9), Verdict::Accept);
        assert_eq!(w.admit(8), Verdict::Drop);
        assert_eq!(w.admit(MAXSEQ), Verdict::Exhausted);
        assert_eq!(w.admit(u32::MAX), Verdict::Exhausted);
    }

    proptest! {
        /// The window answers as a set of everything seen would, limited
        /// to the `size` numbers at and below the highest.
        #[test]
        fn window_matches_a_model(size in 1u32..200, seqs in proptest::collection::vec(0u32..400, 1..300)) {
            let mut w = SeqWindow::new(size);
            let mut seen = std::collections::BTreeSet::new();
            let mut top: Option<u32> = None;
            for s in seqs {
                let want = match top {
                    Some(t) if s <= t && (t - s >= size || seen.contains(&s)) => Verdict::Drop,
                    _ => Verdict::Accept,
                };
                prop_assert_eq!(w.admit(s), want, "seq {}", s);
                if want == Verdict::Accept {
                    seen.insert(s);
                    top = Some(top.map_or(s, |t| t.max(s)));
                }
            }
        }
    }
}
