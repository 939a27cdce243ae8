//! Any bytes as a request to `warchest serve`, answered in process
//! (`Server::answer`) on the UI origin or the replay origin, over a small
//! collection written once (a page with links of every kind, its CSS and
//! script, a redirect, a revisit, a POST, a chunked answer, a cookie, a
//! resource record): the replay URL, the CDX and Memento APIs' parameters,
//! the calendar, the record and file downloads and the cookies all read
//! what a client sends. No panic; every answer has a status a client can
//! be sent and under 500 (the collection is sound: whatever is asked, a
//! fault is the request's), a HEAD answer no body, a body within the limit
//! or said to be cut.
//!
//! The first byte picks the origin and the method, and (bit 3) a second
//! server over the same collection with access rules (an excluded prefix,
//! a blocked redirect, a user's own rule named by `X-User`, an embargo):
//! its answers too are under 500; the rest is the request target, then one
//! header field a line (`Name: value`).
#![no_main]
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use warchest_serve::{ServeOptions, Server};

/// The most body bytes read of an answer.
const MAX_BODY: usize = 1 << 20;

fn record(kind: &str, uri: &str, date: &str, ctype: &str, extra: &str, block: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "WARC/1.1\r\nWARC-Type: {kind}\r\nWARC-Date: {date}\r\nWARC-Target-URI: {uri}\r\n\
         Content-Type: {ctype}\r\n{extra}Content-Length: {}\r\n\r\n",
        block.len()
    )
    .into_bytes();
    r.extend_from_slice(block);
    r.extend_from_slice(b"\r\n\r\n");
    r
}

fn response(uri: &str, date: &str, head: &str, body: &[u8]) -> Vec<u8> {
    let mut block = format!("HTTP/1.1 {head}\r\n\r\n").into_bytes();
    block.extend_from_slice(body);
    record(
        "response",
        uri,
        date,
        "application/http; msgtype=response",
        "",
        &block,
    )
}

/// The server (with access rules, or without), bound once on loopback
/// ports (never run: requests are answered in process), and the directory
/// holding its files.
fn server(with_rules: bool) -> &'static Server {
    static SERVER: OnceLock<(tempfile::TempDir, Server)> = OnceLock::new();
    static RULED: OnceLock<(tempfile::TempDir, Server)> = OnceLock::new();
    let lock = if with_rules { &RULED } else { &SERVER };
    &lock
        .get_or_init(|| {
            let page = b"<html><head><base href=\"/d/\"><meta http-equiv=refresh content=\"5; url=/r\">\
                <link rel=stylesheet href=\"s.css\"><script src=\"http://a.example/app.js\"></script>\
                <style>body{background:url('/i.png')}</style></head><body>\
                <a href=\"/x?a=1&amp;b=2\">x</a><img srcset=\"/i.png 1x, /j.png 2x\">\
                <iframe src=\"//b.example/doc.txt\"></iframe><div style=\"background:url(&#47;k.png)\">\
                </div><script>fetch('/api');location.href='/r';</script></body></html>";
            let css = b"@import url(\"t.css\"); body { background: url(/i.png) } /* \xff */";
            let js = b"var u = '/x'; document.write('<img src=\"/i.png\">'); import('./m.js');";
            let digest = "WARC-Payload-Digest: sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\r\n";
            let mut data = Vec::new();
            data.extend(response(
                "http://a.example/",
                "2014-01-26T20:06:24Z",
                "200 OK\r\nContent-Type: text/html; charset=utf-8\r\nSet-Cookie: s=1; Path=/; Domain=a.example",
                page,
            ));
            data.extend(response("http://a.example/d/s.css", "2014-01-26T20:06:25Z", "200 OK\r\nContent-Type: text/css", css));
            data.extend(response("http://a.example/app.js", "2014-01-26T20:06:26Z", "200 OK\r\nContent-Type: application/javascript", js));
            data.extend(response("http://a.example/r", "2014-01-26T20:06:27Z", "302 Found\r\nLocation: /\r\nContent-Length: 0", b""));
            data.extend(response(
                "http://a.example/x?a=1&b=2",
                "2014-01-26T20:06:28Z",
                "200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked",
                b"5\r\nhello\r\n0\r\n\r\n",
            ));
            data.extend(record(
                "revisit",
                "http://a.example/",
                "2015-02-01T00:00:00Z",
                "application/http; msgtype=response",
                &format!(
                    "WARC-Profile: http://netpreserve.org/warc/1.1/revisit/identical-payload-digest\r\n\
                     WARC-Refers-To-Target-URI: http://a.example/\r\n\
                     WARC-Refers-To-Date: 2014-01-26T20:06:24Z\r\n{digest}"
                ),
                b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n",
            ));
            data.extend(record(
                "request",
                "http://a.example/api",
                "2014-01-26T20:06:29Z",
                "application/http; msgtype=request",
                "",
                b"POST /api HTTP/1.1\r\nHost: a.example\r\nContent-Type: application/json\r\n\
                  Content-Length: 9\r\n\r\n{\"a\": 1}\n",
            ));
            data.extend(response("http://a.example/api", "2014-01-26T20:06:29Z", "200 OK\r\nContent-Type: application/json", b"{\"ok\":true}"));
            data.extend(record("resource", "http://b.example/doc.txt", "2016-03-04T05:06:07Z", "text/plain", "", b"plain \xe9 text"));
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join("fuzz.warc");
            std::fs::write(&file, &data).unwrap();
            let mut opts = ServeOptions::new(vec![file]);
            opts.listen = "127.0.0.1:0".into();
            opts.store = Some(dir.path().join("index.redb"));
            opts.poll = None;
            if with_rules {
                use warchest_replay::access::{AccessRules, Embargo, Verdict, When};
                opts.access = AccessRules::parse(
                    "example,a)/d - {\"access\": \"exclude\"}\n\
                     example,a)/d - {\"access\": \"allow\", \"user\": \"staff\"}\n\
                     example,a)/r - {\"access\": \"block\"}\n\
                     example,a)/api### - {\"access\": \"allow_ignore_embargo\"}\n\
                     *, - {\"access\": \"block\", \"after\": \"2016\"}\n",
                    "fuzz.aclj",
                )
                .unwrap()
                .with_embargo(Some(Embargo {
                    when: vec![When::Before(When::at("20140126200627").unwrap())],
                    verdict: Verdict::Exclude,
                }));
                opts.access_user_header = Some("X-User".into());
            }
            let server = Server::bind(opts).unwrap();
            (dir, server)
        })
        .1
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let to_replay = first & 1 == 1;
    let method = ["GET", "HEAD", "POST", "OPTIONS"][usize::from(first >> 1) % 4];
    let text = String::from_utf8_lossy(rest);
    let mut lines = text.split('\n');
    let target = lines.next().unwrap_or_default();
    let target = if target.starts_with('/') {
        target.to_string()
    } else {
        format!("/{target}")
    };
    let headers: Vec<(&str, &str)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim(), v.trim()))
        .filter(|(n, _)| !n.is_empty())
        .take(100)
        .collect();
    let a = server(first & 8 != 0).answer(to_replay, method, &target, &headers, MAX_BODY);
    // The collection is sound: a 5xx (a handler's error, an archive that
    // cannot be read) would be the server's fault, whatever was asked.
    assert!(
        (100..500).contains(&a.status),
        "status {} for {method} {target:?}",
        a.status
    );
    assert!(a.body.len() <= MAX_BODY);
    if method == "HEAD" {
        assert!(a.body.is_empty(), "a HEAD answer with a body");
    }
});
