//! NFSv4 delegations held in CephFS (`ceph_ll_delegation`): while a
//! client of this head holds a delegation on a file, this head holds a
//! CephFS delegation on it, so the metadata server makes every other head
//! and Ceph client that wants the file wait, and tells this head
//! (a callback) to give it back. The server then recalls its clients'
//! delegations and calls `undelegate`.
//!
//! - A read delegation is a CephFS read delegation while the head has the
//!   file open read-only (it opens files read-only until it writes one,
//!   see `nodes`): other heads may read the file, take its attributes
//!   and hold read delegations of their own meanwhile; an open for
//!   writing, a change of its attributes and the like recall it. On a
//!   file the head has open for writing, libcephfs refuses a read
//!   delegation, so a write delegation stands in, which any other head's
//!   access, a GETATTR included, recalls.
//! - A head's own first write to a file it holds a read delegation on
//!   recalls that delegation first (libcephfs would wait for it while
//!   opening the file for writing): answered DELAY, as below.
//! - libcephfs unmounts a client that keeps a recalled delegation past
//!   `client_deleg_timeout`; this head sets that to just below the
//!   metadata server's cap-return timeout, and the server gives the
//!   delegation back after `delegation_return_secs` (its clients'
//!   delegations on the file revoked), well within it.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use vfs::{DelegationRecallSink, FileId, VfsResult};

use crate::ffi::{self, Fh};
use crate::fs::CephFs;
use crate::mount::error;
use crate::nodes::Node;

/// The CephFS delegations this head holds, by file.
#[derive(Default)]
pub(crate) struct Delegs {
    /// Whether the mount accepted a delegation timeout (else none are taken).
    pub enabled: bool,
    held: Mutex<HashMap<FileId, Held>>,
    /// Set by the server before it hands out the first delegation.
    sink: Arc<OnceLock<DelegationRecallSink>>,
    pub granted: AtomicU64,
    pub recalled: Arc<AtomicU64>,
}

/// One delegation: the node (its open file carries the delegation, so it
/// stays open and cached while held), that file, and what the callback is
/// given.
struct Held {
    node: Arc<Node>,
    fh: *mut Fh,
    token: *mut Token,
    /// A CephFS write delegation (else read).
    write: bool,
}

// SAFETY: the token is only read by the callback and freed after the
// delegation is given back, under the `held` lock; the file stays open
// while the node lives.
unsafe impl Send for Held {}

/// What the recall callback needs: the file, and where to queue it.
struct Token {
    id: FileId,
    sink: Arc<OnceLock<DelegationRecallSink>>,
    recalled: Arc<AtomicU64>,
}

/// libcephfs's recall callback: runs with the client lock held, so it only
/// queues the file for the server.
unsafe extern "C" fn recall(_fh: *mut Fh, token: *mut c_void) {
    // SAFETY: `token` is a `Token` this module leaked for the delegation
    // and frees only after libcephfs dropped the delegation.
    let t = unsafe { &*(token as *const Token) };
    t.recalled.fetch_add(1, Ordering::Relaxed);
    match t.sink.get() {
        Some(sink) => sink(t.id),
        None => tracing::warn!(id = t.id, "CephFS recalled a delegation no server asked for"),
    }
}

impl Delegs {
    pub fn set_sink(&self, sink: DelegationRecallSink) {
        let _ = self.sink.set(sink);
    }

    pub fn len(&self) -> usize {
        self.held.lock().len()
    }

    /// The node of a delegated file, which must be used rather than a new
    /// one: opening the file again would break the delegation.
    pub fn node(&self, id: FileId) -> Option<Arc<Node>> {
        self.held.lock().get(&id).map(|h| h.node.clone())
    }
}

impl CephFs {
    /// Takes a CephFS delegation on `id` for an NFSv4 delegation
    /// (`write`: a write delegation).
    pub(crate) fn do_delegate(&self, id: FileId, write: bool) -> VfsResult<bool> {
        let d = &self.delegs;
        if !d.enabled || d.sink.get().is_none() {
            return Ok(false);
        }
        // Held across the call: nothing below waits on the cluster.
        let mut held = d.held.lock();
        if let Some(h) = held.get(&id) {
            return Ok(h.write || !write);
        }
        // Only a file this head already has open: the server asks with
        // its state tables locked, so nothing here may wait on the
        // cluster (opening a file another head holds a delegation on
        // waits for its recall). An OPEN opens the file before it asks
        // (`open_shared`), with its access: read-only files get a read
        // delegation.
        let Some(node) = self.nodes.get(id) else { return Ok(false) };
        let Some(open) = node.open_fh() else { return Ok(false) };
        if write && !open.writable {
            return Ok(false);
        }
        let kind = if open.writable { ffi::CEPH_DELEGATION_WR } else { ffi::CEPH_DELEGATION_RD };
        let token = Box::into_raw(Box::new(Token { id, sink: d.sink.clone(), recalled: d.recalled.clone() }));
        // SAFETY: an open file of this mount; the token outlives the
        // delegation (freed in `do_undelegate`, or below when refused).
        let rc = unsafe { (self.m.api.ceph_ll_delegation)(self.m.cm, open.fh, kind, recall, token.cast()) };
        if rc < 0 {
            // SAFETY: libcephfs kept no delegation, so no callback holds it.
            drop(unsafe { Box::from_raw(token) });
            tracing::debug!(id, error = %error(-rc), "CephFS refused a delegation");
            return Ok(false);
        }
        held.insert(id, Held { node, fh: open.fh, token, write: open.writable });
        d.granted.fetch_add(1, Ordering::Relaxed);
        Ok(true)
    }

