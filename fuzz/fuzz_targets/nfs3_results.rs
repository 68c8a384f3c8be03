//! Every NFSv3 procedure's result decoder (what a client reads).
#![no_main]
use libfuzzer_sys::fuzz_target;
use proto::nfs3::*;
#[path = "common.rs"]
mod common;
use common::round_trip;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else { return };
    match sel % 21 {
        0 => round_trip::<GETATTR3res>(rest),
        1 => round_trip::<SETATTR3res>(rest),
        2 => round_trip::<LOOKUP3res>(rest),
        3 => round_trip::<ACCESS3res>(rest),
        4 => round_trip::<READLINK3res>(rest),
        5 => round_trip::<READ3res>(rest),
        6 => round_trip::<WRITE3res>(rest),
        7 => round_trip::<CREATE3res>(rest),
        8 => round_trip::<MKDIR3res>(rest),
        9 => round_trip::<SYMLINK3res>(rest),
        10 => round_trip::<MKNOD3res>(rest),
        11 => round_trip::<REMOVE3res>(rest),
        12 => round_trip::<RMDIR3res>(rest),
        13 => round_trip::<RENAME3res>(rest),
        14 => round_trip::<LINK3res>(rest),
        15 => round_trip::<READDIR3res>(rest),
        16 => round_trip::<READDIRPLUS3res>(rest),
        17 => round_trip::<FSSTAT3res>(rest),
        18 => round_trip::<FSINFO3res>(rest),
        19 => round_trip::<PATHCONF3res>(rest),
        _ => round_trip::<COMMIT3res>(rest),
    }
});
