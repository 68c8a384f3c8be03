use super::*;

fn frame(parts: &[(&[u8], bool)]) -> Vec<u8> {
    let mut v = Vec::new();
    for (p, last) in parts {
        v.extend_from_slice(&record_header(p.len(), *last));
        v.extend_from_slice(p);
    }
    v
}

fn concat(segs: &[Bytes]) -> Vec<u8> {
    segs.iter().flat_map(|s| s.iter().copied()).collect()
}

#[test]
fn header_layout() {
    assert_eq!(record_header(5, true), [0x80, 0, 0, 5]);
    assert_eq!(record_header(0x1234, false), [0, 0, 0x12, 0x34]);
}

#[test]
fn single_fragment_is_not_copied() {
    let mut d = RecordDecoder::new(1024);
    d.push(&frame(&[(b"hello", true)]));
    let base = d.buffer_mut().as_ptr() as usize;
    let r = d.next_record().unwrap().unwrap();
    assert_eq!(&r[..], b"hello");
    // the record is a slice of the receive buffer, just past the header
    assert_eq!(r.as_ptr() as usize, base + 4);
    assert_eq!(d.next_record().unwrap(), None);
    assert!(d.is_idle());
}

#[test]
fn fragments_reassembled_one_byte_at_a_time() {
    let mut stream = frame(&[(b"ab", false), (b"", false), (b"cde", false), (b"f", true)]);
    stream.extend(frame(&[(b"second", true)]));
    stream.extend(frame(&[(b"", true)]));
    let mut d = RecordDecoder::new(100);
    let mut got = Vec::new();
    for b in stream {
        d.push(&[b]);
        while let Some(r) = d.next_record().unwrap() {
            got.push(r);
        }
    }
    assert_eq!(got, vec![Bytes::from_static(b"abcdef"), Bytes::from_static(b"second"), Bytes::new()]);
    assert!(d.is_idle());
}

#[test]
fn too_large_single_and_summed() {
    let mut d = RecordDecoder::new(8);
    d.push(&record_header(9, true));
    assert_eq!(d.next_record(), Err(FrameError::RecordTooLarge { size: 9, max: 8 }));

    let mut d = RecordDecoder::new(8);
    d.push(&frame(&[(b"12345", false), (b"6789", true)]));
    assert_eq!(d.next_record(), Err(FrameError::RecordTooLarge { size: 9, max: 8 }));

    // exactly at the limit is fine
    let mut d = RecordDecoder::new(8);
    d.push(&frame(&[(b"1234", false), (b"5678", true)]));
    assert_eq!(d.next_record().unwrap().unwrap(), Bytes::from_static(b"12345678"));
}

#[test]
fn header_is_checked_before_the_data_arrives() {
    let mut d = RecordDecoder::new(1 << 20);
    d.push(&record_header(MAX_FRAGMENT, false));
    assert!(matches!(d.next_record(), Err(FrameError::RecordTooLarge { .. })));
}

#[test]
fn empty_fragments_do_not_accumulate() {
    let mut d = RecordDecoder::new(16);
    for _ in 0..10_000 {
        d.push(&record_header(0, false));
        assert_eq!(d.next_record(), Ok(None));
    }
    assert_eq!(d.buffered(), 0);
    assert!(d.parts.is_empty());
    d.push(&frame(&[(b"x", true)]));
    assert_eq!(d.next_record().unwrap().unwrap(), Bytes::from_static(b"x"));
}

#[test]
fn frame_segments_single_fragment() {
    let segs = vec![Bytes::from_static(b"abc"), Bytes::new(), Bytes::from_static(b"defg")];
    let out = frame_segments(segs);
    assert_eq!(out.len(), 3);
    assert_eq!(concat(&out), frame(&[(b"abcdefg", true)]));
    assert_eq!(concat(&frame_segments(Vec::new())), record_header(0, true));
}

#[test]
fn frame_segments_splits_and_decodes_back() {
    let payload: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
    let segs: Vec<Bytes> = payload.chunks(77).map(Bytes::copy_from_slice).collect();
    for max in [1, 3, 64, 999, 1000] {
        let framed = concat(&frame_segments_max(segs.clone(), max));
        let frags = 1000usize.div_ceil(max);
        assert_eq!(framed.len(), 1000 + 4 * frags, "max {max}");
        let mut d = RecordDecoder::new(1000);
        d.push(&framed);
        assert_eq!(&d.next_record().unwrap().unwrap()[..], &payload[..], "max {max}");
        assert!(d.is_idle());
    }
}

