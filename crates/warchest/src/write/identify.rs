//! WARC-Identified-Payload-Type (WARC 1.1 section 5.17): the media type of
//! a payload found by looking at its bytes, never copied from the
//! Content-Type the server sent ("this string shall not be ... taken from
//! the HTTP Content-Type without direct analysis of the payload").
//!
//! Magic numbers come from the `infer` crate; text that `infer` does not
//! name is told apart from binary data by its bytes alone.

use std::io::Read;

use crate::http::{self, HttpHead};
use crate::limits::Limits;
use crate::warc::{PayloadKind, WarcHeader};

/// How many payload bytes identification looks at.
pub const SNIFF_LEN: usize = 8192;

/// The media type of `bytes` (the start of a payload), or `None` when
/// nothing is recognised. Magic numbers first (images, archives, documents,
/// fonts, HTML, XML...); then UTF-8 text without control characters is
/// `text/plain`.
pub fn identify(bytes: &[u8]) -> Option<&'static str> {
    if bytes.is_empty() {
        return None;
    }
    if let Some(t) = infer::get(bytes) {
        return Some(t.mime_type());
    }
    looks_like_text(bytes).then_some("text/plain")
}

/// True when `bytes` read as UTF-8 text (a character cut at the end is
/// allowed) without control characters other than white space.
fn looks_like_text(bytes: &[u8]) -> bool {
    let valid = match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        // A sequence cut by the sniff window is not a reason to say binary.
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        Err(_) => return false,
    };
    bytes[..valid]
        .iter()
        .all(|&b| b >= 0x20 || matches!(b, b'\t' | b'\n' | b'\r' | 0x0c))
}

/// The media type of a record's payload, from the first bytes of its block.
///
/// For HTTP records the head is skipped, the transfer coding removed and,
/// when the head declares a content coding warchest decodes (gzip, deflate,
/// br, zstd), that too, so a gzip-coded HTML page is identified as HTML.
/// `None` for records without a payload of their own (section 5.17: the
/// field "shall not be used on records without a well-defined payload").
pub fn identify_block(header: &WarcHeader, block_start: &[u8]) -> Option<&'static str> {
    match header.payload_kind() {
        PayloadKind::None => None,
        PayloadKind::Block => identify(block_start),
        PayloadKind::HttpBody => {
            let limits = Limits::default();
            let (head, used) = HttpHead::parse_with_limits(block_start, &limits)
                .ok()
                .flatten()?;
            let body = &block_start[used..];
            if let Some(t) = decoded_start(body, &head, true)
                .as_deref()
                .and_then(identify)
            {
                return Some(t);
            }
            decoded_start(body, &head, false)
                .as_deref()
                .and_then(identify)
        }
    }
}

/// Up to [`SNIFF_LEN`] bytes of the payload after `head`; errors (a body
/// cut by the sniff window, a coding that does not decode) end it early.
fn decoded_start(body: &[u8], head: &HttpHead, decode: bool) -> Option<Vec<u8>> {
    let reader = http::payload_reader(body, head, decode).ok()?;
    let mut out = Vec::with_capacity(SNIFF_LEN.min(body.len().saturating_mul(4)));
    let mut limited = reader.take(SNIFF_LEN as u64);
    let mut buf = [0u8; 1024];
    loop {
        match limited.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fields::Fields;
    use crate::warc::{RecordType, Version};

    fn header(t: RecordType, content_type: &str) -> WarcHeader {
        let mut f = Fields::with_start_line(b"WARC/1.1");
        f.append("WARC-Type", t.as_str()).unwrap();
        f.append("Content-Type", content_type).unwrap();
        WarcHeader::from_fields(Version::V1_1, f)
    }

    #[test]
    fn magic_numbers_and_text() {
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0";
        assert_eq!(identify(png), Some("image/png"));
        assert_eq!(identify(b"%PDF-1.7\n"), Some("application/pdf"));
        assert_eq!(identify(b"<!DOCTYPE html><html>"), Some("text/html"));
        assert_eq!(identify(b"plain words\n"), Some("text/plain"));
        // A UTF-8 character cut at the end of the window is still text.
        assert_eq!(
            identify("caf\u{e9}".as_bytes()[..4].as_ref()),
            Some("text/plain")
        );
        assert_eq!(identify(b"\x00\x01\x02\x03binary"), None);
        assert_eq!(identify(b""), None);
    }

    #[test]
    fn http_payload_not_the_servers_claim() {
        // The server says text/html; the bytes are a GIF.
        let block = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\nGIF89a\x01\x00\x01\x00";
        let h = header(RecordType::Response, "application/http; msgtype=response");
        assert_eq!(identify_block(&h, block), Some("image/gif"));
        // Chunked and gzip-coded HTML is identified as HTML.
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, b"<html><body>hi</body></html>").unwrap();
        let body = gz.finish().unwrap();
        let mut block = format!(
            "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n",
            body.len()
        )
        .into_bytes();
        block.extend(&body);
        block.extend(b"\r\n0\r\n\r\n");
        assert_eq!(identify_block(&h, &block), Some("text/html"));
        // Records without a payload get none.
        let m = header(RecordType::Metadata, "text/plain");
        assert_eq!(identify_block(&m, b"plain"), None);
        let r = header(RecordType::Resource, "application/octet-stream");
        assert_eq!(identify_block(&r, b"%PDF-1.4"), Some("application/pdf"));
    }
}
