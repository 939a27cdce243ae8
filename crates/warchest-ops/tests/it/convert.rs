//! Conversion: page.dat and every ARC fixture to WARC (validated by
//! warchest's digest check and by warcio), and Web InfoMall -> WARC -> Web
//! InfoMall round trips.
//!
//! Set WARCHEST_SKIP_PYTHON=1 to skip the warcio validation where Python or
//! warcio is missing; CI never sets it.

use crate::common;

use std::io::Read;
use std::path::Path;
use std::process::Command;

use warchest::archive::Reader;
use warchest::infomall::{self, Properties};
use warchest::warc::Version;
use warchest::write::{Compression, Writer, WriterOptions};
use warchest_ops::convert::{InfoMallOptions, Report, WarcOptions, to_infomall, to_warc};

fn to_warc_bytes(input: &[u8], name: &str, compression: Compression, version: Version) -> Vec<u8> {
    let mut r =
        Reader::with_options(input, warchest::warc::ReaderOptions::lenient().file(name)).unwrap();
    let mut w = Writer::new(
        Vec::new(),
        WriterOptions {
            compression,
            ..WriterOptions::default()
        },
    )
    .unwrap();
    let opts = WarcOptions {
        version,
        output_name: Some("out.warc.gz".into()),
        ..WarcOptions::default()
    };
    to_warc(&mut r, name, &mut w, &opts, &mut Report::default()).unwrap();
    w.finish().unwrap()
}

/// Every record's digests verify; returns the record count.
fn check_all(warc: &[u8]) -> usize {
    let mut r = Reader::new(warc).unwrap();
    let mut n = 0;
    while let Some(mut rec) = r.next_record().unwrap() {
        let c = warchest::check::check_record(&mut rec, &warchest::Limits::default()).unwrap();
        assert!(c.is_ok(), "{c:?}");
        assert_ne!(c.block, warchest::check::DigestStatus::Absent);
        assert!(!rec.finish().unwrap().truncated);
        n += 1;
    }
    let w = r.take_warnings();
    assert!(w.is_empty(), "{w:?}");
    n
}

/// warcio reads `path` with digest checking and `warcio check` passes.
fn warcio_validates(path: &Path) -> serde_json::Value {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/differential/warcio_validate.py"
    );
    let out = Command::new("python3")
        .arg(script)
        .arg(path)
        .output()
        .expect("run python3");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "warcio rejects {}: {text} {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(text.trim()).expect("json")
}

#[test]
fn converted_files_validate() {
    let dir = tempfile::tempdir().unwrap();
    let mut inputs = common::fixture_files(&[".arc", ".arc.gz"]);
    inputs.push(common::fixture("tianwang/page.dat"));
    let python = common::python_has("warcio");
    for (i, input) in inputs.into_iter().enumerate() {
        let name = input.file_name().unwrap().to_string_lossy().to_string();
        let data = std::fs::read(&input).unwrap();
        // Plain and gzip output in turn, to keep the test short.
        let (compression, ext) = if i % 2 == 0 {
            (Compression::None, "warc")
        } else {
            (Compression::Gzip(6), "warc.gz")
        };
        {
            let warc = to_warc_bytes(&data, &name, compression, Version::V1_1);
            let n = check_all(&warc);
            assert!(n >= 2, "{name}");
            let out = dir.path().join(format!("{name}.{ext}"));
            std::fs::write(&out, &warc).unwrap();
            if python {
                let v = warcio_validates(&out);
                assert_eq!(v["records"].as_u64(), Some(n as u64), "{name}");
            }
        }
    }
}

#[test]
fn warc_1_0_output_validates() {
    let data = std::fs::read(common::fixture("jwat/small_BNF.arc")).unwrap();
    let warc = to_warc_bytes(&data, "small_BNF.arc", Compression::None, Version::V1_0);
    assert!(warc.starts_with(b"WARC/1.0\r\n"));
    assert!(!String::from_utf8_lossy(&warc).contains("WARC/1.1"));
    assert_eq!(check_all(&warc), 7);
    if common::python_has("warcio") {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bnf.warc");
        std::fs::write(&p, &warc).unwrap();
        warcio_validates(&p);
    }
}

#[test]
fn conversion_is_reproducible() {
    let data = std::fs::read(common::fixture("warcio/example.arc.gz")).unwrap();
    let a = to_warc_bytes(&data, "example.arc.gz", Compression::Gzip(6), Version::V1_1);
    let b = to_warc_bytes(&data, "example.arc.gz", Compression::Gzip(6), Version::V1_1);
    assert_eq!(a, b);
    // warcinfo, the filedesc as metadata, the response.
    let mut r = Reader::new(&a[..]).unwrap();
    let mut types = Vec::new();
    while let Some(rec) = r.next_record().unwrap() {
        types.push(rec.header().record_type_str().unwrap().into_owned());
    }
    assert_eq!(types, ["warcinfo", "metadata", "response"]);
}

