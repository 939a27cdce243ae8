//! HTTP/1.x messages inside records: WARC `request` and `response` blocks
//! (`application/http; msgtype=...`) and ARC / Web InfoMall content.
//!
//! Archived HTTP is whatever the server sent, so everything here is
//! lenient: an odd head is parsed as well as it can be and the oddities are
//! listed as [`HttpNote`]s for the caller to report, never turned into a
//! failure of the record. Only a block that does not start with an HTTP
//! start line at all is an error ([`HttpError::NotHttp`]), and the caller
//! then treats the block as opaque bytes.
//!
//! - [`find_head_end`] / [`HeadFinder`] locate the end of the head in
//!   accumulated bytes; [`HttpHead::parse`] parses it (finding the end in
//!   the same walk). Header fields are a
//!   [`Fields`](crate::fields::Fields), so order, case, repeats and raw bytes
//!   survive.
//! - [`read_head`] and [`read_head_or_bytes`] read a head off the start of
//!   a block; [`HeadReader`] does it block after block into one reused
//!   head.
//! - [`ChunkedDecoder`] (push) and [`ChunkedReader`] (pull) remove the
//!   chunked transfer coding, tolerating what real files contain.
//! - [`decode_content`] stacks decoders for gzip, deflate, br and zstd.
//! - [`BlockDigester`] takes a whole streamed block, finds its head and
//!   feeds the rest to a [`PayloadDigester`].
//! - [`PayloadDigester`] computes the WARC payload digest (transfer coding
//!   removed, content coding kept) and the digest of the raw bytes at once.
//! - [`date`] converts HTTP dates and 14-digit timestamps.

use std::borrow::Cow;
use std::io;

mod block;
mod chunked;
mod coding;
pub mod date;
#[cfg(test)]
mod fixture_tests;
mod head;
mod payload;

pub(crate) use block::read_head_keeping;
pub use block::{
    BlockDigester, HeadReader, PayloadFallback, PayloadFallbacks, PayloadNotes, payload_reader,
    payload_reader_lenient, payload_reader_lenient_noted, payload_reader_send, read_head,
    read_head_or_bytes,
};
pub use chunked::{
    ChunkedDecoder, ChunkedEnd, ChunkedError, ChunkedErrorKind, ChunkedReader, sniff_chunked,
};
pub use coding::{Coding, MAX_CODINGS, decode_content, decode_content_send};
pub use head::{HeadFinder, HttpHead, HttpNote, HttpNoteKind, MessageKind, find_head_end};
pub use payload::{Chunking, PayloadDigester, PayloadDigests, PayloadMatch};

