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
    assert!(err.contains("1 file(s) in the index"), "{err}");
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
    // No index of nothing is left behind.
    assert!(
        err.contains("not made, as no input could be indexed"),
        "{err}"
    );
    assert!(!idx.exists());
    let (code, _, err) = run(bin()
        .arg("search-index")
        .arg(fixture("pywb/example.warc.gz"))
        .arg("-o")
        .arg(&idx));
    assert_eq!(code, 0, "{err}");
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

#[test]
fn serve_search_page_api_and_replay_links() {
    use crate::serve::Server;
    let dir = tempfile::tempdir().unwrap();
    let idx = dir.path().join("idx");
    let example = fixture("pywb/example.warc.gz");
    let iana = fixture("pywb/iana.warc.gz");
    let (code, _, err) = run(bin()
        .arg("search-index")
        .arg(&example)
        .arg(&iana)
        .arg("-o")
        .arg(&idx));
    assert_eq!(code, 0, "{err}");
    let s = Server::start(
        &[&example, &iana],
        &dir.path().join("db.redb"),
        &["--search", idx.to_str().unwrap()],
    );
    // The form on the collection's page and on the search page.
    assert!(
        s.get("/archive/")
            .text()
            .contains("action=\"/archive/fulltext\"")
    );
    let r = s.get("/archive/fulltext");
    assert_eq!(r.status, 200);
    assert!(r.text().contains("name=\"q\""));

    // The JSON API: hits, facets counted over all hits.
    let r = s.get("/archive/fulltext?q=example+domain&output=json");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    let total = v["total"].as_u64().unwrap();
    assert!(total >= 1, "{v}");
    let hosts: u64 = v["facets"]["host"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["count"].as_u64().unwrap())
        .sum();
    assert_eq!(hosts, total, "{v}");
    let hit = &v["hits"][0];
    let url = hit["url"].as_str().unwrap();
    assert!(url.starts_with("http://example.com"), "{hit}");

    // The page: a hit whose title links to replay, and the link answers.
    let r = s.get("/archive/fulltext?q=example+domain");
    assert_eq!(r.status, 200);
    let page = r.text();
    let ts = hit["timestamp"].as_str().unwrap();
    let link = format!("/archive/{ts}/{url}");
    assert!(page.contains(&format!("href=\"{link}\"")), "{page}");
    assert!(
        page.contains("<b>Example</b>") || page.contains("<b>example</b>"),
        "{page}"
    );
    assert!(page.contains("class=\"histogram\""), "{page}");
    let replay = s.get(&link);
    assert_eq!(replay.status, 200, "{}", replay.text());
    let framed = s.rget(&format!("/archive/{ts}mp_/{url}"));
    assert_eq!(framed.status, 200);
    assert!(framed.text().contains("Example Domain"));

    // Facet links narrow; paging; what is asked is escaped; bounds are 400.
    let r = s.get("/archive/fulltext?q=*&host=www.iana.org&n=5&page=2&output=json");
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["request"]["page"], 2);
    assert_eq!(v["hits"].as_array().unwrap().len(), 5);
    assert!(
        v["hits"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["host"] == "www.iana.org")
    );
    let r = s.get("/archive/fulltext?q=%3Cscript%3Ealert(1)%3C/script%3E");
    assert!(!r.text().contains("<script>alert"), "{}", r.text());
    let r = s.get(&format!("/archive/fulltext?q={}", "a".repeat(3000)));
    assert_eq!(r.status, 400);
    let r = s.get("/archive/fulltext?q=x&page=100000&output=json");
    assert_eq!(r.status, 400);
    assert!(r.text().contains("deeper"), "{}", r.text());
}

/// A payload whose content coding does not decode: its text is indexed
/// from the bytes as stored, said on stderr, and the file's other
/// documents stay (before, its error took the whole file out).
#[test]
fn a_payload_that_does_not_decode_is_indexed_as_stored_and_said() {
    let dir = tempfile::tempdir().unwrap();
    let warc = dir.path().join("coded.warc");
    let record = |uri: &str, coding: &str, body: &[u8]| -> Vec<u8> {
        let mut block =
            format!("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n{coding}\r\n").into_bytes();
        block.extend_from_slice(body);
        let mut v = format!(
            "WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: {uri}\r\n\
             WARC-Date: 2024-01-02T03:04:05Z\r\n\
             Content-Type: application/http; msgtype=response\r\nContent-Length: {}\r\n\r\n",
            block.len()
        )
        .into_bytes();
        v.extend_from_slice(&block);
        v.extend_from_slice(b"\r\n\r\n");
        v
    };
    let mut data = record("http://a.example/one", "", b"zebrafish swim");
    let bad_at = data.len();
    data.extend(record(
        "http://a.example/two",
        "Content-Encoding: gzip\r\n",
        b"narwhals dive deep",
    ));
    std::fs::write(&warc, &data).unwrap();
    let idx = dir.path().join("idx");
    let (code, _, err) = run(bin().arg("search-index").arg(&warc).arg("-o").arg(&idx));
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(
            "1 payload not decoded as its HTTP head says: content coding did not decode, \
             bytes as stored (1); -w lists it"
        ),
        "{err}"
    );
    for word in ["zebrafish", "narwhals"] {
        let v = search_json(&idx, word, &[]);
        assert_eq!(v["total"], 1, "{word}: {v}");
    }
    let (code, _, err) = run(bin()
        .args(["-w", "search-index"])
        .arg(&warc)
        .arg("-o")
        .arg(dir.path().join("idx2")));
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(&format!(
            "coded.warc: warning: offset {bad_at}: content-coding-undecoded"
        )),
        "{err}"
    );
    // A URL past 8 KiB is indexed cut there, and said; the JSON counts it.
    let long = format!("http://a.example/{}", "x".repeat(9 * 1024));
    let warc2 = dir.path().join("long.warc");
    std::fs::write(&warc2, record(&long, "", b"okapis graze")).unwrap();
    let (code, out, err) = run(bin()
        .args(["search-index", "--json"])
        .arg(&warc2)
        .arg("-o")
        .arg(dir.path().join("idx3")));
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(
            "warchest: 1 document with a URL longer than 8 KiB, indexed cut there (its \
             replay link does not lead to it)"
        ),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["counts"]["urls_cut"], 1, "{v}");
    let v = search_json(&dir.path().join("idx3"), "okapis", &[]);
    assert_eq!(v["total"], 1, "{v}");
}
