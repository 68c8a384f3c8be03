//! Registrations made with SET by programs on this host (RFC 1833
//! section 2.2 and 3.2), as rpcbind keeps them: a client's lock service
//! registering its NLM and NSM ports so that the server it locks with can
//! call it back, on a host where nfsx holds port 111.
//!
//! Only local callers may register or unregister (rpcbind without `-i`
//! refuses remote ones the same way): the loopback address, or a caller
//! whose address is the one it reached us on. NLM and NSM, which nfsx
//! serves itself, are kept aside: lookups keep answering nfsx's own port
//! for them (a local client's registration must not take remote clients'
//! locks away from the server), and only the callbacks nfsx makes to a
//! client on its own host use them ([`Core::local_callback_port`]).
//! Those are kept in the state directory too (`portmap-local`): a lock
//! client on this host must still be found after nfsx restarts, to be
//! told to reclaim its locks.

use std::net::IpAddr;

use bytes::Bytes;

use crate::exports::canonical_ip;
use crate::{Core, PeerInfo};

/// Registrations kept at most; SET beyond it answers FALSE. A host runs
/// a handful of RPC services; the bound only stops a local program that
/// registers in a loop from growing the list without end.
pub(crate) const MAX_REGISTRATIONS: usize = 256;

/// One (program, version, netid) registered with SET.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Registration {
    pub prog: u32,
    pub vers: u32,
    /// "tcp", "udp", "tcp6", "udp6" (what v2's protocol numbers become).
    pub netid: Bytes,
    pub port: u16,
    /// Who registered it, as rpcbind v3/v4 SET says (v2: empty).
    pub owner: Bytes,
}

impl Registration {
    /// NLM and NSM: served by nfsx itself, so only its callbacks use a
    /// registration of them.
    pub fn aside(&self) -> bool {
        is_aside(self.prog)
    }
}

fn is_aside(prog: u32) -> bool {
    prog == crate::nlm::PROGRAM || prog == crate::nlm::nsm::PROGRAM
}

/// The registrations, under their own lock (a leaf: nothing is taken
/// under it).
#[derive(Debug, Default)]
pub(crate) struct Registry {
    regs: parking_lot::Mutex<Vec<Registration>>,
    /// (prog, vers, netid) of registrations taken back from before a
    /// restart: their programs may have ended since, so a SET of the same
    /// replaces one rather than being refused (a lock client on this host
    /// started again could otherwise never register).
    restored: parking_lot::Mutex<Vec<(u32, u32, Bytes)>>,
}

impl Registry {
    /// Adds `r`; false when (prog, vers, netid) is registered already
    /// (in this run) or the list is full.
    pub fn set(&self, r: Registration) -> bool {
        let key = (r.prog, r.vers, r.netid.clone());
        let same = |x: &Registration| x.prog == r.prog && x.vers == r.vers && x.netid == r.netid;
        let mut regs = self.regs.lock();
        let mut restored = self.restored.lock();
        if restored.contains(&key) {
            restored.retain(|k| *k != key);
            regs.retain(|x| !same(x));
        }
        if regs.len() >= MAX_REGISTRATIONS || regs.iter().any(same) {
            return false;
        }
        regs.push(r);
        true
    }

    /// Removes the registrations of (prog, vers) on the netids `netid`
    /// selects (every netid when it says so); whether any went.
    pub fn unset(&self, prog: u32, vers: u32, netid: impl Fn(&[u8]) -> bool) -> bool {
        let mut regs = self.regs.lock();
        let before = regs.len();
        regs.retain(|x| !(x.prog == prog && x.vers == vers && netid(&x.netid)));
        regs.len() != before
    }

    /// The port of (prog, vers) on `netid`, if registered; registrations
    /// kept aside only when `aside`.
    pub fn port(&self, prog: u32, vers: u32, netid: &[u8], aside: bool) -> Option<u16> {
        self.regs
            .lock()
            .iter()
            .find(|x| x.prog == prog && x.vers == vers && x.netid == netid && (aside || !x.aside()))
            .map(|x| x.port)
    }

    /// The registrations kept aside, one line each (`prog vers netid port
    /// owner-hex`), for the store.
    pub fn aside_lines(&self) -> Vec<String> {
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        let regs = self.regs.lock();
        let line = |r: &Registration| {
            format!("{} {} {} {} {}", r.prog, r.vers, String::from_utf8_lossy(&r.netid), r.port, hex(&r.owner))
        };
        regs.iter().filter(|r| r.aside()).map(line).collect()
    }

