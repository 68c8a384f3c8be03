//! Callers waiting for a lock the server said was `blocked`, found again
//! by the lock a GRANTED call names. A grant that comes before the
//! caller starts to wait (the server can call back before its LOCK reply
//! arrives) is kept for it; a lock granted a moment ago is granted again
//! when the server repeats its call because our answer was lost.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;
use proto::nlm::nlm4_lock;
use tokio::sync::Notify;

/// How long a granted lock is known as granted to a repeated GRANTED:
/// longer than a server's retries of one call (seconds).
const REMEMBER_GRANTED: Duration = Duration::from_secs(60);

/// Bound of the granted locks remembered.
const MAX_REMEMBERED: usize = 4096;

/// A lock as GRANTED names it: the file, the owner (handle and svid) and
/// the range; the caller's name is the server's view of us and may be
/// spelled differently.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
struct Key {
    fh: Bytes,
    oh: Bytes,
    svid: u32,
    offset: u64,
    len: u64,
}

impl Key {
    fn of(l: &nlm4_lock) -> Key {
        Key { fh: l.fh.clone(), oh: l.oh.clone(), svid: l.svid, offset: l.l_offset, len: l.l_len }
    }
}

/// One caller's wait.
#[derive(Default)]
pub(crate) struct Wait {
    granted: AtomicBool,
    woken: Notify,
    /// The cookie of a grant by message (GRANTED_MSG), which the caller
    /// answers with GRANTED_RES.
    res_cookie: Mutex<Option<Bytes>>,
}

impl Wait {
    /// Whether the server granted the lock within `limit`.
    pub(crate) async fn granted_within(&self, limit: Duration) -> bool {
        if self.granted.load(Ordering::Acquire) {
            return true;
        }
        // notify_one keeps a permit for a wake before this point.
        let _ = tokio::time::timeout(limit, self.woken.notified()).await;
        self.granted.load(Ordering::Acquire)
    }

    /// The cookie to answer, once, when the grant came by message.
    pub(crate) fn granted_by_message(&self) -> Option<Bytes> {
        self.res_cookie.lock().take()
    }
}

/// Callers waiting, each with the address of the server it asked: only a
/// call from there grants its lock (as Linux's lockd checks), so another
/// host that learns or guesses a lock cannot make a caller believe it
/// holds it.
#[derive(Default)]
pub(crate) struct Waiters {
    waiting: Mutex<HashMap<Key, (Arc<Wait>, IpAddr)>>,
    granted: Mutex<HashMap<Key, (Instant, IpAddr)>>,
}

fn same_host(a: IpAddr, b: IpAddr) -> bool {
    a.to_canonical() == b.to_canonical()
}

impl Waiters {
    /// Starts waiting for `l`, asked of the server at `server`, before the
    /// LOCK that may block goes out.
    pub(crate) fn expect(&self, l: &nlm4_lock, server: IpAddr) -> Arc<Wait> {
        self.waiting.lock().entry(Key::of(l)).or_insert_with(|| (Arc::default(), server)).0.clone()
    }

    /// The wait for `l` is over; `granted`: the caller holds the lock.
    pub(crate) fn done(&self, l: &nlm4_lock, granted: bool) {
        let key = Key::of(l);
        let Some((_, server)) = self.waiting.lock().remove(&key) else { return };
        if granted {
            let now = Instant::now();
            let mut g = self.granted.lock();
            g.retain(|_, (at, _)| now.duration_since(*at) < REMEMBER_GRANTED);
            if g.len() < MAX_REMEMBERED {
                g.insert(key, (now, server));
            }
        }
    }

    /// The wait for `l`, if a caller waits for it and `from` is the server
    /// it asked.
    fn waiting_for(&self, l: &nlm4_lock, from: IpAddr) -> Option<Arc<Wait>> {
        let waiting = self.waiting.lock();
        let (w, server) = waiting.get(&Key::of(l))?;
        if !same_host(*server, from) {
            tracing::debug!(%from, %server, "a grant for a lock asked of another server: ignored");
            return None;
        }
        Some(w.clone())
    }

