//! Every NFSv3 procedure's argument decoder (what the server reads from the
//! network). The first byte picks the procedure.
#![no_main]
use libfuzzer_sys::fuzz_target;
use proto::nfs3::*;
#[path = "common.rs"]
mod common;
use common::round_trip;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else { return };
    match sel % 21 {
        0 => round_trip::<GETATTR3args>(rest),
        1 => round_trip::<SETATTR3args>(rest),
        2 => round_trip::<LOOKUP3args>(rest),
        3 => round_trip::<ACCESS3args>(rest),
        4 => round_trip::<READLINK3args>(rest),
        5 => round_trip::<READ3args>(rest),
        6 => round_trip::<WRITE3args>(rest),
        7 => round_trip::<CREATE3args>(rest),
        8 => round_trip::<MKDIR3args>(rest),
        9 => round_trip::<SYMLINK3args>(rest),
        10 => round_trip::<MKNOD3args>(rest),
        11 => round_trip::<REMOVE3args>(rest),
        12 => round_trip::<RMDIR3args>(rest),
        13 => round_trip::<RENAME3args>(rest),
        14 => round_trip::<LINK3args>(rest),
        15 => round_trip::<READDIR3args>(rest),
        16 => round_trip::<READDIRPLUS3args>(rest),
        17 => round_trip::<FSSTAT3args>(rest),
        18 => round_trip::<FSINFO3args>(rest),
        19 => round_trip::<PATHCONF3args>(rest),
        _ => round_trip::<COMMIT3args>(rest),
    }
});
