//! The record page says what is wrong with a damaged record's payload:
//! a record cut short ("truncated"), a payload that does not decode (the
//! error), the lenient recoveries reading it; a whole record says nothing.

use crate::{Running, get};

fn response(uri: &str, http: &str) -> Vec<u8> {
    format!(
        "WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-{:012}>\r\n\
WARC-Date: 2024-01-01T00:00:00Z\r\nWARC-Target-URI: {uri}\r\n\
Content-Type: application/http; msgtype=response\r\nContent-Length: {}\r\n\r\n{http}\r\n\r\n",
        uri.len(),
        http.len()
    )
    .into_bytes()
}

/// The `payload-damage` list of a record page ("" when there is none).
fn damage(page: &str) -> &str {
    page.split_once("<ul id=\"payload-damage\">")
        .and_then(|(_, r)| r.split_once("</ul>"))
        .map_or("", |(d, _)| d)
}

#[test]
fn the_record_page_says_what_is_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let warc = dir.path().join("damaged.warc");
    let plain = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello";
    let mut bytes = response("http://a.test/", plain);
    // A gzip-encoded payload that is not gzip.
    let not_gzip = bytes.len();
    bytes.extend(response(
        "http://a.test/z",
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Encoding: gzip\r\n\r\nnot gzip at all",
    ));
    // Header lines ending in bare LFs.
    let bare_at = bytes.len();
    let r = String::from_utf8(response("http://a.test/b", plain)).unwrap();
    let (head, rest) = r.split_once("\r\n\r\n").unwrap();
    bytes.extend(format!("{}\n\n{rest}", head.replace("\r\n", "\n")).into_bytes());
    // Cut short, last.
    let cut_at = bytes.len();
    let cut = response("http://a.test/c", plain);
    bytes.extend_from_slice(&cut[..cut.len() - 7]);
    std::fs::write(&warc, &bytes).unwrap();

    let s = Running::start(&[&warc], &dir.path().join("index.redb"));
    let page = |off: usize| {
        let p = get(&s.addr, &format!("/archive/record/0/{off}"));
        assert!(p.starts_with("HTTP/1.1 200"), "{p}");
        p
    };
    let p = page(0);
    assert!(p.contains("hello"), "{p}");
    assert_eq!(damage(&p), "", "{p}");

    let p = page(not_gzip);
    let d = damage(&p);
    assert!(d.contains("did not decode"), "{p}");

    let p = page(bare_at);
    let d = damage(&p);
    assert!(d.contains("1 lenient recovery: bare-lf (1)"), "{p}");
    assert!(!d.contains("truncated"), "{p}");

    let p = page(cut_at);
    let d = damage(&p);
    assert!(
        d.contains("truncated: the record ends before its Content-Length"),
        "{p}"
    );
    assert!(d.contains("truncated-record"), "{p}");
    assert!(p.contains("<pre id=\"payload-text\">he</pre>"), "{p}");
    s.stop().unwrap();
}
