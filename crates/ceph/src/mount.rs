//! One libcephfs client mounted at an export's directory.

use std::ffi::{c_int, CString};
use std::ptr;
use std::time::{Duration, Instant};

use vfs::{VfsError, VfsResult};

use crate::ffi::{self, ceph_mount_info, Api, UserPerm};
use crate::CephSettings;

pub(crate) struct Mount {
    pub api: &'static Api,
    pub cm: *mut ceph_mount_info,
    /// The mount's own credentials (root): nfsx checks access itself, as
    /// it does for every backend, so Ceph's client-side checks are off.
    pub perms: *const UserPerm,
    /// Files are opened read-only until written (`read_delegations`).
    pub read_only_first: bool,
}

// SAFETY: libcephfs's client serialises calls on a mount with its own lock;
// the mount and its credentials may be used from any thread.
unsafe impl Send for Mount {}
unsafe impl Sync for Mount {}

/// A C string for libcephfs; names with NUL were refused before this.
pub(crate) fn cstr(bytes: &[u8]) -> VfsResult<CString> {
    CString::new(bytes).map_err(|_| VfsError::Invalid)
}

/// Maps a libcephfs return code (a negated errno) to a result.
pub(crate) fn check(rc: c_int) -> VfsResult<c_int> {
    if rc >= 0 {
        Ok(rc)
    } else {
        Err(error(-rc))
    }
}

/// The neutral error for an errno from libcephfs. A cluster that cannot
/// be reached is a reason to try again (NFS3ERR_JUKEBOX, NFS4ERR_DELAY),
/// not an I/O error a client would give up on.
pub(crate) fn error(errno: c_int) -> VfsError {
    if out_of_reach(errno) {
        return VfsError::Delay;
    }
    VfsError::from_errno(errno)
}

/// [`error`] for a failed `ceph_ll_fsync` that may have carried data
/// written UNSTABLE (see [`VfsError::write_back`]). A cluster out of reach
/// keeps the data in libcephfs's cache for the next try.
pub(crate) fn write_back_error(errno: c_int) -> VfsError {
    if out_of_reach(errno) {
        return VfsError::Delay;
    }
    VfsError::write_back(errno)
}

fn out_of_reach(errno: c_int) -> bool {
    matches!(errno, libc::ENOTCONN | libc::ESHUTDOWN | libc::ETIMEDOUT | libc::ECONNREFUSED)
}

/// The pause between tries to end a session while the metadata server
/// restarts: it goes through replay and reconnect in seconds.
const RECLAIM_RETRY: Duration = Duration::from_secs(1);

/// Whether a failed `ceph_start_reclaim` may succeed on a new handle
/// later: the session was refused (EPERM: the metadata server restarted
/// while it opened) or the cluster did not answer.
fn retriable_reclaim(errno: c_int) -> bool {
    errno == libc::EPERM || out_of_reach(errno)
}

impl Mount {
    /// Connects to the cluster and mounts `path`.
    /// `instance` names this head to the metadata server across its
    /// restarts (libcephfs's client uuid): a restarted head ends the
    /// session its previous process left, whose capabilities would
    /// otherwise block every other client of those files until the
    /// session times out.
    pub fn open(settings: &CephSettings, path: &str, instance: Option<&str>) -> Result<Mount, String> {
        let mut m = Mount::configured(settings)?;
        let (api, cm) = (m.api, m.cm);
        let conf = settings.conf.as_ref().map(|p| p.to_string_lossy().into_owned());
        let unreachable = |e: VfsError| match e {
            VfsError::Delay => format!(
                "no Ceph monitor answered within mount_timeout_secs ({} s); check mon_host in {}",
                settings.mount_timeout_secs,
                conf.as_deref().unwrap_or("the default ceph.conf")
            ),
            e => e.to_string(),
        };
        if let Some(uuid) = instance {
            m.take_over(settings, uuid).map_err(|e| format!("cannot reach the Ceph cluster: {}", unreachable(e)))?;
        }
        let root = CString::new(path).map_err(|_| "path holds NUL".to_string())?;
        // SAFETY: valid mount handle and C string.
        let rc = unsafe { (api.ceph_mount)(cm, root.as_ptr()) };
        if rc < 0 {
            let why = match -rc {
                libc::ENOENT => "no such directory in the Ceph file system".to_string(),
                e => unreachable(error(e)),
            };
            return Err(format!("cannot mount CephFS {path}: {why}"));
        }
        // SAFETY: the mount is mounted; the returned credentials live as long as it.
        m.perms = unsafe { (api.ceph_mount_perms)(cm) };
        Ok(m)
    }

