//! NFSv4 client records in RADOS, one object per head (`clients.HEAD`,
//! one hex-encoded owner per line, rewritten whole: `rados_write_full` is
//! atomic and acknowledged once the OSDs hold it). Records outlive the
//! head that wrote them, so the head that takes over a dead head's address
//! can read them and let those clients, and only those, reclaim.
//!
//! Clients taken over keep their records in the dead head's object, so
//! that when the head comes back it knows them again and they can move
//! back to it (`release`).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use parking_lot::Mutex;
use server_core::StableStore;
use vfs_ceph::rados::Rados;

use crate::stable::{decode_hex, encode_hex};

pub fn object(head: &str) -> String {
    format!("clients.{head}")
}

pub fn decode(bytes: &[u8]) -> Vec<Vec<u8>> {
    String::from_utf8_lossy(bytes).lines().filter_map(decode_hex).collect()
}

fn encode(records: &[Vec<u8>]) -> Vec<u8> {
    records.iter().map(|r| encode_hex(r) + "\n").collect::<String>().into_bytes()
}

#[derive(Default)]
struct Records {
    /// This head's own clients.
    own: Vec<Vec<u8>>,
    /// Clients taken over, by the head whose object holds their records.
    adopted: HashMap<String, Vec<Vec<u8>>>,
    /// Clients given back: their state here ends, their records stay.
    released: HashSet<Vec<u8>>,
}

pub struct RadosStore {
    shared: super::Shared,
    rados: Arc<Rados>,
    head: String,
    records: Mutex<Records>,
}

impl RadosStore {
    pub fn open(shared: super::Shared, head: &str) -> Result<RadosStore, String> {
        let rados = shared.rados.clone();
        let own = rados.read(&object(head))?.map(|b| decode(&b)).unwrap_or_default();
        let records = Mutex::new(Records { own, ..Default::default() });
        Ok(RadosStore { shared, rados, head: head.to_string(), records })
    }

    /// Reads `dead`'s records, which this head now keeps on its behalf.
    pub fn adopt(&self, dead: &str) -> Result<Vec<Vec<u8>>, String> {
        let records = self.rados.read(&object(dead))?.map(|b| decode(&b)).unwrap_or_default();
        let mut r = self.records.lock();
        for x in &records {
            r.released.remove(x);
        }
        r.adopted.insert(dead.to_string(), records.clone());
        Ok(records)
    }

    /// Stops keeping `head`'s records (it is back): the owners whose state
    /// here must end. Their records stay in `head`'s object.
    pub fn release(&self, head: &str) -> Vec<Vec<u8>> {
        let mut r = self.records.lock();
        let owners = r.adopted.remove(head).unwrap_or_default();
        r.released.extend(owners.iter().cloned());
        owners
    }

    fn save(&self, head: &str, records: &[Vec<u8>]) {
        if let Err(e) = self.rados.write_full(&object(head), &encode(records)) {
            tracing::error!(head, "cannot save NFSv4 client records: {e}");
        }
    }
}

impl StableStore for RadosStore {
    fn load(&self) -> Vec<Vec<u8>> {
        self.records.lock().own.clone()
    }

    fn insert(&self, record: &[u8]) {
        let mut r = self.records.lock();
        r.released.remove(record);
        if r.own.iter().any(|x| x == record) || r.adopted.values().any(|a| a.iter().any(|x| x == record)) {
            return;
        }
        r.own.push(record.to_vec());
        self.save(&self.head, &r.own);
    }

    /// Drawn from the shared record, so no two heads (which may start in
    /// the same second) stamp their ids alike.
    fn instance(&self, wall_secs: u32) -> u32 {
        match self.shared.update(|r| Ok(r.next_instance(wall_secs))) {
            Ok(n) => n,
            Err(e) => {
                // Still distinct from this head's earlier lives; collisions
                // with another head become unlikely rather than impossible.
                tracing::error!("cannot draw an instance number from the cluster's record: {e}");
                wall_secs ^ (std::process::id() << 16)
            }
        }
    }

    fn remove(&self, record: &[u8]) {
        let mut r = self.records.lock();
        if r.released.remove(record) {
            return;
        }
        let Records { own, adopted, .. } = &mut *r;
        for (head, a) in adopted.iter_mut() {
            if let Some(i) = a.iter().position(|x| x == record) {
                a.remove(i);
                self.save(head, a);
                return;
            }
        }
        let before = own.len();
        own.retain(|x| x != record);
        if own.len() != before {
            self.save(&self.head, own);
        }
    }
}
