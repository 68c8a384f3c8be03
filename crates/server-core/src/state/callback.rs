//! The callback program over the back channel: CB_NULL, CB_SEQUENCE,
//! CB_RECALL, CB_GETATTR, CB_OFFLOAD.

use std::sync::Arc;

use bytes::Bytes;
use proto::nfs4::*;
use proto::rpc::{reply_body, reply_data};
use xdr::{Decode, Decoder, Encode, Encoder};

use parking_lot::Mutex;

use super::cb_sec;
use super::sessions::{BackChannel, CbSlot, CbState, Session, MAX_QUEUED_RECALLS};
use super::{State4, Tables};
use crate::gss::backchannel::CbReplyCheck;
use crate::park::{HolderAnswer, WaitId};
use crate::Core;

/// The callback program's version (RFC 8881 section 20).
const CB_VERSION: u32 = 1;

/// A callback sent and not yet answered.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    pub session: sessionid4,
    pub client: u64,
    /// The back-channel slot of a CB_COMPOUND; `None` for CB_NULL.
    pub slot: Option<u32>,
    /// The call parked for a CB_GETATTR's answer.
    pub getattr: Option<WaitId>,
    /// The delegation a CB_RECALL recalls.
    pub recall: Option<stateid4>,
    /// The directory delegations its CB_NOTIFYs tell of changes, in the
    /// order of their operations (after CB_SEQUENCE).
    pub notify: Vec<[u8; 12]>,
    /// What its reply must pass when it went under RPCSEC_GSS.
    pub gss: Option<CbReplyCheck>,
}

/// Size and change from a CB_GETATTR reply's attributes (the two asked
/// for; fattr4 lists values in attribute-number order).
fn size_and_change(f: &fattr4) -> Option<(u64, u64)> {
    let has = |n: u32| proto::bitmap4::has(&f.attrmask, n);
    if !has(FATTR4_CHANGE) || !has(FATTR4_SIZE) {
        return None;
    }
    let mut d = Decoder::new(f.attr_vals.clone());
    let change = d.u64().ok()?;
    let size = d.u64().ok()?;
    Some((size, change))
}

/// Sends callback `proc_` on `s`'s back channel, under the first flavor
/// the client offered that is still usable; `None` when none is or the
/// connection is gone, else what its reply must pass under RPCSEC_GSS.
fn send_record(st: &State4, s: &mut Session, xid: u32, proc_: u32, args: Vec<Bytes>) -> Option<Option<CbReplyCheck>> {
    let bc = s.backchannel.as_ref()?;
    let (program, conn) = (bc.program, bc.conn);
    let (record, gss) = cb_sec::call_record(&mut s.cb_sec, st.now(), xid, program, CB_VERSION, proc_, args)?;
    st.backchannel.send(conn, record).then_some(gss)
}

/// Binds connection `conn` as `session`'s back channel (replacing any
/// earlier one) and probes it with CB_NULL. False when the client gave no
/// security flavour we can use.
pub(super) fn bind(st: &State4, t: &mut Tables, session: &sessionid4, conn: u64) -> bool {
    let max_cb = st.settings.max_cb_slots;
    let Some(cell) = st.sessions.get(session) else { return false };
    let client = {
        let mut s = cell.lock();
        if !cb_sec::any_usable(&s.cb_sec, st.now()) {
            return false;
        }
        let slots = s.back.ca_maxrequests.clamp(1, max_cb);
        let queue = s.backchannel.take().map(|b| b.queue).unwrap_or_default();
        s.backchannel = Some(BackChannel {
            conn,
            program: s.cb_program,
            state: CbState::Unknown,
            slots: vec![CbSlot::default(); slots as usize],
            max_ops: s.back.ca_maxoperations,
            max_request: s.back.ca_maxrequestsize,
            queue,
        });
        s.client
    };
    t.callbacks.pending.retain(|_, p| p.session != *session);
    probe(st, t, session);
    refresh_path(st, t, client);
    true
}

