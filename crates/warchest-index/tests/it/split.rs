//! Byte-range splits: the resync point after payloads that hold false
//! record starts, and, for every uncompressed WARC fixture and many splits,
//! the ranges together give exactly the records of a whole-file read.

use crate::common;

use std::fs::File;
use std::io::{self, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

use arrow_array::Array;
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use proptest::prelude::*;
use warchest::WarningKind as W;
use warchest::archive::{Format, Reader};
use warchest::split::{self, CHAIN, bounds, find_record_start};
use warchest::warc::{ReaderOptions, RecordType};
use warchest::write::{Body, Compression, NewRecord, Writer, WriterOptions};
use warchest_index::table::{Column, FilesScanner, Part, ScanOptions};

type Row = (u64, Option<String>);

/// (offset, record id) of every record of a whole-file read.
fn whole(path: &Path) -> Vec<Row> {
    whole_and_framing(path).0
}

/// The records of a whole-file read, and whether the reader met no
/// framing damage (then every record start is a boundary).
fn whole_and_framing(path: &Path) -> (Vec<Row>, bool) {
    let mut r = Reader::open(path).unwrap();
    let mut out = Vec::new();
    while let Some(rec) = r.next_record().unwrap() {
        out.push((
            rec.location().offset,
            rec.header().record_id().map(|s| s.into_owned()),
        ));
    }
    let framed = r.take_warnings().iter().all(|w| {
        !matches!(
            w.kind,
            W::BadTrailer
                | W::SkippedBytes
                | W::TrailingGarbage
                | W::TruncatedRecord
                | W::BadContentLength
                | W::LineWithoutColon
                | W::UnknownVersion
                | W::Grammar
        )
    });
    (out, framed)
}

/// The rows of a scan of `parts`, in order.
fn scan(parts: Vec<Part>) -> Vec<Row> {
    let opts = ScanOptions {
        columns: vec![Column::WarcRecordOffset, Column::WarcRecordId],
        ..ScanOptions::default()
    };
    let mut out = Vec::new();
    for b in FilesScanner::from_parts(parts, opts) {
        let b = b.unwrap();
        let offsets = b.column(0).as_primitive::<Int64Type>();
        let ids = b.column(1).as_string::<i32>();
        for i in 0..b.num_rows() {
            let id = (!ids.is_null(i)).then(|| ids.value(i).to_string());
            out.push((offsets.value(i) as u64, id));
        }
    }
    out
}

fn parts(path: &Path, ranges: &[Range<u64>]) -> Vec<Part> {
    ranges
        .iter()
        .map(|r| Part {
            path: path.to_path_buf(),
            range: Some(r.clone()),
        })
        .collect()
}

/// The ranges between sorted cut points.
fn cut(len: u64, cuts: &[u64]) -> Vec<Range<u64>> {
    let mut c: Vec<u64> = cuts.iter().copied().filter(|&x| x > 0 && x < len).collect();
    c.sort_unstable();
    c.dedup();
    let mut v = Vec::new();
    let mut at = 0;
    for x in c {
        v.push(at..x);
        at = x;
    }
    v.push(at..len);
    v
}

/// Checks the record boundaries every range gives (cheap: no records
/// read) against the whole-file offsets: each range starts at the first
/// record at or after its start and stops at the first at or after its
/// end.
fn check_bounds(path: &Path, offsets: &[u64], ranges: &[Range<u64>]) {
    let mut f = File::open(path).unwrap();
    let format = split::sniff_format(&mut f).unwrap();
    let opts = ReaderOptions::default();
    let first_at = |x: u64| offsets.iter().copied().find(|&o| o >= x);
    for r in ranges {
        let got = bounds(&mut f, format, r.clone(), &opts).unwrap();
        let begin = if r.start == 0 {
            Some(0)
        } else {
            first_at(r.start)
        };
        let stop = first_at(r.end).unwrap_or(u64::MAX);
        let want = begin.filter(|&b| b < stop && b < r.end).map(|b| b..stop);
        assert_eq!(got, want, "{}: range {r:?}", path.display());
    }
}

fn check_split(path: &Path, want: &[Row], ranges: &[Range<u64>]) {
    let got = scan(parts(path, ranges));
    assert_eq!(
        got,
        want,
        "{}: {} ranges, the first {:?}",
        path.display(),
        ranges.len(),
        ranges.first()
    );
}

/// Every kind of split this test makes of a file. The ranges always give
/// the whole file's records; in a file without framing damage each range
/// also begins and stops exactly at the first record at or after its ends.
fn check_file(path: &Path) {
    let (want, framed) = whole_and_framing(path);
    let len = std::fs::metadata(path).unwrap().len();
    let offsets: Vec<u64> = want.iter().map(|r| r.0).collect();
    assert_eq!(
        scan(parts(path, &split::plan(len, 0))),
        want,
        "{}",
        path.display()
    );
    // Cuts at every record boundary and one byte either side, at once.
    let around: Vec<u64> = offsets
        .iter()
        .flat_map(|&o| [o.saturating_sub(1), o, o + 1])
        .collect();
    let ranges = cut(len, &around);
    if framed {
        check_bounds(path, &offsets, &ranges);
    }
    check_split(path, &want, &ranges);
    // Sizes that give at most a few thousand ranges (the large fixtures
    // would give millions of tiny ones).
    for size in [2, 3, 7, 64, 500, 4096, 65536, len / 2 + 1, len / 3 + 1] {
        if len / size.max(1) > 3000 {
            continue;
        }
        let ranges = split::plan(len, size);
        check_split(path, &want, &ranges);
    }
    // One-byte ranges: their bounds, and their records on small files.
    if len <= 64 << 10 {
        let ones = split::plan(len, 1);
        if framed {
            check_bounds(path, &offsets, &ones);
        }
        if len <= 8 << 10 {
            check_split(path, &want, &ones);
        }
    }
}

fn writer(out: &mut Vec<u8>) -> Writer<&mut Vec<u8>> {
    let opts = WriterOptions {
        compression: Compression::None,
        ..WriterOptions::default()
    };
    Writer::new(out, opts).unwrap()
}

fn resource(w: &mut Writer<&mut Vec<u8>>, uri: &str, ctype: &str, body: &[u8]) {
    let mut rec = NewRecord::new(RecordType::Resource);
    rec.set("WARC-Target-URI", uri)
        .unwrap()
        .set("Content-Type", ctype)
        .unwrap();
    w.write(&mut rec, Body::Bytes(body)).unwrap();
}

/// An uncompressed WARC file of `n` small resource records.
fn small_warc(n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut w = writer(&mut out);
    for i in 0..n {
        let body = format!("archived record {i}\r\n");
        resource(
            &mut w,
            &format!("http://inner.example/{i}"),
            "text/plain",
            body.as_bytes(),
        );
    }
    w.finish().unwrap();
    out
}

/// A file whose payloads hold lines that read like record starts: plain
/// `WARC/1.0` lines, a whole record that frames but is followed by text,
/// and archived WARC files of more records than a short chain checks (one
/// of them in the last record, where only the file's end follows).
fn tricky_file(dir: &Path) -> PathBuf {
    let mut out = Vec::new();
    let mut w = writer(&mut out);
    let mut info = NewRecord::new(RecordType::Warcinfo);
    info.set("Content-Type", "application/warc-fields").unwrap();
    w.write(&mut info, Body::Bytes(b"software: warchest tests\r\n"))
        .unwrap();
    let text = b"A note about the format.\r\nWARC/1.0\r\nWARC/1.1\r\nwarc/1.0\r\n\r\nWARC/1.0\nWARC-Type: resource\n\n\
WARC/1.0\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-000000000000>\r\nContent-Length: 5\r\n\r\nhello\r\n\r\nand text after it\r\nWARC/1.0\r\n";
    resource(&mut w, "http://a.example/notes.txt", "text/plain", text);
    let archived = small_warc(CHAIN / 2 + 2);
    resource(
        &mut w,
        "http://a.example/old.warc",
        "application/warc",
        &archived,
    );
    for i in 0..3 {
        resource(
            &mut w,
            &format!("http://a.example/{i}"),
            "text/plain",
            format!("WARC/1.{i}\r\n").repeat(i + 1).as_bytes(),
        );
    }
    // Longer than any chain: the rule is fooled here (see the test).
    let long = small_warc(CHAIN + 3);
    resource(
        &mut w,
        "http://a.example/long.warc",
        "application/warc",
        &long,
    );
    resource(&mut w, "http://a.example/after", "text/plain", b"after\r\n");
    resource(
        &mut w,
        "http://a.example/last.warc",
        "application/warc",
        &archived,
    );
    w.finish().unwrap();
    let path = dir.join("tricky.warc");
    std::fs::write(&path, &out).unwrap();
    path
}

#[test]
fn resync_skips_false_record_starts_in_payloads() {
    let dir = tempfile::tempdir().unwrap();
    let path = tricky_file(dir.path());
    let want = whole(&path);
    assert_eq!(want.len(), 9);
    let offsets: Vec<u64> = want.iter().map(|r| r.0).collect();
    let len = std::fs::metadata(&path).unwrap().len();
    // The archived file of CHAIN + 3 records: its first three records are
    // followed by a full chain inside it, so they confirm. This is the
    // documented limit; the ranges stay consistent (no record is lost),
    // but archived records after a cut before them are read as records.
    let long_rec = 6;
    let (long_start, long_end) = (offsets[long_rec], offsets[long_rec + 1]);
    let long = small_warc(CHAIN + 3);
    let payload_start = long_end - 4 - long.len() as u64;
    let mut inner = Vec::new();
    let mut r = Reader::new(&long[..]).unwrap();
    while let Some(rec) = r.next_record().unwrap() {
        inner.push(payload_start + rec.location().offset);
    }
    assert_eq!(inner.len(), CHAIN + 3);
    let fooled = &inner[..3];
    let mut f = File::open(&path).unwrap();
    let opts = ReaderOptions::default();
    for x in 0..=len {
        let got = find_record_start(&mut f, Format::Warc, x, u64::MAX, &opts).unwrap();
        let mut want = offsets.iter().copied().find(|&o| o >= x);
        if x > long_start && x <= fooled[2] {
            want = fooled.iter().copied().find(|&o| o >= x);
        }
        assert_eq!(got, want, "from {x}");
    }
    // Splits that avoid the long record give exactly the whole-file rows.
    let mut cuts: Vec<u64> = offsets[..long_rec]
        .iter()
        .flat_map(|&o| [o.saturating_sub(1), o, o + 1])
        .collect();
    cuts.extend((long_end..len).step_by(13));
    check_split(&path, &want, &cut(len, &cuts));
}

#[test]
fn compressed_files_are_read_whole_by_the_range_at_zero() {
    let dir = tempfile::tempdir().unwrap();
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out, WriterOptions::default()).unwrap();
    resource(&mut w, "http://a.example/", "text/plain", b"WARC/1.0\r\n");
    resource(&mut w, "http://b.example/", "text/plain", b"b");
    w.finish().unwrap();
    let path = dir.path().join("plain-name.warc");
    std::fs::write(&path, &out).unwrap();
    let len = out.len() as u64;
    assert_eq!(split::plan_file(&path, 10).unwrap(), vec![0..len]);
    let want = whole(&path);
    assert_eq!(want.len(), 2);
    assert_eq!(scan(parts(&path, &[0..10, 10..len])), want);
    assert_eq!(scan(parts(&path, &[5..len, len..len])), vec![]);
}

