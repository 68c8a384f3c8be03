//! ACCESS (RFC 8881 section 18.1): the rights the caller has among those
//! asked for, by the mode-bit rules the other operations enforce. On a
//! read-only export no modifying right is granted; pseudo-fs directories
//! may be read and searched only. From minor version 2 the extended
//! attribute rights of RFC 8276 (section 8.4.1) are answered where the
//! backend stores them: reading and listing them follows the read right,
//! writing them the modify right.

use proto::nfs4::*;
use vfs::Access;

use super::{Compound, Fh};
use crate::auth::granted;

const KNOWN: u32 = ACCESS4_READ | ACCESS4_LOOKUP | ACCESS4_MODIFY | ACCESS4_EXTEND | ACCESS4_DELETE | ACCESS4_EXECUTE;
const MODIFYING: u32 = ACCESS4_MODIFY | ACCESS4_EXTEND | ACCESS4_DELETE | ACCESS4_XAWRITE;
const XATTR: u32 = ACCESS4_XAREAD | ACCESS4_XAWRITE | ACCESS4_XALIST;

/// The extended attribute rights implied by the mode-bit rights granted.
fn xattr_rights(granted: u32) -> u32 {
    let mut bits = 0;
    if granted & ACCESS4_READ != 0 {
        bits |= ACCESS4_XAREAD | ACCESS4_XALIST;
    }
    if granted & ACCESS4_MODIFY != 0 {
        bits |= ACCESS4_XAWRITE;
    }
    bits
}

pub(super) fn run(cx: &mut Compound, args: ACCESS4args) -> Result<ACCESS4resok, nfsstat4> {
    let fh = cx.cfh()?;
    // LOOKUP and DELETE only mean something for directories, EXECUTE only
    // for other objects (RFC 8881 18.1.3): none is reported supported
    // where it has no meaning.
    let (is_dir, xattrs) = match fh {
        Fh::Pseudo(_) => (true, false),
        fh => {
            let o = cx.resolve(fh)?;
            (o.is_dir(), cx.minor >= 2 && o.fs().xattrs().is_some())
        }
    };
    let mut meaningful = if is_dir { KNOWN & !ACCESS4_EXECUTE } else { KNOWN & !(ACCESS4_LOOKUP | ACCESS4_DELETE) };
    if xattrs {
        meaningful |= XATTR;
    }
    let supported = args.access & meaningful;
    let access = match fh {
        Fh::Pseudo(_) => ACCESS4_READ | ACCESS4_LOOKUP,
        fh => {
            let o = cx.resolve(fh)?;
            let mode_bits =
                (supported & !XATTR) | if supported & XATTR != 0 { ACCESS4_READ | ACCESS4_MODIFY } else { 0 };
            let given = granted(&o.attrs, &o.creds, Access(mode_bits)).0;
            let mut bits = (given & supported & !XATTR) | (xattr_rights(given) & supported);
            if o.read_only() {
                bits &= !MODIFYING;
            }
            bits
        }
    };
    Ok(ACCESS4resok { supported, access: access & supported })
}
