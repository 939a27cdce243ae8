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
#![deny(missing_docs)]
// `unsafe` only in codec::inflate (libdeflate FFI), where a measurement
// demands it: see docs/performance.md.
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
pub mod view;
pub mod warc;
pub mod write;

pub use error::{Error, ErrorKind, Position, Result, Warning, WarningKind};
pub use limits::Limits;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
