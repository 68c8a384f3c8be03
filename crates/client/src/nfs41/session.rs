//! Establishing and keeping a session: EXCHANGE_ID, CREATE_SESSION with a
//! back channel on the same connection, RECLAIM_COMPLETE, lease renewal,
//! and recovery when the server lost the session (a new one) or the whole
//! client (a new client id, then reclaim of the opens held).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use client_core::v41::slots::SlotTable;
use parking_lot::Mutex;
use proto::nfs4::*;
use tokio::sync::{mpsc, Notify};
use xdr::{Decode, Decoder};

use super::cbsec::CbSecurity;
use super::reply::Results;
use super::{callback, pnfs, Counters, Nfs41, SessionState};
use crate::error::{Error, Result};
use crate::settings::ClientSettings;
use crate::transport::{ConnParams, Connection};

pub(crate) const NFS4_PROGRAM: u32 = 100003;
pub(crate) const NFS_V4: u32 = 4;
const NFSPROC4_COMPOUND: u32 = 1;
/// The program number the back channel's calls carry (RFC 8881 leaves
/// the choice to the client; this is the value Linux uses).
pub(crate) const CB_PROGRAM: u32 = 0x4000_0000;
/// Back-channel slots offered: recalls come one per file, but a server
/// telling of changes in many delegated directories (CB_NOTIFY) keeps
/// several calls out at once.
const BACK_CHANNEL_SLOTS: u32 = 16;

fn channel(slots: u32, max_request: u32) -> channel_attrs4 {
    channel_attrs4 {
        ca_headerpadsize: 0,
        ca_maxrequestsize: max_request,
        ca_maxresponsesize: max_request,
        ca_maxresponsesize_cached: 64 << 10,
        ca_maxoperations: 32,
        ca_maxrequests: slots,
        ca_rdma_ird: vec![],
    }
}

/// A COMPOUND without SEQUENCE (EXCHANGE_ID, CREATE_SESSION,
/// DESTROY_SESSION may not have one); returns the reply whole, once it
/// passed the same check as every other.
pub(crate) async fn plain_compound(conn: &Connection, minor: u32, ops: Vec<nfs_argop4>) -> Result<Results> {
    let name = super::compound::main_op(&ops);
    let sent: Vec<nfs_opnum4> = ops.iter().map(nfs_argop4::discriminant).collect();
    let args = COMPOUND4args { tag: Bytes::new(), minorversion: minor, argarray: ops };
    let bytes = conn
        .call_as(Some(name), NFS4_PROGRAM, NFS_V4, NFSPROC4_COMPOUND, xdr::to_segments(&args))
        .await
        .map_err(|err| Error::Rpc { proc: "COMPOUND", err })?;
    let r = COMPOUND4res::decode(&mut Decoder::new(bytes))
        .map_err(|e| Error::Decode { proc: "COMPOUND", why: e.to_string() })?;
    Results::checked(name, &sent, r)
}

fn failed(op: &'static str, status: nfsstat4) -> Error {
    Error::Nfs4 { op, status }
}

async fn exchange_id(conn: &Connection, minor: u32, owner: &Bytes, verifier: [u8; 8]) -> Result<EXCHANGE_ID4resok> {
    let r = plain_compound(
        conn,
        minor,
        vec![nfs_argop4::OP_EXCHANGE_ID(EXCHANGE_ID4args {
            eia_clientowner: client_owner4 { co_verifier: verifier, co_ownerid: owner.clone() },
            eia_flags: EXCHGID4_FLAG_USE_NON_PNFS,
            eia_state_protect: state_protect4_a::SP4_NONE,
            eia_client_impl_id: vec![],
        })],
    )
    .await?;
    let status = r.status();
    match r.into_vec().into_iter().next() {
        Some(nfs_resop4::OP_EXCHANGE_ID(EXCHANGE_ID4res::NFS4_OK(ok))) => Ok(ok),
        Some(nfs_resop4::OP_EXCHANGE_ID(EXCHANGE_ID4res::default(s))) => Err(failed("EXCHANGE_ID", s)),
        _ => Err(failed("EXCHANGE_ID", status)),
    }
}

