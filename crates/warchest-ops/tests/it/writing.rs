//! Writing as the spec intends: rotation and naming (Annex B), warcinfo
//! records, segmentation and reassembly (section 7), truncation (5.13),
//! identified payload types (5.17).

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::common;
use common::noise;

use warchest::archive::Reader;
use warchest::check::{DigestStatus, check_record};
use warchest::digest::{Algorithm, Digest, Hasher};
use warchest::warc::{RecordType, TruncatedReason, field};
use warchest::write::{
    Body, CaptureLimits, Compression, NewRecord, Oversize, RotatingOptions, RotatingWriter,
    WriterOptions,
};
use warchest_ops::reassemble::Segments;

fn opts(max: u64, compression: Compression) -> RotatingOptions {
    RotatingOptions {
        prefix: "test".into(),
        crawlhost: "crawler.example".into(),
        max_size: max,
        writer: WriterOptions {
            compression,
            ..WriterOptions::default()
        },
        warcinfo: vec![
            ("operator".into(), "Test Operator".into()),
            ("isPartOf".into(), "test-crawl".into()),
            ("description".into(), "written by the writing tests".into()),
        ],
        ..RotatingOptions::default()
    }
}

struct FileSummary {
    types: Vec<RecordType>,
    ids: Vec<String>,
    warcinfo_links: Vec<Option<String>>,
    filename: Option<String>,
}

/// Reads every record of `path`, checking each digest.
fn read_checked(path: &Path) -> FileSummary {
    let mut r = Reader::open(path).unwrap();
    let mut s = FileSummary {
        types: vec![],
        ids: vec![],
        warcinfo_links: vec![],
        filename: None,
    };
    while let Some(mut rec) = r.next_record().unwrap() {
        let c = check_record(&mut rec, &Default::default()).unwrap();
        assert_eq!(c.block, DigestStatus::Valid, "{}", path.display());
        assert!(c.payload.is_ok(), "{c:?}");
        let h = rec.header();
        s.types.push(h.record_type());
        s.ids.push(h.record_id().unwrap().into_owned());
        s.warcinfo_links
            .push(h.warcinfo_id().map(|x| x.into_owned()));
        if h.record_type() == RecordType::Warcinfo {
            s.filename = h.filename().map(|x| x.into_owned());
        }
        assert!(!rec.finish().unwrap().truncated);
    }
    assert!(r.take_warnings().is_empty(), "{}", path.display());
    s
}

fn names(files: &[PathBuf]) -> Vec<String> {
    files
        .iter()
        .map(|f| f.file_name().unwrap().to_str().unwrap().to_string())
        .collect()
}

#[test]
fn rotates_before_a_record_would_pass_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = RotatingWriter::new(dir.path(), opts(20_000, Compression::None)).unwrap();
    let body = noise(3000, 1);
    let mut placed = Vec::new();
    for i in 0..20 {
        let mut rec = NewRecord::new(RecordType::Resource);
        rec.set("WARC-Target-URI", format!("http://example.com/{i}"))
            .unwrap();
        placed.extend(w.write(&mut rec, Body::Bytes(&body)).unwrap());
        // Until closed, the file exists only under NAME.open.
        let cur = w.current_file().unwrap().to_path_buf();
        assert!(!cur.exists());
        assert!(PathBuf::from(format!("{}.open", cur.display())).exists());
    }
    let files = w.finish().unwrap();
    assert!(files.len() >= 4, "{files:?}");
    // Annex B: Prefix-Timestamp-Serial-Crawlhost.warc, serials in order.
    for (i, n) in names(&files).iter().enumerate() {
        let parts: Vec<&str> = n.splitn(4, '-').collect();
        assert_eq!(parts[0], "test");
        assert_eq!(parts[1].len(), 14);
        assert!(parts[1].bytes().all(|b| b.is_ascii_digit()));
        assert_eq!(parts[2], format!("{i:05}"));
        assert_eq!(parts[3], "crawler.example.warc");
    }
    let mut total = 0;
    for f in &files {
        let len = fs::metadata(f).unwrap().len();
        assert!(len <= 20_000, "{} is {len} bytes", f.display());
        let s = read_checked(f);
        // Each file opens with its warcinfo, naming the file...
        assert_eq!(s.types[0], RecordType::Warcinfo);
        assert_eq!(
            s.filename.as_deref(),
            f.file_name().and_then(|n| n.to_str())
        );
        // ...and every later record names that warcinfo.
        for link in &s.warcinfo_links[1..] {
            assert_eq!(link.as_deref(), Some(s.ids[0].as_str()));
        }
        total += s.types.len() - 1;
    }
    assert_eq!(total, 20);
    // No .open file is left.
    for e in fs::read_dir(dir.path()).unwrap() {
        let n = e.unwrap().file_name().into_string().unwrap();
        assert!(!n.ends_with(".open"), "{n}");
    }
    // The placements name the final files.
    assert!(placed.iter().all(|p| files.contains(&p.path)));
}

