//! pNFS layouts as the layout operations use them: LAYOUTGET,
//! LAYOUTCOMMIT, LAYOUTRETURN (RFC 8881) and LAYOUTERROR (RFC 7862).

use proto::nfs4::*;

use crate::state::shards::shard_of_file;
use crate::state::{FileKey, State4, Tables};

impl State4 {
    /// LAYOUTGET (RFC 8881 section 18.43) of `file` for `client`: the
    /// layout stateid, its seqid advanced. The first LAYOUTGET of a file
    /// names an open, lock or delegation stateid of it; later ones may
    /// name the layout stateid (18.43.3).
    pub(crate) fn layoutget(
        &self,
        minor: u32,
        client: clientid4,
        file: FileKey,
        sid: &stateid4,
        iomode: layoutiomode4,
    ) -> Result<stateid4, nfsstat4> {
        let mut t = self.lock_tables();
        let Tables { layouts, stateids, .. } = &mut *t;
        if layouts.is_layout(sid) {
            layouts.check(client, file, sid)?;
        } else if stateids.find(self.boot, minor, Some(client), sid)?.file != file {
            return Err(nfsstat4::NFS4ERR_BAD_STATEID);
        }
        Ok(layouts.grant(client, file, iomode, || stateids.new_other(self.boot, shard_of_file(file))))
    }

    /// LAYOUTCOMMIT (RFC 8881 section 18.42.3): `sid` must be `client`'s
    /// layout of `file` with RW access (BADIOMODE otherwise), and a
    /// `reclaim` comes only during grace (NO_GRACE).
    pub(crate) fn layoutcommit(
        &self,
        client: clientid4,
        file: FileKey,
        sid: &stateid4,
        reclaim: bool,
    ) -> Result<(), nfsstat4> {
        let mut t = self.lock_tables();
        if reclaim && !t.grace.in_grace(self.now()) {
            return Err(nfsstat4::NFS4ERR_NO_GRACE);
        }
        if !t.layouts.check(client, file, sid)?.rw {
            return Err(nfsstat4::NFS4ERR_BADIOMODE);
        }
        Ok(())
    }

    /// Whether `sid` is `client`'s layout stateid of `file` (LAYOUTERROR,
    /// RFC 7862 section 15.6.3): BAD_STATEID, or OLD_STATEID for an
    /// outdated seqid, if not.
    pub(crate) fn check_layout(&self, client: clientid4, file: FileKey, sid: &stateid4) -> Result<(), nfsstat4> {
        self.lock_tables().layouts.check(client, file, sid).map(|_| ())
    }

    /// LAYOUTRETURN4_FILE (RFC 8881 section 18.44): `client` returns its
    /// layout `sid` of `file`, whatever range it names.
    pub(crate) fn layoutreturn_file(&self, client: clientid4, file: FileKey, sid: &stateid4) -> Result<(), nfsstat4> {
        self.lock_tables().layouts.return_file(client, file, sid)
    }

    /// LAYOUTRETURN4_FSID (`export` given) or LAYOUTRETURN4_ALL (RFC 8881
    /// section 18.44): `client` returns all its layouts of an export, or
    /// all of them.
    pub(crate) fn layoutreturn_all(&self, client: clientid4, export: Option<u32>) {
        self.lock_tables().layouts.return_all(client, export);
    }
}
