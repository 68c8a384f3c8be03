//! The share-denial gate: how heads that are not a cluster (no RADOS
//! record to meet in) learn that an OPEN somewhere is about to deny.
//!
//! Until some client asks for an OPEN that denies, no open anywhere denies
//! anything, so an access cannot conflict and need not be held in CephFS
//! (an MDS lock request per OPEN and per CLOSE; the Linux client always
//! asks for DENY_NONE). Each head therefore holds a CephFS *read*
//! delegation on one file of the file system (`share_gate_path`), opened
//! read-only; many heads hold one at once. A head about to grant the first
//! denial opens that file for writing: the MDS recalls every read
//! delegation before it lets the writer at the file, and each head, called
//! back, starts holding its opens' modes in CephFS (those granted already
//! first) before it gives its delegation back. The writer's open returns
//! only then, so from that moment every head's opens are in CephFS, where
//! the denial meets them. The writer leaves a byte in the file, which
//! says to heads started later that they hold their modes from the start.
//!
//! A head slower to give its delegation back than libcephfs's delegation
//! timeout (set just below the MDS's cap-return timeout) has its gate
//! client unmounted and the writer goes on: the gate has its own client,
//! so that the head's exports are not cut off with it.

use std::ffi::c_void;
use std::ptr;

use parking_lot::Mutex;
use vfs::{Errno, ShareDenialSink, VfsError, VfsResult};

use crate::ffi::{self, ceph_statx, Fh, Inode, AT_SYMLINK_NOFOLLOW, CEPH_STATX_SIZE};
use crate::mount::{check, cstr, error, Mount};
use crate::CephSettings;

/// The gate of one export's file system.
#[derive(Default)]
pub(crate) struct Gate {
    watch: Mutex<Option<Watch>>,
}

/// The read delegation held while watching, on a client of its own.
struct Watch {
    m: Mount,
    inode: *mut Inode,
    fh: *mut Fh,
    token: *mut ShareDenialSink,
}

// SAFETY: the pointers belong to `m`, used under the gate's lock; the
// token is only read by the callback until the delegation is given back.
unsafe impl Send for Watch {}

/// libcephfs's recall callback, under its client lock: only tells the
/// server, which gives the delegation back from another thread.
unsafe extern "C" fn recalled(_fh: *mut Fh, token: *mut c_void) {
    // SAFETY: the sink this module leaked for the delegation; freed only
    // after the delegation is given back.
    let sink = unsafe { &*(token as *const ShareDenialSink) };
    sink();
}

impl Gate {
    /// Starts watching: `Ok(true)` with the delegation held and the file
    /// still empty.
    /// `instance`: the head's session name; the gate's client goes by it
    /// with a suffix, so that a restarted head ends the session its
    /// previous process left (which would hold its read delegation, and
    /// make another head's first denial wait for the MDS to time it out).
    pub fn watch(&self, settings: &CephSettings, instance: Option<&str>, sink: ShareDenialSink) -> VfsResult<bool> {
        let path = settings.share_gate_path.as_str();
        if path.is_empty() || !settings.share_reservations {
            return Ok(false);
        }
        let mut slot = self.watch.lock();
        if slot.is_some() {
            return Ok(true);
        }
        let m = root_mount(settings, instance)?;
        // SAFETY: a mounted handle.
        let cap_return = unsafe { (m.api.ceph_get_cap_return_timeout)(m.cm) };
        // SAFETY: a mounted handle.
        check(unsafe { (m.api.ceph_set_deleg_timeout)(m.cm, cap_return.saturating_sub(1).max(1)) })?;
        let inode = lookup_or_create(&m, settings)?;
        let mut w = Watch { m, inode, fh: ptr::null_mut(), token: ptr::null_mut() };
        // SAFETY: a referenced inode of `w.m`; `fh` receives the file.
        check(unsafe { (w.m.api.ceph_ll_open)(w.m.cm, w.inode, libc::O_RDONLY, &mut w.fh, w.m.perms) })?;
        let token = Box::into_raw(Box::new(sink));
        // SAFETY: a file open on this mount; the token outlives the
        // delegation (freed in `Watch::drop`, or here when refused).
        let rc = unsafe { (w.m.api.ceph_ll_delegation)(w.m.cm, w.fh, ffi::CEPH_DELEGATION_RD, recalled, token.cast()) };
        if rc < 0 {
            // SAFETY: no delegation was kept, so nothing refers to it.
            drop(unsafe { Box::from_raw(token) });
            tracing::info!(error = %error(-rc), "another head is granting an OPEN that denies (or CephFS refused a read delegation): holding share modes in CephFS from the start");
            return Ok(false);
        }
        w.token = token;
        // Read under the delegation's capabilities: a writer after this
        // recalls it first.
        if size(&w.m, w.inode)? > 0 {
            tracing::info!(
                path,
                "an OPEN that denies was granted before: holding share modes in CephFS from the start"
            );
            return Ok(false);
        }
        *slot = Some(w);
        Ok(true)
    }

