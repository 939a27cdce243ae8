//! The text of a page: charset decoding, HTML to text, language, in one
//! call ([`extract`]), or for a record of an archive ([`extract_record`]).
//!
//! Each step is a module of its own with its own tests ([`crate::charset`],
//! [`crate::html2text`], [`crate::lang`]); this one only composes them.

use std::io::Read;

use warchest::archive::Record;
use warchest::codec::Source as ByteSource;
use warchest::warc::RecordType;

use crate::charset::{self, Source};
use crate::html2text::{self, Lines};
use crate::lang::{self, Language};

/// How much of a payload is read for its text. Common Crawl's crawler
/// keeps 1 MiB of each page and warc-indexer reads 512 KiB of text; 8 MiB
/// keeps whole pages of any size met in practice while bounding memory.
pub const MAX_BODY: usize = 8 * 1024 * 1024;

/// The kind of document text was taken from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// HTML or XHTML.
    Html,
    /// Plain text.
    Plain,
}

/// The text of one page.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// HTML or plain text.
    pub kind: Kind,
    /// The title (HTML only).
    pub title: Option<String>,
    /// The whole text, in Common Crawl's WET layout (the title is its
    /// first line, as in WET records).
    pub text: String,
    /// The main content: the text without boilerplate (for plain text, the
    /// text).
    pub main_text: String,
    /// Up to three languages, best first, with scores in 0..=1.
    pub language: Vec<Language>,
    /// The encoding the body was decoded with (its WHATWG name).
    pub charset: &'static str,
    /// Where the encoding came from.
    pub charset_source: Source,
    /// Whether malformed bytes were replaced with U+FFFD.
    pub charset_errors: bool,
    /// Whether the body was longer than [`MAX_BODY`] and cut there.
    pub truncated: bool,
}

/// Whether a body is HTML, plain text or neither (`None`): by its media
/// type when there is one (a type containing `html` is HTML, as Common
/// Crawl's rule says), else by its first bytes.
pub fn kind_of(body: &[u8], content_type: Option<&str>) -> Option<Kind> {
    if let Some(ct) = content_type.and_then(warchest::http::media_type_str) {
        return if ct.contains("html") {
            Some(Kind::Html)
        } else if ct == "text/plain" {
            Some(Kind::Plain)
        } else {
            None
        };
    }
    let head = &body[..body.len().min(1024)];
    let start = head
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(head.len());
    let head = head[start..].to_ascii_lowercase();
    let html = head.starts_with(b"<!doctype html")
        || [
            &b"<html"[..],
            b"<head",
            b"<body",
            b"<title",
            b"<p",
            b"<div",
            b"<meta",
            b"<!--",
        ]
        .iter()
        .any(|t| head.starts_with(t));
    Some(if html { Kind::Html } else { Kind::Plain })
}

/// What [`extract_parts`] computes of a page, as a Parquet reader
/// projects columns: what is not asked for is left empty and costs
/// nothing (the kind, charset and title are always found).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts {
    /// The whole text ([`Document::text`]).
    pub text: bool,
    /// The main content ([`Document::main_text`]).
    pub main_text: bool,
    /// The languages ([`Document::language`]).
    pub language: bool,
}

impl Parts {
    /// Everything.
    pub const ALL: Parts = Parts {
        text: true,
        main_text: true,
        language: true,
    };
}

/// The text of a page: `body` is the payload (content coding removed),
/// `content_type` the HTTP `Content-Type` (it may carry the charset).
/// Bodies that are neither HTML nor plain text by their media type are
/// read as plain text; [`kind_of`] tells a caller which to skip.
pub fn extract(body: &[u8], content_type: Option<&str>) -> Document {
    extract_parts(body, content_type, Parts::ALL)
}

/// [`extract`], computing only the `parts` asked for; the others are
/// empty. The languages are identified on the main content when it has
/// 200 bytes or more, else on the whole text, whichever of the texts are
/// asked for.
pub fn extract_parts(body: &[u8], content_type: Option<&str>, parts: Parts) -> Document {
    let kind = kind_of(body, content_type).unwrap_or(Kind::Plain);
    let truncated = body.len() > MAX_BODY;
    let body = &body[..body.len().min(MAX_BODY)];
    let decoded = charset::decode(body, content_type, kind == Kind::Html);
    let (title, mut text, mut main_text) = match kind {
        Kind::Html => {
            let e = html2text::html_to_text_parts(
                &decoded.text,
                html2text::Parts {
                    text: parts.text || parts.language,
                    main_text: parts.main_text || parts.language,
                },
            );
            (e.title, e.text, e.main_text)
        }
        Kind::Plain if !parts.text && !parts.main_text && !parts.language => {
            (None, String::new(), String::new())
        }
        Kind::Plain => {
            let text = plain_to_text(&decoded.text);
            let main = if parts.main_text {
                text.clone()
            } else {
                String::new()
            };
            (None, text, main)
        }
    };
    let language = if parts.language {
        // For plain text the main content is the text, made or not.
        let main = if kind == Kind::Plain {
            &text
        } else {
            &main_text
        };
        lang::identify(if main.len() >= 200 { main } else { &text })
    } else {
        Vec::new()
    };
    if !parts.text {
        text = String::new();
    }
    if !parts.main_text {
        main_text = String::new();
    }
    Document {
        kind,
        title,
        text,
        main_text,
        language,
        charset: decoded.encoding.name(),
        charset_source: decoded.source,
        charset_errors: decoded.had_errors,
        truncated,
    }
}

