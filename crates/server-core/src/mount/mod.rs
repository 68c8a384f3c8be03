//! MOUNT v3 (RFC 1813 appendix I): how a client gets the root handle of
//! an export, and the bookkeeping `showmount` reads.
//!
//! The mount list is advisory (RFC 1813 says so too): it is kept in memory,
//! bounded by `max_mount_entries`, and lost on restart; NFS access is
//! decided by export rules on every call, never by this list.

mod dump;
mod export;
mod mnt;
mod umnt;
mod umntall;

use std::collections::VecDeque;

use bytes::Bytes;
use proto::mount3::{MOUNT3_DUMP, MOUNT3_EXPORT, MOUNT3_MNT, MOUNT3_UMNT, MOUNT3_UMNTALL, MOUNT_PROGRAM, MOUNT_V3};
use xdr::{Decoder, Encoder};

use crate::rpc::{run, Call, Dispatched};
use crate::{Core, PeerInfo};

pub const PROGRAM: u32 = MOUNT_PROGRAM;
pub const VERSION: u32 = MOUNT_V3;

/// MNTPATHLEN: the longest path MNT/UMNT accept.
pub const MNTPATHLEN: u32 = 1024;

/// Who mounted what, for DUMP.
#[derive(Debug, Default)]
pub(crate) struct MountList {
    entries: VecDeque<(Bytes, Bytes)>,
}

impl MountList {
    pub(crate) fn add(&mut self, host: Bytes, dir: Bytes, max: usize) {
        if self.entries.iter().any(|(h, d)| *h == host && *d == dir) {
            return;
        }
        while !self.entries.is_empty() && self.entries.len() >= max {
            self.entries.pop_front();
        }
        if max > 0 {
            self.entries.push_back((host, dir));
        }
    }

    pub(crate) fn remove(&mut self, host: &[u8], dir: &[u8]) {
        self.entries.retain(|(h, d)| !(h == host && d == dir));
    }

    pub(crate) fn remove_host(&mut self, host: &[u8]) {
        self.entries.retain(|(h, _)| h != host);
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &(Bytes, Bytes)> {
        self.entries.iter()
    }
}

/// The name a client is listed under: its reverse-resolved name, or its
/// address.
pub(crate) fn host_name(peer: &PeerInfo) -> Bytes {
    match &peer.hostname {
        Some(h) if !h.is_empty() => Bytes::copy_from_slice(h.as_bytes()),
        _ => Bytes::from(crate::exports::canonical_ip(peer.addr.ip()).to_string()),
    }
}

fn dirpath(d: &mut Decoder) -> xdr::Result<Bytes> {
    d.opaque_var(MNTPATHLEN)
}

fn void(_: &mut Decoder) -> xdr::Result<()> {
    Ok(())
}

pub fn dispatch(core: &Core, call: &Call, d: &mut Decoder, e: &mut Encoder) -> Dispatched {
    match call.proc_ {
        0 => run(call, d, e, "mount3.NULL", void, |()| ((), true)),
        MOUNT3_MNT => run(call, d, e, "mount3.MNT", dirpath, |p| mnt::mnt(core, call, p)),
        MOUNT3_DUMP => run(call, d, e, "mount3.DUMP", void, |()| (dump::dump(core), true)),
        MOUNT3_UMNT => run(call, d, e, "mount3.UMNT", dirpath, |p| (umnt::umnt(core, call, &p), true)),
        MOUNT3_UMNTALL => run(call, d, e, "mount3.UMNTALL", void, |()| (umntall::umntall(core, call), true)),
        MOUNT3_EXPORT => run(call, d, e, "mount3.EXPORT", void, |()| (export::export(core), true)),
        _ => Dispatched::ProcUnavail { label: "mount3.unknown" },
    }
}