#[test]
fn warcinfo_block_carries_the_callers_fields() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = RotatingWriter::new(dir.path(), opts(1 << 20, Compression::Gzip(6))).unwrap();
    let mut rec = NewRecord::new(RecordType::Resource);
    w.write(&mut rec, Body::Bytes(b"x")).unwrap();
    let files = w.finish().unwrap();
    assert!(names(&files)[0].ends_with(".warc.gz"));
    let mut r = Reader::open(&files[0]).unwrap();
    let mut info = r.next_record().unwrap().unwrap();
    assert_eq!(
        info.header().content_type().unwrap(),
        "application/warc-fields"
    );
    let text = String::from_utf8(info.read_block().unwrap()).unwrap();
    for want in [
        "software: warchest/",
        "operator: Test Operator\r\n",
        "isPartOf: test-crawl\r\n",
        "description: written by the writing tests\r\n",
        "hostname: crawler.example\r\n",
        "format: WARC File Format 1.1\r\n",
        "conformsTo: http",
    ] {
        assert!(text.contains(want), "{want:?} in {text}");
    }
}

/// An HTTP response of `n` payload bytes.
fn response_block(payload: &[u8]) -> Vec<u8> {
    let mut b = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
        payload.len()
    )
    .into_bytes();
    b.extend_from_slice(payload);
    b
}

fn sha1(b: &[u8]) -> Digest {
    Digest::new(Algorithm::Sha1, &Hasher::digest(Algorithm::Sha1, b))
}

/// Segments a response of `payload_len` bytes at `max` and reassembles it.
fn segment_and_reassemble(payload_len: usize, max: u64, compression: Compression) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let payload = noise(payload_len, 7);
    let block = response_block(&payload);
    let mut w = RotatingWriter::new(dir.path(), opts(max, compression)).unwrap();
    // A small record first: the origin segment must still start a new file.
    let mut small = NewRecord::new(RecordType::Resource);
    small.set("WARC-Target-URI", "file:///small.txt").unwrap();
    w.write(&mut small, Body::Bytes(b"small")).unwrap();
    let mut rec = NewRecord::new(RecordType::Response);
    rec.set("WARC-Target-URI", "http://example.com/big.bin")
        .unwrap()
        .set("Content-Type", "application/http; msgtype=response")
        .unwrap();
    let origin = rec.record_id();
    let mut cur = std::io::Cursor::new(&block);
    let placed = w
        .write(
            &mut rec,
            Body::Seekable {
                reader: &mut cur,
                len: None,
            },
        )
        .unwrap();
    let files = w.finish().unwrap();
    let n = placed.len();
    assert!(n > 1);
    // Each segment in its own file; the origin after only a warcinfo.
    for (i, p) in placed.iter().enumerate() {
        assert_eq!(p.path, files[i + 1], "segment {i}");
        let s = read_checked(&p.path);
        assert_eq!(s.types.len(), 2, "{}", p.path.display());
        let want = if i == 0 {
            RecordType::Response
        } else {
            RecordType::Continuation
        };
        assert_eq!(s.types[1], want);
        assert!(fs::metadata(&p.path).unwrap().len() <= max);
    }
    // Fields of section 7, read back.
    let mut r = Reader::open(&files[1]).unwrap();
    r.next_record().unwrap();
    let first = r.next_record().unwrap().unwrap();
    let h = first.header();
    assert_eq!(h.segment_number(), Some(Some(1)));
    assert_eq!(
        h.payload_digest().unwrap(),
        sha1(&payload).to_string(),
        "the first segment carries the payload digest of the whole"
    );
    let mut r = Reader::open(files.last().unwrap()).unwrap();
    r.next_record().unwrap();
    let last = r.next_record().unwrap().unwrap();
    let h = last.header();
    assert_eq!(h.segment_origin_id().unwrap(), origin);
    assert_eq!(h.segment_number(), Some(Some(n as u64)));
    assert_eq!(h.segment_total_length(), Some(Some(block.len() as u64)));
    assert_eq!(h.target_uri().unwrap(), "http://example.com/big.bin");
    // Reassembled across the files, the payload digest of the whole holds.
    let segs = Segments::scan(&files).unwrap();
    let mut logical = segs.open(&origin).unwrap();
    assert_eq!(logical.header().content_length(), Some(block.len() as u64));
    assert_eq!(logical.header().segment_number(), None);
    let mut h = Hasher::new(Algorithm::Sha1);
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0;
    loop {
        let k = logical.read(&mut buf).unwrap();
        if k == 0 {
            break;
        }
        h.update(&buf[..k]);
        total += k;
    }
    assert_eq!(total, block.len());
    assert_eq!(
        h.finalize().as_bytes(),
        Hasher::digest(Algorithm::Sha1, &block).as_bytes()
    );
    assert_eq!(logical.check().unwrap().payload, DigestStatus::Valid);
    assert_eq!(logical.block_digest().unwrap(), sha1(&block));
    // And the files, validated together, break no rule of the spec.
    let report = warchest_validate::validate_files(&files, &Default::default());
    let errors: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.severity == warchest_validate::Severity::Error)
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    n
}