/// Why an HTTP head could not be used, or a body not decoded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// The first line is neither a status line (`HTTP/...`) nor a request
    /// line (`METHOD target [HTTP/...]`): the block is not an HTTP message.
    #[error("not an HTTP message: the first line is neither a status line nor a request line")]
    NotHttp,
    /// The head is longer than [`Limits::max_http_head`](crate::Limits::max_http_head)
    /// (or no end of head was found within it).
    #[error("HTTP head longer than the limit of {limit} bytes")]
    TooLarge {
        /// The limit.
        limit: usize,
    },
    /// More header fields than [`Limits::max_fields`](crate::Limits::max_fields).
    #[error("more than {limit} HTTP header fields")]
    TooManyFields {
        /// The limit.
        limit: usize,
    },
    /// More codings than [`MAX_CODINGS`] to undo:
    /// a hostile head, refused before anything is read.
    #[error("{count} HTTP codings to undo, more than the limit of {limit}")]
    TooManyCodings {
        /// How many the head names (`identity` not counted).
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// A content or transfer coding with no decoder here (`compress`, or a
    /// name we do not know).
    #[error("unsupported HTTP coding {0:?}")]
    UnsupportedCoding(String),
    /// A coding warchest decodes only with a Cargo feature this build
    /// lacks (`br` without `brotli`, `zstd` without `zstd`).
    #[error("HTTP coding {coding:?}: {coding} support not compiled in (feature {feature})")]
    NotCompiledIn {
        /// The coding's name.
        coding: &'static str,
        /// The Cargo feature that adds its decoder.
        feature: &'static str,
    },
    /// Setting up a decoder failed.
    #[error("I/O error: {0}")]
    Io(#[from] io::Error),
}

impl From<HttpError> for crate::Error {
    fn from(e: HttpError) -> Self {
        use crate::ErrorKind;
        match e {
            HttpError::TooLarge { limit } => crate::Error::new(ErrorKind::TooLarge {
                what: "HTTP head",
                limit: limit as u64,
            }),
            HttpError::Io(io) => crate::Error::new(ErrorKind::Io(io)),
            HttpError::NotCompiledIn { coding, feature } => {
                crate::Error::new(ErrorKind::NotCompiledIn {
                    what: coding,
                    feature,
                })
            }
            other => crate::Error::new(ErrorKind::Syntax(other.to_string())),
        }
    }
}

fn is_ws(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

fn trim(mut b: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = b {
        if is_ws(*first) || *first == b'\r' || *first == b'\n' {
            b = rest;
        } else {
            break;
        }
    }
    while let [rest @ .., last] = b {
        if is_ws(*last) || *last == b'\r' || *last == b'\n' {
            b = rest;
        } else {
            break;
        }
    }
    b
}

/// The media type of a Content-Type value, lower-cased and without
/// parameters: `text/html` for `Text/HTML; charset=UTF-8`. `None` when empty.
pub fn media_type(content_type: &[u8]) -> Option<String> {
    let end = memchr::memchr(b';', content_type).unwrap_or(content_type.len());
    let t = trim(&content_type[..end]);
    if t.is_empty() {
        return None;
    }
    Some(String::from_utf8_lossy(t).to_ascii_lowercase())
}

/// [`media_type`] of a Content-Type held as text (a WARC header's, a
/// caller's option): `text/html` for `Text/HTML; charset=UTF-8`. `None`
/// when empty.
pub fn media_type_str(content_type: &str) -> Option<String> {
    media_type(content_type.as_bytes())
}

/// The media type of a Content-Type value as Heritrix cuts it: up to the
/// first white space, `;` or `,` (`text/html` of `text/html
/// charset=UTF-8`, a header written without its `;`), case kept. Empty
/// when there is none. [`media_type`] cuts at `;` only, as the
/// specification reads a value (filters, stats and the index use it);
/// this cut is for what crawlers log and decide pages by, where a
/// malformed header should still count as the type it starts with.
pub fn media_type_token(content_type: &str) -> &str {
    let c = content_type.trim_start_matches(|c: char| c.is_ascii_whitespace());
    let end = c
        .find(|c: char| c.is_ascii_whitespace() || c == ';' || c == ',')
        .unwrap_or(c.len());
    &c[..end]
}

/// Whether a Content-Type names an HTML document: its media type
/// ([`media_type_token`]), ASCII case ignored, is `text/html` or
/// `application/xhtml+xml` (or `application/xhtml`, which Browsertrix
/// Crawler's `HTML_TYPES` counts too). A missing or empty type gives `untyped`: a
/// browser sniffs such a document (and loads it as a page), where a
/// crawler's HTTP client may not count it as one. The one rule the
/// crawl, the browser capture and WACZ pages use.
pub fn is_html_type(content_type: Option<&str>, untyped: bool) -> bool {
    let t = content_type.map_or("", media_type_token);
    if t.is_empty() {
        return untyped;
    }
    ["text/html", "application/xhtml+xml", "application/xhtml"]
        .iter()
        .any(|h| t.eq_ignore_ascii_case(h))
}

/// The value of parameter `name` (ASCII case ignored) of a Content-Type
/// style value (`type/subtype; name=value; name="quoted \" value"`),
/// unquoted. Borrowed unless the quoted string has escapes.
pub fn content_type_param<'a>(content_type: &'a [u8], name: &str) -> Option<Cow<'a, [u8]>> {
    let mut rest = match memchr::memchr(b';', content_type) {
        Some(i) => &content_type[i + 1..],
        None => return None,
    };
    while !rest.is_empty() {
        // Parameter name, up to '=' or the next ';'.
        let stop = rest
            .iter()
            .position(|&b| b == b'=' || b == b';')
            .unwrap_or(rest.len());
        let pname = trim(&rest[..stop]);
        if stop == rest.len() || rest[stop] == b';' {
            rest = rest.get(stop + 1..).unwrap_or(&[]);
            continue;
        }
        let after = &rest[stop + 1..];
        let lead = after.iter().take_while(|&&b| is_ws(b)).count();
        let after = &after[lead..];
        let (value, next): (Cow<'a, [u8]>, &'a [u8]) = if after.first() == Some(&b'"') {
            // quoted-string: up to the closing quote, honouring backslash escapes.
            let mut out: Option<Vec<u8>> = None;
            let mut i = 1;
            let mut end = after.len();
            let mut close = after.len();
            while i < after.len() {
                match after[i] {
                    b'\\' if i + 1 < after.len() => {
                        let o = out.get_or_insert_with(|| after[1..i].to_vec());
                        o.push(after[i + 1]);
                        i += 2;
                        continue;
                    }
                    b'"' => {
                        end = i;
                        close = i + 1;
                        break;
                    }
                    b => {
                        if let Some(o) = &mut out {
                            o.push(b);
                        }
                    }
                }
                i += 1;
            }
            let v = match out {
                Some(o) => Cow::Owned(o),
                None => Cow::Borrowed(&after[1..end]),
            };
            let tail = &after[close.min(after.len())..];
            let semi = memchr::memchr(b';', tail).map_or(&[][..], |i| &tail[i + 1..]);
            (v, semi)
        } else {
            let semi = memchr::memchr(b';', after).unwrap_or(after.len());
            (
                Cow::Borrowed(trim(&after[..semi])),
                after.get(semi + 1..).unwrap_or(&[]),
            )
        };
        if pname.eq_ignore_ascii_case(name.as_bytes()) {
            return Some(value);
        }
        rest = next;
    }
    None
}

