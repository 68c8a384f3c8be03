//! Time as the protocol core sees it: injected, so that leases, grace
//! periods and delegation recalls are tested on virtual time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A monotonic clock plus the wall clock (for verifiers and boot times).
pub trait Clock: Send + Sync + 'static {
    /// Time since an arbitrary fixed origin; never goes backwards.
    fn now(&self) -> Duration;
    /// Seconds since the Unix epoch.
    fn wall_secs(&self) -> u64;
}

/// The real clocks.
#[derive(Debug)]
pub struct SystemClock {
    origin: Instant,
}

impl Default for SystemClock {
    fn default() -> Self {
        SystemClock { origin: Instant::now() }
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }
    fn wall_secs(&self) -> u64 {
        SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
    }
}

/// A clock that only moves when told to, for tests.
#[derive(Debug, Default)]
pub struct ManualClock {
    nanos: AtomicU64,
}

impl ManualClock {
    pub fn advance(&self, by: Duration) {
        self.nanos.fetch_add(u64::try_from(by.as_nanos()).unwrap_or(u64::MAX), Ordering::AcqRel);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Duration {
        Duration::from_nanos(self.nanos.load(Ordering::Acquire))
    }
    fn wall_secs(&self) -> u64 {
        1_700_000_000 + self.now().as_secs()
    }
}
