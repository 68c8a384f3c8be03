//! The NFSv4.1 client's decoders of what a server sends: COMPOUND replies
//! (their SEQUENCE result driving the slot table), attributes in a
//! `fattr4`, and the back channel's CB_COMPOUND calls. None may panic, and
//! the slot table stays within what was granted whatever comes back.
#![no_main]

use bytes::Bytes;
use client_core::v41::attrs;
use client_core::v41::slots::{SlotOutcome, SlotTable};
use libfuzzer_sys::fuzz_target;
use proto::nfs4::*;
use xdr::{Decode, Decoder};

fuzz_target!(|data: &[u8]| {
    let bytes = Bytes::copy_from_slice(data);
    let mut table = SlotTable::new(4);
    if let Ok(r) = COMPOUND4res::decode(&mut Decoder::new(bytes.clone())) {
        for res in &r.resarray {
            let slot = table.acquire();
            match (slot, res) {
                (Some(s), nfs_resop4::OP_SEQUENCE(SEQUENCE4res::NFS4_OK(ok))) => table.release(
                    s,
                    SlotOutcome::Done {
                        highest_slotid: ok.sr_highest_slotid,
                        target_highest_slotid: ok.sr_target_highest_slotid,
                    },
                ),
                (Some(s), nfs_resop4::OP_SEQUENCE(SEQUENCE4res::default(_))) => table.release(s, SlotOutcome::Misordered),
                (Some(s), _) => table.release(s, SlotOutcome::Unknown),
                (None, _) => {}
            }
            if let nfs_resop4::OP_GETATTR(GETATTR4res::NFS4_OK(ok)) = res {
                if let Ok(a) = attrs::decode(&ok.obj_attributes) {
                    let _ = a.to_fattr(|_| Some(1), |_| None);
                }
            }
            if let nfs_resop4::OP_READDIR(READDIR4res::NFS4_OK(ok)) = res {
                for e in &ok.reply.entries {
                    let _ = attrs::decode(&e.attrs);
                }
            }
        }
    }
    assert!(table.target() < table.size());
    // The same bytes as a fattr4 and as a callback from the server.
    if let Ok(f) = fattr4::decode(&mut Decoder::new(bytes.clone())) {
        let _ = attrs::decode(&f);
    }
    let _ = CB_COMPOUND4args::decode(&mut Decoder::new(bytes));
});
