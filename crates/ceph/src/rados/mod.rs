//! Small objects in RADOS, the store under CephFS: what heads share about
//! NFSv4 clients (their records and the cluster's grace period) lives
//! there rather than in any one head, so it outlives the head that wrote
//! it. Whole-object reads and writes (`rados_write_full` is atomic) and
//! RADOS's advisory exclusive lock for read-modify-write; nothing here is
//! large or hot.

pub mod ffi;

use std::ffi::CString;
use std::ptr;
use std::time::{Duration, Instant};

use crate::CephSettings;

/// A connection to the cluster and one pool (and namespace) in it.
pub struct Rados {
    api: &'static ffi::Api,
    cluster: ffi::rados_t,
    io: ffi::rados_ioctx_t,
    /// Names this process's locks: `OWNER/pid-nanos`, so a lock a dead
    /// owner left can be found and broken ([`Rados::break_locks_of`]).
    cookie: CString,
}

// SAFETY: librados's handles may be used from any thread; an I/O context's
// namespace is set once, before it is shared.
unsafe impl Send for Rados {}
unsafe impl Sync for Rados {}

fn c(s: &str) -> Result<CString, String> {
    CString::new(s).map_err(|_| format!("{s:?} holds NUL"))
}

fn errno_text(rc: i32) -> String {
    std::io::Error::from_raw_os_error(-rc).to_string()
}

/// How long to wait between tries for a lock another head holds.
const LOCK_RETRY: Duration = Duration::from_millis(20);

