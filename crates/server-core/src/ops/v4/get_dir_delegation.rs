//! GET_DIR_DELEGATION (RFC 8881 section 18.39): a delegation on the
//! current directory, with the notifications asked for that this server
//! sends (never one not asked). Granted to NFSv4.1 clients with a working
//! back channel, on exports whose backend reports every change of a
//! directory (`vfs::DirEvents`), within the `[core.nfs4]` limits.
//!
//! Declining: GDD4_UNAVAIL. When a limit was in the way and the client
//! asked to be signalled, `will_signal_deleg_avail` is set and the client
//! gets CB_RECALLABLE_OBJ_AVAIL once a delegation is free; for any other
//! reason (no back channel, a backend without change events) such a
//! client gets NFS4ERR_DIRDELEG_UNAVAIL, as section 18.39.3 says of a
//! "want" the server will not honour. A client that holds one on the
//! directory already gets GDD4_UNAVAIL, its delegation untouched.

use std::time::Duration;

use proto::nfs4::*;

use super::attrs::notify::notifiable;
use super::dirops::directory;
use super::open::file_key;
use super::{Compound, Fh};
use crate::fh::HandleData;
use crate::state::dir_delegs::{Wants, SUPPORTED_NOTIFICATIONS};
use crate::state::Decline;

type Res = Result<GET_DIR_DELEGATION4res_non_fatal, nfsstat4>;

fn delay(t: &attr_notice4) -> Duration {
    let secs = u64::try_from(t.seconds).unwrap_or(0);
    Duration::from_secs(secs) + Duration::from_nanos(u64::from(t.nseconds.min(999_999_999)))
}

pub(super) fn run(cx: &mut Compound, args: GET_DIR_DELEGATION4args) -> Res {
    let unavailable = || -> Res {
        if args.gdda_signal_deleg_avail {
            Err(nfsstat4::NFS4ERR_DIRDELEG_UNAVAIL)
        } else {
            Ok(GET_DIR_DELEGATION4res_non_fatal::GDD4_UNAVAIL(false))
        }
    };
    let client = cx.session_client().ok_or(nfsstat4::NFS4ERR_OP_NOT_IN_SESSION)?;
    if matches!(cx.cfh()?, Fh::Pseudo(_)) {
        // The pseudo file system changes only with the exports.
        return unavailable();
    }
    let dir = cx.cobj(nfsstat4::NFS4ERR_NOTSUPP)?;
    directory(&dir, false)?;
    let fs = dir.fs();
    // A store other servers change behind this one reports no events of
    // their changes.
    let Some(events) = fs.dir_events().filter(|_| fs.shared_store().is_none()) else {
        return unavailable();
    };
    let key = file_key(&dir);
    let st = cx.state();
    let declined = |d: Decline| -> Res {
        match d {
            Decline::AlreadyHeld => Ok(GET_DIR_DELEGATION4res_non_fatal::GDD4_UNAVAIL(false)),
            Decline::Limit if args.gdda_signal_deleg_avail => {
                st.want_dir_delegation(client);
                Ok(GET_DIR_DELEGATION4res_non_fatal::GDD4_UNAVAIL(true))
            }
            Decline::Limit | Decline::Unavailable => unavailable(),
        }
    };
    if let Err(d) = st.dir_delegation_allowed(client, key) {
        return declined(d);
    }
    let watch = match events.watch(dir.id) {
        Ok(w) => w,
        Err(e) => {
            tracing::info!(error = %e, "cannot watch a directory: no directory delegation");
            return unavailable();
        }
    };
    let types = args.gdda_notification_types.first().copied().unwrap_or(0) & SUPPORTED_NOTIFICATIONS;
    let wants = Wants {
        types,
        child_attrs: notifiable(&args.gdda_child_attributes),
        dir_attrs: notifiable(&args.gdda_dir_attributes),
        child_delay: delay(&args.gdda_child_attr_delay),
        dir_delay: delay(&args.gdda_dir_attr_delay),
    };
    let fh = cx.encode_fh(Fh::Obj { export_id: dir.export.id, id: dir.id, generation: dir.attrs.generation });
    match st.grant_dir_delegation(cx.minor, client, key, &fh, watch, wants.clone()) {
        Ok(stateid) => {
            cx.current_stateid = Some(stateid.clone());
            let gddr_cookieverf = cx.core.fh.cookieverf(&HandleData {
                export_id: dir.export.id,
                fileid: dir.id,
                generation: dir.attrs.generation,
            });
            Ok(GET_DIR_DELEGATION4res_non_fatal::GDD4_OK(GET_DIR_DELEGATION4resok {
                gddr_cookieverf,
                gddr_stateid: stateid,
                gddr_notification: if types == 0 { Vec::new() } else { vec![types] },
                gddr_child_attributes: wants.child_attrs,
                gddr_dir_attributes: wants.dir_attrs,
            }))
        }
        Err((decline, unwatch)) => {
            cx.core.stop_watches(unwatch.into_iter().collect());
            declined(decline)
        }
    }
}
