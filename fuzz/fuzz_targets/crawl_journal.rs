//! The `crawl_journal` fuzz target: its checks are in crawl_journal_check.rs,
//! shared with the regression replay of warchest-crawl's tests
//! (crates/warchest-crawl/tests/it/fuzz_regressions.rs).
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "crawl_journal_check.rs"]
mod crawl_journal_check;

fuzz_target!(|data: &[u8]| crawl_journal_check::check(data));
