//! A scan tells what it recovered from ([`ScanNotes`]): the lenient
//! reader's recoveries and the payloads not decoded as their HTTP head
//! says, each with its file and offset.

use std::io::Write;

use warchest::WarningKind;
use warchest::http::PayloadFallback;
use warchest_index::table::{Column, FilesScanner, ScanNotes, ScanOptions, Scanner};

use crate::common;

/// Every batch of `s` read (each must read), then its notes.
fn scan_notes(mut s: Scanner<warchest::codec::Decoder<std::fs::File>>) -> ScanNotes {
    for b in &mut s {
        b.unwrap();
    }
    s.take_notes()
}

fn with(columns: &[Column]) -> ScanOptions {
    let mut o = ScanOptions::default();
    o.columns.extend_from_slice(columns);
    o
}

/// A response record whose block is `head` and `body`.
fn response(uri: &str, head: &str, body: &[u8]) -> Vec<u8> {
    let block = [head.as_bytes(), body].concat();
    let mut v = format!(
        "WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: {uri}\r\n\
         Content-Type: application/http; msgtype=response\r\nContent-Length: {}\r\n\r\n",
        block.len()
    )
    .into_bytes();
    v.extend_from_slice(&block);
    v.extend_from_slice(b"\r\n\r\n");
    v
}

#[test]
fn payloads_given_as_stored_are_noted_with_their_offsets() {
    // pywb's iana.warc.gz stores de-chunked bodies under a chunked header:
    // 25 records with a body (warcio's raw streams, none starting with a
    // chunk size line; `derive text` counts the 16 it reads).
    let iana = common::fixture("pywb/iana.warc.gz");
    let n = scan_notes(Scanner::open(&iana, with(&[Column::Payload])));
    assert!(n.recoveries.is_empty(), "{:?}", n.recoveries);
    assert_eq!(
        n.payload_fallbacks.by_kind(),
        [(PayloadFallback::NotChunked, 25)]
    );
    assert_eq!(n.payload_fallbacks.kept().len(), 25);
    let name = iana.to_string_lossy();
    assert!(n.payload_fallbacks.kept().all(|(f, _)| f == name));
    // A lone `payload_truncated` reads the payloads too.
    let only_flag = scan_notes(Scanner::open(&iana, with(&[Column::PayloadTruncated])));
    assert_eq!(only_flag.payload_fallbacks.total(), 25);
    // Without a payload column no payload is decoded, so none falls back.
    let heads = scan_notes(Scanner::open(&iana, with(&[Column::HttpStatus])));
    assert!(heads.is_empty());
}

#[test]
fn a_bad_content_coding_and_a_cut_body_are_noted_and_a_clean_one_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let gz_head = "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\n";
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&b"clean ".repeat(100)).unwrap();
    let gz = gz.finish().unwrap();
    let mut warc = response("http://a.example/clean", gz_head, &gz);
    let plain_at = warc.len() as u64;
    warc.extend(response(
        "http://a.example/plain",
        gz_head,
        b"not gzip at all",
    ));
    let cut_at = warc.len() as u64;
    warc.extend(response(
        "http://a.example/cut",
        gz_head,
        &gz[..gz.len() - 12],
    ));
    let path = dir.path().join("codings.warc");
    std::fs::write(&path, &warc).unwrap();
    let n = scan_notes(Scanner::open(&path, with(&[Column::Payload])));
    let kept: Vec<(u64, Vec<PayloadFallback>)> = n
        .payload_fallbacks
        .kept()
        .map(|(_, p)| (p.offset, p.fallbacks.iter().collect()))
        .collect();
    assert_eq!(
        kept,
        [
            (plain_at, vec![PayloadFallback::ContentUndecoded]),
            (cut_at, vec![PayloadFallback::CutShort]),
        ]
    );
    assert!(n.recoveries.is_empty());
}

