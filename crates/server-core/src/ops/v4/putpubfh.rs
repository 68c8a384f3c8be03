//! PUTPUBFH (RFC 8881 section 18.20): nfsx has no separate public file
//! handle, so the public handle is the root, as the RFC allows.

use proto::nfs4::*;

use super::Compound;

pub(super) fn run(cx: &mut Compound) -> Result<(), nfsstat4> {
    super::putrootfh::run(cx)
}