/// Sends CB_NULL on `session`'s back channel.
pub(super) fn probe(st: &State4, t: &mut Tables, session: &sessionid4) {
    let xid = t.callbacks.next_xid();
    let Some(cell) = st.sessions.get(session) else { return };
    let mut s = cell.lock();
    let client = s.client;
    let Some(conn) = s.backchannel.as_ref().map(|bc| bc.conn) else { return };
    if let Some(gss) = send_record(st, &mut s, xid, CB_NULL, Vec::new()) {
        t.callbacks.pending.insert(
            (conn, xid),
            Pending { session: *session, client, slot: None, getattr: None, recall: None, notify: Vec::new(), gss },
        );
    } else {
        if let Some(bc) = s.backchannel.as_mut() {
            bc.state = CbState::Down;
        }
        drop(s);
        refresh_path(st, t, client);
    }
}

/// Encodes CB_COMPOUND { CB_SEQUENCE, `ops` } for slot `slot` of session
/// `s` (locked by the caller) and sends it. False if the connection is
/// gone: the back channel is then marked down, and the caller, once it
/// lets go of the session, calls [`refresh_path`].
fn send_cb(
    st: &State4,
    t: &mut Tables,
    s: &mut Session,
    slot: u32,
    ops: Vec<nfs_cb_argop4>,
    getattr: Option<WaitId>,
) -> bool {
    let xid = t.callbacks.next_xid();
    let (session, client) = (s.id, s.client);
    // The minor version the client ID was created with (RFC 8881
    // section 20.2.3).
    let minorversion = t.clients.get(client).map_or(1, |c| c.minor.max(1));
    let Some(bc) = s.backchannel.as_mut() else { return false };
    let i = slot as usize;
    let seqid = bc.slots[i].seqid.wrapping_add(1);
    let highest = bc.slots.iter().enumerate().filter(|(j, x)| x.busy.is_some() || *j == i).map(|(j, _)| j).max();
    let args = CB_COMPOUND4args {
        tag: Bytes::new(),
        minorversion,
        callback_ident: 0,
        argarray: vec![nfs_cb_argop4::OP_CB_SEQUENCE(CB_SEQUENCE4args {
            csa_sessionid: session,
            csa_sequenceid: seqid,
            csa_slotid: slot,
            csa_highest_slotid: highest.unwrap_or(i) as u32,
            csa_cachethis: false,
            csa_referring_call_lists: vec![],
        })]
        .into_iter()
        .chain(ops)
        .collect(),
    };
    let conn = bc.conn;
    let mut e = Encoder::with_capacity(256);
    args.encode(&mut e);
    let Some(gss) = send_record(st, s, xid, CB_COMPOUND, e.into_segments()) else {
        if let Some(bc) = s.backchannel.as_mut() {
            bc.state = CbState::Down;
        }
        return false;
    };
    let Some(bc) = s.backchannel.as_mut() else { return false };
    bc.slots[i].seqid = seqid;
    bc.slots[i].busy = Some(xid);
    let recall = match args.argarray.get(1) {
        Some(nfs_cb_argop4::OP_CB_RECALL(r)) => Some(r.stateid.clone()),
        _ => None,
    };
    let notify = args
        .argarray
        .iter()
        .filter_map(|op| match op {
            nfs_cb_argop4::OP_CB_NOTIFY(n) => Some(n.cna_stateid.other),
            _ => None,
        })
        .collect();
    t.callbacks
        .pending
        .insert((conn, xid), Pending { session, client, slot: Some(slot), getattr, recall, notify, gss });
    true
}

/// A reply record that arrived on connection `conn` (a client answering
/// one of our callbacks); `body` starts after the xid and message type.
/// Returns `None` when it matched no outstanding callback, else the
/// parked calls it answered and the reply's label for the metrics (one
/// of its own for a callback under RPCSEC_GSS).
pub(crate) fn on_reply(core: &Core, conn: u64, xid: u32, body: Decoder) -> Option<(Vec<WaitId>, &'static str)> {
    let mut label = "nfs4.cb_reply";
    let mut unwatch = Vec::new();
    let woken = answered(core, conn, xid, body, &mut label, &mut unwatch);
    core.stop_watches(unwatch);
    // An answered CB_NOTIFY lets the next one of its delegation go.
    core.dir_notify_flush();
    Some((woken?, label))
}

