//! `nfsx umount DIR`. Root unmounts by the umount2 system call itself, so
//! a machine without fusermount3 (Debian's fuse3 missing, a container)
//! can still end a mount; other users go through the setuid fusermount3,
//! the only way FUSE lets them unmount.

use std::path::Path;
use std::process::Command;

use anyhow::Context;

/// How an unmount attempt ended.
enum Outcome {
    Done,
    /// Programs still use the mount (EBUSY).
    Busy,
}

pub fn run(dir: &Path) -> anyhow::Result<()> {
    let root = rustix::process::geteuid().is_root();
    let attempt = |lazy: bool| if root { by_syscall(dir, lazy) } else { by_fusermount(dir, lazy) };
    if let Outcome::Done = attempt(false)? {
        return Ok(());
    }
    // Busy (a program still in the directory, or a call waiting on a hard
    // mount's vanished server): detach it now; the kernel lets it go once
    // the last user leaves.
    match attempt(true)? {
        Outcome::Done => {
            eprintln!("nfsx umount: {} was busy; detached it (lazy unmount)", dir.display());
            Ok(())
        }
        Outcome::Busy => anyhow::bail!("{} is busy and could not be detached", dir.display()),
    }
}

fn by_syscall(dir: &Path, lazy: bool) -> anyhow::Result<Outcome> {
    use rustix::mount::{unmount, UnmountFlags};
    let flags = if lazy { UnmountFlags::DETACH } else { UnmountFlags::empty() };
    match unmount(dir, flags) {
        Ok(()) => Ok(Outcome::Done),
        Err(rustix::io::Errno::BUSY) => Ok(Outcome::Busy),
        Err(e) => Err(std::io::Error::from(e)).with_context(|| format!("unmounting {}", dir.display())),
    }
}

fn by_fusermount(dir: &Path, lazy: bool) -> anyhow::Result<Outcome> {
    let mut c = Command::new("fusermount3");
    c.arg("-u");
    if lazy {
        c.arg("-z");
    }
    let out = c.arg(dir).output().context("running fusermount3 (Debian package fuse3)")?;
    if out.status.success() {
        return Ok(Outcome::Done);
    }
    let err = String::from_utf8_lossy(&out.stderr);
    if !lazy && err.contains("busy") {
        return Ok(Outcome::Busy);
    }
    anyhow::bail!("fusermount3 -u{} {} failed: {}", if lazy { " -z" } else { "" }, dir.display(), err.trim())
}