impl Rados {
    /// Connects as the `[ceph]` client to `pool`, objects in `namespace`.
    /// Every operation gives up after `op_timeout` instead of waiting for
    /// the cluster indefinitely.
    pub fn connect(
        ceph: &CephSettings,
        pool: &str,
        namespace: &str,
        owner: &str,
        op_timeout: Duration,
    ) -> Result<Rados, String> {
        let api = ffi::api()?;
        let id = c(&ceph.client_id)?;
        let mut cluster = ptr::null_mut();
        // SAFETY: `cluster` receives a new handle; `id` is a C string.
        let rc = unsafe { (api.rados_create)(&mut cluster, id.as_ptr()) };
        if rc < 0 {
            return Err(format!("rados_create: {}", errno_text(rc)));
        }
        let cookie = c(&format!(
            "{owner}/{}-{}",
            std::process::id(),
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos())
        ))?;
        // From here `r` owns `cluster` and shuts it down on every error path.
        let mut r = Rados { api, cluster, io: ptr::null_mut(), cookie };
        let conf = ceph.conf.as_ref().map(|p| p.to_string_lossy().into_owned());
        let conf_c = conf.as_deref().map(c).transpose()?;
        // SAFETY: a null path asks librados for its default search.
        let rc = unsafe { (api.rados_conf_read_file)(cluster, conf_c.as_ref().map_or(ptr::null(), |c| c.as_ptr())) };
        if rc < 0 {
            return Err(format!(
                "cannot read Ceph configuration {}: {}",
                conf.as_deref().unwrap_or("(default search)"),
                errno_text(rc)
            ));
        }
        let secs = op_timeout.as_secs().max(1).to_string();
        let mount = ceph.mount_timeout_secs.max(1).to_string();
        for (k, v) in [
            ("rados_osd_op_timeout", secs.as_str()),
            ("rados_mon_op_timeout", secs.as_str()),
            ("client_mount_timeout", mount.as_str()),
        ] {
            let (k, v) = (c(k)?, c(v)?);
            // SAFETY: valid handle and C strings.
            let rc = unsafe { (api.rados_conf_set)(cluster, k.as_ptr(), v.as_ptr()) };
            if rc < 0 {
                return Err(format!("rados_conf_set {k:?}: {}", errno_text(rc)));
            }
        }
        // SAFETY: valid, configured handle.
        let rc = unsafe { (api.rados_connect)(cluster) };
        if rc < 0 {
            return Err(format!(
                "cannot connect to the Ceph cluster for its RADOS objects within mount_timeout_secs ({} s): {}",
                ceph.mount_timeout_secs,
                errno_text(rc)
            ));
        }
        let pool_c = c(pool)?;
        let mut io = ptr::null_mut();
        // SAFETY: connected handle; `io` receives the context.
        let rc = unsafe { (api.rados_ioctx_create)(cluster, pool_c.as_ptr(), &mut io) };
        if rc < 0 {
            return Err(format!("cannot open RADOS pool {pool}: {}", errno_text(rc)));
        }
        r.io = io;
        let ns = c(namespace)?;
        // SAFETY: valid context, not yet shared.
        unsafe { (api.rados_ioctx_set_namespace)(io, ns.as_ptr()) };
        Ok(r)
    }

    /// The object's whole content; `None` if there is no such object.
    pub fn read(&self, oid: &str) -> Result<Option<Vec<u8>>, String> {
        let o = c(oid)?;
        let mut size = 0u64;
        let mut mtime: libc::time_t = 0;
        // SAFETY: valid context; out-pointers to locals.
        let rc = unsafe { (self.api.rados_stat)(self.io, o.as_ptr(), &mut size, &mut mtime) };
        if rc == -libc::ENOENT {
            return Ok(None);
        }
        if rc < 0 {
            return Err(format!("stat of RADOS object {oid}: {}", errno_text(rc)));
        }
        // Room for a few more bytes than the stat saw, so an object that
        // grew in between is read whole or noticed (the read fills it).
        let mut buf = vec![0u8; size as usize + 4096];
        // SAFETY: `buf` is writable for its length.
        let rc = unsafe { (self.api.rados_read)(self.io, o.as_ptr(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if rc == -libc::ENOENT {
            return Ok(None);
        }
        if rc < 0 {
            return Err(format!("read of RADOS object {oid}: {}", errno_text(rc)));
        }
        buf.truncate(rc as usize);
        Ok(Some(buf))
    }

    /// Replaces the object's content (or creates it) atomically.
    pub fn write_full(&self, oid: &str, data: &[u8]) -> Result<(), String> {
        let o = c(oid)?;
        // SAFETY: valid context; `data` readable for its length.
        let rc = unsafe { (self.api.rados_write_full)(self.io, o.as_ptr(), data.as_ptr().cast(), data.len()) };
        if rc < 0 {
            return Err(format!("write of RADOS object {oid}: {}", errno_text(rc)));
        }
        Ok(())
    }

    /// Removes the object; one that is not there is not an error.
    pub fn remove(&self, oid: &str) -> Result<(), String> {
        let o = c(oid)?;
        // SAFETY: valid context and C string.
        let rc = unsafe { (self.api.rados_remove)(self.io, o.as_ptr()) };
        if rc < 0 && rc != -libc::ENOENT {
            return Err(format!("removal of RADOS object {oid}: {}", errno_text(rc)));
        }
        Ok(())
    }

    /// Runs `f` holding RADOS's exclusive lock on `oid` (a read-modify-write
    /// no other head interleaves with). The lock lapses by itself after
    /// `hold` should this process die holding it; waits up to `wait` for it.
    pub fn locked<T>(
        &self,
        oid: &str,
        hold: Duration,
        wait: Duration,
        f: impl FnOnce() -> Result<T, String>,
    ) -> Result<T, String> {
        let (o, name, desc) = (c(oid)?, c("nfsx")?, c("nfsx cluster update")?);
        let give_up = Instant::now() + wait;
        loop {
            let mut d = libc::timeval {
                tv_sec: hold.as_secs() as libc::time_t,
                tv_usec: hold.subsec_micros() as libc::suseconds_t,
            };
            // SAFETY: valid context, C strings and timeval.
            let rc = unsafe {
                (self.api.rados_lock_exclusive)(
                    self.io,
                    o.as_ptr(),
                    name.as_ptr(),
                    self.cookie.as_ptr(),
                    desc.as_ptr(),
                    &mut d,
                    0,
                )
            };
            match rc {
                0 => break,
                rc if rc == -libc::EBUSY && Instant::now() < give_up => std::thread::sleep(LOCK_RETRY),
                rc if rc == -libc::EBUSY => {
                    return Err(format!("RADOS object {oid} stayed locked by another head for {wait:?}"))
                }
                rc => return Err(format!("lock of RADOS object {oid}: {}", errno_text(rc))),
            }
        }
        let out = f();
        // SAFETY: as above; a lock that lapsed meanwhile answers ENOENT.
        let rc = unsafe { (self.api.rados_unlock)(self.io, o.as_ptr(), name.as_ptr(), self.cookie.as_ptr()) };
        if rc < 0 && rc != -libc::ENOENT {
            tracing::warn!(oid, "cannot unlock RADOS object: {}", errno_text(rc));
        }
        out
    }
}

/// Room for the lockers' names `rados_list_lockers` returns.
const LOCKERS_BUF: usize = 4096;

impl Rados {
    /// Breaks the locks on `oid` that `owner`'s processes hold: a lock of a
    /// process known dead, which would otherwise hold up every other
    /// update until it lapses.
    pub fn break_locks_of(&self, oid: &str, owner: &str) -> Result<usize, String> {
        let (o, name) = (c(oid)?, c("nfsx")?);
        let mut exclusive = 0;
        let mut bufs = [[0u8; LOCKERS_BUF]; 4];
        let mut lens = [LOCKERS_BUF; 4];
        let [tag, clients, cookies, addrs] = &mut bufs;
        let [tl, cl, kl, al] = &mut lens;
        // SAFETY: valid context; every buffer is writable for its length.
        let n = unsafe {
            (self.api.rados_list_lockers)(
                self.io,
                o.as_ptr(),
                name.as_ptr(),
                &mut exclusive,
                tag.as_mut_ptr().cast(),
                tl,
                clients.as_mut_ptr().cast(),
                cl,
                cookies.as_mut_ptr().cast(),
                kl,
                addrs.as_mut_ptr().cast(),
                al,
            )
        };
        if n == -(libc::ENOENT as isize) {
            return Ok(0);
        }
        if n < 0 {
            return Err(format!("listing the lockers of RADOS object {oid}: {}", errno_text(n as i32)));
        }
        let split = |b: &[u8], len: usize| -> Vec<Vec<u8>> {
            b[..len.min(b.len())].split(|&x| x == 0).filter(|s| !s.is_empty()).map(<[u8]>::to_vec).collect()
        };
        let (clients, cookies) = (split(&bufs[1], lens[1]), split(&bufs[2], lens[2]));
        let prefix = format!("{owner}/");
        let mut broken = 0;
        for (client, cookie) in clients.iter().zip(&cookies) {
            if !cookie.starts_with(prefix.as_bytes()) {
                continue;
            }
            let (cl, ck) = (
                CString::new(client.clone()).map_err(|e| e.to_string())?,
                CString::new(cookie.clone()).map_err(|e| e.to_string())?,
            );
            // SAFETY: valid context and C strings.
            let rc =
                unsafe { (self.api.rados_break_lock)(self.io, o.as_ptr(), name.as_ptr(), cl.as_ptr(), ck.as_ptr()) };
            if rc < 0 && rc != -libc::ENOENT {
                return Err(format!("breaking a lock on RADOS object {oid}: {}", errno_text(rc)));
            }
            broken += 1;
        }
        Ok(broken)
    }
}

impl Drop for Rados {
    fn drop(&mut self) {
        // SAFETY: the handles are owned here and not used after.
        unsafe {
            if !self.io.is_null() {
                (self.api.rados_ioctx_destroy)(self.io);
            }
            (self.api.rados_shutdown)(self.cluster);
        }
    }
}
