//! NFSv4 delegations met by NFSv3 requests.
//!
//! An NFSv4 client holding a delegation serves the file from its cache
//! without asking the server: a read delegation until someone changes
//! the file, a write delegation until anyone else touches it. An NFSv3
//! client's WRITE, SETATTR, REMOVE, RENAME or LINK of the file therefore
//! recalls every delegation on it, and a READ recalls write delegations
//! (RFC 8881 section 10.4.4 asks the same of any conflicting access); the
//! request is answered JUKEBOX while a recall is out, and the NFSv3 client
//! retries, as the Linux server answers such a request while a lease
//! breaks. While no client holds a delegation this costs one atomic load.

use proto::nfs3::nfsstat3;
use vfs::{Attrs, FileId};

use super::{Ctx, Obj};
pub(crate) use crate::state::dir_delegs::Change;

/// Before `change` to directory `dir`: NFSv4.1 clients' directory
/// delegations that did not ask to hear of it are recalled (RFC 8881
/// section 10.9.2); JUKEBOX while one is out.
pub(crate) fn before_dir_change(ctx: &Ctx, dir: &Obj, change: Change) -> Result<(), nfsstat3> {
    let key = (dir.export.id, dir.id, dir.attrs.generation);
    ctx.core.v4.before_dir_change(key, change, None).map_err(|_| nfsstat3::NFS3ERR_JUKEBOX)
}

/// Recalls the delegations on `o` that a change (`for_write`), or a read,
/// conflicts with; JUKEBOX while one is out.
pub(crate) fn recall_for(ctx: &Ctx, o: &Obj, for_write: bool) -> Result<(), nfsstat3> {
    recall_on(ctx, o, o.id, &o.attrs, for_write)
}

/// [`recall_for`] an object of `o`'s export known by id and attributes
/// (an entry a REMOVE or RENAME looked up).
pub(crate) fn recall_on(ctx: &Ctx, o: &Obj, id: FileId, attrs: &Attrs, for_write: bool) -> Result<(), nfsstat3> {
    let st = &ctx.core.v4;
    let held = if for_write { st.any_delegated() } else { st.write_delegated(o.export.id, id) };
    if !held {
        return Ok(());
    }
    st.recall_for_v3((o.export.id, id, attrs.generation), for_write).map_err(|_| nfsstat3::NFS3ERR_JUKEBOX)
}
