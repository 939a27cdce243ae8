//! Field blocks, lenient and strict, then edits that must keep them parseable.
#![no_main]
use libfuzzer_sys::fuzz_target;
use warchest::fields::{Fields, decode_encoded_words};

fuzz_target!(|data: &[u8]| {
    let mut issues = Vec::new();
    let _ = Fields::parse(data.to_vec(), 0, true, 1000, &mut issues);
    if let Ok(mut f) = Fields::parse(data.to_vec(), 0, false, 1000, &mut issues) {
        for field in f.iter() {
            let _ = field.value_decoded();
        }
        let _ = f.set("X-Fuzz", "value");
        let _ = f.remove("x-fuzz");
    }
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = decode_encoded_words(s);
    }
});
