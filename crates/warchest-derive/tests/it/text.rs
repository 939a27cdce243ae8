//! The per-record text helper on records read from an archive.

use warchest::archive::Reader;
use warchest::warc::RecordType;
use warchest::write::{Body, NewRecord, Writer, WriterOptions};
use warchest_derive::text::{Kind, extract_record};

fn record(kind: RecordType, uri: &str, content_type: &str, block: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out, WriterOptions::default()).unwrap();
    let mut r = NewRecord::new(kind);
    r.set("WARC-Target-URI", uri)
        .unwrap()
        .set("Content-Type", content_type)
        .unwrap();
    w.write(&mut r, Body::Bytes(block)).unwrap();
    drop(w);
    out
}

#[test]
fn text_of_responses_and_resources_only() {
    let mut warc = record(
        RecordType::Response,
        "http://a.example/",
        "application/http; msgtype=response",
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=windows-1252\r\nTransfer-Encoding: chunked\r\n\r\n\
          20\r\n<title>Caf\xe9</title><p>one<br>two\r\n0\r\n\r\n",
    );
    warc.extend(record(
        RecordType::Request,
        "http://a.example/",
        "application/http; msgtype=request",
        b"GET / HTTP/1.1\r\nHost: a.example\r\n\r\n",
    ));
    warc.extend(record(
        RecordType::Resource,
        "file:///a.txt",
        "text/plain",
        b"plain  text\n\nhere",
    ));
    warc.extend(record(
        RecordType::Resource,
        "file:///a.png",
        "image/png",
        b"\x89PNG",
    ));
    let mut reader = Reader::new(&warc[..]).unwrap();
    let mut docs = Vec::new();
    while let Some(mut rec) = reader.next_record().unwrap() {
        docs.push(extract_record(&mut rec).unwrap());
    }
    assert_eq!(docs.len(), 4);
    let html = docs[0].as_ref().expect("the response has text");
    assert_eq!(html.kind, Kind::Html);
    assert_eq!(html.title.as_deref(), Some("Café"));
    assert_eq!(html.text, "Café\none\ntwo");
    assert_eq!(html.charset, "windows-1252");
    assert!(docs[1].is_none(), "a request has no text");
    let plain = docs[2].as_ref().expect("the text resource has text");
    assert_eq!(
        (plain.kind, plain.text.as_str()),
        (Kind::Plain, "plain text\nhere")
    );
    assert!(docs[3].is_none(), "an image has no text");
}

/// A response announcing gzip whose body is not gzip gives its text from
/// the bytes as stored, and the summary counts it, with its offset; one
/// whose body is cut inside the gzip data counts as cut short; a clean
/// one counts nothing.
#[test]
fn text_rows_count_payload_fallbacks() {
    use warchest::http::PayloadFallback;
    use warchest::recoveries::DEFAULT_KEPT;
    use warchest_derive::derive::{Summary, text_rows};
    let head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Encoding: gzip\r\n\r\n";
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, "clean text ".repeat(50).as_bytes()).unwrap();
    let gz = gz.finish().unwrap();
    let response = |body: &[u8]| {
        record(
            RecordType::Response,
            "http://a.example/",
            "application/http; msgtype=response",
            &[&head[..], body].concat(),
        )
    };
    let mut warc = response(&gz);
    let plain_at = warc.len() as u64;
    warc.extend(response(b"plain text"));
    let cut_at = warc.len() as u64;
    warc.extend(response(&gz[..gz.len() - 10]));
    let mut reader = Reader::new(&warc[..]).unwrap();
    let mut texts = Vec::new();
    let summary = text_rows(
        &mut reader,
        "a.warc",
        |rows| -> Result<(), warchest::Error> {
            texts.extend(rows.into_iter().map(|r| r.text));
            Ok(())
        },
    )
    .unwrap();
    assert_eq!(texts.len(), 3);
    assert_eq!(texts[1], "plain text");
    let tally = &summary.payload_fallbacks;
    assert_eq!(tally.total(), 2);
    assert_eq!(
        tally.by_kind(),
        [
            (PayloadFallback::ContentUndecoded, 1),
            (PayloadFallback::CutShort, 1)
        ]
    );
    let at: Vec<(&str, u64, Vec<PayloadFallback>)> = tally
        .kept()
        .map(|(file, e)| (file, e.offset, e.fallbacks.iter().collect()))
        .collect();
    assert_eq!(
        at,
        [
            ("a.warc", plain_at, vec![PayloadFallback::ContentUndecoded]),
            ("a.warc", cut_at, vec![PayloadFallback::CutShort]),
        ]
    );
    // Added up, the kept ones stay bounded and counts go on.
    let mut total = Summary::default();
    for _ in 0..DEFAULT_KEPT + 5 {
        total.add(summary.clone());
    }
    assert_eq!(total.payload_fallbacks.kept().len(), DEFAULT_KEPT);
    assert_eq!(
        total.payload_fallbacks.total(),
        2 * (DEFAULT_KEPT as u64 + 5)
    );
    assert_eq!(total.records_in, 3 * (DEFAULT_KEPT as u64 + 5));
}

/// A text cut at MAX_BODY and a text whose bytes its charset does not
/// decode are counted, in text rows and in a WET, and a clean one is not.
#[test]
fn texts_cut_and_with_bytes_replaced_are_counted() {
    use warchest_derive::derive::{WarcKind, text_rows, write_warc};
    use warchest_derive::text::MAX_BODY;
    let response = |ct: &str, body: &[u8]| {
        let head = format!("HTTP/1.1 200 OK\r\nContent-Type: {ct}\r\n\r\n");
        record(
            RecordType::Response,
            "http://a.example/",
            "application/http; msgtype=response",
            &[head.as_bytes(), body].concat(),
        )
    };
    let mut warc = response("text/plain; charset=utf-8", b"clean text");
    warc.extend(response("text/plain; charset=utf-8", b"bad \xff\xfe bytes"));
    warc.extend(response("text/plain", &b"long ".repeat(MAX_BODY / 5 + 10)));
    let mut reader = Reader::new(&warc[..]).unwrap();
    let s = text_rows(&mut reader, "a.warc", |_| -> Result<(), warchest::Error> {
        Ok(())
    })
    .unwrap();
    assert_eq!((s.records_out, s.texts_cut, s.texts_replaced), (3, 1, 1));
    assert_eq!(
        s.texts_summary().unwrap(),
        "texts: 1 from the first 8 MiB of a longer body, 1 with bytes their charset does not \
         decode (replaced with U+FFFD)"
    );
    let mut reader = Reader::new(&warc[..]).unwrap();
    let mut out = warchest::write::Writer::new(Vec::new(), WriterOptions::default()).unwrap();
    let w = write_warc(
        WarcKind::Wet,
        &mut reader,
        "a.warc",
        "a.wet",
        true,
        &mut out,
    )
    .unwrap();
    assert_eq!((w.records_out, w.texts_cut, w.texts_replaced), (3, 1, 1));
    let clean = response("text/plain; charset=utf-8", b"clean text");
    let mut reader = Reader::new(&clean[..]).unwrap();
    let s = text_rows(&mut reader, "c.warc", |_| -> Result<(), warchest::Error> {
        Ok(())
    })
    .unwrap();
    assert_eq!(s.texts_summary(), None);
}