/// The `charset` parameter of a Content-Type value, as written (labels are
/// case-insensitive; [`encoding_rs::Encoding::for_label`] takes them as
/// they are). `None` when absent, empty or not ASCII.
pub fn content_type_charset(content_type: &[u8]) -> Option<String> {
    let v = content_type_param(content_type, "charset")?;
    let v = trim(&v);
    if v.is_empty() || !v.is_ascii() {
        return None;
    }
    Some(String::from_utf8_lossy(v).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_is_one_rule() {
        for c in [
            "text/html",
            "Text/HTML; charset=utf-8",
            "text/html charset=UTF-8",
            "text/html,text/plain",
            " text/html",
            "application/xhtml+xml",
            "APPLICATION/XHTML+XML;charset=utf-8",
            "application/xhtml",
        ] {
            assert!(is_html_type(Some(c), false), "{c}");
        }
        for c in [
            "application/json",
            "image/png",
            "text/plain; charset=utf-8",
            "text/htmlx",
            "text/plain text/html",
        ] {
            assert!(!is_html_type(Some(c), true), "{c}");
        }
        for c in [None, Some(""), Some(" ; charset=utf-8")] {
            assert!(is_html_type(c, true), "{c:?}");
            assert!(!is_html_type(c, false), "{c:?}");
        }
        assert_eq!(media_type_token("text/html charset=x"), "text/html");
        assert_eq!(
            media_type_str(" Text/HTML ; charset=x").as_deref(),
            Some("text/html")
        );
        assert_eq!(media_type_str(" ; charset=x"), None);
    }

    #[test]
    fn content_type_helpers() {
        let cases: &[(&[u8], Option<&str>, Option<&str>)] = &[
            (
                b"text/html; charset=UTF-8",
                Some("text/html"),
                Some("UTF-8"),
            ),
            (
                b"Text/HTML;Charset=\"iso-8859-1\"",
                Some("text/html"),
                Some("iso-8859-1"),
            ),
            (
                b"text/html; foo=\"a;b\"; charset=utf-8",
                Some("text/html"),
                Some("utf-8"),
            ),
            (
                b"text/html; foo=\"a\\\"b\"; charset = gbk ",
                Some("text/html"),
                Some("gbk"),
            ),
            (b"text/plain", Some("text/plain"), None),
            (b"text/plain; charset=", Some("text/plain"), None),
            (b"text/plain; charset", Some("text/plain"), None),
            (
                b"text/plain; charset=\"unterminated",
                Some("text/plain"),
                Some("unterminated"),
            ),
            (b"; charset=utf-8", None, Some("utf-8")),
            (b"", None, None),
            (b"text/html; charset=\xff\xfe", Some("text/html"), None),
        ];
        for &(ct, mt, cs) in cases {
            let name = String::from_utf8_lossy(ct);
            assert_eq!(media_type(ct).as_deref(), mt, "{name}");
            assert_eq!(content_type_charset(ct).as_deref(), cs, "{name}");
        }
        assert_eq!(
            content_type_param(b"a/b; x=\"1\\\\2\"", "X").as_deref(),
            Some(&b"1\\2"[..])
        );
    }

    // Arbitrary input: no panics, and split feeding agrees with whole feeding.
    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

        #[test]
        fn any_head_parses_without_panic(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
            tail in proptest::collection::vec(proptest::sample::select(b"HTTP/1 20:\r\n\tGET".to_vec()), 0..200),
        ) {
            let mut input = bytes;
            input.extend_from_slice(&tail);
            let limits = crate::Limits { max_http_head: 300, max_fields: 5, ..Default::default() };
            if let Ok(Some((h, n))) = HttpHead::parse_with_limits(&input, &limits) {
                proptest::prop_assert_eq!(h.raw(), &input[..n]);
                let _ = (h.status(), h.reason(), h.content_length(), h.charset(), h.transfer_encoding());
            }
            let _ = HttpHead::parse_unterminated(&input, &limits).map(|h| h.notes().len());
            let end = find_head_end(&input);
            let mut f = HeadFinder::new();
            let mid = input.len() / 2;
            let got = f.find(&input[..mid]).or_else(|| f.find(&input));
            proptest::prop_assert_eq!(got, end);
        }

        #[test]
        fn any_chunked_split_agrees(
            input in proptest::collection::vec(proptest::sample::select(b"0123abcF;\r\n xyz".to_vec()), 0..300),
            split in 0usize..300,
        ) {
            let whole = {
                let mut d = ChunkedDecoder::new();
                let mut out = Vec::new();
                let r = d.feed(&input, |b| out.extend_from_slice(b));
                (r.map(|_| ()), out, d.end(), d.position())
            };
            let parts = {
                let mut d = ChunkedDecoder::new();
                let mut out = Vec::new();
                let s = split.min(input.len());
                // After the terminator the decoder may stop short; resume
                // where it stopped, as a caller would.
                let r = d.feed(&input[..s], |b| out.extend_from_slice(b)).and_then(|n| {
                    d.feed(&input[n..], |b| out.extend_from_slice(b)).map(|_| ())
                });
                (r, out, d.end(), d.position())
            };
            proptest::prop_assert_eq!(whole, parts);
        }

        #[test]
        fn any_digest_text_parses_without_panic(s in "\\PC{0,80}") {
            let _ = crate::digest::Digest::parse(&s).map(|d| d.to_string());
        }
    }

    #[test]
    fn errors_convert() {
        let e: crate::Error = HttpError::TooLarge { limit: 10 }.into();
        assert!(matches!(
            e.kind(),
            crate::ErrorKind::TooLarge { limit: 10, .. }
        ));
        let e: crate::Error = HttpError::NotHttp.into();
        assert!(e.to_string().contains("not an HTTP message"));
    }
}
