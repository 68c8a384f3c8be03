//! Share reservations (OPEN's access and deny modes, RFC 8881 section 9.7)
//! taken in CephFS itself, so that an open one head grants is refused by
//! another head whose client it conflicts with.
//!
//! CephFS knows no share modes, only POSIX locks, which the MDS arbitrates
//! between all its clients. Each of the two modes (reading, writing) has a
//! region of [`SHARE_SLOTS`] bytes just below the end of CephFS's offsets
//! ([`SHARE_BYTES`]). An open that accesses a mode holds a read lock on the
//! whole region; an open that denies it holds a write lock on one byte (a
//! slot) of it. A write lock conflicts with every read lock over it, so a
//! deny and an access of the same mode exclude each other in the one lock
//! request that takes them: a plain OPEN (denying nothing) costs one lock
//! request, and no second request can slip in between. Two opens that
//! deny the same mode do not conflict (RFC 8881), so they take different
//! slots: a slot refused for a write lock that another denial holds
//! (F_GETLK tells) sends the opener to the next one, and only when all are
//! taken is the answer DELAY. Byte-range locks stop short of these bytes
//! (`locks`).

use vfs::{FileId, RangeLock, VfsError, VfsResult, SHARE_READ, SHARE_WRITE};

use crate::ffi::Fh;
use crate::fs::CephFs;
use crate::locks::flock;
use crate::mount::error;

/// Opens of one file, on all heads together, that may deny one mode while
/// no other open accesses it: the slots of each mode's region.
pub(crate) const SHARE_SLOTS: i64 = 8;

/// The first byte of the reading region, followed by the writing region;
/// 16 bytes spare stay above them, inside CephFS's signed offsets.
pub(crate) const SHARE_BYTES: i64 = i64::MAX - 16 - 2 * SHARE_SLOTS + 1;

/// The two modes, in the order of their regions.
const MODES: [u32; 2] = [SHARE_READ, SHARE_WRITE];

/// What one owner holds: its modes and, per mode it denies, its slot.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct ShareModes {
    access: u32,
    deny: u32,
    slots: [i64; 2],
}

fn region(m: usize) -> i64 {
    SHARE_BYTES + m as i64 * SHARE_SLOTS
}

/// One lock request: `lock` on `len` bytes from `start`.
type Piece = (RangeLock, i64, i64);

/// The pieces that make read locks on the regions of the modes in
/// `access`, leaving out the slots `held` denies (a read lock of the same
/// owner there would turn its write lock into a read lock).
fn access_pieces(access: u32, held: &ShareModes) -> Vec<Piece> {
    let mut ranges: Vec<(i64, i64)> = Vec::new();
    for (m, mode) in MODES.iter().enumerate() {
        if access & mode == 0 {
            continue;
        }
        let (start, end) = (region(m), region(m) + SHARE_SLOTS);
        let cuts: &[i64] = if held.deny & mode != 0 { &held.slots[m..=m] } else { &[] };
        let mut from = start;
        for &slot in cuts {
            if slot > from {
                ranges.push((from, slot));
            }
            from = slot + 1;
        }
        if end > from {
            ranges.push((from, end));
        }
    }
    // Adjacent regions (both modes accessed) go in one request.
    let mut merged: Vec<(i64, i64)> = Vec::new();
    for r in ranges {
        match merged.last_mut() {
            Some(last) if last.1 == r.0 => last.1 = r.1,
            _ => merged.push(r),
        }
    }
    merged.into_iter().map(|(s, e)| (RangeLock::Read, s, e - s)).collect()
}

impl CephFs {
    pub(crate) fn do_share_reserve(&self, id: FileId, owner: u64, access: u32, deny: u32) -> VfsResult<bool> {
        let mask = SHARE_READ | SHARE_WRITE;
        let (access, deny) = (access & mask, deny & mask);
        let held = self.locked.shares.lock().get(&(id, owner)).copied().unwrap_or_default();
        if (held.access, held.deny) == (access, deny) {
            return Ok(true);
        }
        let n = match self.locked.node(id) {
            Some(n) => n,
            None => self.node(id)?,
        };
        let fh = n.fh()?;
        let now = match self.share_add(fh, owner, held, access, deny)? {
            Some(now) => now,
            None => return Ok(false),
        };
        // Dropping modes cannot conflict; a failure leaves a byte held
        // longer, which only refuses more.
        let kept = self.share_drop(fh, owner, now, access, deny);
        let mut shares = self.locked.shares.lock();
        if kept.access == 0 && kept.deny == 0 {
            shares.remove(&(id, owner));
            self.locked.release(id, owner);
        } else {
            shares.insert((id, owner), kept);
            self.locked.hold(id, &n, owner);
        }
        Ok(true)
    }

    /// Takes the modes `access`/`deny` add to `held`: the regions of new
    /// accesses, then a slot per new denial. `None`: another owner's open
    /// conflicts, and what this call took is given back.
    fn share_add(
        &self,
        fh: *mut Fh,
        owner: u64,
        held: ShareModes,
        access: u32,
        deny: u32,
    ) -> VfsResult<Option<ShareModes>> {
        let mut now = held;
        let add_access = access & !held.access;
        if add_access != 0 {
            match self.set_pieces(fh, owner, &access_pieces(add_access, &held)) {
                Ok(true) => now.access |= add_access,
                Ok(false) => return Ok(None),
                Err(e) => return Err(e),
            }
        }
        for (m, mode) in MODES.iter().enumerate() {
            if deny & mode == 0 || held.deny & mode != 0 {
                continue;
            }
            match self.take_slot(fh, owner, m) {
                Ok(Some(slot)) => {
                    now.deny |= mode;
                    now.slots[m] = slot;
                }
                r => {
                    // Back to `held`: drop what was added above.
                    let back = self.share_drop(fh, owner, now, held.access, held.deny);
                    debug_assert_eq!((back.access, back.deny), (held.access, held.deny));
                    return r.map(|_| None);
                }
            }
        }
        Ok(Some(now))
    }

