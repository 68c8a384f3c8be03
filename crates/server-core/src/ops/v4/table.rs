//! The operation table: one arm per NFSv4 operation, wrapping each
//! handler's result in its reply type. Optional operations nfsx does not
//! offer (NFSv4.2 layout statistics, directory
//! delegations, named attributes, inter-server copy, WRITE_SAME) are answered
//! NFS4ERR_NOTSUPP here, without a file of their own.

use proto::nfs4::*;

use super::{status_of, Compound, Status};

/// A result that is `NFS4_OK(resok)` or `default(status)`.
macro_rules! ok {
    ($variant:path, $res:ident, $call:expr) => {
        match $call {
            Ok(v) => ($variant($res::NFS4_OK(v)), nfsstat4::NFS4_OK),
            Err(s) => ($variant($res::default(s)), s),
        }
    };
}

/// A result that is only a status field.
macro_rules! unit {
    ($variant:path, $res:ident, $field:ident, $call:expr) => {{
        let s = status_of($call);
        ($variant($res { $field: s }), s)
    }};
}

/// A result the handler builds whole (errors that carry data).
macro_rules! full {
    ($variant:path, $call:expr) => {{
        let r = $call;
        let s = r.status();
        ($variant(r), s)
    }};
}

/// Runs one decoded operation and returns its result with the status
/// that decides whether the compound goes on.
pub(super) fn run_op(cx: &mut Compound, op: nfs_argop4) -> (nfs_resop4, nfsstat4) {
    use nfs_argop4 as A;
    use nfs_resop4 as R;
    match op {
        A::OP_ACCESS(args) => ok!(R::OP_ACCESS, ACCESS4res, super::access::run(cx, args)),
        A::OP_CLOSE(args) => ok!(R::OP_CLOSE, CLOSE4res, super::close::run(cx, args)),
        A::OP_COMMIT(args) => ok!(R::OP_COMMIT, COMMIT4res, super::commit::run(cx, args)),
        A::OP_CREATE(args) => ok!(R::OP_CREATE, CREATE4res, super::create::run(cx, args)),
        A::OP_DELEGRETURN(args) => unit!(R::OP_DELEGRETURN, DELEGRETURN4res, status, super::delegreturn::run(cx, args)),
        A::OP_GETATTR(args) => ok!(R::OP_GETATTR, GETATTR4res, super::getattr::run(cx, args)),
        A::OP_GETFH => ok!(R::OP_GETFH, GETFH4res, super::getfh::run(cx)),
        A::OP_LINK(args) => ok!(R::OP_LINK, LINK4res, super::link::run(cx, args)),
        A::OP_LOCK(args) => full!(R::OP_LOCK, super::lock::run(cx, args)),
        A::OP_LOCKT(args) => full!(R::OP_LOCKT, super::lockt::run(cx, args)),
        A::OP_LOCKU(args) => ok!(R::OP_LOCKU, LOCKU4res, super::locku::run(cx, args)),
        A::OP_LOOKUP(args) => unit!(R::OP_LOOKUP, LOOKUP4res, status, super::lookup::run(cx, args)),
        A::OP_LOOKUPP => unit!(R::OP_LOOKUPP, LOOKUPP4res, status, super::lookupp::run(cx)),
        A::OP_NVERIFY(args) => unit!(R::OP_NVERIFY, NVERIFY4res, status, super::nverify::run(cx, args)),
        A::OP_OPEN(args) => ok!(R::OP_OPEN, OPEN4res, super::open::run(cx, args)),
        A::OP_OPEN_CONFIRM(args) => ok!(R::OP_OPEN_CONFIRM, OPEN_CONFIRM4res, super::open_confirm::run(cx, args)),
        A::OP_OPEN_DOWNGRADE(args) => {
            ok!(R::OP_OPEN_DOWNGRADE, OPEN_DOWNGRADE4res, super::open_downgrade::run(cx, args))
        }
        A::OP_PUTFH(args) => unit!(R::OP_PUTFH, PUTFH4res, status, super::putfh::run(cx, args)),
        A::OP_PUTPUBFH => unit!(R::OP_PUTPUBFH, PUTPUBFH4res, status, super::putpubfh::run(cx)),
        A::OP_PUTROOTFH => unit!(R::OP_PUTROOTFH, PUTROOTFH4res, status, super::putrootfh::run(cx)),
        A::OP_READ(args) => ok!(R::OP_READ, READ4res, super::read::run(cx, args)),
        A::OP_READDIR(args) => ok!(R::OP_READDIR, READDIR4res, super::readdir::run(cx, args)),
        A::OP_READLINK => ok!(R::OP_READLINK, READLINK4res, super::readlink::run(cx)),
        A::OP_REMOVE(args) => ok!(R::OP_REMOVE, REMOVE4res, super::remove::run(cx, args)),
        A::OP_RENAME(args) => ok!(R::OP_RENAME, RENAME4res, super::rename::run(cx, args)),
        A::OP_RENEW(args) => unit!(R::OP_RENEW, RENEW4res, status, super::renew::run(cx, args)),
        A::OP_RESTOREFH => unit!(R::OP_RESTOREFH, RESTOREFH4res, status, super::restorefh::run(cx)),
        A::OP_SAVEFH => unit!(R::OP_SAVEFH, SAVEFH4res, status, super::savefh::run(cx)),
        A::OP_SECINFO(args) => ok!(R::OP_SECINFO, SECINFO4res, super::secinfo::run(cx, args)),
        A::OP_SETATTR(args) => full!(R::OP_SETATTR, super::setattr::run(cx, args)),
        A::OP_SETCLIENTID(args) => full!(R::OP_SETCLIENTID, super::setclientid::run(cx, args)),
        A::OP_SETCLIENTID_CONFIRM(args) => {
            unit!(R::OP_SETCLIENTID_CONFIRM, SETCLIENTID_CONFIRM4res, status, super::setclientid_confirm::run(cx, args))
        }
        A::OP_VERIFY(args) => unit!(R::OP_VERIFY, VERIFY4res, status, super::verify::run(cx, args)),
        A::OP_WRITE(args) => ok!(R::OP_WRITE, WRITE4res, super::write::run(cx, args)),
        A::OP_RELEASE_LOCKOWNER(args) => {
            unit!(R::OP_RELEASE_LOCKOWNER, RELEASE_LOCKOWNER4res, status, super::release_lockowner::run(cx, args))
        }
        A::OP_BACKCHANNEL_CTL(args) => {
            unit!(R::OP_BACKCHANNEL_CTL, BACKCHANNEL_CTL4res, bcr_status, super::backchannel_ctl::run(cx, args))
        }
        A::OP_BIND_CONN_TO_SESSION(args) => {
            ok!(R::OP_BIND_CONN_TO_SESSION, BIND_CONN_TO_SESSION4res, super::bind_conn_to_session::run(cx, args))
        }
        A::OP_EXCHANGE_ID(args) => ok!(R::OP_EXCHANGE_ID, EXCHANGE_ID4res, super::exchange_id::run(cx, args)),
        A::OP_CREATE_SESSION(args) => {
            ok!(R::OP_CREATE_SESSION, CREATE_SESSION4res, super::create_session::run(cx, args))
        }
        A::OP_DESTROY_SESSION(args) => {
            unit!(R::OP_DESTROY_SESSION, DESTROY_SESSION4res, dsr_status, super::destroy_session::run(cx, args))
        }
        A::OP_FREE_STATEID(args) => {
            unit!(R::OP_FREE_STATEID, FREE_STATEID4res, fsr_status, super::free_stateid::run(cx, args))
        }
        A::OP_SECINFO_NO_NAME(args) => ok!(R::OP_SECINFO_NO_NAME, SECINFO4res, super::secinfo_no_name::run(cx, args)),
        A::OP_SEQUENCE(args) => ok!(R::OP_SEQUENCE, SEQUENCE4res, super::sequence::run(cx, args)),
        A::OP_SET_SSV(args) => ok!(R::OP_SET_SSV, SET_SSV4res, super::set_ssv::run(cx, args)),
        A::OP_TEST_STATEID(args) => ok!(R::OP_TEST_STATEID, TEST_STATEID4res, super::test_stateid::run(cx, args)),
        A::OP_DESTROY_CLIENTID(args) => {
            unit!(R::OP_DESTROY_CLIENTID, DESTROY_CLIENTID4res, dcr_status, super::destroy_clientid::run(cx, args))
        }
        A::OP_RECLAIM_COMPLETE(args) => {
            unit!(R::OP_RECLAIM_COMPLETE, RECLAIM_COMPLETE4res, rcr_status, super::reclaim_complete::run(cx, args))
        }
        A::OP_DELEGPURGE(_) => {
            unit!(R::OP_DELEGPURGE, DELEGPURGE4res, status, Err::<_, nfsstat4>(nfsstat4::NFS4ERR_NOTSUPP))
        }
        A::OP_OPENATTR(_) => unit!(R::OP_OPENATTR, OPENATTR4res, status, Err::<_, nfsstat4>(nfsstat4::NFS4ERR_NOTSUPP)),
        A::OP_GET_DIR_DELEGATION(args) => {
            ok!(R::OP_GET_DIR_DELEGATION, GET_DIR_DELEGATION4res, super::get_dir_delegation::run(cx, args))
        }
        A::OP_GETDEVICEINFO(args) => full!(R::OP_GETDEVICEINFO, super::getdeviceinfo::run(cx, args)),
        A::OP_GETDEVICELIST(args) => ok!(R::OP_GETDEVICELIST, GETDEVICELIST4res, super::getdevicelist::run(cx, args)),
        A::OP_LAYOUTCOMMIT(args) => ok!(R::OP_LAYOUTCOMMIT, LAYOUTCOMMIT4res, super::layoutcommit::run(cx, args)),
        A::OP_LAYOUTGET(args) => ok!(R::OP_LAYOUTGET, LAYOUTGET4res, super::layoutget::run(cx, args)),
        A::OP_LAYOUTRETURN(args) => ok!(R::OP_LAYOUTRETURN, LAYOUTRETURN4res, super::layoutreturn::run(cx, args)),
        A::OP_WANT_DELEGATION(_) => {
            ok!(R::OP_WANT_DELEGATION, WANT_DELEGATION4res, Err::<_, nfsstat4>(nfsstat4::NFS4ERR_NOTSUPP))
        }
        // Minor version 2 (RFC 7862) and extended attributes (RFC 8276).
        A::OP_ALLOCATE(args) => unit!(R::OP_ALLOCATE, ALLOCATE4res, ar_status, super::allocate::run(cx, args)),
        A::OP_COPY(args) => full!(R::OP_COPY, super::copy::run(cx, args)),
        A::OP_DEALLOCATE(args) => {
            unit!(R::OP_DEALLOCATE, DEALLOCATE4res, dr_status, super::deallocate::run(cx, args))
        }
        A::OP_IO_ADVISE(args) => ok!(R::OP_IO_ADVISE, IO_ADVISE4res, super::io_advise::run(cx, args)),
        A::OP_OFFLOAD_CANCEL(args) => {
            unit!(R::OP_OFFLOAD_CANCEL, OFFLOAD_CANCEL4res, ocr_status, super::offload_cancel::run(cx, args))
        }
        A::OP_OFFLOAD_STATUS(args) => {
            ok!(R::OP_OFFLOAD_STATUS, OFFLOAD_STATUS4res, super::offload_status::run(cx, args))
        }
        A::OP_READ_PLUS(args) => ok!(R::OP_READ_PLUS, READ_PLUS4res, super::read_plus::run(cx, args)),
        A::OP_SEEK(args) => ok!(R::OP_SEEK, SEEK4res, super::seek::run(cx, args)),
        A::OP_CLONE(args) => unit!(R::OP_CLONE, CLONE4res, cl_status, super::clone::run(cx, args)),
        A::OP_GETXATTR(args) => ok!(R::OP_GETXATTR, GETXATTR4res, super::getxattr::run(cx, args)),
        A::OP_SETXATTR(args) => ok!(R::OP_SETXATTR, SETXATTR4res, super::setxattr::run(cx, args)),
        A::OP_LISTXATTRS(args) => ok!(R::OP_LISTXATTRS, LISTXATTRS4res, super::listxattrs::run(cx, args)),
        A::OP_REMOVEXATTR(args) => ok!(R::OP_REMOVEXATTR, REMOVEXATTR4res, super::removexattr::run(cx, args)),
        // No inter-server copy, no layout statistics (the flexible-file
        // layout asks for none: ffl_stats_collect_hint 0), no WRITE_SAME
        // (application data blocks).
        A::OP_COPY_NOTIFY(_) => {
            ok!(R::OP_COPY_NOTIFY, COPY_NOTIFY4res, Err::<_, nfsstat4>(nfsstat4::NFS4ERR_NOTSUPP))
        }
        A::OP_LAYOUTERROR(args) => {
            unit!(R::OP_LAYOUTERROR, LAYOUTERROR4res, ler_status, super::layouterror::run(cx, args))
        }
        A::OP_LAYOUTSTATS(_) => {
            unit!(R::OP_LAYOUTSTATS, LAYOUTSTATS4res, lsr_status, Err::<(), nfsstat4>(nfsstat4::NFS4ERR_NOTSUPP))
        }
        A::OP_WRITE_SAME(_) => {
            ok!(R::OP_WRITE_SAME, WRITE_SAME4res, Err::<_, nfsstat4>(nfsstat4::NFS4ERR_NOTSUPP))
        }
        A::OP_ILLEGAL => {
            (R::OP_ILLEGAL(ILLEGAL4res { status: nfsstat4::NFS4ERR_OP_ILLEGAL }), nfsstat4::NFS4ERR_OP_ILLEGAL)
        }
    }
}
