//! pNFS with flexible-file layouts (RFC 8435) on the client side: when the
//! server is a metadata server (EXCHGID4_FLAG_USE_PNFS_MDS) and
//! `[v41] pnfs` is on, READ, WRITE and COMMIT of an open file go over
//! NFSv3 to the data server its layout names, with the layout's handle and
//! AUTH_SYS ids. Anything a layout cannot serve (none offered, a data
//! server unreachable or refusing) goes through the metadata server, as
//! without pNFS.
//!
//! Unstable writes sent to a data server are committed there: a layout
//! with such writes outstanding stays until the COMMIT, even once recalled
//! (it then serves no new I/O).
//!
//! A data server that fails is reported to the metadata server (RFC 7862
//! LAYOUTERROR over NFSv4.2; over NFSv4.1 in the layout's LAYOUTRETURN,
//! RFC 8435 section 9.1.1), which leaves it out of new layouts; one this
//! client could not reach is not tried again for `pnfs_failed_device_secs`,
//! so layouts it already holds naming it do not each wait for it.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use proto::nfs3::{self, stable_how};
use proto::nfs4::*;
use xdr::{Decode, Decoder, Encode, Encoder};

use super::Nfs41;
use crate::error::{Error, Result};
use crate::transport::{ConnParams, Connection};

/// One file's layout as this client uses it.
#[derive(Clone)]
pub(crate) struct FileLayout {
    stateid: stateid4,
    device: deviceid4,
    ds: Arc<Connection>,
    fh: Bytes,
    /// Unstable writes sent to the data server, those it answered, and
    /// how many of those a COMMIT there has covered. A COMMIT covers the
    /// writes answered before it was sent, not those still out (the write
    /// cache commits while later writes fly), so it leaves the layout dirty
    /// until a COMMIT covers them too; that one must go to the data server
    /// again, not to the metadata server, whose verifier differs and would
    /// have every unstable byte of the file sent again.
    unstable_sent: u64,
    unstable_answered: u64,
    committed_through: u64,
    /// The server recalled it: no new I/O through it.
    recalled: bool,
    /// I/O through it that failed, for the LAYOUTRETURN's error report.
    errors: Vec<device_error4>,
}

impl FileLayout {
    /// Unstable writes went to the data server since its last COMMIT.
    fn dirty(&self) -> bool {
        self.unstable_sent > self.committed_through
    }
}

#[derive(Default)]
pub(crate) struct Table {
    files: HashMap<Bytes, FileLayout>,
    /// Files no layout was had for while they were open.
    unavailable: HashSet<Bytes>,
    /// Data server connections by (device, uid, gid): the credential is
    /// the connection's.
    devices: HashMap<(deviceid4, u32, u32), Arc<Connection>>,
    /// Data servers this client could not reach, and when.
    failed: HashMap<deviceid4, Instant>,
}

impl Table {
    fn device_failed(&self, device: &deviceid4, hold: Duration) -> bool {
        self.failed.get(device).is_some_and(|at| at.elapsed() < hold)
    }
}

/// What pNFS needs besides the session.
pub(crate) struct Pnfs {
    pub params: ConnParams,
    pub machine: String,
    pub table: parking_lot::Mutex<Table>,
    /// One LAYOUTGET (and device lookup) at a time: concurrent first I/O
    /// of a file waits for the layout the first caller gets.
    pub fetching: tokio::sync::Mutex<()>,
    /// `[v41] pnfs_failed_device_secs`.
    pub failed_device_hold: Duration,
}

fn io_error(what: &'static str, why: impl std::fmt::Display) -> Error {
    Error::Invalid(format!("pNFS {what}: {why}"))
}

/// A universal address (`h1.h2.h3.h4.p1.p2`, or an IPv6 one with the port
/// in its last two fields).
fn parse_uaddr(a: &netaddr4) -> Option<SocketAddr> {
    let s = std::str::from_utf8(&a.na_r_addr).ok()?;
    let mut parts = s.rsplitn(3, '.');
    let lo: u16 = parts.next()?.parse().ok()?;
    let hi: u16 = parts.next()?.parse().ok()?;
    let host: std::net::IpAddr = parts.next()?.parse().ok()?;
    Some(SocketAddr::new(host, hi << 8 | lo))
}

