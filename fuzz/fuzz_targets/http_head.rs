//! HTTP heads: find the end, parse, read every accessor, and the payload reader.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::io::Read;
use warchest::http::{HttpHead, find_head_end, payload_reader, read_head};

fuzz_target!(|data: &[u8]| {
    let _ = find_head_end(data);
    if let Ok(Some((h, _))) = HttpHead::parse(data) {
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
