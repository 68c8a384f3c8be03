//! pNFS data servers that clients reported failing (LAYOUTERROR, RFC 7862
//! section 15.6, or the `ff_ioerr4` reports a flexible-file LAYOUTRETURN
//! carries, RFC 8435 section 9.1.1). The metadata server cannot see the
//! path between a client and a data server, so a report is all it has: a
//! data server reported unreachable or failing is named in no new layout
//! for `pnfs_error_hold_secs`. New files then go to another data server,
//! or through the metadata server when none is left, instead of each
//! client finding the failure again on every file it opens (each costing
//! it a failed connection first). After the hold the data server is named
//! again; a client still cut off from it reports it again.

use std::time::Duration;

use parking_lot::Mutex;
use proto::nfs4::{device_error4, nfsstat4};

#[derive(Debug, Clone, Copy, Default)]
struct Device {
    errors: u64,
    /// On the core's clock ([`crate::Clock::now`]).
    held_until: Option<Duration>,
}

/// Per data server (by index into `pnfs_data_servers`): errors reported
/// and whether it is held out of new layouts.
#[derive(Debug, Default)]
pub(crate) struct DeviceHealth {
    devices: Mutex<Vec<Device>>,
}

/// What the metrics show of one data server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceReport {
    pub index: usize,
    pub errors: u64,
    /// Named in no new layout right now.
    pub held: bool,
}

/// Whether a reported status says the data server itself is failing (not
/// reachable, or unable to do I/O), as opposed to refusing this client's
/// request: RFC 7862 15.6.4 asks the metadata server to take the latter
/// (an ACCESS or BAD_STATEID from fencing, say) as transient.
fn server_failing(status: nfsstat4) -> bool {
    matches!(
        status,
        nfsstat4::NFS4ERR_NXIO
            | nfsstat4::NFS4ERR_IO
            | nfsstat4::NFS4ERR_SERVERFAULT
            | nfsstat4::NFS4ERR_MINOR_VERS_MISMATCH
    )
}

impl DeviceHealth {
    /// Takes a client's reports; `index_of` maps a device id to a data
    /// server (None: not one of ours, ignored, as processing the errors
    /// may not fail, RFC 7862 15.6.3). Returns the reports counted.
    pub(crate) fn report(
        &self,
        errors: &[device_error4],
        index_of: impl Fn(&device_error4) -> Option<usize>,
        hold: Duration,
        now: Duration,
    ) -> usize {
        let mut devices = self.devices.lock();
        let mut counted = 0;
        for e in errors {
            let Some(i) = index_of(e) else { continue };
            if devices.len() <= i {
                devices.resize(i + 1, Device::default());
            }
            let d = &mut devices[i];
            d.errors += 1;
            counted += 1;
            if server_failing(e.de_status) && !hold.is_zero() {
                d.held_until = Some(now + hold);
                tracing::warn!(device = i, status = ?e.de_status, hold_secs = hold.as_secs(), "a client reports a pNFS data server failing; it is left out of new layouts");
            }
        }
        counted
    }

    /// Whether data server `i` may be named in a new layout.
    pub(crate) fn usable(&self, i: usize, now: Duration) -> bool {
        let devices = self.devices.lock();
        devices.get(i).and_then(|d| d.held_until).is_none_or(|until| now >= until)
    }

    /// Of `n` data servers, the one a file's layout names: `preferred`
    /// (its place in the spread), or the next usable one after it; None
    /// when every one is held out.
    pub(crate) fn choose(&self, preferred: usize, n: usize, now: Duration) -> Option<usize> {
        (0..n).map(|k| (preferred + k) % n).find(|&i| self.usable(i, now))
    }

    pub(crate) fn reports(&self, n: usize, now: Duration) -> Vec<DeviceReport> {
        let devices = self.devices.lock();
        (0..n)
            .map(|i| {
                let d = devices.get(i).copied().unwrap_or_default();
                DeviceReport { index: i, errors: d.errors, held: d.held_until.is_some_and(|u| now < u) }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::nfs4::nfs_opnum4;

    const T0: Duration = Duration::from_secs(100);

    fn err(device: u8, status: nfsstat4) -> device_error4 {
        let mut id = [0u8; 16];
        id[3] = device;
        device_error4 { de_deviceid: id, de_status: status, de_opnum: nfs_opnum4::OP_WRITE }
    }

    #[test]
    fn unreachable_servers_are_held_and_refusals_only_counted() {
        let h = DeviceHealth::default();
        let index = |e: &device_error4| Some(e.de_deviceid[3] as usize).filter(|i| *i < 3);
        let n = h.report(
            &[err(1, nfsstat4::NFS4ERR_NXIO), err(2, nfsstat4::NFS4ERR_ACCESS), err(9, nfsstat4::NFS4ERR_NXIO)],
            index,
            Duration::from_secs(30),
            T0,
        );
        assert_eq!(n, 2, "the unknown device is ignored");
        assert!(h.usable(0, T0) && !h.usable(1, T0) && h.usable(2, T0));
        assert_eq!(h.choose(1, 3, T0), Some(2), "the next usable server");
        assert_eq!(h.choose(0, 3, T0), Some(0));
        h.report(&[err(0, nfsstat4::NFS4ERR_IO), err(2, nfsstat4::NFS4ERR_NXIO)], index, Duration::from_secs(30), T0);
        assert_eq!(h.choose(1, 3, T0), None, "every server held: no layout");
        let r = h.reports(3, T0);
        assert_eq!(r[1], DeviceReport { index: 1, errors: 1, held: true });
        assert_eq!(r[2], DeviceReport { index: 2, errors: 2, held: true });
        // A hold of zero counts without holding.
        let h = DeviceHealth::default();
        h.report(&[err(1, nfsstat4::NFS4ERR_NXIO)], index, Duration::ZERO, T0);
        assert!(h.usable(1, T0));
        assert_eq!(h.reports(2, T0)[1].errors, 1);
        // The hold ends with its time.
        let h = DeviceHealth::default();
        h.report(&[err(1, nfsstat4::NFS4ERR_NXIO)], index, Duration::from_secs(30), T0);
        assert!(!h.usable(1, T0 + Duration::from_secs(29)) && h.usable(1, T0 + Duration::from_secs(30)));
    }
}
