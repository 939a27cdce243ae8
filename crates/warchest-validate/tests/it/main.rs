//! The integration tests of `warchest-validate`, one binary (docs/testing.md).

#[path = "../../../warchest/tests/it/common.rs"]
mod common;
mod fuzz_regressions;
mod validate_fixtures;
mod validate_rules;
