//! Any bytes as what a user sends the search (serve's `/fulltext` query
//! string and JSON API, `warchest search`'s query): the checks are in
//! search_check.rs, shared with the regression replay of
//! crates/warchest-search/tests/it/fuzz_regressions.rs.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "search_check.rs"]
mod search_check;

fuzz_target!(|data: &[u8]| search_check::check(data));
