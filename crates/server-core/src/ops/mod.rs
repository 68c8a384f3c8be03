//! Protocol operations, per NFS version, and what both versions share:
//! an object resolved from a file handle with the caller's identity, and
//! the rules of creating (`create`), writing (`write`) and committing
//! (`commit`) that each version applies after its own checks, in neutral
//! errors each maps to its own status.

mod commit;
mod create;
mod listing;
pub mod v3;
pub mod v4;
mod write;

use vfs::{Attrs, FileId, FileType, Vfs};

use crate::auth::Creds;
use crate::rpc::Auth;
use crate::{ClientRule, Export};

/// A resolved file handle: the object, its export, the rule the caller
/// matched there and the caller's squashed identity. Each version adds
/// its own views (v3: wcc data; v4: the handle).
pub(crate) struct Obj<'a> {
    pub export: &'a Export,
    pub rule: &'a ClientRule,
    pub creds: Creds,
    pub id: FileId,
    pub attrs: Attrs,
}

impl<'a> Obj<'a> {
    pub fn fs(&self) -> &'a dyn Vfs {
        &*self.export.fs
    }

    pub fn read_only(&self) -> bool {
        self.rule.options.read_only
    }

    pub fn is_dir(&self) -> bool {
        self.attrs.ftype == FileType::Directory
    }
}

/// The identity a call acts with under `rule`: its AUTH_SYS credential,
/// or the local user its Kerberos principal maps to, squashed as the
/// export says; or the anonymous identity.
pub(crate) fn creds_for(auth: &Auth, rule: &ClientRule) -> Creds {
    match auth {
        Auth::Sys { uid, gid, gids, .. } => Creds { uid: *uid, gid: *gid, gids: gids.clone() }.squash(&rule.options),
        Auth::None => Creds::anonymous(&rule.options),
        Auth::Gss(c) => match &c.identity {
            Some(i) => Creds { uid: i.uid, gid: i.gid, gids: i.gids.clone() }.squash(&rule.options),
            None => Creds::anonymous(&rule.options),
        },
    }
}
