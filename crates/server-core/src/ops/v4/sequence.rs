//! SEQUENCE (RFC 8881 section 18.46): claims a session slot for the
//! compound, replays cached replies, and caches the new one.

use bytes::Bytes;
use proto::nfs4::*;

use std::time::Duration;

use super::compound::SeqCtx;
use super::Compound;
use crate::state::sessions::{digest, Cached};

/// What SEQUENCE at the head of a compound decided.
pub(super) enum Begin {
    /// Run the rest of the compound; `cx.seq` is set.
    Run(SEQUENCE4resok),
    /// A retransmission: send this cached reply body again.
    Replay(Vec<Bytes>),
    Fail(nfsstat4),
}

/// `raw` is the whole COMPOUND argument as received, for telling a
/// retransmission from a different request on the same slot.
pub(super) fn begin(cx: &mut Compound, args: &SEQUENCE4args, raw: &Bytes) -> Begin {
    match claim(cx, args, raw) {
        Ok(Ok(res)) => Begin::Run(res),
        Ok(Err(body)) => Begin::Replay(body),
        Err(s) => Begin::Fail(s),
    }
}

/// `Ok(Ok)`: run; `Ok(Err(body))`: replay. Touches only the session
/// (under its own lock) and the client's lease: no table lock, except
/// once every `clients::SWEEP_EVERY` to tidy the client table.
#[allow(clippy::type_complexity)]
fn claim(cx: &mut Compound, args: &SEQUENCE4args, raw: &Bytes) -> Result<Result<SEQUENCE4resok, Vec<Bytes>>, nfsstat4> {
    let st = cx.state();
    let now = st.now();
    st.tidy_if_due();
    let d = digest(raw);
    let sid = args.sa_sessionid;
    let cell = st.sessions.get(&sid).ok_or(nfsstat4::NFS4ERR_BADSESSION)?;
    let mut s = cell.lock();
    // The client expired or was destroyed (its sessions leave the table
    // at the next tidy), or the session was destroyed after we found it.
    if s.destroyed || s.lease.is_gone() {
        return Err(nfsstat4::NFS4ERR_BADSESSION);
    }
    let client = s.client;
    let slotid = args.sa_slotid;
    if slotid as usize >= s.slots.len() {
        return Err(nfsstat4::NFS4ERR_BADSLOT);
    }
    let slot = &mut s.slots[slotid as usize];
    if args.sa_sequenceid == slot.seqid {
        if slot.busy {
            return Err(nfsstat4::NFS4ERR_DELAY);
        }
        return match &slot.cached {
            Cached::Initial => Err(nfsstat4::NFS4ERR_SEQ_MISORDERED),
            _ if slot.digest != d => Err(nfsstat4::NFS4ERR_SEQ_FALSE_RETRY),
            Cached::Reply(body) => Ok(Err(body.clone())),
            Cached::Uncached => Err(nfsstat4::NFS4ERR_RETRY_UNCACHED_REP),
        };
    }
    if args.sa_sequenceid != slot.seqid.wrapping_add(1) || slot.busy {
        return Err(nfsstat4::NFS4ERR_SEQ_MISORDERED);
    }
    if cx.op_count > s.fore.ca_maxoperations as usize {
        return Err(nfsstat4::NFS4ERR_TOO_MANY_OPS);
    }
    if raw.len() > s.fore.ca_maxrequestsize as usize {
        return Err(nfsstat4::NFS4ERR_REQ_TOO_BIG);
    }
    let slot = &mut s.slots[slotid as usize];
    slot.seqid = args.sa_sequenceid;
    slot.digest = d;
    slot.cached = Cached::Uncached;
    s.set_busy(slotid as usize, true);
    let in_use = s.busy_slots().max(args.sa_highest_slotid.saturating_add(1));
    s.adjust_target(now, in_use);
    s.lease.renew(now);
    let mut flags = s.lease.status_flags();
    if !s.lease.path_up() {
        flags |= SEQ4_STATUS_CB_PATH_DOWN;
    }
    if !s.back_bound() {
        flags |= SEQ4_STATUS_CB_PATH_DOWN_SESSION;
    }
    flags |= crate::state::cb_sec::status_flags(&s.cb_sec, now, Duration::from_secs(st.settings.lease_secs.into()));
    cx.seq = Some(SeqCtx {
        sessionid: sid,
        slotid,
        clientid: client,
        cachethis: args.sa_cachethis,
        max_response: s.fore.ca_maxresponsesize,
        max_cached: s.fore.ca_maxresponsesize_cached,
    });
    Ok(Ok(SEQUENCE4resok {
        sr_sessionid: sid,
        sr_sequenceid: args.sa_sequenceid,
        sr_slotid: slotid,
        sr_highest_slotid: s.slots.len() as u32 - 1,
        sr_target_highest_slotid: s.target - 1,
        sr_status_flags: flags,
    }))
}

/// Stores the reply body in the slot and releases it.
pub(super) fn finish(cx: &Compound, body: &[Bytes]) {
    let Some(seq) = &cx.seq else { return };
    let Some(cell) = cx.state().sessions.get(&seq.sessionid) else { return };
    let mut s = cell.lock();
    let len: usize = body.iter().map(|b| b.len()).sum();
    s.set_busy(seq.slotid as usize, false);
    let Some(slot) = s.slots.get_mut(seq.slotid as usize) else { return };
    slot.cached =
        if seq.cachethis && len <= seq.max_cached as usize { Cached::Reply(body.to_vec()) } else { Cached::Uncached };
}

/// SEQUENCE anywhere but first (the dispatcher answers that before
/// decoding; this is the table's entry for completeness).
pub(super) fn run(cx: &mut Compound, args: SEQUENCE4args) -> Result<SEQUENCE4resok, nfsstat4> {
    let _ = (cx, args);
    Err(nfsstat4::NFS4ERR_SEQUENCE_POS)
}
