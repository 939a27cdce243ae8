//! `warchest search-index` and `warchest search` on fixtures.

use crate::common::{bin, fixture, run};

fn search_json(idx: &std::path::Path, q: &str, extra: &[&str]) -> serde_json::Value {
    let (code, out, err) = run(bin()
        .arg("search")
        .arg(idx)
        .arg(q)
        .arg("--json")
        .args(extra));
    assert_eq!(code, 0, "{err}");
    serde_json::from_slice(&out).unwrap()
}

#[test]
fn index_search_and_extend() {
    let dir = tempfile::tempdir().unwrap();
    let idx = dir.path().join("idx");
    let iana = fixture("pywb/iana.warc.gz");
    let (code, _, err) = run(bin().arg("search-index").arg(&iana).arg("-o").arg(&idx));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("1 files in the index"), "{err}");
    let all = search_json(&idx, "*", &[]);
    let total = all["total"].as_u64().unwrap();
    assert!(total > 5, "{all}");
    // The facets count every document.
    let years: u64 = all["facets"]["year"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["count"].as_u64().unwrap())
        .sum();
    assert_eq!(years, total);

    let r = search_json(&idx, "internet assigned numbers", &[]);
    assert!(r["total"].as_u64().unwrap() >= 1, "{r}");
    let hit = &r["hits"][0];
    assert!(hit["url"].as_str().unwrap().contains("iana.org"), "{hit}");
    assert_eq!(hit["file"], "iana.warc.gz");
    assert!(
        hit["snippet"]["html"].as_str().unwrap().contains("<b>"),
        "{hit}"
    );
    assert_eq!(r["facets"]["host"][0]["value"], "www.iana.org");

    // The same file again: skipped, nothing doubled; a new one added.
    let (code, _, err) = run(bin().arg("search-index").arg(&iana).arg("-o").arg(&idx));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("already in the index, skipped"), "{err}");
    assert_eq!(
        search_json(&idx, "*", &[])["total"].as_u64().unwrap(),
        total
    );
    let example = fixture("pywb/example.warc.gz");
    let (code, _, err) = run(bin().arg("search-index").arg(&example).arg("-o").arg(&idx));
    assert_eq!(code, 0, "{err}");
    let r = search_json(&idx, "example domain", &["--host", "example.com"]);
    assert!(r["total"].as_u64().unwrap() >= 1, "{r}");
    assert_eq!(r["hits"][0]["file"], "example.warc.gz");

    // The text output: hits, facets, months.
    let (code, out, err) = run(bin().arg("search").arg(&idx).arg("example"));
    assert_eq!(code, 0, "{err}");
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("[Example]") || text.contains("[example]"),
        "{text}"
    );
    assert!(text.contains("hosts: "), "{text}");
}

#[test]
fn refuses_what_it_cannot_index() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.warc");
    std::fs::write(&junk, "not an archive at all\n").unwrap();
    let idx = dir.path().join("idx");
    let (code, _, err) = run(bin().arg("search-index").arg(&junk).arg("-o").arg(&idx));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("junk.warc"), "{err}");
    // Not an index; a query out of bounds.
    let (code, _, err) = run(bin().args(["search"]).arg(dir.path()).arg("x"));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a warchest search index"), "{err}");
    let (code, _, err) = run(bin()
        .arg("search")
        .arg(&idx)
        .arg("x")
        .args(["--page", "100000"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("deeper"), "{err}");
}
