//! Every WARC fixture read end to end: record counts, digests verified, and
//! the lenient recoveries each malformed file needs, asserted exactly.

use crate::common;

use std::collections::BTreeSet;
use std::io::Read;

use warchest::WarningKind as W;
use warchest::archive::Reader;
use warchest::check::{DigestStatus, check_record};
use warchest::warc::ReaderOptions;
use warchest::write::{Compression, Writer, WriterOptions};

struct Expect {
    file: &'static str,
    records: usize,
    /// Records whose block / payload digest is wrong or unreadable.
    bad_block: usize,
    bad_payload: usize,
    /// Payload digests that match the raw chunked bytes (a writer convention).
    raw_chunked: usize,
    warnings: &'static [W],
}

const fn e(
    file: &'static str,
    records: usize,
    bad_block: usize,
    bad_payload: usize,
    raw_chunked: usize,
    warnings: &'static [W],
) -> Expect {
    Expect {
        file,
        records,
        bad_block,
        bad_payload,
        raw_chunked,
        warnings,
    }
}

/// Files with something to say; every other WARC fixture must read with no
/// warning and no bad digest.
const EXPECT: &[Expect] = &[
    // JWAT's invalid files: each breaks the rule its name says.
    e(
        "jwat/invalid-warcfile-contenttype-recommended.warc",
        7,
        0,
        2,
        0,
        &[],
    ),
    // All four records carry digests that do not match their blocks.
    e("jwat/invalid-warcfile-digest-fields.warc", 4, 4, 4, 0, &[]),
    // Empty Content-Length, digests: the block cannot be framed.
    e(
        "jwat/invalid-warcfile-fields-empty.warc",
        1,
        1,
        0,
        0,
        &[W::BadContentLength, W::BadTrailer, W::TrailingGarbage],
    ),
    e(
        "jwat/invalid-warcfile-fields-invalidformat.warc",
        1,
        1,
        0,
        0,
        &[W::BadContentLength, W::BadTrailer, W::TrailingGarbage],
    ),
    e(
        "jwat/invalid-warcfile-fields-missing.warc",
        1,
        1,
        1,
        0,
        &[W::BadContentLength, W::BadTrailer],
    ),
    e(
        "jwat/invalid-warcfile-lonely-continuation.warc",
        1,
        0,
        0,
        0,
        &[W::BadContentLength],
    ),
    // Header lines end in LF only.
    e(
        "jwat/invalid-warcfile-lonely-monkeys.warc",
        1,
        0,
        0,
        0,
        &[W::BadContentLength, W::BadTrailer, W::BareLf],
    ),
    e(
        "jwat/invalid-warcfile-lonely-request-response-resource-conversion.warc",
        4,
        0,
        0,
        0,
        &[W::BadContentLength],
    ),
    e(
        "jwat/invalid-warcfile-lonely-revisit.warc",
        1,
        0,
        0,
        0,
        &[W::BadContentLength],
    ),
    e(
        "jwat/invalid-warcfile-lonely-warcinfo-metadata.warc",
        2,
        0,
        0,
        0,
        &[W::BadContentLength],
    ),
    e(
        "jwat/invalid-warcfile-record-then-garbage.warc",
        1,
        0,
        0,
        0,
        &[W::BadTrailer, W::TrailingGarbage],
    ),
    e("jwat/valid-warcfile-upper-lower-case.warc", 5, 0, 0, 0, &[]),
    // Whole-file gzip: every record after the first is inside the one member.
    e(
        "pywb/example-bad.warc.gz.bad",
        6,
        0,
        0,
        0,
        &[W::NotRecordAtATime],
    ),
    e(
        "warcio/example-bad.warc.gz.bad",
        6,
        0,
        0,
        0,
        &[W::NotRecordAtATime],
    ),
    // Whole-file gzip, and the record at 3370 has a wrong block digest.
    e(
        "warcio/example-bad-non-chunked.warc.gz",
        6,
        1,
        0,
        0,
        &[W::NotRecordAtATime],
    ),
    // Records followed by one CRLF or by LF CR LF CR instead of CRLF CRLF.
    e("pywb/example-extra.warc", 6, 0, 1, 0, &[W::BadTrailer]),
    // The revisit's block has no trailer at all.
    e(
        "pywb/example-url-agnostic-orig.warc.gz",
        2,
        0,
        0,
        0,
        &[W::BadTrailer],
    ),
    e(
        "pywb/example-url-agnostic-revisit.warc.gz",
        2,
        0,
        0,
        0,
        &[W::BadTrailer],
    ),
    // The last record's Content-Length is 7 bytes short: "m\r\n" and more follow.
    e(
        "pywb/example.warc",
        6,
        0,
        0,
        0,
        &[W::BadTrailer, W::SkippedBytes],
    ),
    // CR CR LF line ends, Content-Length ending inside the HTTP head.
    e(
        "pywb/missing-status-text.warc",
        1,
        0,
        0,
        0,
        &[W::BadTrailer],
    ),
    // wpull-style payload digests over the chunked bytes.
    e("warcat/at.warc", 8, 0, 0, 1, &[]),
    e("warcat/at.warc.gz", 8, 0, 0, 1, &[]),
    // warcio's own test file with a deliberately unreadable payload digest.
    e("warcio/example-digest.warc", 4, 0, 1, 0, &[]),
    e("warcio/example-iana.org-chunked.warc", 3, 0, 0, 1, &[]),
    // The response is cut short and padded: digests fail, 6 bytes skipped.
    e(
        "warcio/example-trunc.warc",
        4,
        1,
        1,
        0,
        &[W::BadTrailer, W::SkippedBytes],
    ),
    // The response's member ends before its Content-Length: one byte short.
    e(
        "warcio/example-wrong-chunks.warc.gz",
        2,
        1,
        0,
        0,
        &[W::NotRecordAtATime, W::BadTrailer],
    ),
];

