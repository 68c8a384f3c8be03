//! Every limit the protocol core applies, with its default.
//!
//! The transport reads these from the configuration file (`[core]` table);
//! anything left out takes the default below.

use serde::Deserialize;

const MIB: u32 = 1024 * 1024;

/// An NFS version (and NFSv4 minor version) the server may offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum NfsVersion {
    #[serde(rename = "3")]
    V3,
    #[serde(rename = "4.0")]
    V40,
    #[serde(rename = "4.1")]
    V41,
    #[serde(rename = "4.2")]
    V42,
}

impl NfsVersion {
    pub const ALL: [NfsVersion; 4] = [NfsVersion::V3, NfsVersion::V40, NfsVersion::V41, NfsVersion::V42];
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CoreSettings {
    /// Largest READ the server performs (FSINFO `rtmax`); longer requests are
    /// shortened, which RFC 1813 allows (the reply's count says how much).
    pub rtmax: u32,
    /// Preferred READ size (FSINFO `rtpref`); capped at `rtmax`.
    pub rtpref: u32,
    /// Largest WRITE the server performs (FSINFO `wtmax`); longer requests
    /// become short writes (see `ops/v3/write.rs`).
    pub wtmax: u32,
    /// Preferred WRITE size (FSINFO `wtpref`); capped at `wtmax`.
    pub wtpref: u32,
    /// Preferred READDIR request size (FSINFO `dtpref`).
    pub dtpref: u32,
    /// Largest READDIR / READDIRPLUS reply body the server builds, whatever
    /// `count`/`maxcount` the client asked for; bounds memory per request.
    pub max_readdir_reply: u32,
    /// Entries asked of the backend per `Vfs::readdir` call while a reply
    /// is being filled.
    pub readdir_batch: u32,
    /// FSINFO `maxfilesize`.
    pub max_file_size: u64,
    /// PATHCONF `linkmax`.
    pub link_max: u32,
    /// Longest file name accepted (PATHCONF `name_max`); longer names get
    /// NFS3ERR_NAMETOOLONG before the backend is asked.
    pub name_max: u32,
    /// FSSTAT `invarsec`: seconds the file system is not expected to change.
    pub fsstat_invarsec: u32,
    /// Entries kept in the MOUNT list reported by DUMP; the oldest entry
    /// is dropped when a new mount would exceed it.
    pub max_mount_entries: usize,
    /// Warnings about one kind of client misbehaviour that are logged in
    /// full before the rest are sampled (a flood must not flood the log).
    pub warn_burst: u64,
    /// After `warn_burst`, one warning in this many is logged.
    pub warn_sample_every: u64,
    /// Replies kept in the duplicate request cache, which answers a
    /// retransmitted non-idempotent NFSv3 call or NFSv4.0 COMPOUND with the
    /// first execution's reply instead of running it again; the oldest is
    /// dropped when full. 0 turns the cache off.
    pub drc_entries: usize,
    /// Largest reply (bytes, RPC header included) the duplicate request
    /// cache keeps; bigger ones are not cached. Bounds its memory at about
    /// `drc_entries` times this.
    pub drc_max_reply_bytes: usize,
    /// Seconds a cached reply is used; clients retransmit within a minute
    /// or two, older entries only take room.
    pub drc_secs: u32,
    /// Run requests that touch no disk (NULL, portmap, attribute reads of
    /// objects the backend holds resident, SEQUENCE-only compounds) on
    /// the connection's own thread instead of a worker: no hand-off, no
    /// context switch. false sends every request to a worker.
    pub inline_requests: bool,
    /// Try NFSv3 READs smaller than `read_sendfile_min` (and larger ones
    /// beside other requests of their connection, see
    /// `read_sendfile_alone_only`) on the connection's thread, reading
    /// without waiting (`RWF_NOWAIT`): data in the page cache is answered
    /// with no hand-off, anything else goes to a worker.
    pub inline_cached_reads: bool,
    /// READs of at least this many bytes are sent from the page cache
    /// (sendfile) instead of being read into memory and written from
    /// there, saving one copy of the data; 0 never does.
    pub read_sendfile_min: u32,
    /// Large READs go by sendfile only while alone on their connection
    /// (nothing else of it running, received or waiting to be sent);
    /// beside others an NFSv3 READ of cached data is copied on the
    /// connection's own thread (no hand-off), and any other READ's data is
    /// read into memory and written with its reply (while the connection's
    /// reply queue is short: see `server::conn`). Measured over
    /// loopback, sendfile halves the server's CPU for a lone 1 MiB READ
    /// (1.5-1.8x the rate) but lost to copying with several READs in
    /// flight (docs/BENCHMARKS.md, "READs in flight and sendfile").
    /// false: every READ of at least `read_sendfile_min` by sendfile.
    pub read_sendfile_alone_only: bool,
    /// The NFS versions offered (as knfsd's `vers3`, `vers4.0`, `vers4.1`
    /// in nfs.conf): a call for another gets PROG_MISMATCH (NFS version)
    /// or NFS4ERR_MINOR_VERS_MISMATCH (NFSv4 minor version), which is how
    /// clients negotiate down. MOUNT and NLM stay on either way.
    pub versions: Vec<NfsVersion>,
    /// NFSv4 limits and policies (`[core.nfs4]`).
    pub nfs4: crate::state::Nfs4Settings,
    /// NLM's calls to clients and its limits (`[core.nlm]`).
    pub nlm: crate::NlmSettings,
    /// pNFS flexible-file data servers (RFC 8435), as `"HOST:PORT"`:
    /// servers that serve the same exports under the same file handles
    /// (heads of a cluster over one store, sharing a handle key). When
    /// set, this server is also a pNFS metadata server: NFSv4.1 clients
    /// get layouts sending their READs and WRITEs of files on shared
    /// exports to these servers over NFSv3, each file to one of them.
    pub pnfs_data_servers: Vec<std::net::SocketAddr>,
    /// A data server a client reports unreachable or failing (LAYOUTERROR,
    /// or the error reports of a LAYOUTRETURN) is named in no new layout
    /// for this long; 0 only counts the reports. Default 30.
    pub pnfs_error_hold_secs: u32,
    /// RPCSEC_GSS context limits; the server fills them from its `[gss]`
    /// table (where the Kerberos settings are), not from `[core]`.
    #[serde(skip)]
    pub gss: crate::gss::GssLimits,
}

impl Default for CoreSettings {
    fn default() -> Self {
        CoreSettings {
            rtmax: MIB,
            rtpref: MIB,
            wtmax: MIB,
            wtpref: MIB,
            dtpref: 64 * 1024,
            max_readdir_reply: MIB,
            readdir_batch: 512,
            max_file_size: i64::MAX as u64,
            link_max: 32000,
            name_max: 255,
            fsstat_invarsec: 0,
            max_mount_entries: 4096,
            warn_burst: 100,
            warn_sample_every: 1000,
            drc_entries: 4096,
            drc_max_reply_bytes: 4096,
            drc_secs: 120,
            inline_requests: true,
            read_sendfile_min: 64 * 1024,
            read_sendfile_alone_only: true,
            inline_cached_reads: true,
            versions: NfsVersion::ALL.to_vec(),
            nfs4: Default::default(),
            nlm: Default::default(),
            pnfs_data_servers: Vec::new(),
            pnfs_error_hold_secs: 30,
            gss: Default::default(),
        }
    }
}

impl CoreSettings {
    /// Settings with every value forced into the range the code relies on
    /// (non-zero sizes, preferences not above maxima).
    pub(crate) fn sanitized(mut self) -> Self {
        self.rtmax = self.rtmax.max(4096);
        self.wtmax = self.wtmax.max(4096);
        self.rtpref = self.rtpref.clamp(512, self.rtmax);
        self.wtpref = self.wtpref.clamp(512, self.wtmax);
        self.dtpref = self.dtpref.max(512);
        self.max_readdir_reply = self.max_readdir_reply.max(1024);
        self.readdir_batch = self.readdir_batch.max(1);
        self.name_max = self.name_max.clamp(1, 255);
        self.warn_sample_every = self.warn_sample_every.max(1);
        self.nfs4 = self.nfs4.sanitized();
        self.nlm = self.nlm.sanitized();
        if self.versions.is_empty() {
            tracing::error!("[core] versions is empty; offering every NFS version");
            self.versions = NfsVersion::ALL.to_vec();
        }
        self
    }

    /// Whether `v` is offered.
    pub fn offers(&self, v: NfsVersion) -> bool {
        self.versions.contains(&v)
    }

    /// The lowest and highest NFS program versions offered, for
    /// PROG_MISMATCH.
    pub fn nfs_program_versions(&self) -> (u32, u32) {
        let v3 = self.offers(NfsVersion::V3);
        let v4 = [NfsVersion::V40, NfsVersion::V41, NfsVersion::V42].into_iter().any(|v| self.offers(v));
        (if v3 { 3 } else { 4 }, if v4 { 4 } else { 3 })
    }
}
