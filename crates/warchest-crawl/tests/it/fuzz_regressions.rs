//! Every input the `crawl_journal` fuzzer found a fault with
//! (fuzz/regressions/crawl_journal/), replayed through the target's own
//! checks (fuzz/fuzz_targets/crawl_journal_check.rs: the journal read,
//! then a frontier opened over it), each on a thread within a time
//! limit: the faults stay fixed.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use crate::crawl_journal_check;

/// The inputs of fuzz/regressions/TARGET/, sorted; at least one.
fn inputs(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/regressions")
        .join(target);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    assert!(!v.is_empty(), "no inputs in {}", dir.display());
    v
}

/// Runs `check` on each input of `target` on a thread: fails, naming the
/// input, when it panics or has not ended after `limit`.
fn replay(target: &str, limit: Duration, check: fn(&[u8])) {
    for p in inputs(target) {
        let data = std::fs::read(&p).unwrap();
        let (tx, rx) = mpsc::channel();
        let t = std::thread::spawn(move || {
            check(&data);
            let _ = tx.send(());
        });
        match rx.recv_timeout(limit) {
            Ok(()) => t.join().unwrap(),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                if let Err(e) = t.join() {
                    let msg = e
                        .downcast_ref::<String>()
                        .map(String::as_str)
                        .or_else(|| e.downcast_ref::<&str>().copied())
                        .unwrap_or("a panic");
                    panic!("{}: {msg}", p.display());
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("{}: no end after {limit:?}", p.display())
            }
        }
    }
}

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
