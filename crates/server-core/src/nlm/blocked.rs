//! Blocked NLM lock requests: what is kept of a LOCK with `block` set
//! that met a conflict, to send NLM_GRANTED once the lock manager grants
//! it (`crate::state::lockmgr` queues the request itself).

use bytes::Bytes;
use proto::nlm::nlm4_lock;

use super::calls::Target;

/// Whom to tell that a blocked request was granted, and with what.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GrantTo {
    pub target: Target,
    /// The LOCK request's cookie, sent back in NLM_GRANTED.
    pub cookie: Bytes,
    /// The lock as the client asked for it.
    pub lock: nlm4_lock,
    pub exclusive: bool,
    /// The client asked with LOCK_MSG: it is told with GRANTED_MSG, and
    /// answers with GRANTED_RES.
    pub msg: bool,
}

#[cfg(test)]
impl GrantTo {
    /// A grant for unit tests of the lock manager.
    pub fn for_test(cookie: &'static [u8]) -> GrantTo {
        let ip = std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
        GrantTo {
            target: Target { host: ip, from: ip, port: None },
            cookie: Bytes::from_static(cookie),
            lock: nlm4_lock::default(),
            exclusive: true,
            msg: false,
        }
    }
}
