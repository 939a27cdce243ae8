//! Dedupe against earlier crawls: `dedupe-index` given their CDXJ.

use crate::crawl::{check_files, config, crawl, field, record_of, records};
use crate::web;
use warchest_crawl::engine::Ending;

/// A second crawl of the same web, deduplicated against the first's
/// `indexes/` (CDXJ), writes each 200 response the first holds as an
/// identical-payload-digest revisit naming the first's URI and date.
#[test]
fn a_crawl_dedupes_against_an_earlier_crawls_cdxj() {
    let w = web::start();
    let out = tempfile::tempdir().unwrap();
    let first = out.path().join("first");
    assert_eq!(crawl(&first, &config(&w, "")).ending, Ending::Finished);
    let second = out.path().join("second");
    let idx = first.join("indexes");
    let s = crawl(
        &second,
        &config(
            &w,
            &format!("dedupe-index = {:?}", idx.display().to_string()),
        ),
    );
    assert_eq!(s.ending, Ending::Finished);
    let note = s.notes.join("\n");
    assert!(note.contains("captures"), "{note}");
    // Loaded into the crawl's own database (the earlier crawl's is untouched).
    assert!(second.join("dedupe.redb").exists());
    let recs = records(&second);
    let home = w.url("a.test", "/");
    let revisit = record_of(&recs, "revisit", &home);
    assert!(revisit.contains("identical-payload-digest"), "{revisit}");
    assert!(
        revisit.contains(&format!("WARC-Refers-To-Target-URI: {home}\r\n")),
        "{revisit}"
    );
    // The first crawl's date, to the second (CDXJ's precision).
    let first_recs = records(&first);
    let date = field(record_of(&first_recs, "response", &home), "WARC-Date");
    assert!(
        revisit.contains(&format!("WARC-Refers-To-Date: {}Z\r\n", &date[..19])),
        "{date}\n{revisit}"
    );
    assert!(!revisit.contains("WARC-Refers-To: "), "{revisit}");
    // No 200 response of the first crawl is stored again: every 200 page
    // the second fetched is a revisit (the 404s and the truncated or
    // redirected ones are not deduplicated).
    let responses_200 = recs
        .iter()
        .filter(|r| r.contains("WARC-Type: response\r\n") && r.contains("HTTP/1.0 200"))
        .filter(|r| !r.contains("robots.txt") && !r.contains("WARC-Truncated"))
        .count();
    assert_eq!(responses_200, 0, "responses stored again");
    let log = std::fs::read_to_string(second.join("logs/crawl.log")).unwrap();
    assert!(
        log.lines()
            .any(|l| l.contains(&home) && l.contains("duplicate:digest")),
        "{log}"
    );
    check_files(&second);
}
