//! The grace period after a restart (RFC 8881 section 8.4.2).

use std::time::Duration;

/// Which clients may reclaim, and until when.
#[derive(Debug, Default)]
pub(crate) struct Grace {
    /// Client records loaded from the stable store at start.
    pub known: Vec<Vec<u8>>,
    /// End of the grace period on the state clock; `None`: not in grace.
    pub until: Option<Duration>,
}

impl Grace {
    pub fn start(known: Vec<Vec<u8>>, now: Duration, length: Duration) -> Grace {
        let until = if known.is_empty() { None } else { Some(now + length) };
        Grace { known, until }
    }

    /// True while new (non-reclaim) opens and locks must get NFS4ERR_GRACE.
    pub fn in_grace(&mut self, now: Duration) -> bool {
        match self.until {
            Some(t) if now < t => true,
            Some(_) => {
                self.until = None;
                false
            }
            None => false,
        }
    }
}
