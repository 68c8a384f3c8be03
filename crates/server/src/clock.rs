//! The real clocks, for the protocol core (which reads none itself).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use server_core::Clock;

/// The monotonic clock from when the server started, and the wall clock.
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
