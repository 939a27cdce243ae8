//! recompress, filter, split, concat and stats on the real fixtures: record
//! counts, bytes and digests before and after.

use crate::common;

use std::io::Read;
use std::path::Path;

use warchest::archive::Reader;
use warchest::check::{Checker, RecordCheck};
use warchest::codec::Codec;
use warchest::write::Compression;
use warchest_ops::copy::{
    Copier, CopyOptions, CopyReport, DictTraining, SplitNaming, SplitSink, WriteSink,
    train_dictionary,
};
use warchest_ops::filter::Filter;
use warchest_ops::stats::Stats;

/// One record as read: header bytes, block bytes, and what its digests say.
#[derive(Debug, PartialEq)]
struct Rec {
    header: Vec<u8>,
    block: Vec<u8>,
    check: RecordCheck,
}

/// Stored offset, codec and offset in member of each record.
type Locations = Vec<(u64, Codec, u64)>;

fn read_all(data: &[u8]) -> (Vec<Rec>, Vec<warchest::Warning>, Locations) {
    let mut r = Reader::new(data).unwrap();
    let mut out = Vec::new();
    let mut locs = Vec::new();
    while let Some(mut rec) = r.next_record().unwrap() {
        let header = rec.header().as_bytes().to_vec();
        let mut checker = Checker::new(rec.header(), &Default::default());
        let mut block = Vec::new();
        rec.block().read_to_end(&mut block).unwrap();
        checker.update(&block);
        let loc = rec.location();
        locs.push((loc.offset, loc.codec, loc.offset_in_member));
        rec.finish().unwrap();
        out.push(Rec {
            header,
            block,
            check: checker.finish(),
        });
    }
    (out, r.take_warnings(), locs)
}

fn copy(data: &[u8], c: Compression, filter: Option<&str>) -> (Vec<u8>, CopyReport) {
    let mut copier = Copier::new(CopyOptions::new(c)).unwrap();
    if let Some(f) = filter {
        copier = copier.with_filter(Filter::parse(f).unwrap());
    }
    let mut sink = WriteSink::new(Vec::new(), copier.preamble()).unwrap();
    let mut report = CopyReport::default();
    copier
        .copy_archive(&mut Reader::new(data).unwrap(), &mut sink, &mut report)
        .unwrap();
    (sink.into_inner(), report)
}

fn rel(p: &Path) -> String {
    p.strip_prefix(common::fixtures())
        .unwrap()
        .to_string_lossy()
        .replace('\\', "/")
}

#[test]
fn recompress_every_fixture_to_every_codec_and_back() {
    let mut files = 0;
    let mut records = 0;
    for path in common::warc_fixtures() {
        let name = rel(&path);
        let input = std::fs::read(&path).unwrap();
        let (want, in_warnings, _) = read_all(&input);
        for c in common::compressions() {
            let (out, report) = copy(&input, c.clone(), None);
            assert_eq!(report.records_read, want.len() as u64, "{name}");
            assert_eq!(report.dropped_count, 0, "{name}: {:?}", report.dropped);
            assert_eq!(report.records_written, want.len() as u64, "{name}");
            assert_eq!(report.bytes_written, out.len() as u64, "{name}");
            let (got, out_warnings, locs) = read_all(&out);
            // Same records, same bytes, same digest verdicts.
            assert_eq!(got, want, "{name} via {c:?}");
            // One member per record, each at the start of its own.
            if c != Compression::None {
                let want_codec = if matches!(c, Compression::Gzip(_)) {
                    Codec::Gzip
                } else {
                    Codec::Zstd
                };
                for (i, (off, codec, in_member)) in locs.iter().enumerate() {
                    assert_eq!((*codec, *in_member), (want_codec, 0), "{name} record {i}");
                    if i > 0 {
                        assert!(*off > locs[i - 1].0, "{name}: record {i} shares a member");
                    }
                }
            }
            // A file that read cleanly gives a file that reads cleanly.
            if in_warnings.is_empty() {
                assert!(
                    out_warnings.is_empty(),
                    "{name} via {c:?}: {out_warnings:?}"
                );
            }
            // And back to plain: the same records again.
            let (plain, _) = copy(&out, Compression::None, None);
            assert_eq!(read_all(&plain).0, want, "{name} via {c:?} and back");
        }
        files += 1;
        records += want.len();
    }
    assert!(
        files >= 40 && records >= 600,
        "{files} files, {records} records"
    );
}

