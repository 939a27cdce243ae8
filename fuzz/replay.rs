//! Replays fuzz inputs in the crates' integration tests (included there
//! by `#[path]`): each input on a thread of its own, within a time limit,
//! so that a fault found once (a panic, a loop without end) stays fixed.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

/// The inputs of fuzz/regressions/`target`/, sorted (none when the
/// folder is absent: a target that has found no fault yet).
pub fn inputs(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/regressions")
        .join(target);
    let mut v: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(d) => d.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    };
    v.sort();
    v
}

/// Runs `check` on every input of `target` ([`run`]); there must be one.
pub fn replay(target: &str, limit: Duration, check: fn(&[u8])) {
    let inputs = inputs(target);
    assert!(!inputs.is_empty(), "no inputs in fuzz/regressions/{target}");
    for p in inputs {
        let data = std::fs::read(&p).unwrap();
        run(&p.display().to_string(), data, limit, None, check);
    }
}

/// Runs `check` on `data` on a thread (of `stack` bytes, when given):
/// fails naming `name` when it panics or has not ended after `limit`.
pub fn run(name: &str, data: Vec<u8>, limit: Duration, stack: Option<usize>, check: fn(&[u8])) {
    let (tx, rx) = mpsc::channel();
    let mut b = std::thread::Builder::new();
    if let Some(s) = stack {
        b = b.stack_size(s);
    }
    let t = b
        .spawn(move || {
            check(&data);
            let _ = tx.send(());
        })
        .unwrap();
    match rx.recv_timeout(limit) {
        Ok(()) => t.join().unwrap(),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            if let Err(e) = t.join() {
                let msg = e
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| e.downcast_ref::<&str>().copied())
                    .unwrap_or("a panic");
                panic!("{name}: {msg}");
            }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{name}: no end after {limit:?}"),
    }
}