    /// Whether the gate file says a denial was granted (watching: read
    /// under the delegation's capabilities, so no request while it holds).
    pub fn marked(&self) -> VfsResult<bool> {
        match &*self.watch.lock() {
            Some(w) => Ok(size(&w.m, w.inode)? > 0),
            None => Ok(false),
        }
    }

    /// Gives the delegation back and ends the gate's client.
    pub fn unwatch(&self) {
        drop(self.watch.lock().take());
    }

    /// Breaks every other head's delegation and leaves the mark: opens the
    /// file for writing (which waits until all are given back) and writes.
    pub fn mark(&self, settings: &CephSettings, instance: Option<&str>) -> VfsResult<()> {
        self.unwatch();
        let path = settings.share_gate_path.as_str();
        if path.is_empty() || !settings.share_reservations {
            return Ok(());
        }
        let m = root_mount(settings, instance)?;
        let inode = lookup_or_create(&m, settings)?;
        let mut fh = ptr::null_mut();
        // SAFETY: a referenced inode of `m`; `fh` receives the file, closed
        // below; the inode reference is put after it.
        unsafe {
            let opened = check((m.api.ceph_ll_open)(m.cm, inode, libc::O_WRONLY, &mut fh, m.perms));
            let written = opened.and_then(|_| {
                check((m.api.ceph_ll_write)(m.cm, fh, 0, 1, b"1".as_ptr().cast()))?;
                check((m.api.ceph_ll_fsync)(m.cm, fh, 0))
            });
            if !fh.is_null() {
                (m.api.ceph_ll_close)(m.cm, fh);
            }
            (m.api.ceph_ll_put)(m.cm, inode);
            written.map(|_| ())
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        // SAFETY: this watch's own file, inode and token; libcephfs takes
        // its client lock, so a callback running now has returned before
        // the token is freed.
        unsafe {
            if !self.token.is_null() {
                let rc = (self.m.api.ceph_ll_delegation)(
                    self.m.cm,
                    self.fh,
                    ffi::CEPH_DELEGATION_NONE,
                    recalled,
                    self.token.cast(),
                );
                if rc < 0 {
                    tracing::warn!(error = %error(-rc), "could not give the share-denial gate's delegation back");
                }
                drop(Box::from_raw(self.token));
            }
            if !self.fh.is_null() {
                (self.m.api.ceph_ll_close)(self.m.cm, self.fh);
            }
            (self.m.api.ceph_ll_put)(self.m.cm, self.inode);
        }
    }
}

/// A client of the file system's root, where the gate file lives for every
/// head whatever it exports.
fn root_mount(settings: &CephSettings, instance: Option<&str>) -> VfsResult<Mount> {
    let name = instance.map(session_name);
    Mount::open(settings, "/", name.as_deref()).map_err(|e| {
        tracing::error!(error = %e, "the share-denial gate cannot mount the file system's root");
        VfsError::Io(Errno::EIO)
    })
}

/// The name the gate's session of head `instance` goes by.
fn session_name(instance: &str) -> String {
    format!("{instance}:share-gate")
}

/// Ends the gate session an earlier process of head `instance` left, before
/// the head mounts anything. A metadata server that restarted while that
/// process was gone keeps its sessions for it to reclaim, and serves no
/// client until it has (it stays in client replay): the head's export mount
/// would wait for it, and the gate, mounted after the export, would never
/// end its own old session.
pub(crate) fn end_previous_session(settings: &CephSettings, instance: &str) {
    match Mount::end_session(settings, &session_name(instance)) {
        Ok(true) => tracing::info!(instance, "ended the share-denial gate session of this head's previous process"),
        Ok(false) => {}
        Err(e) => tracing::warn!(instance, error = %e, "could not end an earlier share-denial gate session"),
    }
}

/// The inode at absolute `path` (a reference the caller puts).
fn lookup(m: &Mount, path: &str) -> VfsResult<*mut Inode> {
    let mut cur = ptr::null_mut();
    // SAFETY: a mounted handle; `cur` receives a reference.
    check(unsafe { (m.api.ceph_ll_lookup_root)(m.cm, &mut cur) })?;
    for name in path.split('/').filter(|n| !n.is_empty()) {
        let c = cstr(name.as_bytes())?;
        let mut next = ptr::null_mut();
        let mut stx = ceph_statx::default();
        // SAFETY: `cur` is a referenced inode, put once the next is found.
        let rc = unsafe {
            let rc =
                (m.api.ceph_ll_lookup)(m.cm, cur, c.as_ptr(), &mut next, &mut stx, 0, AT_SYMLINK_NOFOLLOW, m.perms);
            (m.api.ceph_ll_put)(m.cm, cur);
            rc
        };
        check(rc)?;
        cur = next;
    }
    Ok(cur)
}

/// The gate file's inode through `m`, made first if there is none. It is
/// made through a client of its own, which ends before `m` opens it: the
/// creator's exclusive capabilities would make the next head's read-only
/// open recall this head's delegation for nothing.
fn lookup_or_create(m: &Mount, settings: &CephSettings) -> VfsResult<*mut Inode> {
    let path = settings.share_gate_path.as_str();
    match lookup(m, path) {
        Err(VfsError::NotFound) => {
            create(settings, path)?;
            lookup(m, path)
        }
        r => r,
    }
}

/// Makes the empty gate file through a client that ends with the call.
fn create(settings: &CephSettings, path: &str) -> VfsResult<()> {
    let (dir, name) = path.rsplit_once('/').ok_or(VfsError::Invalid)?;
    let m = root_mount(settings, None)?;
    let parent = lookup(&m, dir)?;
    let c = cstr(name.as_bytes())?;
    let (mut inode, mut fh) = (ptr::null_mut(), ptr::null_mut());
    let mut stx = ceph_statx::default();
    // SAFETY: a referenced directory of `m`; what the create returns is
    // closed and put here.
    let rc = unsafe {
        let rc = (m.api.ceph_ll_create)(
            m.cm,
            parent,
            c.as_ptr(),
            0o644,
            libc::O_CREAT | libc::O_EXCL | libc::O_RDONLY,
            &mut inode,
            &mut fh,
            &mut stx,
            0,
            0,
            m.perms,
        );
        if rc >= 0 {
            (m.api.ceph_ll_close)(m.cm, fh);
            (m.api.ceph_ll_put)(m.cm, inode);
        }
        (m.api.ceph_ll_put)(m.cm, parent);
        rc
    };
    match check(rc) {
        Ok(_) | Err(VfsError::Exists) => Ok(()),
        Err(e) => Err(e),
    }
}

fn size(m: &Mount, inode: *mut Inode) -> VfsResult<u64> {
    let mut stx = ceph_statx::default();
    // SAFETY: a referenced inode of `m`.
    check(unsafe { (m.api.ceph_ll_getattr)(m.cm, inode, &mut stx, CEPH_STATX_SIZE, 0, m.perms) })?;
    Ok(stx.stx_size)
}
