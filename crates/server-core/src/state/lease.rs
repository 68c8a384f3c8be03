//! What a client's sessions read and change without the tables' lock: its
//! lease, whether its record is gone, its sticky status flags, whether
//! a back channel of it is up and whether it completed its reclaims. SEQUENCE, the one operation of every
//! NFSv4.1 compound, touches only its session and this (RFC 8881 section
//! 2.10.6): a client's compounds never queue behind another client's
//! state changes.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

#[derive(Debug, Default)]
pub(crate) struct Lease {
    /// When the client last renewed, in microseconds of the core's clock.
    renewed_us: AtomicU64,
    /// The record expired or was removed: its sessions are dead even
    /// before they leave the session table.
    gone: AtomicBool,
    /// `sr_status_flags` bits that stay set until cleared.
    status_flags: AtomicU32,
    /// Some session of the client has a back channel not known to be down
    /// (kept by `callback::refresh_path`).
    path_up: AtomicBool,
    /// The client sent RECLAIM_COMPLETE (a copy of its record's flag, so
    /// that a 4.1 OPEN need not take the tables to learn it).
    reclaim_complete: AtomicBool,
}

impl Lease {
    pub fn new(now: Duration) -> Lease {
        let l = Lease::default();
        l.renew(now);
        l
    }

    /// Renews at `now` (never backwards).
    pub fn renew(&self, now: Duration) {
        self.renewed_us.fetch_max(micros(now), Ordering::Relaxed);
    }

    pub fn last_renew(&self) -> Duration {
        Duration::from_micros(self.renewed_us.load(Ordering::Relaxed))
    }

    pub fn set_gone(&self) {
        self.gone.store(true, Ordering::Release);
    }

    pub fn is_gone(&self) -> bool {
        self.gone.load(Ordering::Acquire)
    }

    pub fn status_flags(&self) -> u32 {
        self.status_flags.load(Ordering::Relaxed)
    }

    pub fn set_status_flags(&self, flags: u32) {
        self.status_flags.fetch_or(flags, Ordering::Relaxed);
    }

    pub fn clear_status_flags(&self, flags: u32) {
        self.status_flags.fetch_and(!flags, Ordering::Relaxed);
    }

    pub fn path_up(&self) -> bool {
        self.path_up.load(Ordering::Relaxed)
    }

    pub fn set_path_up(&self, up: bool) {
        self.path_up.store(up, Ordering::Relaxed);
    }

    pub fn reclaim_complete(&self) -> bool {
        self.reclaim_complete.load(Ordering::Acquire)
    }

    pub fn set_reclaim_complete(&self) {
        self.reclaim_complete.store(true, Ordering::Release);
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renewal_never_goes_back() {
        let l = Lease::new(Duration::from_secs(5));
        l.renew(Duration::from_secs(3));
        assert_eq!(l.last_renew(), Duration::from_secs(5));
        l.renew(Duration::from_secs(9));
        assert_eq!(l.last_renew(), Duration::from_secs(9));
    }
}