    pub(crate) fn do_undelegate(&self, id: FileId) {
        let mut held = self.delegs.held.lock();
        let Some(h) = held.remove(&id) else { return };
        // SAFETY: the open file the delegation was taken on (a node's
        // file stays open while it lives). libcephfs takes its client
        // lock, so a callback running now has returned before the token is
        // freed.
        let rc = unsafe {
            (self.m.api.ceph_ll_delegation)(self.m.cm, h.fh, ffi::CEPH_DELEGATION_NONE, recall, h.token.cast())
        };
        if rc < 0 {
            tracing::warn!(id, error = %error(-rc), "could not give a CephFS delegation back");
        }
        // SAFETY: the delegation is gone; nothing refers to the token.
        drop(unsafe { Box::from_raw(h.token) });
        drop(held);
    }

    /// Before a rename, removal or new link of files this head holds
    /// CephFS delegations on, or a change of their attributes or extended
    /// attributes: the MDS takes such changes only once it has the
    /// capabilities the delegation holds back, so it recalls it and the
    /// change waits, even when it comes from the holder itself; and the
    /// DELEGRETURN that would end the wait may itself wait behind the
    /// change (seen: a removal, a truncation by the holder waited for the
    /// revocation). So the delegations are recalled first (as if the MDS
    /// had asked) and the request is answered DELAY, to come back once
    /// they are returned.
    pub(crate) fn recall_own(&self, ids: &[FileId]) -> VfsResult<()> {
        let held: Vec<FileId> = {
            let h = self.delegs.held.lock();
            ids.iter().copied().filter(|id| h.contains_key(id)).collect()
        };
        if held.is_empty() {
            return Ok(());
        }
        if let Some(sink) = self.delegs.sink.get() {
            for id in held {
                sink(id);
            }
        }
        Err(vfs::VfsError::Delay)
    }

    /// The open file to write `n` (file `id`) through: first recalls a
    /// read delegation this head holds on it (DELAY), which opening the
    /// file for writing would wait for.
    pub(crate) fn fh_write(&self, n: &Node, id: FileId) -> VfsResult<*mut Fh> {
        if let Some(open) = n.open_fh().filter(|o| o.writable) {
            return Ok(open.fh);
        }
        self.recall_own(&[id])?;
        n.fh_write()
    }

    /// Enables delegations on the mount: libcephfs's return timeout just
    /// below the cap-return timeout it checks it against.
    pub(crate) fn enable_delegations(&mut self) {
        if !self.settings.delegations {
            return;
        }
        // SAFETY: a mounted handle.
        let cap_return = unsafe { (self.m.api.ceph_get_cap_return_timeout)(self.m.cm) };
        let timeout = cap_return.saturating_sub(1);
        if u64::from(timeout) <= self.settings.delegation_return_secs {
            tracing::warn!(
                cap_return_secs = cap_return,
                delegation_return_secs = self.settings.delegation_return_secs,
                "no delegations on this CephFS export: the cluster's cap-return timeout leaves no room to recall them"
            );
            return;
        }
        let deadline = self.settings.call_deadline_secs;
        if deadline > 0 && self.settings.delegation_return_secs >= deadline {
            tracing::warn!(
                delegation_return_secs = self.settings.delegation_return_secs,
                call_deadline_secs = deadline,
                "a client slow to return a delegation will make other heads count the cluster as away"
            );
        }
        // SAFETY: a mounted handle.
        let rc = unsafe { (self.m.api.ceph_set_deleg_timeout)(self.m.cm, timeout) };
        if rc < 0 {
            tracing::warn!(error = %error(-rc), "no delegations on this CephFS export: libcephfs refused a timeout");
            return;
        }
        self.delegs.enabled = true;
    }
}
