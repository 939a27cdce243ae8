//! The documents of the index: one per capture with a payload (response
//! and resource records), read from an archive record.

use std::io::Read;

use warchest::archive::Record;
use warchest::codec::Source;
use warchest::http::{PayloadFallback, PayloadFallbacks};
use warchest::warc::RecordType;

use warchest_derive::text as derive;

/// Largest payload read for its text (warchest-derive's bound); the rest
/// of a longer one is not read (its document says `cut`).
pub const MAX_PAYLOAD: usize = derive::MAX_BODY;

/// Largest text kept in the index, in bytes (webarchive-discovery's cap
/// is 512K too); a longer one is cut at a character.
pub const MAX_TEXT: usize = 512 * 1024;

/// Longest URL indexed, in bytes (a term must stay under tantivy's
/// 65,530-byte limit).
pub const MAX_URL: usize = 8 * 1024;

/// One capture, as the index holds it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Document {
    /// WARC-Target-URI.
    pub url: String,
    /// SURT form of the URL (`warchest_index::surt::url_key`).
    pub surt: String,
    /// Host of the URL, lower case; empty when it has none.
    pub host: String,
    /// WARC-Date in milliseconds since 1970.
    pub date_millis: Option<i64>,
    /// WARC-Date as 14 digits (the replay timestamp); empty when missing.
    pub timestamp: String,
    /// Media type, lower case, no parameters: the HTTP Content-Type of a
    /// response, the record's Content-Type of a resource.
    pub mime: String,
    /// HTTP status of a response.
    pub status: Option<u16>,
    /// Language of the text (ISO 639-3), when known.
    pub language: Option<String>,
    /// Title of an HTML page.
    pub title: String,
    /// The text of an HTML or plain-text payload (at most [`MAX_TEXT`]).
    pub text: String,
    /// The archive file's name.
    pub file: String,
    /// Stored offset of the record in the file.
    pub offset: u64,
    /// WARC-Type.
    pub record_type: String,
    /// The payload or the text was cut ([`MAX_PAYLOAD`], [`MAX_TEXT`]).
    pub cut: bool,
    /// The URL was longer than [`MAX_URL`] and is indexed cut there: a
    /// search finds the capture by its first [`MAX_URL`] bytes, and its
    /// replay link, made of them, does not lead to it.
    pub url_cut: bool,
}

/// A capture read from a record, before its text is extracted (the
/// expensive part, done on other threads).
#[derive(Debug, Clone, Default)]
pub struct Capture {
    /// The document, all but title, text and language.
    pub doc: Document,
    /// The payload (at most [`MAX_PAYLOAD`] bytes) when its text may be
    /// indexed (HTML, plain text, or no type said).
    pub payload: Option<Vec<u8>>,
    /// The Content-Type the payload was served with (its charset too).
    pub content_type: Option<String>,
    /// What decoding the payload fell back on (bytes as stored, a body cut
    /// short...): its text comes from what the lenient decoder gave, as
    /// `warchest derive` gives it, and the caller counts it.
    pub fallbacks: PayloadFallbacks,
}

/// Why a record gives no document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// Not a response or resource (request, metadata, warcinfo...).
    Type,
    /// A revisit: no payload of its own.
    Revisit,
    /// No WARC-Target-URI.
    NoUrl,
}