#[test]
fn uncompressed_files_are_planned_in_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("small.warc.gz");
    std::fs::write(&path, small_warc(4)).unwrap();
    let len = std::fs::metadata(&path).unwrap().len();
    let plan = split::plan_file(&path, 100).unwrap();
    assert_eq!(plan.len() as u64, len.div_ceil(100));
    assert_eq!(split::plan_file(&path, 0).unwrap(), vec![0..len]);
    check_file(&path);
}

/// `path`, or a decompressed copy of it in `dir` for gzipped files.
fn plain_copy(path: &Path, dir: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    if !name.ends_with(".gz") {
        return Some(path.to_path_buf());
    }
    let mut d = flate2::read::MultiGzDecoder::new(File::open(path).ok()?);
    let mut bytes = Vec::new();
    io::Read::read_to_end(&mut d, &mut bytes).ok()?;
    let out = dir.join(name.trim_end_matches(".gz"));
    File::create(&out).unwrap().write_all(&bytes).unwrap();
    Some(out)
}

#[test]
fn every_uncompressed_warc_fixture_splits_into_the_whole() {
    let dir = tempfile::tempdir().unwrap();
    let files = common::fixture_files(&[".warc", ".warc.gz"]);
    let mut done = 0;
    let mut failed = Vec::new();
    for f in &files {
        let Some(plain) = plain_copy(f, dir.path()) else {
            continue;
        };
        if std::panic::catch_unwind(|| check_file(&plain)).is_err() {
            failed.push(plain);
        }
        done += 1;
    }
    assert!(failed.is_empty(), "{failed:#?}");
    assert!(done >= 40, "{done} files");
}

