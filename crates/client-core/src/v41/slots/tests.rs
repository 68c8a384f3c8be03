use super::*;

fn done(highest: u32, target: u32) -> SlotOutcome {
    SlotOutcome::Done { highest_slotid: highest, target_highest_slotid: target }
}

#[test]
fn lowest_free_slot_first_and_sequence_ids_advance_per_slot() {
    let mut t = SlotTable::new(4);
    let a = t.acquire().unwrap();
    let b = t.acquire().unwrap();
    assert_eq!((a.id, a.seqid, b.id, b.seqid, b.highest), (0, 1, 1, 1, 1));
    t.release(a, done(3, 3));
    let c = t.acquire().unwrap();
    assert_eq!((c.id, c.seqid), (0, 2));
}

#[test]
fn a_done_request_uses_its_sequence_id() {
    let mut t = SlotTable::new(2);
    let a = t.acquire().unwrap();
    t.release(a, done(1, 1));
    let b = t.acquire().unwrap();
    assert_eq!((b.id, b.seqid), (0, 2));
    t.release(b, SlotOutcome::NotExecuted);
    assert_eq!(t.acquire().unwrap().seqid, 2, "a request the server refused does not use its id");
}

#[test]
fn callers_wait_when_every_slot_is_busy() {
    let mut t = SlotTable::new(2);
    let a = t.acquire().unwrap();
    let _b = t.acquire().unwrap();
    assert!(t.acquire().is_none());
    t.release(a, done(1, 1));
    assert_eq!(t.acquire().unwrap().id, 0);
}

#[test]
fn the_table_shrinks_and_grows_with_the_servers_target() {
    let mut t = SlotTable::new(8);
    let a = t.acquire().unwrap();
    t.release(a, done(7, 1));
    assert_eq!(t.target(), 1);
    let x = t.acquire().unwrap();
    let y = t.acquire().unwrap();
    assert!(t.acquire().is_none(), "only slots 0 and 1 under target 1");
    t.release(x, done(7, 7));
    t.release(y, done(7, 7));
    let ids: Vec<u32> = (0..8).map(|_| t.acquire().unwrap().id).collect();
    assert_eq!(ids, (0..8).collect::<Vec<_>>());
    // Never past what CREATE_SESSION granted, whatever the server says.
    let mut t = SlotTable::new(2);
    let a = t.acquire().unwrap();
    t.release(a, done(63, 63));
    assert_eq!(t.target(), 1);
}

#[test]
fn slots_the_server_dropped_start_over_at_one() {
    let mut t = SlotTable::new(4);
    let s: Vec<Slot> = (0..4).map(|_| t.acquire().unwrap()).collect();
    for slot in s {
        t.release(slot, done(3, 3));
    }
    // The server now has only slots 0..=1.
    let a = t.acquire().unwrap();
    t.release(a, done(1, 1));
    let a = t.acquire().unwrap();
    t.release(a, done(3, 3));
    let all: Vec<Slot> = (0..4).map(|_| t.acquire().unwrap()).collect();
    assert_eq!(all.iter().map(|s| s.seqid).collect::<Vec<_>>(), vec![4, 2, 1, 1]);
}

#[test]
fn a_lost_reply_is_resolved_by_the_servers_answer() {
    let mut t = SlotTable::new(1);
    let a = t.acquire().unwrap();
    t.release(a, done(0, 0));
    // seqid 2 went out, the connection broke: assume it executed.
    let b = t.acquire().unwrap();
    assert_eq!(b.seqid, 2);
    t.release(b, SlotOutcome::Unknown);
    let c = t.acquire().unwrap();
    assert_eq!(c.seqid, 3);
    // The server says misordered: 2 never arrived, so 2 again.
    t.release(c, SlotOutcome::Misordered);
    let d = t.acquire().unwrap();
    assert_eq!(d.seqid, 2);
    t.release(d, done(0, 0));
    assert_eq!(t.acquire().unwrap().seqid, 3);
}

#[test]
fn a_slot_the_server_forgot_restarts_after_two_misorders() {
    let mut t = SlotTable::new(1);
    for _ in 0..5 {
        let a = t.acquire().unwrap();
        t.release(a, done(0, 0));
    }
    let a = t.acquire().unwrap();
    assert_eq!(a.seqid, 6);
    t.release(a, SlotOutcome::Misordered);
    let b = t.acquire().unwrap();
    assert_eq!(b.seqid, 6, "one misorder may be a race: same id again");
    t.release(b, SlotOutcome::Misordered);
    assert_eq!(t.acquire().unwrap().seqid, 1);
}

#[test]
fn a_sequence_id_the_server_executed_without_our_reply_is_passed() {
    let mut t = SlotTable::new(1);
    let a = t.acquire().unwrap();
    t.release(a, done(0, 0));
    // Uncertain after a lost reply, then stepped back by a misorder
    // (the server was still executing 2): 2 goes out again, for a
    // different request, and the server says it executed another 2.
    let b = t.acquire().unwrap();
    t.release(b, SlotOutcome::Unknown);
    let c = t.acquire().unwrap();
    t.release(c, SlotOutcome::Misordered);
    let d = t.acquire().unwrap();
    assert_eq!(d.seqid, 2);
    t.release(d, SlotOutcome::Used);
    assert_eq!(t.acquire().unwrap().seqid, 3, "the request goes again with the next id");
}