#[test]
fn small_record_segmented_across_files() {
    for c in [
        Compression::None,
        Compression::Gzip(6),
        Compression::Zstd {
            level: 3,
            dictionary: None,
        },
        Compression::Lz4,
    ] {
        let n = segment_and_reassemble(20_000, 6000, c.clone());
        assert!(n >= 4, "{c:?}: {n} segments");
    }
}

/// The case: a 50 MB response segmented at 10 MiB gives 5 segments
/// in 5 files, which reassemble to the original payload digest.
#[test]
fn fifty_megabyte_response_in_five_segments() {
    let n = segment_and_reassemble(50_000_000, 10 << 20, Compression::Gzip(6));
    assert_eq!(n, 5);
}

#[test]
fn segments_reject_a_missing_part() {
    let dir = tempfile::tempdir().unwrap();
    let payload = noise(30_000, 3);
    let mut w = RotatingWriter::new(dir.path(), opts(8000, Compression::None)).unwrap();
    let mut rec = NewRecord::new(RecordType::Resource);
    let origin = rec.record_id();
    w.write(&mut rec, Body::Bytes(&payload)).unwrap();
    let files = w.finish().unwrap();
    let without_second: Vec<_> = files
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 1)
        .map(|(_, f)| f.clone())
        .collect();
    let segs = Segments::scan(&without_second).unwrap();
    let err = segs.open(&origin).err().expect("incomplete series");
    assert!(err.to_string().contains("segment 2"), "{err}");
    // All files: fine, and a resource's payload is its block.
    let segs = Segments::scan(&files).unwrap();
    let mut l = segs.open(&origin).unwrap();
    let mut out = Vec::new();
    l.copy_to(&mut out).unwrap();
    assert_eq!(out, payload);
}

