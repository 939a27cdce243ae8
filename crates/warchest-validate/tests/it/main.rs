//! The integration tests of `warchest-validate`, one binary (docs/testing.md).

#[path = "../../../warchest/tests/it/common.rs"]
mod common;
mod fuzz_regressions;
/// Replaying fuzz inputs, shared with the other crates' tests.
#[path = "../../../../fuzz/replay.rs"]
mod fuzz_replay;
mod validate_fixtures;
mod validate_rules;
