//! `ChunkedScanner` (a plain file's record batches built per chunk on
//! several threads) gives the rows of the sequential `Scanner`: same
//! offsets, same error rows, same error, batches within the same bounds.
//! Every plain WARC fixture, every gzip one decompressed, all of them
//! end to end in one file, and a WARC file archived inside a record, each
//! read in tiny chunks so that every crossing is checked.

use std::io::Read;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use warchest::chunks::Trace;
use warchest::warc::ReaderOptions;
use warchest_index::table::{ChunkedScanner, Column, ScanNotes, ScanOptions, Scanner};

use crate::common;

/// The plain bytes of a fixture: gzip decompressed; `None` for other
/// codecs (LZ4, zstd), which are not decompressed here.
fn plain_bytes(path: &Path) -> Option<Vec<u8>> {
    let raw = std::fs::read(path).unwrap();
    if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .unwrap();
        return Some(out);
    }
    let name = path.to_string_lossy();
    (!name.ends_with(".lz4") && !name.ends_with(".zst")).then_some(raw)
}

/// One row a batch, the error that ended the scan, if any, and the
/// batches' sizes.
fn rows(
    batches: &mut dyn Iterator<Item = warchest::Result<RecordBatch>>,
) -> (Vec<RecordBatch>, Option<String>, Vec<usize>) {
    let mut out = Vec::new();
    let mut sizes = Vec::new();
    for b in batches {
        match b {
            Ok(b) => {
                sizes.push(b.num_rows());
                out.extend((0..b.num_rows()).map(|i| b.slice(i, 1)));
            }
            Err(e) => return (out, Some(e.to_string()), sizes),
        }
    }
    (out, None, sizes)
}

fn configs() -> Vec<(&'static str, ScanOptions)> {
    let mut all = ScanOptions {
        skip_errors: true,
        reader: ReaderOptions::lenient(),
        ..ScanOptions::default()
    };
    all.columns
        .extend([Column::Payload, Column::PayloadTruncated]);
    let small = ScanOptions {
        batch_rows: 3,
        batch_bytes: 1500,
        reader: ReaderOptions::lenient(),
        ..all.clone()
    };
    let strict = ScanOptions {
        skip_errors: false,
        reader: ReaderOptions::strict(),
        ..ScanOptions::default()
    };
    let strict_rows = ScanOptions {
        skip_errors: true,
        ..strict.clone()
    };
    vec![
        ("lenient, every column, skip_errors", all),
        ("small batches", small),
        ("strict", strict),
        ("strict, skip_errors", strict_rows),
    ]
}

