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
    // OLE2 files first: without its `std` feature `infer` calls every one
    // a Word document.
    if let Some(t) = ole2(bytes) {
        return t;
    }
    if let Some(t) = infer::get(bytes) {
        return Some(t.mime_type());
    }
    looks_like_text(bytes).then_some("text/plain")
}

/// OLE2 compound files (old Word, Excel, PowerPoint): `Some(type)` when
/// `bytes` start with the OLE2 signature, the type named by the root
/// directory entry's class id when that entry is within `bytes` (the
/// class ids `infer` maps with its `cfb` parser), `None` inside otherwise.
/// `None` when the signature is absent.
fn ole2(bytes: &[u8]) -> Option<Option<&'static str>> {
    const MAGIC: [u8; 8] = [0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1];
    if !bytes.starts_with(&MAGIC) {
        return None;
    }
    let u16_at = |at: usize| {
        bytes
            .get(at..at + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
    };
    let u32_at = |at: usize| {
        bytes
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let class = (|| {
        // Version 3 files have 512-byte sectors, version 4 4096-byte ones.
        let shift = u16_at(0x1E)?;
        if shift != 9 && shift != 12 {
            return None;
        }
        let dir = usize::try_from(u32_at(0x30)?).ok()?;
        let entry = dir.checked_add(1)?.checked_shl(u32::from(shift))?;
        let at = entry.checked_add(0x50)?;
        Some((
            u32_at(at)?,
            u16_at(at + 4)?,
            u16_at(at + 6)?,
            bytes.get(at + 8..at + 16)?,
        ))
    })();
    const TAIL: [u8; 8] = [0xC0, 0, 0, 0, 0, 0, 0, 0x46];
    let kind = match class {
        Some((0x0002_0810 | 0x0002_0820, 0, 0, tail)) if tail == TAIL => {
            Some("application/vnd.ms-excel")
        }
        Some((0x0002_0906, 0, 0, tail)) if tail == TAIL => Some("application/msword"),
        Some((0x6481_8d10, 0x4f9b, 0x11cf, tail))
            if tail == [0x86, 0xea, 0, 0xaa, 0, 0xb9, 0x29, 0xe8] =>
        {
            Some("application/vnd.ms-powerpoint")
        }
        _ => None,
    };
    Some(kind)
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

    /// An OLE2 header and a root directory entry in sector 0 (512-byte
    /// sectors) with the given class id.
    fn ole2_file(class: [u8; 16], len: usize) -> Vec<u8> {
        let mut f = vec![0u8; len];
        f[..8].copy_from_slice(&[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1]);
        f[0x1E..0x20].copy_from_slice(&9u16.to_le_bytes());
        f[0x30..0x34].copy_from_slice(&0u32.to_le_bytes());
        if len >= 512 + 0x60 {
            f[512 + 0x50..512 + 0x60].copy_from_slice(&class);
        }
        f
    }

    #[test]
    fn ole2_by_root_class_id() {
        let word = [6, 9, 2, 0, 0, 0, 0, 0, 0xC0, 0, 0, 0, 0, 0, 0, 0x46];
        let excel = [0x10, 8, 2, 0, 0, 0, 0, 0, 0xC0, 0, 0, 0, 0, 0, 0, 0x46];
        let ppt = [
            0x10, 0x8d, 0x81, 0x64, 0x9b, 0x4f, 0xcf, 0x11, 0x86, 0xea, 0, 0xaa, 0, 0xb9, 0x29,
            0xe8,
        ];
        assert_eq!(identify(&ole2_file(word, 1024)), Some("application/msword"));
        assert_eq!(
            identify(&ole2_file(excel, 1024)),
            Some("application/vnd.ms-excel")
        );
        assert_eq!(
            identify(&ole2_file(ppt, 1024)),
            Some("application/vnd.ms-powerpoint")
        );
        // An unknown class, or a root entry past the bytes given: unnamed.
        assert_eq!(identify(&ole2_file([7; 16], 1024)), None);
        assert_eq!(identify(&ole2_file(word, 300)), None);
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
