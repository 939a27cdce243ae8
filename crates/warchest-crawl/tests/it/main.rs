//! warchest-crawl's integration tests (one binary): crawls of a web
//! served on loopback by the tests themselves, and the agreement of the
//! crawler's links with replay's rewriting.

mod crawl;
/// The `crawl_journal` fuzz target's checks, shared with fuzz/.
#[path = "../../../../fuzz/fuzz_targets/crawl_journal_check.rs"]
mod crawl_journal_check;
mod dedupe;
mod fuzz_regressions;
/// Replaying fuzz inputs, shared with the other crates' tests.
#[path = "../../../../fuzz/replay.rs"]
mod fuzz_replay;
mod infomall;
mod links_stopped;
mod recrawl;
mod render;
mod replay_agreement;
mod resume;
mod testweb;
mod web;
