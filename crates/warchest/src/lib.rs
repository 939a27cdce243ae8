//! warchest: read, write, validate and convert web archives.
//!
//! Formats: WARC 1.1, 1.0 and the 0.16-0.18 drafts (ISO 28500), with any mix
//! of per-record gzip, whole-file gzip, zstd (with the `.warc.zst` dictionary
//! frame) and LZ4 compression, sniffed from the bytes.
//!
//! The layers, each using only the ones before it (see docs/architecture.md):
//! [`codec`] (stored bytes -> decompressed members) -> [`warc`] (record
//! framing) -> [`fields`] (named fields) -> [`http`] (HTTP messages inside
//! blocks) -> [`digest`]; [`write`](mod@write) is the writer.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod archive;
pub mod check;
pub mod codec;
pub mod digest;
pub mod error;
pub mod fields;
pub mod http;
mod limits;
pub mod validate;
pub mod warc;
pub mod write;

pub use error::{Error, ErrorKind, Position, Result, Warning, WarningKind};
pub use limits::Limits;
