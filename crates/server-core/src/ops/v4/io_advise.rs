//! IO_ADVISE (RFC 7862 section 15.5): a client's access-pattern hint for
//! a range, passed to the host (posix_fadvise) where the backend takes
//! it. Unsupported or contradictory hints are not errors: the reply names
//! the one hint acted on, or IO_ADVISE4_NORMAL.

use proto::bitmap4::{add, has};
use proto::nfs4::*;
use vfs::Advice;

use super::status::stat4;
use super::{io, Compound};
use crate::state::stateids::IoKind;

/// The hints acted on, in the order one is picked when several are sent.
const HINTS: [(IO_ADVISE_type4, Advice); 5] = [
    (IO_ADVISE_type4::IO_ADVISE4_DONTNEED, Advice::DontNeed),
    (IO_ADVISE_type4::IO_ADVISE4_NOREUSE, Advice::NoReuse),
    (IO_ADVISE_type4::IO_ADVISE4_WILLNEED, Advice::WillNeed),
    (IO_ADVISE_type4::IO_ADVISE4_SEQUENTIAL, Advice::Sequential),
    (IO_ADVISE_type4::IO_ADVISE4_RANDOM, Advice::Random),
];

pub(super) fn run(cx: &mut Compound, args: IO_ADVISE4args) -> Result<IO_ADVISE4resok, nfsstat4> {
    let obj = io::file_to_read(cx)?;
    io::check(cx, &obj, &args.iaa_stateid, IoKind::Read, (args.iaa_offset, args.iaa_count))?;
    let mut hints = Vec::new();
    let chosen = HINTS.iter().find(|(hint, _)| has(&args.iaa_hints, *hint as u32));
    let acted = match chosen {
        // A backend without the data operations takes no hints.
        Some((hint, advice)) => match obj.fs().data_ops() {
            Some(o) => o.advise(obj.id, args.iaa_offset, args.iaa_count, *advice).map_err(stat4)?.then_some(*hint),
            None => None,
        },
        None => None,
    };
    add(&mut hints, acted.unwrap_or(IO_ADVISE_type4::IO_ADVISE4_NORMAL) as u32);
    Ok(IO_ADVISE4resok { ior_hints: hints })
}