/// A block that should start with an HTTP head and does not: its row's
/// HTTP columns are null, and the scan counts it, at its offset; a scan
/// that reads no HTTP column reads no head and counts none. The chunked
/// scan counts the same.
#[test]
fn rows_whose_http_head_did_not_parse_are_noted() {
    let dir = tempfile::tempdir().unwrap();
    let mut warc = response("http://a.example/ok", "HTTP/1.1 200 OK\r\n\r\n", b"ok");
    let odd_at = warc.len() as u64;
    warc.extend(response("http://a.example/odd", "", b"no HTTP head here"));
    // An empty block has no head to miss.
    warc.extend(response("http://a.example/empty", "", b""));
    let path = dir.path().join("odd.warc");
    std::fs::write(&path, &warc).unwrap();
    let n = scan_notes(Scanner::open(&path, with(&[Column::HttpStatus])));
    let got: Vec<(String, u64)> = n
        .unparsed_heads
        .kept()
        .map(|(f, u)| (f.to_string(), u.offset))
        .collect();
    assert_eq!(got, [(path.to_string_lossy().into_owned(), odd_at)]);
    assert!(n.recoveries.is_empty() && n.payload_fallbacks.is_empty());
    let no_http = ScanOptions {
        columns: vec![Column::WarcTargetUri, Column::WarcRecordOffset],
        ..ScanOptions::default()
    };
    let none = scan_notes(Scanner::open(&path, no_http));
    assert!(none.unparsed_heads.is_empty(), "{none:?}");
    let opts = with(&[Column::HttpStatus, Column::Payload]);
    for chunk in [97, 2048] {
        let mut s =
            warchest_index::table::ChunkedScanner::open(&path, opts.clone(), 3, Some(chunk))
                .expect("a plain file is read in chunks");
        for b in &mut s {
            b.unwrap();
        }
        let n = s.take_notes();
        let got: Vec<u64> = n.unparsed_heads.kept().map(|(_, u)| u.offset).collect();
        assert_eq!(got, [odd_at], "chunks of {chunk}");
    }
}

#[test]
fn the_readers_recoveries_are_noted_per_file_and_taken_once() {
    let dir = tempfile::tempdir().unwrap();
    // Bare LF line ends in the WARC header.
    let body = b"hello";
    let bare = format!(
        "WARC/1.1\nWARC-Type: resource\nWARC-Target-URI: http://b.example/\n\
         Content-Length: {}\n\n",
        body.len()
    );
    let mut warc = bare.into_bytes();
    warc.extend_from_slice(body);
    warc.extend_from_slice(b"\r\n\r\n");
    let bad = dir.path().join("bare.warc");
    std::fs::write(&bad, &warc).unwrap();
    let clean = common::fixture("pywb/example.warc.gz");
    let mut s = FilesScanner::new(
        [clean.clone(), bad.clone(), clean.clone()],
        ScanOptions::default(),
    );
    let mut rows = 0;
    while let Some(b) = s.next_batch().unwrap() {
        rows += b.num_rows();
    }
    assert!(rows > 1);
    let n = s.take_notes();
    assert!(!n.recoveries.is_empty());
    assert!(
        n.recoveries
            .by_kind()
            .iter()
            .any(|(k, _)| *k == WarningKind::BareLf),
        "{:?}",
        n.recoveries.by_kind()
    );
    let files: Vec<&str> = n
        .recoveries
        .by_file()
        .iter()
        .map(|f| f.file.as_str())
        .collect();
    assert_eq!(files, [bad.to_string_lossy()]);
    assert!(s.take_notes().is_empty(), "taken once");
    // The same file, strict: no recovery, an error.
    let strict = ScanOptions {
        reader: warchest::warc::ReaderOptions::strict(),
        ..ScanOptions::default()
    };
    let mut s = Scanner::open(&bad, strict);
    assert!(s.next_batch().is_err());
    assert!(s.take_notes().recoveries.is_empty());
}

