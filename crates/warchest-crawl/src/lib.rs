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