fn putfh(fh: &Bytes) -> nfs_argop4 {
    nfs_argop4::OP_PUTFH(PUTFH4args { object: fh.clone() })
}

impl Nfs41 {
    /// The layout I/O of `fh` may use now, getting one on first use.
    pub(crate) async fn layout(&self, fh: &Bytes) -> Option<FileLayout> {
        let p = self.pnfs.as_ref()?;
        let known = |p: &Pnfs| -> Option<Option<FileLayout>> {
            let t = p.table.lock();
            if let Some(l) = t.files.get(fh) {
                let usable = !l.recalled && !t.device_failed(&l.device, p.failed_device_hold);
                return Some(usable.then(|| l.clone()));
            }
            t.unavailable.contains(fh).then_some(None)
        };
        if let Some(l) = known(p) {
            return l;
        }
        let _one = p.fetching.lock().await;
        if let Some(l) = known(p) {
            return l;
        }
        let stateid = self.io_stateid(fh, true);
        if stateid.other == [0; 12] {
            // Not open here: layouts are had under an open.
            return None;
        }
        match self.fetch_layout(p, fh, stateid).await {
            Ok(l) => {
                p.table.lock().files.insert(fh.clone(), l.clone());
                Some(l)
            }
            Err(e) => {
                tracing::debug!("no pNFS layout; I/O goes through the metadata server: {e}");
                p.table.lock().unavailable.insert(fh.clone());
                None
            }
        }
    }

    async fn fetch_layout(&self, p: &Pnfs, fh: &Bytes, stateid: stateid4) -> Result<FileLayout> {
        let get = nfs_argop4::OP_LAYOUTGET(LAYOUTGET4args {
            loga_signal_layout_avail: false,
            loga_layout_type: layouttype4::LAYOUT4_FLEX_FILES,
            loga_iomode: layoutiomode4::LAYOUTIOMODE4_RW,
            loga_offset: 0,
            loga_length: u64::MAX,
            loga_minlength: 0,
            loga_stateid: stateid,
            loga_maxcount: 16384,
        });
        let res = self.compound(vec![putfh(fh), get]).await?;
        let Some(nfs_resop4::OP_LAYOUTGET(LAYOUTGET4res::NFS4_OK(ok))) = res.get(1) else {
            return Err(io_error("LAYOUTGET", "malformed reply"));
        };
        let layout = ok.logr_layout.first().ok_or_else(|| io_error("LAYOUTGET", "no layout"))?;
        let ff = ff_layout4::decode(&mut Decoder::new(layout.lo_content.loc_body.clone()))
            .map_err(|e| io_error("layout", e))?;
        let ds = ff
            .ffl_mirrors
            .first()
            .and_then(|m| m.ffm_data_servers.first())
            .ok_or_else(|| io_error("layout", "no data server"))?;
        let ds_fh = ds.ffds_fh_vers.first().ok_or_else(|| io_error("layout", "no handle"))?.clone();
        let id = |b: &Bytes| std::str::from_utf8(b).ok().and_then(|s| s.parse::<u32>().ok());
        let (uid, gid) = id(&ds.ffds_user).zip(id(&ds.ffds_group)).ok_or_else(|| io_error("layout", "ids"))?;
        if p.table.lock().device_failed(&ds.ffds_deviceid, p.failed_device_hold) {
            return Err(io_error("layout", "its data server failed a moment ago"));
        }
        let conn = self.data_server(p, ds.ffds_deviceid, uid, gid).await.inspect_err(|_| {
            p.table.lock().failed.insert(ds.ffds_deviceid, Instant::now());
        })?;
        Ok(FileLayout {
            stateid: ok.logr_stateid.clone(),
            device: ds.ffds_deviceid,
            ds: conn,
            fh: ds_fh,
            unstable_sent: 0,
            unstable_answered: 0,
            committed_through: 0,
            recalled: false,
            errors: Vec::new(),
        })
    }