#[test]
fn oversize_own_file_and_unsegmentable_types() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(4000, Compression::None);
    o.oversize = Oversize::OwnFile;
    let mut w = RotatingWriter::new(dir.path(), o).unwrap();
    let mut small = NewRecord::new(RecordType::Resource);
    w.write(&mut small, Body::Bytes(b"a")).unwrap();
    let mut big = NewRecord::new(RecordType::Resource);
    let p = w.write(&mut big, Body::Bytes(&noise(10_000, 2))).unwrap();
    assert_eq!(p.len(), 1);
    let files = w.finish().unwrap();
    assert_eq!(files.len(), 2);
    assert!(fs::metadata(&files[1]).unwrap().len() > 10_000);
    // A metadata record is never segmented (section 7 advises against it).
    let dir = tempfile::tempdir().unwrap();
    let mut w = RotatingWriter::new(dir.path(), opts(4000, Compression::None)).unwrap();
    let mut m = NewRecord::new(RecordType::Metadata);
    assert_eq!(
        w.write(&mut m, Body::Bytes(&noise(10_000, 2)))
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn truncated_bodies_say_why() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = RotatingWriter::new(dir.path(), opts(1 << 20, Compression::Gzip(6))).unwrap();
    let data = noise(5000, 9);
    let mut rec = NewRecord::new(RecordType::Resource);
    let p = w
        .write_limited(
            &mut rec,
            &mut &data[..],
            CaptureLimits {
                max_len: Some(1000),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(p[0].written.block_len, 1000);
    let mut whole = NewRecord::new(RecordType::Resource);
    w.write_limited(
        &mut whole,
        &mut &data[..],
        CaptureLimits {
            max_len: Some(5000),
            ..Default::default()
        },
    )
    .unwrap();
    let files = w.finish().unwrap();
    let mut r = Reader::open(&files[0]).unwrap();
    r.next_record().unwrap();
    let a = r.next_record().unwrap().unwrap();
    assert_eq!(a.header().truncated(), Some(TruncatedReason::Length));
    assert_eq!(a.header().content_length(), Some(1000));
    let b = r.next_record().unwrap().unwrap();
    assert_eq!(b.header().truncated(), None);
}

#[test]
fn identified_payload_type_from_the_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(1 << 20, Compression::None);
    o.identify_payload_type = true;
    let mut w = RotatingWriter::new(dir.path(), o).unwrap();
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    png.extend(noise(100, 4));
    let mut block = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n".to_vec();
    block.extend(&png);
    let mut rec = NewRecord::new(RecordType::Response);
    rec.set("Content-Type", "application/http; msgtype=response")
        .unwrap();
    w.write(&mut rec, Body::Bytes(&block)).unwrap();
    assert_eq!(
        rec.header().get(field::IDENTIFIED_PAYLOAD_TYPE).unwrap(),
        "image/png"
    );
    w.finish().unwrap();
}

#[test]
fn stream_bodies_are_replayed_into_the_next_file() {
    // A stream body that does not fit the open file is written whole to
    // the next one, with the new file's warcinfo id.
    let dir = tempfile::tempdir().unwrap();
    let mut w = RotatingWriter::new(dir.path(), opts(6000, Compression::Gzip(6))).unwrap();
    let data = noise(3000, 5);
    for _ in 0..3 {
        let mut rec = NewRecord::new(RecordType::Resource);
        let mut src = &data[..];
        w.write(
            &mut rec,
            Body::Stream {
                reader: &mut src,
                len: None,
            },
        )
        .unwrap();
    }
    let files = w.finish().unwrap();
    assert_eq!(files.len(), 3);
    for f in &files {
        let s = read_checked(f);
        assert_eq!(s.types, [RecordType::Warcinfo, RecordType::Resource]);
        assert_eq!(s.warcinfo_links[1].as_deref(), Some(s.ids[0].as_str()));
    }
}

/// One LZ4 frame per record: each record starts a frame at the offset the
/// writer reported, the frame header declares the record's length, blocks
/// at and around the 256 KiB block size (incompressible ones stored) read
/// back byte for byte, and the `lz4` tool, where installed, decodes the
/// file to the records written uncompressed.
#[test]
fn lz4_writes_one_frame_per_record() {
    let sizes = [
        0usize,
        10,
        (256 << 10) - 1,
        256 << 10,
        (256 << 10) + 1,
        1 << 20,
    ];
    let bodies: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .flat_map(|(i, &n)| {
            let text: Vec<u8> = b"a compressible line of text\n"
                .iter()
                .copied()
                .cycle()
                .take(n)
                .collect();
            [noise(n, i as u64 + 1), text]
        })
        .collect();
    let write = |compression: Compression| {
        let opts = WriterOptions {
            compression,
            ..WriterOptions::default()
        };
        let mut w = warchest::write::Writer::new(Vec::new(), opts).unwrap();
        let mut placed = Vec::new();
        for (i, b) in bodies.iter().enumerate() {
            let mut rec = NewRecord::new(RecordType::Resource);
            rec.set("WARC-Target-URI", format!("http://example.com/{i}"))
                .unwrap();
            rec.set(
                "WARC-Record-ID",
                format!("<urn:uuid:00000000-0000-4000-8000-{i:012}>"),
            )
            .unwrap();
            rec.set("WARC-Date", "2026-11-22T00:00:00Z").unwrap();
            placed.push(w.write(&mut rec, Body::Bytes(b)).unwrap());
        }
        (w.finish().unwrap(), placed)
    };
    let (lz4, placed) = write(Compression::Lz4);
    let (plain, _) = write(Compression::None);
    assert!(
        lz4.len() < plain.len() * 3 / 4,
        "{} vs {}",
        lz4.len(),
        plain.len()
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.warc.lz4");
    fs::write(&path, &lz4).unwrap();
    let mut r = Reader::open(&path).unwrap();
    let mut i = 0;
    while let Some(mut rec) = r.next_record().unwrap() {
        let loc = rec.location();
        assert_eq!(loc.codec, warchest::codec::Codec::Lz4);
        assert_eq!(loc.offset, placed[i].offset);
        let at = loc.offset as usize;
        assert_eq!(lz4[at..at + 4], [0x04, 0x22, 0x4d, 0x18]);
        let block = rec.read_block().unwrap();
        assert_eq!(block, bodies[i], "record {i}");
        let declared = u64::from_le_bytes(lz4[at + 6..at + 14].try_into().unwrap());
        assert_eq!(
            declared,
            loc.header_len + block.len() as u64 + 4,
            "record {i}"
        );
        i += 1;
    }
    assert_eq!(i, bodies.len());
    assert!(r.take_warnings().is_empty());
    if let Ok(out) = std::process::Command::new("lz4")
        .args(["-dc"])
        .arg(&path)
        .output()
    {
        assert!(out.status.success());
        assert_eq!(out.stdout, plain);
    }
}
