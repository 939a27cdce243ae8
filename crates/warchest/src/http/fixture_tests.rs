//! Tests against real archive files in the shared fixture directory. The
//! WARC reader is not used: records are sliced out ad hoc by their
//! Content-Length. When the fixtures are absent the tests say so and pass.

use std::io::Read;
use std::path::Path;

use super::*;
use crate::digest::{Algorithm, Digest, Hasher};

const FIXTURES: &str = "/work/shared/fixtures";

fn load(rel: &str) -> Option<Vec<u8>> {
    let path = Path::new(FIXTURES).join(rel);
    let raw = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("skipping: {}: {e}", path.display());
            return None;
        }
    };
    if rel.ends_with(".gz") {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .expect("fixture gunzips");
        Some(out)
    } else {
        Some(raw)
    }
}

struct Record<'a> {
    head: String,
    block: &'a [u8],
}

impl Record<'_> {
    /// A WARC header value, by ad-hoc line search.
    fn field(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim_matches([' ', '\r']))
        })
    }
}

/// Splits an uncompressed WARC file into records: header up to the first
/// line of nothing but CRs, block of Content-Length bytes after it.
fn records(data: &[u8]) -> Vec<Record<'_>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some(i) = data[pos..].windows(7).position(|w| w == b"WARC/1.") {
        let start = pos + i;
        let mut j = start;
        let head_end = loop {
            let lf = j + data[j..]
                .iter()
                .position(|&b| b == b'\n')
                .expect("header ends");
            let mut k = lf + 1;
            while data[k] == b'\r' {
                k += 1;
            }
            if data[k] == b'\n' {
                break k + 1;
            }
            j = lf + 1;
        };
        let head = String::from_utf8_lossy(&data[start..head_end]).into_owned();
        let mut r = Record { head, block: &[] };
        let len: usize = r
            .field("Content-Length")
            .expect("length")
            .parse()
            .expect("number");
        r.block = &data[head_end..head_end + len];
        pos = head_end + len;
        out.push(r);
    }
    out
}

fn head_of(block: &[u8]) -> (HttpHead, usize) {
    HttpHead::parse(block)
        .expect("HTTP")
        .expect("complete head")
}

fn payload(alg: Algorithm, block: &[u8], piece: usize) -> PayloadDigests {
    let (head, len) = head_of(block);
    let mut d = PayloadDigester::for_head(alg, &head);
    for p in block[len..].chunks(piece) {
        d.update(p);
    }
    d.finish()
}

#[test]
fn iana_chunked_response_digested_raw() {
    let Some(data) = load("warcio/example-iana.org-chunked.warc") else {
        return;
    };
    let recs = records(&data);
    assert_eq!(recs.len(), 3);
    let resp = &recs[1];
    assert_eq!(resp.field("WARC-Type"), Some("response"));
    // Block digest, recorded in hex.
    let block_digest = Digest::parse(resp.field("WARC-Block-Digest").unwrap()).unwrap();
    assert_eq!(
        block_digest.encoding(),
        Some(crate::digest::Encoding::Base16)
    );
    assert!(block_digest.matches(&Hasher::digest(Algorithm::Sha1, resp.block)));

    let (head, len) = head_of(resp.block);
    assert_eq!(head.status(), Some(200));
    assert_eq!(head.reason(), b"OK");
    assert!(head.is_chunked());
    assert_eq!(head.transfer_encoding(), vec![Coding::Chunked]);
    assert_eq!(head.charset().as_deref(), Some("UTF-8"));
    assert_eq!(head.header("x-cache-hits").as_deref(), Some(&b"157098"[..]));
    assert!(head.notes().is_empty(), "{:?}", head.notes());
    let body = &resp.block[len..];
    assert!(body.starts_with(b"001c37\r\n<!doctype html>"));
    assert_eq!(sniff_chunked(body), Some(true));

    // The recorded payload digest is of the raw chunked bytes (warcprox
    // did this): the checker can say so.
    let recorded = Digest::parse(resp.field("WARC-Payload-Digest").unwrap()).unwrap();
    for piece in [1, 100, 4096, body.len()] {
        let p = payload(Algorithm::Sha1, resp.block, piece);
        assert_eq!(p.chunking, Chunking::Complete);
        assert_eq!(p.payload_len, 0x1c37);
        assert_eq!(p.raw_len, body.len() as u64);
        assert_eq!(p.check(&recorded), PayloadMatch::RawChunked);
    }

    // Decoding through the reader gives the same payload.
    let mut r = ChunkedReader::new(body);
    let mut out = Vec::new();
    r.read_to_end(&mut out).unwrap();
    assert_eq!(out.len(), 0x1c37);
    assert!(out.ends_with(b"</html>\n"));
    assert_eq!(r.decoder().end(), ChunkedEnd::Complete);
    let p = payload(Algorithm::Sha1, resp.block, 512);
    assert_eq!(p.payload, Hasher::digest(Algorithm::Sha1, &out));

    let req = &recs[2];
    let (head, len) = head_of(req.block);
    assert!(head.is_request());
    assert_eq!(head.method(), Some(&b"GET"[..]));
    assert_eq!(head.request_target(), Some(&b"/"[..]));
    assert_eq!(head.version(), Some(&b"HTTP/1.1"[..]));
    assert_eq!(head.header("host").as_deref(), Some(&b"www.iana.org"[..]));
    assert_eq!(len, req.block.len());
}