/// Whole-file gzip in, one member per record out: offsets that a CDX
/// reader can seek to.
#[test]
fn whole_file_gzip_becomes_record_at_a_time() {
    let input = std::fs::read(common::fixture("pywb/example-bad.warc.gz.bad")).unwrap();
    let (_, warnings, locs) = read_all(&input);
    assert!(
        warnings
            .iter()
            .any(|w| w.kind == warchest::WarningKind::NotRecordAtATime)
    );
    assert!(
        locs.iter().skip(1).all(|l| l.0 == 0),
        "one member: {locs:?}"
    );
    let (out, _) = copy(&input, Compression::Gzip(6), None);
    let (_, warnings, locs) = read_all(&out);
    assert!(warnings.is_empty(), "{warnings:?}");
    let offsets: Vec<u64> = locs.iter().map(|l| l.0).collect();
    assert_eq!(offsets.len(), 6);
    assert!(offsets.windows(2).all(|w| w[0] < w[1]), "{offsets:?}");
}

/// Plain well-formed input, plain output: the very same bytes.
#[test]
fn plain_copy_is_byte_identical() {
    for f in [
        "warcio/example.warc",
        "warcat/at.warc",
        "resiliparse/block-sized-records.warc",
    ] {
        let input = std::fs::read(common::fixture(f)).unwrap();
        let (out, _) = copy(&input, Compression::None, None);
        assert_eq!(out, input, "{f}");
    }
}

/// The raw bytes of each record of a plain file: header, block, CRLF CRLF.
fn raw_records(recs: &[Rec]) -> Vec<Vec<u8>> {
    recs.iter()
        .map(|r| {
            let mut v = r.header.clone();
            v.extend(&r.block);
            v.extend(b"\r\n\r\n");
            v
        })
        .collect()
}

/// What a direct Rust predicate says of a record, for comparison with the
/// filter language.
struct Facts {
    warc_type: String,
    status: Option<u16>,
    mime: Option<String>,
    uri: Option<String>,
    length: u64,
    server: Option<String>,
}

fn facts(r: &Rec) -> Facts {
    let raw = raw_records(std::slice::from_ref(r)).concat();
    let mut reader = Reader::new(&raw[..]).unwrap();
    let rec = reader.next_record().unwrap().unwrap();
    let h = rec.header();
    let head = if h.is_http() {
        warchest::http::HttpHead::parse(&r.block)
            .ok()
            .flatten()
            .map(|x| x.0)
    } else {
        None
    };
    Facts {
        warc_type: h.record_type_str().unwrap_or_default().into_owned(),
        status: head
            .as_ref()
            .filter(|h| h.is_response())
            .and_then(|h| h.status()),
        mime: head.as_ref().and_then(|h| h.media_type()),
        uri: h.target_uri().map(|s| s.into_owned()),
        length: h.content_length().unwrap_or(0),
        server: head
            .as_ref()
            .and_then(|h| h.fields().value("server").map(|s| s.into_owned())),
    }
}

