//! Reads into fresh memory without zero-filling it first.
//!
//! `vec![0; n]` before a read writes every byte twice: the zeros, then the
//! data. For a 1 MiB READ the zeros were a fifth of reading the data in a
//! profile of four READs in flight (docs/BENCHMARKS.md, "never-zeroed").

use std::os::fd::{AsRawFd, BorrowedFd};

use rustix::io::{Errno, ReadWriteFlags};

/// Up to `count` bytes at `offset`, fewer only at the end of the file.
pub fn pread_up_to(fd: BorrowedFd<'_>, offset: u64, count: usize) -> Result<Vec<u8>, Errno> {
    let mut buf: Vec<u8> = Vec::with_capacity(count);
    while buf.len() < count {
        let got = buf.len();
        let spare = &mut buf.spare_capacity_mut()[..count - got];
        match rustix::io::pread_uninit(fd, spare, offset + got as u64) {
            Ok(([], _)) => break,
            Ok((filled, _)) => {
                let n = filled.len();
                // SAFETY: pread_uninit initialised the first `n` bytes of
                // the spare capacity, which starts at the current length,
                // and `got + n <= count <= capacity`.
                unsafe { buf.set_len(got + n) };
            }
            Err(Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(buf)
}

/// One `preadv2` of up to `count` bytes at `offset` with `flags` (e.g.
/// `RWF_NOWAIT`): what it read, which may be less than asked.
pub fn preadv2_once(fd: BorrowedFd<'_>, offset: u64, count: usize, flags: ReadWriteFlags) -> Result<Vec<u8>, Errno> {
    let mut buf: Vec<u8> = Vec::with_capacity(count);
    let iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: count };
    let off = libc::off_t::try_from(offset).map_err(|_| Errno::INVAL)?;
    // SAFETY: the one iovec points at `count` bytes of `buf`'s capacity,
    // which outlives the call; the kernel writes only into it.
    let n = unsafe { libc::preadv2(fd.as_raw_fd(), &iov, 1, off, flags.bits() as libc::c_int) };
    if n < 0 {
        return Err(Errno::from_raw_os_error(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)));
    }
    // n <= count: the kernel reads at most the iovec's length.
    let n = usize::try_from(n).unwrap_or(0).min(count);
    // SAFETY: the kernel initialised the first `n` bytes.
    unsafe { buf.set_len(n) };
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsFd;

    #[test]
    fn reads_what_is_there_and_stops_at_the_end() {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(b"0123456789").unwrap();
        assert_eq!(pread_up_to(f.as_fd(), 2, 4).unwrap(), b"2345");
        assert_eq!(pread_up_to(f.as_fd(), 6, 100).unwrap(), b"6789");
        assert_eq!(pread_up_to(f.as_fd(), 20, 4).unwrap(), b"");
        assert_eq!(preadv2_once(f.as_fd(), 3, 3, ReadWriteFlags::empty()).unwrap(), b"345");
        assert_eq!(preadv2_once(f.as_fd(), 8, 30, ReadWriteFlags::empty()).unwrap(), b"89");
    }
}
