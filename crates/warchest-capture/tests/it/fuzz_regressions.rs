//! Every input the `capture_wire` fuzzer found a fault with
//! (fuzz/regressions/capture_wire/), replayed through the target's own
//! checks (fuzz/fuzz_targets/capture_wire_check.rs), each on a thread
//! within a time limit: the faults stay fixed.

use std::time::Duration;

use crate::capture_wire_check;
use crate::fuzz_replay::replay;

#[test]
fn capture_wire() {
    replay(
        "capture_wire",
        Duration::from_secs(30),
        capture_wire_check::check,
    );
}