/// A scan's notes, comparable: each recovery kept (file, offset, kind)
/// and the counts by kind; each payload fallback kept (offset, kinds).
type Noted = (
    Vec<(String, u64, &'static str)>,
    Vec<(&'static str, u64)>,
    Vec<(u64, Vec<&'static str>)>,
    Vec<u64>,
);

fn noted(n: ScanNotes) -> Noted {
    let kept = n
        .recoveries
        .kept()
        .map(|(f, w)| (f.to_string(), w.offset, w.kind.name()))
        .collect();
    let kinds = n
        .recoveries
        .by_kind()
        .iter()
        .map(|(k, c)| (k.name(), *c))
        .collect();
    let payloads = n
        .payload_fallbacks
        .kept()
        .map(|(_, p)| (p.offset, p.fallbacks.iter().map(|f| f.name()).collect()))
        .collect();
    let unparsed = n.unparsed_heads.kept().map(|(_, u)| u.offset).collect();
    (kept, kinds, payloads, unparsed)
}

/// Compares both scans of `path` in every config and chunk size, their
/// rows and their notes (recoveries, payload fallbacks, heads that did
/// not parse); the chunked
/// reads' traces, summed (`None`: not read in chunks), and whether any
/// scan noted anything.
fn compare(path: &Path) -> (Option<Trace>, bool) {
    let mut chunked: Option<Trace> = None;
    let mut any_notes = false;
    for (what, opts) in configs() {
        let mut seq = Scanner::open(path, opts.clone());
        let (want, want_err, _) = rows(&mut seq);
        let want_notes = noted(seq.take_notes());
        any_notes |= want_notes != Noted::default();
        for chunk in [97, 2048] {
            let Some(mut s) = ChunkedScanner::open(path, opts.clone(), 3, Some(chunk)) else {
                continue;
            };
            let (got, got_err, sizes) = rows(&mut s);
            if want_err.is_none() {
                let t = s.trace().expect("a trace at the end");
                let sum = chunked.get_or_insert_with(Trace::default);
                sum.chunks += t.chunks;
                sum.used += t.used;
                sum.false_starts += t.false_starts;
                sum.sequential_runs += t.sequential_runs;
            }
            let at = format!("{} ({what}, chunks of {chunk})", path.display());
            assert_eq!(got_err, want_err, "{at}");
            if want_err.is_none() {
                assert_eq!(got.len(), want.len(), "{at}");
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(g, w, "{at}: row {i}");
                }
                assert_eq!(noted(s.take_notes()), want_notes, "{at}: notes");
            }
            assert!(
                sizes.iter().all(|&n| n >= 1 && n <= opts.batch_rows),
                "{at}: {sizes:?}"
            );
        }
    }
    (chunked, any_notes)
}

/// A resource record of `body`.
fn record(n: usize, body: &[u8]) -> Vec<u8> {
    let mut v = format!(
        "WARC/1.1\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-{n:012}>\r\n\
         WARC-Target-URI: http://example.com/{n}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    v.extend_from_slice(body);
    v.extend_from_slice(b"\r\n\r\n");
    v
}

#[test]
fn chunked_scan_gives_the_sequential_rows_on_every_fixture() {
    let dir = tempfile::tempdir().unwrap();
    let mut files: Vec<PathBuf> = Vec::new();
    let mut all = Vec::new();
    for (i, f) in common::warc_fixtures().iter().enumerate() {
        let Some(bytes) = plain_bytes(f) else {
            continue;
        };
        all.extend_from_slice(&bytes);
        if f.to_string_lossy().ends_with(".warc") {
            files.push(f.clone());
        } else {
            let p = dir.path().join(format!(
                "{i}-{}.warc",
                f.file_name().unwrap().to_string_lossy()
            ));
            std::fs::write(&p, &bytes).unwrap();
            files.push(p);
        }
    }
    let joined = dir.path().join("all.warc");
    std::fs::write(&joined, &all).unwrap();
    files.push(joined);
    // A WARC file inside a record: candidates that are no record start.
    let inner: Vec<u8> = (100..130)
        .flat_map(|n| record(n, format!("inner {n}").as_bytes()))
        .collect();
    let mut nested: Vec<u8> = (0..5).flat_map(|n| record(n, b"outer")).collect();
    nested.extend(record(5, &inner));
    nested.extend((6..10).flat_map(|n| record(n, b"outer")));
    let nested_path = dir.path().join("nested.warc");
    std::fs::write(&nested_path, &nested).unwrap();
    files.push(nested_path);

    let mut read = 0;
    let mut noting = 0;
    let mut total = Trace::default();
    for f in &files {
        let (trace, notes) = compare(f);
        noting += usize::from(notes);
        if let Some(t) = trace {
            read += 1;
            total.used += t.used;
            total.sequential_runs += t.sequential_runs;
            if f.ends_with("nested.warc") {
                // Verified chunks pass over the inner file's record starts.
                assert!(t.false_starts > 0 && t.used > 0, "{t:?}");
            }
            if f.ends_with("all.warc") {
                // Used chunks, and damage read sequentially.
                assert!(t.used > 100 && t.sequential_runs > 0, "{t:?}");
            }
        }
    }
    // Every WARC file is planned in chunks (none is compressed now).
    assert_eq!(read, files.len(), "files read in chunks");
    assert!(total.used > 0 && total.sequential_runs > 0, "{total:?}");
    // Damaged fixtures and iana's chunked header on de-chunked bodies:
    // notes to compare.
    assert!(noting >= 3, "{noting} files with notes");
}

#[test]
fn one_thread_or_a_compressed_file_is_not_chunked() {
    let gz = common::fixture("pywb/example.warc.gz");
    assert!(ChunkedScanner::open(&gz, ScanOptions::default(), 4, Some(100)).is_none());
    let plain = common::fixture("pywb/example.warc");
    assert!(ChunkedScanner::open(&plain, ScanOptions::default(), 1, Some(100)).is_none());
    assert!(ChunkedScanner::open(&plain, ScanOptions::default(), 2, Some(100)).is_some());
}

#[test]
fn a_worker_reads_its_whole_chunk_and_batches_stay_bounded_by_bytes() {
    // Chunks of 64 KiB, batches of 8 KiB: before, a worker's chunk
    // stopped at `batch_bytes` and the merging thread read the rest of
    // every chunk itself, in order.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("clean.warc");
    let data: Vec<u8> = (0..300)
        .flat_map(|n| record(n, &vec![b'a' + (n % 26) as u8; 500 + (n * 37) % 4000]))
        .collect();
    std::fs::write(&path, &data).unwrap();
    let mut opts = ScanOptions {
        batch_bytes: 8 << 10,
        ..ScanOptions::default()
    };
    opts.columns.push(Column::Payload);
    let (want, want_err, _) = rows(&mut Scanner::open(&path, opts.clone()));
    assert_eq!(want_err, None);
    assert_eq!(want.len(), 300);
    let mut s = ChunkedScanner::open(&path, opts.clone(), 2, Some(64 << 10)).unwrap();
    let batches: Vec<RecordBatch> = s.by_ref().map(|b| b.unwrap()).collect();
    let t = s.trace().unwrap();
    assert!(t.chunks > 10, "{t:?}");
    assert_eq!((t.sequential_runs, t.sequential_records), (0, 0), "{t:?}");
    assert_eq!(t.used, t.chunks, "{t:?}");
    // The same rows in the same order as one thread's.
    let got: Vec<RecordBatch> = batches
        .iter()
        .flat_map(|b| (0..b.num_rows()).map(|i| b.slice(i, 1)))
        .collect();
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "row {i}");
    }
    // Batches end at `batch_bytes` (a row that would pass it starts the
    // next) and where chunks do: several a chunk.
    let payload = |b: &RecordBatch| {
        b.column_by_name("payload")
            .unwrap()
            .as_any()
            .downcast_ref::<arrow_array::BinaryArray>()
            .unwrap()
            .value_data()
            .len()
    };
    for b in &batches {
        assert!(
            b.num_rows() == 1 || payload(b) <= opts.batch_bytes,
            "{} rows, {} payload bytes",
            b.num_rows(),
            payload(b)
        );
    }
    assert!(batches.len() > 2 * t.chunks, "{} batches", batches.len());
}
