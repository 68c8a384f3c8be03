//! Per-procedure counters as Linux `mountstats` keeps them (and Table 1 of
//! the 2015 NFSv4.1 study prints): how many calls, bytes each way, how often
//! retransmitted, and where the time went. Times are nanosecond sums:
//! `queue` is from the call being made to its first transmission (waiting
//! for a slot), `rtt` from its last transmission to the reply, `execute`
//! from the call being made to its completion.

use std::collections::BTreeMap;

use serde::Serialize;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct OpCounters {
    pub count: u64,
    /// Calls that completed with an RPC-level failure (timeout, rejection).
    pub errors: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub retransmissions: u64,
    pub queue_ns: u64,
    pub rtt_ns: u64,
    pub execute_ns: u64,
}

impl OpCounters {
    pub fn add(&mut self, o: &OpCounters) {
        self.count += o.count;
        self.errors += o.errors;
        self.bytes_sent += o.bytes_sent;
        self.bytes_received += o.bytes_received;
        self.retransmissions += o.retransmissions;
        self.queue_ns += o.queue_ns;
        self.rtt_ns += o.rtt_ns;
        self.execute_ns += o.execute_ns;
    }
}

/// Counters by procedure name ("WRITE", "MNT", "GETPORT", ...).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    pub ops: BTreeMap<&'static str, OpCounters>,
}

impl Stats {
    pub fn op(&mut self, name: &'static str) -> &mut OpCounters {
        self.ops.entry(name).or_default()
    }

    /// Adds another connection's (or client's) counters.
    pub fn merge(&mut self, other: &Stats) {
        for (name, c) in &other.ops {
            self.op(name).add(c);
        }
    }
}

/// The name of a procedure of the programs the client speaks, for counters
/// and logs.
pub fn procedure_name(prog: u32, vers: u32, proc_: u32) -> &'static str {
    use proto::{mount3, nfs3, nlm, portmap};
    const NFS3: [&str; 22] = [
        "NULL",
        "GETATTR",
        "SETATTR",
        "LOOKUP",
        "ACCESS",
        "READLINK",
        "READ",
        "WRITE",
        "CREATE",
        "MKDIR",
        "SYMLINK",
        "MKNOD",
        "REMOVE",
        "RMDIR",
        "RENAME",
        "LINK",
        "READDIR",
        "READDIRPLUS",
        "FSSTAT",
        "FSINFO",
        "PATHCONF",
        "COMMIT",
    ];
    const MOUNT3: [&str; 6] = ["NULL", "MNT", "DUMP", "UMNT", "UMNTALL", "EXPORT"];
    const PMAP: [&str; 6] = ["NULL", "SET", "UNSET", "GETPORT", "DUMP", "CALLIT"];
    // Prefixed: the counters are keyed by name, and NLM's LOCK is not
    // NFSv4's.
    const NLM4: [&str; 5] = ["NLM_NULL", "NLM_TEST", "NLM_LOCK", "NLM_CANCEL", "NLM_UNLOCK"];
    let table: &[&'static str] = match (prog, vers) {
        (nfs3::NFS_PROGRAM, nfs3::NFS_V3) => &NFS3,
        (mount3::MOUNT_PROGRAM, _) => &MOUNT3,
        (portmap::PMAP_PROGRAM, portmap::PMAP_V2) => &PMAP,
        (nlm::NLM_PROG, 4) => &NLM4,
        _ => &[],
    };
    table.get(proc_ as usize).copied().unwrap_or("OTHER")
}