#[test]
fn filter_keeps_exactly_what_a_direct_predicate_keeps_byte_for_byte() {
    type Pred = fn(&Facts) -> bool;
    let cases: &[(&str, Pred)] = &[
        (
            r#"warc-type == "response" && http:status == 200 && :content-type =~ "text/html""#,
            |f| {
                f.warc_type == "response"
                    && f.status == Some(200)
                    && f.mime.as_deref() == Some("text/html")
            },
        ),
        (r#"warc-type != "request""#, |f| f.warc_type != "request"),
        (r#":status >= 300 && :status < 400"#, |f| {
            f.status.is_some_and(|s| (300..400).contains(&s))
        }),
        (
            r#"!(:content-type =~ "image/.*" || :content-type =~ ".*javascript")"#,
            |f| {
                !f.mime
                    .as_deref()
                    .is_some_and(|m| m.starts_with("image/") || m.ends_with("javascript"))
            },
        ),
        (r#":uri =~ ".*\.css" && :length > 1000"#, |f| {
            f.uri.as_deref().is_some_and(|u| u.ends_with(".css")) && f.length > 1000
        }),
        (r#"http:server =~ "(?i)apache.*""#, |f| {
            f.server
                .as_deref()
                .is_some_and(|s| s.to_ascii_lowercase().starts_with("apache"))
        }),
    ];
    let mut kept_total = 0;
    for fx in [
        "pywb/iana.warc.gz",
        "pywb/example.warc.gz",
        "warcio/example-iana.org-chunked.warc",
        "resiliparse/warcfile.warc.lz4",
    ] {
        let input = std::fs::read(common::fixture(fx)).unwrap();
        let (all, _, _) = read_all(&input);
        let raw = raw_records(&all);
        for (expr, pred) in cases {
            let want: Vec<u8> = all
                .iter()
                .zip(&raw)
                .filter(|(r, _)| pred(&facts(r)))
                .flat_map(|(_, b)| b.clone())
                .collect();
            let (out, report) = copy(&input, Compression::None, Some(expr));
            assert_eq!(report.records_read, all.len() as u64);
            assert_eq!(out, want, "{fx}: {expr}");
            kept_total += report.records_written;
            // Compressed output: the same records.
            let (gz, _) = copy(&input, Compression::Gzip(1), Some(expr));
            assert_eq!(
                raw_records(&read_all(&gz).0).concat(),
                want,
                "{fx}: {expr} gzip"
            );
        }
    }
    assert!(kept_total > 100, "the cases select something: {kept_total}");
}