fn answered(
    core: &Core,
    conn: u64,
    xid: u32,
    mut body: Decoder,
    label: &mut &'static str,
    unwatch: &mut Vec<super::Unwatch>,
) -> Option<Vec<WaitId>> {
    let st = &core.v4;
    let mut guard = st.lock_tables();
    let t = &mut *guard;
    let p = t.callbacks.pending.remove(&(conn, xid))?;
    if p.gss.is_some() {
        *label = "nfs4.cb_reply.rpcsec_gss";
    }
    let mut woken = Vec::new();
    // The results, when the call was accepted and ran (and, under
    // RPCSEC_GSS, the reply verifies); else the back channel is down.
    let results = match reply_body::decode(&mut body) {
        Ok(reply_body::MSG_ACCEPTED(a)) if matches!(a.reply_data, reply_data::SUCCESS) => match &p.gss {
            None => Some(body.rest()),
            Some(check) => check
                .open(&a.verf, body.rest())
                .inspect_err(|e| {
                    tracing::warn!(
                        client = format_args!("{:#x}", p.client),
                        xid,
                        "callback reply under RPCSEC_GSS refused: {e}"
                    )
                })
                .ok(),
        },
        _ => None,
    };
    let accepted = results.is_some();
    let compound = match results {
        Some(r) if p.slot.is_some() => CB_COMPOUND4res::decode(&mut Decoder::new(r)).ok(),
        _ => None,
    };
    if let Some(w) = p.getattr {
        let answer = compound.as_ref().and_then(|r| match r.resarray.get(1) {
            Some(nfs_cb_resop4::OP_CB_GETATTR(CB_GETATTR4res::NFS4_OK(ok))) => size_and_change(&ok.obj_attributes),
            _ => None,
        });
        let answer = answer.map_or(HolderAnswer::CannotTell, |(size, change)| HolderAnswer::Attrs { size, change });
        if t.callbacks.answer(w, answer) {
            woken.push(w);
        }
    }
    if let (Some(recalled), Some(r)) = (&p.recall, &compound) {
        recall_answered(t, recalled, r);
    }
    for (i, other) in p.notify.iter().enumerate() {
        // An operation after one that failed did not run: its changes
        // were not taken.
        let ok = matches!(
            compound.as_ref().and_then(|r| r.resarray.get(1 + i)),
            Some(nfs_cb_resop4::OP_CB_NOTIFY(CB_NOTIFY4res { cnr_status: nfsstat4::NFS4_OK }))
        );
        if !t.dir_delegs.answered(other, ok) {
            tracing::info!(
                client = format_args!("{:#x}", p.client),
                "CB_NOTIFY refused: directory delegation recalled"
            );
            super::api::dir_delegations::recall(st, t, other, super::dir_delegs::RecallCause::Refused, unwatch);
        }
    }
    let Some(cell) = st.sessions.get(&p.session) else { return Some(woken) };
    let mut s = cell.lock();
    let Some(bc) = s.backchannel.as_mut() else { return Some(woken) };
    match p.slot {
        None => {
            bc.state = if accepted { CbState::Up } else { CbState::Down };
            if !accepted {
                tracing::info!(client = format_args!("{:#x}", p.client), "NFSv4.1 back channel probe failed");
            }
        }
        Some(slot) => {
            let i = slot as usize;
            if i < bc.slots.len() && bc.slots[i].busy == Some(xid) {
                bc.slots[i].busy = None;
            }
            match compound {
                Some(r) => {
                    let seq_ok =
                        matches!(r.resarray.first(), Some(nfs_cb_resop4::OP_CB_SEQUENCE(CB_SEQUENCE4res::NFS4_OK(_))));
                    if !seq_ok && i < bc.slots.len() {
                        // The client did not take the sequence id.
                        bc.slots[i].seqid = bc.slots[i].seqid.wrapping_sub(1);
                    }
                    if r.status == nfsstat4::NFS4_OK || seq_ok {
                        bc.state = CbState::Up;
                    } else {
                        tracing::info!(client = format_args!("{:#x}", p.client), status = ?r.status, "NFSv4.1 callback refused; back channel marked down");
                        bc.state = CbState::Down;
                    }
                }
                None => bc.state = CbState::Down,
            }
        }
    }
    if bc.state == CbState::Down {
        bc.queue.clear();
    } else if let Some(slot) = bc.slots.iter().position(|x| x.busy.is_none()) {
        // A slot came free: send the next queued callback.
        if let Some(ops) = bc.queue.pop_front() {
            send_cb(st, t, &mut s, slot as u32, ops, None);
        }
    }
    drop(s);
    refresh_path(st, t, p.client);
    Some(woken)
}

