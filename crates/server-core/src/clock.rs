//! Time as the protocol core sees it: injected, so that leases, grace
//! periods and delegation recalls are tested on virtual time. The core
//! reads no clock of its own: the embedding server gives it the real one
//! (`server::clock::SystemClock`); until then time stands still.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A monotonic clock plus the wall clock (for verifiers and boot times).
pub trait Clock: Send + Sync + 'static {
    /// Time since an arbitrary fixed origin; never goes backwards.
    fn now(&self) -> Duration;
    /// Seconds since the Unix epoch.
    fn wall_secs(&self) -> u64;
}

/// A clock that only moves when told to: tests, and a core no server has
/// given a clock.
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
