//! The NFSv4.1 client against the server's own protocol core
//! (`server_core::Core` over MemFs, `common/core_bridge.rs`) on tokio's
//! paused clock: a lease that runs out while the client is cut off, slots
//! reused by many requests in turn and at once, a delegation recalled over
//! the back channel for another client's OPEN, and a server reboot with
//! the open reclaimed in the grace period. Leases, grace periods and
//! backoff run in virtual time, so each test takes milliseconds.

#[path = "common/core_bridge.rs"]
mod core_bridge;

use std::collections::HashMap;
use std::time::Duration;

use client::{Client, OpenOptions};
use core_bridge::{within, Bridge, Seen};
use proto::nfs4::{nfs_cb_opnum4, nfs_opnum4 as Op, nfsstat4, open_claim4, OPEN4res, SEQUENCE4res};
use server_core::state::Nfs4Settings;

const LEASE: Duration = Duration::from_secs(6);

/// Short leases, no courtesy time: a client that stops renewing loses its
/// state one lease later (the core expires it at its next request).
fn nfs4() -> Nfs4Settings {
    Nfs4Settings { lease_secs: LEASE.as_secs() as u32, grace_secs: 10, courtesy_secs: 0, ..Nfs4Settings::default() }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 12) as u8).collect()
}

/// Each compound's main operation and its status, for the record of what
/// a client sent.
fn summary(seen: &[Seen]) -> Vec<(Op, Option<nfsstat4>)> {
    seen.iter().map(|s| (s.main_op(), s.status())).collect()
}

/// The compounds that came through listener `port`.
fn through(seen: Vec<Seen>, port: usize) -> Vec<Seen> {
    seen.into_iter().filter(|s| s.port == port).collect()
}

async fn read_all(c: &Client, name: &str) -> Vec<u8> {
    let mut f = c.open(name, OpenOptions::read()).await.unwrap();
    let mut out = vec![0u8; 1 << 20];
    let mut n = 0;
    loop {
        let got = f.read(n as u64, &mut out[n..]).await.unwrap();
        if got == 0 {
            break;
        }
        n += got;
    }
    out.truncate(n);
    f.close().await.unwrap();
    out
}

#[tokio::test(start_paused = true)]
async fn a_client_cut_off_past_its_lease_loses_its_state_to_another() {
    within(async {
        let bridge = Bridge::new(nfs4());
        let (pa, pb) = (bridge.port().await, bridge.port().await);
        let a = pa.mount().await;
        let na = a.nfs41().unwrap().clone();
        let mut fa = a.open("f", OpenOptions::create().with_sync(true)).await.unwrap();
        fa.write(0, b"from A").await.unwrap();
        assert_eq!(na.delegations_held(), 1, "a write delegation: the back channel is up");

        // While it reaches the server, A keeps its lease with SEQUENCEs.
        let m = bridge.mark();
        tokio::time::sleep(LEASE * 2).await;
        let renewals = through(bridge.since(m), pa.index);
        assert!(renewals.len() >= 5 && renewals.iter().all(|s| s.renewal() && s.status() == Some(nfsstat4::NFS4_OK)));

        // Cut off for three leases: its renewal waits in the socket.
        pa.pause();
        let cut = bridge.now();
        tokio::time::sleep(LEASE * 3).await;

        // B opens the file A has open (and held a write delegation on) at
        // once: no recall, A's state is gone.
        let b = pb.mount().await;
        let m = bridge.mark();
        let mut fb = b.open("f", OpenOptions::read_write().with_sync(true)).await.unwrap();
        let opens: Vec<_> = through(bridge.since(m), pb.index).into_iter().filter(|s| s.has(Op::OP_OPEN)).collect();
        assert_eq!(summary(&opens), [(Op::OP_OPEN, Some(nfsstat4::NFS4_OK))]);
        let recalls = bridge.with_log(|l| l.callbacks.iter().filter(|c| c.at >= cut && c.proc_ == 1).count());
        assert_eq!(recalls, 0, "nothing recalled from an expired client");
        fb.write(0, b"from B").await.unwrap();
        fb.close().await.unwrap();

        // A is back: its waiting renewal finds the session gone, and it
        // establishes itself again as a new client.
        let m = bridge.mark();
        pa.resume();
        let a_port = pa.index;
        bridge
            .until(|l| {
                l.compounds
                    .get(m..)
                    .unwrap_or_default()
                    .iter()
                    .any(|s| s.port == a_port && s.has(Op::OP_RECLAIM_COMPLETE))
            })
            .await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        let steps = summary(&through(bridge.since(m), pa.index));
        eprintln!("A after the cut: {steps:?}");
        eprintln!("A's counters: {:?}", na.counters());

        let r = fa.write(0, b"A again").await;
        eprintln!("A's write on its old open: {r:?}");
        let m = bridge.mark();
        let r = fa.close().await;
        eprintln!("A's close: {r:?} {:?}", summary(&through(bridge.since(m), pa.index)));
        eprintln!("file: {:?}", bridge.file("f").map(String::from_utf8));
        panic!("exploring");
    })
    .await
}
