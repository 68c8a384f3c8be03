//! GETDEVICEINFO (RFC 8881 section 18.40): where a flexible-file data
//! server is (RFC 8435 section 4.1): its address, NFSv3, and the transfer
//! sizes this server uses, which every head of a cluster shares.

use proto::nfs4::*;

use super::pnfs::{data_servers, device_index, netaddr, opaque};
use super::Compound;

pub(super) fn run(cx: &mut Compound, args: GETDEVICEINFO4args) -> GETDEVICEINFO4res {
    let Some(servers) = data_servers(cx) else { return GETDEVICEINFO4res::default(nfsstat4::NFS4ERR_NOTSUPP) };
    if args.gdia_layout_type != layouttype4::LAYOUT4_FLEX_FILES {
        return GETDEVICEINFO4res::default(nfsstat4::NFS4ERR_UNKNOWN_LAYOUTTYPE);
    }
    let Some(&addr) = device_index(&args.gdia_device_id).and_then(|i| servers.get(i)) else {
        return GETDEVICEINFO4res::default(nfsstat4::NFS4ERR_NOENT);
    };
    let s = cx.core.settings();
    let body = ff_device_addr4 {
        ffda_netaddrs: vec![netaddr(addr)],
        ffda_versions: vec![ff_device_versions4 {
            ffdv_version: 3,
            ffdv_minorversion: 0,
            ffdv_rsize: s.rtmax,
            ffdv_wsize: s.wtmax,
            ffdv_tightly_coupled: false,
        }],
    };
    let device = device_addr4 { da_layout_type: layouttype4::LAYOUT4_FLEX_FILES, da_addr_body: opaque(&body) };
    // gdia_maxcount bounds the device address (18.40.3).
    let size = opaque(&device).len() as u32;
    if size > args.gdia_maxcount {
        return GETDEVICEINFO4res::NFS4ERR_TOOSMALL(size);
    }
    // No notifications: the data servers do not change while serving.
    GETDEVICEINFO4res::NFS4_OK(GETDEVICEINFO4resok { gdir_device_addr: device, gdir_notification: vec![] })
}