#[test]
fn every_warc_fixture_reads_checks_and_warns_as_expected() {
    let mut seen = 0;
    for path in common::warc_fixtures() {
        let rel = path
            .strip_prefix(common::fixtures())
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let none = e("", 0, 0, 0, 0, &[]);
        let want = EXPECT.iter().find(|x| x.file == rel).unwrap_or(&none);
        let mut r = Reader::open(&path).unwrap();
        let (mut n, mut bad_block, mut bad_payload, mut raw) = (0, 0, 0, 0);
        while let Some(mut rec) = r.next_record().unwrap() {
            let c = check_record(&mut rec, &Default::default()).unwrap();
            n += 1;
            bad_block += usize::from(!c.block.is_ok());
            bad_payload += usize::from(!c.payload.is_ok());
            raw += usize::from(c.payload == DigestStatus::ValidRawChunked);
            rec.finish().unwrap();
        }
        let kinds: BTreeSet<_> = r
            .take_warnings()
            .into_iter()
            .map(|w| w.kind.name())
            .collect();
        let want_kinds: BTreeSet<_> = want.warnings.iter().map(|k| k.name()).collect();
        if !want.file.is_empty() {
            assert_eq!(n, want.records, "records in {rel}");
            seen += 1;
        } else {
            assert!(n > 0, "no record read from {rel}");
        }
        assert_eq!(bad_block, want.bad_block, "bad block digests in {rel}");
        assert_eq!(
            bad_payload, want.bad_payload,
            "bad payload digests in {rel}"
        );
        assert_eq!(
            raw, want.raw_chunked,
            "raw-chunked payload digests in {rel}"
        );
        assert_eq!(kinds, want_kinds, "warnings of {rel}");
    }
    assert_eq!(seen, EXPECT.len(), "a file of the table was not found");
}

/// Files that follow the grammar read in strict mode too, and the same records.
#[test]
fn well_formed_fixtures_read_strictly() {
    for rel in [
        "pywb/example.warc.gz",
        "pywb/iana.warc.gz",
        "pywb/dupes.warc.gz",
        "pywb/post-test.warc.gz",
        "warcio/example.warc",
        "resiliparse/warcfile.warc.lz4",
        "resiliparse/block-sized-records.warc.gz",
        "jwat/valid-warcfile-fields-continuation.warc",
    ] {
        let path = common::fixture(rel);
        let count = |opts: ReaderOptions| {
            let mut r = Reader::open_with(&path, opts).unwrap();
            let mut n = 0;
            while let Some(rec) = r.next_record().unwrap_or_else(|e| panic!("{rel}: {e}")) {
                rec.finish().unwrap();
                n += 1;
            }
            n
        };
        assert_eq!(
            count(ReaderOptions::strict()),
            count(ReaderOptions::lenient()),
            "{rel}"
        );
    }
    // And strict reading stops at the first deviation, naming where.
    let path = common::fixture("pywb/example.warc");
    let mut r = Reader::open_with(&path, ReaderOptions::strict()).unwrap();
    let err = loop {
        match r.next_record() {
            Ok(Some(rec)) => {
                if let Err(e) = rec.finish() {
                    break e;
                }
            }
            Ok(None) => panic!("strict reading accepted a bad trailer"),
            Err(e) => break e,
        }
    };
    let msg = err.to_string();
    assert!(
        msg.contains("example.warc") && msg.contains("offset 4764"),
        "{msg}"
    );
}

/// Reading records and writing them back untouched, uncompressed, gives the
/// input bytes again for a well-formed plain file; compressed input gives the
/// same records.
#[test]
fn read_write_round_trip_is_byte_identical() {
    for rel in [
        "warcio/example.warc",
        "warcat/at.warc",
        "resiliparse/block-sized-records.warc",
    ] {
        let path = common::fixture(rel);
        let input = std::fs::read(&path).unwrap();
        let out = rewrite(&path, Compression::None);
        assert_eq!(out, input, "{rel}");
    }
    for rel in [
        "pywb/iana.warc.gz",
        "resiliparse/warcfile.warc.lz4",
        "pywb/example-bad.warc.gz.bad",
    ] {
        let path = common::fixture(rel);
        let a = records(&std::fs::read(&path).unwrap());
        for comp in [
            Compression::None,
            Compression::Gzip(6),
            Compression::Zstd {
                level: 3,
                dictionary: None,
            },
        ] {
            let out = rewrite(&path, comp.clone());
            assert_eq!(records(&out), a, "{rel} via {comp:?}");
        }
    }
}

fn rewrite(path: &std::path::Path, compression: Compression) -> Vec<u8> {
    let mut r = Reader::open(path).unwrap();
    let mut w = Writer::new(
        Vec::new(),
        WriterOptions {
            compression,
            ..WriterOptions::default()
        },
    )
    .unwrap();
    while let Some(mut rec) = r.next_record().unwrap() {
        let h = rec.header().clone();
        w.write_raw(&h, &mut rec.block()).unwrap();
    }
    w.finish().unwrap()
}

fn records(data: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut r = Reader::new(data).unwrap();
    let mut out = Vec::new();
    while let Some(mut rec) = r.next_record().unwrap() {
        let mut b = Vec::new();
        rec.block().read_to_end(&mut b).unwrap();
        out.push((rec.header().as_bytes().to_vec(), b));
    }
    out
}
