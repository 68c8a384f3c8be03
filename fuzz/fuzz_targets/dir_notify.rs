//! CB_NOTIFY's changes (RFC 8881 section 20.4): any CB_NOTIFY arguments
//! either decode into typed changes or are refused, never a panic; what
//! decodes encodes back (one change per notify4) into the same changes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use proto::dir_notify;
use proto::nfs4::CB_NOTIFY4args;
use xdr::{Decode, Decoder};

fuzz_target!(|data: &[u8]| {
    let Ok(args) = CB_NOTIFY4args::decode(&mut Decoder::new(bytes::Bytes::copy_from_slice(data))) else {
        return;
    };
    let Ok(changes) = dir_notify::decode(&args.cna_changes) else { return };
    let wire = dir_notify::encode(&changes);
    assert_eq!(wire.len(), changes.len());
    assert_eq!(dir_notify::decode(&wire).as_ref(), Ok(&changes));
});
