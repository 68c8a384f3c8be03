//! NFS4ERR_WRONGSEC (RFC 8881 section 2.6.3.1): a compound whose
//! flavor an export's `sec=` does not admit is told so at the operation
//! the RFC names, so that the client can ask SECINFO and retry.
//!
//! - A put-filehandle operation (PUTFH, PUTROOTFH, PUTPUBFH, RESTOREFH)
//!   answers for its handle unless what follows it (SAVEFH aside) is
//!   another put-filehandle operation, LOOKUP, LOOKUPP, SECINFO,
//!   SECINFO_NO_NAME, OPEN, or nothing (2.6.3.1.1.1-7); the handle is
//!   then pending.
//! - LOOKUP and LOOKUPP answer for the handle they arrive at, OPEN for
//!   the handle it starts from (its file is in the same export), LINK and
//!   RENAME also for the saved handle (2.6.3.1.2).
//! - Any other operation meeting a pending handle answers for it: an
//!   NFSv4.0 SECINFO keeps the current handle, which would otherwise be
//!   used unchecked.
//!
//! Pseudo-file-system directories admit every flavor, so that clients
//! can walk to an export with what they have and learn its flavors there.

use proto::nfs4::{nfs_opnum4, nfsstat4};
use xdr::Decoder;

use super::{Compound, Fh};

const fn op(o: nfs_opnum4) -> u32 {
    o as u32
}

fn puts_fh(opcode: u32) -> bool {
    [op(nfs_opnum4::OP_PUTFH), op(nfs_opnum4::OP_PUTROOTFH), op(nfs_opnum4::OP_PUTPUBFH), op(nfs_opnum4::OP_RESTOREFH)]
        .contains(&opcode)
}

/// Whether a put-filehandle operation followed by `next` leaves the
/// flavor check to later.
fn defers(next: Option<u32>) -> bool {
    let Some(next) = next else { return true };
    puts_fh(next)
        || [
            op(nfs_opnum4::OP_LOOKUP),
            op(nfs_opnum4::OP_LOOKUPP),
            op(nfs_opnum4::OP_SECINFO),
            op(nfs_opnum4::OP_SECINFO_NO_NAME),
            op(nfs_opnum4::OP_OPEN),
        ]
        .contains(&next)
}

/// The opcode after the one just decoded, SAVEFH (which has no
/// arguments) skipped.
fn next_opcode(d: &Decoder) -> Option<u32> {
    let mut d = d.clone();
    loop {
        match d.u32().ok()? {
            o if o == op(nfs_opnum4::OP_SAVEFH) => continue,
            o => return Some(o),
        }
    }
}

impl Compound<'_> {
    /// Whether `fh`'s export admits the call's flavor (a handle the
    /// peer may not use at all fails later, with its own error).
    fn admits(&self, fh: Option<Fh>) -> bool {
        let Some(Fh::Obj { export_id, .. }) = fh else { return true };
        let Some(export) = self.core.export_by_id(export_id) else { return true };
        crate::exports::match_rule(&export.rules, self.call.peer)
            .is_none_or(|rule| rule.options.admits(self.call.auth.flavor()))
    }

    fn check_sec(&mut self, fh: Option<Fh>) -> Result<(), nfsstat4> {
        if !self.admits(fh) {
            let flavor = self.call.auth.flavor();
            tracing::debug!(peer = %self.call.peer.addr, %flavor, "NFS4ERR_WRONGSEC: the export's sec= does not admit this flavor");
            return Err(nfsstat4::NFS4ERR_WRONGSEC);
        }
        Ok(())
    }
}

/// Whether any handle could fail the check: some export restricts its
/// flavors, or the call is not AUTH_SYS (which exports without `sec=`
/// do not admit).
fn may_fail(cx: &Compound) -> bool {
    cx.core.sec_restricted || cx.call.auth.flavor() != rpcsec::Flavor::Sys
}

/// Before operation `opcode` runs.
pub(super) fn before(cx: &mut Compound, opcode: u32) -> Result<(), nfsstat4> {
    if !may_fail(cx) {
        return Ok(());
    }
    let exempt = puts_fh(opcode)
        || [
            op(nfs_opnum4::OP_SAVEFH),
            op(nfs_opnum4::OP_LOOKUP),
            op(nfs_opnum4::OP_LOOKUPP),
            op(nfs_opnum4::OP_SECINFO),
            op(nfs_opnum4::OP_SECINFO_NO_NAME),
        ]
        .contains(&opcode);
    if exempt {
        return Ok(());
    }
    if opcode == op(nfs_opnum4::OP_LINK) || opcode == op(nfs_opnum4::OP_RENAME) {
        cx.check_sec(cx.sfh)?;
    }
    if cx.sec_pending || opcode == op(nfs_opnum4::OP_OPEN) {
        cx.check_sec(cx.cfh)?;
        cx.sec_pending = false;
    }
    Ok(())
}

/// After operation `opcode` succeeded; `rest` is at the next operation.
pub(super) fn after(cx: &mut Compound, opcode: u32, rest: &Decoder) -> Result<(), nfsstat4> {
    if !may_fail(cx) {
        return Ok(());
    }
    if puts_fh(opcode) {
        if defers(next_opcode(rest)) {
            cx.sec_pending = true;
            return Ok(());
        }
    } else if opcode != op(nfs_opnum4::OP_LOOKUP) && opcode != op(nfs_opnum4::OP_LOOKUPP) {
        return Ok(());
    }
    cx.check_sec(cx.cfh)?;
    cx.sec_pending = false;
    Ok(())
}