/// The session's parameters besides the client id's.
#[derive(Clone, Copy)]
struct SessionAsk {
    minor: u32,
    slots: u32,
    max_request: u32,
}

/// CREATE_SESSION, its callbacks under the connection's RPCSEC_GSS
/// context when there is one, AUTH_NONE otherwise. AUTH_NONE comes
/// second in the offer, for servers that do not call back under
/// RPCSEC_GSS (NFS-Ganesha) and take the first flavor they can use; a
/// server that does not know the context's handle refuses the whole
/// request (NFS4ERR_NOENT, RFC 8881 section 18.36.4), which is asked
/// again with AUTH_NONE alone. Only a reply to the request consumes the
/// client id's sequence id, so the second goes under the same.
async fn create_session(
    conn: &Connection,
    cb: &CbSecurity,
    ask: SessionAsk,
    clientid: clientid4,
    seq: u32,
) -> Result<CREATE_SESSION4resok> {
    let Some(back) = conn.back_context() else {
        return create_session_under(conn, ask, clientid, seq, vec![callback_sec_parms4::AUTH_NONE]).await;
    };
    let offer = cb.offer(&back);
    let parms = vec![offer.parms.clone(), callback_sec_parms4::AUTH_NONE];
    match create_session_under(conn, ask, clientid, seq, parms).await {
        Ok(cs) => {
            cb.taken(&offer);
            Ok(cs)
        }
        Err(Error::Nfs4 { status: nfsstat4::NFS4ERR_NOENT, .. }) => {
            cb.refused(&offer, false);
            tracing::info!(
                "the server does not take this client's RPCSEC_GSS context for callbacks (NFS4ERR_NOENT); \
                 asking for callbacks under AUTH_NONE"
            );
            create_session_under(conn, ask, clientid, seq, vec![callback_sec_parms4::AUTH_NONE]).await
        }
        Err(e) => {
            cb.refused(&offer, true);
            Err(e)
        }
    }
}

async fn create_session_under(
    conn: &Connection,
    ask: SessionAsk,
    clientid: clientid4,
    seq: u32,
    csa_sec_parms: Vec<callback_sec_parms4>,
) -> Result<CREATE_SESSION4resok> {
    let SessionAsk { minor, slots, max_request } = ask;
    let r = plain_compound(
        conn,
        minor,
        vec![nfs_argop4::OP_CREATE_SESSION(CREATE_SESSION4args {
            csa_clientid: clientid,
            csa_sequence: seq,
            csa_flags: CREATE_SESSION4_FLAG_CONN_BACK_CHAN,
            csa_fore_chan_attrs: channel(slots, max_request),
            csa_back_chan_attrs: channel(BACK_CHANNEL_SLOTS, 64 << 10),
            csa_cb_program: CB_PROGRAM,
            csa_sec_parms,
        })],
    )
    .await?;
    let status = r.status();
    match r.into_vec().into_iter().next() {
        Some(nfs_resop4::OP_CREATE_SESSION(CREATE_SESSION4res::NFS4_OK(ok))) => Ok(ok),
        Some(nfs_resop4::OP_CREATE_SESSION(CREATE_SESSION4res::default(s))) => Err(failed("CREATE_SESSION", s)),
        _ => Err(failed("CREATE_SESSION", status)),
    }
}

/// Why the back channel's context is lent anew.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CbRefresh {
    /// A new context was set up for the fore channel (the server refused
    /// the old one).
    NewContext,
    /// SEQUENCE says the context lent ends soon or has ended
    /// (SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRING, _EXPIRED).
    Expiring,
}

/// A fresh client id: eight bytes no earlier run of this process used.
fn boot_verifier() -> [u8; 8] {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    ((t.as_nanos() as u64) ^ (std::process::id() as u64) << 40).to_be_bytes()
}

