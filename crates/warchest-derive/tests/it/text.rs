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
