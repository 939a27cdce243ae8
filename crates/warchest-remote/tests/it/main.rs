//! Integration tests of remote reading and writing against real servers
//! started on 127.0.0.1: moto's S3 server and an HTTP server with faults.

mod blocks;
mod http;
mod s3;
mod servers;

use std::path::PathBuf;

/// `../shared/fixtures/REL`.
pub fn fixture(rel: &str) -> PathBuf {
    let p = servers::repo_root().join("../shared/fixtures").join(rel);
    assert!(
        p.is_file(),
        "fixture {} missing (shared/ beside the repository)",
        p.display()
    );
    p
}

/// Options with short timeouts and pauses, and small ranges so that even
/// the small fixtures take many range requests and read-ahead.
pub fn quick() -> warchest_remote::Options {
    warchest_remote::Options {
        retries: 3,
        backoff: std::time::Duration::from_millis(10),
        max_backoff: std::time::Duration::from_millis(50),
        // Short, for the stall tests (their stalls last 4 and 5 s), but
        // not so short that a loaded machine's answer times out and is
        // retried: the tests count requests.
        timeout: std::time::Duration::from_secs(3),
        connect_timeout: std::time::Duration::from_secs(2),
        chunk: 16 << 10,
        min_chunk: 4 << 10,
        ..Default::default()
    }
}

/// Every record's (stored offset, stored length) in a reader over `src`.
pub fn record_spans<R: std::io::Read + std::io::Seek>(src: R) -> Vec<(u64, u64)> {
    use warchest::archive::Reader;
    use warchest::codec::Decoder;
    use warchest::warc::ReaderOptions;
    let opts = ReaderOptions::lenient();
    let dec = Decoder::new_seekable(src, opts.decoder.clone()).expect("decoder");
    record_spans_of(Reader::from_source(dec, opts).expect("reader"))
}

/// Every record's (stored offset, stored length) in `r`.
pub fn record_spans_of<R: std::io::Read>(
    mut r: warchest::archive::Reader<warchest::codec::Decoder<R>>,
) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for _ in 0..100_000 {
        let Some(rec) = r.next_record().expect("record") else {
            return out;
        };
        let offset = rec.location().offset;
        drop(rec);
        let end = r
            .finish_record()
            .expect("finish")
            .and_then(|e| e.stored_len);
        out.push((offset, end.unwrap_or(0)));
    }
    panic!("too many records");
}
