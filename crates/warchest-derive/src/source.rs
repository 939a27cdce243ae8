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

use data_encoding::BASE32;
use sha1::{Digest as _, Sha1};
use warchest::archive::{Reader, Record};
use warchest::codec::{Codec, Decoder};
use warchest::http::HttpHead;
use warchest::warc::RecordType;

use crate::text::MAX_BODY;

/// Kept bytes per batch: with the text derived from them, a batch stays
/// well under the 256 MiB a derivative may use.
pub const BATCH_BYTES: usize = 48 * 1024 * 1024;

/// Records per batch at most.
pub const BATCH_RECORDS: usize = 512;

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
    /// `sha1:` + Base32 of the whole block.
    pub block_digest: String,
    /// The entity (the block after the HTTP head): its length and digest.
    pub entity_len: u64,
    /// `sha1:` + Base32 of the entity.
    pub entity_digest: String,
    /// The payload (codings removed), at most [`MAX_BODY`] bytes + 1.
    pub payload: Vec<u8>,
    /// The block was cut short by the end of input.
    pub truncated: bool,
    /// The CRC-32 of the record as stored uncompressed (header, block and
    /// the `CRLF CRLF` trailer): the WAT's `Inflated-CRC`.
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
        match &self.http {
            Some(h) => h
                .content_type()
                .map(|c| String::from_utf8_lossy(&c).into_owned()),
            None => self.field("Content-Type").map(str::to_string),
        }
        .or_else(|| {
            self.field("WARC-Identified-Payload-Type")
                .map(str::to_string)
        })
    }
}

fn sha1_label(h: Sha1) -> String {
    format!("sha1:{}", BASE32.encode(&h.finalize()))
}

/// Reads the current record into a [`SourceRecord`].
///
/// # Errors
/// Reading the record failed.
pub fn read_record<R: Read>(mut record: Record<'_, Decoder<R>>) -> warchest::Result<SourceRecord> {
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
    let fields = header
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
    crc.update(raw_header);
    let raw_header_len = raw_header.len() as u64;
    let http = record.http()?.cloned();
    let mut block_hash = Sha1::new();
    let mut entity_hash = Sha1::new();
    if let Some(h) = &http {
        block_hash.update(h.raw());
        crc.update(h.raw());
    }
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
            block_hash.update(buf);
            entity_hash.update(buf);
            crc.update(buf);
            let room = (MAX_BODY + 1).saturating_sub(kept.len());
            kept.extend_from_slice(&buf[..n.min(room)]);
            entity_len += n as u64;
            block.consume(n);
        }
    }
    let payload = match &http {
        // Lenient decoding of what was kept: a body cut at MAX_BODY still
        // gives its decoded start.
        Some(h) => {
            let mut r =
                warchest::http::payload_reader_lenient(&kept[..], h).take(MAX_BODY as u64 + 1);
            let mut out = Vec::new();
            let mut buf = [0u8; 16 * 1024];
            loop {
                match r.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => out.extend_from_slice(&buf[..n]),
                }
            }
            out
        }
        None => kept,
    };
    let head_len = http.as_ref().map_or(0, |h| h.raw().len() as u64);
    let end = record.finish()?;
    crc.update(b"\r\n\r\n");
    let block_len = end.block_len.max(head_len + entity_len);
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
        block_digest: sha1_label(block_hash),
        entity_len,
        entity_digest: sha1_label(entity_hash),
        payload,
        truncated: end.truncated,
        inflated_crc: crc.finalize(),
        inflated_len: raw_header_len + block_len + 4,
        trailing_slop: 4,
        arc,
    })
}

/// Reads the next batch of records (at most [`BATCH_RECORDS`], and
/// [`BATCH_BYTES`] of payload); an empty batch means the end.
///
/// # Errors
/// Reading a record failed; the records read before are returned with
/// the error so that they are not lost.
pub fn read_batch<R: Read>(
    reader: &mut Reader<Decoder<R>>,
) -> (Vec<SourceRecord>, Option<warchest::Error>) {
    let mut batch = Vec::new();
    let mut bytes = 0;
    while batch.len() < BATCH_RECORDS && bytes < BATCH_BYTES {
        match reader.next_record() {
            Ok(Some(record)) => match read_record(record) {
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
