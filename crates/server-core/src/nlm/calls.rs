//! The calls NLM makes to clients' lock managers: the results of the
//! `_MSG` procedures (TEST_RES, LOCK_RES, ...). Each is a job with its
//! own id, sent through the core's [`Outbound`] transport and retried on
//! the core's clock ([`Core::nlm_tick`]); nothing here holds a lock while
//! a call is handed over.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use proto::nlm::NLM_PROG;

use super::settings::NlmSettings;
use crate::exports::canonical_ip;
use crate::outbound::{self, OutCall, OutReply, Outbound};
use crate::{Core, PeerInfo};

/// Where a client's lock manager is called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    pub host: IpAddr,
    /// Our address the client reached us on, to call from.
    pub from: IpAddr,
    /// The port a lock manager on our own host registered with our
    /// portmapper; `None`: ask the client host's portmapper.
    pub port: Option<u16>,
}

impl Target {
    /// The lock manager of the host `peer` called from.
    pub fn of(core: &Core, peer: &PeerInfo) -> Target {
        let port = if crate::portmap::registry::is_local(peer) {
            core.local_callback_port(NLM_PROG, super::VERSION, "tcp")
        } else {
            None
        };
        Target { host: canonical_ip(peer.addr.ip()), from: canonical_ip(peer.local.ip()), port }
    }
}

/// One call to make, and what is left of its tries.
struct Job {
    target: Target,
    record: Vec<Bytes>,
    xid: u32,
    tries_left: u32,
    /// Handed to the transport, its end not reported yet.
    in_flight: bool,
}

#[derive(Default)]
struct Inner {
    jobs: HashMap<u64, Job>,
    /// Jobs to hand to the transport.
    due: Vec<u64>,
    /// Jobs to try again on the next tick.
    retry: Vec<u64>,
    next_id: u64,
}

/// The NLM calls in progress.
pub(crate) struct NlmCalls {
    out: Arc<dyn Outbound>,
    pub settings: NlmSettings,
    inner: Mutex<Inner>,
    /// Jobs wait to be handed over (read after every request, without
    /// the lock).
    ready: AtomicBool,
    /// Some job is not finished.
    busy: AtomicBool,
}

impl NlmCalls {
    pub fn new(out: Arc<dyn Outbound>, settings: NlmSettings, first_id: u64) -> NlmCalls {
        let inner = Inner { next_id: first_id.max(1), ..Inner::default() };
        NlmCalls {
            out,
            settings,
            inner: Mutex::new(inner),
            ready: AtomicBool::new(false),
            busy: AtomicBool::new(false),
        }
    }

    /// Whether calls to clients can be made at all.
    pub fn can_call(&self) -> bool {
        self.out.can_call()
    }

    /// Queues the call of procedure `proc_` with `args` to `target`'s
    /// lock manager, tried `tries` times; sent once the request ends.
    pub fn queue(&self, target: Target, proc_: u32, args: Bytes, tries: u32) {
        let mut inner = self.inner.lock();
        let id = inner.next_id;
        inner.next_id += 1;
        // The xid is the id's low half: ids are consecutive, so no two
        // calls in flight share one.
        let xid = id as u32;
        let machine = target.from.to_string();
        let record = outbound::call_record(xid, NLM_PROG, super::VERSION, proc_, machine.as_bytes(), args);
        inner.jobs.insert(id, Job { target, record, xid, tries_left: tries.max(1), in_flight: false });
        inner.due.push(id);
        self.ready.store(true, Ordering::Release);
        self.busy.store(true, Ordering::Release);
    }

    fn out_call(&self, id: u64, job: &Job) -> OutCall {
        OutCall {
            id,
            host: job.target.host,
            from: job.target.from,
            prog: NLM_PROG,
            vers: super::VERSION,
            udp: false,
            port: job.target.port,
            portmap_port: self.settings.client_portmap_port,
            record: job.record.clone(),
            timeout: Duration::from_millis(self.settings.callback_timeout_ms.into()),
        }
    }

