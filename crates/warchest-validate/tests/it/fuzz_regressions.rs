//! Every input the fuzzers found a fault with (fuzz/regressions/TARGET/),
//! replayed as its target does, each within a time limit and with bounded
//! warnings: the faults stay fixed. Each target of the crates this test
//! depends on has a test here when it has a regressions folder (the ARC
//! and Web InfoMall reader targets have found no fault yet, so they have
//! none); `capture_wire`'s and `crawl_journal`'s inputs are replayed
//! through their targets' checks by the `fuzz_regressions` tests of
//! warchest-capture and warchest-crawl (docs/testing.md, "Fuzzing").

use std::time::Duration;

use warchest::archive::Reader;
use warchest::check::check_record;
use warchest::warc::ReaderOptions;

use crate::fuzz_replay::replay;

/// Warnings a reader may give for one fuzz input (64 KiB at most): more
/// means a loop that warns without reading on.
const MAX_WARNINGS: usize = 100_000;

fn read_records(data: &[u8]) {
    for opts in [ReaderOptions::lenient(), ReaderOptions::strict()] {
        let Ok(mut r) = Reader::with_options(data, opts) else {
            continue;
        };
        let mut warnings = 0;
        while let Ok(Some(mut rec)) = r.next_record() {
            let _ = check_record(&mut rec, &Default::default());
            let _ = rec.finish();
            warnings += r.take_warnings().len();
            assert!(warnings < MAX_WARNINGS, "warnings without end");
        }
        warnings += r.take_warnings().len();
        assert!(warnings < MAX_WARNINGS, "warnings without end");
    }
}

#[test]
fn warc_reader() {
    replay("warc_reader", Duration::from_secs(30), read_records);
}

#[test]
fn validate() {
    replay("validate", Duration::from_secs(30), |d| {
        let mut v = warchest_validate::Validator::new(Default::default());
        let _ = v.validate_reader("fuzz.warc", d, &mut |_| {});
        let _ = v.finish(&mut |_| {});
    });
}

#[test]
fn content_type_cut_inside_a_character() {
    // What the validate fuzzer found: a Content-Type whose 16th byte is
    // inside a character.
    let rec = "WARC/1.1\r\nWARC-Type: response\r\nContent-Type: application/htt\u{e9}p\r\nContent-Length: 0\r\n\r\n\r\n\r\n";
    let mut r = Reader::new(rec.as_bytes()).unwrap();
    let rec = r.next_record().unwrap().unwrap();
    assert!(!rec.header().is_http());
}

#[test]
fn index() {
    replay("index", Duration::from_secs(30), |d| {
        let Ok(mut r) = Reader::new(d) else { return };
        let ix = warchest_index::Indexer::new("fuzz.warc", Default::default());
        let _ = ix.index(&mut r, |_| Ok(()));
    });
}
