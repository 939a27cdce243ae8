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

/// The WAT of the archive `input` (named `name`), read back: the JSON
/// envelope of each metadata record.
fn wat_envelopes(input: &[u8], name: &str) -> Vec<serde_json::Value> {
    let mut reader = Reader::new(input).unwrap();
    let mut wat = Vec::new();
    let mut w = Writer::new(&mut wat, WriterOptions::default()).unwrap();
    write_warc(WarcKind::Wat, &mut reader, name, "out.wat", true, &mut w).unwrap();
    drop(w);
    let mut reader = Reader::new(&wat[..]).unwrap();
    let mut envelopes = Vec::new();
    while let Some(mut rec) = reader.next_record().unwrap() {
        if rec.header().record_type() == RecordType::Metadata {
            let body = rec.read_block().unwrap();
            envelopes.push(serde_json::from_slice(&body).unwrap());
        }
    }
    envelopes
}

#[test]
fn css_and_onclick_links_in_common_crawls_layout() {
    let envelopes = wat_envelopes(&fixture_warc(), "links.warc");
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

#[test]
fn arc_input_gives_common_crawls_arc_envelope() {
    let page = b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\n<title>An ARC page</title><a href=\"/x\">x</a>";
    let desc = b"1 1 InternetArchive\nURL IP-address Archive-date Content-type Archive-length\n";
    let mut arc = Vec::new();
    arc.extend_from_slice(
        format!(
            "filedesc://t.arc 0.0.0.0 20240102030405 text/plain {}\n",
            desc.len()
        )
        .as_bytes(),
    );
    arc.extend_from_slice(desc);
    arc.extend_from_slice(b"\n");
    arc.extend_from_slice(
        format!(
            "http://arc.example/ 192.0.2.1 20240102030406 text/html {}\n",
            page.len()
        )
        .as_bytes(),
    );
    arc.extend_from_slice(page);
    arc.extend_from_slice(b"\n");
    let envelopes = wat_envelopes(&arc, "t.arc");
    assert_eq!(envelopes.len(), 2);
    let desc = &envelopes[0]["Envelope"];
    assert_eq!(desc["Format"], "ARC");
    assert_eq!(
        desc["ARC-Header-Metadata"]["Target-URI"],
        "filedesc://t.arc"
    );
    let p = &desc["Payload-Metadata"];
    assert_eq!(p["Actual-Content-Type"], "alexa/filedesc");
    assert_eq!(p["Filedesc-Metadata"]["Organization"], "InternetArchive");
    assert_eq!(
        p["Filedesc-Metadata"]["Format"],
        "URL IP-address Archive-date Content-type Archive-length"
    );
    let env = &envelopes[1]["Envelope"];
    assert_eq!(env["Format"], "ARC");
    assert!(env.get("WARC-Header-Metadata").is_none());
    assert_eq!(
        env["ARC-Header-Metadata"],
        serde_json::json!({"Target-URI": "http://arc.example/", "IP-Address": "192.0.2.1",
            "Date": "20240102030406", "Content-Type": "text/html",
            "Content-Length": page.len().to_string()})
    );
    let m = &env["Payload-Metadata"]["HTTP-Response-Metadata"];
    assert_eq!(m["HTML-Metadata"]["Head"]["Title"], "An ARC page");
}
