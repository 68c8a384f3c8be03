//! The client's own attribute records, the same for every protocol
//! version: what a stat returns ([`Fattr`]) and what a SETATTR or a create
//! sets ([`Sattr`]).
//!
//! They have RFC 1813's `fattr3`/`sattr3` fields, but times as NFSv4's
//! `nfstime4` has them ([`Time`]: signed 64-bit seconds), so that a time
//! before 1970 or past 2106 goes through NFSv4.1 unchanged. NFSv3 replies
//! convert without loss ([`From<fattr3>`]); a settable time NFSv3 cannot
//! carry is refused when the request is made ([`TryFrom<&Sattr>`] for
//! `sattr3`), never clamped into another time.

use proto::nfs3::{fattr3, ftype3, nfstime3, sattr3, set_atime, set_mtime, specdata3, time_how};

/// A time as seconds since 1970 (negative before it) and nanoseconds
/// added to those (`nfstime4`; a time 1.5 s before 1970 is -2 s + 0.5e9 ns).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time {
    pub seconds: i64,
    pub nseconds: u32,
}

impl Time {
    pub const fn new(seconds: i64, nseconds: u32) -> Time {
        Time { seconds, nseconds }
    }
}

impl From<nfstime3> for Time {
    fn from(t: nfstime3) -> Time {
        Time { seconds: i64::from(t.seconds), nseconds: t.nseconds }
    }
}

impl From<&nfstime3> for Time {
    fn from(t: &nfstime3) -> Time {
        Time { seconds: i64::from(t.seconds), nseconds: t.nseconds }
    }
}

/// A time NFSv3's unsigned 32-bit seconds cannot hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TimeRangeError {
    #[error("NFSv3 cannot carry a time before 1970 ({0} s)")]
    BeforeEpoch(i64),
    #[error("NFSv3 cannot carry a time past 2106 ({0} s)")]
    TooLate(i64),
}

impl TryFrom<Time> for nfstime3 {
    type Error = TimeRangeError;
    fn try_from(t: Time) -> Result<nfstime3, TimeRangeError> {
        match u32::try_from(t.seconds) {
            Ok(seconds) => Ok(nfstime3 { seconds, nseconds: t.nseconds }),
            Err(_) if t.seconds < 0 => Err(TimeRangeError::BeforeEpoch(t.seconds)),
            Err(_) => Err(TimeRangeError::TooLate(t.seconds)),
        }
    }
}

/// A file's attributes as the file API keeps them. The type and device
/// numbers are NFSv3's, which name every kind of object the client shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fattr {
    pub r#type: ftype3,
    pub mode: u32,
    pub nlink: u32,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    pub used: u64,
    pub rdev: specdata3,
    pub fsid: u64,
    pub fileid: u64,
    pub atime: Time,
    pub mtime: Time,
    pub ctime: Time,
}

impl From<fattr3> for Fattr {
    fn from(a: fattr3) -> Fattr {
        Fattr {
            r#type: a.r#type,
            mode: a.mode,
            nlink: a.nlink,
            uid: a.uid,
            gid: a.gid,
            size: a.size,
            used: a.used,
            rdev: a.rdev,
            fsid: a.fsid,
            fileid: a.fileid,
            atime: a.atime.into(),
            mtime: a.mtime.into(),
            ctime: a.ctime.into(),
        }
    }
}

/// How a SETATTR sets a time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SetTime {
    #[default]
    DontChange,
    /// The server's clock at the SETATTR (`touch` without a time).
    ServerTime,
    ClientTime(Time),
}

/// What a SETATTR or a create sets; `None` leaves an attribute as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sattr {
    pub mode: Option<u32>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub size: Option<u64>,
    pub atime: SetTime,
    pub mtime: SetTime,
}

impl TryFrom<&Sattr> for sattr3 {
    type Error = TimeRangeError;
    fn try_from(s: &Sattr) -> Result<sattr3, TimeRangeError> {
        let atime = match s.atime {
            SetTime::DontChange => set_atime::default(time_how::DONT_CHANGE),
            SetTime::ServerTime => set_atime::default(time_how::SET_TO_SERVER_TIME),
            SetTime::ClientTime(t) => set_atime::SET_TO_CLIENT_TIME(t.try_into()?),
        };
        let mtime = match s.mtime {
            SetTime::DontChange => set_mtime::default(time_how::DONT_CHANGE),
            SetTime::ServerTime => set_mtime::default(time_how::SET_TO_SERVER_TIME),
            SetTime::ClientTime(t) => set_mtime::SET_TO_CLIENT_TIME(t.try_into()?),
        };
        Ok(sattr3 { mode: s.mode, uid: s.uid, gid: s.gid, size: s.size, atime, mtime })
    }
}

impl TryFrom<Sattr> for sattr3 {
    type Error = TimeRangeError;
    fn try_from(s: Sattr) -> Result<sattr3, TimeRangeError> {
        sattr3::try_from(&s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nfsv3_attributes_convert_whole() {
        let a = fattr3 {
            r#type: ftype3::NF3DIR,
            mode: 0o755,
            size: 9,
            mtime: nfstime3 { seconds: u32::MAX, nseconds: 7 },
            ..Default::default()
        };
        let f = Fattr::from(a);
        assert_eq!((f.r#type, f.mode, f.size), (ftype3::NF3DIR, 0o755, 9));
        assert_eq!(f.mtime, Time::new(u32::MAX as i64, 7));
    }

    /// NFSv3 refuses what it cannot carry; it never sends another time.
    #[test]
    fn nfsv3_refuses_times_outside_its_seconds() {
        let at = |t: Time| sattr3::try_from(&Sattr { atime: SetTime::ClientTime(t), ..Default::default() });
        assert_eq!(at(Time::new(1 << 32, 0)), Err(TimeRangeError::TooLate(1 << 32)));
        assert_eq!(at(Time::new(-1, 0)), Err(TimeRangeError::BeforeEpoch(-1)));
        assert_eq!(
            at(Time::new(u32::MAX as i64, 5)).map(|s| s.atime),
            Ok(set_atime::SET_TO_CLIENT_TIME(nfstime3 { seconds: u32::MAX, nseconds: 5 }))
        );
        let mt = |t: Time| sattr3::try_from(Sattr { mtime: SetTime::ClientTime(t), ..Default::default() });
        assert_eq!(mt(Time::new(i64::MIN, 0)), Err(TimeRangeError::BeforeEpoch(i64::MIN)));
        assert_eq!(mt(Time::new(i64::MAX, 0)), Err(TimeRangeError::TooLate(i64::MAX)));
        let s = sattr3::try_from(&Sattr { mode: Some(0o600), mtime: SetTime::ServerTime, ..Default::default() });
        assert_eq!(
            s,
            Ok(sattr3 {
                mode: Some(0o600),
                mtime: set_mtime::default(time_how::SET_TO_SERVER_TIME),
                ..Default::default()
            })
        );
    }
}