/// The capture `record` holds (its payload read, up to [`MAX_PAYLOAD`],
/// when its type's text is indexed), or why it holds none.
///
/// # Errors
/// Reading the record failed, or its transfer or content coding cannot be
/// removed.
pub fn capture<S: Source + Send>(
    record: &mut Record<'_, S>,
    file: &str,
) -> warchest::Result<Result<Capture, Skip>> {
    let h = record.header();
    let rt = h.record_type();
    match rt {
        RecordType::Response | RecordType::Resource => {}
        RecordType::Revisit => return Ok(Err(Skip::Revisit)),
        _ => return Ok(Err(Skip::Type)),
    }
    let Some(url) = h.target_uri().map(|u| u.trim().to_string()) else {
        return Ok(Err(Skip::NoUrl));
    };
    let mut url = url;
    let url_cut = cut_at_char(&mut url, MAX_URL);
    let date = h.date().and_then(Result::ok);
    let date_millis = date
        .as_ref()
        .and_then(|d| d.to_unix_nanos())
        .and_then(|n| i64::try_from(n / 1_000_000).ok());
    let timestamp = date.as_ref().map(|d| d.timestamp14()).unwrap_or_default();
    let record_mime = h
        .content_type()
        .and_then(|c| warchest::http::media_type_str(&c));
    let offset = record.location().offset;
    let mut doc = Document {
        surt: warchest_index::surt::url_key(&url),
        host: host_of(&url),
        url,
        date_millis,
        timestamp,
        file: file.to_string(),
        offset,
        record_type: rt.as_str().to_string(),
        url_cut,
        ..Document::default()
    };
    let content_type = match record.http()? {
        Some(head) => {
            doc.status = head.status();
            doc.mime = head.media_type().unwrap_or_default().to_ascii_lowercase();
            head.content_type()
                .map(|c| String::from_utf8_lossy(&c).into_owned())
        }
        None => {
            doc.mime = record_mime.clone().unwrap_or_default();
            record.header().content_type().map(|c| c.into_owned())
        }
    };
    let textual = doc.mime.is_empty() || doc.mime.contains("html") || doc.mime == "text/plain";
    let mut fallbacks = PayloadFallbacks::default();
    let payload = if textual {
        let mut buf = Vec::new();
        let limit = MAX_PAYLOAD as u64 + 1;
        // Decoded leniently: a payload whose coding does not decode gives
        // its text from the bytes as stored (counted), where an error took
        // the whole file's documents out of the index.
        let (r, notes) = record.payload_lenient()?;
        match r.take(limit).read_to_end(&mut buf) {
            Ok(_) => {}
            // The archive's own failure (a damaged member, the file): the
            // file's read failed.
            Err(e) if warchest::Error::carried_by(&e).is_some() => return Err(e.into()),
            // The payload's coding failed midway: its text is what decoded
            // before (noted as a read error).
            Err(_) => {}
        }
        fallbacks = notes.get();
        if buf.len() as u64 == limit {
            // Stopped at the limit, not at the body's end.
            fallbacks.remove(PayloadFallback::CutShort);
        }
        if buf.len() > MAX_PAYLOAD {
            buf.truncate(MAX_PAYLOAD);
            doc.cut = true;
        }
        Some(buf)
    } else {
        None
    };
    Ok(Ok(Capture {
        doc,
        payload,
        content_type,
        fallbacks,
    }))
}

impl Capture {
    /// The document with its title, text and language (warchest-derive's
    /// text API: charset, HTML to text in Common Crawl's WET layout,
    /// whatlang), when the payload is HTML or plain text.
    pub fn into_document(self) -> Document {
        let mut doc = self.doc;
        let ct = self.content_type.as_deref();
        if let Some(payload) = self.payload
            && derive::kind_of(&payload, ct).is_some()
        {
            let t = derive::extract(&payload, ct);
            doc.title = t.title.unwrap_or_default();
            cut_at_char(&mut doc.title, MAX_TITLE);
            // The WET layout starts with the title: the title field has it.
            doc.text = match t.text.split_once('\n') {
                Some((first, rest)) if !doc.title.is_empty() && first == doc.title => {
                    rest.to_string()
                }
                _ => t.text,
            };
            if cut_at_char(&mut doc.text, MAX_TEXT) {
                doc.cut = true;
            }
            doc.language = t.language.first().map(|l| l.code.to_string());
        }
        doc
    }
}

/// Longest title kept, in bytes.
pub const MAX_TITLE: usize = 1024;