/// Plain text in the same layout: whitespace collapsed in each line, no
/// trailing spaces, no blank lines.
fn plain_to_text(s: &str) -> String {
    let mut lines = Lines::default();
    for line in s.split('\n') {
        lines.text(line, false);
        lines.newline();
    }
    lines.finish()
}

/// Errors of [`extract_record`].
pub type Error = warchest::Error;

/// The text of a record: a response, resource or conversion record whose
/// payload is HTML or plain text (by the HTTP `Content-Type`, or the
/// record's `Content-Type` when it holds no HTTP message, or
/// `WARC-Identified-Payload-Type`). Other records, and revisits, give
/// `None`. The payload's transfer and content codings are removed; at most
/// [`MAX_BODY`] bytes of it are read.
///
/// # Errors
/// Reading the record failed (as [`Record::payload`]).
pub fn extract_record<S: ByteSource>(
    record: &mut Record<'_, S>,
) -> Result<Option<Document>, Error> {
    match record.header().record_type() {
        RecordType::Response | RecordType::Resource | RecordType::Conversion => {}
        _ => return Ok(None),
    }
    let identified = record
        .header()
        .identified_payload_type()
        .map(|c| c.into_owned());
    let content_type = match record.http()? {
        Some(head) => {
            if head.is_request() {
                return Ok(None);
            }
            head.content_type()
                .map(|c| String::from_utf8_lossy(&c).into_owned())
        }
        None => record.header().content_type().map(|c| c.into_owned()),
    };
    let content_type = content_type.or(identified);
    let mut body = Vec::new();
    record
        .payload(true)?
        .take(MAX_BODY as u64 + 1)
        .read_to_end(&mut body)?;
    if kind_of(&body, content_type.as_deref()).is_none() {
        return Ok(None);
    }
    Ok(Some(extract(&body, content_type.as_deref())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds() {
        assert_eq!(
            kind_of(b"x", Some("text/html; charset=utf-8")),
            Some(Kind::Html)
        );
        assert_eq!(
            kind_of(b"x", Some("application/xhtml+xml")),
            Some(Kind::Html)
        );
        assert_eq!(kind_of(b"x", Some("TEXT/PLAIN")), Some(Kind::Plain));
        assert_eq!(kind_of(b"x", Some("image/png")), None);
        assert_eq!(kind_of(b"\n <!DOCTYPE HTML><p>", None), Some(Kind::Html));
        assert_eq!(kind_of(b"just words", None), Some(Kind::Plain));
    }

    #[test]
    fn plain_text_layout() {
        let d = extract(b"  a   b \r\n\r\n\tc\n", Some("text/plain"));
        assert_eq!(d.text, "a b\nc");
        assert_eq!(d.title, None);
    }

    #[test]
    fn parts_compute_only_what_is_asked() {
        let page = b"<title>T</title><nav><a href=/>Home</a></nav><main><p>This is a long paragraph written in \
            English about the history of the city and its people, long enough for the main content to be \
            used for the language, as it has more than two hundred bytes of text in it.</p></main>";
        let all = extract(page, Some("text/html"));
        assert_eq!(all.language[0].code, "eng");
        assert!(!all.text.is_empty() && !all.main_text.is_empty());
        let only = |text, main_text, language| {
            extract_parts(
                page,
                Some("text/html"),
                Parts {
                    text,
                    main_text,
                    language,
                },
            )
        };
        let t = only(true, false, false);
        assert_eq!(
            (t.text.as_str(), t.main_text.as_str(), t.language.len()),
            (all.text.as_str(), "", 0)
        );
        assert_eq!((t.title.as_deref(), t.charset), (Some("T"), all.charset));
        let m = only(false, true, false);
        assert_eq!(
            (m.text.as_str(), m.main_text.as_str(), m.language.len()),
            ("", all.main_text.as_str(), 0)
        );
        // The languages alone: found on the texts, which are not given.
        let l = only(false, false, true);
        assert_eq!(
            (l.text.as_str(), l.main_text.as_str(), &l.language),
            ("", "", &all.language)
        );
        let plain =
            "A line of plain text, in English, about the history of the city and its people.\n"
                .repeat(4);
        let p = extract_parts(
            plain.as_bytes(),
            Some("text/plain"),
            Parts {
                text: false,
                main_text: false,
                language: true,
            },
        );
        assert_eq!((p.text.as_str(), p.language[0].code), ("", "eng"));
        let p = extract_parts(
            plain.as_bytes(),
            Some("text/plain"),
            Parts {
                text: false,
                main_text: true,
                language: false,
            },
        );
        assert_eq!(
            p.main_text,
            extract(plain.as_bytes(), Some("text/plain")).main_text
        );
    }

    #[test]
    fn non_utf8_page() {
        let page = b"<html><head><meta http-equiv='content-type' content='text/html; charset=windows-1251'>\
            <title>\xcf\xf0\xe8\xe2\xe5\xf2</title></head><body><p>\xcc\xe8\xf0</p></body></html>";
        let d = extract(page, Some("text/html"));
        assert_eq!(d.charset, "windows-1251");
        assert_eq!(d.charset_source, Source::Meta);
        assert_eq!(d.title.as_deref(), Some("Привет"));
        assert_eq!(d.text, "Привет\nМир");
    }
}
