//! Every input the `crawl_journal` fuzzer found a fault with
//! (fuzz/regressions/crawl_journal/), replayed through the target's own
//! checks (fuzz/fuzz_targets/crawl_journal_check.rs: the journal read,
//! then a frontier opened over it), each on a thread within a time
//! limit: the faults stay fixed.

use std::time::Duration;

use crate::crawl_journal_check;
use crate::fuzz_replay::replay;

#[test]
fn crawl_journal() {
    // The template frontier is made once, before any input's clock.
    crawl_journal_check::check(&[0]);
    replay(
        "crawl_journal",
        Duration::from_secs(30),
        crawl_journal_check::check,
    );
}
