//! The changes a CB_NOTIFY carries (RFC 8881 section 20.4), typed.
//!
//! On the wire each `notify4` is a bitmap of `notify_type4` bits and an
//! opaque list holding one XDR value per bit set, in bit order; so one
//! `notify4` cannot say in what order two different kinds of change came.
//! The server therefore sends one bit per `notify4` ([`encode`]), in the
//! order the changes happened, and the client reads any number of bits
//! per `notify4` ([`decode`]), as the RFC allows.

use xdr::{Decode, Decoder, Encode, Encoder};

use crate::bitmap4;
use crate::nfs4::{notify4, notify_add4, notify_attr4, notify_remove4, notify_rename4, notify_type4, notify_verifier4};

/// One change of a delegated directory.
#[derive(Debug, Clone, PartialEq)]
pub enum DirChange {
    /// NOTIFY4_CHANGE_CHILD_ATTRS: an entry's attributes.
    ChildAttrs(notify_attr4),
    /// NOTIFY4_CHANGE_DIR_ATTRS: the directory's own attributes (the
    /// entry's name is empty).
    DirAttrs(notify_attr4),
    /// NOTIFY4_REMOVE_ENTRY.
    Remove(notify_remove4),
    /// NOTIFY4_ADD_ENTRY: a new name (created, linked, or renamed in from
    /// another directory), with its attributes.
    Add(notify_add4),
    /// NOTIFY4_RENAME_ENTRY: a name moved within the directory.
    Rename(notify_rename4),
    /// NOTIFY4_CHANGE_COOKIE_VERIFIER: the READDIR cookies changed.
    CookieVerifier(notify_verifier4),
}

impl DirChange {
    /// The notification type, as the bit it sets in a `notify_mask`.
    pub fn kind(&self) -> notify_type4 {
        match self {
            DirChange::ChildAttrs(_) => notify_type4::NOTIFY4_CHANGE_CHILD_ATTRS,
            DirChange::DirAttrs(_) => notify_type4::NOTIFY4_CHANGE_DIR_ATTRS,
            DirChange::Remove(_) => notify_type4::NOTIFY4_REMOVE_ENTRY,
            DirChange::Add(_) => notify_type4::NOTIFY4_ADD_ENTRY,
            DirChange::Rename(_) => notify_type4::NOTIFY4_RENAME_ENTRY,
            DirChange::CookieVerifier(_) => notify_type4::NOTIFY4_CHANGE_COOKIE_VERIFIER,
        }
    }

    fn encode_value(&self, e: &mut Encoder) {
        match self {
            DirChange::ChildAttrs(a) | DirChange::DirAttrs(a) => a.encode(e),
            DirChange::Remove(r) => r.encode(e),
            DirChange::Add(a) => a.encode(e),
            DirChange::Rename(r) => r.encode(e),
            DirChange::CookieVerifier(v) => v.encode(e),
        }
    }

    fn decode_value(kind: u32, d: &mut Decoder) -> Result<DirChange, NotifyError> {
        const CHILD: u32 = notify_type4::NOTIFY4_CHANGE_CHILD_ATTRS as u32;
        const DIR: u32 = notify_type4::NOTIFY4_CHANGE_DIR_ATTRS as u32;
        const REMOVE: u32 = notify_type4::NOTIFY4_REMOVE_ENTRY as u32;
        const ADD: u32 = notify_type4::NOTIFY4_ADD_ENTRY as u32;
        const RENAME: u32 = notify_type4::NOTIFY4_RENAME_ENTRY as u32;
        const VERIFIER: u32 = notify_type4::NOTIFY4_CHANGE_COOKIE_VERIFIER as u32;
        let bad = |_| NotifyError::Undecodable(kind);
        Ok(match kind {
            CHILD => DirChange::ChildAttrs(notify_attr4::decode(d).map_err(bad)?),
            DIR => DirChange::DirAttrs(notify_attr4::decode(d).map_err(bad)?),
            REMOVE => DirChange::Remove(notify_remove4::decode(d).map_err(bad)?),
            ADD => DirChange::Add(notify_add4::decode(d).map_err(bad)?),
            RENAME => DirChange::Rename(notify_rename4::decode(d).map_err(bad)?),
            VERIFIER => DirChange::CookieVerifier(notify_verifier4::decode(d).map_err(bad)?),
            other => return Err(NotifyError::UnknownType(other)),
        })
    }
}

/// Why a `notify4` list is not a list of directory changes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotifyError {
    #[error("notification type {0} is not a directory notification")]
    UnknownType(u32),
    #[error("the value of notification type {0} does not decode")]
    Undecodable(u32),
    #[error("{0} bytes left over after the values the mask names")]
    Trailing(usize),
}

