//! Link extraction stopped before a payload's end, end to end: the
//! `linksStopped:WHY` annotation on the page's crawl.log line, the run's
//! counts (`Summary::links_stopped`, the status JSON's
//! `links_stopped_this_run`), and a crawl that still finishes with no
//! failure (exit 0: a stop loses links, it fails no URI). docs/crawl.md,
//! crawl.log.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use warchest_crawl::config::CrawlConfig;
use warchest_crawl::engine::{Crawl, Ending, Summary};

use crate::crawl::{config, crawl, records};
use crate::web::{self, Web};

/// A crawl of `seed` on stop.test, loopback only, with `extra` keys.
fn stop_config(w: &Web, seed: &str, extra: &str) -> String {
    format!(
        "seeds = [\"{}\"]\nmin-delay = 0.0\nmax-delay = 0.0\ndelay-factor = 0.0\n\
         workers = 2\ntimeout = 5.0\nrobots = \"ignore\"\n{extra}\nresolve-only = true\n\
         [resolve]\n\"stop.test\" = \"127.0.0.1\"\n",
        w.url("stop.test", seed)
    )
}

/// The annotations column of `uri`'s only line in the crawl's crawl.log.
fn annotations(dir: &Path, uri: &str) -> String {
    let log = std::fs::read_to_string(dir.join("logs/crawl.log")).unwrap();
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.split_whitespace().nth(3) == Some(uri))
        .collect();
    assert_eq!(lines.len(), 1, "one line for {uri} in\n{log}");
    lines[0]
        .split_whitespace()
        .nth(11)
        .unwrap_or_default()
        .to_string()
}

/// A crawl run with the last status JSON its progress callback saw.
fn crawl_with_status(dir: &Path, toml: &str) -> (Summary, serde_json::Value) {
    let cfg = CrawlConfig::from_toml(toml).unwrap();
    let c = Crawl::open(dir, cfg, toml, Arc::new(AtomicBool::new(false))).unwrap();
    let last = std::sync::Mutex::new(String::new());
    let s = c.run(&|c| *last.lock().unwrap() = c.snapshot().0).unwrap();
    let json = last.into_inner().unwrap();
    (s, serde_json::from_str(&json).unwrap())
}

/// A page longer than `max-extract-bytes` (here 1 KiB; 64 MiB by
/// default) is read for links up to the bound: its link before it is
/// followed, the one after never seen; the page's line says
/// `linksStopped:size`, the summary and the status JSON count one stop,
/// and the crawl finishes with no failure. With the default bound the
/// same page gives both links and no stop.
#[test]
fn a_payload_past_max_extract_bytes_stops_at_size() {
    let w = web::start();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("c");
    let toml = stop_config(&w, "/size.html", "max-extract-bytes = 1024");
    let (s, status) = crawl_with_status(&dir, &toml);
    assert_eq!(s.ending, Ending::Finished);
    assert_eq!(s.counts.failed, 0, "{:?}", s.counts);
    let reqs = w.requests();
    assert!(reqs.contains(&w.url("stop.test", "/s1")), "{reqs:?}");
    assert!(!reqs.contains(&w.url("stop.test", "/s2")), "{reqs:?}");
    let page = w.url("stop.test", "/size.html");
    assert_eq!(annotations(&dir, &page), "linksStopped:size");
    assert!(!annotations(&dir, &w.url("stop.test", "/s1")).contains("links"));
    assert_eq!((s.links_stopped, s.links_dropped), (1, 0));
    assert_eq!(status["links_stopped_this_run"], 1, "{status}");
    // The whole page is archived all the same: the bound is extraction's.
    let recs = records(&dir);
    let rec = crate::crawl::record_of(&recs, "response", &page);
    assert!(rec.contains("<a href=/s2>"), "{rec}");

    w.log.lock().unwrap().clear();
    let dir = out.path().join("default");
    let s = crawl(&dir, &stop_config(&w, "/size.html", ""));
    assert_eq!(s.ending, Ending::Finished);
    assert!(w.requests().contains(&w.url("stop.test", "/s2")));
    assert_eq!(annotations(&dir, &page), "-");
    assert_eq!(s.links_stopped, 0);
}

