//! HTTP heads: find the end, parse, read every accessor, and the payload
//! reader; the streaming reader and the parse of the bytes in hand agree.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::io::Read;
use warchest::http::{HttpHead, find_head_end, payload_reader, read_head};

fuzz_target!(|data: &[u8]| {
    let _ = find_head_end(data);
    let parsed = HttpHead::parse(data);
    // The streaming reader finds the same head as the parse of the bytes
    // in hand: two entry points, one grammar.
    if let Ok(Some((h, n))) = &parsed {
        let mut r = data;
        if let Ok(Some(read)) = read_head(&mut r, &Default::default()) {
            assert_eq!(read.raw(), h.raw(), "two heads of the same bytes");
            assert_eq!(data.len() - r.len(), *n, "the head's length");
            assert_eq!(read.status(), h.status());
            assert_eq!(read.method(), h.method());
            assert_eq!(read.fields().len(), h.fields().len());
        }
    }
    if let Ok(Some((h, _))) = parsed {
        let _ = (
            h.status(),
            h.reason(),
            h.method(),
            h.content_length(),
            h.charset(),
        );
        let _ = (h.transfer_encoding(), h.content_encoding(), h.media_type());
    }
    let mut r = data;
    if let Ok(Some(head)) = read_head(&mut r, &Default::default()) {
        if let Ok(mut p) = payload_reader(r, &head, true) {
            let mut sink = [0u8; 4096];
            // Bounded: a decompression bomb is read only this far.
            for _ in 0..256 {
                match p.read(&mut sink) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
        }
    }
});