/// A CB_RECALL of `stateid` was answered `res`: a holder that says it does
/// not hold the delegation (BADHANDLE, BAD_STATEID), or asks to be asked
/// again (DELAY), may not have seen the OPEN reply granting it yet, which
/// the recall can overtake (RFC 8881 section 2.10.6.3): the delegation is
/// recalled again at the next look, within the first recall's deadline.
fn recall_answered(t: &mut Tables, stateid: &stateid4, res: &CB_COMPOUND4res) {
    let status = match res.resarray.get(1) {
        Some(nfs_cb_resop4::OP_CB_RECALL(r)) => r.status,
        // CB_SEQUENCE itself refused, e.g. DELAY while a referring call is
        // in progress.
        None => res.status,
        Some(_) => return,
    };
    if !matches!(status, nfsstat4::NFS4ERR_DELAY | nfsstat4::NFS4ERR_BADHANDLE | nfsstat4::NFS4ERR_BAD_STATEID) {
        return;
    }
    t.stateids.update_deleg(&stateid.other, |d| d.recall_again = true);
}

/// Sends CB_RECALL for delegation `stateid` on `fh` to `client` over one
/// of its sessions' back channels. False when the client has no usable
/// back channel (the caller then treats the delegation as unrecallable
/// and revokes it once the lease passes).
pub(super) fn recall(st: &State4, t: &mut Tables, client: u64, stateid: &stateid4, fh: &nfs_fh4) -> bool {
    let op = nfs_cb_argop4::OP_CB_RECALL(CB_RECALL4args { stateid: stateid.clone(), truncate: false, fh: fh.clone() });
    send_to_client(st, t, client, op)
}

/// Sends CB_LAYOUTRECALL of `client`'s layout `stateid` of `fh` (RFC 8881
/// section 20.3): the file was truncated or removed. False when the client
/// has no usable back channel.
pub(super) fn layout_recall(st: &State4, t: &mut Tables, client: u64, stateid: &stateid4, fh: &nfs_fh4) -> bool {
    let op = nfs_cb_argop4::OP_CB_LAYOUTRECALL(CB_LAYOUTRECALL4args {
        clora_type: layouttype4::LAYOUT4_FLEX_FILES,
        clora_iomode: layoutiomode4::LAYOUTIOMODE4_ANY,
        clora_changed: true,
        clora_recall: layoutrecall4::LAYOUTRECALL4_FILE(layoutrecall_file4 {
            lor_fh: fh.clone(),
            lor_offset: 0,
            lor_length: u64::MAX,
            lor_stateid: stateid.clone(),
        }),
    });
    send_to_client(st, t, client, op)
}

/// Sends CB_OFFLOAD (the end of an asynchronous COPY, RFC 7862 section
/// 16.1) to `client`. False when it has no usable back channel; the
/// client then learns the result through OFFLOAD_STATUS.
pub(super) fn offload(st: &State4, t: &mut Tables, client: u64, args: CB_OFFLOAD4args) -> bool {
    send_to_client(st, t, client, nfs_cb_argop4::OP_CB_OFFLOAD(args))
}

/// Sends CB_NOTIFYs (RFC 8881 section 20.4) of directory delegations'
/// changes to their holder, in one CB_COMPOUND, queued behind the
/// callbacks out when every slot is busy. False when the client has no
/// usable back channel.
pub(super) fn notify(st: &State4, t: &mut Tables, client: u64, args: Vec<CB_NOTIFY4args>) -> bool {
    send_ops_to_client(st, t, client, args.into_iter().map(nfs_cb_argop4::OP_CB_NOTIFY).collect())
}

/// How many operations after CB_SEQUENCE, and how many bytes, one
/// CB_COMPOUND to `client` may carry: what its back channel said it
/// takes (the smallest over its sessions that could carry it).
pub(super) fn compound_room(st: &State4, client: u64) -> (usize, usize) {
    match backchannel_of(st, client) {
        Some(cell) => {
            let s = cell.lock();
            s.backchannel
                .as_ref()
                .map_or((1, 0), |bc| ((bc.max_ops.saturating_sub(1) as usize).max(1), bc.max_request as usize))
        }
        None => (1, 0),
    }
}

