//! Decoders of top-level messages fed arbitrary input: they must never
//! panic, and whatever they accept must re-encode to bytes that decode to
//! the same value and re-encode identically.

use std::fmt::Debug;

use bytes::Bytes;
use proptest::prelude::*;
use proto::{mount3, nfs3, nfs4, nlm, nsm, portmap, rpc};
use xdr::{Decode, Decoder, Encode, Encoder};

fn check_with<T: PartialEq + Debug>(
    input: &[u8],
    dec: fn(&mut Decoder) -> xdr::Result<T>,
    enc: fn(&T, &mut Encoder),
) -> Result<(), TestCaseError> {
    let mut d = Decoder::new(Bytes::copy_from_slice(input));
    let Ok(v) = dec(&mut d) else { return Ok(()) };
    let consumed = input.len() - d.remaining();
    let mut e = Encoder::new();
    enc(&v, &mut e);
    let b1 = e.into_bytes();
    // Same length as what was read: only padding bytes (which decoders
    // do not inspect) may differ from the input.
    prop_assert_eq!(b1.len(), consumed, "{:?}", v);
    let mut d = Decoder::new(b1.clone());
    let v2 = dec(&mut d);
    prop_assert_eq!(d.remaining(), 0);
    prop_assert_eq!(v2.as_ref(), Ok(&v));
    let mut e = Encoder::new();
    enc(&v, &mut e);
    prop_assert_eq!(e.into_bytes(), b1);
    Ok(())
}

fn check<T: Decode + Encode + PartialEq + Debug>(input: &[u8]) -> Result<(), TestCaseError> {
    check_with::<T>(input, T::decode, |v, e| v.encode(e))
}

macro_rules! check_all {
    ($input:expr; $($t:ty),* $(,)?) => {
        $( check::<$t>($input)?; )*
    };
}

fn all(input: &[u8]) -> Result<(), TestCaseError> {
    {
        use nfs3::*;
        check_all!(input;
            GETATTR3args, GETATTR3res, SETATTR3args, SETATTR3res, LOOKUP3args, LOOKUP3res,
            ACCESS3args, ACCESS3res, READLINK3args, READLINK3res, READ3args, READ3res,
            WRITE3args, WRITE3res, CREATE3args, CREATE3res, MKDIR3args, MKDIR3res,
            SYMLINK3args, SYMLINK3res, MKNOD3args, MKNOD3res, REMOVE3args, REMOVE3res,
            RMDIR3args, RMDIR3res, RENAME3args, RENAME3res, LINK3args, LINK3res,
            READDIR3args, READDIR3res, READDIRPLUS3args, READDIRPLUS3res,
            FSSTAT3args, FSSTAT3res, FSINFO3args, FSINFO3res, PATHCONF3args, PATHCONF3res,
            COMMIT3args, COMMIT3res, post_op_attr, sattr3,
            READDIR2res, GETACL3res, SETACL3args,
        );
    }
    {
        use mount3::*;
        check_all!(input; mountres3, mountres1);
        check_with(input, decode_dirpath, encode_dirpath)?;
        check_with(input, decode_mountlist, encode_mountlist)?;
        check_with(input, decode_exports, encode_exports)?;
    }
    {
        use rpc::*;
        check_all!(input; rpc_msg, authsys_parms, opaque_auth, reply_body);
    }
    {
        use portmap::*;
        check_all!(input; pmap2_mapping, pmap2_dump_result, pmap3_mapping, pmap4_dump_result,
            pmap2_call_args, rpcb_stat);
        check_with(input, decode_pmap4_stat_byvers, encode_pmap4_stat_byvers)?;
        check_with(input, decode_PMAP4GETADDRLISTres, encode_PMAP4GETADDRLISTres)?;
    }
    {
        use nlm::*;
        check_all!(input; nlm4_lockargs, nlm4_testres, nlm4_shareargs, nlm_testres, nlm_notify);
    }
    {
        use nsm::*;
        check_all!(input; mon, sm_stat_res, stat_chge);
    }
    {
        use nfs4::*;
        check_all!(input; COMPOUND4args, COMPOUND4res, CB_COMPOUND4args, CB_COMPOUND4res,
            nfs_argop4, nfs_resop4, fattr4, open_claim4, OPEN4res, createhow4, EXCHANGE_ID4args,
            CREATE_SESSION4res, READDIR4res, layoutreturn4, callback_sec_parms4);
    }
    Ok(())
}

/// XDR-ish input: mostly small words, so discriminants, booleans and
/// lengths are often valid and decoders get past the first field.
fn wordy() -> impl Strategy<Value = Vec<u8>> {
    let word = prop_oneof![
        4 => Just(0u32),
        4 => Just(1u32),
        2 => 0u32..24,
        1 => Just(10001u32),
        1 => any::<u32>(),
    ];
    proptest::collection::vec(word, 0..160).prop_map(|w| w.iter().flat_map(|x| x.to_be_bytes()).collect())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes(input in proptest::collection::vec(any::<u8>(), 0..600)) {
        all(&input)?;
    }

    #[test]
    fn random_words(input in wordy()) {
        all(&input)?;
    }
}

/// Guards against the property tests passing vacuously: the wordy inputs
/// must get some non-trivial messages through the decoders.
#[test]
fn wordy_inputs_decode_sometimes() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let mut ok = 0;
    for _ in 0..2000 {
        let input = wordy().new_tree(&mut runner).map(|t| t.current()).unwrap_or_default();
        if xdr::from_bytes::<nfs3::READDIR3res>(Bytes::from(input.clone())).is_ok()
            || Decoder::new(Bytes::from(input)).list::<nfs3::entryplus3>().is_ok_and(|l| !l.is_empty())
        {
            ok += 1;
        }
    }
    assert!(ok > 0, "no wordy input decoded");
}