    /// A connection to the device, as `uid`/`gid`, made on first use.
    async fn data_server(&self, p: &Pnfs, device: deviceid4, uid: u32, gid: u32) -> Result<Arc<Connection>> {
        if let Some(c) = p.table.lock().devices.get(&(device, uid, gid)) {
            return Ok(c.clone());
        }
        let info = nfs_argop4::OP_GETDEVICEINFO(GETDEVICEINFO4args {
            gdia_device_id: device,
            gdia_layout_type: layouttype4::LAYOUT4_FLEX_FILES,
            gdia_maxcount: 16384,
            gdia_notify_types: vec![],
        });
        let res = self.compound(vec![info]).await?;
        let Some(nfs_resop4::OP_GETDEVICEINFO(GETDEVICEINFO4res::NFS4_OK(ok))) = res.first() else {
            return Err(io_error("GETDEVICEINFO", "malformed reply"));
        };
        let addr = ff_device_addr4::decode(&mut Decoder::new(ok.gdir_device_addr.da_addr_body.clone()))
            .map_err(|e| io_error("device", e))?;
        if !addr.ffda_versions.iter().any(|v| v.ffdv_version == 3) {
            return Err(io_error("device", "no NFSv3 data server"));
        }
        let at = addr.ffda_netaddrs.iter().find_map(parse_uaddr).ok_or_else(|| io_error("device", "no address"))?;
        let cred = client_core::rpc::auth_sys(&p.machine, uid, gid, &[gid]);
        // One redial when the connection breaks, not `reconnect_timeout` of
        // them: calls waiting on a data server that went away fail soon and
        // go to the metadata server, which can always serve them.
        let params = ConnParams { addr: at, cred, reconnect_timeout: Duration::ZERO, ..p.params.clone() };
        let conn = Connection::connect(params)
            .await
            .map_err(|e| Error::Connect { what: format!("pNFS data server {at}"), why: e.to_string() })?;
        let conn = Arc::new(conn);
        p.table.lock().devices.insert((device, uid, gid), conn.clone());
        Ok(conn)
    }

    /// An NFSv3 call to a layout's data server.
    async fn ds_call<A: Encode, R: crate::nfs3::Nfs3Result>(l: &FileLayout, proc_: u32, args: &A) -> Result<R::Ok> {
        let name = client_core::stats::procedure_name(nfs3::NFS_PROGRAM, nfs3::NFS_V3, proc_);
        let mut e = Encoder::new();
        args.encode(&mut e);
        let bytes =
            l.ds.call(nfs3::NFS_PROGRAM, nfs3::NFS_V3, proc_, e.into_segments())
                .await
                .map_err(|err| Error::Rpc { proc: name, err })?;
        let res = R::decode(&mut Decoder::new(bytes)).map_err(|e| Error::Decode { proc: name, why: e.to_string() })?;
        res.into_result().map_err(|status| Error::Nfs { proc: name, status })
    }

    /// A layout that failed: no more I/O through it while the file is open;
    /// a data server that could not be reached is not tried for a while.
    /// The metadata server hears of it: at once over NFSv4.2
    /// (LAYOUTERROR), with the layout's return over NFSv4.1.
    async fn layout_failed(&self, fh: &Bytes, e: &Error, op: nfs_opnum4) {
        tracing::warn!("pNFS data server failed, I/O goes through the metadata server: {e}");
        let Some(p) = &self.pnfs else { return };
        let report = {
            let mut t = p.table.lock();
            t.unavailable.insert(fh.clone());
            let Some(l) = t.files.get_mut(fh) else { return };
            l.recalled = true;
            let error = device_error4 { de_deviceid: l.device, de_status: reported_status(e), de_opnum: op };
            let first = l.errors.is_empty();
            l.errors.push(error.clone());
            let (device, stateid) = (l.device, l.stateid.clone());
            if error.de_status == nfsstat4::NFS4ERR_NXIO {
                t.failed.insert(device, Instant::now());
                t.devices.retain(|(d, _, _), _| *d != device);
            }
            // One report per layout; the return carries them all.
            (first && self.minor >= 2).then_some((stateid, error))
        };
        if let Some((stateid, error)) = report {
            let report = nfs_argop4::OP_LAYOUTERROR(LAYOUTERROR4args {
                lea_offset: 0,
                lea_length: u64::MAX,
                lea_stateid: stateid,
                lea_errors: vec![error],
            });
            if let Err(e) = self.compound(vec![putfh(fh), report]).await {
                tracing::debug!("LAYOUTERROR: {e}");
            }
        }
    }