#[test]
fn a_split_file_notes_each_recovery_in_one_range() {
    // Records with bare-LF headers, with a space before a colon, and
    // garbage between two of them:
    // ranges of every size give each recovery once, as the whole file.
    let dir = tempfile::tempdir().unwrap();
    let mut warc = Vec::new();
    for i in 0..40 {
        let body = format!("body {i} ").repeat(i % 7 + 1);
        let lf = if i % 3 == 0 { "\n" } else { "\r\n" };
        // A space before a colon: a record the ranges may start with.
        let odd = if i % 3 == 1 { "X-Odd : yes\r\n" } else { "" };
        warc.extend(
            format!(
                "WARC/1.1{lf}WARC-Type: resource{lf}\
                 WARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-{i:012}>{lf}\
                 WARC-Date: 2024-01-01T00:00:00Z{lf}WARC-Target-URI: http://c.example/{i}{lf}\
                 {odd}Content-Length: {}{lf}{lf}{body}\r\n\r\n",
                body.len()
            )
            .into_bytes(),
        );
        if i == 20 {
            warc.extend_from_slice(b"junk between records\r\n");
        }
    }
    let path = dir.path().join("split.warc");
    std::fs::write(&path, &warc).unwrap();
    let whole = scan_notes(Scanner::open(&path, ScanOptions::default()));
    assert!(
        whole.recoveries.total() >= 14,
        "{:?}",
        whole.recoveries.by_kind()
    );
    let offsets = |n: &ScanNotes| -> Vec<(u64, &'static str)> {
        let mut v: Vec<_> = n
            .recoveries
            .kept()
            .map(|(_, w)| (w.offset, w.kind.name()))
            .collect();
        v.sort();
        v
    };
    for size in [100, 333, 1000, 4096] {
        let mut parts = ScanNotes::default();
        for r in warchest::split::plan_file(&path, size).unwrap() {
            parts.append(scan_notes(Scanner::open_range(
                &path,
                r,
                ScanOptions::default(),
            )));
        }
        assert_eq!(offsets(&parts), offsets(&whole), "ranges of {size}");
        assert_eq!(parts.recoveries.by_kind(), whole.recoveries.by_kind());
    }
}

