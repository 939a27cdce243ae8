//! Any bytes and any offset through the byte-range resync, as each format:
//! no panic, no hang; a start found lies at or after the offset and holds a
//! record start, and two ranges meet where the second begins.
#![no_main]
use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use warchest::archive::Format;
use warchest::split::{bounds, find_record_start};
use warchest::warc::ReaderOptions;

fuzz_target!(|data: &[u8]| {
    let Some((&k, rest)) = data.split_first() else {
        return;
    };
    let len = rest.len() as u64;
    let at = u64::from(k) * len / 255;
    let mut c = Cursor::new(rest);
    let opts = ReaderOptions::default();
    for format in [Format::Warc, Format::Arc, Format::InfoMall] {
        if let Ok(Some(p)) = find_record_start(&mut c, format, at, u64::MAX, &opts) {
            assert!(p >= at && p < len, "{p} outside {at}..{len}");
            if format == Format::Warc {
                let s = &rest[p as usize..];
                assert!(s.len() > 5 && s[..5].eq_ignore_ascii_case(b"WARC/"));
            }
        }
        let cut = at.max(1);
        let a = bounds(&mut c, format, 0..cut, &opts);
        let b = bounds(&mut c, format, cut..len, &opts);
        if let (Ok(Some(a)), Ok(Some(b))) = (a, b) {
            assert_eq!(a.end, b.start, "ranges that do not meet");
        }
    }
});
