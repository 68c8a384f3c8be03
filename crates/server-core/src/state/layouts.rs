//! pNFS layouts handed out (RFC 8881 section 12.5): one layout stateid
//! per client and file, covering the whole file, whose seqid rises with
//! every LAYOUTGET and LAYOUTRETURN of it (section 12.5.3). Kept apart
//! from the open and lock stateids: only the layout operations take them.

use std::collections::HashMap;

use proto::nfs4::{layoutiomode4, nfsstat4, stateid4};

use super::stateids::Other;
use super::FileKey;

#[derive(Debug, Clone)]
pub(crate) struct Layout {
    pub client: u64,
    pub file: FileKey,
    pub seqid: u32,
    /// The widest mode granted: READ, or RW (which covers READ).
    pub rw: bool,
}

#[derive(Debug, Default)]
pub(crate) struct Layouts {
    by_other: HashMap<Other, Layout>,
    /// The layout stateid of each (client, file): LAYOUTGET finds it
    /// without a walk over every layout under the tables' lock.
    by_holder: HashMap<(u64, FileKey), Other>,
}

impl Layouts {
    fn of(&self, client: u64, file: FileKey) -> Option<Other> {
        self.by_holder.get(&(client, file)).copied()
    }

    fn forget(&mut self, other: &Other) {
        if let Some(l) = self.by_other.remove(other) {
            self.by_holder.remove(&(l.client, l.file));
        }
    }

    /// Grants (or extends) `client`'s layout of `file`: the layout stateid
    /// with its next seqid. `new_other` names a first layout.
    pub fn grant(
        &mut self,
        client: u64,
        file: FileKey,
        iomode: layoutiomode4,
        new_other: impl FnOnce() -> Other,
    ) -> stateid4 {
        let rw = iomode == layoutiomode4::LAYOUTIOMODE4_RW;
        let other = self.of(client, file).unwrap_or_else(new_other);
        self.by_holder.insert((client, file), other);
        let l = self.by_other.entry(other).or_insert(Layout { client, file, seqid: 0, rw });
        l.seqid = l.seqid.wrapping_add(1).max(1);
        l.rw |= rw;
        stateid4 { seqid: l.seqid, other }
    }

    /// Checks a layout stateid `client` presents for `file`: BAD_STATEID
    /// for one it does not hold on that file, OLD_STATEID for a seqid
    /// ahead of the current one.
    pub fn check(&self, client: u64, file: FileKey, s: &stateid4) -> Result<&Layout, nfsstat4> {
        let l = self.by_other.get(&s.other).ok_or(nfsstat4::NFS4ERR_BAD_STATEID)?;
        if l.client != client || l.file != file {
            return Err(nfsstat4::NFS4ERR_BAD_STATEID);
        }
        if s.seqid > l.seqid {
            return Err(nfsstat4::NFS4ERR_OLD_STATEID);
        }
        Ok(l)
    }

    /// Whether `s` is a layout stateid at all (LAYOUTGET accepts one in
    /// place of an open, lock or delegation stateid).
    pub fn is_layout(&self, s: &stateid4) -> bool {
        self.by_other.contains_key(&s.other)
    }

    /// The client returns its layout of `file` (whole-file layouts only
    /// are handed out, so any range returns it).
    pub fn return_file(&mut self, client: u64, file: FileKey, s: &stateid4) -> Result<(), nfsstat4> {
        self.check(client, file, s)?;
        self.forget(&s.other);
        Ok(())
    }

    /// The client returns every layout it holds, or those of one export.
    pub fn return_all(&mut self, client: u64, export: Option<u32>) {
        let gone: Vec<Other> = self
            .by_other
            .iter()
            .filter(|(_, l)| l.client == client && export.is_none_or(|e| l.file.0 == e))
            .map(|(o, _)| *o)
            .collect();
        for o in gone {
            self.forget(&o);
        }
    }

    /// Forgets `client`'s layout of `file` (recalled without a way to
    /// reach the client).
    pub fn return_all_of_file(&mut self, client: u64, file: FileKey) {
        if let Some(o) = self.of(client, file) {
            self.forget(&o);
        }
    }

    /// Clients holding a layout of `file`.
    pub fn holders(&self, file: FileKey) -> Vec<(u64, stateid4)> {
        if self.by_other.is_empty() {
            return Vec::new();
        }
        self.by_other
            .iter()
            .filter(|(_, l)| l.file == file)
            .map(|(o, l)| (l.client, stateid4 { seqid: l.seqid, other: *o }))
            .collect()
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.by_other.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_stateid_per_client_and_file_whose_seqid_rises() {
        let mut ls = Layouts::default();
        let file = (1, 42, 7);
        let a = ls.grant(9, file, layoutiomode4::LAYOUTIOMODE4_READ, || [1; 12]);
        assert_eq!((a.seqid, a.other), (1, [1; 12]));
        let b = ls.grant(9, file, layoutiomode4::LAYOUTIOMODE4_RW, || panic!("a second layout stateid"));
        assert_eq!((b.seqid, b.other), (2, [1; 12]));
        assert!(ls.check(9, file, &b).unwrap().rw);
        assert_eq!(ls.check(8, file, &b).unwrap_err(), nfsstat4::NFS4ERR_BAD_STATEID);
        assert_eq!(ls.check(9, (1, 43, 7), &b).unwrap_err(), nfsstat4::NFS4ERR_BAD_STATEID);
        let ahead = stateid4 { seqid: 3, other: [1; 12] };
        assert_eq!(ls.check(9, file, &ahead).unwrap_err(), nfsstat4::NFS4ERR_OLD_STATEID);
        assert_eq!(ls.holders(file), vec![(9, b.clone())]);
        ls.return_file(9, file, &a).unwrap();
        assert_eq!(ls.len(), 0);
        ls.grant(9, file, layoutiomode4::LAYOUTIOMODE4_READ, || [2; 12]);
        ls.grant(9, (2, 1, 1), layoutiomode4::LAYOUTIOMODE4_READ, || [3; 12]);
        ls.return_all(9, Some(2));
        assert_eq!(ls.len(), 1);
        ls.return_all(9, None);
        assert_eq!(ls.len(), 0);
        assert!(ls.by_holder.is_empty(), "the index follows the table");
    }
}