    /// Takes back registrations kept aside before a restart; a line that
    /// does not parse, or names a program not kept aside, is skipped.
    pub fn restore(&self, lines: &[String]) {
        for l in lines {
            let w: Vec<&str> = l.split_whitespace().collect();
            let [prog, vers, netid, port, owner @ ..] = w.as_slice() else { continue };
            let owner = owner.first().copied().unwrap_or("");
            let owner: Option<Vec<u8>> = (0..owner.len() / 2)
                .map(|i| owner.get(2 * i..2 * i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
                .collect();
            let (Ok(prog), Ok(vers), Ok(port), Some(owner)) = (prog.parse(), vers.parse(), port.parse(), owner) else {
                continue;
            };
            let r = Registration { prog, vers, netid: Bytes::from(netid.to_string()), port, owner: Bytes::from(owner) };
            if r.aside() && self.set(r.clone()) {
                self.restored.lock().push((r.prog, r.vers, r.netid));
            }
        }
    }

    /// Every registration lookups answer (those kept aside left out).
    pub fn listed(&self) -> Vec<Registration> {
        self.regs.lock().iter().filter(|x| !x.aside()).cloned().collect()
    }
}

/// Whether `peer` is on this host: it came from the loopback address or
/// from the address it reached us on.
pub(crate) fn is_local(peer: &PeerInfo) -> bool {
    let ip = canonical_ip(peer.addr.ip());
    ip.is_loopback() || ip == canonical_ip(peer.local.ip())
}

/// The port of an RFC 5665 universal address ("h1.h2.h3.h4.p1.p2", or an
/// IPv6 address followed by ".p1.p2").
pub(crate) fn port_of_uaddr(uaddr: &[u8]) -> Option<u16> {
    let s = std::str::from_utf8(uaddr).ok()?;
    let mut parts = s.rsplitn(3, '.');
    let lo: u8 = parts.next()?.parse().ok()?;
    let hi: u8 = parts.next()?.parse().ok()?;
    // Something must precede the port (the host part).
    parts.next().filter(|h| !h.is_empty())?;
    Some(u16::from(hi) << 8 | u16::from(lo))
}

/// The netid a portmap v2 protocol number stands for.
pub(crate) fn netid_of_prot(prot: u32) -> Option<&'static [u8]> {
    match prot {
        super::IPPROTO_TCP => Some(b"tcp"),
        super::IPPROTO_UDP => Some(b"udp"),
        _ => None,
    }
}

/// Whether a registration of `prog`/`vers` may be made: not of a program
/// nfsx answers for itself, except those kept aside.
pub(crate) fn may_register(prog: u32, vers: u32) -> bool {
    is_aside(prog) || !super::SERVICES.contains(&(prog, vers))
}

/// The address DUMP shows for a registration on `netid` seen from a
/// connection to `local`: our address when the families agree, else the
/// family's wildcard.
pub(crate) fn dump_ip(local: IpAddr, netid: &[u8]) -> IpAddr {
    let local = canonical_ip(local);
    let v6 = netid.ends_with(b"6");
    match (v6, local.is_ipv6()) {
        (true, true) | (false, false) => local,
        (true, false) => IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
        (false, true) => IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
    }
}

impl Core {
    /// The port a program on this host registered for `prog`/`vers` on
    /// `netid` ("tcp", "udp", ...), NLM and NSM included: where nfsx
    /// calls back a lock client running on its own host, whose
    /// registration the lookups do not answer (nfsx serves those
    /// programs itself).
    pub fn local_callback_port(&self, prog: u32, vers: u32, netid: &str) -> Option<u16> {
        self.portmap_regs.port(prog, vers, netid.as_bytes(), true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Registrations kept aside go to the store's lines and come back
    /// from them; others are not kept.
    #[test]
    fn aside_registrations_survive_in_lines() {
        let r = Registry::default();
        let reg = |prog, port| Registration {
            prog,
            vers: 1,
            netid: Bytes::from_static(b"tcp"),
            port,
            owner: Bytes::from_static(b"me"),
        };
        assert!(r.set(reg(crate::nlm::nsm::PROGRAM, 700)));
        assert!(r.set(reg(400_000, 701)));
        let lines = r.aside_lines();
        assert_eq!(lines, vec![format!("{} 1 tcp 700 6d65", crate::nlm::nsm::PROGRAM)]);
        let again = Registry::default();
        again.restore(&[lines[0].clone(), "garbage".into(), "400000 1 tcp 9 00".into()]);
        assert_eq!(again.port(crate::nlm::nsm::PROGRAM, 1, b"tcp", true), Some(700));
        assert_eq!(again.port(400_000, 1, b"tcp", true), None);
        // One taken back gives way to a new SET; a new one does not.
        assert!(again.set(reg(crate::nlm::nsm::PROGRAM, 800)));
        assert_eq!(again.port(crate::nlm::nsm::PROGRAM, 1, b"tcp", true), Some(800));
        assert!(!again.set(reg(crate::nlm::nsm::PROGRAM, 900)));
    }

    #[test]
    fn universal_address_ports() {
        assert_eq!(port_of_uaddr(b"127.0.0.1.8.1"), Some(2049));
        assert_eq!(port_of_uaddr(b"::1.3.232"), Some(1000));
        assert_eq!(port_of_uaddr(b"0.0.0.0.0.111"), Some(111));
        assert_eq!(port_of_uaddr(b"8.1"), None);
        assert_eq!(port_of_uaddr(b"1.2.3.4.256.1"), None);
        assert_eq!(port_of_uaddr(b"garbage"), None);
        assert_eq!(port_of_uaddr(&[0xff, b'.', b'1', b'.', b'2']), None);
    }

    #[test]
    fn set_is_exclusive_and_bounded() {
        let r = Registry::default();
        let reg = |prog, netid: &'static [u8]| Registration {
            prog,
            vers: 1,
            netid: Bytes::from_static(netid),
            port: 900,
            owner: Bytes::new(),
        };
        assert!(r.set(reg(1, b"tcp")));
        assert!(!r.set(reg(1, b"tcp")));
        assert!(r.set(reg(1, b"udp")));
        assert!(r.unset(1, 1, |n| n == b"tcp"));
        assert!(!r.unset(1, 1, |n| n == b"tcp"));
        assert_eq!(r.port(1, 1, b"udp", false), Some(900));
        for p in 2..=MAX_REGISTRATIONS as u32 {
            assert!(r.set(reg(p, b"tcp")));
        }
        assert!(!r.set(reg(10_000, b"tcp")));
    }
}
