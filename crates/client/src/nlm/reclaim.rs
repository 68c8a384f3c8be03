//! Reclaiming NFSv3 locks after the server restarted. The server's
//! status monitor tells the lock service (SM_NOTIFY) once it is up
//! again, in its grace period; every lock this client held there is then
//! asked for again with `reclaim` set, which the server grants while
//! other clients' new locks must wait. A reclaim the server refuses is a
//! lock lost: logged, counted, and dropped from what is held.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::Bytes;
use client_core::v41::backoff::{Backoff, RetrySettings};
use client_core::v41::locallocks::LocalLocks;
use parking_lot::Mutex;
use proto::nlm::*;
use xdr::Decode;

use super::{make_alock, nsm_state, NLM_V4};
use crate::lockd::LockService;
use crate::transport::Connection;

#[derive(Debug, Default)]
pub(super) struct Counts {
    reclaimed: AtomicU64,
    lost: AtomicU64,
}

impl Counts {
    pub(super) fn get(&self) -> (u64, u64) {
        (self.reclaimed.load(Ordering::Relaxed), self.lost.load(Ordering::Relaxed))
    }
}

/// What a reclaim needs of the client's NLM side, held while it lives.
pub(super) struct Reclaimer {
    pub server: IpAddr,
    pub conn: Connection,
    pub caller_name: Bytes,
    pub svids: Arc<Mutex<HashMap<u64, u32>>>,
    pub held: Weak<Mutex<LocalLocks<Bytes>>>,
    pub counts: Arc<Counts>,
    pub retry: RetrySettings,
}

impl Reclaimer {
    /// Listens for the server's restarts until the client goes.
    pub(super) fn watch(self, svc: &LockService) {
        let mut restarts = svc.restarts();
        tokio::spawn(async move {
            loop {
                let (mon_name, state, from) = match restarts.recv().await {
                    Ok(r) => r,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(_) => return,
                };
                // From the server's address, or naming it.
                if from != self.server && mon_name[..] != *self.server.to_string().as_bytes() {
                    continue;
                }
                let Some(held) = self.held.upgrade() else { return };
                let locks = held.lock().all();
                if locks.is_empty() {
                    continue;
                }
                tracing::info!(server = %self.server, state, locks = locks.len(), "server restarted: reclaiming locks");
                for (fh, l) in locks {
                    if !self.reclaim_one(&held, &fh, l).await {
                        held.lock().unlock(&fh, l.owner, l.start, l.end);
                    }
                }
            }
        });
    }

    /// One lock again, as a reclaim; false when it is lost.
    async fn reclaim_one(
        &self,
        held: &Mutex<LocalLocks<Bytes>>,
        fh: &Bytes,
        l: client_core::v41::locallocks::LocalLock,
    ) -> bool {
        let (offset, length) = l.offset_length();
        let mut pause = Backoff::new(&self.retry);
        loop {
            // Unlocked meanwhile: nothing to reclaim.
            if !held.lock().holds(fh, Some(l.owner)) {
                return true;
            }
            let args = nlm4_lockargs {
                cookie: Bytes::from_static(b"reclaim"),
                block: false,
                exclusive: l.write,
                alock: make_alock(&self.caller_name, &self.svids, fh, l.owner, offset, length),
                reclaim: true,
                state: nsm_state(),
            };
            let stat = match self.conn.call(NLM_PROG, NLM_V4, NLM_LOCK, vec![xdr::to_bytes(&args)]).await {
                Ok(reply) => nlm4_res::decode(&mut xdr::Decoder::new(reply)).map(|r| r.stat.stat).ok(),
                Err(e) => {
                    tracing::debug!("NLM reclaim: {e}");
                    None
                }
            };
            match stat {
                Some(nlm4_stats::nlm4_granted) => {
                    self.counts.reclaimed.fetch_add(1, Ordering::Relaxed);
                    return true;
                }
                // Not answered (the server is still coming up) or not yet
                // in its grace period: again, for as long as retries last.
                None | Some(nlm4_stats::nlm4_denied_grace_period) => {}
                Some(other) => {
                    tracing::warn!(server = %self.server, ?other, offset, length, "NFSv3 lock lost: the restarted server refused its reclaim");
                    self.counts.lost.fetch_add(1, Ordering::Relaxed);
                    return false;
                }
            }
            match pause.next_wait() {
                Some(ns) => tokio::time::sleep(Duration::from_nanos(ns)).await,
                None => {
                    tracing::warn!(server = %self.server, offset, length, "NFSv3 lock lost: no reclaim got through");
                    self.counts.lost.fetch_add(1, Ordering::Relaxed);
                    return false;
                }
            }
        }
    }
}