    /// Ends the session another head left under client uuid `uuid` (it
    /// died, and a live head took it over, or it is this head's previous
    /// process): the metadata server drops its capabilities and locks and
    /// blocklists it, so it cannot write again should it only have been
    /// cut off. `Ok(false)`: no such session.
    ///
    /// A metadata server restarting as this runs refuses the new client's
    /// session (libcephfs reports EPERM) or does not answer yet; it then
    /// keeps the old session for its owner to reclaim and serves no one
    /// until that happens. So a refused or unanswered try is made again on
    /// a fresh handle, every [`RECLAIM_RETRY`], for up to
    /// `mount_timeout_secs`.
    pub fn end_session(settings: &CephSettings, uuid: &str) -> Result<bool, String> {
        let deadline = Instant::now() + Duration::from_secs(settings.mount_timeout_secs.max(1).into());
        loop {
            match Mount::try_end_session(settings, uuid) {
                Ok(ended) => return Ok(ended),
                Err(rc) if retriable_reclaim(rc) && Instant::now() + RECLAIM_RETRY < deadline => {
                    tracing::debug!(instance = uuid, error = %VfsError::from_errno(rc), "the metadata server refused to end a session yet; trying again");
                    std::thread::sleep(RECLAIM_RETRY);
                }
                Err(rc) => return Err(format!("cannot end Ceph session {uuid}: {}", VfsError::from_errno(rc))),
            }
        }
    }

    /// One try of [`Mount::end_session`] on a new handle; `Err(errno)`.
    fn try_end_session(settings: &CephSettings, uuid: &str) -> Result<bool, c_int> {
        let m = Mount::configured(settings).map_err(|e| {
            tracing::warn!(error = %e, "cannot configure a Ceph client");
            libc::EINVAL
        })?;
        let c = cstr(uuid.as_bytes()).map_err(|_| libc::EINVAL)?;
        // SAFETY: a created, configured handle, never mounted; a C string.
        unsafe {
            let rc = (m.api.ceph_init)(m.cm);
            if rc < 0 {
                return Err(-rc);
            }
            match (m.api.ceph_start_reclaim)(m.cm, c.as_ptr(), ffi::CEPH_RECLAIM_RESET) {
                0 => {
                    (m.api.ceph_finish_reclaim)(m.cm);
                    Ok(true)
                }
                rc if -rc == libc::ENOENT => Ok(false),
                rc => Err(-rc),
            }
        }
    }

    /// A handle configured from `settings` (`ceph.conf`, nfsx's client
    /// options), neither initialised nor mounted.
    fn configured(settings: &CephSettings) -> Result<Mount, String> {
        let api = ffi::api()?;
        let id = CString::new(settings.client_id.as_str()).map_err(|_| "client_id holds NUL".to_string())?;
        let mut cm = ptr::null_mut();
        // SAFETY: `cm` receives a new handle; `id` is a valid C string.
        let rc = unsafe { (api.ceph_create)(&mut cm, id.as_ptr()) };
        if rc < 0 {
            return Err(format!("ceph_create: {}", VfsError::from_errno(-rc)));
        }
        // From here `m` owns `cm` and releases it on every error path.
        let mut m = Mount { api, cm, perms: ptr::null(), read_only_first: settings.read_delegations };
        let conf = settings.conf.as_ref().map(|p| p.to_string_lossy().into_owned());
        let conf_c = conf.as_deref().map(CString::new).transpose().map_err(|_| "conf path holds NUL".to_string())?;
        // SAFETY: a null path asks libcephfs for its default search.
        let rc = unsafe { (api.ceph_conf_read_file)(cm, conf_c.as_ref().map_or(ptr::null(), |c| c.as_ptr())) };
        if rc < 0 {
            return Err(format!(
                "cannot read Ceph configuration {}: {}",
                conf.as_deref().unwrap_or("(default search)"),
                VfsError::from_errno(-rc)
            ));
        }
        let mount_timeout = settings.mount_timeout_secs.max(1).to_string();
        for (k, v) in [
            // nfsx checks permissions against the NFS caller; the mount acts as root.
            ("client_permissions", "false"),
            // Give up connecting after this long rather than block `nfsx serve`.
            ("client_mount_timeout", mount_timeout.as_str()),
        ] {
            m.conf_set(k, v)?;
        }
        if settings.direct_reads.unwrap_or(settings.read_delegations) {
            // A head that opens a file read-only while another head has it
            // open for writing sees the metadata server take its cache
            // capability (Fc) back and give it again as the file's lock
            // moves between shared and mixed. A cached read (or libcephfs's
            // readahead) holds Fc; a read that starts while Fc is being
            // taken back waits, and 16.2 does not wake it when the last
            // holder lets go, only at the file's next capability message:
            // the READs waited until the writer head closed the file,
            // 15-25 s. Reads that go to the OSDs directly hold no Fc, so a
            // revocation completes at once.
            m.conf_set("client_debug_force_sync_read", "true")?;
        }
        if settings.quiet_client_log {
            m.quiet_client_log()?;
        }
        if let Some(fs) = &settings.fs_name {
            let c = CString::new(fs.as_str()).map_err(|_| "fs_name holds NUL".to_string())?;
            // SAFETY: valid mount handle and C string.
            let rc = unsafe { (api.ceph_select_filesystem)(cm, c.as_ptr()) };
            if rc < 0 {
                return Err(format!("cannot select file system {fs}: {}", VfsError::from_errno(-rc)));
            }
        }
        Ok(m)
    }

