//! NFSv4 limits and policies (`[core.nfs4]` in the configuration file).

use serde::Deserialize;

/// Which delegations OPEN may hand out when no conflict exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DelegationPolicy {
    /// Never.
    None,
    /// Read delegations only.
    Read,
    /// Read delegations, and write delegations to writers.
    ReadWrite,
}

/// How `owner` and `owner_group` are sent: `user@domain` names looked up
/// in the host's passwd/group files, or the bare numeric id. Numeric is
/// the default because it is what the Linux server sends AUTH_SYS clients
/// (`nfs4_disable_idmapping`) and what Linux clients send: it needs no
/// id-mapping domain shared by client and server, and an id set by a
/// client reads back unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OwnerFormat {
    Name,
    Numeric,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Nfs4Settings {
    /// Lease time in seconds (`lease_time` attribute): a client that sends
    /// nothing for this long loses its state once another client needs it.
    pub lease_secs: u32,
    /// Grace period after a restart during which clients known from the
    /// state directory reclaim their opens and locks and no new state is
    /// granted. Ends early once every known client sent RECLAIM_COMPLETE.
    pub grace_secs: u32,
    /// Expired clients keep their state ("courtesy clients") until another
    /// client conflicts with it or this many seconds pass.
    pub courtesy_secs: u32,
    /// Client records (EXCHANGE_ID / SETCLIENTID); beyond it new clients get
    /// NFS4ERR_RESOURCE after expired ones have been reclaimed.
    pub max_clients: usize,
    /// Sessions one client may hold.
    pub max_sessions_per_client: usize,
    /// Fore-channel slots granted per session (upper bound on what the
    /// client asks for in CREATE_SESSION).
    pub max_slots: u32,
    /// Slots the server first asks the client to use
    /// (`sr_target_highest_slotid + 1`); raised towards `max_slots` while
    /// the client keeps them busy, lowered again when it idles.
    pub initial_target_slots: u32,
    /// Back-channel slots the server uses for callbacks.
    pub max_cb_slots: u32,
    /// Operations allowed in one COMPOUND (`ca_maxoperations`; for minor
    /// version 0 longer compounds get NFS4ERR_RESOURCE).
    pub max_ops: u32,
    /// Byte-range locks bind READ and WRITE too (RFC 8881 section 9.1.4,
    /// mandatory locking): I/O over a range another lock-owner holds a
    /// conflicting lock on gets NFS4ERR_LOCKED. Default false: locks are
    /// advisory, as POSIX and Linux's server have them, and only stop
    /// other LOCKs.
    pub mandatory_locks: bool,
    /// Largest request and reply a session is offered (`ca_maxrequestsize`,
    /// `ca_maxresponsesize`).
    pub max_request_size: u32,
    pub max_response_size: u32,
    /// Largest reply kept in a slot's reply cache (`ca_maxresponsesize_cached`).
    pub max_cached_response: u32,
    /// Open-owners plus lock-owners one client may create.
    pub max_owners_per_client: usize,
    /// Byte-range locks one client may hold.
    pub max_locks_per_client: usize,
    /// Stateids (opens, locks, delegations) one client may hold.
    pub max_stateids_per_client: usize,
    /// Delegations one client may hold; past it OPEN grants none
    /// (WND4_RESOURCE) but still opens. Delegations are the server's to
    /// give, and a client that never returns them (nothing conflicts)
    /// would otherwise fill `max_stateids_per_client` with them until its
    /// OPENs themselves fail.
    pub max_delegations_per_client: usize,
    /// Stateids of purged clients (lease expired and another client
    /// conflicted, or the client rebooted) remembered so that their use
    /// answers NFS4ERR_EXPIRED instead of BAD_STATEID; oldest forgotten
    /// first, 0 remembers none.
    pub max_expired_stateids: usize,
    pub delegations: DelegationPolicy,
    pub owner_format: OwnerFormat,
    /// The NFSv4 id-mapping domain (`user@domain`).
    pub domain: String,
    /// Seconds an owner name (or its absence) found in the host's user
    /// and group databases is used before it is looked up again.
    pub owner_cache_secs: u32,
    /// Owner names and ids kept; past it the cache starts over.
    pub owner_cache_entries: usize,
    /// Bytes one COPY copies before it answers (NFSv4.2): a longer copy
    /// is answered short with the count done, and the client asks for the
    /// rest, so no worker is held for a whole large file (knfsd caps its
    /// synchronous copies the same way, at 4 MiB).
    pub copy_sync_max: u64,
    /// Asynchronous COPYs running at once (each on a thread of its own);
    /// past it a COPY is answered short instead.
    pub max_async_copies: usize,
    /// How long a GETATTR of another client waits for the answer to the
    /// CB_GETATTR sent to a write delegation's holder before the
    /// delegation is recalled instead (and the GETATTR told to retry).
    pub cb_getattr_wait_ms: u32,
    /// Directory delegations (GET_DIR_DELEGATION, NFSv4.1 and later) on
    /// exports whose backend reports every change of a directory
    /// (LocalFs, through inotify); their holders are told of changes with
    /// CB_NOTIFY. False answers every request GDD4_UNAVAIL.
    pub dir_delegations: bool,
    /// Directory delegations held in all, and by one client; past either,
    /// GET_DIR_DELEGATION answers GDD4_UNAVAIL. Each held directory costs
    /// one inotify watch (`fs.inotify.max_user_watches`).
    pub max_dir_delegations: usize,
    pub max_dir_delegations_per_client: usize,
    /// Changes waiting to be told to one holder (while its CB_NOTIFY before
    /// is out, or attribute changes within the delay it asked for); one
    /// more recalls the delegation instead.
    pub dir_notify_queue: usize,
    /// How long a CB_NOTIFY may go unanswered before its delegation is
    /// recalled (and revoked a lease later if not returned).
    pub dir_notify_answer_secs: u32,
    /// How often the transport looks for attribute changes whose delay
    /// passed and for unanswered CB_NOTIFYs, while any directory
    /// delegation is held: the granularity of the delays clients ask for.
    pub dir_notify_tick_ms: u32,
}

