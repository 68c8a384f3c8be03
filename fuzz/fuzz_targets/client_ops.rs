//! The NFSv4.1 client's operation layer with any reply: the replies to the
//! compounds its calls send (the mount's LOOKUP of the export, GETATTR,
//! LOOKUP, READ, CREATE, READDIR, OPEN with create, the one-compound
//! small-file write, ...) go through the check every reply passes and the
//! same reading of results the calls make. The first byte picks the call;
//! the second how the reply is made: the rest of the input as the reply's
//! bytes, or the call's well-formed reply spoilt by mutations read three
//! bytes at a time. Nothing may panic, and a reply read as a success has a
//! result for every operation sent.
#![no_main]

use bytes::Bytes;
use client::nfs41::fuzzing::{self, Mutation};
use libfuzzer_sys::fuzz_target;
use proto::nfs4::{nfsstat4, COMPOUND4res};
use xdr::{Decode, Decoder};

fuzz_target!(|data: &[u8]| {
    let [which, how, rest @ ..] = data else { return };
    let reply = if how % 2 == 0 {
        Bytes::copy_from_slice(rest)
    } else {
        let mutations: Vec<Mutation> = rest.chunks_exact(3).map(|m| Mutation::from_bytes(m[0], m[1], m[2])).collect();
        fuzzing::mutated(*which, &mutations)
    };
    if fuzzing::drive(*which, reply.clone()).is_ok() {
        let r = COMPOUND4res::decode(&mut Decoder::new(reply)).expect("a reply read as a success decodes");
        assert_eq!(r.status, nfsstat4::NFS4_OK);
        assert_eq!(r.resarray.len(), fuzzing::operations(*which).len() + 1);
    }
});
