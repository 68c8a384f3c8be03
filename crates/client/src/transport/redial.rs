//! When the connection task dials again: after a break, with doubling
//! pauses until `reconnect_timeout`; after a connection that broke soon
//! after it was made, only after a pause that grows while that goes on.

use std::time::{Duration, Instant};

use super::{dial, RpcError, Stream, Task};

/// The first pause between reconnect attempts; they double up to
/// `reconnect_max_pause`.
const FIRST_PAUSE: Duration = Duration::from_millis(50);

/// A connection that breaks sooner than this after it was made counts as
/// flapping: the next dial waits a pause that doubles while it goes on.
const HEALTHY_AFTER: Duration = Duration::from_secs(1);

/// The pause before redialling after connections that broke soon after
/// they were made. A server that accepts and then drops every connection
/// (or answers each with garbage) would otherwise have the client redial
/// at once, forever, at full CPU.
#[derive(Debug)]
pub(super) struct Flapping {
    last: Option<Duration>,
    max: Duration,
}

impl Flapping {
    pub(super) fn new(max: Duration) -> Flapping {
        Flapping { last: None, max }
    }

    /// The pause before dialling again after a connection that lasted
    /// `up_for`; `None` when it lasted long enough to count as healthy.
    fn after_break(&mut self, up_for: Duration) -> Option<Duration> {
        if up_for >= HEALTHY_AFTER {
            self.last = None;
            return None;
        }
        let pause = self.last.map_or(FIRST_PAUSE, |p| (p * 2).min(self.max));
        self.last = Some(pause);
        Some(pause)
    }
}

impl Task {
    /// Waits before redialling after a connection that lasted `up_for`, as
    /// `flapping` says; with no call outstanding, also until the next call
    /// comes (which is then queued and reconnects as always: a hard
    /// mount's call waits for its server). False when the client is gone.
    pub(super) async fn pace_redial(&mut self, flapping: &mut Flapping, up_for: Duration) -> bool {
        let Some(pause) = flapping.after_break(up_for) else { return true };
        tokio::time::sleep(pause).await;
        if self.shared.rpc.lock().core.outstanding() == 0 {
            let Some(call) = self.calls.recv().await else { return false };
            let now = self.now();
            self.shared.rpc.lock().start(call, now);
        }
        true
    }

    /// Retries with doubling pauses until `reconnect_timeout` has passed.
    pub(super) async fn reconnect(&mut self) -> Option<Stream> {
        let give_up = Instant::now() + self.params.reconnect_timeout;
        let mut pause = FIRST_PAUSE;
        loop {
            match dial(&self.params).await {
                Ok(s) => return Some(s),
                Err(e) if Instant::now() + pause >= give_up => {
                    tracing::warn!(addr = %self.params.addr, "cannot reconnect: {e}");
                    return None;
                }
                Err(_) => {}
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(self.params.reconnect_max_pause);
        }
    }

    /// After giving up on a server: each new call gets one connect attempt,
    /// failing at once if the server is still gone.
    pub(super) async fn wait_for_call_then_dial(&mut self) -> Option<Stream> {
        loop {
            let call = self.calls.recv().await?;
            match dial(&self.params).await {
                Ok(s) => {
                    let now = self.now();
                    self.shared.rpc.lock().start(call, now);
                    return Some(s);
                }
                Err(e) => {
                    let why = RpcError::Disconnected(format!("{}: {e}", self.params.addr));
                    let _ = call.reply.send(client_core::rpc::Results::Ready(Err(why)));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_double_while_connections_break_young_and_reset_once_one_lasts() {
        let mut f = Flapping::new(Duration::from_millis(300));
        let young = Duration::from_millis(10);
        assert_eq!(f.after_break(young), Some(FIRST_PAUSE));
        assert_eq!(f.after_break(young), Some(FIRST_PAUSE * 2));
        assert_eq!(f.after_break(young), Some(FIRST_PAUSE * 4));
        assert_eq!(f.after_break(young), Some(Duration::from_millis(300)));
        assert_eq!(f.after_break(HEALTHY_AFTER), None);
        assert_eq!(f.after_break(young), Some(FIRST_PAUSE));
    }
}