impl Default for Nfs4Settings {
    fn default() -> Self {
        Nfs4Settings {
            lease_secs: 90,
            grace_secs: 90,
            courtesy_secs: 24 * 3600,
            max_clients: 4096,
            max_sessions_per_client: 16,
            max_slots: 1024,
            initial_target_slots: 64,
            max_cb_slots: 16,
            max_ops: 64,
            mandatory_locks: false,
            max_request_size: 1024 * 1024 + 64 * 1024,
            max_response_size: 1024 * 1024 + 64 * 1024,
            max_cached_response: 64 * 1024,
            max_owners_per_client: 65536,
            max_locks_per_client: 65536,
            max_stateids_per_client: 1 << 20,
            max_delegations_per_client: 65536,
            max_expired_stateids: 65536,
            delegations: DelegationPolicy::ReadWrite,
            owner_format: OwnerFormat::Numeric,
            domain: "localdomain".into(),
            owner_cache_secs: 60,
            owner_cache_entries: 65536,
            copy_sync_max: 64 * 1024 * 1024,
            max_async_copies: 16,
            cb_getattr_wait_ms: 100,
            dir_delegations: true,
            max_dir_delegations: 65536,
            max_dir_delegations_per_client: 4096,
            dir_notify_queue: 1024,
            dir_notify_answer_secs: 15,
            dir_notify_tick_ms: 50,
        }
    }
}

impl Nfs4Settings {
    pub(crate) fn sanitized(mut self) -> Self {
        self.lease_secs = self.lease_secs.max(1);
        self.max_slots = self.max_slots.max(1);
        self.initial_target_slots = self.initial_target_slots.clamp(1, self.max_slots);
        self.max_cb_slots = self.max_cb_slots.max(1);
        self.max_ops = self.max_ops.max(2);
        self.max_clients = self.max_clients.max(1);
        self.max_sessions_per_client = self.max_sessions_per_client.max(1);
        self.max_request_size = self.max_request_size.max(8192);
        self.max_response_size = self.max_response_size.max(8192);
        self.copy_sync_max = self.copy_sync_max.max(4096);
        self.dir_notify_queue = self.dir_notify_queue.max(1);
        self.dir_notify_tick_ms = self.dir_notify_tick_ms.max(1);
        self
    }
}