/// Sends CB_RECALLABLE_OBJ_AVAIL (RFC 8881 section 20.7): a client
/// declined a delegation for a limit, that asked to be told, may have one
/// now. Nothing is lost if it cannot be told: it asks again when it wants.
pub(super) fn objects_available(st: &State4, t: &mut Tables, client: u64, args: CB_RECALLABLE_OBJ_AVAIL4args) {
    send_to_client(st, t, client, nfs_cb_argop4::OP_CB_RECALLABLE_OBJ_AVAIL(args));
}

/// Sends CB_GETATTR for the size and change of `fh` to the holder of its
/// write delegation; the answer goes to parked call `waiter`. False when no back
/// channel of the client has a free slot (no queueing: the GETATTR
/// waiting on it would time out anyway).
pub(super) fn getattr(st: &State4, t: &mut Tables, client: u64, fh: &nfs_fh4, waiter: WaitId) -> bool {
    let mut attr_request = Vec::new();
    proto::bitmap4::add(&mut attr_request, FATTR4_CHANGE);
    proto::bitmap4::add(&mut attr_request, FATTR4_SIZE);
    let op = nfs_cb_argop4::OP_CB_GETATTR(CB_GETATTR4args { fh: fh.clone(), attr_request });
    let Some(cell) = backchannel_of(st, client) else { return false };
    let mut s = cell.lock();
    let Some(slot) = s.backchannel.as_ref().and_then(|bc| bc.slots.iter().position(|x| x.busy.is_none())) else {
        return false;
    };
    let sent = send_cb(st, t, &mut s, slot as u32, vec![op], Some(waiter));
    drop(s);
    if !sent {
        refresh_path(st, t, client);
    }
    sent
}

/// The session whose back channel callbacks to `client` go on: one that
/// answered, else one not yet probed.
fn backchannel_of(st: &State4, client: u64) -> Option<Arc<Mutex<Session>>> {
    let mut candidates: Vec<(u8, sessionid4, Arc<Mutex<Session>>)> = st
        .sessions
        .of_client(client)
        .into_iter()
        .filter_map(|cell| {
            let s = cell.lock();
            let bc = s.backchannel.as_ref()?;
            if bc.max_ops < 2 {
                return None;
            }
            let rank = match bc.state {
                CbState::Up => 0,
                CbState::Unknown => 1,
                CbState::Down => return None,
            };
            let id = s.id;
            drop(s);
            Some((rank, id, cell))
        })
        .collect();
    candidates.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    candidates.into_iter().next().map(|(_, _, cell)| cell)
}

/// Sends `op` behind a CB_SEQUENCE over one of `client`'s back channels,
/// or queues it there while every slot is busy.
fn send_to_client(st: &State4, t: &mut Tables, client: u64, op: nfs_cb_argop4) -> bool {
    send_ops_to_client(st, t, client, vec![op])
}

/// [`send_to_client`] of several operations in one CB_COMPOUND.
fn send_ops_to_client(st: &State4, t: &mut Tables, client: u64, ops: Vec<nfs_cb_argop4>) -> bool {
    loop {
        let Some(cell) = backchannel_of(st, client) else { return false };
        let mut s = cell.lock();
        let Some(bc) = s.backchannel.as_mut() else { return false };
        match bc.slots.iter().position(|x| x.busy.is_none()) {
            Some(slot) => {
                if send_cb(st, t, &mut s, slot as u32, ops.clone(), None) {
                    return true;
                }
                // That connection is gone (marked down): try another.
                drop(s);
                refresh_path(st, t, client);
            }
            None => {
                if bc.queue.len() >= MAX_QUEUED_RECALLS {
                    return false;
                }
                tracing::debug!(
                    client = format_args!("{client:#x}"),
                    queued = bc.queue.len() + 1,
                    "callback queued: every back-channel slot busy"
                );
                bc.queue.push_back(ops);
                return true;
            }
        }
    }
}

/// Whether `client` has a back channel that answered (CB_PATH_DOWN
/// otherwise); delegations are only granted to such clients.
pub(crate) fn has_backchannel(st: &State4, client: u64) -> bool {
    st.sessions
        .of_client(client)
        .iter()
        .any(|cell| cell.lock().backchannel.as_ref().is_some_and(|b| b.state == CbState::Up))
}