/// The `cna_changes` of a CB_NOTIFY for `changes`, one `notify4` each, in
/// their order.
pub fn encode(changes: &[DirChange]) -> Vec<notify4> {
    changes
        .iter()
        .map(|c| {
            let mut e = Encoder::with_capacity(128);
            c.encode_value(&mut e);
            notify4 { notify_mask: bitmap4::of(&[c.kind() as u32]), notify_vals: e.into_bytes() }
        })
        .collect()
}

/// The changes `cna_changes` carries, in order: within one `notify4`, one
/// value per bit set, lowest bit first. Anything the mask does not
/// account for, or a bit of no directory notification, is an error: the
/// receiver cannot tell what it missed.
pub fn decode(changes: &[notify4]) -> Result<Vec<DirChange>, NotifyError> {
    let mut out = Vec::new();
    for n in changes {
        let mut d = Decoder::new(n.notify_vals.clone());
        for kind in bitmap4::bits(&n.notify_mask) {
            out.push(DirChange::decode_value(kind, &mut d)?);
        }
        if d.remaining() != 0 {
            return Err(NotifyError::Trailing(d.remaining()));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nfs4::{fattr4, notify_entry4, prev_entry4};
    use bytes::Bytes;

    fn entry(name: &str) -> notify_entry4 {
        notify_entry4 {
            ne_file: Bytes::copy_from_slice(name.as_bytes()),
            ne_attrs: fattr4 {
                attrmask: bitmap4::of(&[1, 33]),
                attr_vals: Bytes::from_static(&[0, 0, 0, 1, 0, 0, 0, 2]),
            },
        }
    }

    fn all_kinds() -> Vec<DirChange> {
        let removed = notify_remove4 { nrm_old_entry: entry("old"), nrm_old_entry_cookie: 7 };
        let add = notify_add4 {
            nad_old_entry: vec![removed.clone()],
            nad_new_entry: entry("new"),
            nad_new_entry_cookie: vec![9],
            nad_prev_entry: vec![prev_entry4 { pe_prev_entry: entry("before"), pe_prev_entry_cookie: 3 }],
            nad_last_entry: true,
        };
        vec![
            DirChange::Add(add.clone()),
            DirChange::Remove(removed.clone()),
            DirChange::ChildAttrs(notify_attr4 { na_changed_entry: entry("a") }),
            DirChange::Rename(notify_rename4 { nrn_old_entry: removed, nrn_new_entry: add }),
            DirChange::DirAttrs(notify_attr4 { na_changed_entry: entry("") }),
            DirChange::CookieVerifier(notify_verifier4 { nv_old_cookieverf: [1; 8], nv_new_cookieverf: [2; 8] }),
        ]
    }

    #[test]
    fn changes_round_trip_in_order() {
        let changes = all_kinds();
        let wire = encode(&changes);
        assert_eq!(wire.len(), changes.len());
        assert!(wire.iter().all(|n| bitmap4::bits(&n.notify_mask).count() == 1));
        assert_eq!(decode(&wire).unwrap(), changes);
    }

    #[test]
    fn several_bits_in_one_notify4_are_read_lowest_first() {
        let child = DirChange::ChildAttrs(notify_attr4 { na_changed_entry: entry("c") });
        let remove = DirChange::Remove(notify_remove4 { nrm_old_entry: entry("r"), nrm_old_entry_cookie: 0 });
        let mut e = Encoder::new();
        child.encode_value(&mut e);
        remove.encode_value(&mut e);
        let n = notify4 { notify_mask: bitmap4::of(&[0, 2]), notify_vals: e.into_bytes() };
        assert_eq!(decode(&[n]).unwrap(), vec![child, remove]);
    }

    #[test]
    fn bad_lists_are_refused() {
        let mut wire = encode(&all_kinds()[..1]);
        wire[0].notify_mask = bitmap4::of(&[6]);
        assert_eq!(decode(&wire), Err(NotifyError::UnknownType(6)));
        let mut wire = encode(&all_kinds()[..1]);
        let mut v = wire[0].notify_vals.to_vec();
        v.extend_from_slice(&[0, 0, 0, 0]);
        wire[0].notify_vals = Bytes::from(v);
        assert_eq!(decode(&wire), Err(NotifyError::Trailing(4)));
        let mut wire = encode(&all_kinds()[..1]);
        wire[0].notify_vals = wire[0].notify_vals.slice(..5);
        assert_eq!(decode(&wire), Err(NotifyError::Undecodable(3)));
        assert_eq!(decode(&[]), Ok(vec![]));
    }
}
