//! Directory targets: any mounted file system (a local disk, or a kernel NFS
//! mount to compare the kernel client with nfsx), used through plain system
//! calls. Every `connect` is another handle on the same mount, so several
//! "clients" share one kernel cache; only nfs:// targets give independent
//! clients.

use std::fs;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::target::{
    BenchError, BenchFile, BenchFs, DirEntry, FileKind, FileStat, OpStat, OpenOptions, Result, Target,
};

pub struct DirTarget {
    name: String,
    root: PathBuf,
    /// Live handles; see `DirFs::primary`.
    handles: Arc<AtomicUsize>,
}

impl DirTarget {
    /// Checks that `path` is an existing, writable directory (by creating and
    /// removing a probe file), so a wrong path fails before any run.
    pub fn open(path: &str) -> Result<DirTarget> {
        let root = PathBuf::from(path);
        let meta = fs::metadata(&root).map_err(|e| BenchError::Target(format!("{path}: {}", io_msg(&e))))?;
        if !meta.is_dir() {
            return Err(BenchError::Target(format!("{path}: not a directory")));
        }
        let probe = root.join(format!(".nfsx-bench-probe-{}", std::process::id()));
        fs::File::create(&probe)
            .map_err(|e| BenchError::Target(format!("{path}: directory is not writable: {}", io_msg(&e))))?;
        fs::remove_file(&probe)
            .map_err(|e| BenchError::Target(format!("{path}: cannot remove a probe file: {}", io_msg(&e))))?;
        let root = root.canonicalize().unwrap_or(root);
        Ok(DirTarget { name: path.to_string(), root, handles: Arc::new(AtomicUsize::new(0)) })
    }
}

impl Target for DirTarget {
    fn name(&self) -> &str {
        &self.name
    }

    fn connect(&self) -> Result<Arc<dyn BenchFs>> {
        let primary = self.handles.fetch_add(1, Ordering::SeqCst) == 0;
        Ok(Arc::new(DirFs { root: self.root.clone(), primary, handles: self.handles.clone() }))
    }
}

struct DirFs {
    root: PathBuf,
    /// All handles see one mount's counters; only the first live handle
    /// reports them, so summing over clients does not count them N times.
    primary: bool,
    handles: Arc<AtomicUsize>,
}

