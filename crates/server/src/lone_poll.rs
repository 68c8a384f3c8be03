//! Polling for a lone client's next request instead of sleeping for it.
//!
//! A client with one request at a time sends its next request right after
//! it reads the reply. A connection thread that sleeps in `epoll_wait`
//! meanwhile must be woken for it: on a virtual machine that is an
//! interrupt to an idle CPU and the CPU's way back out of halt, paid in
//! the client's `write` (the wake-up runs there) and again in latency. A
//! profile of 4 KiB READs at one in flight put 42% of the server's CPU in
//! the wake-up of the other side alone. For a short while after a reply
//! the thread instead asks the socket whether the next record has come
//! (`recv` with `MSG_PEEK`), and only then sleeps. The polling is bounded
//! in time (`lone_poll_us`) and in threads (`max_lone_pollers`), so
//! connections that are not lone, or a server whose CPUs are busy with
//! other connections, never pay for it.

use std::os::fd::RawFd;
use std::sync::atomic::AtomicUsize;
use std::time::{Duration, Instant};

use crate::slots::Slot;

/// What one poll found.
#[derive(Debug, PartialEq, Eq)]
pub enum Polled {
    /// Bytes (or the end of the stream) are there to read now.
    Ready,
    /// Nothing came within the time allowed.
    Quiet,
    /// Another connection's thread holds every polling slot.
    NoSlot,
}

/// Polls `fd` for readable bytes for at most `budget`, holding one of
/// `max` slots counted in `pollers` meanwhile.
pub fn poll_for_next(fd: RawFd, budget: Duration, pollers: &AtomicUsize, max: usize) -> Polled {
    let Some(_slot) = Slot::take(pollers, max) else {
        return Polled::NoSlot;
    };
    let start = Instant::now();
    loop {
        if readable(fd) {
            return Polled::Ready;
        }
        if start.elapsed() >= budget {
            return Polled::Quiet;
        }
        std::hint::spin_loop();
    }
}

/// Whether a read of `fd` would not block: a byte is there, the peer
/// closed, or the socket has an error to report. Reads nothing.
fn readable(fd: RawFd) -> bool {
    let mut byte = 0u8;
    // SAFETY: `fd` is the connection's socket, open for as long as its
    // task runs, and `byte` is a valid one-byte buffer.
    let n = unsafe { libc::recv(fd, (&mut byte as *mut u8).cast(), 1, libc::MSG_PEEK | libc::MSG_DONTWAIT) };
    n >= 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::WouldBlock
}

/// Whether a connection polls for its next request, learnt from what its
/// polls found: a poll that runs out costs its whole budget for nothing,
/// so after `max_quiet` in a row the connection stops polling (a client
/// that thinks between requests, or sits idle, is not polled for at all).
/// It polls again once a request arrives, while it sleeps, within the
/// budget of the moment it started waiting: polling would have found it.
///
/// With a `worth` (`lone_poll_worth_us`), it also keeps a moving average
/// of how long after the reply the next request came, polled for or not,
/// and does not poll while that is above `worth`: a client whose next call
/// comes tens of µs later keeps the thread spinning for each one, which
/// costs more CPU than waking the thread would.
#[derive(Debug)]
pub struct Adaptive {
    budget: Duration,
    max_quiet: u32,
    quiet: u32,
    worth: Duration,
    /// The moving average of the waits, in ns (`None` before the first).
    typical_ns: Option<u64>,
}

/// The weight of the newest wait in the moving average: 1/8.
const TYPICAL_SHIFT: u32 = 3;

impl Adaptive {
    /// `max_quiet` 0: never stop polling for polls that ran out; `worth`
    /// zero: never for slow ones.
    pub fn new(budget: Duration, max_quiet: u32, worth: Duration) -> Adaptive {
        Adaptive { budget, max_quiet, quiet: 0, worth, typical_ns: None }
    }

    /// Whether to poll before this wait.
    pub fn wants_poll(&self) -> bool {
        let quiet = self.max_quiet != 0 && self.quiet >= self.max_quiet;
        let slow = !self.worth.is_zero() && self.typical_ns.is_some_and(|t| t > self.worth.as_nanos() as u64);
        !self.budget.is_zero() && !quiet && !slow
    }

    /// What a poll found, `took` after it started.
    pub fn polled(&mut self, found: &Polled, took: Duration) {
        match found {
            Polled::Ready => {
                self.quiet = 0;
                self.note_wait(took);
            }
            Polled::Quiet => self.quiet = self.quiet.saturating_add(1),
            Polled::NoSlot => {}
        }
    }

    /// The next request arrived `waited` after the connection started
    /// waiting for it (without polling, or after a poll that ran out).
    pub fn arrived_after(&mut self, waited: Duration) {
        if waited <= self.budget {
            self.quiet = 0;
        }
        self.note_wait(waited);
    }

    fn note_wait(&mut self, waited: Duration) {
        if self.worth.is_zero() {
            return;
        }
        // A wait past the poll's budget counts as the budget: an idle
        // client must not take ages to be believed fast again.
        let w = waited.min(self.budget + self.budget).as_nanos() as u64;
        self.typical_ns = Some(match self.typical_ns {
            None => w,
            Some(t) => t - (t >> TYPICAL_SHIFT) + (w >> TYPICAL_SHIFT),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;
    use std::sync::atomic::Ordering;

    #[test]
    fn finds_bytes_that_are_there_and_gives_up_when_none_come() {
        let (mut a, b) = UnixStream::pair().unwrap();
        let pollers = AtomicUsize::new(0);
        let budget = Duration::from_millis(5);
        let start = Instant::now();
        assert_eq!(poll_for_next(b.as_raw_fd(), budget, &pollers, 1), Polled::Quiet);
        assert!(start.elapsed() >= budget);
        a.write_all(b"x").unwrap();
        assert_eq!(poll_for_next(b.as_raw_fd(), budget, &pollers, 1), Polled::Ready);
        assert_eq!(pollers.load(Ordering::Relaxed), 0, "the slot is given back");
        // Peeked, not read: the byte is still there.
        let mut buf = [0u8; 1];
        assert_eq!(std::io::Read::read(&mut &b, &mut buf).unwrap(), 1);
    }

    #[test]
    fn a_client_whose_calls_come_late_is_not_polled_for() {
        let us = Duration::from_micros;
        let mut a = Adaptive::new(us(50), 4, us(10));
        assert!(a.wants_poll());
        // Calls found 30 µs after the reply: after the first, no polls.
        a.polled(&Polled::Ready, us(30));
        assert!(!a.wants_poll());
        // The client speeds up: once its waits average under 10 µs again,
        // it is polled for.
        let mut waits = 0;
        while !a.wants_poll() {
            a.arrived_after(us(3));
            waits += 1;
            assert!(waits < 64, "never polled again");
        }
        assert!(waits > 1, "one fast call is not a trend");
        // Without a `worth`, late calls do not stop the polls.
        let mut b = Adaptive::new(us(50), 4, Duration::ZERO);
        b.polled(&Polled::Ready, us(45));
        assert!(b.wants_poll());
    }

    #[test]
    fn a_closed_peer_ends_the_poll_and_slots_are_bounded() {
        let (a, b) = UnixStream::pair().unwrap();
        let pollers = AtomicUsize::new(1);
        assert_eq!(poll_for_next(b.as_raw_fd(), Duration::from_secs(5), &pollers, 1), Polled::NoSlot);
        drop(a);
        pollers.store(0, Ordering::Relaxed);
        assert_eq!(poll_for_next(b.as_raw_fd(), Duration::from_secs(5), &pollers, 1), Polled::Ready);
    }
}
