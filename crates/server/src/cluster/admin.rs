//! `nfsx cluster`: what an operator (or `scripts/heads.sh`) does to the
//! cluster's shared record: look at it, hand a dead head's clients to
//! another head before its address moves, give them back when it returns.

use std::time::{Duration, Instant};

use super::record::GraceRecord;
use super::{wall_secs, Shared};

/// How often the commands look whether the heads have acted.
const WAIT_STEP: Duration = Duration::from_millis(100);

/// Outcome of a takeover, as the command prints it.
#[derive(Debug, serde::Serialize)]
pub struct Takeover {
    pub epoch: u64,
    /// Heads that had seen the new grace period when the command returned.
    pub enforcing: Vec<String>,
    pub waited_ms: u64,
}

/// Makes `by` take over `dead`'s NFSv4 clients and puts the cluster in
/// grace, then waits (up to `wait`) until every live head enforces it:
/// only then may `dead`'s address move, or a client could reach `by`
/// before `by` knows it may reclaim, or another head could grant what it
/// is about to reclaim.
///
/// With `ceph`, the dead head's Ceph sessions are ended then too (its
/// CephFS locks go, and it is blocklisted should it only be cut off).
pub fn takeover(
    shared: &Shared,
    ceph: Option<&vfs_ceph::CephSettings>,
    dead: &str,
    by: &str,
    grace: Duration,
    wait: Duration,
) -> Result<Takeover, String> {
    let started = Instant::now();
    // A head killed in the middle of its update holds the record's lock
    // until it lapses (`lock_secs`): seen to hold a takeover up 10 s.
    match shared.rados.break_locks_of(super::GRACE_OBJECT, dead) {
        Ok(0) => {}
        Ok(n) => tracing::info!(head = dead, locks = n, "broke the dead head's lock on the grace record"),
        Err(e) => tracing::warn!(head = dead, "{e}"),
    }
    let epoch = shared.update(|r| {
        let now = wall_secs();
        if !live(r, by, now, shared.settings.live_secs) {
            return Err(format!(
                "head {by} has not been seen in the cluster's record; is it running with [cluster] node = \"{by}\"?"
            ));
        }
        r.take_over(dead, by, now, now + grace.as_secs());
        Ok((r.epoch, r.sessions.get(dead).cloned().unwrap_or_default()))
    })?;
    let (epoch, sessions) = epoch;
    loop {
        let r = shared.read()?;
        let lagging = r.lagging(wall_secs(), shared.settings.live_secs, &[dead]);
        if lagging.is_empty() {
            if let Some(ceph) = ceph {
                super::end_sessions(ceph, dead, &sessions);
            }
            let enforcing = r.heads.iter().filter(|(_, s)| s.epoch >= epoch).map(|(h, _)| h.clone()).collect();
            return Ok(Takeover { epoch, enforcing, waited_ms: started.elapsed().as_millis() as u64 });
        }
        if started.elapsed() > wait {
            return Err(format!("heads {} did not enter the grace period within {wait:?}", lagging.join(", ")));
        }
        std::thread::sleep(WAIT_STEP);
    }
}

/// Puts the cluster in grace, asks whoever took over `head`'s clients to
/// end their state there, and waits (up to `wait`) until it has and every
/// live head enforces the grace: `head` can then start and let them
/// reclaim, and no head grants what they held meanwhile. Returns the head
/// that gave them back, if any took them over.
pub fn give_back(shared: &Shared, head: &str, grace: Duration, wait: Duration) -> Result<Option<String>, String> {
    let started = Instant::now();
    let given = shared.update(|r| {
        let now = wall_secs();
        Ok(r.give_back(head, now, now + grace.as_secs()))
    })?;
    let Some(by) = given else { return Ok(None) };
    loop {
        let r = shared.read()?;
        let pending = r.release.get(&by).is_some_and(|s| s.contains(head));
        if !pending && r.lagging(wall_secs(), shared.settings.live_secs, &[head]).is_empty() {
            return Ok(Some(by));
        }
        if pending && !live(&r, &by, wall_secs(), shared.settings.live_secs) {
            // A dead adopter holds nothing to give back.
            shared.update(|r| {
                if let Some(s) = r.release.get_mut(&by) {
                    s.remove(head);
                }
                r.release.retain(|_, s| !s.is_empty());
                Ok(())
            })?;
            continue;
        }
        if started.elapsed() > wait {
            return Err(format!("head {by} did not give back head {head}'s clients within {wait:?}"));
        }
        std::thread::sleep(WAIT_STEP);
    }
}

fn live(r: &GraceRecord, head: &str, now: u64, live_secs: u64) -> bool {
    r.heads.get(head).is_some_and(|s| now.saturating_sub(s.at) <= live_secs)
}
