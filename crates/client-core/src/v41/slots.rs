//! The fore channel's slot table (RFC 8881 section 2.10.6): which slot a
//! request goes on, the sequence id it carries, and how the table follows
//! the server's `sr_highest_slotid` and `sr_target_highest_slotid`.
//!
//! Chen et al. (2015) saw clients starve at 32 threads on a fixed slot
//! count; here the usable slots track what the server says it can take,
//! up to what CREATE_SESSION granted, and callers wait for a slot rather
//! than fail.

/// A slot taken for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub id: u32,
    pub seqid: u32,
    /// The `sa_highest_slotid` to send: the highest slot in use now.
    pub highest: u32,
}

/// How the request on a slot ended, as far as the slot is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotOutcome {
    /// SEQUENCE succeeded (whatever the rest of the compound did): the
    /// sequence id is used, and these are the server's current limits.
    Done { highest_slotid: u32, target_highest_slotid: u32 },
    /// SEQUENCE itself failed with NFS4ERR_SEQ_MISORDERED: the server
    /// did not execute the request and expects another sequence id.
    Misordered,
    /// The request was not executed (any other SEQUENCE error, or the
    /// server was never reached): the sequence id is not used.
    NotExecuted,
    /// SEQUENCE failed with NFS4ERR_RETRY_UNCACHED_REP or
    /// NFS4ERR_SEQ_FALSE_RETRY: the server executed a request with this
    /// sequence id (an earlier send of this one whose reply was lost, or
    /// another), so the id is used; the request goes again with the next.
    Used,
    /// No reply came (the connection broke or the call timed out): the
    /// server may or may not have executed it (RFC 8881 section
    /// 2.10.6.2). The next request assumes it was; a SEQ_MISORDERED
    /// answer to that one says it was not, and the slot steps back.
    Unknown,
}

#[derive(Debug, Clone)]
struct SlotState {
    /// The sequence id of the last request the server executed here.
    seqid: u32,
    busy: bool,
    /// SEQ_MISORDERED answers in a row on this slot.
    misordered: u32,
    /// The last request here got no reply: the server may not have
    /// executed it, and `seqid` may be one ahead of the server's.
    uncertain: bool,
}

#[derive(Debug, Clone)]
pub struct SlotTable {
    slots: Vec<SlotState>,
    /// The server's `sr_target_highest_slotid`: slots above it are not
    /// taken for new requests.
    target: u32,
}

impl SlotTable {
    /// A table of `granted` slots (CREATE_SESSION's `ca_maxrequests`).
    pub fn new(granted: u32) -> SlotTable {
        let n = granted.max(1);
        SlotTable {
            slots: vec![SlotState { seqid: 0, busy: false, misordered: 0, uncertain: false }; n as usize],
            target: n - 1,
        }
    }

    /// Slots CREATE_SESSION granted.
    pub fn size(&self) -> u32 {
        self.slots.len() as u32
    }

    /// The highest slot id new requests may use now.
    pub fn target(&self) -> u32 {
        self.target
    }

    pub fn in_use(&self) -> usize {
        self.slots.iter().filter(|s| s.busy).count()
    }

    /// The lowest free slot at or below the target, or None while all
    /// those are busy.
    pub fn acquire(&mut self) -> Option<Slot> {
        let limit = (self.target as usize).min(self.slots.len() - 1);
        let (id, s) = self.slots.iter_mut().enumerate().take(limit + 1).find(|(_, s)| !s.busy)?;
        s.busy = true;
        let seqid = s.seqid.wrapping_add(1);
        let highest = self.slots.iter().rposition(|s| s.busy).unwrap_or(id) as u32;
        Some(Slot { id: id as u32, seqid, highest })
    }

    /// Gives the slot back after its request ended with `outcome`.
    pub fn release(&mut self, slot: Slot, outcome: SlotOutcome) {
        let Some(s) = self.slots.get_mut(slot.id as usize) else { return };
        s.busy = false;
        match outcome {
            SlotOutcome::Done { highest_slotid, target_highest_slotid } => {
                s.seqid = slot.seqid;
                s.misordered = 0;
                s.uncertain = false;
                // The server may shrink the table (target) or say that
                // slots above its highest are gone: those start again at
                // sequence id 1 should they come back.
                let last = self.slots.len() as u32 - 1;
                self.target = target_highest_slotid.min(highest_slotid).min(last);
                for gone in self.slots.iter_mut().skip(highest_slotid as usize + 1) {
                    if !gone.busy {
                        gone.seqid = 0;
                    }
                }
            }
            SlotOutcome::Misordered if s.uncertain => {
                // The request that got no reply was never executed.
                s.seqid = s.seqid.wrapping_sub(1);
                s.uncertain = false;
            }
            SlotOutcome::Misordered => {
                // Once is a race with a retry; twice in a row means the
                // server lost the slot's state: start it over at 1, as
                // a new slot does.
                s.misordered += 1;
                if s.misordered >= 2 {
                    s.seqid = 0;
                    s.misordered = 0;
                }
            }
            SlotOutcome::Used => {
                s.seqid = slot.seqid;
                s.misordered = 0;
                s.uncertain = false;
            }
            SlotOutcome::NotExecuted => {}
            SlotOutcome::Unknown => {
                s.seqid = slot.seqid;
                s.uncertain = true;
            }
        }
    }

    /// A new session: every slot starts at sequence id 1 again.
    pub fn reset(&mut self, granted: u32) {
        *self = SlotTable::new(granted);
    }
}

#[cfg(test)]
mod tests;