    /// The owner's locks on `fh` are released: a GRANTED repeated for
    /// them now is refused (the server then frees what it granted).
    pub(crate) fn released(&self, fh: &Bytes, oh: &Bytes) {
        self.granted.lock().retain(|k, _| !(k.fh == *fh && k.oh == *oh));
    }

    /// A GRANTED for `l`: wakes its caller. False when nobody waits for
    /// it and it was not granted a moment ago.
    pub(crate) fn grant(&self, l: &nlm4_lock, from: IpAddr) -> bool {
        if let Some(w) = self.waiting_for(l, from) {
            w.granted.store(true, Ordering::Release);
            w.woken.notify_one();
            return true;
        }
        let granted = self.granted.lock();
        granted.get(&Key::of(l)).is_some_and(|(at, server)| same_host(*server, from) && at.elapsed() < REMEMBER_GRANTED)
    }

    /// A GRANTED_MSG for `l`, with `cookie`: wakes its caller, which
    /// answers it. False when nobody waits for it (the lock service
    /// answers then).
    pub(crate) fn grant_by_message(&self, l: &nlm4_lock, cookie: &Bytes, from: IpAddr) -> bool {
        let Some(w) = self.waiting_for(l, from) else { return false };
        *w.res_cookie.lock() = Some(cookie.clone());
        w.granted.store(true, Ordering::Release);
        w.woken.notify_one();
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LO: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    fn lock(offset: u64) -> nlm4_lock {
        nlm4_lock {
            caller_name: Bytes::from_static(b"c"),
            fh: Bytes::from_static(b"fh"),
            oh: Bytes::from_static(b"oh"),
            svid: 7,
            l_offset: offset,
            l_len: 10,
        }
    }

    /// A grant before the wait starts is not lost; one for another range
    /// wakes nobody; a repeat after the grant is granted again until the
    /// lock is released.
    #[tokio::test]
    async fn grants_find_their_waiter() {
        let w = Waiters::default();
        let wait = w.expect(&lock(0), LO);
        assert!(!w.grant(&lock(5), LO));
        assert!(w.grant(&lock(0), LO));
        assert!(wait.granted_within(Duration::from_millis(1)).await);
        w.done(&lock(0), true);
        assert!(w.grant(&lock(0), LO), "a repeated GRANTED");
        w.released(&Bytes::from_static(b"fh"), &Bytes::from_static(b"oh"));
        assert!(!w.grant(&lock(0), LO));

        let wait = w.expect(&lock(20), LO);
        assert!(!wait.granted_within(Duration::from_millis(5)).await);
        w.done(&lock(20), false);
        assert!(!w.grant(&lock(20), LO));
    }

    /// A grant by message wakes its caller with the cookie to answer,
    /// given out once; with nobody waiting it is left to the service.
    #[tokio::test]
    async fn a_grant_by_message_carries_its_cookie() {
        let w = Waiters::default();
        let cookie = Bytes::from_static(b"k");
        assert!(!w.grant_by_message(&lock(0), &cookie, LO));
        let wait = w.expect(&lock(0), LO);
        assert!(w.grant_by_message(&lock(0), &cookie, LO));
        assert!(wait.granted_within(Duration::from_millis(1)).await);
        assert_eq!(wait.granted_by_message(), Some(cookie));
        assert_eq!(wait.granted_by_message(), None);
    }

    /// A grant from another host than the server asked wakes nobody, and
    /// is not taken for a repeat either.
    #[tokio::test]
    async fn grants_come_from_the_server_asked() {
        let w = Waiters::default();
        let other = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 9));
        let wait = w.expect(&lock(0), LO);
        assert!(!w.grant(&lock(0), other));
        assert!(!w.grant_by_message(&lock(0), &Bytes::from_static(b"c"), other));
        assert!(!wait.granted_within(Duration::from_millis(5)).await);
        // The same server, as an IPv4-mapped address.
        assert!(w.grant(&lock(0), IpAddr::V6(std::net::Ipv4Addr::LOCALHOST.to_ipv6_mapped())));
        w.done(&lock(0), true);
        assert!(!w.grant(&lock(0), other));
        assert!(w.grant(&lock(0), LO));
    }
}
