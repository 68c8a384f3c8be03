//! What the calls under the file API ([`crate::nfs::Nfs`]) answer, the
//! same for every protocol version: attributes are the client's own
//! [`Fattr`] (NFSv4's whole time range). NFSv3's replies convert into
//! these without loss; NFSv4.1's compounds fill them, leaving out what
//! they have no counterpart for (NFSv3's pre-operation attributes, which
//! the layers above do not use).

use bytes::Bytes;
use client_core::fattr::{Fattr, Sattr};
use proto::nfs3::{
    cookieverf3, createverf3, fattr3, nfs_fh3, specdata3, stable_how, wcc_data, writeverf3, LINK3resok, LOOKUP3resok,
    READ3resok, READDIRPLUS3resok, RENAME3resok, WRITE3resok,
};

fn attrs(a: Option<fattr3>) -> Option<Fattr> {
    a.map(Fattr::from)
}

fn after(w: wcc_data) -> Option<Fattr> {
    attrs(w.after)
}

/// A LOOKUP's answer: the object, and its attributes and the directory's
/// when the reply had them.
#[derive(Debug, Clone)]
pub struct Looked {
    pub object: nfs_fh3,
    pub obj_attributes: Option<Fattr>,
    pub dir_attributes: Option<Fattr>,
}

impl From<LOOKUP3resok> for Looked {
    fn from(ok: LOOKUP3resok) -> Looked {
        Looked { object: ok.object, obj_attributes: attrs(ok.obj_attributes), dir_attributes: attrs(ok.dir_attributes) }
    }
}

/// A new object (CREATE, MKDIR, SYMLINK, MKNOD): its handle and
/// attributes, and the directory's attributes after it, each when the
/// reply had them.
#[derive(Debug, Clone, Default)]
pub struct Made {
    pub obj: Option<nfs_fh3>,
    pub obj_attributes: Option<Fattr>,
    pub dir_after: Option<Fattr>,
}

impl Made {
    /// From the fields every NFSv3 create reply has.
    pub(crate) fn v3(obj: Option<nfs_fh3>, a: Option<fattr3>, dir_wcc: wcc_data) -> Made {
        Made { obj, obj_attributes: attrs(a), dir_after: after(dir_wcc) }
    }
}

/// How CREATE treats an existing name.
#[derive(Debug, Clone)]
pub enum CreateHow {
    /// An existing file is opened as it is (its attributes unchanged).
    Unchecked(Sattr),
    /// An existing name fails with EXIST.
    Guarded(Sattr),
    /// Created once under this verifier, however often the call is sent.
    Exclusive(createverf3),
}

/// The special file MKNOD makes.
#[derive(Debug, Clone)]
pub enum NodeKind {
    Char(specdata3),
    Block(specdata3),
    Socket,
    Fifo,
}

/// The attributes of both directories after a RENAME, when known.
#[derive(Debug, Clone, Default)]
pub struct Renamed {
    pub from_dir: Option<Fattr>,
    pub to_dir: Option<Fattr>,
}

impl From<RENAME3resok> for Renamed {
    fn from(ok: RENAME3resok) -> Renamed {
        Renamed { from_dir: after(ok.fromdir_wcc), to_dir: after(ok.todir_wcc) }
    }
}

/// The file's attributes after a LINK and its new directory's, when known.
#[derive(Debug, Clone, Default)]
pub struct Linked {
    pub file_attributes: Option<Fattr>,
    pub dir_after: Option<Fattr>,
}

impl From<LINK3resok> for Linked {
    fn from(ok: LINK3resok) -> Linked {
        Linked { file_attributes: attrs(ok.file_attributes), dir_after: after(ok.linkdir_wcc) }
    }
}

/// The bytes a READ returned, and whether they end the file.
#[derive(Debug, Clone)]
pub struct ReadOk {
    pub data: Bytes,
    pub eof: bool,
}

impl From<READ3resok> for ReadOk {
    fn from(ok: READ3resok) -> ReadOk {
        ReadOk { data: ok.data, eof: ok.eof }
    }
}

/// How much of a WRITE the server took, how stably, and under which
/// verifier.
#[derive(Debug, Clone, Copy)]
pub struct Written {
    pub count: u32,
    pub committed: stable_how,
    pub verf: writeverf3,
}

impl From<WRITE3resok> for Written {
    fn from(ok: WRITE3resok) -> Written {
        Written { count: ok.count, committed: ok.committed, verf: ok.verf }
    }
}

/// One entry of a listing with attributes (READDIRPLUS, or NFSv4 READDIR
/// asking for the handle and attributes of each entry).
#[derive(Debug, Clone)]
pub struct ListEntry {
    pub fileid: u64,
    pub name: Bytes,
    pub cookie: u64,
    pub name_attributes: Option<Fattr>,
    pub name_handle: Option<nfs_fh3>,
}

/// One page of a listing, with the directory's attributes when known.
#[derive(Debug, Clone)]
pub struct Listed {
    pub dir_attributes: Option<Fattr>,
    pub cookieverf: cookieverf3,
    pub entries: Vec<ListEntry>,
    pub eof: bool,
}

impl From<READDIRPLUS3resok> for Listed {
    fn from(ok: READDIRPLUS3resok) -> Listed {
        let entries = ok
            .reply
            .entries
            .into_iter()
            .map(|e| ListEntry {
                fileid: e.fileid,
                name: e.name,
                cookie: e.cookie,
                name_attributes: attrs(e.name_attributes),
                name_handle: e.name_handle,
            })
            .collect();
        Listed { dir_attributes: attrs(ok.dir_attributes), cookieverf: ok.cookieverf, entries, eof: ok.reply.eof }
    }
}

/// A file system's space and files (statfs(2)), in bytes and files.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FsStat {
    pub tbytes: u64,
    pub fbytes: u64,
    pub abytes: u64,
    pub tfiles: u64,
    pub ffiles: u64,
    pub afiles: u64,
}

impl From<proto::nfs3::FSSTAT3resok> for FsStat {
    fn from(ok: proto::nfs3::FSSTAT3resok) -> FsStat {
        FsStat {
            tbytes: ok.tbytes,
            fbytes: ok.fbytes,
            abytes: ok.abytes,
            tfiles: ok.tfiles,
            ffiles: ok.ffiles,
            afiles: ok.afiles,
        }
    }
}