#[test]
fn wrong_chunks_gzip_members_not_chunked() {
    // Despite its name this file's records are split over gzip members
    // ("chunks"); the HTTP is not chunked.
    let Some(data) = load("warcio/example-wrong-chunks.warc.gz") else {
        return;
    };
    let recs = records(&data);
    assert_eq!(recs.len(), 2);
    for r in &recs {
        let (head, _) = head_of(r.block);
        assert!(!head.is_chunked());
        let recorded = Digest::parse(r.field("WARC-Payload-Digest").unwrap()).unwrap();
        let p = payload(Algorithm::Sha1, r.block, 333);
        assert_eq!(p.chunking, Chunking::NotChunked);
        assert_eq!(p.check(&recorded), PayloadMatch::Payload);
    }
    // The response's Content-Length is one byte short of what the writer
    // digested as the block; the request's is right.
    let block = |r: &Record| Digest::parse(r.field("WARC-Block-Digest").unwrap()).unwrap();
    assert!(!block(&recs[0]).matches(&Hasher::digest(Algorithm::Sha1, recs[0].block)));
    assert!(block(&recs[1]).matches(&Hasher::digest(Algorithm::Sha1, recs[1].block)));
    let (head, len) = head_of(recs[0].block);
    assert_eq!(head.content_length(), Some(1271));
    // The stored body is one byte short of Content-Length.
    assert_eq!(recs[0].block.len() - len, 1270);
    let (req, _) = head_of(recs[1].block);
    assert_eq!(req.content_encoding(), Vec::<Coding>::new());
    assert_eq!(
        req.header("accept-encoding").as_deref(),
        Some(&b"Identity"[..])
    );
}

#[test]
fn warcat_not_utf8_header() {
    let Some(data) = load("warcat/not_utf8_http_header.warc") else {
        return;
    };
    let recs = records(&data);
    assert_eq!(recs.len(), 1);
    let (head, len) = head_of(recs[0].block);
    assert_eq!(head.status(), Some(200));
    assert_eq!(head.version_number(), Some((1, 0)));
    assert_eq!(
        head.header("X-SOMTHING").as_deref(),
        Some(&b"\xff\xff\xff"[..])
    );
    let names: Vec<_> = head.headers().map(|f| f.name().to_vec()).collect();
    assert_eq!(names, vec![b"Server".to_vec(), b"X-Somthing".to_vec()]);
    assert_eq!(
        head.notes().iter().map(|n| n.kind).collect::<Vec<_>>(),
        vec![HttpNoteKind::NonUtf8]
    );
    assert_eq!(&recs[0].block[len..], b"a\r\n");
}

#[test]
fn warcat_bad_chunked_content() {
    let Some(data) = load("warcat/bad_http_chunked_content.warc") else {
        return;
    };
    let recs = records(&data);
    let (head, len) = head_of(recs[0].block);
    assert!(head.is_chunked());
    let body = &recs[0].block[len..];
    assert_eq!(body, b"3\r\naa\r\n0");
    // Size 3 takes "aa\r"; the LF ends the chunk; "0" is the last chunk,
    // its line cut off by the end of the block.
    let p = payload(Algorithm::Sha1, recs[0].block, 1);
    assert_eq!(p.chunking, Chunking::MissingFinalCrlf);
    assert_eq!(p.payload, Hasher::digest(Algorithm::Sha1, b"aa\r"));
    let mut out = Vec::new();
    ChunkedReader::new(body).read_to_end(&mut out).unwrap();
    assert_eq!(out, b"aa\r");
}

#[test]
fn pywb_missing_status_text() {
    let Some(data) = load("pywb/missing-status-text.warc") else {
        return;
    };
    let recs = records(&data);
    assert_eq!(recs.len(), 1);
    let r = &recs[0];
    // Lines end in CR CR LF, and Content-Length was counted for CR LF: the
    // block ends before the head's empty line. At the end of the block the
    // caller parses what it has.
    assert!(matches!(HttpHead::parse(r.block), Ok(None)));
    let head = HttpHead::parse_unterminated(r.block, &crate::Limits::default()).unwrap();
    let len = head.len();
    assert_eq!(head.status(), Some(302));
    assert_eq!(head.reason(), b"");
    assert_eq!(head.version(), Some(&b"HTTP/1.0"[..]));
    assert_eq!(
        head.header("location").as_deref(),
        Some(&b"http://www.iana.org/badst"[..])
    );
    assert_eq!(head.content_length(), Some(0));
    assert_eq!(len, r.block.len());
    let kinds: Vec<_> = head.notes().iter().map(|n| n.kind).collect();
    assert_eq!(
        kinds,
        vec![HttpNoteKind::ExtraCr, HttpNoteKind::MissingTerminator]
    );
    // The payload is empty, as recorded.
    let recorded = Digest::parse(r.field("WARC-Payload-Digest").unwrap()).unwrap();
    let mut d = PayloadDigester::for_head(Algorithm::Sha1, &head);
    d.update(&r.block[len..]);
    assert_eq!(d.finish().check(&recorded), PayloadMatch::Payload);
}