/// A body the server cuts (it declares 100,000 bytes, sends a few and
/// closes the connection) is no stop of extraction: everything received
/// is read for links, so its link before the cut is followed. The cut is
/// said by the record (`WARC-Truncated: disconnect`) and the line's
/// `disconnectTrunc`, not by `linksStopped:`, and is no failure.
#[test]
fn a_body_cut_by_the_server_is_read_to_the_cut_and_marked_truncated() {
    let w = web::start();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("c");
    let s = crawl(&dir, &stop_config(&w, "/cut.html", ""));
    assert_eq!(s.ending, Ending::Finished);
    assert_eq!(s.counts.failed, 0, "{:?}", s.counts);
    let reqs = w.requests();
    assert!(reqs.contains(&w.url("stop.test", "/t1")), "{reqs:?}");
    let page = w.url("stop.test", "/cut.html");
    assert_eq!(annotations(&dir, &page), "disconnectTrunc");
    assert_eq!((s.links_stopped, s.links_dropped), (0, 0));
    let recs = records(&dir);
    let rec = crate::crawl::record_of(&recs, "response", &page);
    assert!(rec.contains("WARC-Truncated: disconnect\r\n"), "{rec}");
}

/// A recrawl's 304 takes the page's links from the earlier crawl's
/// copy; when that copy cannot be read back (here the earlier crawl's
/// WARC files are gone), the page is logged `linksStopped:read` next to
/// `duplicate:server-not-modified`, counted as a stop, and none of its
/// links is known, so nothing past it is fetched; the recrawl still
/// finishes with no failure.
#[test]
fn a_recrawl_whose_earlier_copy_is_gone_stops_at_read() {
    let w = web::start();
    let out = tempfile::tempdir().unwrap();
    let old = out.path().join("old");
    assert_eq!(crawl(&old, &config(&w, "")).ending, Ending::Finished);
    for f in crate::crawl::warc_files(&old) {
        std::fs::remove_file(f).unwrap();
    }
    w.log.lock().unwrap().clear();
    let new = out.path().join("new");
    let toml = config(&w, &format!("recrawl = {:?}", old.display().to_string()));
    let (s, status) = crawl_with_status(&new, &toml);
    assert_eq!(s.ending, Ending::Finished);
    assert_eq!(s.counts.failed, 0, "{:?}", s.counts);
    let home = w.url("a.test", "/");
    assert!(w.not_modified.lock().unwrap().contains(&home));
    assert_eq!(
        annotations(&new, &home),
        "duplicate:server-not-modified,linksStopped:read"
    );
    assert_eq!(s.links_stopped, 1);
    assert_eq!(status["links_stopped_this_run"], 1, "{status}");
    let reqs = w.requests();
    assert!(!reqs.contains(&w.url("a.test", "/p1")), "{reqs:?}");
}

/// A recrawl's 304 reads the earlier copy for links within the same
/// `max-extract-bytes` as a fresh response: here 80 bytes of a.test's
/// home page, which hold its style sheet's `<link>` but not its first
/// `<a>`. The page is logged `linksStopped:size` and counted; the style
/// sheet is asked for again, `/p1` never.
#[test]
fn a_recrawls_earlier_copy_is_read_within_max_extract_bytes() {
    let w = web::start();
    let out = tempfile::tempdir().unwrap();
    let old = out.path().join("old");
    assert_eq!(crawl(&old, &config(&w, "")).ending, Ending::Finished);
    w.log.lock().unwrap().clear();
    let new = out.path().join("new");
    let toml = config(
        &w,
        &format!(
            "recrawl = {:?}\nmax-extract-bytes = 80",
            old.display().to_string()
        ),
    );
    let s = crawl(&new, &toml);
    assert_eq!(s.ending, Ending::Finished);
    assert_eq!(s.counts.failed, 0, "{:?}", s.counts);
    let home = w.url("a.test", "/");
    assert!(w.not_modified.lock().unwrap().contains(&home));
    assert_eq!(
        annotations(&new, &home),
        "duplicate:server-not-modified,linksStopped:size"
    );
    assert_eq!(s.links_stopped, 1);
    let reqs = w.requests();
    assert!(reqs.contains(&w.url("a.test", "/style.css")), "{reqs:?}");
    assert!(!reqs.contains(&w.url("a.test", "/p1")), "{reqs:?}");
}
