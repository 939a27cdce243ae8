//! The indexer over any archive bytes and every index encoding of its
//! entries; the SURT canonicaliser over the input as a URL.
#![no_main]
use libfuzzer_sys::fuzz_target;
use warchest::archive::Reader;
use warchest_index::{Encoder, Format};
use warchest_index::surt::{surt_bytes, url_key};
use warchest_index::{IndexOptions, Indexer};

fuzz_target!(|data: &[u8]| {
    // URLs are short: the first line is also tried as one.
    let line = data.split(|&b| b == b'\n').next().unwrap_or_default();
    let _ = surt_bytes(line);
    if let Ok(s) = std::str::from_utf8(line) {
        let _ = url_key(s);
    }
    let Ok(mut r) = Reader::new(data) else {
        return;
    };
    let indexer = Indexer::new(
        "fuzz.warc",
        IndexOptions {
            all: true,
            ..IndexOptions::default()
        },
    );
    let mut entries = Vec::new();
    let _ = indexer.index(&mut r, |e| {
        entries.push(e);
        Ok(())
    });
    let mut out = Vec::new();
    for format in [Format::Cdxj, Format::cdx11(), Format::Json] {
        let enc = Encoder::new(&format);
        for e in &entries {
            out.clear();
            enc.encode(e, &mut out);
            // One line an entry: a line break inside a value would split it.
            assert_eq!(out.iter().filter(|&&b| b == b'\n').count(), 1);
        }
    }
});
