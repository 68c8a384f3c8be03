//! Portmapper v2 (RFC 1833 section 3) and rpcbind v3/v4 (section 2),
//! answering for the services this server provides itself and for those
//! programs on this host registered with SET ([`registry`]).
//!
//! SET and UNSET are taken from local callers only (others get FALSE);
//! registrations of NLM and NSM are kept aside for nfsx's own callbacks.
//! The forwarding procedures (CALLIT, BCAST, INDIRECT), which would make
//! this server send traffic on a caller's behalf, are refused with
//! PROC_UNAVAIL, as are GETTIME (the core reads no clock), the address
//! translation calls and statistics. Lookups match program, version and
//! transport exactly.

pub(crate) mod registry;

use std::net::{IpAddr, SocketAddr};

use bytes::Bytes;
use proto::portmap::*;
use xdr::{Decode, Decoder, Encoder};

use crate::rpc::{run, Call, Dispatched};
use crate::Core;
use registry::{dump_ip, is_local, may_register, netid_of_prot, port_of_uaddr, Registration};

pub const PROGRAM: u32 = PMAP_PROGRAM;
const IPPROTO_TCP: u32 = 6;
const IPPROTO_UDP: u32 = 17;
const OWNER: &str = "nfsx";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transport {
    Tcp,
    Udp,
}

/// Every (program, version) registered, each on every transport served.
const SERVICES: &[(u32, u32)] = &[
    (PMAP_PROGRAM, 2),
    (PMAP_PROGRAM, 3),
    (PMAP_PROGRAM, 4),
    (crate::mount::PROGRAM, crate::mount::VERSION),
    (crate::ops::v3::PROGRAM, crate::ops::v3::VERSION),
    (crate::ops::v4::PROGRAM, crate::ops::v4::VERSION),
    (crate::nlm::PROGRAM, crate::nlm::VERSION),
    (crate::nlm::nsm::PROGRAM, crate::nlm::nsm::VERSION),
];

impl Core {
    fn port_for(&self, prog: u32, vers: u32, t: Transport) -> Option<u16> {
        if !SERVICES.contains(&(prog, vers)) {
            return None;
        }
        // An NFS version switched off is not advertised either.
        if prog == crate::ops::v3::PROGRAM {
            let (low, high) = self.settings().nfs_program_versions();
            if vers < low || vers > high {
                return None;
            }
        }
        match t {
            Transport::Tcp => Some(self.ports.tcp),
            Transport::Udp => self.ports.udp,
        }
    }

    fn transports(&self) -> Vec<Transport> {
        let mut t = vec![Transport::Tcp];
        if self.ports.udp.is_some() {
            t.push(Transport::Udp);
        }
        t
    }
}

/// RFC 5665 universal address: the IP's text form followed by the port's
/// high and low byte ("127.0.0.1.8.1" for port 2049).
pub fn uaddr(ip: IpAddr, port: u16) -> String {
    format!("{ip}.{}.{}", port >> 8, port & 0xff)
}

/// The address a netid is reachable at, from the address the client
/// reached us on; `None` when the netid's family is not the connection's
/// (we cannot know our address in the other family).
fn local_for_netid(local: SocketAddr, netid: &[u8]) -> Option<(Transport, IpAddr)> {
    let ip = crate::exports::canonical_ip(local.ip());
    let (t, want_v6) = match netid {
        b"tcp" => (Transport::Tcp, Some(false)),
        b"tcp6" => (Transport::Tcp, Some(true)),
        b"udp" => (Transport::Udp, Some(false)),
        b"udp6" => (Transport::Udp, Some(true)),
        // An empty netid means the transport the request came on.
        b"" => (Transport::Tcp, None),
        _ => return None,
    };
    match want_v6 {
        Some(v6) if v6 != ip.is_ipv6() => None,
        _ => Some((t, ip)),
    }
}

fn netid(t: Transport, ip: IpAddr) -> &'static str {
    match (t, ip.is_ipv6()) {
        (Transport::Tcp, false) => "tcp",
        (Transport::Tcp, true) => "tcp6",
        (Transport::Udp, false) => "udp",
        (Transport::Udp, true) => "udp6",
    }
}

fn getaddr(core: &Core, call: &Call, prog: u32, vers: u32, netid_asked: &[u8]) -> Bytes {
    let found = local_for_netid(call.peer.local, netid_asked).and_then(|(t, ip)| {
        let port = core
            .port_for(prog, vers, t)
            .or_else(|| core.portmap_regs.port(prog, vers, netid(t, ip).as_bytes(), false))?;
        Some(uaddr(ip, port))
    });
    Bytes::from(found.unwrap_or_default())
}