    /// A data server's answer: counted when it served the call; when it
    /// failed, the file's I/O goes through the metadata server from now on
    /// (`None` tells the caller to send this call there too).
    async fn ds_outcome<T>(
        &self,
        fh: &Bytes,
        op: nfs_opnum4,
        r: Result<T>,
        count: impl FnOnce(&mut super::Counters),
    ) -> Option<T> {
        match r {
            Ok(ok) => {
                count(&mut self.counters.lock());
                Some(ok)
            }
            Err(e) => {
                self.layout_failed(fh, &e, op).await;
                None
            }
        }
    }

    /// READ through the layout; `None`: the caller reads through the
    /// metadata server.
    pub(crate) async fn ds_read(&self, fh: &Bytes, offset: u64, count: u32) -> Option<nfs3::READ3resok> {
        let l = self.layout(fh).await?;
        let args = nfs3::READ3args { file: nfs3::nfs_fh3 { data: l.fh.clone() }, offset, count };
        let r = Self::ds_call::<_, nfs3::READ3res>(&l, nfs3::NFS3_READ, &args).await;
        self.ds_outcome(fh, nfs_opnum4::OP_READ, r, |c| c.ds_reads += 1).await
    }

    /// WRITE through the layout; `None`: the caller writes through the
    /// metadata server.
    pub(crate) async fn ds_write(
        &self,
        fh: &Bytes,
        offset: u64,
        data: &Bytes,
        stable: stable_how,
    ) -> Option<nfs3::WRITE3resok> {
        let l = self.layout(fh).await?;
        if stable != stable_how::FILE_SYNC {
            if let Some(p) = &self.pnfs {
                if let Some(x) = p.table.lock().files.get_mut(fh) {
                    x.unstable_sent += 1;
                }
            }
        }
        let args = nfs3::WRITE3args {
            file: nfs3::nfs_fh3 { data: l.fh.clone() },
            offset,
            count: data.len() as u32,
            stable,
            data: data.clone(),
        };
        let r = Self::ds_call::<_, nfs3::WRITE3res>(&l, nfs3::NFS3_WRITE, &args).await;
        if stable != stable_how::FILE_SYNC {
            if let Some(p) = &self.pnfs {
                if let Some(x) = p.table.lock().files.get_mut(fh) {
                    if r.is_ok() {
                        x.unstable_answered += 1;
                    } else {
                        // Not taken there: it goes to the metadata server,
                        // and leaves nothing for a COMMIT at this one.
                        x.unstable_sent -= 1;
                    }
                }
            }
        }
        self.ds_outcome(fh, nfs_opnum4::OP_WRITE, r, |c| c.ds_writes += 1).await
    }

    /// COMMIT at the data server that holds unstable writes of `fh`.
    /// `None`: there is none, or it failed (the caller commits at the
    /// metadata server).
    pub(crate) async fn ds_commit(&self, fh: &Bytes) -> Option<Result<nfs3::COMMIT3resok>> {
        let l = {
            let t = self.pnfs.as_ref()?.table.lock();
            t.files.get(fh).filter(|l| l.dirty())?.clone()
        };
        let args = nfs3::COMMIT3args { file: nfs3::nfs_fh3 { data: l.fh.clone() }, offset: 0, count: 0 };
        let r = Self::ds_call::<_, nfs3::COMMIT3res>(&l, nfs3::NFS3_COMMIT, &args).await;
        if let Err(e) = &r {
            // The data server's unstable writes may be gone with it. The
            // COMMIT goes to the metadata server instead, whose verifier
            // is not the data server's, so the write cache sends those
            // writes again, through the metadata server now.
            if let Some(x) = self.pnfs.as_ref()?.table.lock().files.get_mut(fh) {
                (x.unstable_sent, x.unstable_answered, x.committed_through) = (0, 0, 0);
            }
            self.layout_failed(fh, e, nfs_opnum4::OP_COMMIT).await;
            return None;
        }
        if r.is_ok() {
            if let Some(p) = &self.pnfs {
                let mut t = p.table.lock();
                let gone = t.files.get_mut(fh).map(|x| {
                    x.committed_through = x.committed_through.max(l.unstable_answered);
                    x.recalled && !x.dirty()
                });
                if gone == Some(true) {
                    t.files.remove(fh);
                }
            }
        }
        Some(r)
    }

    /// The server recalled `fh`'s layout (CB_LAYOUTRECALL): it serves no
    /// new I/O; it goes once nothing is left to commit through it.
    pub(crate) fn layout_recalled(&self, fh: &Bytes) -> bool {
        let Some(p) = &self.pnfs else { return false };
        let mut t = p.table.lock();
        let Some(l) = t.files.get_mut(fh) else { return false };
        if l.dirty() {
            l.recalled = true;
        } else {
            t.files.remove(fh);
        }
        true
    }

