//! The cluster's shared record (RADOS object `grace`): which heads are in
//! their grace period, which dead head's clients which head takes over,
//! and which heads have seen the latest grace period start. Every change
//! is a read-modify-write under RADOS's lock on the object; the
//! transitions here are pure, so they are tested without a cluster.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct GraceRecord {
    /// Bumped each time the cluster enters a grace period.
    pub epoch: u64,
    /// The last server instance number given to a head: every head's
    /// NFSv4 ids carry one, unique in the cluster and rising over time.
    pub instance: u32,
    /// Heads whose clients are reclaiming, each until a wall-clock second:
    /// a head refreshes its entry while its grace lasts, so one that dies
    /// in grace does not hold the cluster in grace for ever.
    pub need: BTreeMap<String, u64>,
    /// The epoch each head last saw (and enforces), and when it last looked.
    pub heads: BTreeMap<String, HeadSeen>,
    /// Head -> dead heads whose clients it is to let reclaim.
    pub adopt: BTreeMap<String, BTreeSet<String>>,
    /// Dead head -> the head that took its clients over.
    pub adopted_by: BTreeMap<String, String>,
    /// Head -> heads it is to give their clients back to.
    pub release: BTreeMap<String, BTreeSet<String>>,
    /// Head -> the names its Ceph client sessions go by (libcephfs's
    /// client uuids), which the head that takes it over ends.
    pub sessions: BTreeMap<String, Vec<String>>,
    /// Some client asked for an OPEN that denies: from then on every head
    /// holds its opens' share modes in the store (see
    /// `server_core::Core::start_share_store`). Never cleared.
    #[serde(default)]
    pub share_store: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeadSeen {
    pub epoch: u64,
    /// Wall-clock second of the head's last look at the record.
    pub at: u64,
    /// The head holds all its opens' share modes in the store.
    #[serde(default)]
    pub share_store: bool,
}