/// SET: registers `r` for a local caller (RPC TRUE/FALSE as a number).
fn set(core: &Core, call: &Call, r: Option<Registration>) -> (u32, bool) {
    let Some(r) = r else { return (0, false) };
    if !is_local(call.peer) {
        core.warn(crate::WarnKind::Access, || {
            tracing::warn!(peer = %call.peer.addr, prog = r.prog, vers = r.vers, "portmap SET refused: not a local caller")
        });
        return (0, false);
    }
    if !may_register(r.prog, r.vers) {
        return (0, false);
    }
    let (prog, vers, port) = (r.prog, r.vers, r.port);
    let netid = String::from_utf8_lossy(&r.netid).into_owned();
    let aside = r.aside();
    let done = core.portmap_regs.set(r);
    if done {
        tracing::info!(prog, vers, %netid, port, "program registered with the portmapper");
        if aside {
            core.v4.store.save_local_registrations(core.portmap_regs.aside_lines());
        }
    }
    (u32::from(done), done)
}

/// UNSET: removes (prog, vers) on the netids `netid` selects, for a local
/// caller.
fn unset(core: &Core, call: &Call, prog: u32, vers: u32, netid: impl Fn(&[u8]) -> bool) -> (u32, bool) {
    if !is_local(call.peer) {
        return (0, false);
    }
    let done = core.portmap_regs.unset(prog, vers, netid);
    if done {
        tracing::info!(prog, vers, "program unregistered from the portmapper");
        core.v4.store.save_local_registrations(core.portmap_regs.aside_lines());
    }
    (u32::from(done), done)
}

/// A v3/v4 SET's registration: its netid as given, its port from the
/// universal address.
fn registration3(prog: u32, vers: u32, netid: Bytes, addr: &[u8], owner: Bytes) -> Option<Registration> {
    if netid.is_empty() {
        return None;
    }
    let port = port_of_uaddr(addr)?;
    Some(Registration { prog, vers, netid, port, owner })
}

/// One entry of DUMP for every registration, built by `entry` from
/// (prog, vers, netid, uaddr, owner). rpcbind v3 and v4 share the entry's
/// layout (RFC 1833 `rpcb`) but the generated types are per version.
fn registrations<L>(core: &Core, call: &Call, entry: impl Fn(u32, u32, Bytes, Bytes, Bytes) -> L) -> Vec<L> {
    let ip = crate::exports::canonical_ip(call.peer.local.ip());
    let mut out = Vec::new();
    for &(prog, vers) in SERVICES {
        for t in core.transports() {
            if let Some(port) = core.port_for(prog, vers, t) {
                let netid = Bytes::from_static(netid(t, ip).as_bytes());
                let owner = Bytes::from_static(OWNER.as_bytes());
                out.push(entry(prog, vers, netid, Bytes::from(uaddr(ip, port)), owner));
            }
        }
    }
    for r in core.portmap_regs.listed() {
        let addr = Bytes::from(uaddr(dump_ip(call.peer.local.ip(), &r.netid), r.port));
        out.push(entry(r.prog, r.vers, r.netid, addr, r.owner));
    }
    out
}

fn void(_: &mut Decoder) -> xdr::Result<()> {
    Ok(())
}