/// Cuts `s` to at most `max` bytes, at a character boundary; true when
/// it was longer.
pub fn cut_at_char(s: &mut String, max: usize) -> bool {
    if s.len() <= max {
        return false;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    true
}

/// The host of `url`, lower case, without a port; empty when none.
pub fn host_of(url: &str) -> String {
    url::Url::parse(url)
        .ok()
        .and_then(|u| {
            u.host_str()
                .map(|h| h.trim_end_matches('.').to_ascii_lowercase())
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use warchest::archive::Reader;

    #[test]
    fn response_resource_and_others() {
        let http = "HTTP/1.1 200 OK\r\nContent-Type: text/HTML; charset=utf-8\r\n\r\n\
                    <title>T</title><p>Hello world</p>";
        let data = format!(
            "WARC/1.0\r\nWARC-Type: response\r\nWARC-Date: 2024-03-02T03:04:05Z\r\n\
             WARC-Target-URI: http://WWW.Example.com:8080/a\r\n\
             Content-Type: application/http; msgtype=response\r\n\
             Content-Length: {}\r\n\r\n{http}\r\n\r\n\
             WARC/1.0\r\nWARC-Type: request\r\nWARC-Target-URI: http://example.com/\r\n\
             Content-Length: 0\r\n\r\n\r\n\r\n",
            http.len()
        );
        let data = data.as_bytes();
        let mut r = Reader::new(data).unwrap();
        let mut rec = r.next_record().unwrap().unwrap();
        let c = capture(&mut rec, "a.warc").unwrap().unwrap();
        drop(rec);
        assert_eq!(c.doc.host, "www.example.com");
        assert_eq!(c.doc.surt, "com,example:8080)/a");
        assert_eq!(c.doc.mime, "text/html");
        assert_eq!(c.doc.status, Some(200));
        assert_eq!(c.doc.timestamp, "20240302030405");
        let d = c.into_document();
        assert_eq!(d.title, "T");
        assert_eq!(d.text, "Hello world");
        let mut rec = r.next_record().unwrap().unwrap();
        assert_eq!(
            capture(&mut rec, "a.warc").unwrap().unwrap_err(),
            Skip::Type
        );
    }

    /// A response record of `body` under a head naming `coding`.
    fn coded(coding: &str, body: &[u8]) -> Vec<u8> {
        let mut block = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Encoding: {coding}\r\n\r\n"
        )
        .into_bytes();
        block.extend_from_slice(body);
        let mut v = format!(
            "WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: http://a.example/\r\n\
             Content-Type: application/http; msgtype=response\r\nContent-Length: {}\r\n\r\n",
            block.len()
        )
        .into_bytes();
        v.extend_from_slice(&block);
        v.extend_from_slice(b"\r\n\r\n");
        v
    }

    /// A payload whose coding does not decode gives its text from what the
    /// lenient decoder gives, noted; before, its error took the whole
    /// file's documents out of the index.
    #[test]
    fn a_payload_that_does_not_decode_is_noted_not_an_error() {
        let of = |data: &[u8]| {
            let mut r = Reader::new(data).unwrap();
            let mut rec = r.next_record().unwrap().unwrap();
            let c = capture(&mut rec, "a.warc").unwrap().unwrap();
            (c.payload.unwrap(), c.fallbacks.iter().collect::<Vec<_>>())
        };
        // Not gzip at all: the bytes as stored.
        let (p, f) = of(&coded("gzip", b"plain words"));
        assert_eq!(p, b"plain words");
        assert_eq!(f, [PayloadFallback::ContentUndecoded]);
        // Gzip damaged midway: what decoded before.
        let text = "words of the page ".repeat(4000);
        let mut gz = Vec::new();
        {
            use std::io::Write;
            let mut e = flate2::write::GzEncoder::new(&mut gz, flate2::Compression::fast());
            e.write_all(text.as_bytes()).unwrap();
            e.finish().unwrap();
        }
        let mut bad = gz.clone();
        let mid = bad.len() / 2;
        for b in &mut bad[mid..mid + 64] {
            *b ^= 0x5a;
        }
        let (p, f) = of(&coded("gzip", &bad));
        assert!(p.len() < text.len() && text.as_bytes().starts_with(&p[..p.len().min(64)]));
        assert!(!f.is_empty(), "{f:?}");
        // Clean gzip: decoded, nothing noted.
        let (p, f) = of(&coded("gzip", &gz));
        assert_eq!(p, text.as_bytes());
        assert!(f.is_empty());
    }
}
