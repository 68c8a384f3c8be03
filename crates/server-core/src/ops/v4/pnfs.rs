//! pNFS with the flexible file layout (RFC 8881 section 12, RFC 8435):
//! this server as metadata server, the configured data servers
//! (`pnfs_data_servers`) as NFSv3 storage devices. Those are servers of
//! the same exports under the same file handles (heads over one shared
//! store), so a file's layout names one of them, its own handle, and the
//! file owner's ids for AUTH_SYS; the data servers need no other
//! coordination, since the store keeps sizes and times for every head
//! (hence FF_FLAGS_NO_LAYOUTCOMMIT).
//!
//! Layouts are only given for regular files of exports whose backend is
//! shared ([`vfs::Vfs::shared_store`]); elsewhere a data server would see
//! another file system.

use std::net::SocketAddr;

use bytes::Bytes;
use proto::nfs4::*;
use vfs::FileType;
use xdr::{Encode, Encoder};

use super::Compound;
use crate::ops::Obj;

/// The data servers, when this server offers pNFS at all.
pub(super) fn data_servers<'a>(cx: &Compound<'a>) -> Option<&'a [SocketAddr]> {
    let ds = &cx.core.settings().pnfs_data_servers;
    (!ds.is_empty()).then_some(ds.as_slice())
}

/// The regular file of the current handle, on an export with layouts.
pub(super) fn layout_file<'a>(cx: &Compound<'a>) -> Result<Obj<'a>, nfsstat4> {
    if data_servers(cx).is_none() {
        return Err(nfsstat4::NFS4ERR_LAYOUTUNAVAILABLE);
    }
    let o = cx.cobj(nfsstat4::NFS4ERR_LAYOUTUNAVAILABLE)?;
    match o.attrs.ftype {
        FileType::Regular if o.export.fs.shared_store().is_some() => Ok(o),
        FileType::Regular => Err(nfsstat4::NFS4ERR_LAYOUTUNAVAILABLE),
        FileType::Directory => Err(nfsstat4::NFS4ERR_ISDIR),
        _ => Err(nfsstat4::NFS4ERR_INVAL),
    }
}

/// The device id of data server `index`: the index, big-endian, in the
/// first four bytes.
pub(super) fn device_id(index: usize) -> deviceid4 {
    let mut d = [0u8; 16];
    d[..4].copy_from_slice(&(index as u32).to_be_bytes());
    d
}

pub(super) fn device_index(id: &deviceid4) -> Option<usize> {
    if id[4..] != [0; 12] {
        return None;
    }
    Some(u32::from_be_bytes([id[0], id[1], id[2], id[3]]) as usize)
}

/// `netaddr4` of a TCP address (RFC 5665 universal address).
pub(super) fn netaddr(a: SocketAddr) -> netaddr4 {
    let (netid, host) = match a {
        SocketAddr::V4(v) => ("tcp", v.ip().to_string()),
        SocketAddr::V6(v) => ("tcp6", v.ip().to_string()),
    };
    let p = a.port();
    netaddr4 {
        na_r_netid: Bytes::from_static(netid.as_bytes()),
        na_r_addr: Bytes::from(format!("{host}.{}.{}", p >> 8, p & 0xff)),
    }
}

/// XDR of `v`, as layout bodies and device addresses carry it.
pub(super) fn opaque(v: &impl Encode) -> Bytes {
    let mut e = Encoder::with_capacity(256);
    v.encode(&mut e);
    e.into_bytes()
}

/// The data server a file's I/O goes to: files spread over all of them.
pub(super) fn data_server_of(fileid: u64, servers: usize) -> usize {
    (fileid % servers.max(1) as u64) as usize
}

/// The data server a new layout of file `fileid` names: its place in the
/// spread, or the next one no client reported failing; None when every
/// one is held out (the file's I/O then goes through this server).
pub(super) fn choose_data_server(cx: &Compound, fileid: u64, servers: usize) -> Option<usize> {
    cx.core.devices.choose(data_server_of(fileid, servers), servers, cx.state().now())
}

/// Takes a client's reports of failed I/O at data servers (LAYOUTERROR,
/// or a LAYOUTRETURN's `ff_ioerr4`s).
pub(super) fn take_error_reports(cx: &Compound, errors: &[device_error4]) {
    let Some(servers) = data_servers(cx) else { return };
    let hold = std::time::Duration::from_secs(cx.core.settings().pnfs_error_hold_secs.into());
    let index_of = |e: &device_error4| device_index(&e.de_deviceid).filter(|i| *i < servers.len());
    cx.core.devices.report(errors, index_of, hold, cx.state().now());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_ids_and_addresses() {
        assert_eq!(device_index(&device_id(3)), Some(3));
        let mut bad = device_id(1);
        bad[15] = 1;
        assert_eq!(device_index(&bad), None);
        let a = netaddr("10.78.0.2:2049".parse().unwrap());
        assert_eq!((&a.na_r_netid[..], &a.na_r_addr[..]), (&b"tcp"[..], &b"10.78.0.2.8.1"[..]));
        let a = netaddr("[::1]:2049".parse().unwrap());
        assert_eq!((&a.na_r_netid[..], &a.na_r_addr[..]), (&b"tcp6"[..], &b"::1.8.1"[..]));
        assert_eq!(data_server_of(7, 3), 1);
    }
}
