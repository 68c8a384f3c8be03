//! NLM share reservations (NLM4_SHARE, the DOS-style open modes of XNFS
//! chapter 10), kept per file beside the NFSv4 opens in the file's shard
//! and checked against them both ways: an NLM SHARE that denies writing
//! refuses an NFSv4 OPEN for write, and an NFSv4 OPEN that denies
//! reading refuses an NLM SHARE for read. `fsh4_access` and `fsh4_mode`
//! are numbered as OPEN4_SHARE_ACCESS_* and OPEN4_SHARE_DENY_* are (read
//! 1, write 2, both 3), so the two compare as they are.

use bytes::Bytes;

use super::shards::FileShard;
use super::FileKey;

/// Most NLM shares kept on one file: owners are as many as a host
/// cares to name, and each share is memory the server keeps. Past it a
/// SHARE gets `denied_nolocks`, as a lock past the lock manager's caps.
pub(crate) const MAX_SHARES_PER_FILE: usize = 1024;

/// One NLM host's share reservation on a file.
#[derive(Debug, Clone)]
pub(crate) struct NlmShare {
    /// The host (`caller_name`) and its owner handle: who UNSHAREs it.
    pub(crate) caller: Bytes,
    pub(crate) oh: Bytes,
    pub(crate) access: u32,
    pub(crate) deny: u32,
}

impl NlmShare {
    pub(crate) fn owned_by(&self, caller: &[u8], oh: &[u8]) -> bool {
        self.caller[..] == *caller && self.oh[..] == *oh
    }

    /// Whether it stands in the way of `access`/`deny`.
    fn conflicts(&self, access: u32, deny: u32) -> bool {
        self.deny & access != 0 || self.access & deny != 0
    }
}

impl FileShard {
    /// Whether an NLM share on `file` stands in the way of an open or
    /// share with `access`/`deny` (one of `except`'s own excepted).
    pub(crate) fn nlm_share_conflicts(
        &self,
        file: FileKey,
        except: Option<(&[u8], &[u8])>,
        access: u32,
        deny: u32,
    ) -> bool {
        let Some(shares) = self.nlm_shares.get(&file) else { return false };
        shares.iter().any(|s| except.is_none_or(|(c, oh)| !s.owned_by(c, oh)) && s.conflicts(access, deny))
    }

    /// Whether an NFSv4 open of `file` stands in the way.
    pub(crate) fn v4_open_conflicts(&self, file: FileKey, access: u32, deny: u32) -> bool {
        self.on_file(file).any(|(_, e)| e.open().is_some_and(|o| o.deny & access != 0 || o.access & deny != 0))
    }

    /// Records `share` on `file`, replacing the owner's earlier one;
    /// false when the file has [`MAX_SHARES_PER_FILE`] already.
    pub(crate) fn nlm_share(&mut self, file: FileKey, share: NlmShare) -> bool {
        let shares = self.nlm_shares.entry(file).or_default();
        shares.retain(|s| !s.owned_by(&share.caller, &share.oh));
        if shares.len() >= MAX_SHARES_PER_FILE {
            return false;
        }
        shares.push(share);
        true
    }

    /// Drops what `pred` names (an owner's UNSHARE, a host's restart).
    pub(crate) fn nlm_unshare_where(&mut self, file: Option<FileKey>, pred: impl Fn(&NlmShare) -> bool) {
        match file {
            Some(f) => {
                if let Some(shares) = self.nlm_shares.get_mut(&f) {
                    shares.retain(|s| !pred(s));
                    if shares.is_empty() {
                        self.nlm_shares.remove(&f);
                    }
                }
            }
            None => self.nlm_shares.retain(|_, shares| {
                shares.retain(|s| !pred(s));
                !shares.is_empty()
            }),
        }
    }
}
