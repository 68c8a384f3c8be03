//! The client's lock service: arbitrary records arriving as calls (NLM
//! GRANTED, GRANTED_MSG, NSM SM_NOTIFY, anything else). Each is answered
//! or dropped without a panic, and a GRANTED wakes only a lock waited for.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for record in data.split(|b| *b == 0xfe) {
        let _ = client::lockd::answer_for_fuzzing(Bytes::copy_from_slice(record));
    }
});