#[test]
fn payload_segments_are_shared_not_copied() {
    let big = Bytes::from(vec![7u8; 4096]);
    let out = frame_segments(vec![Bytes::from_static(b"hdr!"), big.clone()]);
    assert_eq!(out[2].as_ptr(), big.as_ptr());
}

/// Below `copy_records_below` a record is a copy, so the receive buffer
/// stays unshared and is reused by the next read; at or above it, a slice.
#[test]
fn short_records_are_copied_and_the_buffer_reused() {
    let mut d = RecordDecoder::new(1024).copy_records_below(10);
    let long = [7u8; 10];
    d.buffer_mut().reserve(4096);
    d.push(&frame(&[(b"short", true), (&long, true)]));
    let base = d.buffer_mut().as_ptr() as usize;
    let short = d.next_record().unwrap().unwrap();
    assert_eq!(&short[..], b"short");
    assert_ne!(short.as_ptr() as usize, base + 4, "copied, not a slice");
    let r = d.next_record().unwrap().unwrap();
    assert_eq!(&r[..], &long[..]);
    assert_eq!(r.as_ptr() as usize, base + 4 + 5 + 4, "a slice just past its header");
    drop(r);
    // Nothing of the buffer is held any more: room is found in it.
    d.buffer_mut().reserve(64);
    let at = d.buffer_mut().as_ptr() as usize;
    assert!((base..base + 4096).contains(&at), "the same buffer again");
}

/// Inside a fragment a read is given exactly the room its rest needs, so
/// it cannot run on into the next record, and nothing received of the
/// fragment is moved while the rest comes in.
#[test]
fn a_read_inside_a_fragment_ends_at_its_end_and_nothing_moves() {
    let mut d = RecordDecoder::new(1 << 20).expect_like_the_last(true);
    let body = vec![5u8; 100_000];
    let stream = [frame(&[(&body, true)]), frame(&[(&body, true)])].concat();
    let mut at = 0;
    let mut got = Vec::new();
    let feed = |d: &mut RecordDecoder, at: &mut usize| {
        d.reserve_for_read(4096);
        let room = d.buffer_mut().capacity() - d.buffer_mut().len();
        let n = room.min(stream.len() - *at).min(30_000);
        d.buffer_mut().extend_from_slice(&stream[*at..*at + n]);
        *at += n;
    };
    // The first read brings the header: room for the whole fragment now.
    feed(&mut d, &mut at);
    assert_eq!(d.next_record().unwrap(), None);
    let base = d.buffer_mut().as_ptr() as usize;
    while got.is_empty() {
        feed(&mut d, &mut at);
        assert_eq!(d.buffer_mut().as_ptr() as usize, base, "the fragment received so far stayed where it was");
        while let Some(r) = d.next_record().unwrap() {
            got.push(r);
        }
    }
    assert_eq!(at, 4 + body.len(), "the read stopped at the fragment's end");
    // Between records, room for one as large as the last: the second is
    // read straight into a buffer of its size.
    feed(&mut d, &mut at);
    let second = d.buffer_mut().as_ptr() as usize;
    assert!(d.buffer_mut().capacity() >= 4 + body.len());
    while got.len() < 2 {
        while let Some(r) = d.next_record().unwrap() {
            got.push(r);
        }
        if got.len() < 2 {
            feed(&mut d, &mut at);
        }
    }
    assert_eq!(got[1].as_ptr() as usize, second + 4, "never moved");
    assert!(got.iter().all(|r| r[..] == body[..]));
}

#[test]
fn fragment_missing_counts_what_has_not_arrived() {
    let wire = frame(&[(&[7u8; 1000], false), (&[8u8; 500], true)]);
    let mut d = RecordDecoder::new(1 << 20);
    assert_eq!(d.fragment_missing(), 0);
    d.push(&wire[..2]);
    assert_eq!(d.next_record(), Ok(None));
    assert_eq!(d.fragment_missing(), 0, "header not complete yet");
    d.push(&wire[2..104]);
    assert_eq!(d.next_record(), Ok(None));
    assert_eq!(d.fragment_missing(), 900);
    d.push(&wire[104..1004 + 4 + 100]);
    assert_eq!(d.next_record(), Ok(None));
    assert_eq!(d.fragment_missing(), 400, "second fragment");
    d.push(&wire[1108..]);
    assert_eq!(d.next_record().unwrap().map(|r| r.len()), Some(1500));
    assert_eq!(d.fragment_missing(), 0);
}