#[test]
fn split_then_concat_gives_the_same_records() {
    let input = std::fs::read(common::fixture("pywb/iana.warc.gz")).unwrap();
    let (want, _, _) = read_all(&input);
    for (c, max) in [
        (Compression::Gzip(6), 100_000u64),
        (Compression::None, 300_000),
        (
            Compression::Zstd {
                level: 3,
                dictionary: None,
            },
            50_000,
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let ext = c.extension();
        let naming = SplitNaming {
            prefix: "IANA".into(),
            crawl_host: "test.host".into(),
            extension: ext.into(),
        };
        let mut copier = Copier::new(CopyOptions::new(c.clone())).unwrap();
        let mut sink = SplitSink::new(dir.path(), naming, max, copier.preamble(), 0);
        let mut report = CopyReport::default();
        copier
            .copy_archive(
                &mut Reader::new(&input[..]).unwrap(),
                &mut sink,
                &mut report,
            )
            .unwrap();
        let files = sink.finish().unwrap();
        assert!(files.len() >= 3, "{c:?}: {} files", files.len());
        let mut parts_records = 0;
        let mut sizes = 0;
        for (i, (p, size, n)) in files.iter().enumerate() {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            // Each file is named with its own first record's WARC-Date
            // (2014-01-26T20:06:24Z for the first).
            let suffix = format!("-{i:05}-test.host{ext}");
            let ts = name
                .strip_prefix("IANA-")
                .and_then(|n| n.strip_suffix(&suffix))
                .unwrap_or_else(|| panic!("{name}"));
            assert!(ts.len() == 14 && ts.starts_with("20140126"), "{name}");
            if i == 0 {
                assert_eq!(ts, "20140126200624");
            }
            let bytes = std::fs::read(p).unwrap();
            assert_eq!(bytes.len() as u64, *size);
            let (recs, warnings, _) = read_all(&bytes);
            assert!(warnings.is_empty(), "{name}: {warnings:?}");
            assert_eq!(recs.len() as u64, *n);
            assert!(*size <= max || *n == 1, "{name}: {size} bytes, {n} records");
            parts_records += recs.len();
            sizes += size;
        }
        assert_eq!(parts_records, want.len());
        assert_eq!(sizes, report.bytes_written);
        // Nothing left with .open.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), files.len());
        // Concatenate the parts in serial order (the order written; names
        // carry each file's own date, so they need not sort so): the
        // input's records again.
        let names: Vec<_> = files.iter().map(|f| f.0.clone()).collect();
        let mut copier = Copier::new(CopyOptions::new(Compression::Gzip(6))).unwrap();
        let mut out = WriteSink::new(Vec::new(), copier.preamble()).unwrap();
        let mut r2 = CopyReport::default();
        for n in &names {
            let mut reader = Reader::open(n).unwrap();
            copier.copy_archive(&mut reader, &mut out, &mut r2).unwrap();
        }
        assert_eq!(read_all(&out.into_inner()).0, want, "{c:?}");
    }
}

#[test]
fn trained_dictionary_round_trips_and_helps() {
    let path = common::fixture("pywb/iana.warc.gz");
    let input = std::fs::read(&path).unwrap();
    let (want, _, _) = read_all(&input);
    let dict =
        train_dictionary(&mut Reader::open(&path).unwrap(), &DictTraining::default()).unwrap();
    assert!(dict.len() > 1000 && dict.len() <= 112_640, "{}", dict.len());
    // The same input gives the same dictionary.
    let again =
        train_dictionary(&mut Reader::open(&path).unwrap(), &DictTraining::default()).unwrap();
    assert_eq!(dict, again);
    let zstd = |d: Option<Vec<u8>>| {
        copy(
            &input,
            Compression::Zstd {
                level: 3,
                dictionary: d,
            },
            None,
        )
        .0
    };
    let with = zstd(Some(dict.clone()));
    let without = zstd(None);
    // The dictionary frame leads the file.
    assert_eq!(&with[..4], &0x184D_2A5Du32.to_le_bytes());
    assert_eq!(&with[4..8], &(dict.len() as u32).to_le_bytes());
    let (got, warnings, _) = read_all(&with);
    assert_eq!(got, want);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(
        with.len() < without.len(),
        "with dictionary {} bytes, without {}",
        with.len(),
        without.len()
    );
}

#[test]
fn stats_count_every_record_and_byte() {
    let path = common::fixture("pywb/iana.warc.gz");
    let mut s = Stats::new();
    s.add_archive(&mut Reader::open(&path).unwrap(), &Default::default())
        .unwrap();
    assert_eq!((s.files, s.records), (1, 343));
    assert_eq!(s.stored_bytes, std::fs::metadata(&path).unwrap().len());
    let n = |t: &std::collections::BTreeMap<String, warchest_ops::stats::Count>, k: &str| {
        t.get(k).map_or(0, |c| c.records)
    };
    assert_eq!(n(&s.by_type, "response"), 48);
    assert_eq!(n(&s.by_type, "request"), 171);
    assert_eq!(n(&s.by_type, "revisit"), 123);
    assert_eq!(n(&s.by_type, "warcinfo"), 1);
    assert_eq!(n(&s.by_status, "200"), 167);
    assert_eq!(n(&s.by_status, "302"), 4);
    assert_eq!(n(&s.by_host, "www.iana.org"), 342);
    assert_eq!(n(&s.by_mime, "text/html"), 20);

    // Totals agree with a plain read, for every fixture; and stats of
    // files merged equal stats of their concatenation.
    let mut merged = Stats::new();
    let mut all = Vec::new();
    for path in common::warc_fixtures() {
        let data = std::fs::read(&path).unwrap();
        let (recs, _, _) = read_all(&data);
        let mut one = Stats::new();
        one.add_archive(&mut Reader::new(&data[..]).unwrap(), &Default::default())
            .unwrap();
        assert_eq!(one.records, recs.len() as u64, "{}", rel(&path));
        let bytes: u64 = recs.iter().map(|r| r.block.len() as u64).sum();
        assert_eq!(one.block_bytes, bytes, "{}", rel(&path));
        for t in [&one.by_type, &one.by_mime] {
            assert_eq!(t.values().map(|c| c.records).sum::<u64>(), one.records);
            assert_eq!(t.values().map(|c| c.bytes).sum::<u64>(), one.block_bytes);
        }
        merged.merge(&one);
        all.extend(copy(&data, Compression::Gzip(1), None).0);
    }
    let mut whole = Stats::new();
    whole
        .add_archive(&mut Reader::new(&all[..]).unwrap(), &Default::default())
        .unwrap();
    assert_eq!(whole.records, merged.records);
    assert_eq!(whole.block_bytes, merged.block_bytes);
    assert_eq!(whole.by_type, merged.by_type);
    assert_eq!(whole.by_status, merged.by_status);
    assert_eq!(whole.by_host, merged.by_host);
    assert_eq!(whole.by_mime, merged.by_mime);
}
