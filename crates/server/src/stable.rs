//! NFSv4 client records in the state directory: one hex-encoded owner
//! per line, rewritten atomically (temporary file, fsync, rename) on each
//! change, so that after a crash the server knows which clients may
//! reclaim state during the grace period.

use std::io::Write;
use std::path::PathBuf;

use parking_lot::Mutex;
use server_core::StableStore;

use crate::state::StateError;

const FILE: &str = "nfs4-clients";

pub struct FileStore {
    path: PathBuf,
    records: Mutex<Vec<Vec<u8>>>,
}

impl FileStore {
    pub fn open(dir: &std::path::Path) -> Result<FileStore, StateError> {
        let path = dir.join(FILE);
        let records = match std::fs::read_to_string(&path) {
            Ok(text) => text.lines().filter_map(decode_hex).collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(source) => return Err(StateError::Read { path, source }),
        };
        Ok(FileStore { path, records: Mutex::new(records) })
    }

    fn save(&self, records: &[Vec<u8>]) {
        let tmp = self.path.with_extension("tmp");
        let result = (|| -> std::io::Result<()> {
            let mut f = std::fs::File::create(&tmp)?;
            for r in records {
                writeln!(f, "{}", encode_hex(r))?;
            }
            f.sync_all()?;
            std::fs::rename(&tmp, &self.path)?;
            if let Some(dir) = self.path.parent() {
                std::fs::File::open(dir)?.sync_all()?;
            }
            Ok(())
        })();
        if let Err(e) = result {
            tracing::error!(path = %self.path.display(), "cannot save NFSv4 client records: {e}");
        }
    }
}

impl StableStore for FileStore {
    fn load(&self) -> Vec<Vec<u8>> {
        self.records.lock().clone()
    }

    fn insert(&self, record: &[u8]) {
        let mut r = self.records.lock();
        if r.iter().any(|x| x == record) {
            return;
        }
        r.push(record.to_vec());
        self.save(&r);
    }

    fn remove(&self, record: &[u8]) {
        let mut r = self.records.lock();
        let before = r.len();
        r.retain(|x| x != record);
        if r.len() != before {
            self.save(&r);
        }
    }
}

pub(crate) fn encode_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub(crate) fn decode_hex(s: &str) -> Option<Vec<u8>> {
    let s = s.trim();
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let s = FileStore::open(dir.path()).unwrap();
        s.insert(b"client-a");
        s.insert(b"\x00\xffb");
        s.insert(b"client-a");
        s.remove(b"nothing");
        let s2 = FileStore::open(dir.path()).unwrap();
        assert_eq!(s2.load(), vec![b"client-a".to_vec(), b"\x00\xffb".to_vec()]);
        s2.remove(b"client-a");
        assert_eq!(FileStore::open(dir.path()).unwrap().load(), vec![b"\x00\xffb".to_vec()]);
    }
}
