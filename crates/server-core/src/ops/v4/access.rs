//! ACCESS (RFC 8881 section 18.1): the rights the caller has among those
//! asked for, by the mode-bit rules the other operations enforce. On a
//! read-only export no modifying right is granted; pseudo-fs directories
//! may be read and searched only.

use proto::nfs4::*;
use vfs::Access;

use super::{Compound, Fh};
use crate::auth::granted;

const KNOWN: u32 = ACCESS4_READ | ACCESS4_LOOKUP | ACCESS4_MODIFY | ACCESS4_EXTEND | ACCESS4_DELETE | ACCESS4_EXECUTE;
const MODIFYING: u32 = ACCESS4_MODIFY | ACCESS4_EXTEND | ACCESS4_DELETE;

pub(super) fn run(cx: &mut Compound, args: ACCESS4args) -> Result<ACCESS4resok, nfsstat4> {
    let fh = cx.cfh()?;
    // LOOKUP and DELETE only mean something for directories, EXECUTE only
    // for other objects (RFC 8881 18.1.3): none is reported supported
    // where it has no meaning.
    let is_dir = match fh {
        Fh::Pseudo(_) => true,
        fh => cx.resolve(fh)?.is_dir(),
    };
    let meaningful = if is_dir { KNOWN & !ACCESS4_EXECUTE } else { KNOWN & !(ACCESS4_LOOKUP | ACCESS4_DELETE) };
    let supported = args.access & meaningful;
    let access = match fh {
        Fh::Pseudo(_) => ACCESS4_READ | ACCESS4_LOOKUP,
        fh => {
            let o = cx.resolve(fh)?;
            let mut bits = granted(&o.attrs, &o.creds, Access(supported)).0;
            if o.read_only() {
                bits &= !MODIFYING;
            }
            bits
        }
    };
    Ok(ACCESS4resok { supported, access: access & supported })
}
