//! Any text as a filter expression: an error or a filter, never a panic or
//! a stack overflow; a filter evaluates on a record with an HTTP head.
#![no_main]
use libfuzzer_sys::fuzz_target;
use warchest::warc::Reader;
use warchest_ops::filter::{Filter, Subject};

const RECORD: &[u8] = b"WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: http://a.example/x\r\nContent-Type: application/http; msgtype=response\r\nContent-Length: 44\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n\r\n\r\n";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(f) = Filter::parse(text) else {
        return;
    };
    let mut r = Reader::new(RECORD);
    if let Ok(Some(mut rec)) = r.next_record() {
        let header = rec.header().clone();
        let block = rec.read_block().unwrap_or_default();
        let head = warchest::http::HttpHead::parse(&block)
            .ok()
            .flatten()
            .map(|h| h.0);
        let _ = f.matches(&mut Subject::new(&header).http(head.as_ref()));
    }
});
