//! The integration tests of `warchest-capture`, one binary
//! (docs/testing.md).

/// The `capture_wire` fuzz target's checks, shared with fuzz/.
#[path = "../../../../fuzz/fuzz_targets/capture_wire_check.rs"]
mod capture_wire_check;
mod fuzz_regressions;
mod proxy;
mod robots;
mod run;
