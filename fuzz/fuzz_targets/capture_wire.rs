//! The `capture_wire` fuzz target: its checks are in capture_wire_check.rs,
//! shared with the regression replay of warchest-capture's tests
//! (crates/warchest-capture/tests/it/fuzz_regressions.rs).
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "capture_wire_check.rs"]
mod capture_wire_check;

fuzz_target!(|data: &[u8]| capture_wire_check::check(data));