    /// The counters of the connections to data servers.
    pub(crate) fn data_server_stats(&self) -> Vec<client_core::stats::Stats> {
        let Some(p) = &self.pnfs else { return Vec::new() };
        p.table.lock().devices.values().map(|c| c.stats()).collect()
    }

    /// Every layout recalled at once (an FSID or ALL recall).
    pub(crate) fn all_layouts_recalled(&self) -> bool {
        let Some(p) = &self.pnfs else { return false };
        let mut t = p.table.lock();
        let held = !t.files.is_empty();
        t.files.retain(|_, l| l.dirty());
        for l in t.files.values_mut() {
            l.recalled = true;
        }
        held
    }

    /// The file is closed: its layout goes back to the server.
    pub(crate) async fn return_layout(&self, fh: &Bytes) {
        let Some(p) = &self.pnfs else { return };
        let l = {
            let mut t = p.table.lock();
            t.unavailable.remove(fh);
            match t.files.get(fh) {
                // Unstable data is still to be committed through it.
                Some(l) if l.dirty() => return,
                Some(_) => t.files.remove(fh),
                None => return,
            }
        };
        let Some(l) = l else { return };
        let body = if l.errors.is_empty() {
            Bytes::new()
        } else {
            let report = ff_ioerr4 {
                ffie_offset: 0,
                ffie_length: u64::MAX,
                ffie_stateid: l.stateid.clone(),
                ffie_errors: l.errors.clone(),
            };
            let mut e = Encoder::new();
            ff_layoutreturn4 { fflr_ioerr_report: vec![report], fflr_iostats_report: vec![] }.encode(&mut e);
            e.into_bytes()
        };
        let ret = nfs_argop4::OP_LAYOUTRETURN(LAYOUTRETURN4args {
            lora_reclaim: false,
            lora_layout_type: layouttype4::LAYOUT4_FLEX_FILES,
            lora_iomode: layoutiomode4::LAYOUTIOMODE4_ANY,
            lora_layoutreturn: layoutreturn4::LAYOUTRETURN4_FILE(layoutreturn_file4 {
                lrf_offset: 0,
                lrf_length: u64::MAX,
                lrf_stateid: l.stateid,
                lrf_body: body,
            }),
        });
        if let Err(e) = self.compound(vec![putfh(fh), ret]).await {
            tracing::debug!("LAYOUTRETURN: {e}");
        }
    }
}

/// How a failed data-server call is reported (RFC 7862 15.6.3): NXIO
/// when the data server could not be reached at all, else the NFSv3
/// status it answered, which has the same number in NFSv4 for the
/// errors I/O can meet; anything else as an I/O error.
fn reported_status(e: &Error) -> nfsstat4 {
    match e {
        Error::Nfs { status, .. } => match *status as u32 {
            13 => nfsstat4::NFS4ERR_ACCESS,
            27 => nfsstat4::NFS4ERR_FBIG,
            28 => nfsstat4::NFS4ERR_NOSPC,
            30 => nfsstat4::NFS4ERR_ROFS,
            69 => nfsstat4::NFS4ERR_DQUOT,
            70 => nfsstat4::NFS4ERR_STALE,
            10001 => nfsstat4::NFS4ERR_BADHANDLE,
            10008 => nfsstat4::NFS4ERR_DELAY,
            _ => nfsstat4::NFS4ERR_IO,
        },
        Error::Decode { .. } => nfsstat4::NFS4ERR_IO,
        _ => nfsstat4::NFS4ERR_NXIO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn universal_addresses() {
        let a = |s: &str| netaddr4 { na_r_netid: Bytes::from_static(b"tcp"), na_r_addr: Bytes::from(s.to_string()) };
        assert_eq!(parse_uaddr(&a("10.78.0.2.8.1")), Some("10.78.0.2:2049".parse().unwrap()));
        assert_eq!(parse_uaddr(&a("::1.8.1")), Some("[::1]:2049".parse().unwrap()));
        assert_eq!(parse_uaddr(&a("10.78.0.2")), None);
        assert_eq!(parse_uaddr(&a("nonsense")), None);
    }
}
