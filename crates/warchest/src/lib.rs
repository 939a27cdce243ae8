//! warchest: read, write and check web archives: WARC 1.1, 1.0 and the
//! 0.16-0.18 drafts (ISO 28500), ARC v1/v2 and Web InfoMall, with any mix of
//! per-record gzip, whole-file gzip, zstd (with the `.warc.zst` dictionary
//! frame) and LZ4 compression, sniffed from the bytes.
//!
//! Reading any format, with the HTTP head and payload of each response:
//!
//! ```
//! use std::io::Read;
//! use warchest::archive::Reader;
//! use warchest::warc::RecordType;
//!
//! let warc = b"WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: http://a.example/\r\n\
//! Content-Type: application/http; msgtype=response\r\nContent-Length: 47\r\n\r\n\
//! HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nhi\r\n\r\n";
//! let mut reader = Reader::new(&warc[..])?;
//! while let Some(mut record) = reader.next_record()? {
//!     if record.header().record_type() == RecordType::Response {
//!         let status = record.http()?.and_then(|head| head.status());
//!         let mut body = Vec::new();
//!         record.payload(true)?.read_to_end(&mut body)?;
//!         assert_eq!((status, &body[..]), (Some(200), &b"hi"[..]));
//!     }
//! }
//! // Every lenient recovery is a warning with its offset.
//! assert!(reader.take_warnings().is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Writing (ids, dates, lengths and digests are filled in):
//!
//! ```
//! use warchest::warc::RecordType;
//! use warchest::write::{Body, Compression, NewRecord, Writer, WriterOptions};
//!
//! let mut out = Vec::new();
//! let mut writer = Writer::new(&mut out, WriterOptions {
//!     compression: Compression::Gzip(6),
//!     ..WriterOptions::default()
//! })?;
//! let mut record = NewRecord::new(RecordType::Resource);
//! record.set("WARC-Target-URI", "file:///hello.txt")?.set("Content-Type", "text/plain")?;
//! let written = writer.write(&mut record, Body::Bytes(b"hello"))?;
//! assert_eq!(written.offset, 0);
//! # Ok::<(), warchest::Error>(())
//! ```
//!
//! The layers, each using only the ones before it (see docs/architecture.md):
//! [`codec`] (stored bytes -> decompressed members) -> [`warc`], [`arc`],
//! [`infomall`] (record framing; [`archive`] reads any of them) -> [`fields`]
//! (named fields) -> [`http`] (HTTP messages inside blocks) -> [`digest`];
//! [`write`](mod@write) is the writer (single files, and rotating series with
//! warcinfo records and segmentation); [`check`] verifies digests.
//! Indexing, validation, the operations on archives (convert, recover,
//! dedupe...), capture and replay are crates of their own: `warchest-index`,
//! `warchest-validate`, `warchest-ops`, `warchest-capture`,
//! `warchest-replay`.
//!
//! # Cargo features
//!
//! The core (plain and gzip files, SHA-1 and SHA-2 digests, reading,
//! checking and writing) needs no feature. Each feature adds a codec, a
//! digest or a convenience, with its dependencies; all but `parallel` are on
//! by default. With one off, input that needs it is an error that names the feature
//! (`zstd support not compiled in (feature zstd)`), never a panic or data
//! read wrongly.
//!
//! | Feature | What it enables | Default |
//! |---|---|---|
//! | `zstd` | zstd frames: reading `.warc.zst` (and its dictionary frame), writing [`write::Compression::Zstd`], the `zstd` HTTP content coding | yes |
//! | `lz4` | LZ4 frames: reading `.warc.lz4`, writing [`write::Compression::Lz4`] | yes |
//! | `brotli` | the `br` HTTP content coding | yes |
//! | `libdeflate` | whole-member gzip inflation with libdeflate (C), about twice as fast; without it flate2 (zlib-rs) does the same work | yes |
//! | `serde` | `serde::Serialize` on the report types (warnings, positions, record locations, digest checks...) | yes |
//! | `md5` | the MD5 digest algorithm | yes |
//! | `sha3` | the SHA3-224/256/384/512 digest algorithms | yes |
//! | `identify` | `write::identify` (payload type sniffing with `infer`) and [`write::RotatingOptions::identify_payload_type`] | yes |
//! | `charset` | charsets other than UTF-8 (`encoding_rs`): RFC 2047 encoded words in fields, `HttpHead::encoding` | yes |
//! | `time` | `WarcDate::to_datetime` / `from_datetime` with `time::OffsetDateTime` ([`warc::WarcDate::to_unix_nanos`] and [`warc::WarcDate::from_unix_nanos`] need nothing) | yes |
//! | `mmap` | plain files opened by path are read through a read-only memory map (Linux): no copy, skipped payloads never touched; a file that shrinks while read is an error. A compressed file decoded on one thread is read from such a map where the page cache makes it cheaper than `read` calls, and with `parallel` the jobs of a compressed file inflate from one | yes |
//! | `parallel` | [`codec::DecoderOptions::threads`]: members of one file decoded on a rayon pool; without it they are decoded on the caller's thread, with the same output | no |
//!
//! A digest algorithm whose feature is off is an unknown algorithm
//! ([`digest::Algorithm::from_label`] does not know its label, so a
//! record's digest of it is not checked, and
//! [`digest::Algorithm::missing_feature`] says why).
#![deny(missing_docs)]
// `unsafe` only in codec::inflate (libdeflate FFI, the `libdeflate`
// feature; the huge-page advice on large output buffers, Linux with the
// `mmap` or `parallel` feature) and codec::map (memory maps, the `mmap` feature; the cache
// prefetch hint the reader gives for a record's trailer), where a
// measurement demands it: see docs/performance.md.
#![deny(unsafe_code)]

pub mod arc;
pub mod archive;
pub mod check;
pub mod chunks;
pub mod codec;
pub mod digest;
pub mod error;
pub mod fields;
pub mod framing;
pub mod http;
pub mod infomall;
pub mod io;
mod leniency;
mod limits;
mod pushback;
pub mod recoveries;
pub mod size;
pub mod split;
#[cfg(test)]
mod test_source;
mod uuid;
pub mod view;
pub mod warc;
pub mod write;

pub use error::{Error, ErrorKind, Position, Result, Warning, WarningKind};
pub use leniency::Leniency;
pub use limits::Limits;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