    /// Hands every due job to the transport.
    pub fn send_due(&self) {
        // A load first: this runs after every request, and a swap would
        // write the shared line each time.
        if !self.ready.load(Ordering::Acquire) || !self.ready.swap(false, Ordering::AcqRel) {
            return;
        }
        let calls: Vec<OutCall> = {
            let mut inner = self.inner.lock();
            let due = std::mem::take(&mut inner.due);
            let mut calls = Vec::with_capacity(due.len());
            for id in due {
                if let Some(job) = inner.jobs.get_mut(&id) {
                    if !job.in_flight {
                        job.in_flight = true;
                        job.tries_left = job.tries_left.saturating_sub(1);
                        calls.push(self.out_call(id, job));
                    }
                }
            }
            calls
        };
        for c in calls {
            let id = c.id;
            if !self.out.send(c) {
                self.done(id, OutReply::Unreachable);
            }
        }
    }

    /// The end of call `id`: finished, or put back to be tried again on
    /// the next tick.
    pub fn done(&self, id: u64, r: OutReply) {
        let mut inner = self.inner.lock();
        let Some(job) = inner.jobs.get_mut(&id) else { return };
        job.in_flight = false;
        let answered = match &r {
            OutReply::Reply(record) => outbound::results(job.xid, record.clone()).is_some(),
            _ => false,
        };
        if answered || job.tries_left == 0 {
            if !answered {
                tracing::info!(host = %job.target.host, reply = ?r, "an NLM result could not be sent to the client's lock manager");
            }
            inner.jobs.remove(&id);
            if inner.jobs.is_empty() {
                self.busy.store(false, Ordering::Release);
            }
            return;
        }
        // Tried again on the next tick, not at once: a host that is down
        // is not hammered.
        inner.retry.push(id);
    }

    /// Puts the jobs waiting for a tick up to be sent.
    pub fn tick(&self) {
        let mut inner = self.inner.lock();
        if inner.retry.is_empty() {
            return;
        }
        let retry = std::mem::take(&mut inner.retry);
        inner.due.extend(retry);
        self.ready.store(true, Ordering::Release);
    }

    /// Whether some call is not finished.
    pub fn busy(&self) -> bool {
        self.busy.load(Ordering::Acquire)
    }
}

impl Core {
    /// Gives the core a transport for calls to clients (see
    /// [`Outbound`]); without one NLM answers as a server that makes no
    /// calls. Call before serving, after [`Core::with_nfs4_env`].
    pub fn with_outbound(mut self, out: Arc<dyn Outbound>) -> Core {
        self.nlm = NlmCalls::new(out, self.settings.nlm.clone(), first_call_id(self.v4.boot));
        self
    }

    /// The transport's report of the end of call `id`
    /// ([`OutCall::id`]). May block briefly on the core's locks: call it
    /// where blocking is allowed.
    pub fn outbound_done(&self, id: u64, r: OutReply) {
        self.nlm.done(id, r);
        self.send_nlm_calls();
    }

    /// Drives the calls' retries; the transport calls it periodically
    /// while [`Core::nlm_busy`] says there is work.
    pub fn nlm_tick(&self) {
        self.nlm.tick();
        self.send_nlm_calls();
    }

    /// Whether NLM has calls in progress for [`Core::nlm_tick`] to drive.
    pub fn nlm_busy(&self) -> bool {
        self.nlm.busy()
    }

    /// Hands the calls queued by the request just run to the transport;
    /// one atomic load when there are none.
    pub(crate) fn send_nlm_calls(&self) {
        self.nlm.send_due();
    }
}

/// The first call id of this server instance: its boot number in the
/// high bits of the xid, so that calls of a restarted server do not reuse
/// a recent instance's xids.
pub(crate) fn first_call_id(boot: u32) -> u64 {
    u64::from(boot & 0xffff) << 16
}
