//! Reading over HTTP(S) with ranges, through faults: retried where they
//! can be, reported with URL and offset where not, never silently shorter.

use std::io::Read;

use warchest_remote::{Location, RemoteFile};

use crate::servers::RangeServer;
use crate::{fixture, quick, record_spans};

/// A directory with the fixtures the tests read, copied for the server
/// (the server serves a directory; the fixtures stay where they are).
fn served() -> (tempfile::TempDir, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let data = std::fs::read(fixture("warcio/example.warc.gz")).unwrap();
    std::fs::write(dir.path().join("example.warc.gz"), &data).unwrap();
    (dir, data)
}

fn read_all(url: &str, opts: warchest_remote::Options) -> std::io::Result<Vec<u8>> {
    let loc = Location::parse_with(url, &opts)?;
    let mut f = RemoteFile::open(loc, opts)?;
    let mut out = Vec::new();
    f.read_to_end(&mut out)?;
    Ok(out)
}

#[test]
fn reads_whole_and_by_record_like_the_local_file() {
    let (dir, data) = served();
    let srv = RangeServer::start(dir.path(), 5.0);
    let url = srv.url("example.warc.gz");
    let tiny = warchest_remote::Options {
        min_chunk: 512,
        chunk: 2048,
        ..quick()
    };
    assert_eq!(read_all(&url, tiny).unwrap(), data);
    let (gets, heads) = srv.count();
    assert_eq!(heads, 1);
    // 512 bytes, then 1 KiB, then 2 KiB ranges: a few ranges, not one per
    // read call, and the ranges grow.
    assert!(
        (3..=4).contains(&gets),
        "{gets} GETs for {} bytes",
        data.len()
    );
    let opts = quick();
    let remote = RemoteFile::open(Location::parse_with(&url, &opts).unwrap(), opts).unwrap();
    let local = std::fs::File::open(fixture("warcio/example.warc.gz")).unwrap();
    let spans = record_spans(remote);
    assert!(!spans.is_empty());
    assert_eq!(spans, record_spans(local));
}

#[test]
fn get_range_is_one_request() {
    let (dir, data) = served();
    let srv = RangeServer::start(dir.path(), 5.0);
    let opts = quick();
    let loc = Location::parse_with(&srv.url("example.warc.gz"), &opts).unwrap();
    let got = warchest_remote::get_range_with(&loc, &opts, 100, 900).unwrap();
    assert_eq!(&got[..], &data[100..1000]);
    assert_eq!(srv.count(), (1, 0));
}

#[test]
fn faults_are_retried() {
    let (dir, data) = served();
    let srv = RangeServer::start(dir.path(), 4.0);
    // Each kind of fault on the first GET, then the read must still be whole.
    for fault in ["500", "503", "reset", "short", "stall"] {
        srv.faults(&[fault, fault]);
        let got = read_all(&srv.url("example.warc.gz"), quick())
            .unwrap_or_else(|e| panic!("{fault}: {e}"));
        assert!(
            got == data,
            "{fault}: {} bytes of {}",
            got.len(),
            data.len()
        );
    }
    // One range, streamed, through a reset mid-body.
    srv.faults(&["reset"]);
    let opts = quick();
    let loc = Location::parse_with(&srv.url("example.warc.gz"), &opts).unwrap();
    let mut r = warchest_remote::RangeReader::new(loc, opts, 10, 3000);
    let mut got = Vec::new();
    r.read_to_end(&mut got).unwrap();
    assert_eq!(got, &data[10..3010]);
}

#[test]
fn spent_budget_names_url_and_offset() {
    let (dir, _) = served();
    let srv = RangeServer::start(dir.path(), 5.0);
    let url = srv.url("example.warc.gz");
    srv.faults(&["503"; 10]);
    let e = read_all(&url, quick()).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains(&url) && msg.contains("at byte 0"), "{msg}");
    assert!(msg.contains("retry budget spent: 3 retries"), "{msg}");
    // A missing object is not retried.
    srv.reset_count();
    let e = read_all(&srv.url("nothing.warc"), quick()).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{e}");
    assert_eq!(srv.count(), (0, 1));
}

#[test]
fn cut_object_is_an_error_not_a_shorter_archive() {
    let (dir, data) = served();
    let srv = RangeServer::start(dir.path(), 5.0);
    let url = srv.url("example.warc.gz");
    let cut = data.len() as u64 / 2;
    srv.cut("example.warc.gz", cut);
    let e = read_all(&url, quick()).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains(&url), "{msg}");
    // The offset named is where the bytes stopped coming.
    assert!(msg.contains(&format!("at byte {cut}")), "{msg}");
    // The record reader sees the error too, not an end of file.
    let opts = quick();
    let remote = RemoteFile::open(Location::parse_with(&url, &opts).unwrap(), opts).unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| record_spans(remote)));
    assert!(r.is_err(), "a cut object read as complete");
}