/// (url, origin, date, ip, content) of every record of a Web InfoMall file.
type Capture = (Vec<u8>, Option<Vec<u8>>, Vec<u8>, Option<Vec<u8>>, Vec<u8>);

fn captures(data: &[u8]) -> Vec<Capture> {
    let mut r = infomall::Reader::new(data);
    let mut v = Vec::new();
    while let Some(mut rec) = r.next_record().unwrap() {
        let h = rec.infomall_header().clone();
        let mut content = Vec::new();
        rec.block().read_to_end(&mut content).unwrap();
        v.push((
            h.url().unwrap().into_owned(),
            h.origin().map(|o| o.into_owned()),
            h.date_value().unwrap().into_owned(),
            h.ip().map(|o| o.into_owned()),
            content,
        ));
    }
    assert!(r.take_warnings().is_empty());
    v
}

fn round_trip(data: &[u8], compress: bool) -> Vec<u8> {
    let warc = to_warc_bytes(data, "in.dat", Compression::Gzip(6), Version::V1_1);
    let mut r = Reader::new(&warc[..]).unwrap();
    let mut w = infomall::Writer::new(Vec::new());
    let mut rep = Report::default();
    to_infomall(
        &mut r,
        "in.warc.gz",
        &mut w,
        &InfoMallOptions {
            compress,
            ..InfoMallOptions::default()
        },
        &mut rep,
    )
    .unwrap();
    assert_eq!(rep.skipped.get("warcinfo"), Some(&1));
    w.finish().unwrap()
}

#[test]
fn page_dat_round_trip() {
    let data = std::fs::read(common::fixture("tianwang/page.dat")).unwrap();
    let orig = captures(&data);
    assert_eq!(orig.len(), 654);
    let back = round_trip(&data, true);
    assert_eq!(captures(&back), orig);
    // Compressed again: every record has unzip-length.
    let mut r = infomall::Reader::new(&back[..]);
    while let Some(rec) = r.next_record().unwrap() {
        assert!(rec.is_compressed());
        assert!(rec.infomall_header().unzip_length().flatten().is_some());
    }
}

#[test]
fn tse_style_round_trip_keeps_every_property() {
    // Uncompressed, origin after a redirect, a host name for ip, an old
    // `time` property, an unknown one, the \r\n\n separator TSE wrote.
    let mut data = Vec::new();
    let mut w = infomall::Writer::new(&mut data);
    let mut p = Properties::new("http://example.com/a b", "Tue, 15 Apr 2003 08:13:06 GMT");
    p.origin = Some(b"http://example.com/".to_vec());
    p.ip = Some(b"www.example.com".to_vec());
    p.extra.push(("crawler".into(), b"tse 1.0".to_vec()));
    w.write(
        &p,
        &mut &b"HTTP/1.1 200 OK\r\nServer: x\r\n\n<html>a</html>"[..],
        false,
    )
    .unwrap();
    let mut q = Properties::new("http://example.com/b", "Tue, 15 Apr 2003 08:13:07 +0800");
    q.date_name = "time".into();
    q.ip = Some(b"unknown".to_vec());
    w.write(&q, &mut &b"not http"[..], false).unwrap();
    w.finish().unwrap();
    let back = round_trip(&data, false);
    assert_eq!(back, data, "{}", String::from_utf8_lossy(&back));
    // Through the WARC: the URL is percent-encoded there, the rest in a
    // metadata record.
    let warc = to_warc_bytes(&data, "tse.dat", Compression::None, Version::V1_1);
    let text = String::from_utf8_lossy(&warc);
    assert!(
        text.contains("WARC-Target-URI: http://example.com/a%20b\r\n"),
        "{text}"
    );
    assert!(text.contains("url: http://example.com/a b\r\norigin: http://example.com/\r\nip: www.example.com\r\ncrawler: tse 1.0\r\n"), "{text}");
    assert!(
        text.contains("Content-Type: application/octet-stream"),
        "{text}"
    );
    assert!(text.contains("WARC-Date: 2003-04-15T00:13:07Z"), "{text}");
}

#[test]
fn arc_responses_to_infomall() {
    let data = std::fs::read(common::fixture("jwat/small_BNF.arc")).unwrap();
    let mut r = Reader::new(&data[..]).unwrap();
    let mut w = infomall::Writer::new(Vec::new());
    let mut rep = Report::default();
    to_infomall(
        &mut r,
        "small_BNF.arc",
        &mut w,
        &InfoMallOptions::default(),
        &mut rep,
    )
    .unwrap();
    assert_eq!(rep.records_written, 5);
    assert_eq!(rep.skipped.get("metadata"), Some(&1));
    let out = w.finish().unwrap();
    let caps = captures(&out);
    assert_eq!(caps[0].0, b"http://cctr.umkc.edu:80/user/jbenz/tst.htm");
    assert_eq!(caps[0].2, b"Thu, 17 Apr 1997 17:57:10 GMT");
    assert_eq!(caps[0].3.as_deref(), Some(b"134.193.4.1".as_slice()));
}
