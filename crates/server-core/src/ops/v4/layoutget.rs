//! LAYOUTGET (RFC 8881 section 18.43) with the flexible file layout (RFC
//! 8435 section 5): the whole file, one mirror, one NFSv3 data server
//! (files spread over the configured ones), the file's own handle, and
//! its owner's ids for the AUTH_SYS credential the client uses there.
//! A data server clients reported failing is skipped for the next one
//! ([`crate::devices`]).

use proto::nfs4::*;

use super::open::file_key;
use super::pnfs::{choose_data_server, data_servers, device_id, layout_file, opaque};
use super::Compound;

pub(super) fn run(cx: &mut Compound, args: LAYOUTGET4args) -> Result<LAYOUTGET4resok, nfsstat4> {
    let o = layout_file(cx)?;
    if args.loga_layout_type != layouttype4::LAYOUT4_FLEX_FILES {
        return Err(nfsstat4::NFS4ERR_UNKNOWN_LAYOUTTYPE);
    }
    if args.loga_iomode == layoutiomode4::LAYOUTIOMODE4_ANY {
        return Err(nfsstat4::NFS4ERR_BADIOMODE);
    }
    // A range must be non-empty and end within 2^64 (18.43.3); all ones
    // means "to the end of the file".
    let ends = |len: u64| len == u64::MAX || args.loga_offset.checked_add(len).is_some();
    if args.loga_length == 0 || !ends(args.loga_length) || !ends(args.loga_minlength) {
        return Err(nfsstat4::NFS4ERR_INVAL);
    }
    let client = cx.session_client().ok_or(nfsstat4::NFS4ERR_OP_NOT_IN_SESSION)?;
    let sid = cx.resolve_stateid(&args.loga_stateid)?;
    let servers = data_servers(cx).ok_or(nfsstat4::NFS4ERR_LAYOUTUNAVAILABLE)?;
    // Every data server reported failing: the client does its I/O here.
    let device = choose_data_server(cx, o.id, servers.len()).ok_or(nfsstat4::NFS4ERR_LAYOUTUNAVAILABLE)?;
    let st = cx.state();
    let file = file_key(&o);
    let stateid = st.layoutget(cx.minor, client, file, &sid, args.loga_iomode)?;
    let ds = ff_data_server4 {
        ffds_deviceid: device_id(device),
        ffds_efficiency: 0,
        // An NFSv3 data server takes no stateid (RFC 8435 section 5.1).
        ffds_stateid: stateid4 { seqid: 0, other: [0; 12] },
        ffds_fh_vers: vec![cx.encode_fh(o.fh())],
        ffds_user: o.attrs.uid.to_string().into(),
        ffds_group: o.attrs.gid.to_string().into(),
    };
    let body = ff_layout4 {
        ffl_stripe_unit: 0,
        ffl_mirrors: vec![ff_mirror4 { ffm_data_servers: vec![ds] }],
        // Every head writes through to the shared store, which keeps the
        // file's size and times: nothing for LAYOUTCOMMIT to tell.
        ffl_flags: FF_FLAGS_NO_LAYOUTCOMMIT,
        ffl_stats_collect_hint: 0,
    };
    let resok = LAYOUTGET4resok {
        logr_return_on_close: false,
        logr_stateid: stateid,
        logr_layout: vec![layout4 {
            lo_offset: 0,
            lo_length: u64::MAX,
            lo_iomode: args.loga_iomode,
            lo_content: layout_content4 { loc_type: layouttype4::LAYOUT4_FLEX_FILES, loc_body: opaque(&body) },
        }],
    };
    if opaque(&resok).len() > args.loga_maxcount as usize {
        return Err(nfsstat4::NFS4ERR_TOOSMALL);
    }
    Ok(resok)
}
