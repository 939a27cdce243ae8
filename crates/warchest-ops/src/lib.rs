//! Operations on web archives, composed from the format library
//! [`warchest`]: what `warchest convert`, `recover`, `recompress`, `filter`,
//! `concat`, `split`, `dedupe`, `pack`, `stats`, `annotate` and `migrate` do.
//!
//! - [`convert`]: ARC and Web InfoMall to WARC, WARC to Web InfoMall;
//! - [`recover`]: every intact record out of a damaged file;
//! - [`copy`]: records copied into new files, recompressed, filtered or split;
//! - [`filter`]: the record filter expressions;
//! - [`dedupe`], [`revisit`]: duplicates rewritten as revisits, revisits resolved;
//! - [`reassemble`]: segmented records put back together;
//! - [`pack`]: local files archived as resource records;
//! - [`stats`]: counts by type, MIME type, status and host.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod convert;
pub mod copy;
pub mod dedupe;
pub mod filter;
pub mod pack;
pub mod reassemble;
pub mod recover;
pub mod revisit;
pub mod stats;