impl Nfs41 {
    /// Connects to `params.addr`, makes a session and finds the handle of
    /// `export` (PUTROOTFH and a LOOKUP per component).
    pub async fn connect(
        params: ConnParams,
        settings: &ClientSettings,
        export: &str,
        minors: &[u32],
    ) -> Result<Arc<Nfs41>> {
        let (cb_tx, cb_rx) = mpsc::unbounded_channel();
        let conn = Connection::connect_with_back_channel(params.clone(), cb_tx)
            .await
            .map_err(|e| Error::Connect { what: format!("NFSv4.1 service at {}", params.addr), why: e.to_string() })?;
        // The owner names this client instance; two clients in one process
        // (two mounts, the benchmark's clients) must differ.
        static INSTANCE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = INSTANCE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let host = settings.machine_name.clone().unwrap_or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_default()
        });
        let owner = Bytes::from(format!("nfsx/{host}/{}/{n}", std::process::id()));
        let verifier = boot_verifier();
        let slots_wanted = settings.v41.slots.max(1);
        let max_request = settings.max_record.min(u32::MAX as usize) as u32;
        // The first minor version the server takes (it answers the others
        // NFS4ERR_MINOR_VERS_MISMATCH, RFC 8881 section 2.7).
        let mut found = None;
        for (i, &minor) in minors.iter().enumerate() {
            match exchange_id(&conn, minor, &owner, verifier).await {
                Ok(eid) => {
                    found = Some((minor, eid));
                    break;
                }
                Err(Error::Nfs4 { status: nfsstat4::NFS4ERR_MINOR_VERS_MISMATCH, .. }) if i + 1 < minors.len() => {
                    tracing::debug!(minor, "NFSv4 minor version not offered; trying the next");
                }
                Err(e) => return Err(e),
            }
        }
        let Some((minor, eid)) = found else {
            return Err(Error::Invalid("no NFSv4 minor version to try".into()));
        };
        let cb_sec = CbSecurity::default();
        let ask = SessionAsk { minor, slots: slots_wanted, max_request };
        let cs = create_session(&conn, &cb_sec, ask, eid.eir_clientid, eid.eir_sequenceid).await?;
        let granted = cs.csr_fore_chan_attrs.ca_maxrequests.max(1);
        let pnfs = (settings.v41.pnfs && eid.eir_flags & EXCHGID4_FLAG_USE_PNFS_MDS != 0).then(|| pnfs::Pnfs {
            params: params.clone(),
            machine: host.clone(),
            table: Default::default(),
            fetching: Default::default(),
            failed_device_hold: std::time::Duration::from_secs(settings.v41.pnfs_failed_device_secs),
        });
        let nfs = Arc::new_cyclic(|me| Nfs41 {
            conn,
            minor,
            owner,
            verifier,
            retry: settings.v41.retry.clone(),
            slots_wanted,
            want_delegations: settings.v41.delegations,
            read_plus: settings.v41.read_plus,
            session: Mutex::new(SessionState {
                clientid: eid.eir_clientid,
                sessionid: cs.csr_sessionid,
                create_seq: cs.csr_sequence.wrapping_add(1),
                lease: 90,
                generation: 0,
            }),
            slots: Mutex::new(SlotTable::new(granted)),
            slot_freed: Notify::new(),
            recovering: tokio::sync::Mutex::new(()),
            opens: Mutex::default(),
            delegations: Mutex::default(),
            remapped: Mutex::default(),
            lost: Mutex::default(),
            locks: Mutex::default(),
            local_locks: Mutex::default(),
            lock_gates: (0..super::locks::LOCK_GATES).map(|_| tokio::sync::Mutex::new(())).collect(),
            flush_hook: Default::default(),
            root: Mutex::new(Bytes::new()),
            offloads: Mutex::default(),
            cb_sec,
            me: me.clone(),
            counters: Mutex::new(Counters { sessions_created: 1, ..Default::default() }),
            pnfs,
            want_dir_delegations: settings.v41.dir_delegations,
            dir_delegations_refused: Default::default(),
            dir_notify_delay_ms: settings.v41.dir_notify_attr_delay_ms,
            dir_delegs: Mutex::new(client_core::v41::dirdelegs::DirDelegations::new(super::dirdeleg::ask_policy(
                &settings.v41,
            ))),
            dir_hooks: Default::default(),
            clock: tokio::time::Instant::now(),
            seen_status_flags: Default::default(),
        });
        tokio::spawn(callback::serve(Arc::downgrade(&nfs), cb_rx));
        nfs.reclaim_complete().await?;
        let (root, lease) = match nfs.lookup_export(export).await {
            Ok(found) => found,
            Err(e) => {
                // The session and client id go now, not at lease expiry
                // (the caller may mount over NFSv3 instead).
                nfs.shutdown().await;
                return Err(e);
            }
        };
        *nfs.root.lock() = root;
        nfs.session.lock().lease = lease.max(1);
        tokio::spawn(renew(Arc::downgrade(&nfs)));
        Ok(nfs)
    }

    pub(crate) async fn reclaim_complete(&self) -> Result<()> {
        let r = self.compound(vec![nfs_argop4::OP_RECLAIM_COMPLETE(RECLAIM_COMPLETE4args { rca_one_fs: false })]).await;
        match r {
            // A server that already has it (a retry after a lost reply).
            Err(Error::Nfs4 { status: nfsstat4::NFS4ERR_COMPLETE_ALREADY, .. }) => Ok(()),
            other => other.map(drop),
        }
    }

    /// The session of `generation` failed (BADSESSION, DEADSESSION,
    /// STALE_CLIENTID, EXPIRED): make a new one, and if the server lost
    /// this client too, a new client id and the opens reclaimed. Callers
    /// that saw the same failure wait for the first to finish.
    pub(crate) async fn recover(&self, generation: u64, status: nfsstat4) -> Result<()> {
        let _one = self.recovering.lock().await;
        if self.session.lock().generation != generation {
            return Ok(()); // someone else already did it
        }
        let (clientid, seq) = {
            let s = self.session.lock();
            (s.clientid, s.create_seq)
        };
        let ask = SessionAsk { minor: self.minor, slots: self.slots_wanted, max_request: 4 << 20 };
        let lost_client = matches!(status, nfsstat4::NFS4ERR_STALE_CLIENTID | nfsstat4::NFS4ERR_EXPIRED);
        let attempt = if lost_client {
            Err(Error::Nfs4 { op: "CREATE_SESSION", status })
        } else {
            create_session(&self.conn, &self.cb_sec, ask, clientid, seq).await
        };
        let (cs, clientid, reclaim) = match attempt {
            Ok(cs) => (cs, clientid, false),
            Err(Error::Nfs4 { status: nfsstat4::NFS4ERR_STALE_CLIENTID | nfsstat4::NFS4ERR_EXPIRED, .. }) => {
                tracing::info!("the server lost this client's state: establishing it again and reclaiming opens");
                let eid = exchange_id(&self.conn, self.minor, &self.owner, self.verifier).await?;
                let (id, seq) = (eid.eir_clientid, eid.eir_sequenceid);
                let cs = create_session(&self.conn, &self.cb_sec, ask, id, seq).await?;
                (cs, eid.eir_clientid, true)
            }
            Err(e) => return Err(e),
        };
        {
            // The session and its slot table change in one step, under
            // the table's lock (then the session's, the order compound.rs
            // takes them in): a slot is always of the session its request
            // names, and slots of the old session, whose requests may
            // still be out, stay out of the new table.
            let mut slots = self.slots.lock();
            let mut s = self.session.lock();
            s.clientid = clientid;
            s.sessionid = cs.csr_sessionid;
            s.create_seq = cs.csr_sequence.wrapping_add(1);
            s.generation += 1;
            slots.reset(cs.csr_fore_chan_attrs.ca_maxrequests.max(1));
        }
        self.slot_freed.notify_waiters();
        self.counters.lock().sessions_created += 1;
        if reclaim {
            // Delegations are not reclaimed: the caches they allowed are
            // checked again instead, and I/O under them goes on under the
            // file's open (or none).
            let dropped = self.delegations.lock().drain();
            self.dir_delegations_lost();
            self.reclaim_opens().await;
            for (fh, d) in dropped {
                let now = self.io_stateid(&fh, true);
                self.remapped.lock().insert(d.stateid.other, now);
            }
            self.reclaim_complete().await?;
        }
        Ok(())
    }

    /// Asks the server to send callbacks on this connection again (after
    /// a reconnect the server has no back channel: SEQ4_STATUS_CB_PATH_DOWN).
    pub(crate) async fn bind_back_channel(&self) {
        let sessionid = self.session.lock().sessionid;
        let r = plain_compound(
            &self.conn,
            self.minor,
            vec![nfs_argop4::OP_BIND_CONN_TO_SESSION(BIND_CONN_TO_SESSION4args {
                bctsa_sessid: sessionid,
                bctsa_dir: channel_dir_from_client4::CDFC4_FORE_OR_BOTH,
                bctsa_use_conn_in_rdma_mode: false,
            })],
        )
        .await;
        if let Err(e) = r {
            tracing::warn!("BIND_CONN_TO_SESSION failed: {e}");
        }
    }

    /// Lends the server the connection's newest RPCSEC_GSS context for
    /// callbacks (BACKCHANNEL_CTL, RFC 8881 section 18.33, AUTH_NONE
    /// after it as in CREATE_SESSION), once at a time. For
    /// [`CbRefresh::Expiring`] a context newer than the one lent is set up
    /// first if there is none. Nothing is lent to a server that did not
    /// take the first offer.
    pub(crate) async fn refresh_back_channel(&self, mut why: CbRefresh) {
        let Ok(_one) = self.cb_sec.updating.try_lock() else { return };
        // A context set up while one was being lent is lent in turn; a
        // few rounds are plenty, as set-ups are rare.
        for _ in 0..3 {
            if !self.cb_sec.lent() {
                return;
            }
            let lent = self.cb_sec.generation();
            if why == CbRefresh::Expiring {
                if let Err(e) = self.conn.gss_setup(NFS4_PROGRAM, NFS_V4, lent).await {
                    tracing::warn!("could not set up an RPCSEC_GSS context to lend for callbacks: {e}");
                    return;
                }
            }
            let Some(back) = self.conn.back_context() else { return };
            if back.generation <= lent {
                return;
            }
            let offer = self.cb_sec.offer(&back);
            let args = BACKCHANNEL_CTL4args {
                bca_cb_program: CB_PROGRAM,
                bca_sec_parms: vec![offer.parms.clone(), callback_sec_parms4::AUTH_NONE],
            };
            match self.compound(vec![nfs_argop4::OP_BACKCHANNEL_CTL(args)]).await {
                Ok(_) => {
                    self.cb_sec.taken(&offer);
                    tracing::debug!(generation = back.generation, "RPCSEC_GSS context lent for callbacks");
                }
                Err(e) => {
                    let unsupported = matches!(
                        e,
                        Error::Nfs4 { status: nfsstat4::NFS4ERR_NOTSUPP | nfsstat4::NFS4ERR_OP_ILLEGAL, .. }
                    );
                    self.cb_sec.refused(&offer, !unsupported);
                    tracing::warn!("BACKCHANNEL_CTL with a new RPCSEC_GSS context failed: {e}");
                    return;
                }
            }
            why = CbRefresh::NewContext;
        }
    }

    /// Ends the session and the client's state on the server (unmount).
    pub async fn shutdown(&self) {
        self.return_all_dir_delegations().await;
        self.return_all_delegations().await;
        let (sessionid, clientid) = {
            let s = self.session.lock();
            (s.sessionid, s.clientid)
        };
        let _ = plain_compound(
            &self.conn,
            self.minor,
            vec![nfs_argop4::OP_DESTROY_SESSION(DESTROY_SESSION4args { dsa_sessionid: sessionid })],
        )
        .await;
        let _ = plain_compound(
            &self.conn,
            self.minor,
            vec![nfs_argop4::OP_DESTROY_CLIENTID(DESTROY_CLIENTID4args { dca_clientid: clientid })],
        )
        .await;
    }
}

/// Keeps the lease: a SEQUENCE-only compound when a third of the lease
/// passed without one (any request renews it, RFC 8881 section 8.3).
async fn renew(nfs: std::sync::Weak<Nfs41>) {
    loop {
        let lease = match nfs.upgrade() {
            Some(n) => n.session.lock().lease,
            None => return,
        };
        tokio::time::sleep(Duration::from_secs(u64::from(lease).div_ceil(3).max(1))).await;
        let Some(n) = nfs.upgrade() else { return };
        if let Err(e) = n.compound(vec![]).await {
            tracing::warn!("lease renewal failed: {e}");
        }
        drop(n);
    }
}
