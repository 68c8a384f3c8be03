//! Requests that gain nothing from running side by side: UNSTABLE WRITEs
//! to one file. A local file system takes the file's inode lock for each
//! buffered write (libcephfs its client lock), so sixteen workers writing
//! one file wait for each other, and each was woken for the purpose.
//! [`Core::serial_key`] names the file such a request writes, so the
//! transport can queue it behind the one already writing there and let
//! that worker run it next. Stable writes are left out: their flushes are
//! shared by writers that arrive while one runs (group commit), which
//! needs them side by side.

use proto::nfs4::nfs_opnum4;
use std::hash::{Hash, Hasher};

use super::Peek;
use crate::Core;

const V3_WRITE: u32 = 7;
/// `stable_how` UNSTABLE, in NFSv3 and NFSv4 alike.
const UNSTABLE: u32 = 0;
/// COMPOUND's procedure number.
const V4_COMPOUND: u32 = 1;

impl Core {
    /// A key for the file an UNSTABLE WRITE writes (an NFSv3 WRITE, or an
    /// NFSv4 compound of SEQUENCE, PUTFH and WRITE only); `None` for
    /// anything else. A peek only: the handle is checked by the dispatch.
    pub fn serial_key(&self, record: &crate::Record) -> Option<u64> {
        let (vers, proc_, mut p) = super::nfs_call(record)?;
        let fh = match (vers, proc_) {
            (crate::ops::v3::VERSION, V3_WRITE) => {
                let fh = p.opaque()?;
                p.skip(8 + 4)?; // offset, count
                (p.u32()? == UNSTABLE).then_some(fh)?
            }
            (crate::ops::v4::VERSION, V4_COMPOUND) => unstable_write_compound(&mut p)?,
            _ => return None,
        };
        let mut h = std::collections::hash_map::DefaultHasher::new();
        fh.hash(&mut h);
        Some(h.finish())
    }
}

/// The handle a compound of SEQUENCE, PUTFH and one UNSTABLE WRITE writes.
fn unstable_write_compound<'a>(p: &mut Peek<'a>) -> Option<&'a [u8]> {
    p.opaque()?; // tag
    let _minor = p.u32()?;
    let n = p.u32()?;
    if n > 3 {
        return None;
    }
    let mut fh = None;
    for _ in 0..n {
        match p.u32()? {
            x if x == nfs_opnum4::OP_SEQUENCE as u32 => p.skip(16 + 4 * 4)?,
            x if x == nfs_opnum4::OP_PUTFH as u32 => fh = Some(p.opaque()?),
            x if x == nfs_opnum4::OP_WRITE as u32 => {
                p.skip(16 + 8)?; // stateid, offset
                return if p.u32()? == UNSTABLE { fh } else { None };
            }
            _ => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::tests::{call, core};

    fn v3_write(fh: &[u8], stable: u32) -> Vec<u8> {
        let mut a = (fh.len() as u32).to_be_bytes().to_vec();
        a.extend_from_slice(fh);
        a.extend_from_slice(&[0; 8]); // offset
        a.extend_from_slice(&4096u32.to_be_bytes());
        a.extend_from_slice(&stable.to_be_bytes());
        call(100003, 3, 7, &a)
    }

    fn v4_write(fh: &[u8], stable: u32, extra_op: Option<u32>) -> Vec<u8> {
        let mut a = vec![0, 0, 0, 0, 0, 0, 0, 1]; // empty tag, minor version 1
        a.extend_from_slice(&(3 + extra_op.is_some() as u32).to_be_bytes());
        a.extend_from_slice(&53u32.to_be_bytes()); // SEQUENCE
        a.extend_from_slice(&[0; 32]);
        a.extend_from_slice(&22u32.to_be_bytes()); // PUTFH
        a.extend_from_slice(&(fh.len() as u32).to_be_bytes());
        a.extend_from_slice(fh);
        if let Some(op) = extra_op {
            a.extend_from_slice(&op.to_be_bytes());
        }
        a.extend_from_slice(&38u32.to_be_bytes()); // WRITE
        a.extend_from_slice(&[0; 24]); // stateid, offset
        a.extend_from_slice(&stable.to_be_bytes());
        call(100003, 4, 1, &a)
    }

    #[test]
    fn unstable_writes_to_one_file_share_a_key_and_nothing_else_has_one() {
        let c = core();
        let (f, g) = ([1u8; 32], [2u8; 32]);
        let k = c.serial_key_of(&v3_write(&f, 0)).expect("an UNSTABLE WRITE has a key");
        assert_eq!(c.serial_key_of(&v3_write(&f, 0)), Some(k));
        assert_ne!(c.serial_key_of(&v3_write(&g, 0)), Some(k), "another file");
        assert_eq!(c.serial_key_of(&v3_write(&f, 2)), None, "FILE_SYNC: group commit wants them side by side");
        assert_eq!(c.serial_key_of(&v4_write(&f, 0, None)), Some(k), "the same handle over NFSv4");
        assert_eq!(c.serial_key_of(&v4_write(&f, 1, None)), None, "DATA_SYNC");
        assert_eq!(c.serial_key_of(&v4_write(&f, 0, Some(9))), None, "a compound doing more than writing");
        assert_eq!(c.serial_key_of(&call(100003, 3, 1, &[0, 0, 0, 4, 1, 1, 1, 1])), None, "GETATTR");
        let w = v3_write(&f, 0);
        for cut in 0..w.len() {
            assert_eq!(c.serial_key_of(&w[..cut]), None, "truncated at {cut}");
        }
    }
}
