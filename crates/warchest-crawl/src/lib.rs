//! Crawling web sites into WARC files (`warchest crawl`).
//!
//! The crate has two halves. The rules are pure decisions with no I/O, each
//! testable without a network: [`uri`] (a URI with its hop path from a
//! seed), [`scope`] (Heritrix-style decide rules, trap rules), [`links`]
//! (links from HTML, CSS, headers, sitemaps and scripts), [`robots`]
//! (robots.txt per RFC 9309, its cache and fetch-outcome policy) and
//! [`politeness`] (delays between fetches, Retry-After and backoff). The
//! engine (frontier, fetchers, writers, outputs) drives them.
//!
//! ```
//! use url::Url;
//! use warchest_crawl::links::{ExtractConfig, extract};
//! use warchest_crawl::scope::{Scope, ScopeConfig};
//! use warchest_crawl::uri::CrawlUri;
//!
//! let seed = Url::parse("https://example.org/docs/").unwrap();
//! let scope = Scope::new(&ScopeConfig::default(), &[seed.clone()]).unwrap();
//! let page = CrawlUri::seed(seed.clone(), 0);
//! let html = br#"<a href="intro.html">in</a> <a href="/blog/">out</a>
//!     <img src="https://cdn.example.net/logo.png">"#;
//! let found = extract(&seed, Some("text/html"), &ExtractConfig::default(), html);
//! let verdicts: Vec<(String, bool, &str)> = found
//!     .links
//!     .iter()
//!     .map(|l| {
//!         let v = scope.decide(&page.child(l.url.clone(), l.hop));
//!         (l.url.to_string(), v.accepted, v.rule)
//!     })
//!     .collect();
//! assert_eq!(
//!     verdicts,
//!     [
//!         ("https://example.org/docs/intro.html".to_string(), true, "scope-prefix"),
//!         ("https://example.org/blog/".to_string(), false, "default-reject"),
//!         ("https://cdn.example.net/logo.png".to_string(), true, "transclusion"),
//!     ]
//! );
//! ```
//!
//! With the `testweb` feature, `testweb` serves a generated many-host web
//! on loopback addresses for the tests and the benchmark.

#![deny(missing_docs)]

pub mod links;
pub mod politeness;
pub use warchest_capture::robots;
pub mod scope;
#[cfg(feature = "testweb")]
pub mod testweb;
pub mod uri;

#[cfg(test)]
mod tests {
    /// The engine shares the scope and the robots cache between workers
    /// and moves extractors between threads.
    #[test]
    fn shared_types_are_send_and_sync() {
        fn send_sync<T: Send + Sync>() {}
        fn send<T: Send>() {}
        send_sync::<crate::scope::Scope>();
        send_sync::<crate::robots::RobotsCache>();
        send_sync::<crate::robots::Robots>();
        send::<crate::links::Extractor>();
    }
}

// -- the engine --
pub mod config;
pub mod dedupe;
pub mod engine;
pub mod frontier;
pub mod infomall;
mod journal;
// -- the browser hook --
pub mod render;
pub mod shard;
pub mod sidecar;
#[cfg(feature = "status")]
pub mod status;
mod written;

/// The frontier journal's reader, for the fuzz target
/// (fuzz/fuzz_targets/crawl_journal.rs) to feed any bytes to: the
/// journal's module is private. Not an API: hidden, and free to change
/// with the module.
#[doc(hidden)]
pub mod fuzzing {
    /// What reading a journal's bytes found, as opening a frontier reads
    /// its journal file.
    #[derive(Debug)]
    pub struct JournalRead {
        /// The header's epoch (`None`: no header).
        pub epoch: Option<u64>,
        /// The whole records' payloads, in order.
        pub records: Vec<Vec<u8>>,
        /// Bytes ignored after the last whole record.
        pub torn: u64,
        /// Whole records found in the ignored bytes.
        pub later: u64,
        /// The ignored bytes were searched to their end.
        pub searched: bool,
        /// What the frontier notes on opening, if anything.
        pub damage: Option<String>,
        /// Whether whole changes were discarded.
        pub lost_changes: bool,
    }

    /// Reads a journal file's bytes.
    pub fn read_journal(data: &[u8]) -> JournalRead {
        let r = crate::journal::parse(data);
        JournalRead {
            damage: r.damage(),
            lost_changes: r.lost_changes(),
            epoch: r.epoch,
            records: r.records,
            torn: r.torn,
            later: r.later,
            searched: r.searched,
        }
    }

    /// A record's payload decoded as a change (its `Debug` form, `None`
    /// when it does not decode), and that change encoded again and
    /// decoded (`None` when that does not decode).
    pub fn journal_change(payload: &[u8]) -> Option<(String, Option<String>)> {
        let op = crate::journal::decode(payload)?;
        let mut again = Vec::new();
        crate::journal::encode(&mut again, &op);
        let back = crate::journal::decode(&again).map(|o| format!("{o:?}"));
        Some((format!("{op:?}"), back))
    }

    /// A journal file's header for `epoch`.
    pub fn journal_header(epoch: u64) -> Vec<u8> {
        crate::journal::fuzz::header(epoch)
    }

    /// `payload` framed as a whole record.
    pub fn journal_record(payload: &[u8]) -> Vec<u8> {
        crate::journal::fuzz::record(payload)
    }
}
