//! Record marking: arbitrary stream bytes in arbitrary chunks must yield
//! records or an error, never a panic, and never hold more than the limit.
#![no_main]
use libfuzzer_sys::fuzz_target;
use proto::framer::RecordDecoder;

const LIMIT: usize = 64 << 10;

fuzz_target!(|data: &[u8]| {
    if data.is_empty() {
        return;
    }
    let step = (data[0] as usize % 61) + 1;
    let mut d = RecordDecoder::new(LIMIT);
    for chunk in data[1..].chunks(step) {
        d.push(chunk);
        loop {
            match d.next_record() {
                Ok(Some(r)) => assert!(r.len() <= LIMIT),
                Ok(None) => break,
                Err(_) => return,
            }
        }
        assert!(d.buffered() <= LIMIT + data.len());
    }
});