impl Drop for DirFs {
    fn drop(&mut self) {
        self.handles.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The OS message without Rust's " (os error N)" suffix.
fn io_msg(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

impl DirFs {
    fn path(&self, p: &str) -> PathBuf {
        self.root.join(p.trim_start_matches('/'))
    }
}

fn kind_of(t: fs::FileType) -> FileKind {
    if t.is_file() {
        FileKind::File
    } else if t.is_dir() {
        FileKind::Dir
    } else if t.is_symlink() {
        FileKind::Symlink
    } else {
        FileKind::Other
    }
}

impl BenchFs for DirFs {
    fn open(&self, path: &str, how: OpenOptions) -> Result<Box<dyn BenchFile>> {
        let mut o = fs::OpenOptions::new();
        o.read(how.read).write(how.write).create(how.create).truncate(how.truncate);
        if how.sync {
            o.custom_flags(libc::O_SYNC);
        }
        let file = o.open(self.path(path)).map_err(|e| BenchError::op("open", path, io_msg(&e)))?;
        Ok(Box::new(DirFile { file, path: path.to_string() }))
    }

    fn stat(&self, path: &str) -> Result<FileStat> {
        let m = fs::symlink_metadata(self.path(path)).map_err(|e| BenchError::op("stat", path, io_msg(&e)))?;
        Ok(FileStat {
            kind: kind_of(m.file_type()),
            size: m.len(),
            mode: m.mode(),
            mtime_ns: m.mtime() * 1_000_000_000 + m.mtime_nsec(),
        })
    }

    fn readdir(&self, path: &str) -> Result<Vec<DirEntry>> {
        let err = |e: std::io::Error| BenchError::op("readdir", path, io_msg(&e));
        let mut out = Vec::new();
        for entry in fs::read_dir(self.path(path)).map_err(err)? {
            let entry = entry.map_err(err)?;
            let kind = kind_of(entry.file_type().map_err(err)?);
            out.push(DirEntry { name: entry.file_name().to_string_lossy().into_owned(), kind });
        }
        Ok(out)
    }

    fn mkdir(&self, path: &str) -> Result<()> {
        fs::create_dir(self.path(path)).map_err(|e| BenchError::op("mkdir", path, io_msg(&e)))
    }

    fn remove(&self, path: &str) -> Result<()> {
        fs::remove_file(self.path(path)).map_err(|e| BenchError::op("remove", path, io_msg(&e)))
    }

    fn rmdir(&self, path: &str) -> Result<()> {
        fs::remove_dir(self.path(path)).map_err(|e| BenchError::op("rmdir", path, io_msg(&e)))
    }

    fn rename(&self, from: &str, to: &str) -> Result<()> {
        fs::rename(self.path(from), self.path(to)).map_err(|e| BenchError::op("rename", from, io_msg(&e)))
    }

    /// copy_file_range(2): the kernel copies (on a Linux NFSv4.2 mount it
    /// sends COPY), then fsync, as a COPY commits what it copied.
    fn copy_range(&self, from: &str, from_off: u64, to: &str, to_off: u64, len: u64) -> Result<u64> {
        let src = fs::File::open(self.path(from)).map_err(|e| BenchError::op("open", from, io_msg(&e)))?;
        let dst = fs::OpenOptions::new()
            .write(true)
            .open(self.path(to))
            .map_err(|e| BenchError::op("open", to, io_msg(&e)))?;
        let (mut off_in, mut off_out, mut done) = (from_off, to_off, 0u64);
        while done < len {
            let want = (len - done).min(1 << 30) as usize;
            match rustix::fs::copy_file_range(&src, Some(&mut off_in), &dst, Some(&mut off_out), want) {
                Ok(0) => break,
                Ok(n) => done += n as u64,
                Err(e) if e == rustix::io::Errno::INTR => {}
                Err(e) if done == 0 && cannot(e) => {
                    return Err(BenchError::Unsupported(format!(
                        "copy_file_range(2) on this file system: {}",
                        errno(e)
                    )))
                }
                Err(e) => return Err(BenchError::op("copy_file_range", from, errno(e))),
            }
        }
        dst.sync_all().map_err(|e| BenchError::op("fsync", to, io_msg(&e)))?;
        Ok(done)
    }

    /// FICLONE (whole files only): where the file system can reflink
    /// (Btrfs, XFS; a Linux NFSv4.2 mount sends CLONE).
    fn clone_range(&self, from: &str, from_off: u64, to: &str, to_off: u64, len: u64) -> Result<()> {
        if from_off != 0 || to_off != 0 || len != 0 {
            return Err(BenchError::Unsupported("a directory target clones whole files only (FICLONE)".into()));
        }
        let src = fs::File::open(self.path(from)).map_err(|e| BenchError::op("open", from, io_msg(&e)))?;
        let dst = fs::OpenOptions::new()
            .write(true)
            .open(self.path(to))
            .map_err(|e| BenchError::op("open", to, io_msg(&e)))?;
        match rustix::fs::ioctl_ficlone(&dst, &src) {
            Ok(()) => Ok(()),
            Err(e) if cannot(e) => Err(BenchError::Unsupported(format!("FICLONE on this file system: {}", errno(e)))),
            Err(e) => Err(BenchError::op("clone", from, errno(e))),
        }
    }

    fn op_stats(&self) -> Vec<OpStat> {
        if !self.primary {
            return Vec::new();
        }
        std::fs::read_to_string("/proc/self/mountstats").map(|text| nfs_op_stats(&text, &self.root)).unwrap_or_default()
    }
}

/// The errors of a file system (or kernel) that cannot copy or clone
/// in place, as opposed to a copy that went wrong.
fn cannot(e: rustix::io::Errno) -> bool {
    use rustix::io::Errno;
    [Errno::NOSYS, Errno::OPNOTSUPP, Errno::XDEV, Errno::INVAL, Errno::NOTTY].contains(&e)
}

fn errno(e: rustix::io::Errno) -> String {
    io_msg(&std::io::Error::from(e))
}

struct DirFile {
    file: fs::File,
    path: String,
}

impl BenchFile for DirFile {
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<()> {
        self.file.write_all_at(data, offset).map_err(|e| BenchError::op("write", &self.path, io_msg(&e)))
    }

    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        self.file.read_at(buf, offset).map_err(|e| BenchError::op("read", &self.path, io_msg(&e)))
    }

    fn flush(&mut self) -> Result<()> {
        self.file.sync_all().map_err(|e| BenchError::op("fsync", &self.path, io_msg(&e)))
    }

    fn close(self: Box<Self>) -> Result<()> {
        // std reports no close(2) error; an NFS mount's write-back errors
        // surface through fsync, which workloads call where it matters.
        drop(self.file);
        Ok(())
    }

    fn lock_whole(&mut self, write: bool) -> Result<()> {
        use rustix::fs::FlockOperation as Op;
        let op = if write { Op::LockExclusive } else { Op::LockShared };
        // fcntl(F_SETLKW) over the whole file: POSIX locks, as NFS carries them.
        rustix::fs::fcntl_lock(&self.file, op).map_err(|e| BenchError::op("lock", &self.path, e.to_string()))
    }

    fn unlock_whole(&mut self) -> Result<()> {
        let op = rustix::fs::FlockOperation::Unlock;
        rustix::fs::fcntl_lock(&self.file, op).map_err(|e| BenchError::op("unlock", &self.path, e.to_string()))
    }
}

/// The per-op counters of the NFS mount holding `dir`, from the text of
/// `/proc/self/mountstats`; empty when the deepest mount containing `dir`
/// is not NFS. Times there are milliseconds; `OpStat` keeps microseconds.
pub fn nfs_op_stats(mountstats: &str, dir: &Path) -> Vec<OpStat> {
    // Pick the deepest mount point that contains `dir`, whatever its type.
    let mut best: Option<(usize, bool, Vec<OpStat>)> = None;
    let mut current: Option<(usize, bool, Vec<OpStat>)> = None;
    let mut in_ops = false;
    let finish = |cur: Option<(usize, bool, Vec<OpStat>)>, best: &mut Option<(usize, bool, Vec<OpStat>)>| {
        if let Some(c) = cur {
            match best {
                Some(b) if b.0 >= c.0 => {}
                _ => *best = Some(c),
            }
        }
    };
    for line in mountstats.lines() {
        if let Some(rest) = line.strip_prefix("device ") {
            finish(current.take(), &mut best);
            in_ops = false;
            let Some((_, after)) = rest.split_once(" mounted on ") else { continue };
            let Some((mnt, fstype)) = after.split_once(" with fstype ") else { continue };
            let mnt = mnt.replace("\\040", " ");
            if dir.starts_with(Path::new(&mnt)) {
                let is_nfs = fstype.starts_with("nfs");
                current = Some((Path::new(&mnt).components().count(), is_nfs, Vec::new()));
            }
        } else if line.trim() == "per-op statistics" {
            in_ops = true;
        } else if in_ops {
            let Some(cur) = current.as_mut() else { continue };
            let Some((name, nums)) = line.trim().split_once(':') else { continue };
            let n: Vec<u64> = nums.split_whitespace().filter_map(|x| x.parse().ok()).collect();
            if n.len() >= 8 && n[0] > 0 {
                cur.2.push(OpStat {
                    op: name.to_string(),
                    count: n[0],
                    retransmissions: n[1].saturating_sub(n[0]),
                    bytes_sent: n[3],
                    bytes_received: n[4],
                    queue_us: n[5] * 1000,
                    rtt_us: n[6] * 1000,
                    execute_us: n[7] * 1000,
                });
            }
        }
    }
    finish(current, &mut best);
    match best {
        Some((_, true, ops)) => ops,
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "device /dev/sda1 mounted on / with fstype ext4\n\
device srv:/export mounted on /mnt/n\\040fs with fstype nfs statvers=1.1\n\
\topts:\trw,vers=3\n\
\tper-op statistics\n\
\t        NULL: 0 0 0 0 0 0 0 0 0\n\
\t       WRITE: 10 12 0 82000 1360 3 40 45 0\n\
device tmpfs mounted on /mnt/n\\040fs/tmp with fstype tmpfs\n";

    #[test]
    fn mountstats_of_the_containing_nfs_mount() {
        let ops = nfs_op_stats(SAMPLE, Path::new("/mnt/n fs/bench"));
        assert_eq!(ops.len(), 1);
        assert_eq!((ops[0].op.as_str(), ops[0].count, ops[0].retransmissions), ("WRITE", 10, 2));
        assert_eq!((ops[0].bytes_sent, ops[0].rtt_us, ops[0].execute_us), (82000, 40_000, 45_000));
        assert!(nfs_op_stats(SAMPLE, Path::new("/home")).is_empty());
        assert!(nfs_op_stats(SAMPLE, Path::new("/mnt/n fs/tmp/x")).is_empty());
    }
}
