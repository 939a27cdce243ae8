//! The `search_request` fuzz target's checks (fuzz/fuzz_targets/
//! search_check.rs) on hand-written edge cases of what users send the
//! search, and on every input the fuzzer found a fault with
//! (fuzz/regressions/search_request/, when there is one), each within a
//! time limit.

use std::time::Duration;

use crate::fuzz_replay::{inputs, run};
use crate::search_check;

/// Query strings (serve) and queries (the command line) at the edges:
/// paging past every bound, each field with a value of the wrong kind,
/// the query language's operators cut short, deep nesting, markup.
fn edge_cases() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = [
        "q=sea+level&page=2&n=1",
        "q=%22sea+level%22&host=a.example&year=2014",
        "q=title:caf%C3%A9&language=fra",
        "q=date:[2014-01-01T00:00:00Z+TO+*]",
        "q=date:[a+TO+b]",
        "q=status:abc",
        "q=status:[100+TO+200]",
        "q=year:99999999999999999999999",
        "q=offset:5",
        "q=url_words:",
        "q=*:*",
        "q=url:*",
        "q=text:*+host:*",
        "q=title:*+OR+year:*",
        "q=-",
        "q=%22",
        "q=a+OR",
        "q=title:(a+b",
        "q=a~2",
        "q=a^1000",
        "q=a*",
        "q=/regex/",
        "q=IN+[a+b]",
        "q=mime:text/html",
        "q=surt:%22a,example)/%22",
        "q=%FF%FE%00",
        "q=<script>alert(1)</script>&host=<b>",
        "q=a&q=b&page=x&n=-1",
        "page=18446744073709551615&n=100",
        "page=0&n=0",
        "page=100&n=100",
        "page=101&n=100",
        "n=101",
        "year=-1&mime=&language=",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    v.push(format!("q={}", "x".repeat(3000)).into_bytes());
    // Nesting past MAX_NESTING is refused before tantivy's parser, which
    // recurses per level (a thousand overflowed a 2 MiB stack); at the
    // bound it is searched.
    v.push(format!("q={}a{}", "(".repeat(1000), ")".repeat(1000)).into_bytes());
    let n = warchest_search::MAX_NESTING;
    v.push(format!("{}a{}", "(".repeat(n), ")".repeat(n)).into_bytes());
    v.push(format!("{}title:a{}", "(-".repeat(n), ")".repeat(n)).into_bytes());
    v.push(format!("{}a", "-".repeat(2000)).into_bytes());
    v.push(format!("q={}", "\"a ".repeat(600)).into_bytes());
    v
}

/// A server worker's stack: the search runs on one.
const STACK: Option<usize> = Some(2 * 1024 * 1024);

#[test]
fn search_request() {
    // The index is built once, before the clock of any input starts.
    search_check::index();
    let edges = edge_cases().into_iter().enumerate().map(|(i, data)| {
        let name = format!(
            "edge case {i}: {}",
            String::from_utf8_lossy(&data[..data.len().min(60)])
        );
        (name, data)
    });
    let found = inputs("search_request")
        .into_iter()
        .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()));
    for (name, data) in edges.chain(found) {
        run(
            &name,
            data,
            Duration::from_secs(30),
            STACK,
            search_check::check,
        );
    }
}
