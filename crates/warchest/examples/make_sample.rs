//! Writes `samples/sample.warc.gz`, the small archive the README's quick start
//! reads: a warcinfo record, a request/response pair with a chunked, gzip
//! encoded body, a revisit of it, a resource and a metadata record, each in
//! its own gzip member with digests computed by warchest. The revisit
//! keeps the HTTP head only and says so (`WARC-Truncated: length`, WARC 1.1
//! section 6.7.2), so the sample passes `warchest validate`.
//!
//! Run: `cargo run -p warchest --example make_sample -- samples/sample.warc.gz`

use std::fs::File;
use std::io::Write;

use warchest::warc::{RecordType, WarcDate};
use warchest::write::{Body, NewRecord, Writer, WriterOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "samples/sample.warc.gz".into());
    let mut w = Writer::new(File::create(&path)?, WriterOptions::default())?;
    // Fixed dates and record ids: the sample is the same, byte for byte,
    // on every run (its offsets are quoted in the README and the tests).
    let date = |s: &str| WarcDate::parse(s).expect("valid date");
    let id = |n: u32| format!("<urn:uuid:6f1c2a9e-5b7d-4e3a-9c1f-{n:012x}>");

    let mut info = NewRecord::new(RecordType::Warcinfo);
    info.set("WARC-Record-ID", id(1))?
        .set("WARC-Filename", "sample.warc.gz")?
        .set("Content-Type", "application/warc-fields")?
        .date(date("2026-11-22T12:00:00Z"));
    let info_id = info.record_id();
    let fields = "software: warchest/0.1.0 examples/make_sample.rs\r\n\
format: WARC File Format 1.1\r\n\
conformsTo: http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/\r\n\
description: a sample written by warchest for its README\r\n";
    w.write(&mut info, Body::Bytes(fields.as_bytes()))?;

    let html = b"<!doctype html><title>Hello</title><h1>Hello, archive</h1>\n";
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(html)?;
    let body = gz.finish()?;
    let mut response = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Encoding: gzip\r\n\
Transfer-Encoding: chunked\r\n\r\n{:x}\r\n",
        body.len()
    )
    .into_bytes();
    response.extend_from_slice(&body);
    response.extend_from_slice(b"\r\n0\r\n\r\n");

    let uri = "http://example.com/";
    let mut resp = NewRecord::new(RecordType::Response);
    resp.set("WARC-Record-ID", id(2))?
        .set("WARC-Target-URI", uri)?
        .set("WARC-IP-Address", "93.184.215.14")?
        .set("WARC-Warcinfo-ID", &info_id)?
        .set("Content-Type", "application/http; msgtype=response")?
        .date(date("2026-11-22T12:00:01.250000Z"));
    let resp_id = resp.record_id();
    w.write(&mut resp, Body::Bytes(&response))?;

    let mut req = NewRecord::new(RecordType::Request);
    req.set("WARC-Record-ID", id(3))?
        .set("WARC-Target-URI", uri)?
        .set("WARC-IP-Address", "93.184.215.14")?
        .set("WARC-Concurrent-To", &resp_id)?
        .set("WARC-Warcinfo-ID", &info_id)?
        .set("Content-Type", "application/http; msgtype=request")?
        .date(date("2026-11-22T12:00:01.250000Z"));
    let request = b"GET / HTTP/1.1\r\nHost: example.com\r\nUser-Agent: warchest-sample\r\nAccept-Encoding: gzip\r\n\r\n";
    w.write(&mut req, Body::Bytes(request))?;

    // A later capture with the same payload, stored as a revisit.
    let payload_digest = resp
        .header()
        .payload_digest()
        .map(|d| d.into_owned())
        .unwrap_or_default();
    let mut revisit = NewRecord::new(RecordType::Revisit);
    revisit
        .set("WARC-Record-ID", id(4))?
        .set("WARC-Target-URI", uri)?
        .set(
            "WARC-Profile",
            warchest::warc::profile::IDENTICAL_PAYLOAD_DIGEST_1_1,
        )?
        .set("WARC-Refers-To", &resp_id)?
        .set("WARC-Refers-To-Target-URI", uri)?
        .set("WARC-Refers-To-Date", "2026-11-22T12:00:01.250000Z")?
        .set("WARC-Payload-Digest", &payload_digest)?
        // The block keeps the HTTP head only: WARC 1.1 section 6.7.2 has
        // an identical-payload-digest revisit say so.
        .set("WARC-Truncated", "length")?
        .set("WARC-Warcinfo-ID", &info_id)?
        .set("Content-Type", "application/http; msgtype=response")?
        .date(date("2026-11-22T13:00:00Z"));
    let head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Encoding: gzip\r\n\r\n";
    w.write(&mut revisit, Body::Bytes(head))?;

    let mut res = NewRecord::new(RecordType::Resource);
    res.set("WARC-Record-ID", id(5))?
        .set("WARC-Target-URI", "file:///notes/readme.txt")?
        .set("WARC-Warcinfo-ID", &info_id)?
        .set("Content-Type", "text/plain")?
        .date(date("2026-11-20T08:30:00Z"));
    let res_id = res.record_id();
    w.write(
        &mut res,
        Body::Bytes(b"A plain text file archived as a resource record.\n"),
    )?;

    let mut meta = NewRecord::new(RecordType::Metadata);
    meta.set("WARC-Record-ID", id(6))?
        .set("WARC-Target-URI", "file:///notes/readme.txt")?
        .set("WARC-Refers-To", &res_id)?
        .set("WARC-Warcinfo-ID", &info_id)?
        .set("Content-Type", "application/warc-fields")?
        .date(date("2026-11-22T12:00:02Z"));
    w.write(&mut meta, Body::Bytes(b"size: 50\r\nmode: 0644\r\n"))?;
    w.finish()?.sync_all()?;
    eprintln!("wrote {path}");
    Ok(())
}
