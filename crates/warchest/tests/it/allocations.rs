//! The skip path allocates nothing per record: reading a plain file's
//! records with their blocks skipped (as `ls` does) makes the same number
//! of allocations for 50 records as for 500; so does reading every HTTP
//! head and payload with one [`warchest::http::HeadReader`].

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::Write;

use warchest::archive::Reader;

/// Counts the allocations of the current thread (tests run on threads of
/// their own, so each test sees only its own).
struct Counting;

thread_local! {
    static COUNT: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator unchanged; counting touches a
// const-initialised thread-local `Cell`, which never allocates.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = COUNT.try_with(|c| c.set(c.get() + 1));
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as `alloc`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = COUNT.try_with(|c| c.set(c.get() + 1));
        // SAFETY: as `alloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn allocations() -> u64 {
    COUNT.with(Cell::get)
}

/// A plain file of `n` records of the usual shape (a dozen fields, an
/// HTTP response block).
fn file(n: usize) -> Vec<u8> {
    let mut v = Vec::new();
    for i in 0..n {
        let body = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n{}",
            "x".repeat(i % 3000)
        );
        write!(
            v,
            "WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:{i:08}-0000-4000-8000-000000000000>\r\n\
             WARC-Target-URI: http://example.com/{i}\r\nWARC-Date: 2026-11-25T00:16:14Z\r\n\
             WARC-IP-Address: 127.0.0.1\r\nContent-Type: application/http;msgtype=response\r\n\
             Content-Length: {}\r\n\r\n{body}\r\n\r\n",
            body.len()
        )
        .unwrap();
    }
    v
}

/// Allocations made reading every record of `data` (a file in `dir`),
/// blocks skipped, header fields looked at as `ls` does.
fn count(dir: &std::path::Path, data: &[u8]) -> u64 {
    count_with(dir, data, false)
}

/// [`count`], and with `read` each HTTP head parsed (one reused head) and
/// the payload read.
fn count_with(dir: &std::path::Path, data: &[u8], read: bool) -> u64 {
    let path = dir.join("records.warc");
    std::fs::write(&path, data).unwrap();
    let mut r = Reader::open(&path).unwrap();
    let limits = warchest::Limits::default();
    let mut heads = warchest::http::HeadReader::new();
    let before = allocations();
    let mut n = 0;
    while let Some(mut rec) = r.next_record().unwrap() {
        let h = rec.header();
        assert!(h.target_uri().is_some() && h.content_length().is_some());
        assert!(h.get(warchest::warc::field::DATE).is_some());
        assert!(h.record_type_str().is_some() && h.content_type().is_some());
        if read {
            let mut block = rec.block();
            let head = heads.read(&mut block, &limits).unwrap().expect("a head");
            assert_eq!(head.status(), Some(200));
            let mut sink = [0u8; 4096];
            while std::io::Read::read(&mut block, &mut sink).unwrap() > 0 {}
        }
        rec.finish().unwrap();
        n += 1;
    }
    assert!(r.take_warnings().is_empty());
    assert!(n >= 50);
    allocations() - before
}

#[test]
fn skipping_records_allocates_nothing_per_record() {
    let dir = tempfile::tempdir().unwrap();
    let few = count(dir.path(), &file(50));
    let many = count(dir.path(), &file(500));
    // The header buffer and field spans grow to the largest header once.
    assert!(
        many <= few + 2,
        "50 records: {few} allocations, 500: {many}"
    );
}

#[test]
fn reading_http_heads_into_one_head_allocates_nothing_per_record() {
    let dir = tempfile::tempdir().unwrap();
    let few = count_with(dir.path(), &file(50), true);
    let many = count_with(dir.path(), &file(500), true);
    // The head's buffer, fields and notes grow to the largest head once.
    assert!(
        many <= few + 2,
        "50 records: {few} allocations, 500: {many}"
    );
}