    /// Ends the session this head's previous process left (see
    /// [`Mount::end_session`]) and names this handle's session after it.
    fn take_over(&mut self, settings: &CephSettings, uuid: &str) -> VfsResult<()> {
        let api = self.api;
        let c = cstr(uuid.as_bytes())?;
        match Mount::end_session(settings, uuid) {
            Ok(true) => tracing::info!(instance = uuid, "ended the session of this head's previous process"),
            Ok(false) => {}
            Err(e) => tracing::warn!(instance = uuid, error = %e, "could not end an earlier session"),
        }
        // SAFETY: a created, configured, not yet mounted handle and a C string.
        unsafe {
            check((api.ceph_init)(self.cm))?;
            (api.ceph_set_uuid)(self.cm, c.as_ptr());
            (api.ceph_set_session_timeout)(self.cm, settings.session_timeout_secs);
        }
        Ok(())
    }

    /// Turns the in-memory debug log of client-side subsystems to 0/0
    /// where `ceph.conf` left Ceph 16.2's default: entries up to the second
    /// level are formatted and gathered on every call even when nothing is
    /// ever written out. A level an operator set is kept.
    fn quiet_client_log(&mut self) -> Result<(), String> {
        const DEFAULTS: [(&str, &str); 7] = [
            ("debug_client", "0/5"),
            ("debug_objectcacher", "0/5"),
            ("debug_objecter", "0/1"),
            ("debug_monc", "0/10"),
            ("debug_auth", "1/5"),
            ("debug_journaler", "0/5"),
            ("debug_rados", "0/5"),
        ];
        for (key, default) in DEFAULTS {
            if self.conf_get(key).as_deref() == Some(default) {
                self.conf_set(key, "0/0")?;
            }
        }
        Ok(())
    }

    fn conf_get(&self, key: &str) -> Option<String> {
        let k = CString::new(key).ok()?;
        let mut buf = [0u8; 64];
        // SAFETY: valid mount handle, C string, and a buffer of the given length.
        let rc = unsafe { (self.api.ceph_conf_get)(self.cm, k.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
        if rc < 0 {
            return None;
        }
        let end = buf.iter().position(|b| *b == 0)?;
        std::str::from_utf8(&buf[..end]).ok().map(str::to_string)
    }

    fn conf_set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let (k, v) = (CString::new(key).unwrap_or_default(), CString::new(value).unwrap_or_default());
        // SAFETY: valid mount handle and C strings.
        let rc = unsafe { (self.api.ceph_conf_set)(self.cm, k.as_ptr(), v.as_ptr()) };
        if rc < 0 {
            return Err(format!("ceph_conf_set {key}={value}: {}", VfsError::from_errno(-rc)));
        }
        Ok(())
    }

    /// The file system's id within the cluster.
    pub fn fs_cid(&self) -> i64 {
        // SAFETY: valid, mounted handle.
        unsafe { (self.api.ceph_get_fs_cid)(self.cm) }
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        // SAFETY: every inode and open file referencing the mount is gone
        // (they hold it through an `Arc`); unmounting a handle that never
        // mounted fails harmlessly before release frees it.
        unsafe {
            if (self.api.ceph_unmount)(self.cm) == 0 {
                tracing::info!("CephFS unmounted");
            }
            (self.api.ceph_release)(self.cm);
        }
    }
}

/// Credentials of a new object's owner, so the metadata server records it
/// as the creator without a second request to change the owner.
pub(crate) struct OwnerPerm<'a> {
    api: &'a Api,
    pub ptr: *mut UserPerm,
}

impl<'a> OwnerPerm<'a> {
    pub fn new(m: &'a Mount, owner: vfs::Owner) -> OwnerPerm<'a> {
        // SAFETY: no group list is passed.
        let ptr = unsafe { (m.api.ceph_userperm_new)(owner.uid, owner.gid, 0, ptr::null_mut()) };
        OwnerPerm { api: m.api, ptr }
    }
}

impl Drop for OwnerPerm<'_> {
    fn drop(&mut self) {
        // SAFETY: created by ceph_userperm_new and not used after this.
        unsafe { (self.api.ceph_userperm_destroy)(self.ptr) }
    }
}