/// Records in `client`'s lease whether it has any back channel not known
/// to be down (SEQUENCE's SEQ4_STATUS_CB_PATH_DOWN), after a back
/// channel was bound, answered, failed or went with its session. Call
/// holding no session's lock.
pub(super) fn refresh_path(st: &State4, t: &Tables, client: u64) {
    let Some(c) = t.clients.get(client) else { return };
    let up = st.sessions.of_client(client).iter().any(|cell| cell.lock().back_bound());
    c.lease.set_path_up(up);
}

/// Connection `conn` closed: the back channels bound to it are down at
/// once, rather than at the first callback that fails on it, so that
/// their clients' next SEQUENCE says SEQ4_STATUS_CB_PATH_DOWN and they
/// bind a new connection (BIND_CONN_TO_SESSION, RFC 8881 section
/// 2.10.3.1) before a recall needs it; callbacks sent on it will not be
/// answered.
///
/// A directory delegation whose CB_NOTIFY was out on it is revoked: the
/// changes it told are lost, and its holder cannot know which (it learns
/// of the revocation at its next SEQUENCE). The watches no delegation
/// uses any more are returned, for the caller to stop.
pub(crate) fn connection_closed(st: &State4, conn: u64) -> Vec<super::Unwatch> {
    let mut t = st.lock_tables();
    let lost: Vec<[u8; 12]> = t
        .callbacks
        .pending
        .iter()
        .filter(|((c, _), _)| *c == conn)
        .flat_map(|(_, p)| p.notify.iter().copied())
        .collect();
    t.callbacks.pending.retain(|(c, _), _| *c != conn);
    let mut unwatch = Vec::new();
    for other in lost {
        tracing::info!("connection closed with a CB_NOTIFY out: directory delegation revoked");
        t.dir_delegs.count_recall(super::dir_delegs::RecallCause::BackchannelLost);
        super::delegations::revoke(&mut t, &other);
        unwatch.extend(t.dir_delegs.remove(&other));
    }
    let mut clients = Vec::new();
    for cell in st.sessions.all() {
        let mut s = cell.lock();
        let client = s.client;
        let Some(bc) = s.backchannel.as_mut().filter(|bc| bc.conn == conn) else { continue };
        bc.state = CbState::Down;
        bc.queue.clear();
        for slot in &mut bc.slots {
            slot.busy = None;
        }
        clients.push(client);
    }
    clients.sort_unstable();
    clients.dedup();
    for c in clients {
        refresh_path(st, &t, c);
    }
    unwatch
}

/// What parked call `wait` waited for; [`HolderAnswer::NoAnswer`] when
/// the answer did not come (in time). The wait ends with it.
pub(crate) fn take_answer(st: &State4, wait: WaitId) -> HolderAnswer {
    st.lock_tables().callbacks.waits.remove(&wait).flatten().unwrap_or(HolderAnswer::NoAnswer)
}

/// Callbacks sent and not answered, by (connection, xid), and the xid
/// counter; the answers that parked calls wait for.
#[derive(Debug, Default)]
pub(crate) struct Callbacks {
    pub pending: std::collections::HashMap<(u64, u32), Pending>,
    xid: u32,
    /// Every parked call's answer, `None` until it comes; an entry lives
    /// from the call's parking to its resumption, which the transport
    /// always makes (at the latest when its timeout passes).
    waits: std::collections::HashMap<WaitId, Option<HolderAnswer>>,
    next_wait: u64,
}

impl Callbacks {
    /// A new wait for a callback's answer.
    pub fn new_wait(&mut self) -> WaitId {
        self.next_wait += 1;
        let w = WaitId(self.next_wait);
        self.waits.insert(w, None);
        w
    }

    /// Ends a wait whose callback could not be sent.
    pub fn forget_wait(&mut self, wait: WaitId) {
        self.waits.remove(&wait);
    }

    /// Records the answer of `wait`; false when nobody waits for it any
    /// more (resumed without it).
    fn answer(&mut self, wait: WaitId, answer: HolderAnswer) -> bool {
        match self.waits.get_mut(&wait) {
            Some(slot @ None) => {
                *slot = Some(answer);
                true
            }
            _ => false,
        }
    }

    pub fn next_xid(&mut self) -> u32 {
        self.xid = self.xid.wrapping_add(1);
        if self.xid == 0 {
            self.xid = 1;
        }
        self.xid
    }
}
