//! The indexer over any archive bytes and every index encoding of its
//! entries, each CDXJ and CDX line read back as `fetch` and `serve --cdxj`
//! read index files (the same file, offset and length); the SURT
//! canonicaliser over the input as a URL; any line as such an index line;
//! the read that stops at a file not record at a time.
#![no_main]
use libfuzzer_sys::fuzz_target;
use warchest::archive::Reader;
use warchest_index::select::{CDX11, parse_cdx, parse_cdxj};
use warchest_index::surt::{surt_bytes, url_key};
use warchest_index::{Encoder, Format};
use warchest_index::{IndexOptions, Indexer};

fuzz_target!(|data: &[u8]| {
    // URLs are short: the first line is also tried as one.
    let line = data.split(|&b| b == b'\n').next().unwrap_or_default();
    let _ = surt_bytes(line);
    if let Ok(s) = std::str::from_utf8(line) {
        let _ = url_key(s);
    }
    let cdx11: Vec<String> = CDX11.iter().map(|f| f.to_string()).collect();
    for l in data.split(|&b| b == b'\n').take(64) {
        if let Ok(s) = std::str::from_utf8(l) {
            let _ = parse_cdxj(s);
            let _ = parse_cdx(s, &cdx11);
        }
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
    // The read that stops where the input is found not record at a time:
    // when it reads to the end, the same entries as the plain read.
    if let Ok(mut r) = Reader::new(data) {
        let mut n = 0usize;
        let read = indexer.index_addressable(
            &mut r,
            "fuzz.warc",
            |_| {
                n += 1;
                Ok(())
            },
            |_| {},
            &mut Default::default(),
        );
        if let Ok(Ok(_)) = read {
            assert_eq!(n, entries.len());
        }
    }
    let mut out = Vec::new();
    for format in [Format::Cdxj, Format::cdx11(), Format::Json] {
        let enc = Encoder::new(&format);
        for e in &entries {
            out.clear();
            enc.encode(e, &mut out);
            // One line an entry: a line break inside a value would split it.
            assert_eq!(out.iter().filter(|&&b| b == b'\n').count(), 1);
            let Some(length) = e.length else { continue };
            let line = std::str::from_utf8(&out).expect("index lines are UTF-8");
            let back = match format {
                Format::Cdxj => parse_cdxj(line.trim_end()),
                Format::Json => continue,
                _ => parse_cdx(line.trim_end(), &cdx11),
            };
            let back = back.unwrap_or_else(|| panic!("{format:?} line not read back: {line}"));
            assert_eq!(
                (back.filename.as_str(), back.offset, back.length),
                (e.filename.as_str(), e.offset, length)
            );
        }
    }
});
