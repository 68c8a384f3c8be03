//! NLM limits and the calls back to clients (`[core.nlm]` in the
//! configuration file).

use serde::Deserialize;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NlmSettings {
    /// The port of the portmapper asked, on a client's host, where its
    /// lock manager listens (the results of `_MSG` calls, NLM_GRANTED).
    pub client_portmap_port: u16,
    /// How long one call to a client (the portmapper query, the
    /// connection and the call itself) may take before it counts as
    /// unanswered.
    pub callback_timeout_ms: u32,
    /// Times the result of an `_MSG` call (TEST_RES, LOCK_RES, ...) is
    /// sent before it is dropped: a client that misses it asks again.
    pub result_tries: u32,
    /// Times NLM_GRANTED is sent for a blocked lock that came free before
    /// the grant is given up and the range released for the next waiter.
    pub grant_retries: u32,
    /// Wait before the first resend of an unanswered NLM_GRANTED; it
    /// doubles with each further one, up to `grant_retry_max_ms`.
    pub grant_retry_ms: u32,
    pub grant_retry_max_ms: u32,
    /// Blocked lock requests queued at once, all clients together; past it
    /// a blocking LOCK that conflicts gets `denied_nolocks`.
    pub max_blocked: usize,
    /// Blocked lock requests queued at once for one client host.
    pub max_blocked_per_host: usize,
    /// Longest wait between two SM_NOTIFY calls to a host that did not
    /// answer the news of this server's restart (the first wait is
    /// `grant_retry_ms`, doubling).
    pub notify_retry_max_ms: u32,
    /// How long SM_NOTIFY is tried before the host is given up (and no
    /// longer monitored).
    pub notify_give_up_secs: u32,
}

impl Default for NlmSettings {
    fn default() -> Self {
        NlmSettings {
            client_portmap_port: 111,
            callback_timeout_ms: 5000,
            result_tries: 2,
            grant_retries: 5,
            grant_retry_ms: 1000,
            grant_retry_max_ms: 16_000,
            max_blocked: 65_536,
            max_blocked_per_host: 1024,
            notify_retry_max_ms: 60_000,
            notify_give_up_secs: 900,
        }
    }
}

impl NlmSettings {
    pub(crate) fn sanitized(mut self) -> Self {
        self.callback_timeout_ms = self.callback_timeout_ms.max(1);
        self.result_tries = self.result_tries.max(1);
        self.grant_retries = self.grant_retries.max(1);
        self.grant_retry_ms = self.grant_retry_ms.max(1);
        self.grant_retry_max_ms = self.grant_retry_max_ms.max(self.grant_retry_ms);
        self.notify_retry_max_ms = self.notify_retry_max_ms.max(self.grant_retry_ms);
        self
    }
}
