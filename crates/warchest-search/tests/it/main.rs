//! Integration tests of warchest-search: one binary, a module per area.

mod fuzz_regressions;
/// Replaying fuzz inputs, shared with the other crates' tests.
#[path = "../../../../fuzz/replay.rs"]
mod fuzz_replay;
mod index;
/// The search fuzz target's checks, shared with fuzz/.
#[path = "../../../../fuzz/fuzz_targets/search_check.rs"]
mod search_check;