#[test]
fn arc_and_infomall_fixtures_split_too() {
    for f in common::fixture_files(&[".arc", ".dat"]) {
        if f.to_string_lossy().contains("bad") || f.to_string_lossy().contains("invalid") {
            continue;
        }
        check_file(&f);
    }
}

fn generated(payloads: &[(u8, usize)]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut w = writer(&mut out);
    for (i, &(kind, n)) in payloads.iter().enumerate() {
        let body: Vec<u8> = match kind % 4 {
            0 => vec![b'x'; n],
            1 => b"WARC/1.0\r\n".repeat(n % 7 + 1),
            2 => small_warc(n % 3 + 1),
            _ => format!("line\r\nWARC/1.1\r\nContent-Length: {n}\r\n\r\n").into_bytes(),
        };
        resource(
            &mut w,
            &format!("http://p.example/{i}"),
            "text/plain",
            &body,
        );
    }
    w.finish().unwrap();
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn any_split_gives_every_record_once(
        payloads in proptest::collection::vec((any::<u8>(), 0usize..300), 1..12),
        cuts in proptest::collection::vec(any::<u64>(), 0..12),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gen.warc");
        let data = generated(&payloads);
        std::fs::write(&path, &data).unwrap();
        let len = data.len() as u64;
        let want = whole(&path);
        prop_assert_eq!(want.len(), payloads.len());
        let cuts: Vec<u64> = cuts.iter().map(|c| c % len.max(1)).collect();
        let ranges = cut(len, &cuts);
        prop_assert_eq!(scan(parts(&path, &ranges)), want);
    }
}
