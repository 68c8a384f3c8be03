//! Waits between retries of a request the server answered with
//! NFS4ERR_DELAY or NFS4ERR_GRACE.
//!
//! Chen et al. (2015, Fig. 13) measured ~100 ms for an OPEN that conflicts
//! with a delegation, because the Linux client then waited a fixed 100 ms
//! before asking again; the recall itself took a round trip. Here the
//! first retry comes after `delay_min_ms` (1 ms) and the wait doubles up
//! to `delay_max_ms`.

use serde::Deserialize;

use crate::rpc::Nanos;

const MS: Nanos = 1_000_000;

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetrySettings {
    /// First wait after NFS4ERR_DELAY, in ms. Default 1.
    pub delay_min_ms: u64,
    /// Longest wait between retries, in ms. Default 1000.
    pub delay_max_ms: u64,
    /// How long a request keeps being retried before its caller gets the
    /// error, in ms (a server in its grace period answers NFS4ERR_GRACE
    /// for up to its lease time, 90 s by default). Default 120000.
    pub give_up_ms: u64,
}

impl Default for RetrySettings {
    fn default() -> Self {
        RetrySettings { delay_min_ms: 1, delay_max_ms: 1000, give_up_ms: 120_000 }
    }
}

/// The retry schedule of one request.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Nanos,
    max: Nanos,
    waited: Nanos,
    give_up: Nanos,
}

impl Backoff {
    pub fn new(s: &RetrySettings) -> Backoff {
        // Settings come from a file: no value may overflow the arithmetic.
        let min = s.delay_min_ms.clamp(1, u64::MAX / MS / 4) * MS;
        let max = s.delay_max_ms.saturating_mul(MS).clamp(min, u64::MAX / 4);
        Backoff { next: min, max, waited: 0, give_up: s.give_up_ms.saturating_mul(MS) }
    }

    /// How long to wait before the next try, or None when the request
    /// has been retried for long enough.
    pub fn next_wait(&mut self) -> Option<Nanos> {
        if self.waited >= self.give_up {
            return None;
        }
        let w = self.next;
        self.waited = self.waited.saturating_add(w);
        self.next = (self.next * 2).min(self.max);
        Some(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_at_a_millisecond_doubles_and_gives_up() {
        let s = RetrySettings { delay_min_ms: 1, delay_max_ms: 8, give_up_ms: 30 };
        let mut b = Backoff::new(&s);
        let waits: Vec<u64> = std::iter::from_fn(|| b.next_wait()).map(|n| n / MS).collect();
        assert_eq!(waits, vec![1, 2, 4, 8, 8, 8]);
        // Extreme settings do not overflow.
        let s = RetrySettings { delay_min_ms: u64::MAX, delay_max_ms: u64::MAX, give_up_ms: u64::MAX };
        let mut b = Backoff::new(&s);
        assert!(b.next_wait().is_some());
        for _ in 0..100 {
            let _ = b.next_wait();
        }
    }
}