impl GraceRecord {
    pub fn decode(bytes: &[u8]) -> Result<GraceRecord, String> {
        serde_json::from_slice(bytes).map_err(|e| format!("the cluster's grace record is not valid: {e}"))
    }

    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).unwrap_or_default()
    }

    /// Whether some head's clients are reclaiming at wall-clock `now`.
    pub fn in_grace(&self, now: u64) -> bool {
        self.need.values().any(|&until| until > now)
    }

    /// `head` needs the cluster in grace until `until`; a grace period
    /// that starts (none was running) gets a new epoch.
    pub fn need_grace(&mut self, head: &str, now: u64, until: u64) {
        if !self.in_grace(now) {
            self.epoch += 1;
        }
        self.need.retain(|_, &mut u| u > now);
        let e = self.need.entry(head.to_string()).or_default();
        *e = (*e).max(until);
    }

    /// `head`'s clients finished reclaiming.
    pub fn grace_done(&mut self, head: &str) {
        self.need.remove(head);
    }

    /// `by` takes over `dead`'s address: it will let `dead`'s clients
    /// reclaim, and the whole cluster is in grace meanwhile.
    /// Heads whose clients `dead` had taken over move with it: `by` now
    /// answers at their addresses too.
    pub fn take_over(&mut self, dead: &str, by: &str, now: u64, until: u64) {
        self.need.remove(dead);
        self.need_grace(by, now, until);
        // Those it adopted (`adopted_by`) and those still queued (`adopt`).
        let mut moving = self.adopt.remove(dead).unwrap_or_default();
        moving.extend(self.adopted_by.iter().filter(|(_, b)| b.as_str() == dead).map(|(h, _)| h.clone()));
        moving.insert(dead.to_string());
        for head in &moving {
            self.adopted_by.insert(head.clone(), by.to_string());
        }
        self.adopt.entry(by.to_string()).or_default().extend(moving);
    }

    /// The heads `me` is to take over now, given for how long (in
    /// milliseconds, on `me`'s own clock) each head's entry has not
    /// changed: those silent for `after`, which `me` follows in the ring
    /// of heads still alive (so one head acts, and the work spreads), or
    /// silent for twice `after` (their successor is silent too). A head
    /// already taken over is left alone.
    pub fn due_takeovers(&self, me: &str, silent_ms: &BTreeMap<String, u64>, after_ms: u64) -> Vec<String> {
        let dead = |h: &str| silent_ms.get(h).is_some_and(|&ms| ms >= after_ms);
        let alive: Vec<&str> = self.heads.keys().map(String::as_str).filter(|h| *h == me || !dead(h)).collect();
        self.heads
            .keys()
            .filter(|h| h.as_str() != me && dead(h) && !self.adopted_by.contains_key(h.as_str()))
            .filter(|h| {
                let successor = alive.iter().find(|a| **a > h.as_str()).or(alive.first());
                successor == Some(&me) || silent_ms[h.as_str()] >= after_ms.saturating_mul(2)
            })
            .cloned()
            .collect()
    }

    /// `head` comes back: whoever took over its clients gives them back,
    /// and the cluster is in grace from now (before they are given back)
    /// until `head` has let them reclaim. The head that gives them back,
    /// if any.
    /// `head`'s entry counts as fresh from `now`, so no head takes it over
    /// again before it has had `takeover_after_secs` to start.
    pub fn give_back(&mut self, head: &str, now: u64, until: u64) -> Option<String> {
        let by = self.adopted_by.remove(head)?;
        self.need_grace(head, now, until);
        self.heads.entry(head.to_string()).or_default().at = now;
        if let Some(a) = self.adopt.get_mut(&by) {
            a.remove(head);
        }
        self.adopt.retain(|_, a| !a.is_empty());
        self.release.entry(by.clone()).or_default().insert(head.to_string());
        Some(by)
    }

    /// A new instance number: above every earlier one, and the wall-clock
    /// seconds when they are higher (a single server's numbering).
    pub fn next_instance(&mut self, wall_secs: u32) -> u32 {
        self.instance = self.instance.wrapping_add(1).max(wall_secs);
        self.instance
    }

    /// Records that `head` looked at the record at `now`.
    pub fn seen(&mut self, head: &str, now: u64) {
        let e = self.heads.entry(head.to_string()).or_default();
        (e.epoch, e.at) = (self.epoch, now);
    }

    /// Heads that looked within `live_secs` and do not yet hold their
    /// opens' share modes in the store: until there are none, no head
    /// grants an OPEN that denies.
    pub fn share_store_lagging(&self, now: u64, live_secs: u64) -> Vec<String> {
        self.heads
            .iter()
            .filter(|(_, s)| now.saturating_sub(s.at) <= live_secs && !s.share_store)
            .map(|(h, _)| h.clone())
            .collect()
    }

    /// Heads that looked within `live_secs` but not since the latest grace
    /// period began: the ones a takeover still waits for.
    pub fn lagging(&self, now: u64, live_secs: u64, except: &[&str]) -> Vec<String> {
        self.heads
            .iter()
            .filter(|(h, s)| {
                !except.contains(&h.as_str()) && now.saturating_sub(s.at) <= live_secs && s.epoch < self.epoch
            })
            .map(|(h, _)| h.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_takeover_puts_the_cluster_in_grace_until_the_adopter_is_done() {
        let mut r = GraceRecord::default();
        r.seen("1", 100);
        r.seen("2", 100);
        r.seen("3", 100);
        r.take_over("1", "2", 101, 190);
        assert!(r.in_grace(150));
        assert_eq!(r.epoch, 1);
        assert_eq!(r.adopt["2"], BTreeSet::from(["1".to_string()]));
        // Heads 2 and 3 have not looked since; 1 is the dead one.
        assert_eq!(r.lagging(102, 5, &["1"]), vec!["2".to_string(), "3".to_string()]);
        r.seen("2", 102);
        r.seen("3", 102);
        assert!(r.lagging(102, 5, &["1"]).is_empty());
        r.grace_done("2");
        assert!(!r.in_grace(150));
    }

    /// Denials wait for every live head to hold its share modes in the
    /// store; a head that stopped looking does not hold them up, and a
    /// look keeps what a head said.
    #[test]
    fn share_modes_wait_for_every_live_head() {
        let mut r = GraceRecord::default();
        for h in ["1", "2", "3"] {
            r.seen(h, 100);
        }
        r.share_store = true;
        r.heads.get_mut("1").unwrap().share_store = true;
        assert_eq!(r.share_store_lagging(101, 5), vec!["2".to_string(), "3".to_string()]);
        r.heads.get_mut("2").unwrap().share_store = true;
        r.seen("2", 104);
        assert!(r.heads["2"].share_store);
        // Head 3 last looked at 100: gone by 106.
        assert_eq!(r.share_store_lagging(104, 5), vec!["3".to_string()]);
        assert!(r.share_store_lagging(106, 5).is_empty());
        // An older record, without the fields, reads as "not yet".
        let old = GraceRecord::decode(br#"{"epoch":1,"instance":2,"need":{},"heads":{"1":{"epoch":1,"at":5}},"adopt":{},"adopted_by":{},"release":{},"sessions":{}}"#).unwrap();
        assert!(!old.share_store && !old.heads["1"].share_store);
    }

    #[test]
    fn the_next_live_head_takes_over_a_silent_one() {
        let mut r = GraceRecord::default();
        for h in ["1", "2", "3"] {
            r.seen(h, 100);
        }
        let silent = |pairs: &[(&str, u64)]| pairs.iter().map(|(h, ms)| (h.to_string(), *ms)).collect();
        // Head 2 has been silent long enough: head 3 follows it.
        let s = silent(&[("1", 0), ("2", 5_000)]);
        assert_eq!(r.due_takeovers("3", &s, 5_000), ["2"]);
        assert!(r.due_takeovers("1", &s, 5_000).is_empty());
        // Not yet silent long enough.
        assert!(r.due_takeovers("3", &silent(&[("2", 4_999)]), 5_000).is_empty());
        // Head 3 silent: the ring wraps to head 1. Twice as long: anyone.
        assert_eq!(r.due_takeovers("1", &silent(&[("3", 5_000)]), 5_000), ["3"]);
        assert!(r.due_takeovers("2", &silent(&[("3", 5_000)]), 5_000).is_empty());
        assert_eq!(r.due_takeovers("2", &silent(&[("3", 10_000)]), 5_000), ["3"]);
        // Taken over once: not again; and its adoptions move with it.
        r.take_over("2", "3", 101, 190);
        assert!(r.due_takeovers("3", &s, 5_000).is_empty());
        r.adopt.remove("3"); // head 3 adopted head 2's clients
        r.take_over("3", "1", 102, 190);
        assert_eq!(r.adopted_by["2"], "1");
        assert_eq!(r.adopt["1"], BTreeSet::from(["2".to_string(), "3".to_string()]));
        assert!(!r.adopt.contains_key("3"));
    }

    #[test]
    fn a_dead_heads_need_lapses() {
        let mut r = GraceRecord::default();
        r.need_grace("1", 10, 100);
        assert!(r.in_grace(99));
        assert!(!r.in_grace(100));
        // A new grace period gets a new epoch; one running does not.
        r.need_grace("2", 100, 200);
        assert_eq!(r.epoch, 2);
        r.need_grace("3", 150, 250);
        assert_eq!(r.epoch, 2);
        assert_eq!(r.need.keys().collect::<Vec<_>>(), ["2", "3"]);
    }

    #[test]
    fn giving_back_asks_the_adopter_to_release() {
        let mut r = GraceRecord::default();
        r.take_over("1", "2", 0, 90);
        r.grace_done("2");
        assert_eq!(r.give_back("1", 100, 190), Some("2".to_string()));
        assert!(r.in_grace(150), "the cluster is in grace before the clients are given back");
        assert_eq!(r.epoch, 2);
        assert!(r.adopt.is_empty());
        assert_eq!(r.release["2"], BTreeSet::from(["1".to_string()]));
        assert_eq!(r.heads["1"].at, 100, "a head given back counts as fresh");
        assert_eq!(r.give_back("1", 100, 190), None);
        let back = GraceRecord::decode(&r.encode()).unwrap();
        assert_eq!(back, r);
        assert!(GraceRecord::decode(b"{not json").is_err());
        // Two heads starting in the same second get different numbers.
        let (a, b) = (r.next_instance(1000), r.next_instance(1000));
        assert_eq!((a, b), (1000, 1001));
        assert_eq!(r.next_instance(2000), 2000);
        assert_eq!(GraceRecord::decode(b"{}").unwrap(), GraceRecord::default());
    }
}
