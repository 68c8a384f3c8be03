//! `nfsx cluster`: the heads' shared NFSv4 record in RADOS.

use std::path::PathBuf;
use std::time::Duration;

use clap::Subcommand;

#[derive(Subcommand)]
pub enum ClusterCommand {
    /// Print the shared record (JSON): the grace epoch, which heads are in
    /// grace and until when, the epoch each head last saw, takeovers.
    Status,
    /// Hand a dead head's NFSv4 clients to another head, put the cluster
    /// in grace, wait until every live head enforces it, and end the dead
    /// head's Ceph sessions. Run it before the dead head's address moves to
    /// the other head; its clients then reclaim their opens and locks
    /// there. (Heads do this by themselves after `takeover_after_secs`.)
    Takeover {
        /// The dead head's `[cluster] node`.
        dead: String,
        /// The head that takes its address over.
        by: String,
        /// Give up waiting for the heads after this many seconds.
        #[arg(long, default_value_t = 15)]
        wait_secs: u64,
    },
    /// A head taken over is coming back: the cluster enters grace and the
    /// head that took its clients ends their state, so they reclaim it from
    /// the returning head. Run it after the address has moved back, before
    /// the head starts.
    GiveBack {
        /// The returning head's `[cluster] node`.
        head: String,
        #[arg(long, default_value_t = 15)]
        wait_secs: u64,
    },
}

/// Runs one command with the `[ceph]` and `[cluster]` settings of `config`.
pub fn run(config: Option<PathBuf>, ceph_conf: Option<PathBuf>, cmd: ClusterCommand) -> anyhow::Result<()> {
    let mut settings = match &config {
        Some(p) => server::Settings::load(p)?,
        None => server::Settings::default(),
    };
    if let Some(c) = ceph_conf {
        settings.ceph.conf = Some(c);
    }
    // Locks this command takes are named apart from every head's.
    let shared = settings.cluster.connect(&settings.ceph, "nfsx-admin")?;
    let err = |e: String| anyhow::anyhow!(e);
    match cmd {
        ClusterCommand::Status => {
            let r = shared.read().map_err(err)?;
            println!("{}", serde_json::to_string_pretty(&r)?);
        }
        ClusterCommand::Takeover { dead, by, wait_secs } => {
            let grace = Duration::from_secs(settings.core.nfs4.grace_secs.into());
            let t = server::cluster::admin::takeover(
                &shared,
                Some(&settings.ceph),
                &dead,
                &by,
                grace,
                Duration::from_secs(wait_secs),
            )
            .map_err(err)?;
            println!("{}", serde_json::to_string(&t)?);
        }
        ClusterCommand::GiveBack { head, wait_secs } => {
            let grace = Duration::from_secs(settings.core.nfs4.grace_secs.into());
            let by = server::cluster::admin::give_back(&shared, &head, grace, Duration::from_secs(wait_secs))
                .map_err(err)?;
            println!("{}", serde_json::json!({ "head": head, "given_back_by": by }));
        }
    }
    Ok(())
}
