//! Field value grammars: dates, digests, versions, record types.
#![no_main]
use libfuzzer_sys::fuzz_target;
use warchest::digest::Digest;
use warchest::warc::{RecordType, Version, WarcDate};

fuzz_target!(|data: &[u8]| {
    let _ = Version::parse_line(data);
    let _ = RecordType::parse(data);
    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(d) = WarcDate::parse(s) {
            // What parses prints and parses back to the same instant.
            let again = WarcDate::parse(&d.to_string()).expect("own output parses");
            assert_eq!(again.timestamp14(), d.timestamp14());
        }
        let _ = WarcDate::from_timestamp14(s);
        if let Ok(d) = Digest::parse(s) {
            let _ = d.matches(&[0u8; 20]);
        }
    }
});
