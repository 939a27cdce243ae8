//! Crawling web sites into WARC files (`warchest crawl`).
//!
//! The crate has two halves. The rules are pure decisions with no I/O, each
//! testable without a network: [`uri`] (a URI with its hop path from a
//! seed), [`scope`] (Heritrix-style decide rules, trap rules), [`extract`]
//! (links from HTML, CSS, headers, sitemaps and scripts), [`robots`]
//! (robots.txt per RFC 9309, its cache and fetch-outcome policy) and
//! [`politeness`] (delays between fetches, Retry-After and backoff). The
//! engine (frontier, fetchers, writers, outputs) drives them.

#![deny(missing_docs)]

pub mod extract;
pub mod politeness;
pub mod robots;
pub mod scope;
pub mod uri;

// -- engine modules (h-crawl) --
pub mod config;
pub mod engine;
pub mod frontier;
pub mod output;
pub mod shard;
