//! `recrawl OLD`: conditional requests from the earlier crawl's
//! validators, 304s written as server-not-modified revisits, and the
//! earlier copy's links followed so the recrawl goes as deep.

use std::collections::BTreeSet;

use crate::crawl::{check_files, config, crawl, field, record_of, records};
use crate::web;
use warchest_crawl::engine::Ending;

#[test]
fn a_recrawl_asks_conditionally_and_writes_not_modified_revisits() {
    let w = web::start();
    let out = tempfile::tempdir().unwrap();
    let old = out.path().join("old");
    assert_eq!(crawl(&old, &config(&w, "")).ending, Ending::Finished);
    assert!(w.not_modified.lock().unwrap().is_empty());
    let first: BTreeSet<String> = w.requests().into_iter().collect();
    w.log.lock().unwrap().clear();

    let new = out.path().join("new");
    let s = crawl(
        &new,
        &config(&w, &format!("recrawl = {:?}", old.display().to_string())),
    );
    assert_eq!(s.ending, Ending::Finished);
    // The same URLs (robots.txt included): the 304 pages' links were the
    // earlier copies'.
    let second: BTreeSet<String> = w.requests().into_iter().collect();
    assert_eq!(second, first);
    // Every a.test URL that had a validator was answered 304: pages by
    // ETag (If-None-Match), the rest by Last-Modified (If-Modified-Since).
    let nm: BTreeSet<String> = w.not_modified.lock().unwrap().iter().cloned().collect();
    let home = w.url("a.test", "/");
    for u in [
        home.clone(),
        w.url("a.test", "/p1"),
        w.url("a.test", "/style.css"),
        w.url("a.test", "/bg.png"),
    ] {
        assert!(nm.contains(&u), "{u} not 304: {nm:?}");
    }
    let recs = records(&new);
    let of = |ty: &str, u: &str| record_of(&recs, ty, u).to_string();
    let req = of("request", &home);
    assert!(req.contains("If-None-Match: \"v1-\"\r\n"), "{req}");
    let css = of("request", &w.url("a.test", "/style.css"));
    assert!(
        css.contains("If-Modified-Since: Sat, 01 Nov 2025 10:00:00 GMT\r\n"),
        "{css}"
    );
    let rv = of("revisit", &home);
    assert!(rv.contains("/server-not-modified\r\n"), "{rv}");
    assert!(rv.contains("HTTP/1.0 304"), "{rv}");
    // It names the earlier crawl's response.
    let old_recs = records(&old);
    let id = field(record_of(&old_recs, "response", &home), "WARC-Record-ID");
    assert!(rv.contains(&format!("WARC-Refers-To: {id}\r\n")), "{rv}");
    // The revisit's metadata lists the earlier copy's outlinks.
    let meta = of("metadata", &home);
    assert!(
        meta.contains(&format!("outlink: {}", w.url("a.test", "/p1"))),
        "{meta}"
    );
    let log = std::fs::read_to_string(new.join("logs/crawl.log")).unwrap();
    assert!(
        log.lines()
            .any(|l| l.contains(&home) && l.contains("duplicate:server-not-modified")),
        "{log}"
    );
    check_files(&new);
}