pub fn dispatch(core: &Core, call: &Call, d: &mut Decoder, e: &mut Encoder) -> Dispatched {
    // rpcbind v4 GETADDR and GETVERSADDR take and answer the same types
    // (GETVERSADDR asks for an exact version match, which every lookup here
    // makes anyway).
    let getaddr4 = |m: pmap4_mapping| {
        let addr = getaddr(core, call, m.prog, m.vers, &m.netid);
        let ok = !addr.is_empty();
        (pmap4_string_result { addr }, ok)
    };
    match (call.vers, call.proc_) {
        (_, 0) => run(call, d, e, "portmap.NULL", void, |()| ((), true)),
        (2, PMAP2_SET) => run(call, d, e, "portmap.SET", pmap2_mapping::decode, |m| {
            let r = netid_of_prot(m.prot).zip(u16::try_from(m.port).ok()).map(|(netid, port)| Registration {
                prog: m.prog,
                vers: m.vers,
                netid: Bytes::from_static(netid),
                port,
                owner: Bytes::new(),
            });
            set(core, call, r)
        }),
        // Version 2's UNSET names no transport: both go.
        (2, PMAP2_UNSET) => run(call, d, e, "portmap.UNSET", pmap2_mapping::decode, |m| {
            unset(core, call, m.prog, m.vers, |n| n == b"tcp" || n == b"udp")
        }),
        (2, PMAP2_GETPORT) => run(call, d, e, "portmap.GETPORT", pmap2_mapping::decode, |m| {
            let t = match m.prot {
                IPPROTO_TCP => Some(Transport::Tcp),
                IPPROTO_UDP => Some(Transport::Udp),
                _ => None,
            };
            let registered = || {
                let netid = netid_of_prot(m.prot)?;
                core.portmap_regs.port(m.prog, m.vers, netid, false)
            };
            let port = t.and_then(|t| core.port_for(m.prog, m.vers, t)).or_else(registered).map_or(0, u32::from);
            (port, port != 0)
        }),
        (2, PMAP2_DUMP) => run(call, d, e, "portmap.DUMP", void, |()| {
            let mut list = Vec::new();
            for &(prog, vers) in SERVICES {
                for (t, prot) in [(Transport::Tcp, IPPROTO_TCP), (Transport::Udp, IPPROTO_UDP)] {
                    if let Some(port) = core.port_for(prog, vers, t) {
                        list.push(pmap2_mapping_list { map: pmap2_mapping { prog, vers, prot, port: port.into() } });
                    }
                }
            }
            for r in core.portmap_regs.listed() {
                let prot = match &r.netid[..] {
                    b"tcp" => IPPROTO_TCP,
                    b"udp" => IPPROTO_UDP,
                    _ => continue,
                };
                let map = pmap2_mapping { prog: r.prog, vers: r.vers, prot, port: r.port.into() };
                list.push(pmap2_mapping_list { map });
            }
            (pmap2_dump_result { list }, true)
        }),
        (3 | 4, PMAP3_SET) => run(call, d, e, "portmap.SET", pmap3_mapping::decode, |m| {
            set(core, call, registration3(m.prog, m.vers, m.netid, &m.addr, m.owner))
        }),
        // An empty netid unregisters every transport (RFC 1833 2.2.1).
        (3 | 4, PMAP3_UNSET) => run(call, d, e, "portmap.UNSET", pmap3_mapping::decode, |m| {
            unset(core, call, m.prog, m.vers, |n| m.netid.is_empty() || *n == m.netid[..])
        }),
        (3, PMAP3_GETADDR) => run(call, d, e, "portmap.GETADDR", pmap3_mapping::decode, |m| {
            let addr = getaddr(core, call, m.prog, m.vers, &m.netid);
            let ok = !addr.is_empty();
            (pmap3_string_result { addr }, ok)
        }),
        (4, PMAP4_GETADDR) => run(call, d, e, "portmap.GETADDR", pmap4_mapping::decode, getaddr4),
        (4, PMAP4_GETVERSADDR) => run(call, d, e, "portmap.GETVERSADDR", pmap4_mapping::decode, getaddr4),
        (3, PMAP3_DUMP) => run(call, d, e, "portmap.DUMP", void, |()| {
            let list = registrations(core, call, |prog, vers, netid, addr, owner| pmap3_mapping_list {
                map: pmap3_mapping { prog, vers, netid, addr, owner },
            });
            (pmap3_dump_result { list }, true)
        }),
        (4, PMAP4_DUMP) => run(call, d, e, "portmap.DUMP", void, |()| {
            let list = registrations(core, call, |prog, vers, netid, addr, owner| pmap4_mapping_list {
                map: pmap4_mapping { prog, vers, netid, addr, owner },
            });
            (pmap4_dump_result { list }, true)
        }),
        (2, PMAP2_CALLIT) => Dispatched::ProcUnavail { label: "portmap.CALLIT" },
        (3 | 4, PMAP3_CALLIT) => Dispatched::ProcUnavail { label: "portmap.CALLIT" },
        _ => Dispatched::ProcUnavail { label: "portmap.unknown" },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn universal_addresses() {
        assert_eq!(uaddr("127.0.0.1".parse().unwrap(), 2049), "127.0.0.1.8.1");
        assert_eq!(uaddr("::1".parse().unwrap(), 111), "::1.0.111");
        assert_eq!(uaddr("10.1.2.3".parse().unwrap(), 65535), "10.1.2.3.255.255");
    }

    #[test]
    fn netid_families() {
        let v4: SocketAddr = "10.0.0.1:2049".parse().unwrap();
        let mapped: SocketAddr = "[::ffff:10.0.0.1]:2049".parse().unwrap();
        let v6: SocketAddr = "[fe80::1]:2049".parse().unwrap();
        assert_eq!(local_for_netid(v4, b"tcp").map(|x| x.1), Some(v4.ip()));
        assert_eq!(local_for_netid(mapped, b"tcp").map(|x| x.1), Some(v4.ip()));
        assert_eq!(local_for_netid(v4, b"tcp6"), None);
        assert_eq!(local_for_netid(v6, b"tcp6").map(|x| x.1), Some(v6.ip()));
        assert_eq!(local_for_netid(v6, b"tcp"), None);
        assert_eq!(local_for_netid(v4, b"rdma"), None);
        assert_eq!(local_for_netid(v4, b"udp").map(|x| x.0), Some(Transport::Udp));
    }
}
