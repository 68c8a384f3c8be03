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
}

impl Default for NlmSettings {
    fn default() -> Self {
        NlmSettings { client_portmap_port: 111, callback_timeout_ms: 5000, result_tries: 2 }
    }
}

impl NlmSettings {
    pub(crate) fn sanitized(mut self) -> Self {
        self.callback_timeout_ms = self.callback_timeout_ms.max(1);
        self.result_tries = self.result_tries.max(1);
        self
    }
}
