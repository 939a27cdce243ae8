//! Every input the fuzzers found a fault with (fuzz/regressions/TARGET/),
//! replayed as its target does, each within a time limit and with bounded
//! warnings: the faults stay fixed.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use warchest::archive::{Format, Reader};
use warchest::check::check_record;
use warchest::codec::Decoder;
use warchest::warc::ReaderOptions;

/// Warnings a reader may give for one fuzz input (64 KiB at most): more
/// means a loop that warns without reading on.
const MAX_WARNINGS: usize = 100_000;

fn inputs(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/regressions")
        .join(target);
    let mut v: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(d) => d.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    };
    v.sort();
    v
}

/// Runs `f` on each input of `target` on a thread, failing after `limit`.
fn replay(target: &str, limit: Duration, f: fn(&[u8])) {
    for p in inputs(target) {
        let data = std::fs::read(&p).unwrap();
        let (tx, rx) = mpsc::channel();
        let t = std::thread::spawn(move || {
            f(&data);
            let _ = tx.send(());
        });
        match rx.recv_timeout(limit) {
            Ok(()) => t.join().unwrap(),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                if let Err(e) = t.join() {
                    panic!("{}: {e:?}", p.display());
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("{}: no end after {limit:?}", p.display())
            }
        }
    }
}

fn read_records(data: &[u8], format: Option<Format>) {
    for opts in [ReaderOptions::lenient(), ReaderOptions::strict()] {
        let mut r = match format {
            Some(f) => {
                let src = Decoder::new(data, opts.decoder.clone());
                Reader::from_source_as(src, opts, f)
            }
            None => match Reader::with_options(data, opts) {
                Ok(r) => r,
                Err(_) => continue,
            },
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
    assert!(!inputs("warc_reader").is_empty());
    replay("warc_reader", Duration::from_secs(30), |d| {
        read_records(d, None)
    });
}

#[test]
fn arc_reader() {
    replay("arc_reader", Duration::from_secs(30), |d| {
        read_records(d, Some(Format::Arc))
    });
}

#[test]
fn infomall_reader() {
    replay("infomall_reader", Duration::from_secs(30), |d| {
        read_records(d, Some(Format::InfoMall))
    });
}

#[test]
fn validate() {
    assert!(!inputs("validate").is_empty());
    replay("validate", Duration::from_secs(30), |d| {
        let mut v = warchest::validate::Validator::new(Default::default());
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
    assert!(!inputs("index").is_empty());
    replay("index", Duration::from_secs(30), |d| {
        let Ok(mut r) = Reader::new(d) else { return };
        let ix = warchest::index::Indexer::new("fuzz.warc", Default::default());
        let _ = ix.index(&mut r, |_| Ok(()));
    });
}
