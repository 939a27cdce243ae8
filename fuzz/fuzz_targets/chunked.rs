//! The chunked decoder, fed whole and in pieces, must agree.
#![no_main]
use libfuzzer_sys::fuzz_target;
use warchest::http::ChunkedDecoder;

fuzz_target!(|data: &[u8]| {
    let mut whole = Vec::new();
    let mut d = ChunkedDecoder::new();
    let r1 = d.feed(data, |b| whole.extend_from_slice(b));
    let mut pieces = Vec::new();
    let mut d2 = ChunkedDecoder::new();
    let mut ok = true;
    for chunk in data.chunks(3) {
        if d2.feed(chunk, |b| pieces.extend_from_slice(b)).is_err() {
            ok = false;
            break;
        }
    }
    // Refused whole, refused in pieces, and the same bytes out.
    assert_eq!(r1.is_ok(), ok, "whole: {r1:?}");
    if ok {
        assert_eq!(whole, pieces);
    }
});
