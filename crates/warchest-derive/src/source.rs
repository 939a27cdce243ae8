//! Records read off an archive into owned values ([`SourceRecord`]), in
//! batches of bounded size, so that the derivatives can be computed on
//! every core (rayon) and written in the input's order.
//!
//! Each record's block is streamed once: digested whole (the WAT's
//! `Block-Digest` and `Entity-Digest`), and its first [`MAX_BODY`] bytes
//! after the HTTP head kept for the text. A batch holds at most
//! [`BATCH_BYTES`] of kept bytes, so memory stays bounded whatever the
//! archive holds.

use std::io::{BufRead, Read};

use sha1::{Digest as _, Sha1};
use warchest::archive::{Reader, Record};
use warchest::codec::{Codec, Decoder};
use warchest::digest::{Algorithm, Digest};
use warchest::http::{Coding, HttpHead, PayloadFallback, PayloadFallbacks};
use warchest::warc::RecordType;

use crate::text::MAX_BODY;

/// Kept bytes per batch: with the text derived from them, a batch stays
/// well under the 256 MiB a derivative may use.
pub const BATCH_BYTES: usize = 48 * 1024 * 1024;

/// Records per batch at most.
pub const BATCH_RECORDS: usize = 512;

/// What records are read for: the WAT needs every record's digests and
/// CRC; WET and text rows need only the payloads that can give text, so
/// they skip the hashing and keep no other payload (SHA-1 alone was 5 %
/// of `derive text`'s time on the Rust documentation pages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// Everything: digests, CRC and every payload.
    Full,
    /// Text: no digests or CRC (left empty and 0), and the payload kept
    /// only for warcinfo records and for responses, resources and
    /// conversions that are HTML, plain text or untyped.
    Text,
}

/// A record of the input, owned.
#[derive(Debug, Clone)]
pub struct SourceRecord {
    /// The record's stored offset in its file.
    pub offset: u64,
    /// Its stored length, when it has its own gzip member (or the file is
    /// plain).
    pub stored_len: Option<u64>,
    /// The compression of its member.
    pub codec: Codec,
    /// The gzip header's length, for a gzip member.
    pub gzip_header_len: Option<u64>,
    /// The length of the WARC header block.
    pub header_len: u64,
    /// The record type.
    pub record_type: RecordType,
    /// The WARC header fields in order, as text (lossy UTF-8).
    pub fields: Vec<(String, String)>,
    /// The HTTP head at the block's start, if any.
    pub http: Option<HttpHead>,
    /// Block bytes present.
    pub block_len: u64,
    /// `sha1:` + Base32 of the whole block (empty when read for
    /// [`Purpose::Text`]).
    pub block_digest: String,
    /// The entity (the block after the HTTP head): its length and digest.
    pub entity_len: u64,
    /// `sha1:` + Base32 of the entity (empty when read for
    /// [`Purpose::Text`]).
    pub entity_digest: String,
    /// The payload (codings removed), at most [`MAX_BODY`] bytes + 1;
    /// empty when read for [`Purpose::Text`] and it cannot give text.
    pub payload: Vec<u8>,
    /// What decoding the payload fell back on (a content coding that did
    /// not decode, a decoder error, ...): empty when it decoded as its
    /// HTTP head says, or needed no decoding. A body cut at [`MAX_BODY`]
    /// by this reader is not counted as cut short.
    pub payload_fallbacks: PayloadFallbacks,
    /// The block was cut short by the end of input.
    pub truncated: bool,
    /// The CRC-32 of the record as stored uncompressed (header, block and
    /// the `CRLF CRLF` trailer): the WAT's `Inflated-CRC` (0 when read
    /// for [`Purpose::Text`]).
    pub inflated_crc: u32,
    /// The length of the same bytes: the WAT's `Inflated-Length`.
    pub inflated_len: u64,
    /// Bytes after the block (the record's `CRLF CRLF`): 4.
    pub trailing_slop: u64,
    /// For an ARC record, its URL-record line (the WAT's
    /// `ARC-Header-Metadata`).
    pub arc: Option<ArcLine>,
}

/// The fields of an ARC record's URL-record line, as written (lossy
/// UTF-8).
#[derive(Debug, Clone, Default)]
pub struct ArcLine {
    /// The line's length, line end included.
    pub len: u64,
    /// URL.
    pub url: String,
    /// IP-address.
    pub ip: String,
    /// Archive-date (`YYYYMMDDhhmmss`).
    pub date: String,
    /// Content-type.
    pub content_type: String,
    /// Archive-length.
    pub length: String,
}

