//! Field value grammars: dates (WARC and HTTP), timestamps padded as
//! replay reads them, digests and their lookup keys, versions, record
//! types.
#![no_main]
use libfuzzer_sys::fuzz_target;
use warchest::digest::{Digest, lookup_key};
use warchest::http::date::{
    http_date, pad_timestamp, pad_timestamp_up, parse_http_date, timestamp_seconds,
};
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
        if let Ok(d) = Digest::parse_indexed(s) {
            // A digest's key is its own key's key (one spelling a digest).
            let key = d.lookup_key();
            assert_eq!(lookup_key(&key), key);
        }
        let _ = lookup_key(s);
        let _ = timestamp_seconds(s);
        // Any timestamp prints as a date that parses back.
        assert!(parse_http_date(&http_date(s)).is_some(), "{s}");
        // A padded timestamp is 14 digits, and padding it again keeps it.
        for pad in [pad_timestamp, pad_timestamp_up] {
            let p = pad(s);
            assert!(
                p.len() == 14 && p.bytes().all(|b| b.is_ascii_digit()),
                "{p}"
            );
            assert_eq!(pad(&p), p);
        }
        if let Some(ts) = parse_http_date(s) {
            // A date read is a 14-digit timestamp, which prints as a date.
            assert_eq!(ts.len(), 14, "{ts}");
            let _ = http_date(&ts);
        }
    }
});
