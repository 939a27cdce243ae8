//! The integration tests of `warchest-capture`, one binary
//! (docs/testing.md).

/// The `capture_wire` fuzz target's checks, shared with fuzz/.
#[path = "../../../../fuzz/fuzz_targets/capture_wire_check.rs"]
mod capture_wire_check;
mod fuzz_regressions;
/// Replaying fuzz inputs, shared with the other crates' tests.
#[path = "../../../../fuzz/replay.rs"]
mod fuzz_replay;
mod loopback;
mod proxy;
mod robots;
mod run;
