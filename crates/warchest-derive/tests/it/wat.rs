//! WAT records of a page with links in CSS and in script handlers
//! (tests/fixtures/wat-links.html), read back from the derived WARC.

use warchest::archive::Reader;
use warchest::warc::RecordType;
use warchest::write::{Body, NewRecord, Writer, WriterOptions};
use warchest_derive::derive::{WarcKind, write_warc};

fn fixture_warc() -> Vec<u8> {
    let page = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/wat-links.html"
    ))
    .unwrap();
    let mut block = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n".to_vec();
    block.extend(page);
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out, WriterOptions::default()).unwrap();
    let mut r = NewRecord::new(RecordType::Response);
    r.set("WARC-Target-URI", "http://links.example/")
        .unwrap()
        .set("Content-Type", "application/http; msgtype=response")
        .unwrap();
    w.write(&mut r, Body::Bytes(&block)).unwrap();
    drop(w);
    out
}

#[test]
fn css_and_onclick_links_in_common_crawls_layout() {
    let warc = fixture_warc();
    let mut reader = Reader::new(&warc[..]).unwrap();
    let mut wat = Vec::new();
    let mut w = Writer::new(&mut wat, WriterOptions::default()).unwrap();
    write_warc(
        WarcKind::Wat,
        &mut reader,
        "links.warc",
        "links.wat",
        true,
        &mut w,
    )
    .unwrap();
    drop(w);

    let mut reader = Reader::new(&wat[..]).unwrap();
    let mut envelopes = Vec::new();
    while let Some(mut rec) = reader.next_record().unwrap() {
        if rec.header().record_type() == RecordType::Metadata {
            let body = rec.read_block().unwrap();
            envelopes.push(serde_json::from_slice::<serde_json::Value>(&body).unwrap());
        }
    }
    assert_eq!(envelopes.len(), 1);
    let html =
        &envelopes[0]["Envelope"]["Payload-Metadata"]["HTTP-Response-Metadata"]["HTML-Metadata"];
    let links = html["Links"].as_array().unwrap();
    let got: Vec<serde_json::Value> = links.clone();
    let want = serde_json::json!([
        // The style element: every url() first, then @import, keyed `href`.
        {"path": "STYLE/#text", "href": "/css/screen.css"},
        {"path": "STYLE/#text", "href": "/img/bg.png"},
        {"path": "STYLE/#text", "href": "/img/logo.svg"},
        {"path": "STYLE/#text", "href": "/css/print.css"},
        {"path": "BODY@/background", "url": "/img/paper.gif"},
        {"path": "DIV@/onclick", "url": "/articles/1.html"},
        {"path": "DIV@/onclick", "url": "/popup.html"},
        {"path": "INPUT@/onclick", "url": "/go.html"},
        {"path": "A@/href", "url": "/about.html", "title": "About us", "text": "About"},
    ]);
    assert_eq!(serde_json::Value::Array(got), want);
    // Nothing was taken from the script's text.
    let text = envelopes[0].to_string();
    assert!(!text.contains("not-a-link"), "{text}");
}