#[test]
fn errors_skipped_are_noted_once_with_their_offset_and_message() {
    // A record cut short, read strictly with skip_errors: its row (no
    // second row for the same error) and one error noted, whatever the
    // columns (a caller whose columns leave `error` out tells it from the
    // notes).
    let dir = tempfile::tempdir().unwrap();
    let mut warc = response("http://a.example/ok", "HTTP/1.1 200 OK\r\n\r\n", b"ok");
    let cut_at = warc.len() as u64;
    let cut = response(
        "http://a.example/cut",
        "HTTP/1.1 200 OK\r\n\r\n",
        b"0123456789",
    );
    warc.extend_from_slice(&cut[..cut.len() - 10]);
    let path = dir.path().join("cut.warc");
    std::fs::write(&path, &warc).unwrap();
    let name = path.to_string_lossy().into_owned();
    let skipping = |columns: Vec<Column>| ScanOptions {
        columns,
        skip_errors: true,
        reader: warchest::warc::ReaderOptions::strict(),
        ..ScanOptions::default()
    };
    for columns in [
        vec![Column::WarcTargetUri],
        vec![Column::WarcTargetUri, Column::Error],
    ] {
        let mut s = Scanner::open(&path, skipping(columns.clone()));
        let rows: usize = (&mut s).map(|b| b.unwrap().num_rows()).sum();
        assert_eq!(rows, 2, "the good record's and the cut one's: {columns:?}");
        let n = s.take_notes();
        let got: Vec<(&str, u64)> = n.failures.kept().map(|(f, e)| (f, e.offset)).collect();
        assert_eq!(got, [(name.as_str(), cut_at)], "{columns:?}");
        let (_, e) = n.failures.kept().next().unwrap();
        assert!(e.message.contains(&name), "{}", e.message);
        let told = warchest_index::table::SkippedError::summary_as(&n.failures, "X").unwrap();
        assert!(
            told.starts_with(&format!(
                "1 error skipped (skip_errors): X; the first: offset {cut_at} "
            )),
            "{told}"
        );
        // The file is the caller's to name, once.
        assert!(!told.contains(&name), "{told}");
        // The chunked scanner notes it the same.
        let mut s = warchest_index::table::ChunkedScanner::open(
            &path,
            skipping(columns.clone()),
            2,
            Some(64),
        )
        .expect("a plain file is read in chunks");
        let rows: usize = (&mut s).map(|b| b.unwrap().num_rows()).sum();
        assert_eq!(rows, 2, "chunked: {columns:?}");
        let got: Vec<u64> = s
            .take_notes()
            .failures
            .kept()
            .map(|(_, e)| e.offset)
            .collect();
        assert_eq!(got, [cut_at]);
    }
    // A file that cannot be opened: its error row at 0, noted.
    let missing = dir.path().join("missing.warc");
    let n = scan_notes(Scanner::open(
        &missing,
        skipping(vec![Column::WarcTargetUri]),
    ));
    assert_eq!(n.failures.total(), 1);
    // Without skip_errors nothing is skipped: the error is the scan's.
    let mut s = Scanner::open(
        &path,
        ScanOptions {
            skip_errors: false,
            ..skipping(vec![Column::WarcTargetUri])
        },
    );
    assert!(s.find(|b| b.is_err()).is_some());
    assert!(s.take_notes().failures.is_empty());
}

/// A whole file in which no record is found (empty, or not an archive)
/// is the scan's error, on one thread and in chunks, as every command
/// refuses it: with skip_errors, its error row and one error noted.
#[test]
fn a_file_with_no_record_is_an_error_not_an_empty_scan() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.warc");
    std::fs::write(&empty, b"").unwrap();
    let junk = dir.path().join("junk.warc");
    std::fs::write(&junk, "not an archive\n".repeat(100)).unwrap();
    for path in [&empty, &junk] {
        let name = path.to_string_lossy().into_owned();
        let said = format!("no WARC, ARC or Web InfoMall record found in {name}");
        let mut s = Scanner::open(path, with(&[Column::WarcTargetUri]));
        let e = s.find_map(|b| b.err()).expect("an error");
        assert!(e.to_string().contains(&said), "{e}");
        let skipping = ScanOptions {
            skip_errors: true,
            ..with(&[Column::WarcTargetUri, Column::Error])
        };
        let mut s = Scanner::open(path, skipping.clone());
        let rows: usize = (&mut s).map(|b| b.unwrap().num_rows()).sum();
        assert_eq!(rows, 1, "{name}");
        assert_eq!(s.take_notes().failures.total(), 1, "{name}");
        let chunked =
            warchest_index::table::ChunkedScanner::open(path, skipping.clone(), 2, Some(64));
        assert_eq!(chunked.is_some(), path == &junk, "{name}");
        if let Some(mut c) = chunked {
            let rows: usize = (&mut c).map(|b| b.unwrap().num_rows()).sum();
            assert_eq!(rows, 1, "chunked {name}");
            assert_eq!(c.take_notes().failures.total(), 1, "chunked {name}");
        }
    }
    // A range of a split file with no record start in it is no error.
    let ok = dir.path().join("ok.warc");
    std::fs::write(
        &ok,
        response("http://a.example/", "HTTP/1.1 200 OK\r\n\r\n", b"ok"),
    )
    .unwrap();
    let mut s = Scanner::open_range(&ok, 10..20, with(&[Column::WarcTargetUri]));
    assert_eq!((&mut s).map(|b| b.unwrap().num_rows()).sum::<usize>(), 0);
}
