//! warchest: read, write, validate and convert web archives.
//!
//! Formats: WARC 1.1, 1.0 and the 0.16-0.18 drafts (ISO 28500), with any mix
//! of per-record gzip, whole-file gzip, zstd (with the `.warc.zst` dictionary
//! frame) and LZ4 compression, sniffed from the bytes.
//!
//! The layers, each using only the ones before it (see docs/architecture.md):
//! [`codec`] (stored bytes -> decompressed members) -> [`warc`] (record
//! framing) -> [`fields`] (named fields) -> [`http`] (HTTP messages inside
//! blocks) -> [`digest`]; [`write`](mod@write) is the writer (single files,
//! and rotating series with warcinfo records and segmentation).
//! [`reassemble`], [`revisit`], [`dedupe`] and [`pack`] compose them: segmented
//! records put back together, revisits written and resolved, duplicates
//! rewritten as revisits, local files archived (see docs/writing.md).
//!
//! # Cargo features
//!
//! The core (plain and gzip files, SHA-1 and SHA-2 digests, reading,
//! checking and writing) needs no feature. Each feature adds a codec, a
//! digest or a convenience, with its dependencies; all are on by default.
//! With one off, input that needs it is an error that names the feature
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
//!
//! A digest algorithm whose feature is off is an unknown algorithm
//! ([`digest::Algorithm::from_label`] does not know its label, so a
//! record's digest of it is not checked, and
//! [`digest::Algorithm::missing_feature`] says why).
#![deny(missing_docs)]
// `unsafe` only in codec::inflate (libdeflate FFI, the `libdeflate`
// feature), where a measurement demands it: see docs/performance.md.
#![deny(unsafe_code)]

pub mod arc;
pub mod archive;
pub mod check;
pub mod codec;
pub mod digest;
pub mod error;
pub mod fields;
pub mod framing;
pub mod http;
pub mod infomall;
pub mod io;
mod limits;
mod pushback;
pub mod split;
#[cfg(test)]
mod test_source;
pub mod uri;
mod uuid;
pub mod view;
pub mod warc;
pub mod write;

pub use error::{Error, ErrorKind, Position, Result, Warning, WarningKind};
pub use limits::Limits;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
