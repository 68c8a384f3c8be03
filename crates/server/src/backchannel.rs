//! The NFSv4.1 back channel: callbacks go out on a connection the client
//! opened, so the core names connections by number and this registry
//! maps the numbers to the connections' reply queues.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use parking_lot::Mutex;
use proto::framer::frame_segments;
use server_core::Backchannel;
use tokio::sync::mpsc;

#[derive(Default)]
pub struct Connections {
    next: AtomicU64,
    queues: Mutex<HashMap<u64, mpsc::Sender<Vec<Bytes>>>>,
}

impl Connections {
    /// Numbers a new connection (from 1) and remembers its queue.
    pub fn register(&self, queue: mpsc::Sender<Vec<Bytes>>) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        self.queues.lock().insert(id, queue);
        id
    }

    pub fn unregister(&self, id: u64) {
        self.queues.lock().remove(&id);
    }
}

impl Backchannel for Connections {
    fn send(&self, conn: u64, record: Vec<Bytes>) -> bool {
        let Some(q) = self.queues.lock().get(&conn).cloned() else {
            return false;
        };
        // Never wait: the core calls this with its state locked. A full
        // queue means the client is not reading; the callback is lost and
        // the recall times out like any unanswered one.
        q.try_send(frame_segments(record)).is_ok()
    }
}