    /// Gives up the modes of `now` that `access`/`deny` leave out; returns
    /// what is held after.
    fn share_drop(&self, fh: *mut Fh, owner: u64, now: ShareModes, access: u32, deny: u32) -> ShareModes {
        let mut kept = now;
        for (m, mode) in MODES.iter().enumerate() {
            if now.deny & mode != 0 && deny & mode == 0 {
                // The slot goes back to being part of the access region,
                // if that is still held.
                let lock = if now.access & access & mode != 0 { RangeLock::Read } else { RangeLock::Unlock };
                self.unlock_logged(fh, owner, &[(lock, now.slots[m], 1)]);
                kept.deny &= !mode;
            }
        }
        let drop_access = now.access & !access;
        if drop_access != 0 {
            let pieces: Vec<Piece> =
                access_pieces(drop_access, &kept).into_iter().map(|(_, s, l)| (RangeLock::Unlock, s, l)).collect();
            self.unlock_logged(fh, owner, &pieces);
            kept.access &= !drop_access;
        }
        kept
    }

    fn unlock_logged(&self, fh: *mut Fh, owner: u64, pieces: &[Piece]) {
        if let Err(e) = self.set_pieces(fh, owner, pieces) {
            tracing::warn!(error = %e, "could not drop a share mode in CephFS");
        }
    }

    /// A write lock on a free slot of mode `m`'s region: `Some(slot)`, or
    /// `None` when another owner accesses the mode. Slots that other
    /// owners' denials hold are passed over; DELAY when all are.
    fn take_slot(&self, fh: *mut Fh, owner: u64, m: usize) -> VfsResult<Option<i64>> {
        for slot in region(m)..region(m) + SHARE_SLOTS {
            // A holder that goes between the refusal and the question
            // leaves the slot free: ask again, a few times.
            for _ in 0..3 {
                if self.set_pieces(fh, owner, &[(RangeLock::Write, slot, 1)])? {
                    return Ok(Some(slot));
                }
                match self.holder(fh, owner, slot)? {
                    Some(RangeLock::Read) => return Ok(None),
                    Some(_) => break,
                    None => continue,
                }
            }
        }
        Err(VfsError::Delay)
    }

    /// Takes the pieces, without waiting; `Ok(false)` at the first one
    /// another owner's lock refuses, after giving back those taken before
    /// it (only read locks and unlocks come in more than one piece).
    fn set_pieces(&self, fh: *mut Fh, owner: u64, pieces: &[Piece]) -> VfsResult<bool> {
        for (i, &(lock, start, len)) in pieces.iter().enumerate() {
            let mut fl = flock(lock, start, len);
            // SAFETY: an open file of this mount and a valid flock; no sleep.
            let rc = unsafe { (self.m.api.ceph_ll_setlk)(self.m.cm, fh, &mut fl, owner, 0) };
            match -rc {
                0 => {}
                libc::EAGAIN | libc::EACCES => {
                    let taken: Vec<Piece> = pieces[..i].iter().map(|&(_, s, l)| (RangeLock::Unlock, s, l)).collect();
                    self.unlock_logged(fh, owner, &taken);
                    return Ok(false);
                }
                e => return Err(error(e)),
            }
        }
        Ok(true)
    }

    /// The kind of lock another owner, on any head, holds on byte `at`.
    fn holder(&self, fh: *mut Fh, owner: u64, at: i64) -> VfsResult<Option<RangeLock>> {
        let mut fl = flock(RangeLock::Write, at, 1);
        // SAFETY: an open file of this mount and a valid flock.
        let rc = unsafe { (self.m.api.ceph_ll_getlk)(self.m.cm, fh, &mut fl, owner) };
        if rc < 0 {
            return Err(error(-rc));
        }
        Ok(match i32::from(fl.l_type) {
            libc::F_RDLCK => Some(RangeLock::Read),
            libc::F_WRLCK => Some(RangeLock::Write),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(p: Vec<Piece>) -> Vec<(i64, i64)> {
        p.into_iter().map(|(_, s, l)| (s - SHARE_BYTES, l)).collect()
    }

    #[test]
    fn access_regions_leave_out_the_owners_own_slots() {
        let none = ShareModes::default();
        assert_eq!(rel(access_pieces(SHARE_READ, &none)), vec![(0, SHARE_SLOTS)]);
        assert_eq!(rel(access_pieces(SHARE_WRITE, &none)), vec![(SHARE_SLOTS, SHARE_SLOTS)]);
        // Both modes: one request over both regions.
        assert_eq!(rel(access_pieces(SHARE_READ | SHARE_WRITE, &none)), vec![(0, 2 * SHARE_SLOTS)]);
        // The owner denies reads from slot 3: its region is cut there.
        let denies = ShareModes { access: 0, deny: SHARE_READ, slots: [SHARE_BYTES + 3, 0] };
        assert_eq!(rel(access_pieces(SHARE_READ, &denies)), vec![(0, 3), (4, SHARE_SLOTS - 4)]);
        // A first slot, and both modes around it.
        let first = ShareModes { access: 0, deny: SHARE_READ, slots: [SHARE_BYTES, 0] };
        assert_eq!(rel(access_pieces(SHARE_READ | SHARE_WRITE, &first)), vec![(1, 2 * SHARE_SLOTS - 1)]);
    }

    #[test]
    fn the_regions_fit_below_cephs_last_offset() {
        assert!(region(1) + SHARE_SLOTS + 16 - 1 == i64::MAX);
    }
}
