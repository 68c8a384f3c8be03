//! MNT: the file handle of an export, or of a directory inside one
//! (RFC 1813 section 5.2.1).
//!
//! The path must name an export or lie below one; the part below is walked
//! one component at a time with the backend's `lookup`, so it can never
//! leave the export: `.` and `..` components are refused, and symbolic
//! links are not followed (a link component is "not a directory").
//! The most specific export containing the path is used.

use bytes::Bytes;
use proto::mount3::{mountres3, mountres3_ok, mountstat3};
use vfs::{FileType, VfsError};

use crate::fh::HandleData;
use crate::rpc::Call;
use crate::{Core, Export};

pub(super) fn mnt(core: &Core, call: &Call, path: Bytes) -> (mountres3, bool) {
    match resolve(core, call, &path) {
        Ok((fh, sec)) => {
            core.mounts.lock().add(super::host_name(call.peer), path, core.settings.max_mount_entries);
            // The export's flavors in its order of preference (RFC 2623
            // section 2.7: the client picks the first it supports). MNT
            // itself is answered whatever the caller's flavor, as Linux
            // clients mount with AUTH_SYS before they know the list.
            let auth_flavors = sec.iter().map(|f| f.pseudo_flavor() as i32).collect();
            let ok = mountres3_ok { fhandle: fh, auth_flavors };
            (mountres3::MNT3_OK(ok), true)
        }
        Err(stat) => (mountres3::default(stat), false),
    }
}

/// Components of `path` that name an export, and the rest.
fn split_export<'a>(core: &'a Core, comps: &[&[u8]]) -> Option<(&'a Export, usize)> {
    let mut best: Option<(&Export, usize)> = None;
    for x in &core.exports {
        let xc: Vec<&[u8]> = x.path.as_bytes().split(|&c| c == b'/').filter(|c| !c.is_empty()).collect();
        let covers = xc.len() <= comps.len() && xc.iter().zip(comps).all(|(a, b)| a == b);
        if covers && !matches!(best, Some((_, n)) if n >= xc.len()) {
            best = Some((x, xc.len()));
        }
    }
    best
}

/// The handle of `path` and the flavors its export's rule admits.
fn resolve(core: &Core, call: &Call, path: &[u8]) -> Result<(Bytes, Vec<rpcsec::Flavor>), mountstat3> {
    let peer = call.peer;
    if path.first() != Some(&b'/') || path.contains(&0) {
        core.warn(crate::WarnKind::Access, || {
            tracing::warn!(peer = %peer.addr, path = %String::from_utf8_lossy(path), "MNT of a relative or invalid path")
        });
        return Err(mountstat3::MNT3ERR_INVAL);
    }
    let comps: Vec<&[u8]> = path.split(|&c| c == b'/').filter(|c| !c.is_empty()).collect();
    if comps.iter().any(|c| *c == b"." || *c == b"..") {
        core.warn(crate::WarnKind::Access, || {
            tracing::warn!(peer = %peer.addr, path = %String::from_utf8_lossy(path), "MNT path with . or .. refused")
        });
        return Err(mountstat3::MNT3ERR_INVAL);
    }
    let Some((export, skip)) = split_export(core, &comps) else {
        tracing::info!(peer = %peer.addr, path = %String::from_utf8_lossy(path), "MNT of a path that is not exported");
        return Err(mountstat3::MNT3ERR_NOENT);
    };
    let Ok(rule) = core.rule_for(export, peer, "MNT") else {
        return Err(mountstat3::MNT3ERR_ACCES);
    };
    let fs = &export.fs;
    let mut id = fs.root();
    let mut attrs = fs.getattr(id).map_err(|e| mnt_err(export, e))?;
    for comp in &comps[skip..] {
        if comp.len() > core.settings.name_max as usize {
            return Err(mountstat3::MNT3ERR_NAMETOOLONG);
        }
        if attrs.ftype != FileType::Directory {
            return Err(mountstat3::MNT3ERR_NOTDIR);
        }
        (id, attrs) = fs.lookup(id, comp).map_err(|e| mnt_err(export, e))?;
    }
    if attrs.ftype != FileType::Directory {
        return Err(mountstat3::MNT3ERR_NOTDIR);
    }
    let h = HandleData { export_id: export.id, fileid: id, generation: attrs.generation };
    Ok((Bytes::copy_from_slice(&core.fh.encode(&h)), rule.options.sec.clone()))
}

fn mnt_err(export: &Export, e: VfsError) -> mountstat3 {
    match e {
        VfsError::NotFound | VfsError::Stale => mountstat3::MNT3ERR_NOENT,
        VfsError::NotDir => mountstat3::MNT3ERR_NOTDIR,
        VfsError::Access | VfsError::Perm => mountstat3::MNT3ERR_ACCES,
        VfsError::NameTooLong => mountstat3::MNT3ERR_NAMETOOLONG,
        VfsError::Invalid => mountstat3::MNT3ERR_INVAL,
        VfsError::Io(errno) | VfsError::WriteBack(errno) => {
            tracing::error!(export = %export.path, "I/O error during MNT: {errno}");
            mountstat3::MNT3ERR_IO
        }
        other => {
            tracing::error!(export = %export.path, "backend error during MNT: {other}");
            mountstat3::MNT3ERR_SERVERFAULT
        }
    }
}
