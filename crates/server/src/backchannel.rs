//! The NFSv4.1 back channel: callbacks go out on a connection the client
//! opened, so the core names connections by number and this registry
//! maps the numbers to the connections' reply sinks.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use proto::framer::frame_segments;
use server_core::Backchannel;

use crate::sink::{ReplySink, Seg};

#[derive(Default)]
pub struct Connections {
    next: AtomicU64,
    sinks: Mutex<HashMap<u64, Arc<ReplySink>>>,
    /// Bytes a connection may have waiting for its socket before a
    /// callback to it is given up (the client is not reading).
    max_queued: usize,
}

impl Connections {
    pub fn new(max_queued: usize) -> Connections {
        Connections { max_queued, ..Default::default() }
    }

    /// Numbers a new connection (from 1) and remembers its sink.
    pub fn register(&self, sink: Arc<ReplySink>) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        self.sinks.lock().insert(id, sink);
        id
    }

    pub fn unregister(&self, id: u64) {
        self.sinks.lock().remove(&id);
    }
}

impl Backchannel for Connections {
    fn send(&self, conn: u64, record: Vec<Bytes>) -> bool {
        let Some(sink) = self.sinks.lock().get(&conn).cloned() else {
            return false;
        };
        // Never wait: the core calls this with its state locked. A client
        // that has stopped reading loses the callback, which then times
        // out like any unanswered one.
        if sink.queued_bytes() > self.max_queued {
            return false;
        }
        sink.send(frame_segments(record).into_iter().map(Seg::Bytes).collect(), None)
    }
}