impl SourceRecord {
    /// Its payload's fallbacks with its offset, when it has any (for a
    /// [`Recoveries`](warchest::recoveries::Recoveries) tally).
    pub fn payload_fallback(&self) -> Option<warchest::recoveries::PayloadFallbackAt> {
        (!self.payload_fallbacks.is_empty()).then_some(warchest::recoveries::PayloadFallbackAt {
            offset: self.offset,
            fallbacks: self.payload_fallbacks,
        })
    }

    /// The first WARC field named `name` (ASCII case-insensitive).
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The `Content-Type` of the payload: the HTTP one for an HTTP record,
    /// else the record's, else `WARC-Identified-Payload-Type`.
    pub fn payload_content_type(&self) -> Option<String> {
        payload_type(&self.fields, self.http.as_ref())
    }
}

/// [`SourceRecord::payload_content_type`] of a record's fields and HTTP
/// head.
fn payload_type(fields: &[(String, String)], http: Option<&HttpHead>) -> Option<String> {
    let field = |name: &str| {
        fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    match http {
        Some(h) => h
            .content_type()
            .map(|c| String::from_utf8_lossy(&c).into_owned()),
        None => field("Content-Type"),
    }
    .or_else(|| field("WARC-Identified-Payload-Type"))
}

/// The `sha1:BASE32` digest field of a finished hash, as WARC writes it.
fn sha1_label(h: Sha1) -> String {
    Digest::new(Algorithm::Sha1, &h.finalize())
        .as_str()
        .to_owned()
}

/// Reads the current record into a [`SourceRecord`], for
/// [`Purpose::Full`].
///
/// # Errors
/// Reading the record failed.
pub fn read_record<R: Read>(record: Record<'_, Decoder<R>>) -> warchest::Result<SourceRecord> {
    read_record_for(record, Purpose::Full)
}

/// Reads the current record into a [`SourceRecord`], for `purpose`.
///
/// # Errors
/// Reading the record failed.
pub fn read_record_for<R: Read>(
    mut record: Record<'_, Decoder<R>>,
    purpose: Purpose,
) -> warchest::Result<SourceRecord> {
    let full = purpose == Purpose::Full;
    let loc = record.location();
    let gzip_header_len = if loc.codec == Codec::Gzip {
        record.source().gzip_header().map(|h| h.len)
    } else {
        None
    };
    let arc = match record.as_format() {
        warchest::archive::FormatRecord::Arc(r) => r.arc_header().map(|h| {
            let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
            ArcLine {
                len: h.raw().len() as u64,
                url: text(h.url()),
                ip: text(h.ip()),
                date: text(h.date()),
                content_type: text(h.content_type()),
                length: text(h.length_field()),
            }
        }),
        _ => None,
    };
    let header = record.header();
    let record_type = header.record_type();
    let fields: Vec<(String, String)> = header
        .fields()
        .iter()
        .map(|f| {
            (
                String::from_utf8_lossy(f.name()).into_owned(),
                String::from_utf8_lossy(&f.value()).into_owned(),
            )
        })
        .collect();
    let mut crc = crc32fast::Hasher::new();
    let raw_header = record.raw_header();
    if full {
        crc.update(raw_header);
    }
    let raw_header_len = raw_header.len() as u64;
    let http = record.http()?.cloned();
    let mut block_hash = Sha1::new();
    let mut entity_hash = Sha1::new();
    if let Some(h) = &http
        && full
    {
        block_hash.update(h.raw());
        crc.update(h.raw());
    }
    let keep = full || may_give_text(record_type, &fields, http.as_ref());
    let mut kept = Vec::new();
    let mut entity_len = 0u64;
    {
        let mut block = record.block();
        loop {
            let buf = block.fill_buf()?;
            if buf.is_empty() {
                break;
            }
            let n = buf.len();
            if full {
                block_hash.update(buf);
                entity_hash.update(buf);
                crc.update(buf);
            }
            if keep {
                let room = (MAX_BODY + 1).saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
            entity_len += n as u64;
            block.consume(n);
        }
    }
    let mut payload_fallbacks = PayloadFallbacks::default();
    let payload = match &http {
        Some(_) if !keep => Vec::new(),
        // No coding to undo (most responses): the kept bytes are the
        // payload, without a second copy through the decoder.
        Some(h)
            if h.transfer_encoding()
                .iter()
                .chain(&h.content_encoding())
                .all(|c| *c == Coding::Identity) =>
        {
            kept
        }
        // Lenient decoding of what was kept: a body cut at MAX_BODY still
        // gives its decoded start.
        Some(h) => {
            let (r, notes) = warchest::http::payload_reader_lenient_noted(&kept[..], h);
            let mut r = r.take(MAX_BODY as u64 + 1);
            let mut out = Vec::new();
            let mut buf = [0u8; 16 * 1024];
            loop {
                // An error ends the payload with what decoded before it;
                // the notes count it (ReadError).
                match r.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => out.extend_from_slice(&buf[..n]),
                }
            }
            payload_fallbacks = notes.get();
            // Kept bytes end at MAX_BODY + 1: a decoder running out there
            // ran into this reader's limit (docs/derive.md), not into the
            // end of a record cut short.
            if kept.len() > MAX_BODY {
                payload_fallbacks.remove(PayloadFallback::CutShort);
            }
            out
        }
        None => kept,
    };
    let head_len = http.as_ref().map_or(0, |h| h.raw().len() as u64);
    let end = record.finish()?;
    if full {
        crc.update(b"\r\n\r\n");
    }
    let block_len = end.block_len.max(head_len + entity_len);
    let label = |h: Sha1| if full { sha1_label(h) } else { String::new() };
    Ok(SourceRecord {
        offset: loc.offset,
        stored_len: end.stored_len,
        codec: loc.codec,
        gzip_header_len,
        header_len: loc.header_len,
        record_type,
        fields,
        http,
        block_len,
        block_digest: label(block_hash),
        entity_len,
        entity_digest: label(entity_hash),
        payload,
        payload_fallbacks,
        truncated: end.truncated,
        inflated_crc: if full { crc.finalize() } else { 0 },
        inflated_len: raw_header_len + block_len + 4,
        trailing_slop: 4,
        arc,
    })
}

/// Whether a record read for [`Purpose::Text`] keeps its payload: a
/// warcinfo (a WET copies fields of it), or a response, resource or
/// conversion that is not an HTTP request and whose type (as
/// [`SourceRecord::payload_content_type`] finds it) is HTML, plain text or
/// absent (then the payload is sniffed).
fn may_give_text(
    record_type: RecordType,
    fields: &[(String, String)],
    http: Option<&HttpHead>,
) -> bool {
    match record_type {
        RecordType::Warcinfo => return true,
        RecordType::Response | RecordType::Resource | RecordType::Conversion => {}
        _ => return false,
    }
    if http.is_some_and(HttpHead::is_request) {
        return false;
    }
    crate::text::kind_of(&[], payload_type(fields, http).as_deref()).is_some()
}

/// Reads the next batch of records (at most [`BATCH_RECORDS`], and
/// [`BATCH_BYTES`] of payload), for [`Purpose::Full`]; an empty batch
/// means the end.
///
/// # Errors
/// Reading a record failed; the records read before are returned with
/// the error so that they are not lost.
pub fn read_batch<R: Read>(
    reader: &mut Reader<Decoder<R>>,
) -> (Vec<SourceRecord>, Option<warchest::Error>) {
    read_batch_for(reader, Purpose::Full)
}

/// [`read_batch`] for `purpose`.
///
/// # Errors
/// As [`read_batch`].
pub fn read_batch_for<R: Read>(
    reader: &mut Reader<Decoder<R>>,
    purpose: Purpose,
) -> (Vec<SourceRecord>, Option<warchest::Error>) {
    let mut batch = Vec::new();
    let mut bytes = 0;
    while batch.len() < BATCH_RECORDS && bytes < BATCH_BYTES {
        match reader.next_record() {
            Ok(Some(record)) => match read_record_for(record, purpose) {
                Ok(r) => {
                    bytes += r.payload.len() + 4096;
                    batch.push(r);
                }
                Err(e) => return (batch, Some(e)),
            },
            Ok(None) => break,
            Err(e) => return (batch, Some(e)),
        }
    }
    (batch, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use warchest::write::{Body, NewRecord, Writer, WriterOptions};

    #[test]
    fn payloads_with_and_without_codings() {
        let mut warc = Vec::new();
        let mut w = Writer::new(&mut warc, WriterOptions::default()).unwrap();
        for block in [
            &b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<p>plain body"[..],
            b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: identity\r\n\r\n<p>identity",
            b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n<p>ch\r\n6\r\nunked!\r\n0\r\n\r\n",
        ] {
            let mut r = NewRecord::new(RecordType::Response);
            r.set("WARC-Target-URI", "http://a.example/").unwrap();
            r.set("Content-Type", "application/http; msgtype=response").unwrap();
            w.write(&mut r, Body::Bytes(block)).unwrap();
        }
        drop(w);
        let mut reader = Reader::new(&warc[..]).unwrap();
        let (batch, err) = read_batch_for(&mut reader, Purpose::Text);
        assert!(err.is_none());
        let payloads: Vec<&[u8]> = batch.iter().map(|r| &r.payload[..]).collect();
        assert_eq!(
            payloads,
            [&b"<p>plain body"[..], b"<p>identity", b"<p>chunked!"]
        );
    }
}
