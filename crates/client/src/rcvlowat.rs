//! How much of a large reply the kernel gathers before it wakes the
//! connection's reader (`SO_RCVLOWAT`).
//!
//! Loopback TCP hands a 1 MiB READ reply to the receiving socket in many
//! pieces, and by default every piece wakes the reader, which reads what
//! is there and sleeps again: with four 1 MiB READs in flight, about four
//! context switches per reply on the client's side, each a cross-CPU
//! wake-up charged to the sender. While other calls are outstanding,
//! nothing is lost by waiting for the fragment's rest before waking: the
//! reader has other replies to take next, and a reply is only useful
//! whole. With one call outstanding the low-water mark stays at one byte,
//! so the reader takes in a reply while the rest of it is still arriving
//! (waiting for all of it there cost a third of the rate of one 1 MiB READ
//! at a time).
//!
//! Linux wakes the reader anyway when the receive window would close, so a
//! mark larger than what can arrive never stalls the connection. But a
//! mark whose bytes do not fit the socket's receive buffer makes the kernel
//! grow the buffer for it and clamp the receive window to the mark (a
//! young loopback connection's 128 KiB buffer became 1.8 MB for a 900 KiB
//! mark), taking the window's sizing away from autotuning. So the mark
//! stays within a share of the buffer the kernel has already given the
//! socket, and none is set until that is large enough.

use std::os::fd::RawFd;

/// The mark is at most the receive buffer divided by this: the kernel
/// counts a buffer's bytes at about twice the data they hold (per-packet
/// overhead), so a quarter always fits and never makes it grow the buffer.
const RCVBUF_SHARE: usize = 4;

/// The mark set on one connection's socket.
pub(crate) struct LowWater {
    fd: Option<RawFd>,
    /// Fragments lacking less than this are read as they come.
    min: usize,
    /// The highest mark set.
    max: usize,
    /// The mark the socket has now.
    current: usize,
}

impl LowWater {
    /// For the socket `fd` (`None`: TLS, where the record's bytes are not
    /// the socket's, or nothing to tune). `max == 0` turns it off.
    pub(crate) fn new(fd: Option<RawFd>, min: usize, max: usize) -> LowWater {
        LowWater { fd: fd.filter(|_| max > 0), min: min.max(1), max, current: 1 }
    }

    /// After a read: `missing` bytes of the fragment being received have
    /// not arrived yet, and `others` says whether other calls wait on
    /// this connection besides the one that fragment answers.
    pub(crate) fn after_read(&mut self, missing: usize, others: bool) {
        let Some(fd) = self.fd else { return };
        let mut want = if others && missing >= self.min { missing.min(self.max) } else { 1 };
        if want > 1 {
            want = want.min(int_option(fd, libc::SO_RCVBUF).unwrap_or(0) / RCVBUF_SHARE);
            if want < self.min {
                want = 1;
            }
        }
        if want == self.current {
            return;
        }
        let val = libc::c_int::try_from(want).unwrap_or(libc::c_int::MAX);
        // SAFETY: `val` outlives the call, which copies the int it points
        // to; `fd` is this connection's socket, open while its reader runs.
        let rc = unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVLOWAT,
                (&val as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if rc == 0 {
            self.current = want;
        } else {
            // Not worth a failed call per read: read as the data comes.
            tracing::debug!("SO_RCVLOWAT refused: {}", std::io::Error::last_os_error());
            self.fd = None;
        }
    }
}

/// An int socket option of `fd` at level SOL_SOCKET.
fn int_option(fd: RawFd, name: libc::c_int) -> Option<usize> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `v` and `len` are valid for the call to write and sized for
    // an int option.
    let rc = unsafe { libc::getsockopt(fd, libc::SOL_SOCKET, name, (&mut v as *mut libc::c_int).cast(), &mut len) };
    (rc == 0).then(|| usize::try_from(v).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    fn mark(s: &TcpStream) -> usize {
        int_option(s.as_raw_fd(), libc::SO_RCVLOWAT).unwrap()
    }

    #[test]
    fn the_mark_follows_the_fragment_within_the_buffer_only_while_others_wait() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let s = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let buf = int_option(s.as_raw_fd(), libc::SO_RCVBUF).unwrap();
        let mut lw = LowWater::new(Some(s.as_raw_fd()), 1024, 1 << 30);
        lw.after_read(buf / 8, true);
        assert_eq!(mark(&s), buf / 8);
        lw.after_read(buf * 10, true);
        assert_eq!(mark(&s), buf / RCVBUF_SHARE, "within a quarter of the buffer");
        assert_eq!(int_option(s.as_raw_fd(), libc::SO_RCVBUF).unwrap(), buf, "the buffer is left as it was");
        lw.after_read(buf / 8, false);
        assert_eq!(mark(&s), 1, "alone: read as it comes");
        lw.after_read(1000, true);
        assert_eq!(mark(&s), 1, "small rests are read as they come");
        lw.after_read(0, true);
        assert_eq!(mark(&s), 1);
        let mut capped = LowWater::new(Some(s.as_raw_fd()), 1024, 4096);
        capped.after_read(buf, true);
        assert_eq!(mark(&s), 4096, "at most reply_lowat_max");
        let t = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let mut young = LowWater::new(Some(t.as_raw_fd()), buf, 1 << 30);
        young.after_read(buf * 10, true);
        assert_eq!(mark(&t), 1, "a buffer too small for reply_lowat_min: no mark");
    }

    #[test]
    fn off_or_without_a_socket_nothing_is_set() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let s = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let mut lw = LowWater::new(Some(s.as_raw_fd()), 64 << 10, 0);
        lw.after_read(900 << 10, true);
        assert_eq!(mark(&s), 1);
        LowWater::new(None, 64 << 10, 1 << 20).after_read(900 << 10, true);
    }
}
